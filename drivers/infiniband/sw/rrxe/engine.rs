// SPDX-License-Identifier: GPL-2.0

//! The per-QP protocol engine: the state the requester, completer and
//! responder share, and the QP's work function that runs them.
//!
//! All of it runs in the QP's work item, which never runs concurrently
//! with itself; `Engine` sits behind a mutex that only the work and
//! `modify_qp`/`query_qp` take. Packet intake (softirq) and posting
//! (any context) only queue and schedule.

use crate::comp;
use crate::counters::Counter;
use crate::cq;
use crate::mem::KeyCache;
use crate::proto::Deadline;
use crate::qp::{Attrs, State};
use crate::rdma::attrs::QpType;
use crate::rdma::consts::*;
use crate::rdma::objects::{ObjEvent, Qp};
use crate::rdma::pool::PoolRef;
use crate::rdma::wc::Completion;
use crate::req;
use crate::resp;
use crate::wqe::{CurrentRecv, SqShadow};
use crate::Rrxe;
use core::sync::atomic::Ordering;
use kernel::prelude::*;

/// Most packets a QP sends per request for an ACK (C rxe's
/// `RXE_MAX_PKT_PER_ACK`).
pub(crate) const MAX_PKT_PER_ACK: u32 = 64;
/// Most unacknowledged PSNs in flight (`RXE_MAX_UNACKED_PSNS`).
pub(crate) const MAX_UNACKED_PSNS: u32 = 128;
/// In-flight buffers per QP above which the requester pauses, and below
/// which it resumes (`RXE_INFLIGHT_SKBS_PER_QP_HIGH/LOW`).
pub(crate) const INFLIGHT_HIGH: u32 = 64;
pub(crate) const INFLIGHT_LOW: u32 = 16;
/// Steps per run of the work before it yields the CPU and requeues.
const BUDGET: u32 = 512;
/// Packets the responder, or the requester, handles in a row within one
/// round of the engines.
const BATCH: u32 = 16;

/// The requester's position.
pub(crate) struct ReqState {
    /// Next SQ slot to process.
    pub(crate) slot: u32,
    /// Next PSN to send.
    pub(crate) psn: u32,
    /// The send ring's producer index when the requester last read it:
    /// slots before it hold posted WQEs.
    pub(crate) prod_seen: u32,
    /// Reads and atomics the QP may still have outstanding.
    pub(crate) rd_atomic: u32,
    /// Packets since the last AckReq.
    pub(crate) noack: u32,
    /// The requester waits for the RNR timer.
    pub(crate) rnr_wait: bool,
    /// The lkey of the message being sent, for its next packets in this
    /// batch.
    pub(crate) keys: KeyCache,
}

/// The completer's position.
pub(crate) struct CompState {
    /// Oldest PSN not acknowledged yet.
    pub(crate) psn: u32,
    /// Retries left (ACK timeouts, sequence errors).
    pub(crate) retry_left: u8,
    /// RNR retries left (7: infinite).
    pub(crate) rnr_left: u8,
    /// The retransmit deadline; the kernel timer behind it is armed
    /// lazily (see `proto::deadline`).
    pub(crate) deadline: Deadline,
    /// A retry was already triggered for this PSN by a NAK or a gap.
    pub(crate) retried_psn: Option<u32>,
    /// Timeouts in a row without progress: each doubles the next
    /// retransmit timeout, up to `MAX_BACKOFF` doublings.
    pub(crate) backoff: u8,
    /// The end (next PSN) of what was sent when the last retry began:
    /// until everything before it is acknowledged, responses to the
    /// packets sent before the retry may still arrive, and a gap they
    /// show is no new loss.
    pub(crate) recovery_until: Option<u32>,
}

/// Most doublings of the retransmit timeout after timeouts in a row.
pub(crate) const MAX_BACKOFF: u8 = 3;

/// A READ or atomic the responder executed, kept to answer duplicates.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Resource {
    Free,
    Read {
        /// PSN of the request (= first response PSN).
        first_psn: u32,
        /// Response packets.
        npkts: u32,
        /// The MTU the responses are cut with, fixed when the READ came
        /// in: `npkts` and every replay's offsets follow from it.
        mtu: crate::proto::Mtu,
        va: u64,
        rkey: u32,
        len: u32,
        /// Responses sent so far (a long read is sent over several steps).
        sent: u32,
    },
    Atomic {
        psn: u32,
        orig: u64,
    },
}

/// The responder's position.
pub(crate) struct RespState {
    /// Next expected PSN.
    pub(crate) psn: u32,
    /// Message sequence number (completed messages, mod 2^24).
    pub(crate) msn: u32,
    /// The previous packet's opcode in the current message (sequence
    /// checks), `None` between messages.
    pub(crate) last: Option<crate::proto::Opcode>,
    /// The receive WQE the current SEND fills.
    pub(crate) wqe: CurrentRecv,
    /// Bytes placed in `wqe` so far.
    pub(crate) offset: u32,
    /// The current RDMA WRITE: next address, rkey and bytes left.
    pub(crate) write: Option<(u64, u32, u32)>,
    /// The current RDMA WRITE's length (its RETH's): a WRITE with
    /// immediate reports it in its receive completion.
    pub(crate) write_len: u32,
    /// The key of the message being placed or read, for its next packets
    /// in this batch (WRITE, SEND into a receive WQE, READ responses).
    pub(crate) keys: KeyCache,
    /// A NAK for the current gap was sent.
    pub(crate) nak_sent: bool,
    /// UC: drop packets until the next first packet.
    pub(crate) uc_drop: bool,
    /// Responder resources (READ/atomic replay).
    pub(crate) res: KVec<Resource>,
    pub(crate) res_head: usize,
    /// A READ whose responses are still being sent.
    pub(crate) read_busy: Option<usize>,
    /// An ACK held back (PSN, MSN): more requests were queued, and one
    /// ACK covers them all (see `resp::flush_ack`).
    pub(crate) ack_due: Option<(u32, u32)>,
    /// The QP errored and `IB_EVENT_QP_LAST_WQE_REACHED` went out.
    pub(crate) last_wqe_reported: bool,
}

/// Everything the engines of one QP share.
pub(crate) struct Engine {
    /// The engines' copy of the QP's attributes (`QpState::attr`). Every
    /// writer of those holds the engine's mutex and writes this copy too
    /// (`qp::modify`, [`set_error`], [`sq_drained`]), so a run reads them
    /// without the attribute lock; the lock is for the readers outside
    /// the engines (packet intake, posting, `query_qp`).
    pub(crate) attrs: Attrs,
    /// The send ring's consumer index: only the completer moves it
    /// (`comp`, with the ring's lock, under the engine's mutex), so the
    /// engines read it here without the ring's lock.
    pub(crate) sq_cons: u32,
    /// An engine failed a WQE or moved the QP to the error state in this
    /// round: no more packets in a row (see `run_locked`).
    pub(crate) halted: bool,
    pub(crate) shadow: SqShadow,
    pub(crate) req: ReqState,
    pub(crate) comp: CompState,
    pub(crate) resp: RespState,
    /// The route of this QP's packets (kept across resets: it belongs to
    /// the endpoints, which it is checked against).
    pub(crate) route: crate::pkt::RouteCache,
}

impl Engine {
    /// A fresh engine for a send ring of `slots` slots of `room` bytes
    /// (a `user` QP's shadow of it is charged to its process).
    pub(crate) fn new(slots: u32, room: usize, attrs: Attrs, user: bool) -> Result<Self> {
        Ok(Self {
            attrs,
            sq_cons: 0,
            halted: false,
            shadow: SqShadow::new(slots, room, user)?,
            req: ReqState::new(),
            comp: CompState::new(),
            resp: RespState::new(),
            route: crate::pkt::RouteCache::default(),
        })
    }

    /// Back to the state of a new QP (the QP went to RESET; its rings
    /// were emptied).
    pub(crate) fn reset(&mut self) {
        self.shadow.clear_all();
        self.sq_cons = 0;
        self.req = ReqState::new();
        self.comp = CompState::new();
        self.resp = RespState::new();
    }

    /// Forgets the responder resources (their count changed).
    pub(crate) fn drop_resources(&mut self) {
        self.resp.res = KVec::new();
        self.resp.res_head = 0;
        self.resp.read_busy = None;
    }
}

impl ReqState {
    fn new() -> Self {
        Self {
            slot: 0,
            psn: 0,
            prod_seen: 0,
            rd_atomic: 0,
            noack: 0,
            rnr_wait: false,
            keys: KeyCache::new(),
        }
    }
}

impl CompState {
    fn new() -> Self {
        Self {
            psn: 0,
            retry_left: 0,
            rnr_left: 0,
            deadline: Deadline::new(),
            retried_psn: None,
            backoff: 0,
            recovery_until: None,
        }
    }
}

impl RespState {
    fn new() -> Self {
        Self {
            psn: 0,
            msn: 0,
            last: None,
            wqe: CurrentRecv::new(),
            offset: 0,
            write: None,
            write_len: 0,
            keys: KeyCache::new(),
            nak_sent: false,
            uc_drop: false,
            res: KVec::new(),
            res_head: 0,
            read_busy: None,
            ack_due: None,
            last_wqe_reported: false,
        }
    }
}

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
        // In a system call, another QP's run is kept short: work that
        // one request starts (a long READ's responses) goes on in that
        // QP's work item, and the poster's other QPs are not kept waiting.
        run_one(&q, if doorbell { CHAIN_BUDGET } else { BUDGET });
        hops += 1;
        next = q.kick.lock().take();
    }
}

/// Most packets queued on a loopback destination that a doorbell's chain
/// still runs itself; with more, the destination's work runs it (on any
/// CPU) and the poster goes on posting (see [`doorbell`]).
const DOORBELL_CHAIN_MAX: usize = 8;

/// Packets queued on a loopback destination at which its work is queued
/// at once instead of waiting for the sender's run to end (see [`kick`]);
/// above what the requester's in-flight limit lets one run produce.
const KICK_BACKLOG: usize = 2 * INFLIGHT_HIGH as usize;

/// Steps of a destination's run in a doorbell's chain (see [`chain`]).
const CHAIN_BUDGET: u32 = 8;

/// Loopback runs that one run may chain (see [`run`]).
const MAX_HOPS: u32 = 4;

/// Packets waiting for `qp`'s engines (both queues).
fn queued(qp: &Qp<Rrxe>) -> usize {
    qp.req_pkts.len() + qp.resp_pkts.len()
}

fn run_one(qp: &Qp<Rrxe>, budget: u32) {
    // A QP being destroyed runs no more (another QP's chain may still
    // hold it).
    if !qp.alive() {
        return;
    }
    for _ in 0..RERUNS {
        {
            let mut e = qp.engine.lock();
            qp.running.store(true, Ordering::SeqCst);
            run_locked(qp, &mut e, budget);
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

/// Runs in a row of one QP for doorbells that found it running (see
/// [`run_one`]).
const RERUNS: u32 = 2;

/// `from`'s run queued packets for `to` (loopback): `to` runs when
/// `from`'s run ends (see [`run`]). If `from` already has another QP to
/// run, `to`'s work is queued.
pub(crate) fn kick(from: &Qp<Rrxe>, to: PoolRef<Qp<Rrxe>>) {
    if queued(&to) == KICK_BACKLOG {
        // `from` produces faster than a run at its end would consume (a
        // long READ response): `to` must not wait that long (its timers
        // would see no progress), so its work starts now, on any CPU.
        to.schedule();
    }
    let other = {
        let mut k = from.kick.lock();
        match &*k {
            None => {
                *k = Some(to);
                None
            }
            Some(cur) if core::ptr::eq::<Qp<Rrxe>>(&**cur, &*to) => None,
            Some(_) => Some(to),
        }
    };
    // Queued (or dropped) outside the lock.
    if let Some(q) = other {
        q.schedule();
    }
}

/// A user QP's doorbell (`post_send` system call): runs the engines here,
/// unless they run already; then that run goes on once more for the new
/// WQEs (the caller does not wait).
pub(crate) fn doorbell(qp: &Qp<Rrxe>) {
    // Neither a request nor a send completion came since the last
    // doorbell: the consumer streams (it posts without waiting on the
    // QP), and the destination works in parallel, in its own work item
    // on another CPU. A consumer that waits between posts (a ping-pong,
    // or one completion at a time) busy-polls, and a work item would wait
    // for its CPU: the doorbell runs the destination itself.
    let stream = !qp.awaited.swap(false, Ordering::Relaxed);
    // Engines running elsewhere (a loopback chain, the QP's work) run
    // once more when their run ends, on that CPU, without a wake-up.
    // Either that run sees the flag, or this one sees them stopped and
    // runs the engines itself (both may run; the mutex orders them).
    if qp.running.load(Ordering::SeqCst) {
        qp.rerun.store(true, Ordering::SeqCst);
        if qp.running.load(Ordering::SeqCst) {
            return;
        }
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
        e.halted = false;
        let mut steps = 0;
        if comp::step(qp, e, &a) {
            steps += 1;
        }
        // The responder and the requester take up to `BATCH` packets in a
        // row (the state read above holds: only the engines' own errors
        // change it, and those end the batch).
        for i in 0..BATCH {
            if (i > 0 && e.halted) || !resp::step(qp, e, &a) {
                break;
            }
            steps += 1;
        }
        // Keys are kept for one batch at most (see `KeyCache`).
        e.resp.keys.clear();
        resp::flush_ack(qp, e, &a);
        for i in 0..BATCH {
            if (i > 0 && e.halted) || !req::step(qp, e, &a) {
                break;
            }
            steps += 1;
        }
        e.req.keys.clear();
        if steps == 0 {
            if a.state == State::Sqd && a.sq_draining {
                sq_drained(qp, e);
            }
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
/// (and reported if the consumer asked).
fn sq_drained(qp: &Qp<Rrxe>, e: &mut Engine) {
    if e.req.slot != e.sq_cons {
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

/// Moves the QP to the error state (an engine found a fatal error) and
/// lets the work flush its queues; the engine's round ends.
pub(crate) fn set_error(qp: &Qp<Rrxe>, e: &mut Engine) {
    e.halted = true;
    e.attrs.state = State::Err;
    let was = {
        let mut a = qp.attr.lock();
        let was = a.state;
        a.state = State::Err;
        was
    };
    // No asynchronous event: the error completions tell the consumer
    // (as with C rxe and hardware for transport errors).
    if was != State::Err {
        qp.schedule();
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
    Completion {
        wr_id,
        status: IB_WC_WR_FLUSH_ERR,
        opcode: IB_WC_RECV,
        qp_num: qp.qp_num(),
        port_num: 1,
        ..Default::default()
    }
}

/// Transport of a QP type, for the protocol crate.
pub(crate) fn transport(t: QpType) -> crate::proto::opcode::Transport {
    use crate::proto::opcode::Transport;
    match t {
        QpType::Rc => Transport::Rc,
        QpType::Uc => Transport::Uc,
        _ => Transport::Ud,
    }
}

/// The MTU the QP's packets are cut with (`Attrs::mtu`; UD and GSI:
/// the port's, each datagram being one packet).
pub(crate) fn mtu(qp: &Qp<Rrxe>, a: &Attrs) -> crate::proto::Mtu {
    mtu_of(qp, a.mtu)
}

/// The same from the QP's `Attrs::mtu`.
pub(crate) fn mtu_of(qp: &Qp<Rrxe>, qp_mtu: u32) -> crate::proto::Mtu {
    use crate::proto::Mtu;
    let ib = match qp.qp_type {
        QpType::Rc | QpType::Uc => qp_mtu,
        _ => qp.device().port_mtu(),
    };
    Mtu::from_ib_enum(ib).unwrap_or(Mtu::MTU_256)
}

/// Counts one event on the QP's device.
pub(crate) fn count(qp: &Qp<Rrxe>, c: Counter) {
    qp.device().core().counters.inc(c);
}
