// SPDX-License-Identifier: GPL-2.0

//! The requester: turns send WQEs into packets.
//!
//! Each step sends at most one packet (or executes one local operation).
//! A WQE is copied into the send-queue shadow when the requester first
//! reaches it; segmentation, opcodes and PSNs come from the protocol
//! crate. RC waits for initiator credits (reads and atomics), fences,
//! the unacknowledged-PSN window and the in-flight buffer limit, and arms
//! the retransmit timer; UC and UD WQEs are done once sent.

use super::retransmit;
use super::state::{self, Engine, INFLIGHT_HIGH, INFLIGHT_LOW, MAX_PKT_PER_ACK, MAX_UNACKED_PSNS};
use super::wqe::{SendWqe, WqeState, WrOp};
use crate::av::{is_v4_mapped, Av, Network};
use crate::mem::{Halt, Transfer};
use crate::mw;
use crate::net::tx::{self as pkt, Out, TxError};
use crate::proto::build::{AtomicEthFields, DethFields, FethFields, RethFields, TxSpec};
use crate::proto::seg::{segments, Segment};
use crate::proto::{Mtu, Psn};
use crate::qp_attr::{Attrs, State};
use crate::rdma::attrs::{GidNetdev, QpType};
use crate::rdma::consts::{RXE_NETWORK_TYPE_IPV4, RXE_NETWORK_TYPE_IPV6};
use crate::rdma::crc::Fold;
use crate::rdma::device::param_train;
use crate::rdma::ib::WcStatus;
use crate::rdma::objects::Qp;
use crate::Rrxe;
use core::sync::atomic::Ordering;

/// Runs one requester step; whether it made progress.
pub(crate) fn step(qp: &Qp<Rrxe>, e: &mut Engine, a: &Attrs) -> bool {
    if !matches!(a.state, State::Rts | State::Sqd) || e.req.rnr_wait {
        return false;
    }
    let slot = e.req.slot;
    if !load_wqe(qp, e, slot) {
        return false;
    }
    let Some(wqe) = e.shadow.get(slot) else {
        return false;
    };
    match wqe.state {
        // Failed: the requester stays here and nothing from it on goes
        // out (the messages before it still get their ACKs and retries);
        // the completer completes it in order and fails the QP, which
        // flushes the rest (C rxe fails the QP at once). At the head of
        // the queue that is the completer's next step: progress (a WQE
        // refused as it was loaded, with nothing before it, waited for
        // the QP's next run, which might never come).
        WqeState::Error(_) => {
            e.halted = true;
            return slot == e.sq_cons;
        }
        WqeState::Done | WqeState::Pending => {
            // Passed over (after a retry, an ACK completed it): what
            // comes next follows its PSNs.
            if wqe.started && wqe.op.msg_op().is_some() {
                let after = wqe.last_psn.next();
                if e.req.psn.before(after) {
                    e.req.psn = after;
                }
            }
            e.req.slot = e.next_slot(slot);
            return true;
        }
        WqeState::Posted => {}
    }
    if blocked(qp, e, a, wqe) {
        return false;
    }
    if wqe.op.is_local() {
        let done = local_op(qp, wqe);
        return settle(e, slot, done);
    }
    transmit(qp, e, a, slot)
}

/// Makes sure the shadow holds the WQE at `slot`; false when the ring has
/// none there yet (or it fails to load).
///
/// The ring's lock only to see new WQEs: at the producer index last seen,
/// or at the first visit of a slot, which copies the WQE out of the ring,
/// once.
fn load_wqe(qp: &Qp<Rrxe>, e: &mut Engine, slot: u32) -> bool {
    if slot != e.req.prod_seen && e.shadow.get(slot).is_some() {
        return true;
    }
    let sq = qp.sq.lock();
    e.req.prod_seen = sq.queue.producer();
    if slot == e.req.prod_seen {
        return false;
    }
    e.shadow.get(slot).is_some()
        || e.shadow
            .load(
                &sq.queue,
                slot,
                qp.qp_type,
                !qp.is_user,
                sq.max_sge,
                sq.max_inline,
            )
            .is_ok()
}

/// Whether the WQE at the requester's slot has to wait. Any WQE waits
/// while the SQ drains (if it has not started) and at a fence; a message
/// also waits for an initiator credit (an RC read or atomic), for room in
/// the unacknowledged-PSN window (RC) and for room in the in-flight limit.
fn blocked(qp: &Qp<Rrxe>, e: &Engine, a: &Attrs, wqe: &SendWqe) -> bool {
    // Draining: no new message starts.
    if a.state == State::Sqd && !wqe.started {
        return true;
    }
    if wqe.fence() && outstanding_rd_atomic(e, a) {
        return true;
    }
    // A local operation sends nothing: nothing else holds it back.
    if wqe.op.is_local() {
        return false;
    }
    let rc = qp.qp_type == QpType::Rc;
    if rc && wqe.op.is_read_or_atomic() && !wqe.credit && e.req.rd_atomic == 0 {
        return true;
    }
    if rc && e.req.psn.distance(e.comp.psn) >= MAX_UNACKED_PSNS as i32 {
        return true;
    }
    state::inflight_at(qp, INFLIGHT_HIGH, INFLIGHT_LOW)
}

/// The next packet of a WQE: its segment and where it goes.
#[derive(Clone, Copy)]
struct Packet {
    seg: Segment,
    /// The message length its RETH names: less than the WQE's for a READ
    /// resent in part.
    len: u32,
    /// The last packet of its message.
    last: bool,
    /// The message's first PSN.
    first_psn: Psn,
    /// PSNs the message uses (a READ: its responses').
    span: u32,
    /// The MTU the message is cut with.
    mtu: Mtu,
    /// Where it goes: the path, the destination QP and (UD) its Q_Key.
    av: Av,
    dest_qpn: u32,
    qkey: u32,
}

/// Sends the next packet of the WQE at `slot` and records the progress.
fn transmit(qp: &Qp<Rrxe>, e: &mut Engine, a: &Attrs, slot: u32) -> bool {
    // Borrowed, not copied (a `SendWqe` is about 200 bytes, and this runs
    // once per packet): the borrow ends before the progress is written.
    let Some(wqe) = e.shadow.get(slot) else {
        return false;
    };
    let next = match next_packet(qp, a, wqe, e.req.psn) {
        Ok(next) => next,
        Err(status) => return fail(e, slot, status),
    };
    if let Some(progress) = transmit_train(qp, e, a, slot, &next) {
        return progress;
    }
    let Some(wqe) = e.shadow.get(slot) else {
        return false;
    };
    // (Given back if the packet is not sent: see below.)
    let noack = e.req.noack;
    let spec = build_spec(qp, wqe, &next, &mut e.req.noack);
    let wr_op = wqe.op;
    // The payload may go without a copy if it is in the WQE's memory (not
    // inline), that memory may be a user MR's pinned pages (a kernel
    // consumer's never is: it is copied, and asking would cost a packet
    // buffer made and freed), and the packet is one that completes only
    // on its ACK.
    let zcopy = qp.is_user && !wqe.inline && pkt::may_attach(qp.qp_type, spec.opcode);
    // (The cache is taken out for the call: `fill` reads the engine.)
    let mut routes = core::mem::take(&mut e.route);
    let result = pkt::send_with(qp, &next.av, &spec, &mut routes, zcopy, |out| match out {
        Out::Copy(buf, fold) => fill_payload(qp, e, slot, wqe, &next.seg, buf, fold).map(|()| true),
        Out::Attach(skb) => {
            let n = spec.payload_len;
            e.shadow
                .attach(qp, Some(&e.req.keys), slot, next.seg.offset, skb, n)
        }
    });
    e.route = routes;
    match result {
        Ok(()) | Err(TxError::NoRoute | TxError::Unfit) => {}
        Err(TxError::NoMem) => {
            // Retry from the work later.
            e.req.noack = noack;
            qp.schedule();
            return false;
        }
        Err(TxError::WouldFault) => {
            // Its payload's memory is being faulted in: the WQE waits
            // where it was.
            e.req.noack = noack;
            state::park(e);
            return false;
        }
        Err(TxError::Payload(status)) => return fail(e, slot, status),
    }
    if matches!(wr_op, WrOp::Send | WrOp::SendImm | WrOp::SendInv) && next.seg.offset == 0 {
        state::count(qp, crate::counters::Counter::RdmaSends);
    }
    advance(qp, e, a, slot, &next, spec.ack_req)
}

/// Sends the packets of the WQE at `slot` from `first` on as one train
/// (`net::tx::send_train`), as [`train_of`] picks them, if the way to
/// their destination takes trains (`net::tx::train_fits`); records the
/// progress as [`transmit`] does for each. `None`: not sent as a train;
/// the caller sends `first` alone.
fn transmit_train(
    qp: &Qp<Rrxe>,
    e: &mut Engine,
    a: &Attrs,
    slot: u32,
    first: &Packet,
) -> Option<bool> {
    let max = (param_train() as usize).min(pkt::TRAIN_MAX);
    if max < 2
        || !matches!(qp.qp_type, QpType::Rc | QpType::Uc)
        || qp.trains_out.load(Ordering::Acquire) >= pkt::TRAINS_OUT
    {
        return None;
    }
    if let Some(to) = e.req.no_train_to {
        // (Within one train's span of it: a PSN set by a modify since
        // does not wait for the old one.)
        if (0..pkt::TRAIN_MAX as i32).contains(&to.distance(first.seg.psn)) {
            return None;
        }
        e.req.no_train_to = None;
    }
    // The cheap tests first: a message of one packet, and any packet on
    // a way that takes no trains, pay only these.
    if !e.shadow.get(slot).is_some_and(|w| may_train(w, first))
        || !pkt::train_fits(qp, &first.av, &e.route)
    {
        return None;
    }
    let (segs, n) = train_of(qp, e, slot, first, max)?;
    // Which packets ask for an ACK, as one by one.
    let noack = e.req.noack;
    let mut acks = 0u64;
    for (i, seg) in segs.iter().take(n).enumerate() {
        if ack_due(qp, seg.opcode, &mut e.req.noack) {
            acks |= 1 << i;
        }
    }
    let wqe = e.shadow.get(slot)?;
    let packet = |i: usize| Packet {
        seg: segs[i],
        last: segs[i].opcode.is_end(),
        ..*first
    };
    let mut routes = core::mem::take(&mut e.route);
    let result = pkt::send_train(
        qp,
        &first.av,
        n,
        |i| spec_of(qp, wqe, &packet(i), acks & (1 << i) != 0),
        &mut routes,
        |i, buf, fold| fill_payload(qp, e, slot, wqe, &segs[i], buf, fold),
    );
    e.route = routes;
    if result.is_err() {
        // Nothing sent: one by one, which meets any error again where
        // it is, and handles it; past the packets tried, trains again
        // (not the same train from each packet on, built again each
        // time).
        e.req.noack = noack;
        e.req.no_train_to = Some(segs[n - 1].psn);
        return None;
    }
    let sends = matches!(wqe.op, WrOp::Send | WrOp::SendImm | WrOp::SendInv);
    if sends && first.seg.offset == 0 {
        state::count(qp, crate::counters::Counter::RdmaSends);
    }
    for i in 0..n {
        advance(qp, e, a, slot, &packet(i), acks & (1 << i) != 0);
    }
    Some(true)
}

/// Whether `wqe`'s packets from `first` on may go as a train: a SEND or
/// WRITE from memory (not inline) with more than one packet left.
fn may_train(wqe: &SendWqe, first: &Packet) -> bool {
    let sendish = matches!(
        wqe.op,
        WrOp::Send | WrOp::SendImm | WrOp::SendInv | WrOp::Write | WrOp::WriteImm
    );
    let mtu_b = first.mtu.bytes() as u32;
    sendish && !wqe.inline && wqe.len.saturating_sub(first.seg.offset) > mtu_b
}

/// The packets of the WQE at `slot` from `first` on that may go as one
/// train (see [`may_train`]), and how many (two or more): at most `max`,
/// the room in RC's unacknowledged-PSN window and one datagram, while
/// they are of the first one's size, and the message's last packet if it
/// is smaller (a WRITE's first packet, which carries the RETH, is of a
/// size of its own and goes alone).
fn train_of(
    qp: &Qp<Rrxe>,
    e: &Engine,
    slot: u32,
    first: &Packet,
    max: usize,
) -> Option<([Segment; pkt::TRAIN_MAX], usize)> {
    let wqe = e.shadow.get(slot)?;
    let mtu_b = first.mtu.bytes() as u32;
    let size = |seg: &Segment| {
        crate::proto::Layout::new(seg.opcode, seg.len as usize)
            .map(|l| l.udp_payload_len())
            .ok()
    };
    let unit = size(&first.seg)?;
    // Room in RC's window (`blocked` let one more in; UC has none, its
    // completer never moves), one datagram.
    let room = if qp.qp_type == QpType::Rc {
        let used = e.req.psn.distance(e.comp.psn).max(0) as u32;
        MAX_UNACKED_PSNS.saturating_sub(used) as usize
    } else {
        pkt::TRAIN_MAX
    };
    let max = max.min(room).min(pkt::TRAIN_BYTES / unit.max(1));
    let transport = state::transport(qp.qp_type);
    let all = segments(
        transport,
        wqe.op.msg_op()?,
        wqe.len,
        first.mtu,
        first.first_psn,
    )
    .ok()?;
    let mut segs = [first.seg; pkt::TRAIN_MAX];
    let mut n = 0;
    for seg in all.skip((first.seg.offset / mtu_b) as usize).take(max) {
        let Some(len) = size(&seg) else { break };
        // A smaller packet only as the message's last: a WRITE's first
        // packet, larger by its RETH, goes alone, and its train starts
        // after it.
        if len > unit || len < unit && !seg.opcode.is_end() || n == 0 && seg != first.seg {
            break;
        }
        segs[n] = seg;
        n += 1;
        if len < unit {
            break;
        }
    }
    (n >= 2).then_some((segs, n))
}

/// The WQE's next packet; `psn` is the requester's next PSN, where a
/// message not started yet begins. Err: the WQE's completion status.
fn next_packet(qp: &Qp<Rrxe>, a: &Attrs, wqe: &SendWqe, psn: Psn) -> Result<Packet, WcStatus> {
    let mtu = if wqe.started {
        wqe.mtu
    } else {
        state::mtu(qp, a)
    };
    let op = wqe.op.msg_op().ok_or(WcStatus::LocQpOpErr)?;
    let first_psn = if wqe.started { wqe.first_psn } else { psn };
    let segs = segments(state::transport(qp.qp_type), op, wqe.len, mtu, first_psn)
        .map_err(|_| WcStatus::LocLenErr)?;
    let span = segs.psn_span();
    let mtu_b = mtu.bytes() as u32;
    let index = if wqe.len == 0 { 0 } else { wqe.sent / mtu_b } as usize;
    let mut seg = segs.clone().nth(index).ok_or(WcStatus::LocLenErr)?;
    // A READ resent after part of its response came in asks only for the
    // rest, at the PSN of the first response still missing (as C rxe
    // does); the responder replays from there.
    let mut len = wqe.len;
    if wqe.op == WrOp::Read && wqe.read > 0 && wqe.read < wqe.len && wqe.read % mtu_b == 0 {
        seg.psn = first_psn.add(wqe.read / mtu_b);
        seg.offset = wqe.read;
        len = wqe.len - wqe.read;
    }
    // Where to: the QP's path, or the AH of a datagram WR.
    let (av, dest_qpn, qkey) = match qp.qp_type {
        QpType::Rc | QpType::Uc => (a.pri_av, a.dest_qp_num, 0),
        _ => ud_dest(qp, wqe, a).ok_or(WcStatus::LocQpOpErr)?,
    };
    Ok(Packet {
        last: seg.opcode.is_end(),
        seg,
        len,
        first_psn,
        span,
        mtu,
        av,
        dest_qpn,
        qkey,
    })
}

/// Records the packet `sent` (asking for an ACK if `ack_req`): the WQE's
/// progress, the requester's next PSN and slot, and the retransmit timer.
fn advance(
    qp: &Qp<Rrxe>,
    e: &mut Engine,
    a: &Attrs,
    slot: u32,
    sent: &Packet,
    ack_req: bool,
) -> bool {
    let rc = qp.qp_type == QpType::Rc;
    let next_slot = e.next_slot(slot);
    let Some(wqe_mut) = e.shadow.get_mut(slot) else {
        return false;
    };
    let wr_op = wqe_mut.op;
    if !wqe_mut.started {
        wqe_mut.started = true;
        wqe_mut.first_psn = sent.first_psn;
        wqe_mut.mtu = sent.mtu;
        if rc && wr_op.is_read_or_atomic() && !wqe_mut.credit {
            wqe_mut.credit = true;
            e.req.rd_atomic = e.req.rd_atomic.saturating_sub(1);
        }
    }
    wqe_mut.sent += sent.seg.len;
    if wr_op == WrOp::Read {
        // One request; the responses use `span` PSNs.
        wqe_mut.last_psn = sent.first_psn.add(sent.span - 1);
        e.req.psn = sent.first_psn.add(sent.span);
    } else {
        wqe_mut.last_psn = sent.seg.psn;
        e.req.psn = sent.seg.psn.next();
    }
    if e.req.psn.after(e.req.sent_end) {
        e.req.sent_end = e.req.psn;
    }
    if sent.last || wr_op == WrOp::Read {
        e.req.keys.clear();
        wqe_mut.sent_once = true;
        wqe_mut.state = if rc {
            WqeState::Pending
        } else {
            WqeState::Done
        };
        e.req.slot = next_slot;
    }
    // The timeout counts from the last packet that asks for an ACK: no
    // answer can come before it is sent, however long the message takes
    // to go out.
    if rc && (ack_req || !e.comp.deadline.is_set()) {
        retransmit::arm(qp, e, a);
    }
    true
}

/// Leaves the WQE at `slot` in its final state `done` and moves on to the
/// next; a failed one halts the run, and the requester stays at it (see
/// `step`).
fn settle(e: &mut Engine, slot: u32, done: WqeState) -> bool {
    if let Some(wqe_mut) = e.shadow.get_mut(slot) {
        wqe_mut.state = done;
    }
    if matches!(done, WqeState::Error(_)) {
        e.halted = true;
    } else {
        e.req.slot = e.next_slot(slot);
    }
    true
}

/// Fails the WQE at `slot` with completion `status`.
fn fail(e: &mut Engine, slot: u32, status: WcStatus) -> bool {
    settle(e, slot, WqeState::Error(status))
}

/// Whether reads or atomics are still outstanding (fences wait for them).
fn outstanding_rd_atomic(e: &Engine, a: &Attrs) -> bool {
    e.req.rd_atomic < u32::from(a.max_rd_atomic)
}

/// The headers of the WQE's packet `next`. `noack` counts the packets sent
/// since the last that asked for an ACK.
fn build_spec(qp: &Qp<Rrxe>, wqe: &SendWqe, next: &Packet, noack: &mut u32) -> TxSpec {
    let ack_req = ack_due(qp, next.seg.opcode, noack);
    spec_of(qp, wqe, next, ack_req)
}

/// Whether the next packet, of `op`, asks for an ACK: the last packet of
/// a message does, and one every so many packets; `noack` counts the
/// packets since the last that asked.
fn ack_due(qp: &Qp<Rrxe>, op: crate::proto::Opcode, noack: &mut u32) -> bool {
    *noack += 1;
    let ack_req = qp.qp_type == QpType::Rc && (op.requires_ack() || *noack >= MAX_PKT_PER_ACK);
    if ack_req {
        *noack = 0;
    }
    ack_req
}

/// The headers of the WQE's packet `next`, asking for an ACK if `ack_req`.
fn spec_of(qp: &Qp<Rrxe>, wqe: &SendWqe, next: &Packet, ack_req: bool) -> TxSpec {
    let seg = &next.seg;
    let mut spec = TxSpec::new(seg.opcode, next.dest_qpn, seg.psn, seg.len as usize);
    let op = seg.opcode;
    spec.se = next.last && wqe.solicited();
    spec.ack_req = ack_req;
    if op.has(crate::proto::Hdr::Reth) {
        spec.ext.reth = Some(RethFields {
            va: wqe.wr.remote_addr.wrapping_add(u64::from(seg.offset)),
            rkey: wqe.wr.rkey,
            len: if wqe.op == WrOp::Flush {
                wqe.wr.dma_length
            } else {
                next.len
            },
        });
    }
    if op.has(crate::proto::Hdr::AtomicEth) {
        spec.ext.atomic_eth = Some(AtomicEthFields {
            va: wqe.wr.remote_addr,
            rkey: wqe.wr.rkey,
            swap_add: if wqe.op == WrOp::CmpSwap {
                wqe.wr.swap
            } else {
                wqe.wr.compare_add
            },
            comp: if wqe.op == WrOp::CmpSwap {
                wqe.wr.compare_add
            } else {
                0
            },
        });
    }
    if op.has(crate::proto::Hdr::Feth) {
        spec.ext.feth = Some(FethFields {
            plt: wqe.wr.flush_type,
            sel: wqe.wr.flush_level,
        });
    }
    if op.has(crate::proto::Hdr::ImmDt) {
        spec.ext.imm = Some(wqe.wr.ex.to_ne_bytes());
    }
    if op.has(crate::proto::Hdr::Ieth) {
        spec.ext.ieth = Some(wqe.wr.ex);
    }
    if op.has(crate::proto::Hdr::Deth) {
        spec.ext.deth = Some(DethFields {
            qkey: next.qkey,
            src_qpn: qp.qp_num(),
        });
    }
    spec
}

/// Copies the segment's payload from the WQE's inline data or SGEs.
fn fill_payload(
    qp: &Qp<Rrxe>,
    e: &Engine,
    slot: u32,
    wqe: &SendWqe,
    seg: &Segment,
    buf: &mut [u8],
    fold: &mut Fold,
) -> core::result::Result<(), Halt> {
    if buf.is_empty() {
        return Ok(());
    }
    // A user ATOMIC WRITE's 8 bytes are in the WQE, like inline data.
    if wqe.inline {
        let data = e.shadow.data(slot);
        let start = seg.offset as usize;
        let src = data
            .get(start..start + buf.len())
            .ok_or(WcStatus::LocLenErr)?;
        fold.copy_slice(buf, src);
        return Ok(());
    }
    e.shadow.copy(
        qp,
        Some(&e.req.keys),
        slot,
        seg.offset,
        Transfer::OutOf(buf, fold),
    )
}

/// The destination of a datagram WR: from its AH (by number, same PD), or
/// the AV an old librxe embeds.
fn ud_dest(qp: &Qp<Rrxe>, wqe: &SendWqe, a: &Attrs) -> Option<(Av, u32, u32)> {
    let av = if wqe.wr.ah_num != 0 {
        // Under the pool's lock, without a reference: a kernel AH destroyed
        // without sleeping never waits for this (the number is the user's
        // to choose, any AH of the device).
        qp.device().ah_pool.with(wqe.wr.ah_num, |ah| {
            core::ptr::eq(ah.pd(), qp.pd()).then(|| *ah.av.lock())
        })??
    } else {
        av_from_raw(qp, &wqe.wr.av)?
    };
    // A Q_Key with the high bit set means "use the QP's" (IBA 10.2.5);
    // the MAD layer sends so from QP1, whose Q_Key it set to 0x80010000.
    let qkey = if wqe.wr.remote_qkey & 0x8000_0000 != 0 {
        a.qkey
    } else {
        wqe.wr.remote_qkey
    };
    Some((av, wqe.wr.remote_qpn & 0x00ff_ffff, qkey))
}

/// An AV embedded in a user WQE: take only the routing fields, and the
/// source GID from our own table.
fn av_from_raw(qp: &Qp<Rrxe>, raw: &crate::rdma::wqe::RawAv) -> Option<Av> {
    let entry = qp.device().gid(raw.sgid_index)?;
    let sgid = entry.gid;
    let network = if is_v4_mapped(&sgid) {
        Network::Ipv4
    } else {
        Network::Ipv6
    };
    let want = if network == Network::Ipv4 {
        RXE_NETWORK_TYPE_IPV4
    } else {
        RXE_NETWORK_TYPE_IPV6
    };
    if raw.network_type != want {
        return None;
    }
    Some(Av {
        port_num: 1,
        network,
        dgid: raw.dgid,
        sgid,
        sgid_index: raw.sgid_index,
        flow_label: raw.flow_label,
        hop_limit: raw.hop_limit,
        traffic_class: raw.traffic_class,
        dmac: raw.dmac,
        vlan: match entry.netdev {
            GidNetdev::Vlan(v) => Some(v),
            _ => None,
        },
    })
}

/// Executes a local operation; its completion state.
fn local_op(qp: &Qp<Rrxe>, wqe: &SendWqe) -> WqeState {
    match wqe.op {
        WrOp::LocalInv => {
            let key = wqe.wr.ex;
            if mw::invalidate_key(qp, key, false).is_ok() {
                WqeState::Done
            } else {
                WqeState::Error(WcStatus::LocQpOpErr)
            }
        }
        WrOp::BindMw => match mw::bind(
            qp,
            wqe.wr.mw_rkey,
            wqe.wr.mr_lkey,
            wqe.wr.remote_addr,
            wqe.wr.length,
            wqe.wr.rkey,
            wqe.wr.access,
        ) {
            Ok(()) => WqeState::Done,
            Err(_) => WqeState::Error(WcStatus::MwBindErr),
        },
        WrOp::RegMr => {
            let Some(mr) = qp.device().mr_pool.get(wqe.wr.mr_lkey >> 8) else {
                return WqeState::Error(WcStatus::LocQpOpErr);
            };
            if !mr.inner.lock().in_pd(qp.pd())
                || crate::mr::fast_register(&mr, wqe.wr.rkey, wqe.wr.access).is_err()
            {
                return WqeState::Error(WcStatus::LocQpOpErr);
            }
            WqeState::Done
        }
        _ => WqeState::Error(WcStatus::LocQpOpErr),
    }
}
