// SPDX-License-Identifier: GPL-2.0

//! The state the engines of one QP share (`Engine`), behind the QP's
//! engine mutex, and the few helpers all three engines use.

use super::wqe::{CurrentRecv, SqShadow};
use crate::mem::KeyCache;
use crate::net::tx::RouteCache;
use crate::proto::{Deadline, Msn, Psn};
use crate::qp_attr::{Attrs, State};
use crate::rdma::attrs::QpType;
use crate::rdma::ib::QpAttrMask;
use crate::rdma::objects::Qp;
use crate::Rrxe;
use core::sync::atomic::Ordering;
use kernel::prelude::*;

/// Most packets a QP sends per request for an ACK (C rxe's
/// `RXE_MAX_PKT_PER_ACK`).
pub(super) const MAX_PKT_PER_ACK: u32 = 64;
/// Most unacknowledged PSNs in flight (`RXE_MAX_UNACKED_PSNS`).
pub(super) const MAX_UNACKED_PSNS: u32 = 128;
/// In-flight buffers per QP above which the requester pauses, and below
/// which it resumes (`RXE_INFLIGHT_SKBS_PER_QP_HIGH/LOW`).
pub(super) const INFLIGHT_HIGH: u32 = 64;
pub(super) const INFLIGHT_LOW: u32 = 16;

/// The requester's position.
pub(super) struct ReqState {
    /// Next SQ slot to process.
    pub(super) slot: u32,
    /// Next PSN to send.
    pub(super) psn: Psn,
    /// The PSN after the last one ever sent (a retry moves `psn` back, not
    /// this): a response to this PSN or a later one answers nothing sent.
    pub(super) sent_end: Psn,
    /// The send ring's producer index when the requester last read it:
    /// slots before it hold posted WQEs.
    pub(super) prod_seen: u32,
    /// Reads and atomics the QP may still have outstanding.
    pub(super) rd_atomic: u32,
    /// Packets since the last AckReq.
    pub(super) noack: u32,
    /// The requester waits for the RNR timer.
    pub(super) rnr_wait: bool,
    /// A train up to this PSN failed to be built (a payload fault, a bad
    /// key, no memory): up to it packets go one by one, which meet the
    /// error where it is (`req::transmit_train`).
    pub(super) no_train_to: Option<Psn>,
    /// The lkey of the message being sent, for its next packets in this
    /// batch.
    pub(super) keys: KeyCache,
}

/// The completer's position.
pub(super) struct CompState {
    /// Oldest PSN not acknowledged yet.
    pub(super) psn: Psn,
    /// Retries left (ACK timeouts, sequence errors; [`INFINITE_RETRIES`]:
    /// infinite).
    pub(super) retry_left: u8,
    /// RNR retries left ([`INFINITE_RETRIES`]: infinite).
    pub(super) rnr_left: u8,
    /// The retransmit deadline; the kernel timer behind it is armed
    /// lazily (see `proto::deadline`).
    pub(super) deadline: Deadline,
    /// A retry was already triggered for this PSN by a NAK or a gap.
    pub(super) retried_psn: Option<Psn>,
    /// Timeouts in a row without progress: each doubles the next
    /// retransmit timeout, up to `MAX_BACKOFF` doublings.
    pub(super) backoff: u8,
    /// The end (next PSN) of what was sent when the last retry began:
    /// until everything before it is acknowledged, responses to the
    /// packets sent before the retry may still arrive, and a gap they
    /// show is no new loss.
    pub(super) recovery_until: Option<Psn>,
    /// The device's `tx_freed` when the deadline last started.
    pub(super) freed_mark: u64,
    /// Timeouts in a row put off because requests of the QP were still
    /// in this host (see `retransmit::put_off_in_host`).
    pub(super) host_waits: u8,
}

/// A retry budget of this value never runs out: an `rnr_retry` of 7 means
/// infinite RNR retries (IBA), and the transport's `retry_cnt` is read the
/// same way.
pub(super) const INFINITE_RETRIES: u8 = 7;

/// Most doublings of the retransmit timeout after timeouts in a row.
pub(super) const MAX_BACKOFF: u8 = 3;

/// Most timeouts in a row that requests still in the host put off (see
/// `retransmit::put_off_in_host`): with the back-off, about 50 timeouts' time.
pub(super) const MAX_HOST_WAITS: u8 = 8;

/// A READ or atomic the responder executed, kept to answer duplicates.
#[derive(Clone, Copy, Debug)]
pub(super) enum Resource {
    Free,
    Read {
        /// PSN of the request (= first response PSN).
        first_psn: Psn,
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
        psn: Psn,
        orig: u64,
    },
}

/// The responder's position.
pub(super) struct RespState {
    /// Next expected PSN.
    pub(super) psn: Psn,
    /// Message sequence number (completed messages, mod 2^24).
    pub(super) msn: Msn,
    /// The previous packet's opcode in the current message (sequence
    /// checks), `None` between messages.
    pub(super) last: Option<crate::proto::Opcode>,
    /// The receive WQE the current SEND fills.
    pub(super) wqe: CurrentRecv,
    /// Bytes placed in `wqe` so far.
    pub(super) offset: u32,
    /// The current RDMA WRITE: next address, rkey and bytes left.
    pub(super) write: Option<(u64, u32, u32)>,
    /// The current RDMA WRITE's length (its RETH's): a WRITE with
    /// immediate reports it in its receive completion.
    pub(super) write_len: u32,
    /// The key of the message being placed or read, for its next packets
    /// in this batch (WRITE, SEND into a receive WQE, READ responses).
    pub(super) keys: KeyCache,
    /// A NAK for the current gap was sent.
    pub(super) nak_sent: bool,
    /// UC: drop packets until the next first packet.
    pub(super) uc_drop: bool,
    /// Responder resources (READ/atomic replay).
    pub(super) res: KVec<Resource>,
    pub(super) res_head: usize,
    /// A READ whose responses are still being sent.
    pub(super) read_busy: Option<usize>,
    /// An ACK held back (PSN, MSN): more requests were queued, and one
    /// ACK covers them all (see `resp::flush_ack`).
    pub(super) ack_due: Option<(Psn, Msn)>,
    /// The QP errored and `IB_EVENT_QP_LAST_WQE_REACHED` went out.
    pub(super) last_wqe_reported: bool,
}

/// Everything the engines of one QP share.
pub(crate) struct Engine {
    /// The engines' copy of the QP's attributes (`QpState::attr`). Every
    /// writer of those holds the engine's mutex and writes this copy too
    /// (`qp::modify`, [`set_error`], [`sq_drained`]), so a run reads them
    /// without the attribute lock; the lock is for the readers outside
    /// the engines (packet intake, posting, `query_qp`).
    pub(super) attrs: Attrs,
    /// The send ring's consumer index: only the completer moves it
    /// (`comp`, with the ring's lock, under the engine's mutex), so the
    /// engines read it here without the ring's lock.
    pub(super) sq_cons: u32,
    /// An engine failed a WQE or moved the QP to the error state in this
    /// round: no more packets in a row (see `run_locked`).
    pub(super) halted: bool,
    /// An engine found memory paged on demand not in, and waits for its
    /// fault (see [`park`]).
    pub(super) parked: bool,
    pub(super) shadow: SqShadow,
    pub(super) req: ReqState,
    pub(super) comp: CompState,
    pub(super) resp: RespState,
    /// The route of this QP's packets (kept across resets: it belongs to
    /// the endpoints, which it is checked against).
    pub(super) route: RouteCache,
}

impl Engine {
    /// The requester's next PSN and the responder's next expected one, as
    /// `query_qp` reports them (C rxe's `rxe_qp_to_attr`): what the QP's
    /// traffic moved them to since `modify_qp` set them.
    pub(crate) fn live_psns(&self) -> (u32, u32) {
        (self.req.psn.get(), self.resp.psn.get())
    }

    /// A fresh engine for a send ring of `slots` slots of `room` bytes
    /// (a `user` QP's shadow of it is charged to its process).
    pub(crate) fn new(slots: u32, room: usize, attrs: Attrs, user: bool) -> Result<Self> {
        Ok(Self {
            attrs,
            sq_cons: 0,
            halted: false,
            parked: false,
            shadow: SqShadow::new(slots, room, user)?,
            req: ReqState::new(),
            comp: CompState::new(),
            resp: RespState::new(),
            route: RouteCache::default(),
        })
    }

    /// Follows a `modify_qp` that changed the attributes of `mask`
    /// to `a`, the QP's attributes after it; `res`: the responder
    /// resources for its `max_dest_rd_atomic`, if the mask has it.
    pub(crate) fn follow(&mut self, a: &Attrs, mask: QpAttrMask, res: Option<Resources>) {
        if mask.contains(QpAttrMask::MAX_QP_RD_ATOMIC) {
            self.req.rd_atomic = u32::from(a.max_rd_atomic);
        }
        if let Some(res) = res {
            self.set_resources(res);
        }
        if mask.contains(QpAttrMask::RETRY_CNT) {
            self.comp.retry_left = a.retry_cnt;
        }
        if mask.contains(QpAttrMask::RNR_RETRY) {
            self.comp.rnr_left = a.rnr_retry;
        }
        // The PSN attributes are IBA's 24-bit numbers (`qp::modify` masks
        // them), typed here once.
        if mask.contains(QpAttrMask::RQ_PSN) {
            self.resp.psn = Psn::new(a.rq_psn);
        }
        if mask.contains(QpAttrMask::SQ_PSN) {
            let psn = Psn::new(a.sq_psn);
            self.req.psn = psn;
            self.req.sent_end = psn;
            self.comp.psn = psn;
        }
        self.attrs = *a;
    }

    /// Back to the state of a new QP with the attributes `a` (the QP went
    /// to RESET; its rings were emptied). The initiator depth and the
    /// retry budgets are kept, as the attributes they come from.
    pub(crate) fn reset(&mut self, a: &Attrs) {
        self.shadow.clear_all();
        self.sq_cons = 0;
        self.parked = false;
        self.req = ReqState::new();
        self.comp = CompState::new();
        self.resp = RespState::new();
        self.req.rd_atomic = u32::from(a.max_rd_atomic);
        self.comp.retry_left = a.retry_cnt;
        self.comp.rnr_left = a.rnr_retry;
        self.attrs = *a;
    }

    /// Takes `res` as the responder resources (their count changed):
    /// what the old ones held is forgotten.
    fn set_resources(&mut self, res: Resources) {
        self.resp.res = res.0;
        self.resp.res_head = 0;
        self.resp.read_busy = None;
    }
}

/// A QP's responder resources, all free, for `max_dest_rd_atomic`
/// (at least one): allocated by `modify_qp`, which may sleep and can
/// fail cleanly, never by the responder. The QP's work runs on a
/// memory-reclaim workqueue, and a storage consumer's QP (NVMe-oF under
/// writeback) must not wait there on reclaim, nor NAK a READ for want of
/// memory (C rxe allocates them in `modify_qp` too).
pub(crate) struct Resources(KVec<Resource>);

impl Resources {
    /// Resources for a `max_dest_rd_atomic` of `n`.
    pub(crate) fn new(n: u8) -> Result<Self> {
        let n = usize::from(n).max(1);
        let mut v = KVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            v.push(Resource::Free, GFP_KERNEL)?;
        }
        Ok(Self(v))
    }
}

impl Engine {
    /// Slots of the send ring.
    pub(super) fn shadow_slots(&self) -> u32 {
        self.shadow.slots()
    }

    /// The slot after `slot` in the send ring (no division: nothing here
    /// can panic).
    pub(super) fn next_slot(&self, slot: u32) -> u32 {
        if slot.saturating_add(1) >= self.shadow_slots() {
            0
        } else {
            slot + 1
        }
    }
}

impl ReqState {
    fn new() -> Self {
        Self {
            slot: 0,
            psn: Psn::ZERO,
            sent_end: Psn::ZERO,
            prod_seen: 0,
            rd_atomic: 0,
            noack: 0,
            rnr_wait: false,
            no_train_to: None,
            keys: KeyCache::new(),
        }
    }
}

impl CompState {
    fn new() -> Self {
        Self {
            psn: Psn::ZERO,
            retry_left: 0,
            rnr_left: 0,
            deadline: Deadline::new(),
            retried_psn: None,
            backoff: 0,
            recovery_until: None,
            freed_mark: 0,
            host_waits: 0,
        }
    }
}

impl RespState {
    fn new() -> Self {
        Self {
            psn: Psn::ZERO,
            msn: Msn::ZERO,
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

/// Moves the QP to the error state (an engine found a fatal error) and
/// lets the work flush its queues; the engine's round ends.
pub(super) fn set_error(qp: &Qp<Rrxe>, e: &mut Engine) {
    e.halted = true;
    e.attrs.state = State::Err;
    let was = {
        let mut a = qp.attr.lock();
        let was = a.state;
        a.state = State::Err;
        was
    };
    // No asynchronous event here: the error completions tell the
    // consumer (as with C rxe and hardware for transport errors). The
    // responder raises one for an access violation that no receive WQE
    // reports (`resp::access_error_event`).
    if was != State::Err {
        qp.schedule();
    }
}

/// An engine found memory paged on demand not in ([`Halt::WouldFault`]),
/// whose fault a work item of the QP's takes (`QpTask::fault_in`): the
/// engines stop where they are, their state as it was before the access
/// (a packet that needed it back at the head of its queue), and run again
/// when the fault's end queues the QP's work. No run waits for the
/// owner's memory; `modify_qp` and `destroy_qp` find the engines idle.
///
/// [`Halt::WouldFault`]: crate::mem::Halt::WouldFault
pub(super) fn park(e: &mut Engine) {
    e.parked = true;
    e.halted = true;
}

/// Whether the engines are parked (see [`park`]) and their fault still
/// under way; once it ended, they are not any more.
pub(super) fn parked(qp: &Qp<Rrxe>, e: &mut Engine) -> bool {
    if e.parked && qp.fault_busy() {
        return true;
    }
    e.parked = false;
    false
}

/// Transport of a QP type, for the protocol crate.
pub(super) fn transport(t: QpType) -> crate::proto::opcode::Transport {
    use crate::proto::opcode::Transport;
    match t {
        QpType::Rc => Transport::Rc,
        QpType::Uc => Transport::Uc,
        _ => Transport::Ud,
    }
}

/// The MTU the QP's packets are cut with (`Attrs::mtu`; UD and GSI:
/// the port's, each datagram being one packet).
pub(super) fn mtu(qp: &Qp<Rrxe>, a: &Attrs) -> crate::proto::Mtu {
    mtu_of(qp, a.mtu)
}

pub(super) use crate::counters::count;
use crate::qp_attr::mtu_of;

/// Whether the QP has `high` or more packets in flight (sent, and not yet
/// freed by the stack or by the loopback destination that queued them);
/// if so, the transmit destructor wakes the QP once fewer than `low` are
/// (`qp::tx_done`).
pub(super) fn inflight_at(qp: &Qp<Rrxe>, high: u32, low: u32) -> bool {
    if qp.skb_out.load(Ordering::SeqCst) < high {
        return false;
    }
    // Ask the transmit destructor for a wake-up, then look again: a
    // packet freed in between would otherwise wake nobody.
    qp.wake_below.store(low, Ordering::SeqCst);
    if qp.skb_out.load(Ordering::SeqCst) >= high {
        return true;
    }
    qp.wake_below.store(0, Ordering::SeqCst);
    false
}
