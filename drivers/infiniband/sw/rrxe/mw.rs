// SPDX-License-Identifier: GPL-2.0

//! Memory windows (type 1 and 2): allocation, binding and invalidation.
//!
//! A bound window grants remote access to a range of an MR under its own
//! rkey. Binding is a send-queue operation (BIND_MW); a type 2 window is
//! bound to the QP that bound it. Locking: `MwState::inner` (interrupts
//! off) guards the binding.

use crate::mem::{self, Need};
use crate::mr::make_key;
use crate::new_irq_spinlock;
use crate::rdma::consts::*;
use crate::rdma::objects::{Mw, Pd, Qp};
use crate::rdma::sync::IrqSpinLock;
use crate::rdma::udata::UData;
use crate::Rrxe;
use kernel::prelude::*;

/// What a bound window grants.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MwBinding {
    pub(crate) rkey: u32,
    pub(crate) mr_index: u32,
    pub(crate) addr: u64,
    pub(crate) length: u64,
    pub(crate) access: u32,
    /// The QP a type 2 window is bound to (0 for type 1).
    pub(crate) qpn: u32,
}

struct MwInner {
    rkey: u32,
    binding: Option<MwBinding>,
}

/// Driver state of an MW.
#[pin_data]
pub(crate) struct MwData {
    #[pin]
    inner: IrqSpinLock<MwInner>,
}

/// The box an MW's state lives in.
pub(crate) type MwState = Pin<KBox<MwData>>;

impl MwData {
    /// The binding, if the window is bound.
    pub(crate) fn binding(&self) -> Option<MwBinding> {
        self.inner.lock().binding
    }
}

/// `alloc_mw`.
pub(crate) fn alloc(pd: &Pd<Rrxe>, _udata: &UData<'_>) -> Result<MwState> {
    pd.device().mw_pool.count_check()?;
    KBox::pin_init(
        try_pin_init!(MwData {
            inner <- new_irq_spinlock!(MwInner { rkey: 0, binding: None }, "MwData::inner"),
        }? Error),
        GFP_KERNEL,
    )
}

/// After create: a pool index and the rkey.
pub(crate) fn created(mw: &Mw<Rrxe>) -> Result {
    let index = mw.device().mw_pool.insert(mw)?;
    let rkey = make_key(index);
    mw.inner.lock().rkey = rkey;
    mw.set_rkey(rkey);
    Ok(())
}

/// Why a bind failed (the WQE completes with `IB_WC_MW_BIND_ERR`).
#[derive(Debug)]
pub(crate) struct BindError;

/// Executes a BIND_MW work request of `qp`: `mw_rkey` names the window,
/// `mr_lkey` the MR, `new_rkey`'s low byte becomes the window's key byte.
/// A zero length unbinds.
pub(crate) fn bind(
    qp: &Qp<Rrxe>,
    mw_rkey: u32,
    mr_lkey: u32,
    addr: u64,
    length: u64,
    new_rkey: u32,
    access: u32,
) -> Result<(), BindError> {
    let dev = qp.device();
    let mw = dev.mw_pool.get(mw_rkey >> 8).ok_or(BindError)?;
    let type2 = mw.is_type2();
    if !core::ptr::eq(mw.pd(), qp.pd()) {
        return Err(BindError);
    }
    // Remote write or atomic need local write (IBA 10.6.7.2.1).
    if access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC) != 0 && access & IB_ACCESS_LOCAL_WRITE == 0 {
        return Err(BindError);
    }
    if access & IB_ACCESS_ZERO_BASED_BIT != 0 && !type2 {
        return Err(BindError);
    }
    let mut inner = mw.inner.lock();
    if inner.rkey != mw_rkey {
        return Err(BindError);
    }
    // A type 2 window is bound once, then invalidated before rebinding.
    if type2 && inner.binding.is_some() {
        return Err(BindError);
    }
    if length == 0 {
        inner.binding = None;
        return Ok(());
    }
    drop(inner);
    // The MR must allow binding and cover the range.
    let region = mem::lkey(qp.pd(), mr_lkey, addr, length, Need::LocalRead).map_err(|_| BindError)?;
    let (mr_access, mr_index) = {
        let i = region.mr().inner.lock();
        (i.access, region.mr().index().unwrap_or(0))
    };
    if mr_access & IB_ACCESS_MW_BIND == 0 {
        return Err(BindError);
    }
    // A window cannot grant what its MR lacks.
    if access & IB_ACCESS_REMOTE_WRITE != 0 && mr_access & IB_ACCESS_LOCAL_WRITE == 0 {
        return Err(BindError);
    }
    let mut inner = mw.inner.lock();
    let rkey = (inner.rkey & !0xff) | (new_rkey & 0xff);
    inner.rkey = rkey;
    inner.binding = Some(MwBinding {
        rkey,
        mr_index,
        addr,
        length,
        access,
        qpn: if type2 { qp.qp_num() } else { 0 },
    });
    drop(inner);
    mw.set_rkey(rkey);
    Ok(())
}

/// Invalidates the window `rkey` names (LOCAL_INV or SEND with
/// invalidate); only bound type 2 windows can be.
pub(crate) fn invalidate(qp: &Qp<Rrxe>, rkey: u32) -> Result {
    let mw = qp.device().mw_pool.get(rkey >> 8).ok_or(EINVAL)?;
    if !mw.is_type2() {
        return Err(EINVAL);
    }
    let mut inner = mw.inner.lock();
    match inner.binding {
        Some(b) if b.rkey == rkey => {
            inner.binding = None;
            Ok(())
        }
        _ => Err(EINVAL),
    }
}
