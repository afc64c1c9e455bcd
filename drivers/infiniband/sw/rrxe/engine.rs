// SPDX-License-Identifier: GPL-2.0

//! The per-QP protocol engines and the QP's work function that runs them.
//!
//! - [`state`]: what the engines of one QP share (`Engine`);
//! - [`req`]: the requester, send WQEs to packets;
//! - [`comp`]: the completer, responses to send completions;
//! - [`resp`]: the responder, requests to placed data, ACKs and receive
//!   completions;
//! - [`retransmit`]: the retransmit timer and go-back-N;
//! - [`wqe`]: the send queue's shadow and the WQEs as the engines read
//!   them;
//! - [`parsed`]: a queued packet's headers as the engines read them.
//!
//! This file runs them: the QP's work, doorbells and loopback chains, and
//! the flush of an errored QP. The engines import [`state`] and each
//! other's helpers never: only this file calls into them.
//!
//! All of it runs under the QP's engine mutex, which only the work (or a
//! doorbell's run) and `modify_qp` take; `query_qp` reads the PSNs the
//! runs publish ([`publish_psns`]). Packet intake (softirq) and posting
//! (any context) only queue and schedule.

mod comp;
pub(crate) mod parsed;
mod req;
mod resp;
mod retransmit;
mod state;
pub(crate) mod wqe;

pub(crate) use state::{Engine, Resources};

use crate::cq;
use crate::qp_attr::{Attrs, State};
use crate::rdma::attrs::QpType;
use crate::rdma::ib::{WcOpcode, WcStatus};
use crate::rdma::objects::{ObjEvent, Qp};
use crate::rdma::wc::Completion;
use crate::sched::queued;
use crate::Rrxe;
use core::sync::atomic::Ordering;
use state::INFLIGHT_HIGH;

/// Steps per run of the work before it yields the CPU and requeues.
const BUDGET: u32 = 512;
/// Packets the responder, or the requester, handles in a row within one
/// round of the engines.
const BATCH: u32 = 16;

/// The QP's work: completer, responder and requester until no progress,
/// or until the budget is spent (then the work requeues itself).
pub(crate) fn run(qp: &Qp<Rrxe>) {
    chain(qp, Caller::Work)
}

/// Who runs a chain of loopback runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Caller {
    /// The QP's work item.
    Work,
    /// A doorbell (`post_send` system call); `stream`: the destination
    /// of the QP's packets runs in its own work item (see [`doorbell`]).
    Doorbell { stream: bool },
}

fn chain(qp: &Qp<Rrxe>, caller: Caller) {
    let doorbell = caller != Caller::Work;
    run_one(qp, BUDGET);
    // Loopback: the QP this run sent packets to runs next, here, and then
    // the one that run sent packets to (typically its ACKs back to us),
    // up to `MAX_HOPS` runs; no wake-up and no hop to another CPU. A QP
    // whose engines run already elsewhere, or the one left when the hops
    // are spent, gets its work queued instead.
    let mut next = qp.kick.lock().take();
    let mut hops = 0;
    while let Some(q) = next {
        let stream = match caller {
            Caller::Work => false,
            Caller::Doorbell { stream } => stream || queued(&q) > DOORBELL_CHAIN_MAX,
        };
        if stream || hops == MAX_HOPS || q.running.load(Ordering::Acquire) || !q.alive() {
            // (A no-op for a QP being destroyed.)
            q.schedule();
            return;
        }
        // A user QP runs here only while no memory of its PD faults
        // (`PdState::no_faults`): a fault waits on that user, in the
        // QP's own work.
        let pass = if q.is_user {
            let Some(pass) = q.pd().no_faults.enter() else {
                q.schedule();
                return;
            };
            Some(pass)
        } else {
            None
        };
        // In a system call, another QP's run is kept short: work that
        // one request starts (a long READ's responses) goes on in that
        // QP's work item, and the poster's other QPs are not kept waiting.
        run_one(&q, if doorbell { CHAIN_BUDGET } else { BUDGET });
        drop(pass);
        hops += 1;
        next = q.kick.lock().take();
    }
}

/// Most packets queued on a loopback destination that a doorbell's chain
/// still runs itself; with more, the destination's work runs it (on any
/// CPU) and the poster goes on posting (see [`doorbell`]).
const DOORBELL_CHAIN_MAX: usize = 8;

// The destination's backlog that queues its work at once (`sched`) is
// twice what one run of the requester lets out: the two move together.
const _: () = assert!(crate::sched::KICK_BACKLOG == 2 * INFLIGHT_HIGH as usize);

/// Steps of a destination's run in a doorbell's chain (see [`chain`]).
const CHAIN_BUDGET: u32 = 8;

/// Loopback runs that one run may chain (see [`run`]).
const MAX_HOPS: u32 = 4;

fn run_one(qp: &Qp<Rrxe>, budget: u32) {
    // A QP being destroyed runs no more (another QP's chain may still
    // hold it).
    if !qp.alive() {
        return;
    }
    // While its PD has no memory that faults, a user QP's run holds a
    // pass (`PdState::no_faults`), which the first ODP registration
    // waits for. After, a run may wait in a fault, on the user: its
    // queues then take only packets detached from their senders (a
    // queued looped-back packet holds its sending QP, whose destroy would
    // wait as long).
    let pass = if qp.is_user {
        qp.pd().no_faults.enter()
    } else {
        None
    };
    for _ in 0..RERUNS {
        {
            let mut e = qp.engine.lock();
            if qp.is_user && pass.is_none() {
                qp.req_pkts.detach_all();
                qp.resp_pkts.detach_all();
            }
            qp.running.store(true, Ordering::SeqCst);
            run_locked(qp, &mut e, budget);
            publish_psns(qp, &e);
            qp.running.store(false, Ordering::SeqCst);
        }
        // A doorbell that came during the run (see [`doorbell`]).
        if !qp.rerun.swap(false, Ordering::SeqCst) {
            return;
        }
    }
    // Doorbells keep coming: the work takes them.
    qp.schedule();
}

/// Publishes the engines' PSNs for `query_qp` (under the engine mutex;
/// see `QpState::psns`).
pub(crate) fn publish_psns(qp: &Qp<Rrxe>, e: &Engine) {
    let (sq, rq) = e.live_psns();
    qp.psns
        .store(u64::from(sq) << 32 | u64::from(rq), Ordering::Release);
}

/// Runs in a row of one QP for doorbells that found it running (see
/// [`run_one`]).
const RERUNS: u32 = 2;

/// A user QP's doorbell (`post_send` system call). The caller does not
/// wait: engines that run already go on once more for the new WQEs; an
/// RC QP whose consumer streams gets them run in its work item; else they
/// run here.
pub(crate) fn doorbell(qp: &Qp<Rrxe>) {
    // Neither a request nor a send completion came since the last
    // doorbell: the consumer streams (it posts without waiting on the
    // QP). An RC QP's work then runs its engines, and its loopback
    // destination after them; a UD or UC QP's run here hands its
    // destination to that QP's own work item. A consumer that waits
    // between posts (a ping-pong, or one completion at a time) busy-polls,
    // and a work item would wait for its CPU: the doorbell runs the
    // engines and the destination itself.
    let stream = !qp.awaited.swap(false, Ordering::Relaxed);
    // Engines running elsewhere (a loopback chain, the QP's work) run
    // once more when their run ends, on that CPU, without a wake-up.
    // Either that run sees the flag, or this one sees them stopped and
    // runs (or queues) them below (both may run; the mutex orders them).
    if qp.running.load(Ordering::SeqCst) {
        qp.rerun.store(true, Ordering::SeqCst);
        if qp.running.load(Ordering::SeqCst) {
            return;
        }
    }
    if stream && qp.qp_type == QpType::Rc {
        // The work runs the requester (and its loopback chain) on any
        // CPU, and the poster goes on posting: its system call is the
        // cost of each message it posts, and a requester run per message
        // in it kept the poster's CPU busy while the workers' CPU idled
        // whenever each QP had few WQEs in flight (bench.md, "Scaling:
        // the streaming doorbell"). A doorbell that comes while the work
        // is queued costs the queuing's lock and no second run. An RC send
        // completes on its ACK, so running it here would not complete it
        // sooner; a UD or UC send completes when it is sent, and runs
        // here: its completion is in the CQ when `ibv_post_send` returns.
        qp.schedule();
        return;
    }
    chain(qp, Caller::Doorbell { stream });
}

fn run_locked(qp: &Qp<Rrxe>, e: &mut Engine, mut budget: u32) {
    // The engines' copy of the attributes, without a lock (see
    // `Engine::attrs`); each round re-reads the state, which the engines
    // themselves may change (`set_error`).
    let mut a = e.attrs;
    loop {
        a.state = e.attrs.state;
        a.sq_draining = e.attrs.sq_draining;
        if a.state == State::Err {
            flush(qp, e, &a);
            return;
        }
        // Intake takes no packet below RTR, but it reads the state before
        // it queues: a packet it found the QP ready for may be queued
        // after a modify to RESET emptied the queues. It belongs to the
        // QP's previous connection, and no engine runs it (C rxe's
        // receiver drops what it finds in RESET); the requester has
        // nothing to send before RTS.
        if matches!(a.state, State::Reset | State::Init) {
            qp.req_pkts.purge();
            qp.resp_pkts.purge();
            return;
        }
        // Parked for a fault on the QP's memory: its end queues the work.
        if state::parked(qp, e) {
            return;
        }
        e.halted = false;
        let mut steps = 0;
        if comp::step(qp, e, &a) {
            steps += 1;
        }
        // An engine's fatal error (`set_error`) ends the round: the next
        // one flushes, and no engine acts on the state read before it.
        if e.attrs.state != a.state {
            continue;
        }
        // The responder and the requester take up to `BATCH` packets in a
        // row (the state read above holds: only the engines' own errors
        // change it, and those end the batch).
        // (An engine that parks stops the others too: `state::park`.)
        for i in 0..BATCH {
            if e.parked || (i > 0 && e.halted) || !resp::step(qp, e, &a) {
                break;
            }
            steps += 1;
        }
        // Keys are kept for one batch at most (see `KeyCache`).
        e.resp.keys.clear();
        resp::flush_ack(qp, e, &a);
        if e.attrs.state != a.state {
            continue;
        }
        let mut sent = 0;
        for i in 0..BATCH {
            if e.parked || (i > 0 && e.halted) || !req::step(qp, e, &a) {
                break;
            }
            sent += 1;
        }
        e.req.keys.clear();
        // Whenever the requester stands still, not only when all three
        // do: a peer's steady requests must not hold the event back.
        if sent == 0 && a.state == State::Sqd && a.sq_draining {
            sq_drained(qp, e);
        }
        steps += sent;
        if steps == 0 {
            return;
        }
        budget = budget.saturating_sub(steps);
        if budget == 0 {
            qp.schedule();
            return;
        }
    }
}

/// In SQD: once every started WQE completed, the drain is over
/// (and reported if the consumer asked). The requester's slot at the
/// oldest uncompleted WQE is not enough: a message it has begun to send
/// (and is held back in, by the PSN window, an RNR wait or the packets in
/// flight) stays there until its last packet is out, and the drain waits
/// for it (as C rxe looks at the head WQE's state).
fn sq_drained(qp: &Qp<Rrxe>, e: &mut Engine) {
    if e.req.slot != e.sq_cons || e.shadow.get(e.req.slot).is_some_and(|w| w.started) {
        return;
    }
    let notify = {
        let mut a = qp.attr.lock();
        if a.state == State::Sqd && a.sq_draining {
            a.sq_draining = false;
            e.attrs.sq_draining = false;
            a.en_sqd_async_notify != 0
        } else {
            false
        }
    };
    if notify {
        qp.event(ObjEvent::SqDrained);
    }
}

/// Completes every outstanding WQE of an errored QP with a flush status
/// (send queue, and the receive queue unless it is an SRQ).
pub(crate) fn flush(qp: &Qp<Rrxe>, e: &mut Engine, a: &Attrs) {
    comp::flush_sq(qp, e, a);
    qp.req_pkts.purge();
    qp.resp_pkts.purge();
    // A receive WQE the responder was filling completes with the flush.
    if let Some(wr_id) = e.resp.wqe.finish() {
        let c = recv_flush_cqe(qp, wr_id);
        cq::post(qp.recv_cq(), qp, &c, false);
    }
    if qp.srq().is_some() {
        // The SRQ keeps its WQEs; the consumer learns that this QP will
        // take no more (once).
        if !e.resp.last_wqe_reported {
            e.resp.last_wqe_reported = true;
            qp.event(ObjEvent::QpLastWqeReached);
        }
        return;
    }
    // At most one ring's worth per run (see `comp::flush_sq`).
    let slots = qp.rq.lock().as_ref().map_or(0, |rq| rq.queue.slots());
    for _ in 0..slots {
        let wr_id = {
            let mut rq = qp.rq.lock();
            let Some(rq) = rq.as_mut() else { return };
            if rq.queue.is_empty() {
                return;
            }
            let mut hdr = [0u8; crate::rdma::wqe::RECV_WQE_HDR];
            let id = rq
                .queue
                .read_at(rq.queue.consumer(), 0, &mut hdr)
                .ok()
                .and_then(|()| crate::rdma::wqe::decode_recv(&hdr))
                .map_or(0, |w| w.wr_id);
            let _ = rq.queue.advance_consumer();
            id
        };
        let c = recv_flush_cqe(qp, wr_id);
        cq::post(qp.recv_cq(), qp, &c, false);
    }
    qp.schedule();
}

fn recv_flush_cqe(qp: &Qp<Rrxe>, wr_id: u64) -> Completion {
    Completion::new(wr_id, WcStatus::WrFlushErr, WcOpcode::Recv, qp.qp_num())
}
