// SPDX-License-Identifier: GPL-2.0

//! Queue pairs: creation with the send and receive rings, the IBA state
//! machine and attributes (modify/query), and destruction.
//!
//! Locking: `QpState::attr` guards the IBA attributes and the state;
//! `sq` and `rq` each guard a ring (posting from kernel consumers may
//! happen in any context, so all three disable interrupts). They are never
//! nested. Lifetime: ib_core's create to destroy; the data path reaches a
//! QP through the device's QP pool, whose references destroy waits for.

use crate::av::Av;
use crate::counters::QpCounters;
use crate::engine::Engine;
use crate::new_irq_spinlock;
use crate::param;
use crate::qp_attr::{Attrs, State};
use crate::queue::{Dir, Queue};
use crate::quota::{Charge, Kind};
use crate::rdma::attrs::{modify_qp_is_ok, AhAttrOut, QpAttr, QpAttrIn, QpCap, QpInitAttr, QpType};
use crate::rdma::consts::{IB_MTU_256, IB_MTU_4096};
use crate::rdma::error::eopnotsupp;
use crate::rdma::ib::{Access, QpAttrMask};
use crate::rdma::mr::KernelMem;
use crate::rdma::objects::{Creating, KQp, Pd, Qp, TxKind};
use crate::rdma::pool::Handle;
use crate::rdma::pool::PoolRef;
use crate::rdma::skb::SkbQueue;
use crate::rdma::stats::ResAttrs;
use crate::rdma::sync::IrqSpinLock;
use crate::rdma::task::{Owner, QpTimer};
use crate::rdma::uapi::{self, CreateQpResp, MmInfo};
use crate::rdma::udata::UData;
use crate::Rrxe;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use kernel::c_str;
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::sync::Mutex;

/// The access flags a QP may grant to remote peers.
/// (ib_core's set: the passive side of rdma_cm asks for the flush rights
/// too, as the device reports them.)
const ACCESS_SUPPORTED_QP: Access =
    Access::from_raw(((Access::FLUSH_PERSISTENT.raw() << 1) - 1) | Access::OPTIONAL.raw());

/// A send ring with its limits.
pub(crate) struct SendQueue {
    pub(crate) queue: Queue,
    pub(crate) max_wr: u32,
    pub(crate) max_sge: u32,
    pub(crate) max_inline: u32,
}

/// A receive ring with its limits.
pub(crate) struct RecvQueue {
    pub(crate) queue: Queue,
    pub(crate) max_wr: u32,
    pub(crate) max_sge: u32,
}

/// Driver state of a QP.
#[pin_data]
pub(crate) struct QpState {
    pub(crate) qp_type: QpType,
    /// The rings' mmap offers (RQ, SQ), reported to user space after create.
    mi: (MmInfo, MmInfo),
    pub(crate) is_user: bool,
    /// What the device's local DMA lkey reaches in this QP's work
    /// requests: all kernel memory for a kernel QP, nothing for a user one.
    pub(crate) kernel_mem: Option<KernelMem>,
    pub(crate) sq_sig_all: bool,
    #[pin]
    pub(crate) attr: IrqSpinLock<Attrs>,
    #[pin]
    pub(crate) sq: IrqSpinLock<SendQueue>,
    /// `None` when the QP receives from an SRQ.
    #[pin]
    pub(crate) rq: IrqSpinLock<Option<RecvQueue>>,
    /// The protocol engines' state; only the QP's work and modify/query
    /// take it (process context).
    #[pin]
    pub(crate) engine: Mutex<Engine>,
    /// Responses (ACKs, read responses) waiting for the completer.
    #[pin]
    pub(crate) resp_pkts: SkbQueue,
    /// Requests waiting for the responder.
    #[pin]
    pub(crate) req_pkts: SkbQueue,
    /// Packets sent and not yet freed by the stack.
    pub(crate) skb_out: AtomicU32,
    /// Of those, the requester's (requests, not ACKs or responses).
    pub(crate) req_out: AtomicU32,
    /// Of those, trains of requests (`net::tx::send_train`): a train is
    /// one buffer however many packets it holds, so at most
    /// `net::tx::TRAINS_OUT` of them are out at a time.
    pub(crate) trains_out: AtomicU32,
    /// The requester, or a long READ's responses, paused on `skb_out`:
    /// the count below which `qp_tx_done` wakes the QP (0: none waits;
    /// see `engine::state::inflight_at`).
    pub(crate) wake_below: AtomicU32,
    /// The retransmit timer fired; the completer handles it.
    pub(crate) timeout_fired: AtomicBool,
    /// The RNR wait is over; the requester resumes.
    pub(crate) rnr_fired: AtomicBool,
    /// The engines run (someone holds `engine` in `engine::run`): a
    /// doorbell then leaves the new WQEs to that run instead of waiting
    /// for the mutex.
    pub(crate) running: AtomicBool,
    /// The send and receive PSNs as the engines last left them (send PSN
    /// in the high half), for `query_qp`: it takes no engine mutex, so a
    /// query, which any user may have done to any QP (`rdma res show
    /// qp`), never waits behind another user's QP's run.
    pub(crate) psns: AtomicU64,
    /// Its own counters while bound to a counter of `rdma statistic qp`.
    pub(crate) counts: QpCounters,
    /// A doorbell found the engines running: the run goes on once more
    /// for the new WQEs (see `engine::doorbell`).
    pub(crate) rerun: AtomicBool,
    /// Since the QP's last doorbell, its responder took a request or its
    /// completer posted a send completion: the consumer waits on the QP
    /// between posts (a ping-pong, or one completion at a time), and a
    /// doorbell runs the engines and the destination of its packets
    /// itself; otherwise, on an RC QP, it queues the QP's work (see
    /// `engine::doorbell`).
    pub(crate) awaited: AtomicBool,
    /// A QP of this device that this QP's current run sent packets to
    /// (loopback): the run ends by running that QP's engines itself
    /// (`engine::run`) instead of waking its work.
    #[pin]
    pub(crate) kick: IrqSpinLock<Option<PoolRef<Qp<Rrxe>>>>,
    /// A user QP's charge to its user.
    charge: Option<Charge>,
}

/// Checks requested capabilities against the device's limits.
fn check_cap(cap: &QpCap, has_srq: bool) -> Result {
    if cap.max_send_wr > param::MAX_QP_WR
        || cap.max_send_sge > param::MAX_SGE
        || cap.max_inline_data > param::MAX_INLINE_DATA
    {
        return Err(EINVAL);
    }
    if !has_srq && (cap.max_recv_wr > param::MAX_QP_WR || cap.max_recv_sge > param::MAX_SGE) {
        return Err(EINVAL);
    }
    Ok(())
}

/// `create_qp`: checks the request and builds the rings.
pub(crate) fn create(
    pd: &Pd<Rrxe>,
    init: &mut QpInitAttr<'_>,
    udata: &UData<'_>,
) -> Result<impl PinInit<QpState, Error>> {
    let (qp_type, cap) = check_create(pd, init, udata)?;
    let charge = pd.charge(Kind::Qp)?;
    let room = send_room(&cap);
    let (sq, sq_mi) = send_ring(&cap, room, udata)?;
    let (rq, rq_mi) = recv_ring(&cap, init.has_srq(), udata)?;
    init.set_cap(QpCap {
        max_send_wr: sq.max_wr,
        max_send_sge: sq.max_sge,
        max_inline_data: sq.max_inline,
        max_recv_wr: rq.as_ref().map_or(cap.max_recv_wr, |rq| rq.max_wr),
        ..cap
    });
    let attrs = reset_attrs();
    let is_user = udata.is_user();
    let kernel_mem = udata.kernel_mem();
    // The shadow's data area holds at least an ATOMIC WRITE's 8-byte
    // value, which librxe puts in the slot whatever its SGE and inline
    // room (a ring slot is rounded up to a power of two, so C rxe finds
    // it there even on a QP with neither).
    let engine = Engine::new(sq.queue.slots(), room.max(8), attrs, is_user)?;
    let sq_sig_all = init.sq_sig_all();
    Ok(try_pin_init!(QpState {
        qp_type,
        mi: (rq_mi, sq_mi),
        is_user,
        kernel_mem,
        sq_sig_all,
        attr <- new_irq_spinlock!(attrs, "QpState::attr"),
        sq <- new_irq_spinlock!(sq, "QpState::sq"),
        rq <- new_irq_spinlock!(rq, "QpState::rq"),
        engine <- new_mutex!(engine, "QpState::engine"),
        // (From this device, a long READ's responses come while fewer
        // than 1024 of its responder's packets are in flight, and
        // requests at most 128 unacked PSNs per RC sender; from the
        // network, or once detached, in no sender's in-flight limit.)
        resp_pkts <- SkbQueue::new(8192),
        req_pkts <- SkbQueue::new(1024),
        skb_out: AtomicU32::new(0),
        req_out: AtomicU32::new(0),
        trains_out: AtomicU32::new(0),
        wake_below: AtomicU32::new(0),
        timeout_fired: AtomicBool::new(false),
        rnr_fired: AtomicBool::new(false),
        running: AtomicBool::new(false),
        psns: AtomicU64::new(0),
        counts: QpCounters::new(),
        rerun: AtomicBool::new(false),
        awaited: AtomicBool::new(false),
        kick <- new_irq_spinlock!(None, "QpState::kick"),
        charge,
    }? Error))
}

/// Checks a `create_qp` request: the QP type, the user-space buffers, the
/// flags and CQs, the capabilities, the GSI QP's port, and room for one
/// more QP. Returns the type and the requested capabilities.
fn check_create(
    pd: &Pd<Rrxe>,
    init: &QpInitAttr<'_>,
    udata: &UData<'_>,
) -> Result<(QpType, QpCap)> {
    let qp_type = init.qp_type();
    match qp_type {
        QpType::Rc | QpType::Uc | QpType::Ud | QpType::Gsi => {}
        _ => return Err(eopnotsupp()),
    }
    if udata.is_user()
        && (udata.inlen() != 0 || udata.outlen() < core::mem::size_of::<CreateQpResp>())
    {
        return Err(EINVAL);
    }
    if init.create_flags() != 0 {
        return Err(eopnotsupp());
    }
    if !init.has_cqs() {
        return Err(EINVAL);
    }
    let cap = init.cap();
    check_cap(&cap, init.has_srq())?;
    if qp_type == QpType::Gsi && (init.port_num() != 1 || pd.device().has_gsi()) {
        return Err(EINVAL);
    }
    pd.device().qp_pool().count_check()?;
    Ok((qp_type, cap))
}

/// The room a send slot has after the WQE header: either the SGEs or the
/// inline data, whichever is larger.
fn send_room(cap: &QpCap) -> usize {
    (cap.max_send_sge as usize * uapi::SGE_SIZE).max(cap.max_inline_data as usize)
}

/// Builds the send ring, slots of `room` after the WQE header, and its
/// offer to user space.
fn send_ring(cap: &QpCap, room: usize, udata: &UData<'_>) -> Result<(SendQueue, MmInfo)> {
    let elem = uapi::SEND_WQE_SIZE + room;
    let (mut queue, max_wr) = Queue::new(cap.max_send_wr, elem, Dir::FromClient, udata.is_user())?;
    let mi = offer(&mut queue, udata)?;
    let sq = SendQueue {
        queue,
        max_wr,
        max_sge: (room / uapi::SGE_SIZE) as u32,
        max_inline: room as u32,
    };
    Ok((sq, mi))
}

/// Builds the receive ring and its offer to user space; no ring for a QP
/// that receives from an SRQ.
fn recv_ring(cap: &QpCap, has_srq: bool, udata: &UData<'_>) -> Result<(Option<RecvQueue>, MmInfo)> {
    if has_srq {
        return Ok((None, uapi::mminfo(0, 0)));
    }
    let elem = uapi::RECV_WQE_SIZE + cap.max_recv_sge as usize * uapi::SGE_SIZE;
    let (mut queue, max_wr) = Queue::new(cap.max_recv_wr, elem, Dir::FromClient, udata.is_user())?;
    let mi = offer(&mut queue, udata)?;
    let rq = RecvQueue {
        queue,
        max_wr,
        max_sge: cap.max_recv_sge,
    };
    Ok((Some(rq), mi))
}

/// A ring's mmap offer to user space (an empty one for a kernel QP); made
/// before the ring goes under its lock (the offer allocates).
fn offer(queue: &mut Queue, udata: &UData<'_>) -> Result<MmInfo> {
    match udata.ucontext::<Rrxe>() {
        Some(u) => queue.expose(u),
        None => Ok(uapi::mminfo(0, 0)),
    }
}

/// The attributes of a new QP: in RESET, on port 1, with the smallest
/// path MTU and nothing else set.
fn reset_attrs() -> Attrs {
    Attrs {
        state: State::Reset,
        path_mtu: IB_MTU_256,
        mtu: IB_MTU_256,
        path_mig_state: 0,
        qkey: 0,
        rq_psn: 0,
        sq_psn: 0,
        dest_qp_num: 0,
        dest: None,
        access: Access::NONE,
        pkey_index: 0,
        alt_pkey_index: 0,
        en_sqd_async_notify: 0,
        sq_draining: false,
        max_rd_atomic: 0,
        max_dest_rd_atomic: 0,
        min_rnr_timer: 0,
        port_num: 1,
        timeout: 0,
        retry_cnt: 0,
        rnr_retry: 0,
        alt_port_num: 0,
        alt_timeout: 0,
        pri_av: Av::default(),
        alt_av: Av::default(),
    }
}

/// After create: a QPN (QP1 for the GSI QP), and the rings offered to user
/// space in the order librxe reads them (RQ, then SQ).
pub(crate) fn created(qp: Creating<'_, KQp, Rrxe>, udata: &mut UData<'_>) -> Result {
    let dev = qp.device();
    // A user process posts and goes on running (busy-polling its CQ): its
    // QP's work goes to another CPU. A kernel consumer posts and sleeps
    // until the completion: its QP's work runs on this CPU meanwhile, on a
    // workqueue of its own that no user QP's work can fill. Set before
    // the QP can be found (and its work queued) by number.
    // A charged user's QP runs on that user's own workqueue.
    let wq = qp.charge.as_ref().map(|c| c.share().workqueue());
    qp.set_owner(
        if qp.is_user {
            Owner::User
        } else {
            Owner::Kernel
        },
        wq,
    )?;
    let index = dev.qp_pool().insert(&qp)?;
    if qp.qp_type == QpType::Gsi {
        dev.set_gsi(qp.handle().ok_or(EINVAL)?)?;
        qp.set_qp_num(1);
    } else {
        qp.set_qp_num(index);
    }
    if qp.is_user {
        udata.write(&CreateQpResp {
            rq_mi: qp.mi.0,
            sq_mi: qp.mi.1,
        })?;
    }
    Ok(())
}

/// `modify_qp`: decodes and checks the attributes in `mask`, checks the
/// transition against the QP's state, applies the change, then hands the
/// engines their copy and does what entering the new state asks.
pub(crate) fn modify(qp: &Qp<Rrxe>, attr_in: &QpAttrIn<'_>, mask: QpAttrMask) -> Result {
    let change = Change::decode(qp, attr_in, mask)?;
    // Before anything changes: an allocation that fails leaves the QP as
    // it was.
    let res = change
        .max_dest_rd_atomic
        .map(crate::engine::Resources::new)
        .transpose()?;

    // Lock order: the engine (a mutex), then the attributes.
    let mut e = qp.engine.lock();
    let mut a = qp.attr.lock();
    let step = change.transition(&a, qp.qp_type)?;
    change.apply(&mut a, step, qp.device());
    let kept = *a;
    drop(a);
    // The engines follow (see `Engine::attrs`).
    e.follow(&kept, mask, res);
    if step.is_some() {
        after_transition(qp, &mut e, &kept);
    }
    crate::engine::publish_psns(qp, &e);
    Ok(())
}

/// A `modify_qp` request, decoded and checked against the device's limits
/// (before any lock is taken): each attribute the mask names, as the QP
/// is to hold it. Only the state transition waits for the QP's state
/// (`Change::transition`).
struct Change {
    /// ib_core's mask, for the transition table and the engines.
    mask: QpAttrMask,
    /// The state the caller says the QP is in (`IB_QP_CUR_STATE`).
    cur_state: Option<u32>,
    /// The state to enter (`IB_QP_STATE`), as ib_core's enum: the
    /// transition check decides whether it is one.
    state: Option<u32>,
    pri_av: Option<Av>,
    alt_path: Option<AltPath>,
    port_num: Option<u32>,
    access: Option<Access>,
    path_mtu: Option<u32>,
    /// Rounded up to a power of two.
    max_rd_atomic: Option<u8>,
    /// Rounded up to a power of two.
    max_dest_rd_atomic: Option<u8>,
    timeout: Option<u8>,
    en_sqd_async_notify: Option<u8>,
    pkey_index: Option<u16>,
    qkey: Option<u32>,
    retry_cnt: Option<u8>,
    rnr_retry: Option<u8>,
    min_rnr_timer: Option<u8>,
    path_mig_state: Option<u32>,
    /// PSNs and the QPN, cut to their 24 bits.
    rq_psn: Option<u32>,
    sq_psn: Option<u32>,
    dest_qp_num: Option<u32>,
    /// The QP numbered `dest_qp_num` now, if one of this device is.
    dest: Option<Handle>,
}

/// The alternate path (`IB_QP_ALT_PATH`).
struct AltPath {
    av: Av,
    port_num: u32,
    pkey_index: u16,
    timeout: u8,
}

/// A state change that passed the transition check.
#[derive(Clone, Copy)]
struct Step {
    /// The state left, as the transition check took it.
    from: u32,
    to: State,
}

impl Change {
    /// Checks the attributes `mask` names (the vectors first, then the
    /// plain fields) and takes them from `attr_in`.
    fn decode(qp: &Qp<Rrxe>, attr_in: &QpAttrIn<'_>, mask: QpAttrMask) -> Result<Self> {
        if mask.without(QpAttrMask::STANDARD) != QpAttrMask::NONE {
            return Err(eopnotsupp());
        }
        let attr = attr_in.get();
        let on = |bit: QpAttrMask| mask.contains(bit);
        // AVs are checked and built before taking the lock.
        let gid_len = param::PORT_GID_TBL_LEN as u32;
        let pri_av = on(QpAttrMask::AV)
            .then(|| Av::from_attr(&attr_in.ah_attr(), gid_len))
            .transpose()?;
        let alt_path = on(QpAttrMask::ALT_PATH)
            .then(|| AltPath::decode(attr_in, gid_len))
            .transpose()?;
        check_attrs(qp, attr, mask)?;
        Ok(Self {
            mask,
            cur_state: on(QpAttrMask::CUR_STATE).then_some(attr.cur_qp_state),
            state: on(QpAttrMask::STATE).then_some(attr.qp_state),
            pri_av,
            alt_path,
            port_num: on(QpAttrMask::PORT).then_some(attr.port_num),
            access: on(QpAttrMask::ACCESS_FLAGS)
                .then_some(Access::from_raw(attr.qp_access_flags as u32)),
            path_mtu: on(QpAttrMask::PATH_MTU).then_some(attr.path_mtu),
            max_rd_atomic: on(QpAttrMask::MAX_QP_RD_ATOMIC).then(|| round_pow2(attr.max_rd_atomic)),
            max_dest_rd_atomic: on(QpAttrMask::MAX_DEST_RD_ATOMIC)
                .then(|| round_pow2(attr.max_dest_rd_atomic)),
            timeout: on(QpAttrMask::TIMEOUT).then_some(attr.timeout),
            en_sqd_async_notify: on(QpAttrMask::EN_SQD_ASYNC_NOTIFY)
                .then_some(attr.en_sqd_async_notify),
            pkey_index: on(QpAttrMask::PKEY_INDEX).then_some(attr.pkey_index),
            qkey: on(QpAttrMask::QKEY).then_some(attr.qkey),
            retry_cnt: on(QpAttrMask::RETRY_CNT).then_some(attr.retry_cnt),
            rnr_retry: on(QpAttrMask::RNR_RETRY).then_some(attr.rnr_retry),
            min_rnr_timer: on(QpAttrMask::MIN_RNR_TIMER).then_some(attr.min_rnr_timer),
            path_mig_state: on(QpAttrMask::PATH_MIG_STATE).then_some(attr.path_mig_state),
            rq_psn: on(QpAttrMask::RQ_PSN).then_some(attr.rq_psn & 0x00ff_ffff),
            sq_psn: on(QpAttrMask::SQ_PSN).then_some(attr.sq_psn & 0x00ff_ffff),
            dest_qp_num: on(QpAttrMask::DEST_QPN).then_some(attr.dest_qp_num & 0x00ff_ffff),
            dest: on(QpAttrMask::DEST_QPN)
                .then(|| qp.device().core().qp(attr.dest_qp_num & 0x00ff_ffff))
                .flatten()
                .and_then(|q| q.handle()),
        })
    }

    /// Checks the transition against the QP's attributes `a` (under their
    /// lock): `None` when the request leaves the state alone.
    fn transition(&self, a: &Attrs, qp_type: QpType) -> Result<Option<Step>> {
        // The current state the caller names must be the QP's: trusted, it
        // let a QP in RESET go to RTS as from RTR, one in ERR back to RTS
        // without a reset, and one in RTS take a new SQ PSN under WQEs
        // still out.
        let from = a.state.raw();
        if self.cur_state.is_some_and(|c| c != from) {
            return Err(EINVAL);
        }
        if !modify_qp_is_ok(from, self.state.unwrap_or(from), qp_type, self.mask) {
            return Err(EINVAL);
        }
        // While the send queue drains, only the error state (C rxe allows
        // nothing else either, though it checks this only with a state).
        if from == State::Sqd.raw() && a.sq_draining && self.state != Some(State::Err.raw()) {
            return Err(EINVAL);
        }
        let Some(to) = self.state else {
            return Ok(None);
        };
        let to = State::from_raw(to).ok_or(EINVAL)?;
        Ok(Some(Step { from, to }))
    }

    /// Writes the change into the QP's attributes `a` (under their lock);
    /// the path MTU is capped by `dev`'s port MTU.
    fn apply(&self, a: &mut Attrs, step: Option<Step>, dev: &Rrxe) {
        if let Some(step) = step {
            a.state = step.to;
            match step.to {
                State::Reset => a.sq_draining = false,
                State::Sqd if step.from != State::Sqd.raw() => a.sq_draining = true,
                _ => {}
            }
        }
        if let Some(p) = &self.alt_path {
            a.alt_av = p.av;
            a.alt_port_num = p.port_num;
            a.alt_pkey_index = p.pkey_index;
            a.alt_timeout = p.timeout;
        }
        if let Some(m) = self.path_mtu {
            a.path_mtu = m;
            a.mtu = m.min(dev.port_mtu());
        }
        set(&mut a.pri_av, self.pri_av);
        set(&mut a.port_num, self.port_num);
        set(&mut a.access, self.access);
        set(&mut a.max_rd_atomic, self.max_rd_atomic);
        set(&mut a.max_dest_rd_atomic, self.max_dest_rd_atomic);
        set(&mut a.timeout, self.timeout);
        set(&mut a.en_sqd_async_notify, self.en_sqd_async_notify);
        set(&mut a.pkey_index, self.pkey_index);
        set(&mut a.qkey, self.qkey);
        set(&mut a.retry_cnt, self.retry_cnt);
        set(&mut a.rnr_retry, self.rnr_retry);
        set(&mut a.min_rnr_timer, self.min_rnr_timer);
        set(&mut a.path_mig_state, self.path_mig_state);
        set(&mut a.rq_psn, self.rq_psn);
        set(&mut a.sq_psn, self.sq_psn);
        set(&mut a.dest_qp_num, self.dest_qp_num);
        if self.dest_qp_num.is_some() {
            a.dest = self.dest;
        }
    }
}

impl AltPath {
    /// Checks the alternate port and timeout, then the vector.
    fn decode(attr_in: &QpAttrIn<'_>, gid_len: u32) -> Result<Self> {
        let attr = attr_in.get();
        if attr.alt_port_num != 1 || attr.alt_timeout > 31 {
            return Err(EINVAL);
        }
        Ok(Self {
            av: Av::from_attr(&attr_in.alt_ah_attr(), gid_len)?,
            port_num: attr.alt_port_num,
            pkey_index: attr.alt_pkey_index,
            timeout: attr.alt_timeout,
        })
    }
}

/// Writes `v` into `field` when the request names it.
fn set<T>(field: &mut T, v: Option<T>) {
    if let Some(v) = v {
        *field = v;
    }
}

/// Checks the plain attributes `mask` names (after the vectors) against
/// the device's limits and the QP's type.
fn check_attrs(qp: &Qp<Rrxe>, attr: &QpAttr, mask: QpAttrMask) -> Result {
    if mask.contains(QpAttrMask::PORT) && attr.port_num != 1 {
        return Err(EINVAL);
    }
    if mask.contains(QpAttrMask::CAP) {
        check_cap(&attr.cap, qp.srq().is_some())?;
    }
    if mask.contains(QpAttrMask::ACCESS_FLAGS) {
        if !matches!(qp.qp_type, QpType::Rc | QpType::Uc) {
            return Err(EINVAL);
        }
        if Access::from_raw(attr.qp_access_flags as u32).without(ACCESS_SUPPORTED_QP)
            != Access::NONE
        {
            return Err(EINVAL);
        }
    }
    if mask.contains(QpAttrMask::PATH_MTU) && !(IB_MTU_256..=IB_MTU_4096).contains(&attr.path_mtu) {
        return Err(EINVAL);
    }
    if mask.contains(QpAttrMask::MAX_QP_RD_ATOMIC)
        && u32::from(attr.max_rd_atomic) > param::MAX_QP_RD_ATOM
    {
        return Err(EINVAL);
    }
    if mask.contains(QpAttrMask::MAX_DEST_RD_ATOMIC)
        && u32::from(attr.max_dest_rd_atomic) > param::MAX_QP_RD_ATOM
    {
        return Err(EINVAL);
    }
    if mask.contains(QpAttrMask::TIMEOUT) && attr.timeout > 31 {
        return Err(EINVAL);
    }
    // Both are 3-bit fields; above 7 they read as 7, infinite retries.
    if mask.contains(QpAttrMask::RETRY_CNT) && attr.retry_cnt > 7 {
        return Err(EINVAL);
    }
    if mask.contains(QpAttrMask::RNR_RETRY) && attr.rnr_retry > 7 {
        return Err(EINVAL);
    }
    Ok(())
}

/// After a state change (the attribute lock dropped, the engine `e` still
/// held): a QP entering RESET stops its timers and empties its packet
/// queues and rings, and its engines start over with the attributes
/// `kept`; any other state lets the work run.
fn after_transition(qp: &Qp<Rrxe>, e: &mut Engine, kept: &Attrs) {
    match kept.state {
        State::Reset => {
            // The WQEs go without completions: their buffers are the
            // owner's again, and packets sent from them without a copy
            // read them no more.
            qp.revoke_zcopy();
            qp.disarm_timer(QpTimer::Retransmit);
            qp.disarm_timer(QpTimer::Rnr);
            qp.req_pkts.purge();
            qp.resp_pkts.purge();
            qp.timeout_fired.store(false, Ordering::Relaxed);
            qp.rnr_fired.store(false, Ordering::Relaxed);
            qp.sq.lock().queue.reset();
            if let Some(rq) = qp.rq.lock().as_mut() {
                rq.queue.reset();
            }
            e.reset(kept);
        }
        // Posted WQEs may wait; an errored QP flushes them.
        _ => qp.schedule(),
    }
}

fn round_pow2(v: u8) -> u8 {
    if v == 0 {
        0
    } else {
        // At most 128 (checked against MAX_QP_RD_ATOM), so this fits.
        (u32::from(v).next_power_of_two()).min(128) as u8
    }
}

/// The QP's driver details for `rdma res show qp -dd`: its PSNs as
/// traffic moved them, the packets waiting in its queues, what it has on
/// the wire, and whether its engines run. Lock-free snapshots: any user
/// may dump any QP, and nothing here waits for a run (which may be long).
pub(crate) fn details(qp: &Qp<Rrxe>, out: &mut ResAttrs) -> Result {
    let psns = qp.psns.load(Ordering::Acquire);
    out.u32(c_str!("sq_psn"), (psns >> 32) as u32)?;
    out.u32(c_str!("rq_psn"), psns as u32)?;
    out.u32(c_str!("req_queued"), qp.req_pkts.len() as u32)?;
    out.u32(c_str!("resp_queued"), qp.resp_pkts.len() as u32)?;
    out.u32(c_str!("pkts_out"), qp.skb_out.load(Ordering::Relaxed))?;
    out.u32(c_str!("trains_out"), qp.trains_out.load(Ordering::Relaxed))?;
    out.u32(
        c_str!("running"),
        u32::from(qp.running.load(Ordering::Relaxed)),
    )
}

/// `query_qp`.
pub(crate) fn query(qp: &Qp<Rrxe>, out: &mut QpAttr, init: &mut QpInitAttr<'_>) -> Result {
    // The PSNs as traffic moved them, not as last set (as the last run
    // or modify left them: see `QpState::psns`).
    let psns = qp.psns.load(Ordering::Acquire);
    let (sq_psn, rq_psn) = ((psns >> 32) as u32, psns as u32);
    let a = *qp.attr.lock();
    let (max_send_wr, max_send_sge, max_inline) = {
        let sq = qp.sq.lock();
        (sq.max_wr, sq.max_sge, sq.max_inline)
    };
    let (max_recv_wr, max_recv_sge) = match qp.rq.lock().as_ref() {
        Some(rq) => (rq.max_wr, rq.max_sge),
        None => (0, 0),
    };
    let cap = QpCap {
        max_send_wr,
        max_recv_wr,
        max_send_sge,
        max_recv_sge,
        max_inline_data: max_inline,
        max_rdma_ctxs: 0,
    };
    *out = QpAttr {
        qp_state: a.state.raw(),
        cur_qp_state: a.state.raw(),
        path_mtu: a.path_mtu,
        path_mig_state: a.path_mig_state,
        qkey: a.qkey,
        rq_psn,
        sq_psn,
        dest_qp_num: a.dest_qp_num,
        qp_access_flags: a.access.raw() as i32,
        cap,
        pkey_index: a.pkey_index,
        alt_pkey_index: a.alt_pkey_index,
        en_sqd_async_notify: a.en_sqd_async_notify,
        sq_draining: u8::from(a.sq_draining),
        max_rd_atomic: a.max_rd_atomic,
        max_dest_rd_atomic: a.max_dest_rd_atomic,
        min_rnr_timer: a.min_rnr_timer,
        port_num: a.port_num,
        timeout: a.timeout,
        retry_cnt: a.retry_cnt,
        rnr_retry: a.rnr_retry,
        alt_port_num: a.alt_port_num,
        alt_timeout: a.alt_timeout,
        ..QpAttr::default()
    };
    a.pri_av.fill_attr(&mut AhAttrOut::new(&mut out.ah_attr));
    a.alt_av
        .fill_attr(&mut AhAttrOut::new(&mut out.alt_ah_attr));
    init.set_for_query(qp.qp_type, qp.sq_sig_all, cap);
    Ok(())
}

/// A QP timer fired (softirq): the work handles it.
pub(crate) fn timer_fired(qp: &Qp<Rrxe>, t: QpTimer) {
    match t {
        QpTimer::Retransmit => qp.timeout_fired.store(true, Ordering::Release),
        QpTimer::Rnr => qp.rnr_fired.store(true, Ordering::Release),
    }
    qp.schedule();
}

/// The stack freed a buffer this QP sent, of the `kind` it was sent as
/// (any context).
pub(crate) fn tx_done(qp: &Qp<Rrxe>, kind: TxKind) {
    qp.device().core().tx_freed.fetch_add(1, Ordering::Relaxed);
    if kind != TxKind::Other {
        qp.req_out.fetch_sub(1, Ordering::AcqRel);
    }
    if kind == TxKind::Train {
        qp.trains_out.fetch_sub(1, Ordering::AcqRel);
    }
    let out = qp.skb_out.fetch_sub(1, Ordering::SeqCst).saturating_sub(1);
    let wake = qp.wake_below.load(Ordering::SeqCst);
    if out < wake && qp.wake_below.swap(0, Ordering::SeqCst) != 0 {
        qp.schedule();
    }
}

/// Before destroy: no work or timer runs any more, the packet queues are
/// closed (what they held is dropped, and what comes later is dropped on
/// arrival), the QP gives up the run it was to chain to, and the GSI slot
/// is given back. Destroy then waits only for references that go by
/// themselves: lookups in progress and packets in the stack. A queued
/// packet holds its sender, so a queue that outlived this call could make
/// two dying QPs wait for each other, or a self-connected one for itself.
pub(crate) fn destroy(qp: &Qp<Rrxe>) -> Result {
    crate::mcast::detach_all(qp);
    qp.shutdown_task();
    qp.req_pkts.close();
    qp.resp_pkts.close();
    let next = qp.kick.lock().take();
    drop(next);
    if qp.qp_type == QpType::Gsi {
        if let Some(h) = qp.handle() {
            qp.device().clear_gsi(h);
        }
    }
    // ib_core unbound it from its counter before; what a count racing
    // with that left on it is the device's.
    qp.counts.flush(&qp.device().core().counters);
    Ok(())
}
