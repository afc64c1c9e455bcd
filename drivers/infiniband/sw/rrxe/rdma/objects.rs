// SPDX-License-Identifier: GPL-2.0

//! Verbs objects that carry driver state: user contexts, PDs, AHs, CQs,
//! QPs, SRQs, MWs (allocated by ib_core with the size the driver declares)
//! and MRs (allocated here).
//!
//! Each is a `#[repr(C)]` [`Obj`]: the C struct first (ib_core sees only
//! that), then a [`PoolElem`] so the object can be found by index, then the
//! driver's state. The state is initialised in place (from the create op's
//! initialiser: locks are pinned where they live) and dropped in place in
//! the destroy op, after the object has left its pool (which waits for
//! every reference a lookup took). A reference to an `Obj` only exists
//! while its state is initialised.

use super::bindings;
use super::device::Device;
use super::net::{EncapHandler, UdpTunnel};
use super::ops::DeviceOps;
use super::pool::{PoolElem, PoolObject};
use super::skb::SkBuff;
use super::task::{QpTask, QpTimer};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::types::Opaque;

/// The kinds of objects, tying a C type to its driver state type.
///
/// # Safety
///
/// `C` must be the C struct ib_core uses for the kind, and `device` must
/// read its `device` field.
pub(crate) unsafe trait Kind: 'static {
    /// The C struct.
    type C;
    /// What the abstraction keeps for objects of this kind besides the
    /// state (QPs: their work item and timers).
    type Extra: ObjExtra;
    /// The driver's state for devices of driver `T`.
    type State<T: DeviceOps>: Send + Sync;
    /// The device of `c`.
    ///
    /// # Safety
    ///
    /// `c` must point at a live C struct of this kind.
    unsafe fn device(c: *const Self::C) -> *mut bindings::ib_device;

    /// Says through dynamic debug (this kind's call site,
    /// `rrxe_helper_dbg_<kind>`) that `what` failed with `err` for the
    /// object of index `index` on `dev`.
    ///
    /// # Safety
    ///
    /// `dev` must be a live device.
    unsafe fn dbg(dev: *mut bindings::ib_device, index: u32, what: &CStr, err: i32);

    /// Stops what `extra` runs, before the object leaves its pool.
    fn shutdown_extra(extra: &Self::Extra) {
        extra.shutdown();
    }
}

/// What an object kind keeps besides its state.
pub(crate) trait ObjExtra {
    /// Stops anything it runs; called once, before destruction. May sleep.
    fn shutdown(&self) {}
}

impl ObjExtra for () {}

impl ObjExtra for QpTask {
    fn shutdown(&self) {
        QpTask::shutdown(self);
    }
}

/// An object of kind `K` on a device of driver `T`.
///
/// # Invariants
///
/// `ib` belongs to a device whose ops are `T`'s; whenever a reference to
/// the `Obj` exists, `state` is initialised.
#[repr(C)]
pub(crate) struct Obj<K: Kind, T: DeviceOps> {
    ib: Opaque<K::C>,
    elem: PoolElem,
    extra: K::Extra,
    state: Opaque<K::State<T>>,
}

// SAFETY: The state is `Send + Sync`; the C part is only touched through
// ib_core's API or fields written before the object is shared.
unsafe impl<K: Kind, T: DeviceOps> Send for Obj<K, T> {}
// SAFETY: See `Send`.
unsafe impl<K: Kind, T: DeviceOps> Sync for Obj<K, T> {}

impl<K: Kind, T: DeviceOps> core::ops::Deref for Obj<K, T> {
    type Target = K::State<T>;

    fn deref(&self) -> &K::State<T> {
        // SAFETY: By the type invariant the state is initialised.
        unsafe { &*self.state.get() }
    }
}

// SAFETY: `elem` is a field of `Obj`, and `from_elem` subtracts its offset.
unsafe impl<K: Kind, T: DeviceOps> PoolObject for Obj<K, T> {
    fn elem(&self) -> &PoolElem {
        &self.elem
    }

    /// # Safety
    ///
    /// As `PoolObject::from_elem` requires: `elem` is the elem of a `Self`.
    unsafe fn from_elem(elem: *const PoolElem) -> *const Self {
        // SAFETY: Per the caller, `elem` is the elem of a `Self`.
        unsafe { kernel::container_of!(elem, Self, elem) }
    }
}

/// The alignment kmalloc gives every allocation at least:
/// `ARCH_KMALLOC_MINALIGN` is never below `__alignof__(unsigned long long)`.
const KMALLOC_MIN_ALIGN: usize = core::mem::align_of::<u64>();

/// The most bytes an object may take: ib_core allocates it with kmalloc,
/// which this keeps to order-1 pages.
const MAX_OBJ_SIZE: usize = 8192;

impl<K: Kind, T: DeviceOps> Obj<K, T> {
    /// The object's layout fits its allocation: kmalloc's alignment is
    /// enough for it, and it stays within [`MAX_OBJ_SIZE`].
    const LAYOUT_OK: () = {
        assert!(core::mem::align_of::<Self>() <= KMALLOC_MIN_ALIGN);
        assert!(core::mem::size_of::<Self>() <= MAX_OBJ_SIZE);
    };

    /// The object whose C struct is `c`.
    ///
    /// # Safety
    ///
    /// `c` must be the C struct of a live `Obj<K, T>` with initialised
    /// state, for all of `'a`.
    pub(crate) unsafe fn from_raw<'a>(c: *const K::C) -> &'a Self {
        // SAFETY: `ib` is the first field of the `#[repr(C)]` wrapper.
        unsafe { &*c.cast::<Self>() }
    }

    /// The C struct.
    pub(crate) fn raw(&self) -> *mut K::C {
        self.ib.get()
    }

    /// The device the object belongs to.
    pub(crate) fn device(&self) -> &Device<T> {
        // SAFETY: Objects keep their device registered (ib_core destroys
        // them before unregistering it); by the invariant it is a `T`.
        unsafe { Device::from_raw(K::device(self.raw())) }
    }

    /// The index the object has in a pool, if it was inserted in one.
    pub(crate) fn index(&self) -> Option<u32> {
        self.elem.index()
    }

    /// Passes `r` on; if it is an error, says through dynamic debug that
    /// `what` failed for this object (`qp#17 modify_qp: -EINVAL`), as C
    /// rxe's `rxe_dbg_<kind>` does.
    pub(crate) fn dbg_err<R>(&self, what: &CStr, r: Result<R>) -> Result<R> {
        if let Err(e) = &r {
            // SAFETY: The object keeps its device registered (see
            // `device`).
            unsafe {
                K::dbg(
                    K::device(self.raw()),
                    self.index().unwrap_or(0),
                    what,
                    e.to_errno(),
                )
            }
        }
        r
    }

    /// The object's [`Handle`](super::pool::Handle), if it is in a pool:
    /// what another object keeps to find this one again later.
    pub(crate) fn handle(&self) -> Option<super::pool::Handle> {
        self.elem.handle()
    }

    /// Initialises the state slot of `c`'s wrapper in place with `init`.
    /// On an error the slot is left uninitialised, with nothing to undo.
    ///
    /// # Safety
    ///
    /// `c` must be the C part of a zeroed kmalloc'd allocation of at least
    /// `size_of::<Self>()` bytes whose state is not initialised, and the
    /// allocation must not move or be freed before the state is dropped
    /// ([`Self::destroy_state`]).
    pub(crate) unsafe fn init_state(
        c: *mut K::C,
        init: impl PinInit<K::State<T>, Error>,
    ) -> Result {
        let () = Self::LAYOUT_OK;
        let this = c.cast::<Self>();
        // The slot is aligned: kmalloc gives `KMALLOC_MIN_ALIGN`, which
        // `LAYOUT_OK` checks is enough. On an error it is not touched again.
        // SAFETY: Per the caller, the state slot is in the allocation,
        // uninitialised and pinned (in place until `destroy_state`).
        unsafe { init.__pinned_init(Opaque::raw_get(core::ptr::addr_of!((*this).state))) }
    }

    /// Takes the object out of its pool (waiting for lookups' references
    /// to go) and drops its state. Sleeps.
    ///
    /// # Safety
    ///
    /// `c`'s state must be initialised; no reference to the object may be
    /// used afterwards.
    pub(crate) unsafe fn destroy_state(c: *mut K::C) {
        let this = c.cast::<Self>();
        // SAFETY: Per the caller the object is live until this returns.
        unsafe {
            K::shutdown_extra(&(*this).extra);
            (*this).elem.remove_and_wait();
            core::ptr::drop_in_place(Opaque::raw_get(core::ptr::addr_of!((*this).state)));
        }
    }

    /// As [`Self::destroy_state`], but without sleeping: waits for
    /// lookups' references by polling (they are short-lived).
    ///
    /// # Safety
    ///
    /// As [`Self::destroy_state`].
    pub(crate) unsafe fn destroy_state_atomic(c: *mut K::C) {
        let this = c.cast::<Self>();
        // SAFETY: Per the caller the object is live until this returns.
        unsafe {
            K::shutdown_extra(&(*this).extra);
            (*this).elem.remove_and_spin();
            core::ptr::drop_in_place(Opaque::raw_get(core::ptr::addr_of!((*this).state)));
        }
    }
}

/// An object in its create op, between the initialisation of its state
/// and the op's return: the driver's `*_created` hook gets one, and with
/// it what may be set only then ([`Creating::set_qp_num`],
/// [`Creating::set_cqe`]). Only the adapter (`rdma/`) makes one.
///
/// # Invariants
///
/// `obj`'s state is initialised and its create op has not returned:
/// ib_core and the consumer do not use the object yet.
pub(crate) struct Creating<'a, K: Kind, T: DeviceOps> {
    obj: &'a Obj<K, T>,
}

impl<'a, K: Kind, T: DeviceOps> Creating<'a, K, T> {
    /// The token for `obj`, which is being created.
    ///
    /// # Safety
    ///
    /// `obj`'s state must be initialised, and its create op must run and
    /// not return for all of `'a`.
    pub(super) unsafe fn new(obj: &'a Obj<K, T>) -> Self {
        // INVARIANT: Per the caller.
        Self { obj }
    }
}

impl<K: Kind, T: DeviceOps> core::ops::Deref for Creating<'_, K, T> {
    type Target = Obj<K, T>;

    fn deref(&self) -> &Obj<K, T> {
        self.obj
    }
}

macro_rules! kind {
    (
        $(#[$m:meta])* $kind:ident, $c:ident, $state:ident, $alias:ident, $dbg:ident
        $(, $extra:ty)?
    ) => {
        $(#[$m])*
        pub(crate) struct $kind;

        // SAFETY: `$c` is ib_core's struct for the kind; its `device`
        // field is read.
        unsafe impl Kind for $kind {
            type C = bindings::$c;
            type Extra = kind!(@extra $($extra)?);
            type State<T: DeviceOps> = T::$state;

            /// # Safety
            ///
            /// As `Kind::device` requires: `c` is live.
            unsafe fn device(c: *const bindings::$c) -> *mut bindings::ib_device {
                // SAFETY: Per the caller `c` is live.
                unsafe { (*c).device }
            }

            /// # Safety
            ///
            /// As `Kind::dbg` requires: `dev` is live.
            unsafe fn dbg(dev: *mut bindings::ib_device, index: u32, what: &CStr, err: i32) {
                // SAFETY: `dev` is live (per the caller) and `what` a C
                // string; the helper only prints them.
                unsafe { bindings::$dbg(dev, index, what.as_char_ptr(), err) }
            }
        }

        $(#[$m])*
        pub(crate) type $alias<T> = Obj<$kind, T>;
    };
    (@extra) => { () };
    (@extra $t:ty) => { $t };
}

kind!(
    /// A user context.
    KUContext, ib_ucontext, UContext, UContext, rrxe_helper_dbg_uc
);
kind!(
    /// A protection domain.
    KPd, ib_pd, Pd, Pd, rrxe_helper_dbg_pd
);
kind!(
    /// An address handle.
    KAh, ib_ah, Ah, Ah, rrxe_helper_dbg_ah
);
kind!(
    /// A completion queue.
    KCq, ib_cq, Cq, Cq, rrxe_helper_dbg_cq
);
kind!(
    /// A queue pair.
    KQp, ib_qp, Qp, Qp, rrxe_helper_dbg_qp, QpTask
);
kind!(
    /// A shared receive queue.
    KSrq, ib_srq, Srq, Srq, rrxe_helper_dbg_srq
);
kind!(
    /// A memory window.
    KMw, ib_mw, Mw, Mw, rrxe_helper_dbg_mw
);
kind!(
    /// A memory region.
    KMr, ib_mr, Mr, Mr, rrxe_helper_dbg_mr
);

/// An asynchronous event on an object, for its consumer's event handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ObjEvent {
    /// `IB_EVENT_CQ_ERR`.
    CqErr,
    /// `IB_EVENT_SQ_DRAINED`.
    SqDrained,
    /// `IB_EVENT_QP_LAST_WQE_REACHED`.
    QpLastWqeReached,
    /// `IB_EVENT_SRQ_LIMIT_REACHED`.
    SrqLimitReached,
    /// `IB_EVENT_QP_ACCESS_ERR`.
    QpAccessErr,
}

impl ObjEvent {
    fn raw(self) -> bindings::ib_event_type {
        match self {
            Self::CqErr => bindings::ib_event_type_IB_EVENT_CQ_ERR,
            Self::SqDrained => bindings::ib_event_type_IB_EVENT_SQ_DRAINED,
            Self::QpLastWqeReached => bindings::ib_event_type_IB_EVENT_QP_LAST_WQE_REACHED,
            Self::SrqLimitReached => bindings::ib_event_type_IB_EVENT_SRQ_LIMIT_REACHED,
            Self::QpAccessErr => bindings::ib_event_type_IB_EVENT_QP_ACCESS_ERR,
        }
    }
}

impl<T: DeviceOps> Cq<T> {
    /// Calls the consumer's completion handler; only for an armed CQ (the
    /// caller clears the arming a `req_notify_cq` set). ib_core writes the
    /// handler and its context before the CQ can be armed: uverbs before
    /// create, `__ib_alloc_cq` after create but before its first
    /// `ib_req_notify_cq`.
    pub(crate) fn notify(&self) {
        // SAFETY: The CQ is live and armed, so `comp_handler` (possibly
        // null) and `cq_context` are set, and they do not change while the
        // CQ exists.
        unsafe {
            let cq = self.raw();
            if let Some(h) = (*cq).comp_handler {
                h(cq, (*cq).cq_context);
            }
        }
    }

    /// Reports an asynchronous error on the CQ.
    pub(crate) fn event(&self, ev: ObjEvent) {
        // SAFETY: As `notify`; the event is built for this CQ.
        unsafe {
            let cq = self.raw();
            if let Some(h) = (*cq).event_handler {
                let mut e = bindings::ib_event {
                    device: (*cq).device,
                    event: ev.raw(),
                    ..Default::default()
                };
                e.element.cq = cq;
                h(&mut e, (*cq).cq_context);
            }
        }
    }

    /// Sets the number of entries ib_core reports for the CQ (`ib_cq.cqe`)
    /// after `resize_cq` gave it a new ring; only from `resize_cq` (a new
    /// CQ's is set through [`Creating::set_cqe`]).
    ///
    /// uverbs runs two resizes of one CQ at once (it takes the CQ shared)
    /// and reads the field without a lock for each one's answer: the store
    /// is a single marked 32-bit write, as C rxe's plain store to the same
    /// field.
    pub(crate) fn set_resized_cqe(&self, cqe: u32) {
        self.store_cqe(cqe);
    }

    fn store_cqe(&self, cqe: u32) {
        // SAFETY: The CQ is live, so the field is valid for writes; the
        // writers and readers that may overlap (resizes, ib_core's read
        // after one) each see the old or the new value (a volatile store
        // of an aligned `i32`).
        unsafe {
            core::ptr::write_volatile(core::ptr::addr_of_mut!((*self.raw()).cqe), cqe as i32)
        };
    }
}

impl<T: DeviceOps> Creating<'_, KCq, T> {
    /// Sets the number of entries ib_core reports for the new CQ
    /// (`ib_cq.cqe`, which ib_core reads when create returns).
    pub(crate) fn set_cqe(&self, cqe: u32) {
        self.obj.store_cqe(cqe);
    }
}

impl<T: DeviceOps> Qp<T> {
    /// Sets up the work item and timers of a new QP.
    ///
    /// # Safety
    ///
    /// `c` must be a zeroed `Qp<T>` allocation that does not move.
    pub(crate) unsafe fn init_task(c: *mut bindings::ib_qp) {
        let this = c.cast::<Self>();
        // SAFETY: Per the caller; the callbacks are this type's.
        unsafe {
            QpTask::init(
                core::ptr::addr_of_mut!((*this).extra),
                Self::work_fn,
                [Self::retransmit_fn, Self::rnr_fn],
            )
        };
    }

    /// Stops the work and timers for good. Sleeps.
    pub(crate) fn shutdown_task(&self) {
        self.extra.shutdown();
    }

    /// # Safety
    ///
    /// Only the workqueue calls this, with the work of a `QpTask` inside a live
    /// `Qp<T>` (destroy cancels the work before the QP is freed).
    unsafe extern "C" fn work_fn(work: *mut bindings::work_struct) {
        // SAFETY: The work of a `QpTask` inside a live `Qp<T>` (destroy
        // cancels the work before the QP goes).
        let qp = unsafe { &*kernel::container_of!(QpTask::from_work(work), Self, extra) };
        T::qp_run(qp);
    }

    /// # Safety
    ///
    /// Only the timer core calls this, with the retransmit timer of a `QpTask`
    /// inside a live `Qp<T>` (destroy deletes the timer first).
    unsafe extern "C" fn retransmit_fn(t: *mut bindings::timer_list) {
        // SAFETY: As `work_fn`, for the retransmit timer.
        let qp = unsafe {
            &*kernel::container_of!(QpTask::from_timer(t, QpTimer::Retransmit), Self, extra)
        };
        T::qp_timer(qp, QpTimer::Retransmit);
    }

    /// # Safety
    ///
    /// Only the timer core calls this, with the RNR timer of a `QpTask` inside
    /// a live `Qp<T>` (destroy deletes the timer first).
    unsafe extern "C" fn rnr_fn(t: *mut bindings::timer_list) {
        // SAFETY: As `work_fn`, for the RNR timer.
        let qp =
            unsafe { &*kernel::container_of!(QpTask::from_timer(t, QpTimer::Rnr), Self, extra) };
        T::qp_timer(qp, QpTimer::Rnr);
    }

    /// Whether the QP is not being destroyed yet (any context).
    pub(crate) fn alive(&self) -> bool {
        self.extra.alive()
    }

    /// Queues the QP's work (any context; a no-op once the QP is being
    /// destroyed).
    pub(crate) fn schedule(&self) {
        self.extra.schedule();
    }

    /// Sets who owns the QP, which decides where its work runs (see
    /// [`QpTask::set_owner`]): once, before the QP can be found.
    pub(crate) fn set_owner(
        &self,
        owner: super::task::Owner,
        wq: Option<kernel::sync::Arc<super::task::UserWorkqueue>>,
    ) -> Result {
        self.extra.set_owner(owner, wq)
    }

    /// Has the page `miss` found not in faulted in by a work of its own,
    /// which queues the QP's work when done (see [`QpTask::fault_in`]).
    pub(crate) fn fault_in(&self, miss: super::odp::Miss) -> super::task::Fault {
        self.extra.fault_in(miss, self.device().hold_mem())
    }

    /// Whether a fault the QP waits for is under way.
    pub(crate) fn fault_busy(&self) -> bool {
        self.extra.fault_busy()
    }

    /// Makes the packets this QP sent without a copy so far unreadable
    /// (see [`QpTask::zc_revoke`]; process context).
    pub(crate) fn revoke_zcopy(&self) {
        self.extra.zc_revoke();
    }

    /// Arms a timer (any context).
    pub(crate) fn arm_timer(&self, t: QpTimer, usecs: u32) {
        self.extra.arm(t, usecs);
    }

    /// Arms a timer to fire at jiffy `expires` (any context).
    pub(crate) fn arm_timer_at(&self, t: QpTimer, expires: super::task::Jiffies) {
        self.extra.arm_at(t, expires);
    }

    /// Disarms a timer if pending.
    pub(crate) fn disarm_timer(&self, t: QpTimer) {
        self.extra.disarm(t);
    }

    /// Makes `skb` count against this QP until the stack frees it: the
    /// QP's destroy waits for it, and `T::qp_tx_done` runs when it is
    /// freed, told its `kind`. Uses the tunnel's socket as the owner. A
    /// packet with page fragments of this QP's memory (a looped-back one:
    /// not a train, whose fragments are its own) is stamped with the QP's
    /// zero-copy gate (see [`Self::revoke_zcopy`]).
    pub(crate) fn own_skb<H: EncapHandler>(
        &self,
        skb: &mut SkBuff,
        tunnel: &UdpTunnel<H>,
        kind: TxKind,
    ) -> bool {
        if !self.elem.hold() {
            return false;
        }
        if skb.nr_frags() != 0 && kind != TxKind::Train {
            // SAFETY: The reference just taken is the skb's until its
            // destructor (`freed`) gives it back.
            unsafe { skb.set_zc_stamp(&self.extra, self.extra.zc_epoch()) };
        }
        let done: unsafe extern "C" fn(*mut bindings::sk_buff) = match kind {
            TxKind::Other => Self::tx_done,
            TxKind::Request => Self::tx_done_request,
            TxKind::Train => Self::tx_done_train,
        };
        // SAFETY: The skb is ours and has no owner yet; the socket is
        // open (the tunnel is borrowed) and gets a reference for the skb;
        // the QP reference taken above is given back by `tx_done`.
        unsafe {
            bindings::rrxe_helper_skb_set_owner(
                skb.as_raw(),
                tunnel.owner_sk(),
                Some(done),
                (self as *const Self).cast_mut().cast(),
            )
        };
        true
    }

    /// # Safety
    ///
    /// Only the skb destructor calls this, with an skb that `own_skb` tied to a
    /// QP it holds a reference to.
    unsafe extern "C" fn tx_done(skb: *mut bindings::sk_buff) {
        // SAFETY: As this function's contract (the caller's).
        unsafe { Self::freed(skb, TxKind::Other) }
    }

    /// # Safety
    ///
    /// As [`Self::tx_done`], for a request packet.
    unsafe extern "C" fn tx_done_request(skb: *mut bindings::sk_buff) {
        // SAFETY: As this function's contract (the caller's).
        unsafe { Self::freed(skb, TxKind::Request) }
    }

    /// # Safety
    ///
    /// As [`Self::tx_done`], for a train of request packets.
    unsafe extern "C" fn tx_done_train(skb: *mut bindings::sk_buff) {
        // SAFETY: As this function's contract (the caller's).
        unsafe { Self::freed(skb, TxKind::Train) }
    }

    /// # Safety
    ///
    /// As [`Self::tx_done`].
    unsafe fn freed(skb: *mut bindings::sk_buff, kind: TxKind) {
        // SAFETY: `own_skb` set the argument to a QP it holds a reference
        // on, and the owner to a socket it holds a reference on.
        unsafe {
            let qp = &*bindings::rrxe_helper_skb_destructor_arg(skb).cast::<Self>();
            T::qp_tx_done(qp, kind);
            bindings::rrxe_helper_sock_put(bindings::rrxe_helper_skb_sk(skb));
            qp.elem.release();
        }
    }

    /// The QP number.
    pub(crate) fn qp_num(&self) -> u32 {
        // SAFETY: The QP is live; `qp_num` is set in create and fixed.
        unsafe { (*self.raw()).qp_num }
    }

    /// The QP's PD.
    pub(crate) fn pd(&self) -> &Pd<T> {
        // SAFETY: ib_core keeps the PD (usecnt) while the QP lives.
        unsafe { Pd::from_raw((*self.raw()).pd) }
    }

    /// The send CQ.
    pub(crate) fn send_cq(&self) -> &Cq<T> {
        // SAFETY: ib_core keeps the CQ (usecnt) while the QP lives.
        unsafe { Cq::from_raw((*self.raw()).send_cq) }
    }

    /// The receive CQ.
    pub(crate) fn recv_cq(&self) -> &Cq<T> {
        // SAFETY: As `send_cq`.
        unsafe { Cq::from_raw((*self.raw()).recv_cq) }
    }

    /// The SRQ, if the QP receives from one.
    pub(crate) fn srq(&self) -> Option<&Srq<T>> {
        // SAFETY: As `send_cq`; null when the QP has its own RQ.
        unsafe {
            let s = (*self.raw()).srq;
            if s.is_null() {
                None
            } else {
                Some(Srq::from_raw(s))
            }
        }
    }

    /// Reports an asynchronous event on the QP to its consumer.
    pub(crate) fn event(&self, ev: ObjEvent) {
        // SAFETY: The QP is live; ib_core set the handler and context
        // before create.
        unsafe {
            let qp = self.raw();
            if let Some(h) = (*qp).event_handler {
                let mut e = bindings::ib_event {
                    device: (*qp).device,
                    event: ev.raw(),
                    ..Default::default()
                };
                e.element.qp = qp;
                h(&mut e, (*qp).qp_context);
            }
        }
    }
}

impl<T: DeviceOps> Creating<'_, KQp, T> {
    /// Sets the number of the new QP (`ib_qp.qp_num`).
    pub(crate) fn set_qp_num(&self, n: u32) {
        // The driver reads the field only on the QP's data path, which
        // acts once a modify_qp took the QP out of RESET, after create.
        // SAFETY: The QP is live; by the type invariant its create op has
        // not returned, so ib_core and the consumer do not read it yet.
        unsafe { (*self.obj.raw()).qp_num = n };
    }
}

impl<T: DeviceOps> Srq<T> {
    /// Reports an asynchronous event on the SRQ to its consumer.
    pub(crate) fn event(&self, ev: ObjEvent) {
        // SAFETY: The SRQ is live; ib_core set the handler and context
        // before create.
        unsafe {
            let srq = self.raw();
            if let Some(h) = (*srq).event_handler {
                let mut e = bindings::ib_event {
                    device: (*srq).device,
                    event: ev.raw(),
                    ..Default::default()
                };
                e.element.srq = srq;
                h(&mut e, (*srq).srq_context);
            }
        }
    }
}

impl<T: DeviceOps> Ah<T> {
    /// The AH's PD.
    pub(crate) fn pd(&self) -> &Pd<T> {
        // SAFETY: ib_core keeps the PD while the AH lives.
        unsafe { Pd::from_raw((*self.raw()).pd) }
    }
}

impl<T: DeviceOps> Mw<T> {
    /// The MW's PD.
    pub(crate) fn pd(&self) -> &Pd<T> {
        // SAFETY: ib_core keeps the PD while the MW lives.
        unsafe { Pd::from_raw((*self.raw()).pd) }
    }

    /// Whether this is a type 2 window (type 1 otherwise).
    pub(crate) fn is_type2(&self) -> bool {
        // SAFETY: The MW is live; `type_` is set by ib_core before create.
        unsafe { (*self.raw()).type_ == bindings::ib_mw_type_IB_MW_TYPE_2 }
    }

    /// Sets the rkey ib_core reports for the window (`ib_mw.rkey`).
    ///
    /// Callers hold the driver's lock of the window's state: `mw_created`
    /// and a bind that gives the window a new rkey. ib_core reads the
    /// field without a lock when `alloc_mw` answers the consumer, which a
    /// bind naming the just-made window (by a guessed rkey) could
    /// overlap: the store is a single marked 32-bit write, as C rxe's
    /// plain store to the same field.
    pub(crate) fn set_rkey(&self, rkey: u32) {
        // SAFETY: The MW is live, so the field is valid for writes; other
        // writers are excluded by the caller's lock, and the one unlocked
        // reader sees the old or the new value (a volatile store of an
        // aligned `u32`).
        unsafe { core::ptr::write_volatile(core::ptr::addr_of_mut!((*self.raw()).rkey), rkey) };
    }
}

impl<T: DeviceOps> Mr<T> {
    /// Sets the keys ib_core and the consumer see (`ib_mr.lkey`,
    /// `ib_mr.rkey`), after the driver set its own copy under the MR's
    /// lock. Callers are the three writers of an MR's keys, none of which
    /// overlaps another access to the fields: `mr_created`, before ib_core
    /// has the MR; rereg of a user MR, which uverbs runs with the MR held
    /// exclusively (no other command on it reads the keys meanwhile); and
    /// a REG_MR work request on a fast-registration MR, on the QP's work,
    /// whose kernel consumer reads the MR's keys again only after the
    /// registration completes and does not register the MR twice at once
    /// (ib_core's fast-registration contract). The stores are plain, as C
    /// rxe's.
    pub(crate) fn set_keys(&self, lkey: u32, rkey: u32) {
        // SAFETY: The MR is live, so the fields are valid for writes; per
        // the callers' contract above, no other access overlaps the
        // stores.
        unsafe {
            (*self.raw()).lkey = lkey;
            (*self.raw()).rkey = rkey;
        }
    }

    /// The keys (lkey, rkey).
    pub(crate) fn keys(&self) -> (u32, u32) {
        // SAFETY: The MR is live; the keys change only under the driver's
        // serialisation of the MR.
        unsafe { ((*self.raw()).lkey, (*self.raw()).rkey) }
    }

    /// The IOVA and length (`map_mr_sg` sets them for fast registration).
    pub(crate) fn range(&self) -> (u64, u64) {
        // SAFETY: The MR is live; the consumer serialises registration.
        unsafe { ((*self.raw()).iova, (*self.raw()).length) }
    }
}

/// What a buffer a QP sent is, to its requester's accounting
/// (`Qp::own_skb`, `T::qp_tx_done`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TxKind {
    /// An ACK, a response, a responder's packet.
    Other,
    /// A request packet of the requester.
    Request,
    /// A train of the requester's request packets (`net::tx`).
    Train,
}
