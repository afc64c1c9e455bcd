// SPDX-License-Identifier: GPL-2.0

//! Retransmission, for the requester and the completer: the retransmit
//! timer (armed by the requester when it sends, re-armed or cleared by
//! the completer as ACKs come) and go-back-N (the completer's answer to a
//! timeout, a sequence-error NAK or a gap, which rewinds the requester).

use super::state::{self, Engine, MAX_BACKOFF, MAX_HOST_WAITS};
use super::wqe::{WqeState, WrOp};
use crate::proto::Psn;
use crate::qp_attr::Attrs;
use crate::rdma::objects::Qp;
use crate::rdma::task::{self, QpTimer};
use crate::Rrxe;
use core::sync::atomic::Ordering;

/// Microseconds of the ACK timeout for IBA's 5-bit `timeout` (4.096 us *
/// 2^timeout), capped; 0 for "infinite".
fn timeout_usec(timeout: u8) -> u32 {
    if timeout == 0 {
        return 0;
    }
    let ns = 4096u64 << u64::from(timeout.min(31));
    (ns / 1000).clamp(1000, 60_000_000) as u32
}

/// (Re)starts the retransmit timeout: the deadline is one (backed-off)
/// timeout from now. The kernel timer is only touched when none is
/// pending or the deadline moved earlier than it (`proto::deadline`).
pub(super) fn arm(qp: &Qp<Rrxe>, e: &mut Engine, a: &Attrs) {
    let t = timeout_usec(a.timeout);
    if t != 0 {
        let dur = task::usecs_to_jiffies(t.saturating_mul(1 << e.comp.backoff.min(MAX_BACKOFF)));
        if let Some(at) = e.comp.deadline.start(task::jiffies(), dur) {
            qp.arm_timer_at(QpTimer::Retransmit, at);
        }
        e.comp.freed_mark = qp.device().core().tx_freed.load(Ordering::Relaxed);
    }
}

/// Puts a retransmit timeout off, and says so, if it finds requests of
/// the QP still in this host (sent, not yet freed: in a queue of the stack
/// or, on loopback, queued for the destination QP's engines) while the
/// host moves packets (the device's QPs had packets freed since the
/// deadline started): they are late, not lost, as TCP does not resend a
/// segment still in a host queue. With many QPs on one device
/// the engines may take longer than a timeout to reach a destination's
/// backlog, and resends would only add to it. A put-off backs the next
/// timeout off like a timeout does, and at most [`MAX_HOST_WAITS`] come
/// in a row (progress starts the count again): requests held in the host
/// while the rest of it moves (a destination stuck in a page fault, a
/// stalled transmit queue) still end in retries and `RETRY_EXC_ERR`. A
/// host that freed nothing in a whole timeout is stuck, and the timeout
/// counts at once. Only requests count: the QP's own ACKs and responses
/// to a streaming peer are always in flight and say nothing of them.
pub(super) fn put_off_in_host(qp: &Qp<Rrxe>, e: &mut Engine) -> bool {
    if e.comp.host_waits >= MAX_HOST_WAITS
        || qp.req_out.load(Ordering::Acquire) == 0
        || qp.device().core().tx_freed.load(Ordering::Relaxed) == e.comp.freed_mark
    {
        return false;
    }
    e.comp.host_waits += 1;
    e.comp.backoff = (e.comp.backoff + 1).min(MAX_BACKOFF);
    state::count(qp, crate::counters::Counter::RetryDeferred);
    true
}

/// Go-back-N: resets the requester to resend from the oldest
/// unacknowledged PSN. Every started WQE up to and including the message
/// the requester is in the middle of goes back to `Posted` with the PSNs
/// it had; one the ACKs already cover is done; a SEND or WRITE
/// acknowledged in part resumes at the first unacknowledged packet
/// (`comp.psn`); a READ keeps the response bytes it has and the requester
/// (`req::next_packet`) asks for the rest; atomics start over. A read or
/// atomic keeps its credit.
pub(super) fn go_back_n(qp: &Qp<Rrxe>, e: &mut Engine) {
    let cons = e.sq_cons;
    let mut slot = cons;
    let mut first: Option<Psn> = None;
    // Up to the requester's position, and the message it is in the middle
    // of (its packets so far are unacknowledged like any others).
    let end = match e.shadow.get(e.req.slot) {
        Some(w) if w.state == WqeState::Posted && w.started => e.next_slot(e.req.slot),
        _ => e.req.slot,
    };
    while slot != end {
        if let Some(w) = e.shadow.get_mut(slot) {
            if matches!(w.state, WqeState::Pending | WqeState::Posted) && w.started {
                // Packets of it the responder acknowledged.
                let acked = e.comp.psn.distance(w.first_psn).max(0) as u64;
                let acked_bytes = acked * w.mtu.bytes() as u64;
                if !w.op.is_read_or_atomic() && acked > 0 && acked_bytes >= u64::from(w.len.max(1))
                {
                    // All of it: done, whatever a retry said before.
                    w.state = WqeState::Done;
                    slot = e.next_slot(slot);
                    continue;
                }
                w.state = WqeState::Posted;
                // A READ keeps what it received: its resend asks for the
                // rest (`req::next_packet`).
                if w.op != WrOp::Read {
                    w.read = 0;
                }
                if !w.op.is_read_or_atomic() && acked > 0 {
                    // Resume inside the message.
                    w.sent = acked_bytes as u32;
                    first.get_or_insert(e.comp.psn);
                } else {
                    // From its first packet, with the PSNs it had: a
                    // resent message must never get new PSNs, or the
                    // responder would take it for a new one.
                    w.sent = 0;
                    first.get_or_insert(w.first_psn);
                }
            }
        }
        slot = e.next_slot(slot);
    }
    if let Some(psn) = first {
        e.req.slot = cons;
        // Skip completed WQEs at the head (they wait for their turn).
        while e.req.slot != slot {
            match e.shadow.get(e.req.slot) {
                Some(w) if w.state == WqeState::Posted => break,
                _ => e.req.slot = e.next_slot(e.req.slot),
            }
        }
        e.req.psn = psn;
    }
    e.req.noack = 0;
    state::count(qp, crate::counters::Counter::CompleterRetryErr);
}
