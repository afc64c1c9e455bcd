// SPDX-License-Identifier: GPL-2.0

//! The responder: executes incoming requests (SEND into receive WQEs,
//! RDMA WRITE/READ, atomics, FLUSH, ATOMIC WRITE), acknowledges them,
//! answers duplicates (re-ACK, replayed read responses, cached atomic
//! results), NAKs what cannot be done, and posts receive completions.

use super::parsed::Parsed;
use super::state::{self, Engine, Resource};
use crate::counters::Counter;
use crate::cq;
use crate::mem::{self, CopyError, Halt, Key, MemError, Need, Transfer};
use crate::net::tx as pkt;
use crate::proto::aeth::{credit_code, NakCode, RnrTimer, Syndrome};
use crate::proto::build::{AethFields, AtomicEthFields, RethFields, TxSpec};
use crate::proto::seg::{segments, MsgOp, Segment, Segments};
use crate::proto::{Msn, Mtu, Opcode, Psn};
use crate::qp_attr::Attrs;
use crate::rdma::attrs::QpType;
use crate::rdma::consts::{RDMA_NETWORK_IPV4, RDMA_NETWORK_IPV6};
use crate::rdma::ib::{Access, WcFlags, WcOpcode, WcStatus};
use crate::rdma::objects::{ObjEvent, Qp};
use crate::rdma::skb::{SkBuff, Src, ETH_P_IP};
use crate::rdma::wc::Completion;
use crate::Rrxe;
use core::sync::atomic::{AtomicU64, Ordering};

/// Read response packets sent per step (a long read yields in between).
const READ_BURST: usize = 16;
/// The QP's packets in flight (sent, and not yet freed by the stack or
/// by the loopback destination that queued them) at which a long READ
/// waits for half of them to drain: a requester whose work does not run
/// keeps its responses queued, and a READ of gigabytes must not become
/// that much kernel memory. (Woken at half, the responses keep coming
/// while the requester takes the rest.)
const READ_INFLIGHT_HIGH: u32 = 1024;
/// Bytes of the GRH a datagram receive buffer starts with.
const GRH_LEN: usize = 40;

/// What to answer a request with.
enum Verdict {
    /// Done; ACK if asked (RC).
    Ack,
    /// No receive WQE: RNR NAK (RC) or drop.
    Rnr,
    /// NAK with this code (RC) and fail the receive WQE, if any, with
    /// `status`; the QP goes to the error state.
    Nak(NakCode, WcStatus),
    /// Drop silently.
    Drop,
    /// Already answered (read responses, atomic ACK).
    Answered,
    /// The receive WQE's completion found its CQ full and was lost: the
    /// QP goes to the error state without an answer (C rxe's
    /// `RESPST_ERR_CQ_OVERFLOW`, class G), so the sender does not count
    /// as delivered a message whose receiver never learns of it.
    CqOverflow,
    /// The memory it goes to (or comes from) is paged on demand and not
    /// in: the request goes back at the head of the queue, nothing of it
    /// done, and the responder parks until its fault is done
    /// (`state::park`).
    WouldFault,
}

/// What became of a request packet.
enum Used {
    /// Executed, answered again or refused with a NAK.
    Yes,
    /// Dropped (out of sequence, a duplicate that draws no answer, RNR,
    /// refused without an answer, or its completion lost to a full CQ).
    No,
    /// Not taken yet: it waits for a fault ([`Verdict::WouldFault`]).
    Parked,
}

impl Verdict {
    /// The request is malformed, out of sequence, or not allowed on this
    /// QP: NAK Invalid Request, remote invalid request error.
    const INVALID_REQUEST: Verdict = Verdict::Nak(NakCode::InvalidRequest, WcStatus::RemInvReqErr);
    /// No responder resource for a READ or an atomic: NAK Invalid RD
    /// Request.
    const NO_RESOURCE: Verdict = Verdict::Nak(NakCode::InvalidRdRequest, WcStatus::RemInvReqErr);
    /// The receive WQE was refused when read (C rxe's class A error).
    const MALFORMED_WQE: Verdict =
        Verdict::Nak(NakCode::RemoteOperationalError, WcStatus::LocQpOpErr);
}

/// Runs one responder step; whether it made progress.
pub(crate) fn step(qp: &Qp<Rrxe>, e: &mut Engine, a: &Attrs) -> bool {
    // A long READ still has responses to send, once those in flight
    // drain.
    if let Some(i) = e.resp.read_busy {
        if state::inflight_at(qp, READ_INFLIGHT_HIGH, READ_INFLIGHT_HIGH / 2) {
            return false;
        }
        send_read_responses(qp, e, a, i);
        return true;
    }
    let Some(skb) = qp.req_pkts.pop() else {
        return false;
    };
    qp.awaited.store(true, Ordering::Relaxed);
    let Some(p) = Parsed::of(&skb) else {
        return true;
    };
    match handle(qp, e, a, &p, &skb) {
        Used::Yes => skb.consume(),
        Used::No => {}
        Used::Parked => {
            // (Closed meanwhile: the QP is going, the packet with it.)
            let _ = qp.req_pkts.push_front(skb);
            state::park(e);
            return false;
        }
    }
    true
}

/// Takes the request `p`: what became of it.
fn handle(qp: &Qp<Rrxe>, e: &mut Engine, a: &Attrs, p: &Parsed<'_>, skb: &SkBuff) -> Used {
    let take = match qp.qp_type {
        QpType::Rc => rc_expected(qp, e, a, p),
        QpType::Uc => uc_expected(e, p),
        _ => Take::Execute,
    };
    match take {
        Take::Execute => {}
        Take::Answered => return Used::Yes,
        Take::Drop => return Used::No,
    }
    let v = match check_sequence(qp, e, p) {
        Ok(()) => execute(qp, e, a, p, skb),
        Err(v) => v,
    };
    if matches!(v, Verdict::WouldFault) {
        Used::Parked
    } else if answer(qp, e, a, p, skb, v) {
        Used::Yes
    } else {
        Used::No
    }
}

/// What the sequence rules make of a request.
enum Take {
    /// The one expected next: executed.
    Execute,
    /// A duplicate, answered again.
    Answered,
    /// Out of sequence, or a duplicate that draws no answer: dropped.
    Drop,
}

/// RC: whether `p` has the PSN expected next. A gap draws one NAK and is
/// dropped; a duplicate is answered again.
fn rc_expected(qp: &Qp<Rrxe>, e: &mut Engine, a: &Attrs, p: &Parsed<'_>) -> Take {
    let d = p.psn.distance(e.resp.psn);
    if d > 0 {
        // A gap: one NAK per gap, then drop until it is filled.
        state::count(qp, Counter::OutOfSeqRequest);
        if !e.resp.nak_sent {
            e.resp.nak_sent = true;
            send_ack(
                qp,
                e,
                a,
                Syndrome::Nak(NakCode::PsnSequenceError),
                e.resp.psn,
            );
        }
        return Take::Drop;
    }
    if d < 0 {
        state::count(qp, Counter::DuplicateRequest);
        return if duplicate(qp, e, a, p) {
            Take::Answered
        } else {
            Take::Drop
        };
    }
    e.resp.nak_sent = false;
    Take::Execute
}

/// UC: whether to take `p`; after a PSN gap, the packets up to the next
/// message's first are dropped.
fn uc_expected(e: &mut Engine, p: &Parsed<'_>) -> Take {
    if p.psn != e.resp.psn || e.resp.uc_drop {
        // A lost packet kills the rest of the message.
        if p.opcode.is_start() {
            e.resp.uc_drop = false;
            e.resp.last = None;
            abandon_recv(e);
        } else {
            e.resp.uc_drop = true;
            e.resp.psn = p.psn.next();
            return Take::Drop;
        }
    }
    Take::Execute
}

/// Carries out the verdict on a request: move past it, acknowledge it,
/// RNR NAK or NAK it. Whether the request was used: executed, answered
/// again, or refused with a NAK (which answers only on RC; UC and UD
/// refuse in silence); an RNR'd one, or one whose completion was lost,
/// was dropped.
fn answer(
    qp: &Qp<Rrxe>,
    e: &mut Engine,
    a: &Attrs,
    p: &Parsed<'_>,
    skb: &SkBuff,
    v: Verdict,
) -> bool {
    let rc = qp.qp_type == QpType::Rc;
    match v {
        Verdict::Ack => {
            advance(qp, e, p);
            if rc {
                acknowledge(qp, e, a, p);
            }
            true
        }
        Verdict::Answered => {
            advance(qp, e, p);
            true
        }
        Verdict::Rnr => {
            state::count(qp, Counter::SendRnrErr);
            if rc {
                let t = RnrTimer::new(a.min_rnr_timer & 0x1f).unwrap_or(RnrTimer::MAX_WAIT);
                send_ack(qp, e, a, Syndrome::RnrNak(t), e.resp.psn);
            }
            false
        }
        Verdict::Nak(code, status) => {
            if rc {
                send_ack(qp, e, a, Syndrome::Nak(code), e.resp.psn);
            } else if qp.qp_type == QpType::Uc
                && peer_fault(status)
                && !(p.opcode.is_send() && qp.srq().is_some())
            {
                // UC refuses what its peer got wrong in silence and drops
                // the rest of the message (C rxe's classes D and E). A
                // receive WQE stays for the next SEND: the one this SEND
                // took, or one a SEND cut short by a lost packet left,
                // which a WRITE refused here does not own. Only a SEND's
                // WQE taken from an SRQ, which cannot go back, completes
                // in error; and a fault of the WQE itself always does.
                abandon_recv(e);
                end_message(e);
                e.resp.uc_drop = true;
                return false;
            }
            let wqe = e.resp.wqe.finish();
            let lost = wqe.is_some_and(|wr_id| !complete_recv(qp, wr_id, status, 0, p, skb));
            end_message(e);
            if rc || lost {
                state::set_error(qp, e);
            }
            if rc && code == NakCode::RemoteAccessError && wqe.is_none() {
                access_error_event(qp);
            }
            rc
        }
        Verdict::CqOverflow => {
            end_message(e);
            state::set_error(qp, e);
            false
        }
        Verdict::Drop | Verdict::WouldFault => false,
    }
}

/// An RC responder refused a request's R_Key or the range it names (a
/// WRITE, a READ, an atomic, a FLUSH) and went to the error state, with
/// no receive WQE to tell its owner (C9-222.1.1, Class C; a WRITE with
/// immediate takes its WQE only at its end, so it has none either): the
/// owner gets the affiliated asynchronous error `IB_EVENT_QP_ACCESS_ERR`
/// (as C rxe since Linux 7.1), once, with the QP in the error state.
fn access_error_event(qp: &Qp<Rrxe>) {
    qp.event(ObjEvent::QpAccessErr);
}

/// Whether a refusal with `status` is the requester's doing (its keys,
/// lengths or request), not the receive WQE's.
fn peer_fault(status: WcStatus) -> bool {
    matches!(
        status,
        WcStatus::RemAccessErr | WcStatus::RemInvReqErr | WcStatus::RemOpErr | WcStatus::LocLenErr
    )
}

/// Forgets the message in progress: its opcode, WRITE and kept keys.
fn end_message(e: &mut Engine) {
    e.resp.last = None;
    e.resp.write = None;
    e.resp.keys.clear();
}

/// Acknowledges an executed RC request. A request whose own ACK is never
/// sent, a later one covering it, counts in `ack_deferred`: one without
/// AckReq, or one whose held-back ACK a later request's replaces.
fn acknowledge(qp: &Qp<Rrxe>, e: &mut Engine, a: &Attrs, p: &Parsed<'_>) {
    if p.opcode.is_flush() || p.opcode.is_atomic_write() {
        send_read_response_ack(qp, e, a, p.psn);
    } else if p.ack_req {
        // While more requests wait, one ACK covers them all: it
        // goes when the queue is empty, at the end of the
        // responder's row of packets (`engine::run_locked`), or
        // before any other response (see `flush_ack`).
        if e.resp.ack_due.replace((p.psn, e.resp.msn)).is_some() {
            state::count(qp, Counter::AckDeferred);
        }
        if qp.req_pkts.len() == 0 {
            flush_ack(qp, e, a);
        }
    } else {
        state::count(qp, Counter::AckDeferred);
    }
}

/// The AETH of an ACK: credits as the RQ's free WQEs (SRQ: unlimited).
fn ack_syndrome(qp: &Qp<Rrxe>) -> Syndrome {
    let credits = match qp.rq.lock().as_ref() {
        Some(rq) => rq.queue.count(),
        None => u32::MAX,
    };
    Syndrome::Ack {
        credit_code: credit_code(credits),
    }
}

/// Moves past a packet that was executed.
fn advance(qp: &Qp<Rrxe>, e: &mut Engine, p: &Parsed<'_>) {
    if qp.qp_type == QpType::Rc || qp.qp_type == QpType::Uc {
        if p.opcode.is_read() {
            // The READ's responses consume their PSNs (set by the READ).
        } else {
            e.resp.psn = p.psn.next();
        }
        e.resp.last = if p.opcode.is_end() {
            None
        } else {
            Some(p.opcode)
        };
        // (A READ's message is counted when its last response is sent,
        // `send_read_responses`: once, as C rxe's C9-148.)
        if p.opcode.is_end() && !p.opcode.is_read() {
            e.resp.msn = e.resp.msn.next();
        }
    }
}

/// IBA 9.7.5.1.3: a packet must continue the message in progress, or
/// start one when none is.
fn check_sequence(qp: &Qp<Rrxe>, e: &Engine, p: &Parsed<'_>) -> core::result::Result<(), Verdict> {
    if matches!(qp.qp_type, QpType::Ud | QpType::Gsi) {
        return Ok(());
    }
    let op = p.opcode;
    let ok = match e.resp.last {
        None => op.is_start(),
        Some(prev) => {
            !op.is_start() && prev.is_send() == op.is_send() && prev.is_write() == op.is_write()
        }
    };
    if ok {
        Ok(())
    } else if qp.qp_type == QpType::Rc {
        Err(Verdict::INVALID_REQUEST)
    } else {
        Err(Verdict::Drop)
    }
}

fn mem_nak(err: MemError) -> Verdict {
    match err {
        MemError::Revoked => Verdict::Drop,
        MemError::WouldFault => Verdict::WouldFault,
        MemError::Fault => Verdict::Nak(NakCode::RemoteOperationalError, WcStatus::RemOpErr),
        _ => Verdict::Nak(NakCode::RemoteAccessError, WcStatus::RemAccessErr),
    }
}

/// Executes a request in sequence, by its kind (C rxe's `execute`).
fn execute(qp: &Qp<Rrxe>, e: &mut Engine, a: &Attrs, p: &Parsed<'_>, skb: &SkBuff) -> Verdict {
    let op = p.opcode;
    // (Validated at intake: always there.)
    let Some(payload) = p.payload() else {
        return Verdict::Drop;
    };
    // A packet its sender sent without a copy, then revoked (its WQE
    // completed in error or flushed, or the QP was reset: the buffer may
    // hold something else now) is dropped unread, as if lost. (Checked
    // again under the sender's gate for each copy out of it.)
    if !skb.zc_readable() {
        return Verdict::Drop;
    }
    if op.is_send() {
        let before = e.resp.offset;
        let v = exec_send(qp, e, p, payload, skb);
        if matches!(v, Verdict::WouldFault) {
            // The packet is taken again whole: none of it counts as placed
            // (a first packet's WQE, taken, stays the current one).
            e.resp.offset = if op.is_start() { 0 } else { before };
        }
        v
    } else if op.is_write() {
        exec_write(qp, e, a, p, payload, skb)
    } else if op.is_read() {
        exec_read(qp, e, a, p)
    } else if op.is_atomic() {
        exec_atomic(qp, e, a, p)
    } else if op.is_flush() {
        exec_flush(qp, a, p)
    } else if op.is_atomic_write() {
        // (Only SENDs and WRITEs come in page fragments.)
        let Some(payload) = payload.as_slice() else {
            return Verdict::INVALID_REQUEST;
        };
        exec_atomic_write(qp, a, p, payload)
    } else {
        Verdict::INVALID_REQUEST
    }
}

/// Checks that `rkey` grants `need` on the `len` bytes at `va` (a range
/// of none needs no key).
fn check_rkey(
    qp: &Qp<Rrxe>,
    rkey: u32,
    va: u64,
    len: u32,
    need: Need,
) -> core::result::Result<(), Verdict> {
    if len != 0 {
        mem::rkey(qp, rkey, va, u64::from(len), need).map_err(mem_nak)?;
    }
    Ok(())
}

/// Runs `f` on the aligned 8 bytes at `va` that `rkey` grants `need` on;
/// what `f` returns.
fn remote_atomic(
    qp: &Qp<Rrxe>,
    rkey: u32,
    va: u64,
    need: Need,
    f: impl FnOnce(&AtomicU64) -> u64,
) -> core::result::Result<u64, Verdict> {
    let r = mem::rkey(qp, rkey, va, 8, need).map_err(mem_nak)?;
    mem::settle(qp, &r, |r| r.atomic(va, f)).map_err(mem_nak)
}

/// RDMA WRITE: places each packet's payload where the message's previous
/// one ended.
fn exec_write(
    qp: &Qp<Rrxe>,
    e: &mut Engine,
    a: &Attrs,
    p: &Parsed<'_>,
    payload: Src<'_>,
    skb: &SkBuff,
) -> Verdict {
    let op = p.opcode;
    if !a.access.contains(Access::REMOTE_WRITE) {
        if qp.qp_type == QpType::Uc {
            // UC has no NAK: the whole message is dropped (C rxe's
            // `drop_msg`).
            e.resp.uc_drop = true;
            return Verdict::Drop;
        }
        return Verdict::INVALID_REQUEST;
    }
    if op.is_start() {
        let Some(RethFields { va, rkey, len }) = p.reth else {
            return Verdict::INVALID_REQUEST;
        };
        // The whole range at the first packet (as READ, and C rxe's
        // `check_rkey`): a WRITE longer than its MR or window is refused
        // before a byte of it is placed. The lookup is kept for the
        // message's next packets.
        if len != 0 {
            let span = (va, u64::from(len));
            if let Err(err) = e
                .resp
                .keys
                .check(qp, Key::Remote(rkey), Need::RemoteWrite, span)
            {
                return mem_nak(err);
            }
        }
        e.resp.write = Some((va, rkey, len));
        e.resp.write_len = len;
    }
    let Some((va, rkey, left)) = e.resp.write else {
        return Verdict::INVALID_REQUEST;
    };
    let n = payload.len() as u32;
    if n > left || (op.is_end() && n != left) {
        return Verdict::INVALID_REQUEST;
    }
    if n != 0 {
        let key = Key::Remote(rkey);
        let span = (va, u64::from(left));
        if let Err(err) =
            e.resp
                .keys
                .with(qp, key, Need::RemoteWrite, va, u64::from(n), span, |r| {
                    r.write(va, payload)
                })
        {
            return mem_nak(err);
        }
    }
    if !op.is_end() {
        e.resp.write = Some((va + u64::from(n), rkey, left - n));
        return Verdict::Ack;
    }
    end_write(qp, e, p, skb)
}

/// The last packet of a WRITE is placed: the WRITE is done.
fn end_write(qp: &Qp<Rrxe>, e: &mut Engine, p: &Parsed<'_>, skb: &SkBuff) -> Verdict {
    // WRITE with immediate consumes a receive WQE at its end. Taken
    // once the payload is placed (a refused WRITE takes none); without
    // one, RNR with the WRITE left as it was, so that the resent packet
    // finds it (and places its bytes again).
    if p.imm.is_some() {
        if !take_recv(qp, e) {
            return Verdict::Rnr;
        }
        if e.resp.wqe.malformed() {
            return Verdict::MALFORMED_WQE;
        }
        let Some(wr_id) = e.resp.wqe.finish() else {
            return Verdict::Rnr;
        };
        state::count(qp, Counter::RdmaRecvs);
        // Its completion carries the WRITE's length.
        if !complete_recv(qp, wr_id, WcStatus::Success, e.resp.write_len, p, skb) {
            return Verdict::CqOverflow;
        }
    }
    e.resp.write = None;
    e.resp.keys.clear();
    Verdict::Ack
}

/// RDMA READ: kept in a responder resource, answered by read responses
/// (the first burst here, the rest in later steps).
fn exec_read(qp: &Qp<Rrxe>, e: &mut Engine, a: &Attrs, p: &Parsed<'_>) -> Verdict {
    // A QP that takes no READ or atomic (responder resources 0) refuses
    // them, as C rxe: it serves none, not one.
    if !a.access.contains(Access::REMOTE_READ) || a.max_dest_rd_atomic == 0 {
        return Verdict::INVALID_REQUEST;
    }
    let Some(RethFields { va, rkey, len }) = p.reth else {
        return Verdict::INVALID_REQUEST;
    };
    if let Err(v) = check_rkey(qp, rkey, va, len, Need::RemoteRead) {
        return v;
    }
    let mtu = state::mtu(qp, a);
    let Some(npkts) = read_responses(qp, len, mtu, p.psn).map(|s| s.packets()) else {
        return Verdict::INVALID_REQUEST;
    };
    let read = Resource::Read {
        first_psn: p.psn,
        npkts,
        mtu,
        va,
        rkey,
        len,
        sent: 0,
    };
    let i = match keep_resource(e, read) {
        Ok(i) => i,
        Err(v) => return v,
    };
    e.resp.psn = p.psn.add(npkts);
    e.resp.read_busy = Some(i);
    send_read_responses(qp, e, a, i);
    Verdict::Answered
}

/// Compare-and-swap and fetch-and-add: the original value goes back in an
/// atomic ACK and stays in a responder resource for a duplicate.
fn exec_atomic(qp: &Qp<Rrxe>, e: &mut Engine, a: &Attrs, p: &Parsed<'_>) -> Verdict {
    if !a.access.contains(Access::REMOTE_ATOMIC) || a.max_dest_rd_atomic == 0 {
        return Verdict::INVALID_REQUEST;
    }
    let Some(AtomicEthFields {
        va,
        rkey,
        swap_add,
        comp,
    }) = p.atomic
    else {
        return Verdict::INVALID_REQUEST;
    };
    if va % 8 != 0 {
        return Verdict::INVALID_REQUEST;
    }
    let cmp_swap = p.opcode == Opcode::RcCompareSwap;
    let orig = match remote_atomic(qp, rkey, va, Need::RemoteAtomic, |w| {
        if cmp_swap {
            mem::cmp_swap(w, comp, swap_add)
        } else {
            mem::fetch_add(w, swap_add)
        }
    }) {
        Ok(v) => v,
        Err(v) => return v,
    };
    if let Err(v) = keep_resource(e, Resource::Atomic { psn: p.psn, orig }) {
        return v;
    }
    e.resp.psn = p.psn.next();
    send_atomic_ack(qp, e, a, p.psn, orig);
    Verdict::Answered
}

/// FLUSH, answered with an RDMA READ response of length zero (`acknowledge`).
///
/// The placement type (global, persistent or both) names the flush rights
/// both the QP and the MR must grant: a QP without them refuses the
/// request (C rxe's unsupported opcode), an MR without them is a remote
/// access error, as is a range outside the MR unless the selectivity
/// level is the whole MR. The rkey is checked even for a zero length (a
/// FLUSH is not a zero-length READ or WRITE). Memory is coherent and
/// only persistent-memory pages get the persistent right (`mr.rs`), so a
/// granted flush has nothing left to write back.
fn exec_flush(qp: &Qp<Rrxe>, a: &Attrs, p: &Parsed<'_>) -> Verdict {
    let (Some(RethFields { va, rkey, len }), Some(f)) = (p.reth, p.feth) else {
        return Verdict::INVALID_REQUEST;
    };
    let rights = match f.plt {
        FLUSH_GLOBAL => Access::FLUSH_GLOBAL,
        FLUSH_PERSISTENT => Access::FLUSH_PERSISTENT,
        FLUSH_BOTH => Access::FLUSH_GLOBAL.or(Access::FLUSH_PERSISTENT),
        _ => return Verdict::INVALID_REQUEST,
    };
    let whole = match f.sel {
        FLUSH_RANGE => false,
        FLUSH_MR => true,
        _ => return Verdict::INVALID_REQUEST,
    };
    if !a.access.contains(rights) {
        return Verdict::INVALID_REQUEST;
    }
    match mem::rkey(
        qp,
        rkey,
        va,
        u64::from(len),
        Need::RemoteFlush { rights, whole },
    ) {
        Ok(_) => Verdict::Ack,
        Err(e) => mem_nak(e),
    }
}

/// FETH placement types (bits: global visibility, persistence) and
/// selectivity levels (IBA FLUSH annex; `ib_flush_type`, `ib_flush_level`).
const FLUSH_GLOBAL: u8 = 1;
const FLUSH_PERSISTENT: u8 = 2;
const FLUSH_BOTH: u8 = FLUSH_GLOBAL | FLUSH_PERSISTENT;
const FLUSH_RANGE: u8 = 0;
const FLUSH_MR: u8 = 1;

/// ATOMIC WRITE: 8 bytes stored at once, answered with an RDMA READ
/// response of length zero (`acknowledge`).
fn exec_atomic_write(qp: &Qp<Rrxe>, a: &Attrs, p: &Parsed<'_>, payload: &[u8]) -> Verdict {
    // An RDMA WRITE by its rights: the QP's remote write, as C rxe.
    if !a.access.contains(Access::REMOTE_WRITE) || a.max_dest_rd_atomic == 0 {
        return Verdict::INVALID_REQUEST;
    }
    let Some(RethFields { va, rkey, .. }) = p.reth else {
        return Verdict::INVALID_REQUEST;
    };
    if va % 8 != 0 || payload.len() != 8 {
        return Verdict::INVALID_REQUEST;
    }
    let mut v = [0u8; 8];
    v.copy_from_slice(payload);
    let val = u64::from_ne_bytes(v);
    let stored = remote_atomic(qp, rkey, va, Need::RemoteWrite, |w| {
        w.store(val, Ordering::Release);
        0
    });
    match stored {
        Ok(_) => Verdict::Ack,
        Err(v) => v,
    }
}

/// Makes the next receive WQE of the SRQ or the RQ the current one
/// (`e.resp.wqe`, copied out of the ring once) unless there is one
/// already; false if the queue is empty.
fn take_recv(qp: &Qp<Rrxe>, e: &mut Engine) -> bool {
    if e.resp.wqe.is_held() {
        return true;
    }
    if let Some(srq) = qp.srq() {
        let limit_hit = {
            let mut rq = srq.rq.lock();
            if rq.queue.is_empty() {
                return false;
            }
            let max_sge = rq.max_sge;
            e.resp.wqe.load(&rq.queue, max_sge);
            let _ = rq.queue.advance_consumer();
            let limit_hit = rq.limit != 0 && rq.queue.count() < rq.limit;
            if limit_hit {
                rq.limit = 0;
            }
            limit_hit
        };
        if limit_hit {
            srq.event(ObjEvent::SrqLimitReached);
        }
    } else {
        let mut rq = qp.rq.lock();
        let Some(rq) = rq.as_mut() else { return false };
        if rq.queue.is_empty() {
            return false;
        }
        e.resp.wqe.load(&rq.queue, rq.max_sge);
        let _ = rq.queue.advance_consumer();
    }
    e.resp.offset = 0;
    true
}

fn abandon_recv(e: &mut Engine) {
    e.resp.offset = 0;
}

/// SEND: places the packet's payload (and a datagram's GRH) into the
/// current receive WQE, taken at the message's first packet.
fn exec_send(
    qp: &Qp<Rrxe>,
    e: &mut Engine,
    p: &Parsed<'_>,
    payload: Src<'_>,
    skb: &SkBuff,
) -> Verdict {
    let op = p.opcode;
    let ud = matches!(qp.qp_type, QpType::Ud | QpType::Gsi);
    if op.is_start() {
        if !take_recv(qp, e) {
            return if ud { Verdict::Drop } else { Verdict::Rnr };
        }
        if e.resp.wqe.malformed() {
            return Verdict::MALFORMED_WQE;
        }
        if ud {
            // A datagram too long for the receive buffer is dropped and the
            // WQE kept for the next one (C rxe's class D; with an SRQ it
            // completes in error, class E). Completing it in error would
            // let anyone who knows a QPN, the GSI QP's above all, use up
            // the receives of a consumer that does not repost after an
            // error (ib_mad).
            let fits = e
                .resp
                .wqe
                .get()
                .is_some_and(|w| (GRH_LEN + payload.len()) as u64 <= u64::from(w.len));
            if !fits && qp.srq().is_none() {
                abandon_recv(e);
                return Verdict::Drop;
            }
            if let Err(v) = place(qp, e, Src::bytes(&grh(skb))) {
                return v;
            }
        }
    }
    if !e.resp.wqe.is_held() {
        return Verdict::INVALID_REQUEST;
    }
    if let Err(v) = place(qp, e, payload) {
        return v;
    }
    if op.is_end() {
        e.resp.keys.clear();
        if let Some(key) = p.ieth {
            if crate::mw::invalidate_key(qp, key, true).is_err() {
                return Verdict::INVALID_REQUEST;
            }
        }
        let Some(wr_id) = e.resp.wqe.finish() else {
            return Verdict::Drop;
        };
        state::count(qp, Counter::RdmaRecvs);
        let posted = complete_recv(qp, wr_id, WcStatus::Success, e.resp.offset, p, skb);
        e.resp.offset = 0;
        if !posted {
            return Verdict::CqOverflow;
        }
    }
    Verdict::Ack
}

/// The GRH a datagram receive buffer starts with: for IPv4, the IP header
/// in its last 20 bytes.
fn grh(skb: &SkBuff) -> [u8; GRH_LEN] {
    let mut grh = [0u8; GRH_LEN];
    if let Ok(ip) = skb.network_header() {
        if skb.protocol() == ETH_P_IP {
            if let (Some(d), Some(s)) = (grh.get_mut(20..40), ip.get(..20)) {
                d.copy_from_slice(s);
            }
        } else if let Some(s) = ip.get(..40) {
            grh.copy_from_slice(s);
        }
    }
    grh
}

/// Copies `data` into the current receive WQE's buffers.
fn place(qp: &Qp<Rrxe>, e: &mut Engine, data: Src<'_>) -> core::result::Result<(), Verdict> {
    // (Borrowed: a WQE with its 32 SGE slots is over 500 bytes.)
    let Some(w) = e.resp.wqe.get() else {
        return Err(Verdict::Drop);
    };
    let len_err = || Verdict::Nak(NakCode::InvalidRequest, WcStatus::LocLenErr);
    let start = e.resp.offset;
    let end = start.checked_add(data.len() as u32).ok_or_else(len_err)?;
    if end > w.len {
        return Err(len_err());
    }
    mem::copy_data(
        qp,
        Some(&e.resp.keys),
        |i| w.sges.get(i).copied(),
        w.num_sge as usize,
        start,
        Transfer::Into(data),
    )
    .map_err(|err| match err {
        CopyError::Length => len_err(),
        CopyError::Revoked => Verdict::Drop,
        CopyError::WouldFault => Verdict::WouldFault,
        CopyError::Protection | CopyError::NotAttached => {
            Verdict::Nak(NakCode::RemoteOperationalError, WcStatus::LocProtErr)
        }
    })?;
    e.resp.offset = end;
    Ok(())
}

/// Posts the completion of a receive WQE; false if its CQ was full (the
/// completion is lost).
fn complete_recv(
    qp: &Qp<Rrxe>,
    wr_id: u64,
    status: WcStatus,
    len: u32,
    p: &Parsed<'_>,
    skb: &SkBuff,
) -> bool {
    let opcode = if p.opcode.is_write() {
        WcOpcode::RecvRdmaWithImm
    } else {
        WcOpcode::Recv
    };
    let mut c = Completion {
        byte_len: len,
        ..Completion::new(wr_id, status, opcode, qp.qp_num())
    };
    if status == WcStatus::Success {
        if let Some(imm) = p.imm {
            c.ex = u32::from_ne_bytes(imm);
            c.wc_flags |= WcFlags::WITH_IMM;
        }
        if let Some(k) = p.ieth {
            c.ex = k;
            c.wc_flags |= WcFlags::WITH_INVALIDATE;
        }
        if let Some(d) = p.deth {
            c.src_qp = d.src_qpn;
            c.wc_flags |= WcFlags::GRH | WcFlags::WITH_NETWORK_HDR_TYPE;
            c.network_hdr_type = if skb.protocol() == ETH_P_IP {
                RDMA_NETWORK_IPV4 as u8
            } else {
                RDMA_NETWORK_IPV6 as u8
            };
            // Received on a VLAN device (of the port's net device).
            if let Some(v) = skb.vlan_id() {
                c.wc_flags |= WcFlags::WITH_VLAN;
                c.vlan_id = v;
            }
        }
        if qp.qp_type == QpType::Gsi {
            c.pkey_index = 0;
        }
    }
    cq::post(qp.recv_cq(), qp, &c, p.se)
}

/// Keeps `res` in a responder resource; its index.
fn keep_resource(e: &mut Engine, res: Resource) -> core::result::Result<usize, Verdict> {
    let Some(i) = new_resource(e) else {
        return Err(Verdict::NO_RESOURCE);
    };
    if let Some(r) = e.resp.res.get_mut(i) {
        *r = res;
    }
    Ok(i)
}

/// A free responder resource (the oldest is reused when all are taken);
/// `modify_qp` allocated them (`state::Resources`): none when it set no
/// `max_dest_rd_atomic` (a QP that never went through RTR as RC).
fn new_resource(e: &mut Engine) -> Option<usize> {
    let n = e.resp.res.len();
    let i = e.resp.res_head.checked_rem(n)?;
    e.resp.res_head = (i + 1).checked_rem(n).unwrap_or(0);
    Some(i)
}

fn send_ack(qp: &Qp<Rrxe>, e: &mut Engine, a: &Attrs, syn: Syndrome, psn: Psn) {
    send_aeth_only(qp, e, a, Opcode::RcAck, syn, psn);
}

/// Sends the ACK held back for requests that were still queued
/// (`RespState::ack_due`), if any. Every other response goes after it, so
/// the requester sees acknowledgements in PSN order.
pub(crate) fn flush_ack(qp: &Qp<Rrxe>, e: &mut Engine, a: &Attrs) {
    if let Some((psn, msn)) = e.resp.ack_due.take() {
        aeth_packet(
            qp,
            &mut e.route,
            a,
            Opcode::RcAck,
            ack_syndrome(qp),
            psn,
            msn,
        );
    }
}

/// A packet with an AETH and no payload (ACK, NAK, empty READ response).
fn send_aeth_only(qp: &Qp<Rrxe>, e: &mut Engine, a: &Attrs, op: Opcode, syn: Syndrome, psn: Psn) {
    flush_ack(qp, e, a);
    aeth_packet(qp, &mut e.route, a, op, syn, psn, e.resp.msn);
}

fn aeth_packet(
    qp: &Qp<Rrxe>,
    routes: &mut pkt::RouteCache,
    a: &Attrs,
    op: Opcode,
    syn: Syndrome,
    psn: Psn,
    msn: Msn,
) {
    let mut spec = TxSpec::new(op, a.dest_qp_num, psn, 0);
    spec.ext.aeth = Some(AethFields { syndrome: syn, msn });
    let _ = pkt::send(qp, &a.pri_av, &spec, routes, |_, _| Ok(()));
}

/// The answer to a FLUSH or an ATOMIC WRITE: an RDMA READ response of
/// length zero, sent whether or not AckReq is set (as C rxe answers them;
/// requesters also take a plain ACK).
fn send_read_response_ack(qp: &Qp<Rrxe>, e: &mut Engine, a: &Attrs, psn: Psn) {
    send_aeth_only(qp, e, a, Opcode::RcReadResponseOnly, ack_syndrome(qp), psn);
}

fn send_atomic_ack(qp: &Qp<Rrxe>, e: &mut Engine, a: &Attrs, psn: Psn, orig: u64) {
    flush_ack(qp, e, a);
    let mut spec = TxSpec::new(Opcode::RcAtomicAck, a.dest_qp_num, psn, 0);
    spec.ext.aeth = Some(AethFields {
        syndrome: ack_syndrome(qp),
        msn: e.resp.msn.next(),
    });
    spec.ext.atomic_ack = Some(orig);
    let _ = pkt::send(qp, &a.pri_av, &spec, &mut e.route, |_, _| Ok(()));
}

/// The response packets of a READ of `len` bytes at `first_psn`, cut for
/// `mtu`.
fn read_responses(qp: &Qp<Rrxe>, len: u32, mtu: Mtu, first_psn: Psn) -> Option<Segments> {
    segments(
        state::transport(qp.qp_type),
        MsgOp::ReadResponse,
        len,
        mtu,
        first_psn,
    )
    .ok()
}

/// Sends the next burst of responses of the READ in resource `i`.
fn send_read_responses(qp: &Qp<Rrxe>, e: &mut Engine, a: &Attrs, i: usize) {
    flush_ack(qp, e, a);
    let Some(Resource::Read {
        first_psn,
        npkts,
        mtu,
        va,
        rkey,
        len,
        sent,
    }) = e.resp.res.get(i).copied()
    else {
        e.resp.read_busy = None;
        return;
    };
    let Some(segs) = read_responses(qp, len, mtu, first_psn) else {
        e.resp.read_busy = None;
        return;
    };
    let (burst, end) = send_read_burst(qp, e, a, segs.skip(sent as usize), (va, rkey, len));
    let done = sent + burst;
    // The burst is this batch's part of the message.
    e.resp.keys.clear();
    if let BurstEnd::Failed(psn) = end {
        read_failed(qp, e, a, psn);
        return;
    }
    if let Some(Resource::Read { sent, .. }) = e.resp.res.get_mut(i) {
        *sent = done;
    }
    if end == BurstEnd::WouldFault {
        // The READ goes on from its next response once that is in.
        state::park(e);
        return;
    }
    if done >= npkts || end == BurstEnd::RanOut {
        e.resp.read_busy = None;
        e.resp.msn = e.resp.msn.next();
    }
}

/// How a burst of read responses ended.
#[derive(Clone, Copy, PartialEq, Eq)]
enum BurstEnd {
    /// More responses may follow.
    More,
    /// The responses ran out: the READ is over.
    RanOut,
    /// The payload of the response at this PSN could not be read.
    Failed(Psn),
    /// The payload of the next response is paged on demand and not in
    /// (see [`Verdict::WouldFault`]).
    WouldFault,
}

/// The memory of a READ could not be read for its response at `psn`,
/// after its rkey checked out at the request: memory paged on demand
/// that its owner no longer maps (or a fast-registration MR invalidated
/// since). As a refused rkey does at the request: NAK remote access
/// error (at that response, which the requester's READ holds, so that it
/// fails it) and the QP goes to the error state. Sending nothing instead
/// would leave the requester to retry until its retries ran out.
fn read_failed(qp: &Qp<Rrxe>, e: &mut Engine, a: &Attrs, psn: Psn) {
    e.resp.read_busy = None;
    send_ack(qp, e, a, Syndrome::Nak(NakCode::RemoteAccessError), psn);
    state::set_error(qp, e);
    access_error_event(qp);
}

/// Sends up to [`READ_BURST`] of the responses `segs` out of the READ's
/// memory `src` (`(va, rkey, len)`); how many went, and how the burst
/// ended: the responses running out before its end means the READ is
/// over, whatever `npkts` says (it says the same, the MTU being the
/// READ's own; a READ never outlives its last response).
fn send_read_burst(
    qp: &Qp<Rrxe>,
    e: &mut Engine,
    a: &Attrs,
    segs: impl Iterator<Item = Segment>,
    src: (u64, u32, u32),
) -> (u32, BurstEnd) {
    let mut done = 0;
    for (burst, seg) in segs.enumerate() {
        if burst == READ_BURST {
            return (done, BurstEnd::More);
        }
        match send_read_response(qp, e, a, &seg, src) {
            Err(pkt::TxError::NoMem) => {
                qp.schedule();
                return (done, BurstEnd::More);
            }
            Err(pkt::TxError::WouldFault) => return (done, BurstEnd::WouldFault),
            Err(pkt::TxError::Payload(_)) => return (done, BurstEnd::Failed(seg.psn)),
            Ok(()) | Err(pkt::TxError::NoRoute | pkt::TxError::Unfit) => {}
        }
        done += 1;
    }
    (done, BurstEnd::RanOut)
}

/// Sends the READ response `seg`, its payload read from the READ's memory
/// `src` (`(va, rkey, len)`).
fn send_read_response(
    qp: &Qp<Rrxe>,
    e: &mut Engine,
    a: &Attrs,
    seg: &Segment,
    src: (u64, u32, u32),
) -> core::result::Result<(), pkt::TxError> {
    let (va, rkey, len) = src;
    let mut spec = TxSpec::new(seg.opcode, a.dest_qp_num, seg.psn, seg.len as usize);
    if seg.opcode.has(crate::proto::Hdr::Aeth) {
        let msn = if seg.opcode.is_end() {
            e.resp.msn.next()
        } else {
            e.resp.msn
        };
        spec.ext.aeth = Some(AethFields {
            syndrome: ack_syndrome(qp),
            msn,
        });
    }
    let addr = va.wrapping_add(u64::from(seg.offset));
    let keys = &e.resp.keys;
    pkt::send(qp, &a.pri_av, &spec, &mut e.route, |buf, fold| {
        if buf.is_empty() {
            return Ok(());
        }
        keys.with(
            qp,
            Key::Remote(rkey),
            Need::RemoteRead,
            addr,
            buf.len() as u64,
            (va, u64::from(len)),
            |r| r.read(addr, buf, fold),
        )
        .map_err(|e| match e {
            MemError::WouldFault => Halt::WouldFault,
            _ => Halt::Status(WcStatus::RemAccessErr),
        })
    })
}

/// A request older than expected: answer it again (IBA 9.7.5.1.5).
fn duplicate(qp: &Qp<Rrxe>, e: &mut Engine, a: &Attrs, p: &Parsed<'_>) -> bool {
    let op = p.opcode;
    if op.is_read() {
        return replay_read(qp, e, a, p);
    }
    if op.is_atomic() {
        for r in e.resp.res.iter() {
            if let Resource::Atomic { psn, orig } = *r {
                if psn == p.psn {
                    send_atomic_ack(qp, e, a, psn, orig);
                    return true;
                }
            }
        }
        return false;
    }
    if op.is_flush() || op.is_atomic_write() {
        // Executed once already: answer again without executing it.
        send_read_response_ack(qp, e, a, p.psn);
        return true;
    }
    // SEND/WRITE: acknowledge the last PSN received again, once per
    // packet that asks for it (not once per resent packet: a resent
    // message would otherwise draw an ACK storm).
    if !p.ack_req {
        return false;
    }
    let last = e.resp.psn.sub(1);
    send_ack(qp, e, a, ack_syndrome(qp), last);
    true
}

/// Sends a duplicate READ's responses again, from the resource whose PSN
/// range holds the request; whether there was one.
fn replay_read(qp: &Qp<Rrxe>, e: &mut Engine, a: &Attrs, p: &Parsed<'_>) -> bool {
    let Some(i) = e.resp.res.iter_mut().position(|r| rewind_read(r, p.psn)) else {
        return false;
    };
    // The replay must not bump the MSN again.
    e.resp.msn = e.resp.msn.sub(1);
    e.resp.read_busy = Some(i);
    send_read_responses(qp, e, a, i);
    true
}

/// If `r` is a READ whose responses' PSNs hold `psn`, makes it the READ of
/// its responses from `psn` on, none sent; whether it did.
fn rewind_read(r: &mut Resource, psn: Psn) -> bool {
    let Resource::Read {
        first_psn,
        npkts,
        mtu,
        va,
        len,
        sent,
        ..
    } = r
    else {
        return false;
    };
    let off = psn.offset_from(*first_psn);
    if off >= *npkts {
        return false;
    }
    // (With the READ's own MTU, `skip` is below `len`.)
    let skip = (u64::from(off) * mtu.bytes() as u64).min(u64::from(*len));
    *first_psn = psn;
    *npkts -= off;
    *va = va.wrapping_add(skip);
    *len -= skip as u32;
    *sent = 0;
    true
}
