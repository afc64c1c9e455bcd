// SPDX-License-Identifier: GPL-2.0

//! The driver's tracepoints (`include/rrxe/rrxe_trace.h`): `rrxe:rrxe_send`,
//! `rrxe:rrxe_recv` and `rrxe:rrxe_drop`, for tracefs, `perf trace` and
//! bpftrace. A caller tests whether an event is on (`*_on`: a call that
//! tests its static key) before it reads a packet's fields.

use super::bindings;
use kernel::str::CStr;

/// A packet's BTH fields as the events show them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PktId {
    /// The QP it is for (or from, sent).
    pub(crate) qpn: u32,
    pub(crate) psn: u32,
    /// The BTH opcode byte, as the event prints it (0xff: not read).
    pub(crate) bth_code: u8,
}

impl PktId {
    /// What a packet dropped before its headers were read shows.
    pub(crate) const UNKNOWN: Self = Self {
        qpn: 0xff_ffff,
        psn: 0,
        bth_code: 0xff,
    };
}

/// Whether `rrxe:rrxe_send` is on.
pub(crate) fn send_on() -> bool {
    // SAFETY: Reads a static key; no preconditions.
    unsafe { bindings::rrxe_helper_trace_send_on() }
}

/// Whether `rrxe:rrxe_recv` is on.
pub(crate) fn recv_on() -> bool {
    // SAFETY: Reads a static key; no preconditions.
    unsafe { bindings::rrxe_helper_trace_recv_on() }
}

/// Whether `rrxe:rrxe_drop` is on.
pub(crate) fn drop_on() -> bool {
    // SAFETY: Reads a static key; no preconditions.
    unsafe { bindings::rrxe_helper_trace_drop_on() }
}

/// `rrxe:rrxe_send`: a buffer of `pkts` packets, `len` bytes, sent by
/// device `dev`.
pub(crate) fn send(dev: &CStr, id: PktId, pkts: u32, len: u32) {
    // SAFETY: A NUL-terminated name the event copies.
    unsafe {
        bindings::rrxe_helper_trace_send(dev.as_char_ptr(), id.qpn, id.psn, id.bth_code, pkts, len)
    };
}

/// `rrxe:rrxe_recv`: a packet of `len` bytes queued for its QP.
pub(crate) fn recv(dev: &CStr, id: PktId, len: u32) {
    // SAFETY: As in `send`.
    unsafe {
        bindings::rrxe_helper_trace_recv(dev.as_char_ptr(), id.qpn, id.psn, id.bth_code, len)
    };
}

/// `rrxe:rrxe_drop`: a received packet dropped for `reason`.
pub(crate) fn drop(dev: &CStr, id: PktId, reason: &CStr) {
    // SAFETY: As in `send`; the event copies the reason too.
    unsafe {
        bindings::rrxe_helper_trace_drop(
            dev.as_char_ptr(),
            id.qpn,
            id.psn,
            id.bth_code,
            reason.as_char_ptr(),
        )
    };
}
