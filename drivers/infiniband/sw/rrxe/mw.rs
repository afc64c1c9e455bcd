// SPDX-License-Identifier: GPL-2.0

//! Memory windows (type 1 and 2): allocation and deallocation. Binding is
//! a send-queue operation (the data path).

use crate::mr::make_key;
use crate::rdma::objects::{Mw, Pd};
use crate::rdma::udata::UData;
use crate::Rrxe;
use kernel::prelude::*;

/// Driver state of an MW.
#[allow(dead_code)] // read by the data path
pub(crate) struct MwState {
    /// Whether the window is a type 2 window (bound to a QP).
    pub(crate) type2: bool,
}

/// `alloc_mw`.
pub(crate) fn alloc(pd: &Pd<Rrxe>, _udata: &UData<'_>) -> Result<MwState> {
    pd.device().mw_pool.count_check()?;
    Ok(MwState { type2: false })
}

/// After create: a pool index and the rkey.
pub(crate) fn created(mw: &Mw<Rrxe>) -> Result {
    let index = mw.device().mw_pool.insert(mw)?;
    mw.set_rkey(make_key(index));
    Ok(())
}
