// SPDX-License-Identifier: GPL-2.0

//! Posting work requests for kernel consumers (`ib_post_send`,
//! `ib_post_recv`, `ib_post_srq_recv`): each request is checked as C rxe
//! checks it and written into the QP's ring in the layout librxe uses, so
//! the engines read kernel and user rings the same way (copy once,
//! validate the copy). For a user QP, `post_send` is librxe's doorbell.

use crate::engine::wqe::{WrOp, MAX_MSG};
use crate::qp_attr::State;
use crate::queue::Queue;
use crate::rdma::attrs::QpType;
use crate::rdma::ib::SendFlags;
use crate::rdma::objects::{Qp, Srq};
use crate::rdma::wqe::{
    self as raw, KernelRecvWr, KernelRecvWrs, KernelSendWr, KernelSendWrs, RecvWr, Sge,
};
use crate::Rrxe;
use kernel::prelude::*;

/// `post_send`.
pub(crate) fn post_send(qp: &Qp<Rrxe>, wrs: &mut KernelSendWrs<'_>) -> Result {
    let state = qp.attr.lock().state;
    if matches!(state, State::Reset | State::Init | State::Rtr) {
        return Err(EINVAL);
    }
    if qp.is_user {
        // The doorbell: the WQEs are in the ring already, and
        // `engine::doorbell` decides where the engines run for them (in
        // this syscall, process context, or in the QP's work).
        crate::engine::doorbell(qp);
        return Ok(());
    }
    let ud = matches!(qp.qp_type, QpType::Ud | QpType::Gsi);
    let mut posted = 0u32;
    let r = {
        let mut sq = qp.sq.lock();
        let (max_sge, max_inline) = (sq.max_sge, sq.max_inline);
        let mut r = Ok(());
        while let Some(w) = wrs.next::<Rrxe>(ud) {
            r = post_one_send(&mut sq.queue, qp.qp_type, max_sge, max_inline, &w);
            if r.is_err() {
                break;
            }
            posted += 1;
        }
        r
    };
    if posted != 0 {
        qp.schedule();
    }
    r
}

fn post_one_send(
    q: &mut Queue,
    t: QpType,
    max_sge: u32,
    max_inline: u32,
    w: &KernelSendWr<'_>,
) -> Result {
    let op = w.wr.op.ok_or(EINVAL)?;
    if !op.allowed(t, true) {
        return Err(EINVAL);
    }
    if w.wr.num_sge > max_sge {
        return Err(EINVAL);
    }
    let len: u64 = w.sges.iter().map(|s| u64::from(s.length)).sum();
    if len > u64::from(MAX_MSG) {
        return Err(EINVAL);
    }
    if matches!(op, WrOp::CmpSwap | WrOp::FetchAdd) && (len != 8 || w.wr.remote_addr % 8 != 0) {
        return Err(EINVAL);
    }
    let inline = w.wr.flags.contains(SendFlags::INLINE) && !op.is_local();
    if inline {
        if !op.carries_inline() {
            return Err(EINVAL);
        }
        if len > u64::from(max_inline) {
            return Err(EINVAL);
        }
    }
    if q.is_full() {
        return Err(ENOMEM);
    }
    let slot = q.client_producer();
    let mut wr = w.wr;
    wr.dma_length = len as u32;
    if inline {
        // Inline data sits where the SGEs would; at most `max_inline`
        // bytes, copied through a bounded buffer.
        let mut data = KVec::from_elem(0u8, len as usize, GFP_ATOMIC)?;
        let n = w.copy_inline(&mut data)?;
        q.write_at(slot, raw::SEND_SGE_OFF, data.get(..n).ok_or(EINVAL)?)?;
        wr.num_sge = 0;
    } else {
        let mut buf = [0u8; raw::SGE_LEN];
        for i in 0..w.sges.len() {
            let s: Sge = w.sge(i).ok_or(EINVAL)?;
            raw::encode_sge(&s, &mut buf, 0)?;
            q.write_at(slot, raw::SEND_SGE_OFF + i * raw::SGE_LEN, &buf)?;
        }
    }
    let mut hdr = [0u8; raw::SEND_WQE_HDR];
    raw::encode_send(&wr, &mut hdr)?;
    q.write_at(slot, 0, &hdr)?;
    q.client_advance_producer()
}

/// Writes one receive request into `q`.
fn post_one_recv(q: &mut Queue, max_sge: u32, w: &KernelRecvWr<'_>) -> Result {
    if q.is_full() {
        return Err(ENOMEM);
    }
    let n = w.sges.len();
    if n as u64 > u64::from(max_sge) {
        return Err(EINVAL);
    }
    let len: u64 = w.sges.iter().map(|s| u64::from(s.length)).sum();
    if len > u64::from(MAX_MSG) {
        return Err(EINVAL);
    }
    let slot = q.client_producer();
    let mut buf = [0u8; raw::SGE_LEN];
    for i in 0..n {
        let s = w.sge(i).ok_or(EINVAL)?;
        raw::encode_sge(&s, &mut buf, 0)?;
        q.write_at(slot, raw::RECV_SGE_OFF + i * raw::SGE_LEN, &buf)?;
    }
    let mut hdr = [0u8; raw::RECV_WQE_HDR];
    raw::encode_recv(
        &RecvWr {
            wr_id: w.wr_id,
            num_sge: n as u32,
        },
        len as u32,
        &mut hdr,
    )?;
    q.write_at(slot, 0, &hdr)?;
    q.client_advance_producer()
}

/// `post_recv`.
pub(crate) fn post_recv(qp: &Qp<Rrxe>, wrs: &mut KernelRecvWrs<'_>) -> Result {
    let state = qp.attr.lock().state;
    // A user QP's receive ring is librxe's to fill.
    if state == State::Reset || qp.srq().is_some() || qp.is_user {
        return Err(EINVAL);
    }
    let r = {
        let mut rq = qp.rq.lock();
        let rq = rq.as_mut().ok_or(EINVAL)?;
        let mut r = Ok(());
        for w in wrs.by_ref() {
            r = post_one_recv(&mut rq.queue, rq.max_sge, &w);
            if r.is_err() {
                break;
            }
        }
        r
    };
    // An errored QP completes new receives with a flush.
    if qp.attr.lock().state == State::Err {
        qp.schedule();
    }
    r
}

/// `post_srq_recv`.
pub(crate) fn post_srq_recv(srq: &Srq<Rrxe>, wrs: &mut KernelRecvWrs<'_>) -> Result {
    if srq.is_user() {
        return Err(EINVAL);
    }
    let mut rq = srq.rq.lock();
    let max_sge = rq.max_sge;
    for w in wrs.by_ref() {
        post_one_recv(&mut rq.queue, max_sge, &w)?;
    }
    Ok(())
}
