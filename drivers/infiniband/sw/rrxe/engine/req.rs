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
use super::state::{self, Engine, INFLIGHT_HIGH, MAX_PKT_PER_ACK, MAX_UNACKED_PSNS};
use super::wqe::{SendWqe, WqeState, WrOp};
use crate::av::{is_v4_mapped, Av, Network};
use crate::mem::Copy;
use crate::mw;
use crate::net::tx::{self as pkt, TxError};
use crate::proto::build::{AtomicEthFields, DethFields, FethFields, RethFields, TxSpec};
use crate::proto::seg::{segments, Segment};
use crate::proto::Psn;
use crate::qp_attr::{Attrs, State};
use crate::rdma::attrs::QpType;
use crate::rdma::consts::*;
use crate::rdma::objects::Qp;
use crate::Rrxe;
use core::sync::atomic::Ordering;

/// Runs one requester step; whether it made progress.
pub(crate) fn step(qp: &Qp<Rrxe>, e: &mut Engine, a: &Attrs) -> bool {
    if !matches!(a.state, State::Rts | State::Sqd) || e.req.rnr_wait {
        return false;
    }
    let slot = e.req.slot;
    // The ring's lock only to see new WQEs: at the producer index last
    // seen, or at the first visit of a slot, which copies the WQE out of
    // the ring, once.
    if slot == e.req.prod_seen || e.shadow.get(slot).is_none() {
        let sq = qp.sq.lock();
        e.req.prod_seen = sq.queue.producer();
        if slot == e.req.prod_seen {
            return false;
        }
        if e.shadow.get(slot).is_none()
            && e.shadow
                .load(
                    &sq.queue,
                    slot,
                    qp.qp_type,
                    !qp.is_user,
                    sq.max_sge,
                    sq.max_inline,
                )
                .is_err()
        {
            return false;
        }
    }
    let next_slot = e.next_slot(slot);
    // Borrowed, not copied (a `SendWqe` is about 200 bytes, and this runs
    // once per packet): the borrow ends before the progress is written.
    let Some(w) = e.shadow.get(slot) else {
        return false;
    };
    match w.state {
        WqeState::Error(_) => {
            // The completer reports it and fails the QP.
            e.halted = true;
            e.req.slot = next_slot;
            return true;
        }
        WqeState::Done | WqeState::Pending => {
            // Passed over (after a retry, an ACK completed it): what
            // comes next follows its PSNs.
            if w.started && w.op.msg_op().is_some() {
                let after = Psn::new(w.last_psn).next();
                if Psn::new(e.req.psn).before(after) {
                    e.req.psn = after.get();
                }
            }
            e.req.slot = next_slot;
            return true;
        }
        WqeState::Posted => {}
    }
    // Draining: no new message starts.
    if a.state == State::Sqd && !w.started {
        return false;
    }
    let rc = qp.qp_type == QpType::Rc;
    let outstanding = outstanding_rd_atomic(e, a);
    if w.fence() && outstanding {
        return false;
    }
    if w.op.is_local() {
        let st = local_op(qp, w);
        if matches!(st, WqeState::Error(_)) {
            e.halted = true;
        }
        if let Some(x) = e.shadow.get_mut(slot) {
            x.state = st;
        }
        e.req.slot = next_slot;
        return true;
    }
    if rc && w.op.is_read_or_atomic() && !w.credit && e.req.rd_atomic == 0 {
        return false;
    }
    if rc && Psn::new(e.req.psn).distance(Psn::new(e.comp.psn)) >= MAX_UNACKED_PSNS as i32 {
        return false;
    }
    if qp.skb_out.load(Ordering::SeqCst) >= INFLIGHT_HIGH {
        // Ask the transmit destructor for a wake-up, then look again: a
        // packet freed in between would otherwise wake nobody.
        qp.need_req_skb.store(true, Ordering::SeqCst);
        if qp.skb_out.load(Ordering::SeqCst) >= INFLIGHT_HIGH {
            return false;
        }
        qp.need_req_skb.store(false, Ordering::SeqCst);
    }

    let mtu = if w.started { w.mtu } else { state::mtu(qp, a) };
    let Some(op) = w.op.msg_op() else {
        return fail(e, slot, IB_WC_LOC_QP_OP_ERR);
    };
    let first_psn = if w.started { w.first_psn } else { e.req.psn };
    let segs = match segments(
        state::transport(qp.qp_type),
        op,
        w.len,
        mtu,
        Psn::new(first_psn),
    ) {
        Ok(s) => s,
        Err(_) => return fail(e, slot, IB_WC_LOC_LEN_ERR),
    };
    let span = segs.psn_span();
    let mtu_b = mtu.bytes() as u32;
    let index = if w.len == 0 { 0 } else { w.sent / mtu_b } as usize;
    let Some(mut seg) = segs.clone().nth(index) else {
        return fail(e, slot, IB_WC_LOC_LEN_ERR);
    };
    // A READ resent after part of its response came in asks only for the
    // rest, at the PSN of the first response still missing (as C rxe
    // does); the responder replays from there.
    let mut tx_len = w.len;
    if w.op == WrOp::Read && w.read > 0 && w.read < w.len && w.read % mtu_b == 0 {
        seg.psn = Psn::new(first_psn).add(w.read / mtu_b);
        seg.offset = w.read;
        tx_len = w.len - w.read;
    }
    let last = seg.opcode.is_end();

    // Where to: the QP's path, or the AH of a datagram WR.
    let (av, dest_qpn, qkey) = match qp.qp_type {
        QpType::Rc | QpType::Uc => (a.pri_av, a.dest_qp_num, 0),
        _ => match ud_dest(qp, w, a) {
            Some(d) => d,
            None => return fail(e, slot, IB_WC_LOC_QP_OP_ERR),
        },
    };

    let spec = build_spec(qp, w, tx_len, &seg, dest_qpn, qkey, last, &mut e.req.noack);
    let ack_req = spec.ack_req;
    let wr_op = w.op;
    // (The cache is taken out for the call: `fill` reads the engine.)
    let mut routes = core::mem::take(&mut e.route);
    let r = pkt::send(qp, &av, &spec, &mut routes, |buf| {
        fill_payload(qp, e, slot, w, &seg, buf)
    });
    e.route = routes;
    match r {
        Ok(()) | Err(TxError::NoRoute) => {}
        Err(TxError::NoMem) => {
            // Retry from the work later.
            qp.schedule();
            return false;
        }
        Err(TxError::Payload(status)) => return fail(e, slot, status),
    }
    if matches!(wr_op, WrOp::Send | WrOp::SendImm | WrOp::SendInv) && seg.offset == 0 {
        state::count(qp, crate::counters::Counter::RdmaSends);
    }

    // Progress.
    let Some(x) = e.shadow.get_mut(slot) else {
        return false;
    };
    if !x.started {
        x.started = true;
        x.first_psn = first_psn;
        x.mtu = mtu;
        if rc && wr_op.is_read_or_atomic() && !x.credit {
            x.credit = true;
            e.req.rd_atomic = e.req.rd_atomic.saturating_sub(1);
        }
    }
    x.sent += seg.len;
    if wr_op == WrOp::Read {
        // One request; the responses use `span` PSNs.
        x.last_psn = Psn::new(first_psn).add(span - 1).get();
        e.req.psn = Psn::new(first_psn).add(span).get();
    } else {
        x.last_psn = seg.psn.get();
        e.req.psn = seg.psn.next().get();
    }
    if last || wr_op == WrOp::Read {
        e.req.keys.clear();
        x.sent_once = true;
        x.state = if rc {
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

fn fail(e: &mut Engine, slot: u32, status: u32) -> bool {
    e.halted = true;
    if let Some(x) = e.shadow.get_mut(slot) {
        x.state = WqeState::Error(status);
    }
    e.req.slot = e.next_slot(slot);
    true
}

/// Whether reads or atomics are still outstanding (fences wait for them).
fn outstanding_rd_atomic(e: &Engine, a: &Attrs) -> bool {
    e.req.rd_atomic < u32::from(a.max_rd_atomic)
}

/// The packet's headers. `len` is the message length its RETH names (less
/// than the WQE's for a READ resent in part); `noack` counts the packets
/// sent since the last that asked for an ACK.
#[allow(clippy::too_many_arguments)]
fn build_spec(
    qp: &Qp<Rrxe>,
    w: &SendWqe,
    len: u32,
    seg: &Segment,
    dest_qpn: u32,
    qkey: u32,
    last: bool,
    noack: &mut u32,
) -> TxSpec {
    let mut spec = TxSpec::new(seg.opcode, dest_qpn, seg.psn, seg.len as usize);
    let op = seg.opcode;
    spec.se = last && w.solicited();
    // AckReq on the last packet of a message and every so many packets.
    *noack += 1;
    spec.ack_req = qp.qp_type == QpType::Rc && (op.requires_ack() || *noack >= MAX_PKT_PER_ACK);
    if spec.ack_req {
        *noack = 0;
    }
    if op.has(crate::proto::Hdr::Reth) {
        spec.ext.reth = Some(RethFields {
            va: w.wr.remote_addr.wrapping_add(u64::from(seg.offset)),
            rkey: w.wr.rkey,
            len: if w.op == WrOp::Flush {
                w.wr.length as u32
            } else {
                len
            },
        });
    }
    if op.has(crate::proto::Hdr::AtomicEth) {
        spec.ext.atomic_eth = Some(AtomicEthFields {
            va: w.wr.remote_addr,
            rkey: w.wr.rkey,
            swap_add: if w.op == WrOp::CmpSwap {
                w.wr.swap
            } else {
                w.wr.compare_add
            },
            comp: if w.op == WrOp::CmpSwap {
                w.wr.compare_add
            } else {
                0
            },
        });
    }
    if op.has(crate::proto::Hdr::Feth) {
        spec.ext.feth = Some(FethFields {
            plt: w.wr.flush_type,
            sel: w.wr.flush_level,
        });
    }
    if op.has(crate::proto::Hdr::ImmDt) {
        spec.ext.imm = Some(w.wr.ex.to_ne_bytes());
    }
    if op.has(crate::proto::Hdr::Ieth) {
        spec.ext.ieth = Some(w.wr.ex);
    }
    if op.has(crate::proto::Hdr::Deth) {
        spec.ext.deth = Some(DethFields {
            qkey,
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
    w: &SendWqe,
    seg: &Segment,
    buf: &mut [u8],
) -> core::result::Result<(), u32> {
    if buf.is_empty() {
        return Ok(());
    }
    // A user ATOMIC WRITE's 8 bytes are in the WQE, like inline data.
    if w.inline {
        let data = e.shadow.data(slot);
        let start = seg.offset as usize;
        let src = data
            .get(start..start + buf.len())
            .ok_or(IB_WC_LOC_LEN_ERR)?;
        buf.copy_from_slice(src);
        return Ok(());
    }
    e.shadow
        .copy(qp, Some(&e.req.keys), slot, seg.offset, Copy::OutOf(buf))
}

/// The destination of a datagram WR: from its AH (by number, same PD), or
/// the AV an old librxe embeds.
fn ud_dest(qp: &Qp<Rrxe>, w: &SendWqe, a: &Attrs) -> Option<(Av, u32, u32)> {
    let av = if w.wr.ah_num != 0 {
        let ah = qp.device().ah_pool.get(w.wr.ah_num)?;
        if !core::ptr::eq(ah.pd(), qp.pd()) {
            return None;
        }
        let av = *ah.av.lock();
        av
    } else {
        av_from_raw(qp, &w.wr.av)?
    };
    // A Q_Key with the high bit set means "use the QP's" (IBA 10.2.5);
    // the MAD layer sends so from QP1, whose Q_Key it set to 0x80010000.
    let qkey = if w.wr.remote_qkey & 0x8000_0000 != 0 {
        a.qkey
    } else {
        w.wr.remote_qkey
    };
    Some((av, w.wr.remote_qpn & 0x00ff_ffff, qkey))
}

/// An AV embedded in a user WQE: take only the routing fields, and the
/// source GID from our own table.
fn av_from_raw(qp: &Qp<Rrxe>, r: &crate::rdma::wqe::RawAv) -> Option<Av> {
    let sgid = qp.device().gid(r.sgid_index)?;
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
    if r.network_type != want {
        return None;
    }
    Some(Av {
        port_num: 1,
        network,
        dgid: r.dgid,
        sgid,
        sgid_index: r.sgid_index,
        flow_label: r.flow_label,
        hop_limit: r.hop_limit,
        traffic_class: r.traffic_class,
        dmac: r.dmac,
    })
}

/// Executes a local operation; its completion state.
fn local_op(qp: &Qp<Rrxe>, w: &SendWqe) -> WqeState {
    match w.op {
        WrOp::LocalInv => {
            let key = w.wr.ex;
            if mw::invalidate_key(qp, key, false).is_ok() {
                WqeState::Done
            } else {
                WqeState::Error(IB_WC_LOC_QP_OP_ERR)
            }
        }
        WrOp::BindMw => match mw::bind(
            qp,
            w.wr.mw_rkey,
            w.wr.mr_lkey,
            w.wr.remote_addr,
            w.wr.length,
            w.wr.rkey,
            w.wr.access,
        ) {
            Ok(()) => WqeState::Done,
            Err(_) => WqeState::Error(IB_WC_MW_BIND_ERR),
        },
        WrOp::RegMr => {
            let Some(mr) = qp.device().mr_pool.get(w.wr.mr_lkey >> 8) else {
                return WqeState::Error(IB_WC_LOC_QP_OP_ERR);
            };
            if !core::ptr::eq(mr.pd(), qp.pd())
                || crate::mr::fast_register(&mr, w.wr.rkey, w.wr.access).is_err()
            {
                return WqeState::Error(IB_WC_LOC_QP_OP_ERR);
            }
            WqeState::Done
        }
        _ => WqeState::Error(IB_WC_LOC_QP_OP_ERR),
    }
}
