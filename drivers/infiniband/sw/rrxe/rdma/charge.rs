// SPDX-License-Identifier: GPL-2.0

//! Kernel memory a user process makes the driver allocate for it: the
//! rings of its QPs, CQs and SRQs (mapped into the process) and the
//! kernel's copy of its send WQEs. Without a bound, one `create_qp` with
//! 2^20 WRs of 32 SGEs would make the kernel allocate over 2 GiB for any
//! user who can open the device.
//!
//! A [`MemCharge`] counts such memory against the process's
//! `RLIMIT_MEMLOCK` (unless it has `CAP_IPC_LOCK`), in the same account
//! (`mm->pinned_vm`) where ib_core charges the pages a user MR pins: the
//! rings are as unswappable as pinned pages. The charge goes with what
//! holds it, even when the process has exited by then: a ring's with its
//! buffer (`SharedBuf`), which a mapping keeps after the object is
//! destroyed, the WQE copy's with the QP. A
//! resize charges the new ring before the old one goes, so both count for
//! a moment (a CQ of 5 MiB under an 8 MiB limit cannot grow, nor shrink
//! to 3 MiB or more).

use super::bindings;
use core::ptr::NonNull;
use kernel::prelude::*;

/// Pages charged to a process's pinned memory until dropped.
///
/// # Invariants
///
/// `mm` is grabbed (`mmgrab`) and carries `pages` more pinned pages than
/// it would without this charge.
pub(crate) struct MemCharge {
    mm: NonNull<bindings::mm_struct>,
    pages: u64,
}

// SAFETY: The mm is reference counted and the counter atomic: both may
// be released by any task (in process context: the objects that hold a
// charge are destroyed there).
unsafe impl Send for MemCharge {}
// SAFETY: No shared access is given out.
unsafe impl Sync for MemCharge {}

impl MemCharge {
    /// Charges `bytes` (rounded up to pages) to the calling process:
    /// `ENOMEM` over its limit, `None` for a caller without a user
    /// address space (a kernel consumer).
    pub(crate) fn user(bytes: usize) -> Result<Option<Self>> {
        let pages = (bytes as u64).div_ceil(1 << bindings::PAGE_SHIFT);
        // SAFETY: The helper charges the current task's mm, if any, and
        // returns it grabbed, or NULL, or an error pointer.
        let mm = unsafe { bindings::rrxe_helper_charge_pinned(pages as _) };
        let mm = kernel::error::from_err_ptr(mm)?;
        // INVARIANT: A non-null mm is grabbed and charged `pages`.
        Ok(NonNull::new(mm).map(|mm| Self { mm, pages }))
    }
}

impl Drop for MemCharge {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the mm is grabbed and charged.
        unsafe { bindings::rrxe_helper_uncharge_pinned(self.mm.as_ptr(), self.pages as _) };
    }
}

/// The pinned-memory account of the process that made an object, kept
/// for charges made later on its behalf, outside its system calls (the
/// parts of an implicit on-demand paging MR, created when a peer's access
/// first reaches them): its mm, and its `RLIMIT_MEMLOCK` as it was then.
///
/// # Invariants
///
/// `mm` is grabbed (`mmgrab`) until dropped.
pub(crate) struct MemBudget {
    mm: NonNull<bindings::mm_struct>,
    /// In pages; `usize::MAX` with `CAP_IPC_LOCK`.
    limit: usize,
}

// SAFETY: As for `MemCharge`: the mm is reference counted and the counter
// atomic.
unsafe impl Send for MemBudget {}
// SAFETY: `charge` only adds to the atomic counter.
unsafe impl Sync for MemBudget {}

impl MemBudget {
    /// The calling process's account; `None` for a kernel thread.
    pub(crate) fn current() -> Option<Self> {
        let mut limit: usize = 0;
        // SAFETY: The helper grabs the current task's mm, if any, and
        // writes its limit to the local variable.
        let mm = unsafe { bindings::rrxe_helper_budget_get(&mut limit) };
        // INVARIANT: A non-null mm is grabbed.
        NonNull::new(mm).map(|mm| Self { mm, limit })
    }

    /// Charges `bytes` (rounded up to pages) to the account: `ENOMEM`
    /// past the limit.
    pub(crate) fn charge(&self, bytes: usize) -> Result<MemCharge> {
        let pages = (bytes as u64).div_ceil(1 << bindings::PAGE_SHIFT);
        // SAFETY: By the type invariant the mm is grabbed (alive as a
        // structure); the helper grabs it once more if it charges.
        let r = unsafe {
            bindings::rrxe_helper_charge_pinned_to(self.mm.as_ptr(), pages as _, self.limit)
        };
        kernel::error::to_result(r)?;
        // INVARIANT: Charged `pages` and grabbed by the helper.
        Ok(MemCharge { mm: self.mm, pages })
    }
}

impl Drop for MemBudget {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the mm is grabbed by us.
        unsafe { bindings::rrxe_helper_mmdrop(self.mm.as_ptr()) };
    }
}

/// The user on whose behalf the calling task creates objects, for the
/// per-user bounds on a device's objects.
pub(crate) struct CallingUser;

impl CallingUser {
    /// The calling task's real uid (in the initial user namespace's
    /// numbering), or `None` when the task may exceed resource limits
    /// (`CAP_SYS_RESOURCE`) or is a kernel thread.
    pub(crate) fn bounded_uid() -> Option<u32> {
        // SAFETY: The helper reads the calling task's credentials.
        if unsafe { bindings::rrxe_helper_may_exceed_limits() } {
            return None;
        }
        // SAFETY: As above.
        Some(unsafe { bindings::rrxe_helper_current_uid() })
    }
}
