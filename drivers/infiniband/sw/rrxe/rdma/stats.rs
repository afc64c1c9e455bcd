// SPDX-License-Identifier: GPL-2.0

//! Port counters (`rdma statistic show`): the descriptor table a driver
//! declares as a constant; per-QP counters (`rdma statistic qp`); the
//! driver details of `rdma res show -dd`.

use super::bindings;
use super::ops::DeviceOps;
use kernel::error::Result;
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

/// The driver attributes of one resource in an `rdma res show` message
/// (`-dd`): named numbers, added while the message has room.
///
/// # Invariants
///
/// `msg` is the message ib_core is filling, with a driver nest open.
pub(crate) struct ResAttrs {
    msg: *mut bindings::sk_buff,
}

impl ResAttrs {
    /// Adds `name = value`; `EMSGSIZE` when the message is full.
    pub(crate) fn u32(&mut self, name: &CStr, value: u32) -> Result {
        // SAFETY: `msg` is live with the driver nest open (the invariant);
        // the name is a NUL-terminated string ib_core copies.
        let r = unsafe { bindings::rdma_nl_put_driver_u32(self.msg, name.as_char_ptr(), value) };
        if r != 0 {
            return Err(super::error::emsgsize());
        }
        Ok(())
    }
}

/// Fills `msg`'s driver nest through `fill`: the nest is opened, then
/// closed if `fill` succeeds and taken back out if it fails.
///
/// # Safety
///
/// `msg` must be the message of an ib_core `fill_res_*_entry` call.
pub(crate) unsafe fn fill_driver(
    msg: *mut bindings::sk_buff,
    fill: impl FnOnce(&mut ResAttrs) -> Result,
) -> Result {
    // SAFETY: Per the caller, `msg` is a netlink message being filled.
    let nest = unsafe { bindings::rrxe_helper_nl_driver_start(msg) };
    if nest.is_null() {
        return Err(super::error::emsgsize());
    }
    // INVARIANT: The nest was just opened in `msg`.
    let r = fill(&mut ResAttrs { msg });
    // SAFETY: The nest opened above, in the same message.
    unsafe { bindings::rrxe_helper_nl_driver_end(msg, nest, r.is_ok()) };
    r
}

/// Which per-QP counter (ib_core's `rdma_counter`) a QP is bound to: its
/// address, compared and never followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CounterId(usize);

impl CounterId {
    pub(super) fn of(c: *const bindings::rdma_counter) -> Self {
        Self(c as usize)
    }

    /// As a number (never 0), to keep in an atomic.
    pub(crate) fn raw(self) -> usize {
        self.0
    }

    /// From [`Self::raw`].
    pub(crate) fn from_raw(v: usize) -> Self {
        Self(v)
    }
}

/// The values of `counter`'s statistics.
///
/// # Safety
///
/// `counter` must be a live counter of this driver's device whose lock the
/// caller holds (its `stats` came from `counter_alloc_stats`) for `'a`.
pub(super) unsafe fn counter_values<'a>(counter: *mut bindings::rdma_counter) -> &'a mut [u64] {
    // SAFETY: Per the caller: `stats` has `num_counters` values, and the
    // counter's lock keeps other writers out.
    unsafe {
        let stats = (*counter).stats;
        let n = usize::try_from((*stats).num_counters).unwrap_or(0);
        core::slice::from_raw_parts_mut((*stats).value.as_mut_ptr(), n)
    }
}
