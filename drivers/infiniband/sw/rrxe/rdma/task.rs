// SPDX-License-Identifier: GPL-2.0

//! Work for queue pairs: one work item and two timers per QP, on one of
//! the module's two workqueues (user QPs', kernel consumers'), or on a
//! workqueue of the QP's user ([`UserWorkqueue`]).
//!
//! A QP's work never runs concurrently with itself (workqueues are
//! non-reentrant), which serialises the QP's protocol processing, while
//! different QPs run in parallel on the unbound workqueues. Timers only
//! schedule the work or call a short driver hook.
//!
//! [`QpTask`] lives inside the QP object (see `objects.rs`). Scheduling
//! and arming take its lock and do nothing once the QP is dying; `shutdown`
//! marks it dying under the same lock, then shuts the timers down and
//! cancels the work, waiting for running callbacks. After that nothing can
//! run for the QP again.

use super::bindings;
use core::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;
use kernel::types::Opaque;

pub(crate) use crate::proto::Jiffies;

/// The kernel's jiffies clock now.
pub(crate) fn jiffies() -> Jiffies {
    // SAFETY: Reads a global counter; no preconditions.
    unsafe { bindings::rrxe_helper_jiffies() as Jiffies }
}

/// `usecs` in jiffies, rounded up.
pub(crate) fn usecs_to_jiffies(usecs: u32) -> Jiffies {
    // SAFETY: A pure conversion; no preconditions.
    unsafe { bindings::rrxe_helper_usecs_to_jiffies(usecs) as Jiffies }
}

/// The workqueues QP work runs on, one per kind of owner (see [`Owner`]);
/// set while a [`Workqueue`] of that kind exists.
static WQ: [AtomicPtr<bindings::workqueue_struct>; 2] = [
    AtomicPtr::new(core::ptr::null_mut()),
    AtomicPtr::new(core::ptr::null_mut()),
];

/// Who owns a QP, which decides where its work runs
/// (Documentation/datapath.md, "Contexts and serialisation").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Owner {
    /// A user process: its work goes to the user workqueue, queued away
    /// from the queuing CPU (see [`QpTask::set_owner`]).
    User,
    /// A kernel consumer (rdma_cm users, the storage protocols): its own
    /// workqueue, which user QPs' work (an on-demand-paging fault may
    /// sleep) can never fill, and this CPU.
    Kernel,
}

impl Owner {
    fn idx(self) -> usize {
        match self {
            Self::User => 0,
            Self::Kernel => 1,
        }
    }
}

/// One of the module's workqueues (unbound, usable for memory reclaim).
///
/// Dropping it drains it; by then every QP is gone.
pub(crate) struct Workqueue {
    wq: core::ptr::NonNull<bindings::workqueue_struct>,
    owner: Owner,
}

// SAFETY: A workqueue is shared by design.
unsafe impl Send for Workqueue {}
// SAFETY: See `Send`.
unsafe impl Sync for Workqueue {}

impl Workqueue {
    /// Creates the workqueue `name` for the QPs of `owner`; one may exist
    /// at a time for each.
    pub(crate) fn new(name: &'static CStr, owner: Owner) -> Result<Self> {
        // SAFETY: `name` is a static NUL-terminated string.
        let wq = unsafe { bindings::rrxe_helper_alloc_workqueue(name.as_char_ptr()) };
        let wq = core::ptr::NonNull::new(wq).ok_or(ENOMEM)?;
        if WQ[owner.idx()]
            .compare_exchange(
                core::ptr::null_mut(),
                wq.as_ptr(),
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_err()
        {
            // SAFETY: Ours, unused.
            unsafe { bindings::destroy_workqueue(wq.as_ptr()) };
            return Err(EBUSY);
        }
        Ok(Self { wq, owner })
    }
}

impl Drop for Workqueue {
    fn drop(&mut self) {
        WQ[self.owner.idx()].store(core::ptr::null_mut(), Ordering::Release);
        // SAFETY: Ours; destroy drains queued work first.
        unsafe { bindings::destroy_workqueue(self.wq.as_ptr()) };
    }
}

/// The workqueue of one user's QPs (unbound, as many work items at once
/// as the module's user workqueue): a user whose QPs' work waits (in a
/// fault on memory it controls) fills its own slots, never another
/// user's. Held by the QPs that use it ([`QpTask::set_owner`]); dropping
/// the last reference drains and destroys it (process context).
///
/// # Invariants
///
/// `wq` is a workqueue this value owns.
pub(crate) struct UserWorkqueue {
    wq: core::ptr::NonNull<bindings::workqueue_struct>,
}

// SAFETY: A workqueue is shared by design.
unsafe impl Send for UserWorkqueue {}
// SAFETY: See `Send`.
unsafe impl Sync for UserWorkqueue {}

impl UserWorkqueue {
    /// A workqueue for the QPs of user `uid` (its name, `rrxe_u<uid>`, in
    /// tracing; no sysfs directory).
    pub(crate) fn new(uid: u32) -> Result<Self> {
        // SAFETY: Allocates a workqueue; no preconditions.
        let wq = unsafe { bindings::rrxe_helper_alloc_user_workqueue(uid) };
        // INVARIANT: Ours, just allocated.
        Ok(Self {
            wq: core::ptr::NonNull::new(wq).ok_or(ENOMEM)?,
        })
    }
}

impl Drop for UserWorkqueue {
    fn drop(&mut self) {
        // SAFETY: Ours by the type invariant; every QP that queued work on
        // it held a reference until its work was cancelled, and destroy
        // drains what is left.
        unsafe { bindings::destroy_workqueue(self.wq.as_ptr()) };
    }
}

/// Which QP timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum QpTimer {
    /// Retransmission (the ACK timeout).
    Retransmit,
    /// The wait after an RNR NAK.
    Rnr,
}

impl QpTimer {
    fn idx(self) -> usize {
        match self {
            Self::Retransmit => 0,
            Self::Rnr => 1,
        }
    }
}

/// The work item and timers of one QP.
///
/// # Invariants
///
/// Once `init` ran, `work` and `timers` are initialised, `lock` guards
/// `dying` and `zc_lock` guards `zc_epoch`; after `dying` is set nothing
/// queues the work or arms a timer. A non-null `user_wq` holds a reference
/// of an `Arc<UserWorkqueue>` while `dying` is not set.
#[repr(C)]
pub(crate) struct QpTask {
    lock: Opaque<kernel::bindings::spinlock_t>,
    dying: core::cell::UnsafeCell<bool>,
    work: Opaque<bindings::work_struct>,
    timers: [Opaque<bindings::timer_list>; 2],
    /// The QP's owner is a user process (see [`Self::set_owner`]).
    user: AtomicBool,
    /// The user's own workqueue, if it has one: a reference
    /// (`Arc::into_raw`) held from [`Self::set_owner`] until
    /// [`Self::shutdown`], or null.
    user_wq: AtomicPtr<UserWorkqueue>,
    /// Guards `zc_epoch` and the copies out of packets stamped with it
    /// (see [`Self::zc_read`]).
    zc_lock: Opaque<kernel::bindings::spinlock_t>,
    /// The generation of the packets this QP sent without a copy that may
    /// still be read; bumped by [`Self::zc_revoke`]. Under `zc_lock`.
    zc_epoch: core::cell::UnsafeCell<u64>,
}

impl QpTask {
    /// Initialises a zeroed task in place.
    ///
    /// # Safety
    ///
    /// `this` must point at a zeroed `QpTask` that does not move until
    /// `shutdown` ran, and `work_fn`/`timer_fn` must be the callbacks of
    /// the object embedding it.
    pub(crate) unsafe fn init(
        this: *mut Self,
        work_fn: unsafe extern "C" fn(*mut bindings::work_struct),
        timer_fn: [unsafe extern "C" fn(*mut bindings::timer_list); 2],
    ) {
        // SAFETY: Per the caller, the fields are valid for writes.
        unsafe {
            bindings::rrxe_helper_qp_task_lock_init(
                Opaque::raw_get(core::ptr::addr_of!((*this).lock)).cast(),
            );
            bindings::rrxe_helper_zc_lock_init(
                Opaque::raw_get(core::ptr::addr_of!((*this).zc_lock)).cast(),
            );
            bindings::rrxe_helper_init_work(
                Opaque::raw_get(core::ptr::addr_of!((*this).work)),
                Some(work_fn),
            );
            for (i, f) in timer_fn.into_iter().enumerate() {
                bindings::rrxe_helper_timer_setup(
                    Opaque::raw_get(core::ptr::addr_of!((*this).timers[i])),
                    Some(f),
                );
            }
        }
    }

    /// Runs `f` with the lock held if the QP is not dying.
    fn if_alive(&self, f: impl FnOnce()) {
        // SAFETY: By the invariant the lock is initialised; the two
        // bindings name the same C type.
        let flags = unsafe { bindings::rrxe_helper_spin_lock_irqsave(self.lock.get().cast()) };
        // SAFETY: `dying` is only accessed under `lock`.
        if !unsafe { *self.dying.get() } {
            f();
        }
        // SAFETY: We hold the lock with these flags.
        unsafe { bindings::rrxe_helper_spin_unlock_irqrestore(self.lock.get().cast(), flags) };
    }

    /// Whether the QP is not being destroyed (any context).
    pub(crate) fn alive(&self) -> bool {
        let mut alive = false;
        self.if_alive(|| alive = true);
        alive
    }

    /// Sets who owns the QP, before anything can queue its work (a work
    /// item queued on two workqueues in turn could run on both at once),
    /// and never changes it. The owner picks the workqueue and, when the
    /// caller is not a worker, the CPU: a user QP's work goes to the
    /// online CPUs' pods in turn, so that it does not always preempt the
    /// caller (a user process that goes on posting after its doorbell)
    /// nor pile up on one other CPU; a kernel consumer's (the default)
    /// stays in this CPU's pod, where it runs as soon as the caller sleeps
    /// (waiting for its completion) without waking another CPU. See
    /// `rrxe_helper_queue_qp_work`.
    ///
    /// A user QP's work goes to `wq`, its user's own workqueue, if given
    /// (else to the module's user workqueue); the task holds it until
    /// [`Self::shutdown`]. Called once.
    pub(crate) fn set_owner(&self, owner: Owner, wq: Option<Arc<UserWorkqueue>>) {
        self.user.store(owner == Owner::User, Ordering::Relaxed);
        if let Some(wq) = wq.filter(|_| owner == Owner::User) {
            let new = Arc::into_raw(wq).cast_mut();
            // INVARIANT: The reference is held until `shutdown`; a second
            // call (none is made) gives its own back at once.
            if self
                .user_wq
                .compare_exchange(
                    core::ptr::null_mut(),
                    new,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_err()
            {
                // SAFETY: From `into_raw` just above, not stored.
                drop(unsafe { Arc::from_raw(new) });
            }
        }
    }

    /// Queues the work (any context).
    pub(crate) fn schedule(&self) {
        self.if_alive(|| {
            let user = self.user.load(Ordering::Relaxed);
            let owner = if user { Owner::User } else { Owner::Kernel };
            let own = self.user_wq.load(Ordering::Acquire);
            let wq = if own.is_null() {
                WQ[owner.idx()].load(Ordering::Acquire)
            } else {
                // SAFETY: By the invariant a non-null `user_wq` is a live
                // reference while the task is not dying (we hold the lock
                // that `shutdown` sets `dying` under before dropping it).
                unsafe { (*own).wq.as_ptr() }
            };
            if !wq.is_null() {
                // SAFETY: The work is initialised and the workqueue live
                // (it outlives every QP).
                unsafe { bindings::rrxe_helper_queue_qp_work(wq, self.work.get(), user) };
            }
        });
    }

    /// Runs `f` with the zero-copy gate held, interrupts off.
    ///
    /// The gate is taken with interrupts off although every path to it is
    /// in process context: a copy out of a packet may run under another
    /// driver lock that interrupt and softirq contexts take too (a kernel
    /// consumer's fast-registration MR is placed into under its MR lock,
    /// which `ib_map_mr_sg` takes in whatever context the consumer maps
    /// it), and a lock taken with interrupts on must never be nested in
    /// one of those (lockdep's irq-safe to irq-unsafe order).
    fn zc_locked<R>(&self, f: impl FnOnce(&mut u64) -> R) -> R {
        // SAFETY: By the invariant the lock is initialised (`init`); the
        // two bindings name the same C type.
        let flags = unsafe { bindings::rrxe_helper_spin_lock_irqsave(self.zc_lock.get().cast()) };
        // SAFETY: `zc_epoch` is only accessed under `zc_lock`, held.
        let r = f(unsafe { &mut *self.zc_epoch.get() });
        // SAFETY: Held above, with these flags.
        unsafe { bindings::rrxe_helper_spin_unlock_irqrestore(self.zc_lock.get().cast(), flags) };
        r
    }

    /// The generation a packet sent now without a copy is stamped with.
    pub(crate) fn zc_epoch(&self) -> u64 {
        self.zc_locked(|e| *e)
    }

    /// Makes every packet this QP sent without a copy so far unreadable
    /// ([`Self::zc_read`] refuses it), waiting for a copy out of one that
    /// is under way. Called before a send WQE completes otherwise than by
    /// its ACK (an error, a flush) and when the QP is reset: from then on
    /// the owner may reuse the buffers, and a packet still queued at its
    /// peer must not read them (Documentation/datapath.md, "Transmit
    /// without a copy").
    pub(crate) fn zc_revoke(&self) {
        self.zc_locked(|e| *e = e.wrapping_add(1));
    }

    /// Runs `f` (a copy out of a packet stamped with `epoch`) if no
    /// [`Self::zc_revoke`] came since the stamp, with the gate held;
    /// `ECANCELED` otherwise.
    pub(crate) fn zc_read(&self, epoch: u64, f: impl FnOnce() -> Result) -> Result {
        self.zc_locked(|e| {
            if *e == epoch {
                f()
            } else {
                Err(super::error::ecanceled())
            }
        })
    }

    /// Arms timer `t` to fire in `usecs` microseconds (any context).
    pub(crate) fn arm(&self, t: QpTimer, usecs: u32) {
        self.arm_at(t, jiffies().wrapping_add(usecs_to_jiffies(usecs).max(1)));
    }

    /// Arms timer `t` to fire at jiffy `expires` (any context).
    pub(crate) fn arm_at(&self, t: QpTimer, expires: Jiffies) {
        self.if_alive(|| {
            // SAFETY: The timer is initialised.
            unsafe { bindings::mod_timer(self.timers[t.idx()].get(), expires as _) };
        });
    }

    /// Stops timer `t` if pending (does not wait for a running callback).
    pub(crate) fn disarm(&self, t: QpTimer) {
        // SAFETY: The timer is initialised.
        unsafe { bindings::timer_delete(self.timers[t.idx()].get()) };
    }

    /// Marks the QP dying and waits until neither the work nor a timer
    /// callback runs; they cannot be queued again. Sleeps.
    pub(crate) fn shutdown(&self) {
        // SAFETY: By the invariant the lock is initialised.
        let flags = unsafe { bindings::rrxe_helper_spin_lock_irqsave(self.lock.get().cast()) };
        // SAFETY: `dying` is only accessed under `lock`.
        unsafe { *self.dying.get() = true };
        // SAFETY: We hold the lock.
        unsafe { bindings::rrxe_helper_spin_unlock_irqrestore(self.lock.get().cast(), flags) };
        // SAFETY: Initialised; process context. A running timer callback
        // can only try to schedule, which is now a no-op.
        unsafe {
            for t in &self.timers {
                bindings::timer_shutdown_sync(t.get());
            }
            bindings::cancel_work_sync(self.work.get());
        }
        let own = self.user_wq.swap(core::ptr::null_mut(), Ordering::AcqRel);
        if !own.is_null() {
            // SAFETY: The reference `set_owner` stored (`into_raw`), taken
            // out once; nothing queues work on it any more (`dying`).
            drop(unsafe { Arc::from_raw(own) });
        }
    }

    /// The task containing `work`.
    ///
    /// # Safety
    ///
    /// `work` must be the work of a live `QpTask`.
    pub(crate) unsafe fn from_work<'a>(work: *mut bindings::work_struct) -> &'a Self {
        // SAFETY: Per the caller.
        unsafe { &*kernel::container_of!(work, Self, work) }
    }

    /// The task containing timer `t`.
    ///
    /// # Safety
    ///
    /// `timer` must be timer `t` of a live `QpTask`.
    pub(crate) unsafe fn from_timer<'a>(timer: *mut bindings::timer_list, t: QpTimer) -> &'a Self {
        let off = core::mem::offset_of!(Self, timers)
            + t.idx() * core::mem::size_of::<Opaque<bindings::timer_list>>();
        // SAFETY: Per the caller, `timer` is at offset `off` of a QpTask.
        unsafe { &*timer.cast::<u8>().sub(off).cast::<Self>() }
    }
}
