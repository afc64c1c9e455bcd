// SPDX-License-Identifier: GPL-2.0

//! The completer: consumes responses (ACKs, NAKs, read responses, atomic
//! ACKs), places read and atomic results, retransmits on NAKs and
//! timeouts, and posts send completions in order.

use super::parsed::Parsed;
use super::retransmit;
use super::state::{self, Engine, INFINITE_RETRIES, MAX_BACKOFF};
use super::wqe::{WqeState, WrOp};
use crate::counters::Counter;
use crate::cq;
use crate::mem::{Halt, Transfer};
use crate::proto::aeth::{NakCode, Syndrome};
use crate::proto::Fired;
use crate::proto::{Opcode, Psn};
use crate::qp_attr::{Attrs, State};
use crate::rdma::attrs::QpType;
use crate::rdma::ib::{WcOpcode, WcStatus};
use crate::rdma::objects::Qp;
use crate::rdma::skb::Src;
use crate::rdma::task::{self, QpTimer};
use crate::rdma::wc::Completion;
use crate::Rrxe;
use core::sync::atomic::Ordering;

/// Runs one completer step; whether it made progress.
pub(crate) fn step(qp: &Qp<Rrxe>, e: &mut Engine, a: &Attrs) -> bool {
    let mut progress = false;
    // Timers fired: retransmit or resume after RNR. A retransmit timeout
    // first takes the responses queued when it is seen (as many as that,
    // so that a sender who keeps the queue full cannot put the timeout
    // off): they may show the progress that moves the deadline (a long
    // READ's responses keep coming, and a busy host may run this work
    // late).
    if qp.timeout_fired.swap(false, Ordering::AcqRel) {
        for _ in 0..qp.resp_pkts.len() {
            progress |= take_response(qp, e, a);
        }
        match e.comp.deadline.fired(task::jiffies()) {
            Fired::Idle => {}
            Fired::Rearm(at) => qp.arm_timer_at(QpTimer::Retransmit, at),
            Fired::Expired if head_unacked(e).is_some() && retransmit::put_off_in_host(qp, e) => {
                retransmit::arm(qp, e, a)
            }
            Fired::Expired => progress |= on_timeout(qp, e),
        }
    }
    if qp.rnr_fired.swap(false, Ordering::AcqRel) {
        e.req.rnr_wait = false;
        retransmit::go_back_n(qp, e);
        progress = true;
    }
    progress |= take_response(qp, e, a);
    progress | complete_done(qp, e, a)
}

/// Handles the next queued response, if any; whether there was one.
fn take_response(qp: &Qp<Rrxe>, e: &mut Engine, a: &Attrs) -> bool {
    if e.parked {
        return false;
    }
    let Some(skb) = qp.resp_pkts.pop() else {
        return false;
    };
    if let Some(p) = Parsed::of(&skb) {
        let used = on_response(qp, e, a, &p);
        if e.parked {
            // Its data goes to memory paged on demand that is not in
            // (`state::park`): taken again first once it is. (Closed
            // meanwhile: the QP is going, the packet with it.)
            let _ = qp.resp_pkts.push_front(skb);
            return false;
        }
        if used {
            skb.consume();
        }
    }
    true
}

fn nak_status(code: NakCode) -> WcStatus {
    match code {
        NakCode::InvalidRequest => WcStatus::RemInvReqErr,
        NakCode::RemoteAccessError => WcStatus::RemAccessErr,
        NakCode::RemoteOperationalError => WcStatus::RemOpErr,
        _ => WcStatus::RemOpErr,
    }
}

/// Marks every pending WQE whose messages end at or before `psn` (and
/// needs no response data) as done. The oldest PSN not acknowledged
/// becomes the one after `psn`, but never passes a READ or atomic whose
/// response is missing: its response, resent, must not be taken for a
/// duplicate (C rxe's `COMPST_ERROR_RETRY`).
fn ack_through(e: &mut Engine, psn: Psn) {
    let cons = e.sq_cons;
    let mut slot = cons;
    let mut next = psn.next();
    while slot != e.req.slot {
        let Some(w) = e.shadow.get_mut(slot) else {
            break;
        };
        // A WQE a retry was about to resend completes all the same when
        // the ACK covers all of it.
        let sent = w.state == WqeState::Pending || (w.state == WqeState::Posted && w.sent_once);
        if sent && w.last_psn.compare(psn).is_le() {
            if w.op.writes_local() {
                // Its response is missing: the requester must resend.
                if next.after(w.first_psn) {
                    next = w.first_psn;
                }
                break;
            }
            w.state = WqeState::Done;
        } else if w.state == WqeState::Pending || w.state == WqeState::Posted {
            break;
        }
        slot = e.next_slot(slot);
    }
    if next.after(e.comp.psn) {
        e.comp.psn = next;
    }
}

/// A response to `psn` (a NAK, or an atomic ACK for another request)
/// acknowledges every PSN before it (none for PSN 0).
fn ack_before(e: &mut Engine, psn: Psn) {
    if psn != Psn::ZERO {
        ack_through(e, psn.sub(1));
    }
}

/// The first PSN of the oldest WQE, a READ or atomic, if its response is
/// missing and a response to `psn`, a later request, came.
fn missing_response_before(e: &Engine, psn: Psn) -> Option<Psn> {
    let w = e.shadow.get(head_pending(e)?)?;
    (w.op.writes_local() && w.last_psn.before(psn)).then_some(w.first_psn)
}

/// The first WQE that still waits for a response.
fn head_pending(e: &Engine) -> Option<u32> {
    let cons = e.sq_cons;
    let mut slot = cons;
    while slot != e.req.slot {
        match e.shadow.get(slot) {
            Some(w) if w.state == WqeState::Pending => return Some(slot),
            Some(w) if w.state == WqeState::Done => {}
            _ => return None,
        }
        slot = e.next_slot(slot);
    }
    None
}

/// The oldest WQE with packets out and not acknowledged: the first
/// pending one, or the message the requester is in the middle of.
fn head_unacked(e: &Engine) -> Option<u32> {
    if let Some(slot) = head_pending(e) {
        return Some(slot);
    }
    if !e.comp.psn.before(e.req.psn) {
        return None;
    }
    match e.shadow.get(e.req.slot) {
        Some(w) if w.state == WqeState::Posted && w.started => Some(e.req.slot),
        _ => None,
    }
}

/// Takes the response `p`; whether it was used rather than ignored (not
/// for this QP's state, stale, or for a PSN never sent).
fn on_response(qp: &Qp<Rrxe>, e: &mut Engine, a: &Attrs, p: &Parsed<'_>) -> bool {
    if qp.qp_type != QpType::Rc || a.state == State::Reset {
        return false;
    }
    let psn = p.psn;
    let op = p.opcode;
    // Anything older than what is acknowledged is a duplicate: late, or
    // forged (RoCE has no authentication). A positive ACK still goes
    // through (it may complete a WQE a retry was resending), but it is no
    // progress: it refreshes no budget and moves no timeout, or such
    // duplicates would keep a QP whose requests are lost from ever ending
    // in RETRY_EXC_ERR. A NAK of a PSN already acknowledged says nothing
    // of the requests still out, and fails, spends or rewinds nothing. (C
    // rxe ignores both.)
    let stale = psn.before(e.comp.psn);
    if stale && !(op == Opcode::RcAck && matches!(p.syndrome, Some(Syndrome::Ack { .. }))) {
        return false;
    }
    // A response to a PSN never sent answers nothing (forged, or from
    // an older incarnation of the connection): acknowledging through it
    // would complete WQEs whose packets never left. (C rxe ignores it.)
    if !stale && !psn.before(e.req.sent_end) {
        return false;
    }
    // An RNR NAK or a sequence NAK asks for a resend: it spends a retry
    // budget and must not give it back, or a peer that keeps answering so
    // would keep the QP retrying for ever (C rxe resets the budgets on
    // ACKs, read responses and atomic ACKs only).
    let refresh = !matches!(p.syndrome, Some(Syndrome::RnrNak(_) | Syndrome::Nak(_)));
    let acked_from = e.comp.psn;
    let progress_made = match op {
        Opcode::RcAck => on_ack(qp, e, p),
        Opcode::RcAtomicAck => on_atomic_ack(qp, e, a, p),
        Opcode::RcReadResponseFirst
        | Opcode::RcReadResponseMiddle
        | Opcode::RcReadResponseLast
        | Opcode::RcReadResponseOnly => on_read_response(qp, e, p),
        _ => return false,
    };
    if progress_made && !stale {
        // Forward progress: fresh retry budgets and a new timeout.
        if refresh {
            e.comp.retry_left = a.retry_cnt;
            e.comp.rnr_left = a.rnr_retry;
            e.comp.retried_psn = None;
            e.comp.backoff = 0;
            e.comp.host_waits = 0;
        } else if e.comp.psn.after(acked_from) {
            // A NAK that acknowledged packets: the responder answers and
            // took them, so the path is not slower than the timeout
            // says. The next timeout is not backed off (the budgets are
            // not refreshed: a NAK still spends them).
            e.comp.backoff = 0;
            e.comp.host_waits = 0;
        }
        if let Some(until) = e.comp.recovery_until {
            if !e.comp.psn.before(until) {
                e.comp.recovery_until = None;
            }
        }
        rearm(qp, e, a);
    }
    true
}

fn rearm(qp: &Qp<Rrxe>, e: &mut Engine, a: &Attrs) {
    if head_unacked(e).is_some() {
        retransmit::arm(qp, e, a);
    } else {
        // A pending timer fires once more and finds nothing to do.
        e.comp.deadline.clear();
    }
}

fn on_ack(qp: &Qp<Rrxe>, e: &mut Engine, p: &Parsed<'_>) -> bool {
    let Some(syn) = p.syndrome else { return false };
    match syn {
        Syndrome::Ack { .. } => {
            ack_through(e, p.psn);
            // An ACK beyond a READ/atomic whose response never came: resend.
            if let Some(slot) = head_pending(e) {
                if let Some(w) = e.shadow.get(slot) {
                    if w.op.writes_local() && w.last_psn.compare(p.psn).is_le() {
                        retry_once(qp, e, w.first_psn);
                    }
                }
            }
            true
        }
        Syndrome::RnrNak(t) => {
            // Everything before the NAKed PSN was received.
            ack_before(e, p.psn);
            state::count(qp, Counter::RcvdRnrErr);
            if e.comp.rnr_left == 0 {
                fail_head(e, WcStatus::RnrRetryExcErr);
                state::count(qp, Counter::RetryRnrExceededErr);
                return true;
            }
            spend(&mut e.comp.rnr_left);
            e.req.rnr_wait = true;
            qp.arm_timer(QpTimer::Rnr, t.usec().max(10));
            true
        }
        Syndrome::Nak(NakCode::PsnSequenceError) => {
            state::count(qp, Counter::RcvdSeqErr);
            let from = e.comp.psn;
            ack_before(e, p.psn);
            if new_loss_in_recovery(e, from, p.psn) {
                e.comp.recovery_until = None;
            }
            retry_once(qp, e, p.psn);
            true
        }
        Syndrome::Nak(code) => {
            ack_before(e, p.psn);
            // A NAK of a request after a READ or atomic whose response is
            // missing: the response was lost, and the error is another
            // request's. Resend from the READ (C rxe's
            // `COMPST_ERROR_RETRY`); the refused request fails when its
            // turn comes again.
            if let Some(first) = missing_response_before(e, p.psn) {
                retry_once(qp, e, first);
                return true;
            }
            // Class B/C/D errors: the head request fails, and the QP.
            fail_head(e, nak_status(code));
            true
        }
        Syndrome::Reserved(_) => false,
    }
}

/// Whether a sequence NAK of `psn`, come while a recovery runs, shows a
/// loss among the packets that recovery resent; `from` was the oldest
/// unacknowledged PSN before the NAK. A responder NAKs a gap once, then
/// drops what follows until the missing PSN comes. A NAK that
/// acknowledged packets (its PSN is after `from`, and nothing before it
/// is missing: the responder expects `psn`) after the requester resent
/// past `psn` (the responder saw a later packet) says the resend got
/// through in order up to `psn` and the packet at `psn` did not: the
/// timer would only add its wait to the same resend. A NAK of a PSN the
/// resend has not reached yet (one sent before a timeout rewound the
/// requester) proves nothing, and neither does a gap a late READ
/// response shows: they wait. Each resend still spends `retry_cnt`.
fn new_loss_in_recovery(e: &Engine, from: Psn, psn: Psn) -> bool {
    e.comp.recovery_until.is_some()
        && psn.after(from)
        && e.comp.psn == psn
        && psn.next().before(e.req.psn)
}

/// Resends from the oldest unacknowledged WQE, once per PSN (a NAK and a
/// gap for the same loss must not retry twice).
///
/// One recovery at a time: while the packets sent before the last retry
/// are not all acknowledged, their late responses (a READ's, say) show
/// gaps that the retry already covers; a real loss among the resent
/// packets is left to the retransmit timer.
fn retry_once(qp: &Qp<Rrxe>, e: &mut Engine, psn: Psn) {
    if e.comp.retried_psn == Some(psn) {
        return;
    }
    if let Some(until) = e.comp.recovery_until {
        if e.comp.psn.before(until) {
            return;
        }
    }
    e.comp.retried_psn = Some(psn);
    if e.comp.retry_left == 0 {
        fail_head(e, WcStatus::RetryExcErr);
        state::count(qp, Counter::RetryExceededErr);
        return;
    }
    spend(&mut e.comp.retry_left);
    e.comp.recovery_until = Some(e.req.psn);
    retransmit::go_back_n(qp, e);
}

fn on_timeout(qp: &Qp<Rrxe>, e: &mut Engine) -> bool {
    if head_unacked(e).is_none() {
        return false;
    }
    if e.comp.retry_left == 0 {
        fail_head(e, WcStatus::RetryExcErr);
        state::count(qp, Counter::RetryExceededErr);
        return true;
    }
    spend(&mut e.comp.retry_left);
    state::count(qp, Counter::RetryTimeouts);
    e.comp.retried_psn = None;
    // No answer for a whole timeout: the path is slower than the timeout
    // says (or lost). Wait longer before the next resend, as TCP does, so
    // resends cannot feed on themselves; progress resets it.
    e.comp.backoff = (e.comp.backoff + 1).min(MAX_BACKOFF);
    e.comp.recovery_until = Some(e.req.psn);
    retransmit::go_back_n(qp, e);
    true
}

/// Takes one retry out of the budget `left` (which is above 0), unless
/// it is [`INFINITE_RETRIES`].
fn spend(left: &mut u8) {
    if *left != INFINITE_RETRIES {
        *left -= 1;
    }
}

fn fail_head(e: &mut Engine, status: WcStatus) {
    if let Some(slot) = head_unacked(e) {
        if let Some(w) = e.shadow.get_mut(slot) {
            w.state = WqeState::Error(status);
        }
    }
}

fn on_atomic_ack(qp: &Qp<Rrxe>, e: &mut Engine, _a: &Attrs, p: &Parsed<'_>) -> bool {
    let Some(slot) = head_pending(e) else {
        return false;
    };
    let Some(w) = e.shadow.get(slot) else {
        return false;
    };
    if !matches!(w.op, WrOp::CmpSwap | WrOp::FetchAdd) || w.first_psn != p.psn {
        // Acknowledges earlier requests at most.
        ack_before(e, p.psn);
        return false;
    }
    let orig = p.atomic_orig.unwrap_or(0);
    let st = match e.shadow.copy(
        qp,
        None,
        slot,
        0,
        Transfer::Into(Src::bytes(&orig.to_ne_bytes())),
    ) {
        Ok(()) => WqeState::Done,
        Err(Halt::Status(s)) => WqeState::Error(s),
        Err(Halt::WouldFault) => {
            state::park(e);
            return false;
        }
    };
    if let Some(x) = e.shadow.get_mut(slot) {
        x.state = st;
    }
    e.comp.psn = p.psn.next();
    true
}

fn on_read_response(qp: &Qp<Rrxe>, e: &mut Engine, p: &Parsed<'_>) -> bool {
    // Responses acknowledge every request before the READ.
    let Some(slot) = head_pending(e) else {
        return false;
    };
    let Some(w) = e.shadow.get(slot) else {
        return false;
    };
    let last_psn = w.last_psn;
    if matches!(w.op, WrOp::Flush | WrOp::AtomicWrite) && p.psn == last_psn {
        // Their answer: a READ response of length zero (C rxe's too).
        ack_through(e, p.psn);
        return true;
    }
    if w.op != WrOp::Read {
        // Earlier writes/sends were acknowledged implicitly.
        if last_psn.before(p.psn) && !w.op.writes_local() {
            ack_through(e, last_psn);
            return on_read_response(qp, e, p);
        }
        return false;
    }
    let expect = w.first_psn.add(w.read / w.mtu.bytes() as u32);
    if p.psn != expect {
        if p.psn.after(expect) {
            // A response was lost: resend the READ.
            retry_once(qp, e, expect);
        }
        return false;
    }
    // (A response is linear: `rx::deliver`.)
    let Some(payload) = p.payload_bytes() else {
        return false;
    };
    if w.read.saturating_add(payload.len() as u32) > w.len {
        fail_head(e, WcStatus::BadRespErr);
        return true;
    }
    match e
        .shadow
        .copy(qp, None, slot, w.read, Transfer::Into(Src::bytes(payload)))
    {
        Ok(()) => {}
        Err(Halt::Status(s)) => {
            if let Some(x) = e.shadow.get_mut(slot) {
                x.state = WqeState::Error(s);
            }
            return true;
        }
        Err(Halt::WouldFault) => {
            state::park(e);
            return false;
        }
    }
    let last = p.opcode.is_end();
    if let Some(x) = e.shadow.get_mut(slot) {
        x.read += payload.len() as u32;
        if last {
            x.state = if x.read == x.len {
                WqeState::Done
            } else {
                WqeState::Error(WcStatus::BadRespErr)
            };
        }
    }
    e.comp.psn = p.psn.next();
    true
}

/// Posts the completions of finished WQEs at the head of the send queue,
/// in order, and frees their slots.
fn complete_done(qp: &Qp<Rrxe>, e: &mut Engine, a: &Attrs) -> bool {
    let mut progress = false;
    let mut posted = false;
    loop {
        let cons = e.sq_cons;
        if cons == e.req.slot {
            if e.shadow.get(cons).map(|w| w.state) != Some(WqeState::Done)
                // Not processed by the requester yet (unless it already failed).
                && !matches!(e.shadow.get(cons).map(|w| w.state), Some(WqeState::Error(_)))
            {
                break;
            }
            // The requester stands here: the ring may be empty (a slot
            // behind it always holds a WQE).
            let sq = qp.sq.lock();
            if sq.queue.consumer() == sq.queue.producer() {
                break;
            }
        }
        // Read in place: only the completion's fields leave the shadow.
        let Some(w) = e.shadow.get(cons) else { break };
        let status = match w.state {
            WqeState::Done => WcStatus::Success,
            WqeState::Error(s) => s,
            _ => break,
        };
        let credit = w.credit;
        if status != WcStatus::Success {
            // Its packets may still wait at the peer: the owner may reuse
            // the buffer once it sees this.
            qp.revoke_zcopy();
        }
        let c = (status != WcStatus::Success || w.signaled(qp.sq_sig_all)).then(|| Completion {
            byte_len: w.len,
            ..Completion::new(w.wr.wr_id, status, w.op.wc_opcode(), qp.qp_num())
        });
        if credit {
            e.req.rd_atomic += 1;
        }
        // The slot is free before the completion is seen: a consumer that
        // posts again as soon as it polls it must find room in the ring.
        e.shadow.clear(cons);
        e.sq_cons = advance_sq(qp);
        if let Some(c) = c {
            cq::post(qp.send_cq(), qp, &c, false);
            posted = true;
        }
        if e.req.slot == cons {
            e.req.slot = e.next_slot(cons);
        }
        progress = true;
        if status != WcStatus::Success {
            state::set_error(qp, e);
            break;
        }
    }
    if progress && qp.qp_type == QpType::Rc {
        rearm(qp, e, a);
    }
    if posted && e.sq_cons == e.req.slot {
        // A completion with nothing else started: its consumer may be
        // waiting for it to post the next request (see `engine::doorbell`).
        qp.awaited.store(true, Ordering::Relaxed);
    }
    progress
}

/// Completes every WQE left on the send queue with a flush status (the
/// first failed one keeps its own).
pub(crate) fn flush_sq(qp: &Qp<Rrxe>, e: &mut Engine, _a: &Attrs) {
    // Before any flush completion: packets sent without a copy that still
    // wait at the peer read the WQEs' buffers no more.
    qp.revoke_zcopy();
    qp.disarm_timer(QpTimer::Retransmit);
    e.comp.deadline.cancel();
    // At most one ring's worth per run: a client that keeps producing
    // cannot hold the work here; the rest is flushed at the next run.
    for _ in 0..e.shadow_slots() {
        let (cons, wr_id, opcode) = {
            let sq = qp.sq.lock();
            let cons = sq.queue.consumer();
            if cons == sq.queue.producer() {
                e.req.slot = cons;
                return;
            }
            // WQEs the requester never reached are read now, once.
            let (wr_id, op) = match e.shadow.get(cons) {
                Some(w) => (w.wr.wr_id, w.op.wc_opcode()),
                None => {
                    let mut hdr = [0u8; crate::rdma::wqe::SEND_WQE_HDR];
                    let wr = sq
                        .queue
                        .read_at(cons, 0, &mut hdr)
                        .ok()
                        .and_then(|()| crate::rdma::wqe::decode_send(&hdr));
                    let op = wr
                        .and_then(|w| w.op)
                        .map_or(WcOpcode::Send, |o| o.wc_opcode());
                    (wr.map_or(0, |w| w.wr_id), op)
                }
            };
            (cons, wr_id, op)
        };
        let status = match e.shadow.get(cons).map(|w| w.state) {
            Some(WqeState::Error(s)) => s,
            _ => WcStatus::WrFlushErr,
        };
        let c = Completion::new(wr_id, status, opcode, qp.qp_num());
        e.shadow.clear(cons);
        e.sq_cons = advance_sq(qp);
        cq::post(qp.send_cq(), qp, &c, false);
    }
    e.req.slot = e.sq_cons;
    qp.schedule();
}

/// Frees the slot at the send ring's consumer index; the new index.
fn advance_sq(qp: &Qp<Rrxe>) -> u32 {
    let mut sq = qp.sq.lock();
    let _ = sq.queue.advance_consumer();
    sq.queue.consumer()
}
