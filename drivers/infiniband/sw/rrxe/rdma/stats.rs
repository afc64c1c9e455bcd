// SPDX-License-Identifier: GPL-2.0

//! Port counters (`rdma statistic show`): the descriptor table a driver
//! declares as a constant.

use super::bindings;
use super::ops::DeviceOps;
use kernel::str::CStr;

/// One counter's descriptor (`struct rdma_stat_desc`).
#[repr(transparent)]
pub(crate) struct StatDesc(bindings::rdma_stat_desc);

// SAFETY: The descriptor holds a pointer to a static name and is never
// written.
unsafe impl Sync for StatDesc {}

impl StatDesc {
    /// A counter called `name`.
    pub(crate) const fn new(name: &'static CStr) -> Self {
        Self(bindings::rdma_stat_desc {
            name: name.as_char_ptr(),
            flags: 0,
            priv_: core::ptr::null(),
        })
    }
}

/// `T`'s descriptor table, as ib_core wants it.
pub(crate) fn descs<T: DeviceOps>() -> &'static [bindings::rdma_stat_desc] {
    let d: &'static [StatDesc] = T::COUNTERS;
    // SAFETY: `StatDesc` is a transparent wrapper of `rdma_stat_desc`.
    unsafe { core::slice::from_raw_parts(d.as_ptr().cast(), d.len()) }
}
