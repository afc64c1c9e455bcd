// SPDX-License-Identifier: GPL-2.0

//! Work for queue pairs: one work item and two timers per QP, on one of
//! the module's two workqueues (user QPs', kernel consumers'), or on a
//! workqueue of the QP's user ([`UserWorkqueue`]). Faults on a QP's memory
//! paged on demand run on a workqueue of their own: the user's, or the
//! module's third one ([`QpTask::fault_in`]).
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
use super::device::DeviceMem;
use super::odp::Miss;
use super::sync::IrqSpinLock;
use crate::new_irq_spinlock;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::{Arc, ArcBorrow};
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

/// The workqueue of the faults of user QPs without a workqueue of their
/// user's (privileged contexts': [`QpTask::fault_in`]); set while its
/// [`Workqueue`] exists.
static FAULT_WQ: AtomicPtr<bindings::workqueue_struct> = AtomicPtr::new(core::ptr::null_mut());

/// The workqueue that destroys users' workqueues whose faults were still
/// under way when they were dropped ([`reap_fn`]); set while its
/// [`Workqueue`] exists.
static REAP_WQ: AtomicPtr<bindings::workqueue_struct> = AtomicPtr::new(core::ptr::null_mut());

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

/// One of the module's workqueues (unbound; QPs' are usable for memory
/// reclaim).
///
/// Dropping it drains it; by then every QP is gone.
pub(crate) struct Workqueue {
    wq: core::ptr::NonNull<bindings::workqueue_struct>,
    /// Where work queuers find it.
    slot: &'static AtomicPtr<bindings::workqueue_struct>,
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
        Self::publish(wq, &WQ[owner.idx()])
    }

    /// Creates the workqueue (`rrxe_faults`, not for memory reclaim) of
    /// the faults of user QPs that have no workqueue of their user's (see
    /// [`QpTask::fault_in`]); one may exist at a time.
    pub(crate) fn faults() -> Result<Self> {
        // SAFETY: Allocates a workqueue; no preconditions.
        let wq = unsafe { bindings::rrxe_helper_alloc_fault_workqueue() };
        Self::publish(wq, &FAULT_WQ)
    }

    /// Creates the workqueue (`rrxe_reap`) that destroys the workqueues
    /// of users whose faults were under way when they went (see
    /// [`UserWorkqueue`]); one may exist at a time. Each of its works
    /// waits for a fault, so it has the default number of slots (256),
    /// not the fault workqueues' bound.
    pub(crate) fn reaper() -> Result<Self> {
        // SAFETY: Allocates a workqueue; no preconditions.
        let wq = unsafe { bindings::rrxe_helper_alloc_reap_workqueue() };
        Self::publish(wq, &REAP_WQ)
    }

    /// Makes the new `wq` (null if its allocation failed) the one of
    /// `slot`, unless the slot has one.
    fn publish(
        wq: *mut bindings::workqueue_struct,
        slot: &'static AtomicPtr<bindings::workqueue_struct>,
    ) -> Result<Self> {
        let wq = core::ptr::NonNull::new(wq).ok_or(ENOMEM)?;
        if slot
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
        Ok(Self { wq, slot })
    }
}

impl Drop for Workqueue {
    fn drop(&mut self) {
        self.slot.store(core::ptr::null_mut(), Ordering::Release);
        // SAFETY: Ours; destroy drains queued work first.
        unsafe { bindings::destroy_workqueue(self.wq.as_ptr()) };
    }
}

/// The workqueues of one user's QPs (unbound, as many work items at once
/// as the module's user workqueue): a user whose QPs' work waits fills its
/// own slots, never another user's. The second takes the faults on that
/// user's memory that its QPs wait for ([`QpTask::fault_in`]): a user
/// whose memory is slow to answer fills those slots, and its QPs that do
/// not wait for memory still run. Held by the QPs that use it
/// ([`QpTask::set_owner`]); dropping the last reference drains and
/// destroys both (process context). A fault still in progress, on this
/// user's memory, is not waited for there: the module's `rrxe_reap`
/// destroys them once it ends ([`reap_fn`]). So a device whose users'
/// faults wait on memory that never answers still goes at once (and
/// `rmmod` is refused meanwhile: the fault holds the module).
///
/// # Invariants
///
/// `wq` and `faults` are workqueues this value owns.
pub(crate) struct UserWorkqueue {
    wq: core::ptr::NonNull<bindings::workqueue_struct>,
    faults: core::ptr::NonNull<bindings::workqueue_struct>,
    /// Fault works queued on `faults` and not ended yet (shared with
    /// them: a work may end after the workqueues' owner went).
    pending: Arc<AtomicU32>,
    /// Of those, the [`FaultJob`]s, which [`FAULT_JOBS_MAX`] bounds.
    jobs: Arc<AtomicU32>,
}

// SAFETY: A workqueue is shared by design.
unsafe impl Send for UserWorkqueue {}
// SAFETY: See `Send`.
unsafe impl Sync for UserWorkqueue {}

impl UserWorkqueue {
    /// The workqueues for the QPs of user `uid` (named `rrxe_u<uid>` and
    /// `rrxe_f<uid>` in tracing; no sysfs directory).
    pub(crate) fn new(uid: u32) -> Result<Self> {
        // SAFETY: Allocates a workqueue; no preconditions.
        let wq = unsafe { bindings::rrxe_helper_alloc_user_workqueue(uid, false) };
        let wq = core::ptr::NonNull::new(wq).ok_or(ENOMEM)?;
        // SAFETY: As above.
        let faults = unsafe { bindings::rrxe_helper_alloc_user_workqueue(uid, true) };
        let Some(faults) = core::ptr::NonNull::new(faults) else {
            // SAFETY: Ours, just allocated, never used.
            unsafe { bindings::destroy_workqueue(wq.as_ptr()) };
            return Err(ENOMEM);
        };
        let counts = Arc::new(AtomicU32::new(0), GFP_KERNEL)
            .and_then(|p| Ok((p, Arc::new(AtomicU32::new(0), GFP_KERNEL)?)));
        let (pending, jobs) = match counts {
            Ok(c) => c,
            Err(e) => {
                // SAFETY: Ours, just allocated, never used.
                unsafe {
                    bindings::destroy_workqueue(wq.as_ptr());
                    bindings::destroy_workqueue(faults.as_ptr());
                }
                return Err(e.into());
            }
        };
        // INVARIANT: Both ours, just allocated.
        Ok(Self {
            wq,
            faults,
            pending,
            jobs,
        })
    }

    /// Whether faults on the user's memory are still under way (or
    /// queued): dropping the workqueues would wait for them.
    pub(crate) fn faulting(&self) -> bool {
        self.pending.load(Ordering::Acquire) != 0
    }
}

impl Drop for UserWorkqueue {
    fn drop(&mut self) {
        if self.faulting() {
            let reaper = REAP_WQ.load(Ordering::Acquire);
            let reap = KBox::new(
                Reap {
                    work: Opaque::uninit(),
                    wq: self.wq,
                    faults: self.faults,
                },
                GFP_KERNEL,
            );
            if let (false, Ok(reap)) = (reaper.is_null(), reap) {
                let reap = KBox::into_raw(reap);
                // SAFETY: `reap` is leaked until `reap_fn` takes it back;
                // the reap workqueue outlives every device, hence every
                // user's workqueues, and module exit drains it.
                unsafe {
                    let work = Opaque::raw_get(core::ptr::addr_of!((*reap).work));
                    bindings::rrxe_helper_init_reap_work(work, Some(reap_fn));
                    bindings::rrxe_helper_queue_reap(reaper, work);
                }
                return;
            }
        }
        // SAFETY: Ours by the type invariant; every QP that queued work on
        // them held a reference until its work was cancelled, and destroy
        // drains what is left (a fault work ends when its fault does).
        unsafe {
            bindings::destroy_workqueue(self.wq.as_ptr());
            bindings::destroy_workqueue(self.faults.as_ptr());
        }
    }
}

/// A user's workqueues whose faults were still under way when their last
/// holder went ([`UserWorkqueue`]'s drop), to be destroyed when they end.
struct Reap {
    work: Opaque<bindings::work_struct>,
    wq: core::ptr::NonNull<bindings::workqueue_struct>,
    faults: core::ptr::NonNull<bindings::workqueue_struct>,
}

/// Destroys a user's workqueues, waiting for its faults under way.
///
/// # Safety
///
/// Only the workqueue calls this, with the work of a `Reap` that
/// `UserWorkqueue`'s drop leaked (`KBox::into_raw`) and queued.
unsafe extern "C" fn reap_fn(work: *mut bindings::work_struct) {
    // SAFETY: Per this function's contract: ours from here on.
    let reap = unsafe { KBox::from_raw(kernel::container_of!(work, Reap, work).cast_mut()) };
    // SAFETY: The dropped `UserWorkqueue`'s, handed over with their
    // ownership; a fault work still running ends with its fault, and
    // touches only its own count (`pending`) afterwards.
    unsafe {
        bindings::destroy_workqueue(reap.wq.as_ptr());
        bindings::destroy_workqueue(reap.faults.as_ptr());
    }
    drop(reap);
    // SAFETY: Gives back the module reference its queuing took; the last
    // thing this work does (module exit drains the reap workqueue).
    unsafe { bindings::rrxe_helper_module_put() };
}

/// A QP's task as its fault work sees it: the task while the QP lives,
/// null once it is shut down.
struct TaskPtr(*const QpTask);

// SAFETY: Only a pointer, dereferenced under `FaultLink::task`'s lock
// while non-null, which `QpTask::shutdown` clears before the task goes.
unsafe impl Send for TaskPtr {}

/// The fault work a QP queued and that has not started yet, or null.
struct QueuedPtr(*mut FaultWork);

// SAFETY: Only a pointer, taken under `FaultLink::queued`'s lock, by the
// work as it starts or by `QpTask::shutdown` once it cancelled the work.
unsafe impl Send for QueuedPtr {}

/// What a QP shares with its fault work ([`QpTask::fault_in`]), which may
/// outlive it: the work wakes the QP through it, if the QP is still there.
#[pin_data]
struct FaultLink {
    #[pin]
    task: IrqSpinLock<TaskPtr>,
    /// The work while it is queued and not started: the QP's destroy
    /// cancels it then (it would only wait its turn behind faults that
    /// never end, holding the memory).
    #[pin]
    queued: IrqSpinLock<QueuedPtr>,
    /// A fault work is queued or running.
    busy: AtomicBool,
    /// The last miss whose fault failed, for the next access that misses
    /// (once): the same miss gets the error, not another fault.
    #[pin]
    failed: IrqSpinLock<Option<Miss>>,
}

/// One fault, faulted in by a work item of its own.
struct FaultWork {
    work: Opaque<bindings::work_struct>,
    link: Arc<FaultLink>,
    miss: Option<Miss>,
    /// The count of faults under way of the user's workqueues (`None`:
    /// the module's) that this one is in until it ends.
    pending: Option<Arc<AtomicU32>>,
    /// A reference on the module, held from the queuing to the end: while
    /// a fault is under way (on memory that may never answer), `rmmod` is
    /// refused, "in use", rather than waiting for it in module exit.
    module: bool,
    /// The umem's release reads its device: kept until the miss goes.
    _dev: DeviceMem,
}

impl FaultWork {
    /// Frees the work once it ran or was cancelled: the miss first (its
    /// umem's release reads the device: sleeps), the device reference,
    /// then the user's count of faults under way (the user's workqueues
    /// may go once it is 0: nothing here may touch them after).
    fn free(self: KBox<Self>) {
        let FaultWork {
            link,
            miss,
            pending,
            module,
            _dev,
            ..
        } = KBox::into_inner(self);
        drop(miss);
        drop(link);
        drop(_dev);
        if let Some(p) = pending {
            p.fetch_sub(1, Ordering::Release);
        }
        if module {
            // Module exit drains every workqueue a fault work runs on (the
            // user's, through their destruction, and the module's) and
            // waits for a destroy in progress, so the rest of this call
            // and of the work still run in loaded code.
            // SAFETY: Gives back the reference `fault_in` took.
            unsafe { bindings::rrxe_helper_module_put() };
        }
    }
}

/// The fault work: faults the miss in, then wakes the QP (if it is still
/// there).
///
/// # Safety
///
/// Only the workqueue calls this, with the work of a `FaultWork` that
/// [`QpTask::fault_in`] leaked (`KBox::into_raw`) and queued.
unsafe extern "C" fn fault_work_fn(work: *mut bindings::work_struct) {
    // SAFETY: Per this function's contract: ours from here on (the QP's
    // destroy takes it only by cancelling the work, which has started).
    let mut fw = unsafe { KBox::from_raw(kernel::container_of!(work, FaultWork, work).cast_mut()) };
    fw.link.queued.lock().0 = core::ptr::null_mut();
    let failed = fw.miss.as_ref().is_some_and(|m| m.fault_in().is_err());
    // A failure is kept for the QP's next miss, unless the QP is gone.
    // (What was kept before goes back in the box, released with it.)
    if failed && !fw.link.task.lock().0.is_null() {
        let missed = fw.miss.take();
        let old = core::mem::replace(&mut *fw.link.failed.lock(), missed);
        fw.miss = old;
    }
    fw.link.busy.store(false, Ordering::Release);
    {
        let t = fw.link.task.lock();
        if !t.0.is_null() {
            // SAFETY: Non-null under the lock: `shutdown` has not cleared
            // it, so the task is live (it takes this lock to clear it).
            unsafe { (*t.0).schedule() };
        }
    }
    fw.free();
}

/// What [`QpTask::fault_in`] made of a miss.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    /// A fault work was queued for it: try the access again when the
    /// QP's work runs next.
    Queued,
    /// A fault work is under way already (or none could be had now): try
    /// the access again when the QP's work runs next.
    Pending,
    /// The same access's fault failed: the memory cannot be had (an
    /// address its owner does not map, a file that gave an error).
    Failed,
}

/// [`FaultJob`]s of one owner queued or running, past which
/// [`spawn_fault_job`] refuses more: what a user queues (`advise_mr`
/// without its flush flag), and the kernel memory it holds, is bounded,
/// and half of the fault workqueue's slots (16 at least) stay for the
/// faults its QPs wait for.
pub(crate) const FAULT_JOBS_MAX: u32 = 8;

/// [`FaultJob`]s of privileged callers (on the module's `rrxe_faults`).
static MODULE_JOBS: AtomicU32 = AtomicU32::new(0);

/// Work that faults memory in for a caller that does not wait for it (a
/// prefetch, `advise_mr` without its flush flag), queued by
/// [`spawn_fault_job`]. It runs where that owner's QPs' faults run, so a
/// user whose memory is slow to answer fills its own slots only.
///
/// `work` comes first (`repr(C)`): the work function finds the job at the
/// work's address.
#[repr(C)]
struct FaultJob<F> {
    work: Opaque<bindings::work_struct>,
    job: Option<F>,
    /// The owner's count of faults under way (`None`: the module's), this
    /// one in it until it ends.
    pending: Option<Arc<AtomicU32>>,
    slot: JobSlot,
    /// What the job's memory needs to be released (its device).
    _dev: DeviceMem,
}

/// One of an owner's [`FAULT_JOBS_MAX`] job slots (`None`: of
/// [`MODULE_JOBS`]), given back on drop.
struct JobSlot(Option<Arc<AtomicU32>>);

impl JobSlot {
    /// A slot of `jobs` if one is free.
    fn take(jobs: Option<Arc<AtomicU32>>) -> Option<Self> {
        jobs.as_deref()
            .unwrap_or(&MODULE_JOBS)
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < FAULT_JOBS_MAX).then_some(n + 1)
            })
            .ok()?;
        Some(Self(jobs))
    }
}

impl Drop for JobSlot {
    fn drop(&mut self) {
        self.0
            .as_deref()
            .unwrap_or(&MODULE_JOBS)
            .fetch_sub(1, Ordering::Release);
    }
}

/// A reference on this module, given back on drop.
struct ModuleRef(());

impl ModuleRef {
    /// The reference, unless the module is going away.
    fn get() -> Option<Self> {
        // SAFETY: Takes a reference on this module unless it is going
        // away; no preconditions.
        unsafe { bindings::rrxe_helper_module_tryget() }.then_some(Self(()))
    }
}

impl Drop for ModuleRef {
    fn drop(&mut self) {
        // SAFETY: Gives back the reference `get` took. Module exit drains
        // every workqueue a holder runs on, so what follows the drop in a
        // work still runs in loaded code.
        unsafe { bindings::rrxe_helper_module_put() };
    }
}

impl<F> FaultJob<F> {
    /// Ends the job once it ran: its captures first (a umem's release
    /// reads the device: sleeps), then the device reference and the
    /// counts (the user's workqueues may go once `pending` is 0: nothing
    /// here touches them after).
    fn end(self: KBox<Self>) {
        let FaultJob {
            job,
            pending,
            slot,
            _dev,
            ..
        } = KBox::into_inner(self);
        drop(job);
        drop(_dev);
        drop(slot);
        if let Some(p) = pending {
            p.fetch_sub(1, Ordering::Release);
        }
    }
}

/// Runs `job` in a work item on the fault workqueue of `owner` (a user's:
/// see [`UserWorkqueue`]; `None`: the module's `rrxe_faults`), holding
/// `dev` until it ends. Refused, with `job` handed back: `EBUSY` while the
/// owner has [`FAULT_JOBS_MAX`] jobs queued or running (the caller may do
/// the work itself), `ENODEV` while the module goes away, `ENOMEM`.
pub(crate) fn spawn_fault_job<F: FnOnce() + Send + 'static>(
    owner: Option<&UserWorkqueue>,
    dev: DeviceMem,
    job: F,
) -> Result<(), (Error, F)> {
    let (wq, pending, jobs) = match owner {
        Some(u) => (
            u.faults.as_ptr(),
            Some(u.pending.clone()),
            Some(u.jobs.clone()),
        ),
        None => (FAULT_WQ.load(Ordering::Acquire), None, None),
    };
    if wq.is_null() {
        return Err((ENODEV, job));
    }
    let Some(slot) = JobSlot::take(jobs) else {
        return Err((EBUSY, job));
    };
    let Some(module) = ModuleRef::get() else {
        return Err((ENODEV, job));
    };
    let boxed = KBox::new(
        FaultJob {
            work: Opaque::uninit(),
            job: None,
            pending: None,
            slot,
            _dev: dev,
        },
        GFP_KERNEL,
    );
    let Ok(mut boxed) = boxed else {
        return Err((ENOMEM, job));
    };
    boxed.job = Some(job);
    if let Some(p) = &pending {
        p.fetch_add(1, Ordering::AcqRel);
    }
    boxed.pending = pending;
    // The work gives the reference back when it ends (`fault_job_fn`).
    core::mem::forget(module);
    let raw = KBox::into_raw(boxed);
    // SAFETY: `raw` is ours, leaked just above, until `fault_job_fn` takes
    // it back; `wq` is live: the owner's, which the caller holds (dropping
    // it drains or reaps it), or the module's, which outlives every
    // device.
    unsafe {
        let work = Opaque::raw_get(core::ptr::addr_of!((*raw).work));
        bindings::rrxe_helper_init_work(work, Some(fault_job_fn::<F>));
        bindings::rrxe_helper_queue_qp_work(wq, work, false);
    }
    Ok(())
}

/// A [`FaultJob`]'s work: runs the job, then ends it.
///
/// # Safety
///
/// Only the workqueue calls this, with the work of a `FaultJob<F>` that
/// [`spawn_fault_job`] leaked (`KBox::into_raw`) and queued.
unsafe extern "C" fn fault_job_fn<F: FnOnce() + Send + 'static>(work: *mut bindings::work_struct) {
    // SAFETY: Per this function's contract; `work` is the first field of
    // the `repr(C)` job, so its address is the job's. Ours from here on
    // (nothing cancels a job).
    let mut fj = unsafe { KBox::from_raw(work.cast::<FaultJob<F>>()) };
    if let Some(job) = fj.job.take() {
        job();
    }
    fj.end();
    // The reference `spawn_fault_job` took for the work, given back last.
    drop(ModuleRef(()));
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
/// of an `Arc<UserWorkqueue>` while `dying` is not set, and a non-null
/// `faults` one of an `Arc<FaultLink>` whose `task` is this task.
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
    /// What the QP shares with its fault work (a user QP's: see
    /// [`Self::fault_in`]): a reference (`Arc::into_raw`) held from
    /// [`Self::set_owner`] until [`Self::shutdown`], or null.
    faults: AtomicPtr<FaultLink>,
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
    /// [`Self::shutdown`]. A user QP may wait for faults on its memory
    /// ([`Self::fault_in`]): what it shares with their work is made here.
    /// Called once.
    pub(crate) fn set_owner(&self, owner: Owner, wq: Option<Arc<UserWorkqueue>>) -> Result {
        if owner == Owner::User && self.faults.load(Ordering::Acquire).is_null() {
            let (task, none) = (
                TaskPtr(self as *const Self),
                QueuedPtr(core::ptr::null_mut()),
            );
            let link = Arc::pin_init(
                pin_init!(FaultLink {
                    task <- new_irq_spinlock!(task, "FaultLink::task"),
                    queued <- new_irq_spinlock!(none, "FaultLink::queued"),
                    busy: AtomicBool::new(false),
                    failed <- new_irq_spinlock!(None, "FaultLink::failed"),
                }),
                GFP_KERNEL,
            )?;
            // INVARIANT: Its `task` is this task; held until `shutdown`.
            self.faults
                .store(Arc::into_raw(link).cast_mut(), Ordering::Release);
        }
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
        Ok(())
    }

    /// The QP's engines found a page of its memory paged on demand not in
    /// (`miss`): a work item of its own faults it in, on its user's fault
    /// workqueue (the module's, `rrxe_faults`, for a QP without one: a
    /// privileged context's, whose QPs' work runs on the module's user
    /// workqueue, where a fault would hold a slot of every such QP), and
    /// queues the QP's work when done. The QP's work never waits for
    /// the owner's memory: its engines park (with their state as it was)
    /// and try the access again when the work runs next. A fault already
    /// under way is not doubled: this miss is tried again after it. `dev`
    /// is the QP's device (the umem's release after the QP's needs it).
    /// Sleeps (allocates).
    pub(crate) fn fault_in(&self, miss: Miss, dev: DeviceMem) -> Fault {
        // (A dying QP's engines run no more: nothing to wait for.)
        let Some(link) = self.link() else {
            return Fault::Failed;
        };
        // The last failure is for this miss only, once (a miss after it
        // is another access, or the QP's next connection).
        let failed = link.failed.lock().take();
        if failed.is_some_and(|f| f.same(&miss)) {
            return Fault::Failed;
        }
        if link.busy.swap(true, Ordering::AcqRel) {
            return Fault::Pending;
        }
        let fw = KBox::new(
            FaultWork {
                work: Opaque::uninit(),
                link: link.clone(),
                miss: Some(miss),
                pending: None,
                module: false,
                _dev: dev,
            },
            GFP_KERNEL,
        );
        let Ok(mut fw) = fw else {
            // The next run tries again.
            link.busy.store(false, Ordering::Release);
            self.schedule();
            return Fault::Pending;
        };
        // SAFETY: Takes a reference on this module unless it is going
        // away; `free` gives it back.
        fw.module = unsafe { bindings::rrxe_helper_module_tryget() };
        if !fw.module {
            // The module is going away: its QPs are being destroyed.
            fw.free();
            link.busy.store(false, Ordering::Release);
            return Fault::Failed;
        }
        let fw = KBox::into_raw(fw);
        // SAFETY: `fw` is ours, leaked just above.
        if !unsafe { self.queue_fault(&link, fw) } {
            // SAFETY: Not queued: still ours, from `into_raw`.
            unsafe { KBox::from_raw(fw) }.free();
            link.busy.store(false, Ordering::Release);
            return Fault::Pending;
        }
        Fault::Queued
    }

    /// Queues the fault work `fw` on the fault workqueue of the QP's
    /// owner (the user's, counted in its faults under way, or the
    /// module's); `false` if the QP is dying. Queued under the task's
    /// lock: `shutdown` (which sets `dying` under it) then finds it in
    /// `queued`, and the user's workqueues are live (the task holds them
    /// until `shutdown`).
    ///
    /// # Safety
    ///
    /// `fw` must be a leaked `KBox` the caller owns; it stays the
    /// caller's if this returns `false`.
    unsafe fn queue_fault(&self, link: &FaultLink, fw: *mut FaultWork) -> bool {
        let mut queued = false;
        self.if_alive(|| {
            let owner = self.user_wq.load(Ordering::Acquire);
            let wq = if owner.is_null() {
                FAULT_WQ.load(Ordering::Acquire)
            } else {
                // SAFETY: By the invariant a non-null `user_wq` is a live
                // reference while the task is not dying.
                unsafe { (*owner).faults.as_ptr() }
            };
            if wq.is_null() {
                return;
            }
            let pending = (!owner.is_null()).then(|| {
                // SAFETY: Live while not dying (the invariant).
                let p = unsafe { (*owner).pending.clone() };
                p.fetch_add(1, Ordering::AcqRel);
                p
            });
            // `wq` is live: `owner`'s, whose drop drains it, or the
            // module's, which outlives every QP.
            // SAFETY: `fw` is ours (the caller's contract) until the work
            // runs, or `shutdown` cancels it under `queued`'s lock; either
            // takes it back.
            unsafe {
                (*fw).pending = pending;
                let work = Opaque::raw_get(core::ptr::addr_of!((*fw).work));
                bindings::rrxe_helper_init_work(work, Some(fault_work_fn));
                link.queued.lock().0 = fw;
                bindings::rrxe_helper_queue_qp_work(wq, work, false);
            }
            queued = true;
        });
        queued
    }

    /// What the QP shares with its fault work, if anything (see
    /// [`Self::fault_in`]).
    fn link(&self) -> Option<Arc<FaultLink>> {
        let mut link = None;
        self.if_alive(|| {
            let p = self.faults.load(Ordering::Acquire);
            if !p.is_null() {
                // SAFETY: As in `fault_in`.
                link = Some(unsafe { ArcBorrow::from_raw(p) }.into());
            }
        });
        link
    }

    /// Whether a fault the QP's engines wait for is under way (see
    /// [`Self::fault_in`]); its end queues the QP's work.
    pub(crate) fn fault_busy(&self) -> bool {
        self.link().is_some_and(|l| l.busy.load(Ordering::Acquire))
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
        let link = self.faults.swap(core::ptr::null_mut(), Ordering::AcqRel);
        if !link.is_null() {
            // SAFETY: The reference `set_owner` stored (`into_raw`), taken
            // out once. A fault work still under way keeps the link (its
            // own reference) and wakes nothing from now on: it reads the
            // task under the lock taken here.
            let link = unsafe { Arc::from_raw(link) };
            link.task.lock().0 = core::ptr::null();
            let failed = link.failed.lock().take();
            drop(failed);
            // A fault work that has not started is cancelled (it would
            // wait its turn behind faults that may never end).
            let cancelled = {
                let mut q = link.queued.lock();
                // SAFETY: A non-null `queued` is a work `fault_in` queued
                // that has not taken itself out yet (it does so under this
                // lock as it starts): its box is live while we hold it.
                if !q.0.is_null() && unsafe { bindings::cancel_work((*q.0).work.get()) } {
                    core::mem::replace(&mut q.0, core::ptr::null_mut())
                } else {
                    core::ptr::null_mut()
                }
            };
            if !cancelled.is_null() {
                // SAFETY: Cancelled before it ran: the box is ours again.
                unsafe { KBox::from_raw(cancelled) }.free();
            }
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
