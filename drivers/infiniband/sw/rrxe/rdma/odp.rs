// SPDX-License-Identifier: GPL-2.0

//! User memory paged on demand (`struct ib_umem_odp`), for MRs registered
//! with `IB_ACCESS_ON_DEMAND`: nothing is pinned. An access works page by
//! page under the umem's `umem_mutex`, on pages that are in; a page that
//! is not makes the access fail with `EAGAIN` (a [`Miss`]), and a work
//! item of its own faults it in ([`OdpUmem::fault_in`], that is
//! `ib_umem_odp_map_dma_and_lock`, `hmm_range_fault` in the owner's
//! address space), for as long as the owner's memory takes to answer,
//! while the access is tried again later. Before the owner's page tables
//! change (munmap, madvise, reclaim, migration, a fork's copy-on-write),
//! the MMU interval notifier (`rrxe_odp_invalidate` in rrxe_helpers.c)
//! takes the same mutex and unmaps the pages of the range, so an access
//! either ends before the change or finds the page gone; none reaches a
//! page the owner no longer maps there.
//!
//! # Context
//!
//! Every access may sleep (the mutex; the fault, in its own work item):
//! process context or a work item only, never under a spinlock or in
//! softirq. While the mutex is held nothing here allocates or faults,
//! since reclaim may invalidate the umem and wait for the mutex.

use super::bindings;
use super::charge::{MemBudget, MemCharge};
use super::crc::Fold;
use super::device::Device;
use super::error::eopnotsupp;
use super::ib::{Access, ReregFlags};
use super::mr::PAGE_SIZE;
use super::ops::DeviceOps;
use super::skb::Src;
use core::ops::Range;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::rbtree::{RBTree, RBTreeNodeReservation};
use kernel::sync::{Arc, Mutex, UniqueArc};

/// Whether the kernel pages memory on demand for RDMA
/// (`CONFIG_INFINIBAND_ON_DEMAND_PAGING`).
pub(crate) fn enabled() -> bool {
    // SAFETY: Reads a build-time constant.
    unsafe { bindings::rrxe_helper_odp_enabled() }
}

/// A device's on-demand paging capabilities (`struct ib_odp_caps`).
pub(crate) type OdpCaps = bindings::ib_odp_caps;

/// The capabilities `query_device` reports: `general`
/// (`IB_ODP_SUPPORT*`), and what RC and UD QPs do with ODP MRs
/// (`IB_ODP_SUPPORT_SEND`, ..); none if the kernel has no ODP.
pub(crate) fn caps(general: u64, rc: u32, ud: u32) -> OdpCaps {
    let mut c = OdpCaps::default();
    if enabled() {
        c.general_caps = general;
        c.per_transport_caps.rc_odp_caps = rc;
        c.per_transport_caps.ud_odp_caps = ud;
    }
    c
}

/// The user memory of an on-demand paging MR: `[addr, addr + len)` of the
/// process that registered it.
///
/// # Invariants
///
/// `raw` is an `ib_umem_odp` from `ib_umem_odp_get` (or a part of an
/// implicit one, from `ib_umem_odp_alloc_child`) with pages of
/// `PAGE_SIZE`, released on drop; its range is `[addr, addr + len)`.
pub(crate) struct OdpUmem {
    raw: NonNull<bindings::ib_umem_odp>,
    addr: u64,
    len: u64,
    /// The page tables (`pfn_list`, `dma_list`: 16 bytes a page) are the
    /// registering process's to pay for, as pinned memory (see
    /// [`MemCharge`]): they are the kernel memory a huge range of
    /// unmapped addresses would otherwise cost nothing to ask for.
    _charge: Option<MemCharge>,
    /// A fault over it succeeded once ([`Self::fault_in`]): a part of an
    /// implicit MR that never had one holds nothing worth keeping.
    faulted: AtomicBool,
}

// SAFETY: The umem may be accessed and released from any thread; its
// state is guarded by its mutex.
unsafe impl Send for OdpUmem {}
// SAFETY: Shared access only faults, locks and copies under the mutex.
unsafe impl Sync for OdpUmem {}

/// `umem_mutex` held, unlocked on drop.
struct Locked<'a>(&'a OdpUmem);

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        // SAFETY: `Locked` is only made with the mutex held by us.
        unsafe { bindings::rrxe_helper_odp_unlock(self.0.raw.as_ptr()) };
    }
}

impl OdpUmem {
    /// Registers `[addr, addr + len)` of the calling process for `access`
    /// (`IB_ACCESS_*`, with `IB_ACCESS_ON_DEMAND`), without faulting
    /// anything in. Sleeps.
    pub(crate) fn get<T: DeviceOps>(
        dev: &Device<T>,
        addr: u64,
        len: u64,
        access: Access,
    ) -> Result<Self> {
        if !enabled() || !access.contains(Access::ON_DEMAND) {
            return Err(eopnotsupp());
        }
        let end = addr.checked_add(len).ok_or(EINVAL)?;
        if len == 0 || usize::try_from(len).is_err() {
            return Err(EINVAL);
        }
        // SAFETY: Only compares the range with the user address limit.
        if !unsafe { bindings::rrxe_helper_user_range_ok(addr, len) } {
            return Err(EFAULT);
        }
        let pages = end.div_ceil(PAGE_SIZE) - addr / PAGE_SIZE;
        let table = pages.checked_mul(16).ok_or(ENOMEM)?;
        let charge = MemCharge::user(usize::try_from(table).map_err(|_| ENOMEM)?)?;
        // SAFETY: `ib_umem_odp_get` takes the calling process's mm and
        // returns a umem or an error pointer; the ops it registers are
        // the helper file's.
        let p =
            unsafe { bindings::rrxe_helper_odp_get(dev.as_raw(), addr, len, access.raw() as i32) };
        let p = kernel::error::from_err_ptr(p)?;
        // INVARIANT: A umem over `[addr, addr + len)`; its page size is
        // checked below (the drop releases it if wrong).
        let this = Self {
            raw: NonNull::new(p).ok_or(ENOMEM)?,
            addr,
            len,
            _charge: charge,
            faulted: AtomicBool::new(false),
        };
        // SAFETY: A live umem; the field is set at creation.
        let shift = unsafe { bindings::rrxe_helper_odp_page_shift(this.raw.as_ptr()) };
        // `PAGE_SHIFT`, or the huge page's with `IB_ACCESS_HUGETLB` (the
        // helper then finds each base page in its huge page); anything
        // else is not a page size this code knows.
        // SAFETY: Returns a constant.
        let huge = unsafe { bindings::rrxe_helper_hpage_shift() };
        if u64::from(shift) != u64::from(bindings::PAGE_SHIFT) && shift != huge {
            return Err(eopnotsupp());
        }
        Ok(this)
    }

    /// The first user address of the registration.
    pub(crate) fn addr(&self) -> u64 {
        self.addr
    }

    /// The user address past the registration's last byte.
    pub(crate) fn end(&self) -> u64 {
        self.addr.saturating_add(self.len)
    }

    /// Whether the memory may be written (`ib_umem.writable`, from the
    /// access flags at registration); only then are pages faulted in for
    /// writing.
    pub(crate) fn writable(&self) -> bool {
        // SAFETY: By the type invariant `raw` is a live umem.
        unsafe { umem_writable(self.raw) }
    }

    /// `ib_umem_check_rereg`: EACCES if an access change without a new
    /// translation asks for write access to memory registered read-only.
    pub(crate) fn check_rereg(&self, flags: ReregFlags, access: Access) -> Result {
        // SAFETY: By the type invariant `raw` is a live umem.
        unsafe { umem_check_rereg(self.raw, flags, access) }
    }

    fn lock(&self) -> Locked<'_> {
        // SAFETY: By the type invariant `raw` is live; sleeps (callers
        // are in process context, see the module's documentation).
        unsafe { bindings::rrxe_helper_odp_lock(self.raw.as_ptr()) };
        Locked(self)
    }

    /// The page that holds user address `va`, if it is mapped (for
    /// writing if `write`); valid while `_g` is held.
    fn page(&self, _g: &Locked<'_>, va: u64, write: bool) -> Option<NonNull<bindings::page>> {
        // SAFETY: The mutex is held (`_g`), under which alone the umem's
        // page table changes; the helper checks `va` against its range.
        NonNull::new(unsafe { bindings::rrxe_helper_odp_page(self.raw.as_ptr(), va, write) })
    }

    /// Whether every page of `[va, end)` is mapped (for writing if
    /// `write`).
    fn mapped(&self, g: &Locked<'_>, va: u64, end: u64, write: bool) -> bool {
        let mut p = va - va % PAGE_SIZE;
        while p < end {
            if self.page(g, p, write).is_none() {
                return false;
            }
            p += PAGE_SIZE;
        }
        true
    }

    /// Checks that the `n` bytes at `va` lie in the registration (and that
    /// it may be written, for `write`); their end.
    fn check(&self, va: u64, n: u64, write: bool) -> Result<u64> {
        let end = va.checked_add(n).ok_or(EFAULT)?;
        let rend = self.addr.checked_add(self.len).ok_or(EFAULT)?;
        if n == 0 || va < self.addr || end > rend {
            return Err(EFAULT);
        }
        if write && !self.writable() {
            return Err(EACCES);
        }
        Ok(end)
    }

    /// The mutex held, if every page of the `n` bytes at `va` (which must
    /// lie in the registration) is mapped; `EAGAIN` if one is not: the
    /// access would have to fault it in, which only [`Self::fault_in`]
    /// does. Sleeps only for the mutex, which is held for short times.
    fn map(&self, va: u64, n: u64, write: bool) -> Result<Locked<'_>> {
        let end = self.check(va, n, write)?;
        let g = self.lock();
        if self.mapped(&g, va, end, write) {
            return Ok(g);
        }
        Err(EAGAIN)
    }

    /// Faults in every page of the `n` bytes at `va` (for writing if
    /// `write`), as the owner's access would: waits as long as the owner's
    /// memory takes to answer (a slow file, a disk). For a work item of
    /// its own, never for a QP's run (see [`Miss`]). Sleeps.
    pub(crate) fn fault_in(&self, va: u64, n: u64, write: bool) -> Result {
        let end = self.check(va, n, write)?;
        let g = self.map_and_lock(va, n, write, true)?;
        // (What the access will look for: every page, mapped as it needs.
        // Not so, it would only miss again.)
        if !self.mapped(&g, va, end, write) {
            return Err(EFAULT);
        }
        drop(g);
        self.faulted.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// Maps the pages of the `n` bytes at `va` that the owner's page
    /// tables hold now (for writing where they allow it), faulting none
    /// in: the rest stay out, for an access to fault in. Sleeps.
    pub(crate) fn snapshot(&self, va: u64, n: u64) -> Result {
        self.check(va, n, false)?;
        drop(self.map_and_lock(va, n, false, false)?);
        Ok(())
    }

    /// `ib_umem_odp_map_dma_and_lock` over the `n` bytes at `va` (checked
    /// to lie in the registration), faulting them in if `fault`.
    fn map_and_lock(&self, va: u64, n: u64, write: bool, fault: bool) -> Result<Locked<'_>> {
        // SAFETY: A live umem (the type invariant); the helper refuses a
        // range outside it (EFAULT) and returns with the mutex held
        // exactly when it succeeds.
        let r = unsafe {
            bindings::rrxe_helper_odp_map_and_lock(self.raw.as_ptr(), va, n, write, fault)
        };
        if r < 0 {
            return Err(Error::from_errno(r));
        }
        Ok(Locked(self))
    }

    /// Runs `f` on each page's part of the `n` bytes at `va`: a kernel
    /// pointer to it, valid for the call only, and which of the `n` bytes
    /// it holds; `EAGAIN` without calling it if a page is not in (see
    /// [`Self::map`]). `f` runs with the mutex held and must neither sleep
    /// nor allocate.
    fn walk(
        &self,
        va: u64,
        n: usize,
        write: bool,
        mut f: impl FnMut(*mut u8, Range<usize>) -> Result,
    ) -> Result {
        if n == 0 {
            return Ok(());
        }
        let g = self.map(va, n as u64, write)?;
        let mut done = 0usize;
        while done < n {
            let at = va + done as u64;
            let in_page = (at % PAGE_SIZE) as usize;
            let chunk = (PAGE_SIZE as usize - in_page).min(n - done);
            let page = self.page(&g, at, write).ok_or(EFAULT)?;
            // SAFETY: The page is mapped in the umem while the mutex is
            // held (`g`): the owner's page tables cannot drop it before
            // the notifier, which waits for the mutex.
            let base = unsafe { bindings::rrxe_helper_kmap_local_page(page.as_ptr()) }.cast::<u8>();
            if base.is_null() {
                return Err(EFAULT);
            }
            // SAFETY: `in_page < PAGE_SIZE`: inside the mapped page.
            let r = f(unsafe { base.add(in_page) }, done..done + chunk);
            // SAFETY: Mapped above, the last local mapping made.
            unsafe { bindings::rrxe_helper_kunmap_local(base.cast()) };
            r?;
            done += chunk;
        }
        Ok(())
    }

    /// Copies `src` to user address `va` of the registration, if its pages
    /// are in for writing (`EAGAIN` if not).
    pub(crate) fn write(&self, va: u64, src: Src<'_>) -> Result {
        self.walk(va, src.len(), true, |p, at| {
            let part = src.get(at).ok_or(EFAULT)?;
            // SAFETY: `p` is valid for the `part.len()` bytes of the page
            // `walk` mapped; the owner may access them at once, as DMA.
            unsafe { part.copy_to(p) }
        })
    }

    /// Copies from user address `va` of the registration into `buf`,
    /// through `fold`, if its pages are in (`EAGAIN` if not).
    pub(crate) fn read(&self, va: u64, buf: &mut [u8], fold: &mut Fold) -> Result {
        self.walk(va, buf.len(), false, |p, at| {
            let dst = buf.get_mut(at).ok_or(EFAULT)?;
            // SAFETY: As in `write`; `dst` is ours, not the user's page.
            unsafe { fold.copy(dst.as_mut_ptr(), p, dst.len()) };
            Ok(())
        })
    }

    /// Runs `f` on the 8-byte word at user address `va` (8-aligned) of the
    /// registration, if it is in for writing (`EAGAIN` if not); what `f`
    /// returns. `f` runs
    /// with the umem's mutex held: it must neither sleep nor allocate.
    pub(crate) fn atomic(&self, va: u64, f: impl FnOnce(&AtomicU64) -> u64) -> Result<u64> {
        if va % 8 != 0 {
            return Err(EINVAL);
        }
        let mut f = Some(f);
        let mut out = None;
        self.walk(va, 8, true, |p, at| {
            if at.len() != 8 {
                return Err(EFAULT);
            }
            // SAFETY: 8 aligned bytes of the page `walk` mapped, for this
            // call; others access the word atomically (or race, as DMA).
            let w = unsafe { &*p.cast::<AtomicU64>() };
            if let Some(f) = f.take() {
                out = Some(f(w));
            }
            Ok(())
        })?;
        out.ok_or(EFAULT)
    }
}

/// An access that found a page of `umem` not in: the `len` bytes at user
/// address `va`, for writing if `write`. The access failed with `EAGAIN`
/// and is to be tried again once a work item has faulted them in
/// ([`OdpUmem::fault_in`]); the miss holds the umem until then.
pub(crate) struct Miss {
    pub(crate) umem: Arc<OdpUmem>,
    pub(crate) va: u64,
    pub(crate) len: u64,
    pub(crate) write: bool,
}

/// Bytes a fault takes in at once from a miss on (in the umem): a
/// message's next packets find their pages in, and a 1 MiB WRITE into
/// untouched memory costs four faults, not 256.
const FAULT_AHEAD: u64 = 256 * 1024;

impl Miss {
    /// Faults the missed bytes in (see [`OdpUmem::fault_in`]), with what
    /// follows them in the umem up to [`FAULT_AHEAD`] bytes if that can
    /// be had (the owner may map nothing there). Sleeps.
    pub(crate) fn fault_in(&self) -> Result {
        let u = &self.umem;
        let ahead = u
            .end()
            .saturating_sub(self.va)
            .min(FAULT_AHEAD.max(self.len));
        if ahead > self.len && u.fault_in(self.va, ahead, self.write).is_ok() {
            return Ok(());
        }
        u.fault_in(self.va, self.len, self.write)
    }

    /// Whether `other` missed the same bytes of the same memory.
    pub(crate) fn same(&self, other: &Miss) -> bool {
        Arc::ptr_eq(&self.umem, &other.umem)
            && self.va == other.va
            && self.len == other.len
            && self.write == other.write
    }
}

impl Drop for OdpUmem {
    fn drop(&mut self) {
        // SAFETY: By the type invariant `raw` is ours to release; this
        // unmaps its pages and removes its notifier (sleeps).
        unsafe { bindings::rrxe_helper_odp_release(self.raw.as_ptr()) };
    }
}

/// `ib_umem.writable` of `raw`: set at creation, never changed.
///
/// # Safety
///
/// `raw` is a live umem.
unsafe fn umem_writable(raw: NonNull<bindings::ib_umem_odp>) -> bool {
    // SAFETY: Live by the caller's contract; the bit is only read.
    unsafe { (*raw.as_ptr()).umem.writable() != 0 }
}

/// `ib_umem_check_rereg` on `raw`: `EACCES` if an access change without
/// a new translation asks for write access to memory registered
/// read-only.
///
/// # Safety
///
/// `raw` is a live umem.
unsafe fn umem_check_rereg(
    raw: NonNull<bindings::ib_umem_odp>,
    flags: ReregFlags,
    access: Access,
) -> Result {
    // SAFETY: Live by the caller's contract; the function only reads the
    // umem's `writable` bit.
    kernel::error::to_result(unsafe {
        bindings::ib_umem_check_rereg(
            core::ptr::addr_of_mut!((*raw.as_ptr()).umem),
            flags.raw() as _,
            access.raw() as _,
        )
    })
}

/// The size of the parts of an implicit MR's address space (an
/// [`OdpUmem`] each, made on first access): a page table of 8 KiB.
pub(crate) const PART: u64 = 2 << 20;

/// The user memory of an implicit on-demand paging MR: the whole address
/// space of the process that registered it (`ibv_reg_mr(pd, NULL,
/// SIZE_MAX, IBV_ACCESS_ON_DEMAND | ..)`, user address = MR address).
///
/// It is cut into [`PART`]-aligned parts, each an explicit umem with its
/// own notifier, made when an access first reaches it and kept until the
/// MR goes (or at once dropped again if that first access failed: nothing
/// mapped there). Their page tables are charged to the registering
/// process's pinned memory under the limit it had when it registered
/// (the parts are made later, often in a work item).
///
/// # Invariants
///
/// `root` is an implicit `ib_umem_odp` from `ib_umem_odp_alloc_implicit`,
/// released on drop after the parts (field order); every part is a child
/// of it. `budget` holds the root's `owning_mm` grabbed (the root itself
/// does not), so the mm structure outlives the root.
#[pin_data]
pub(crate) struct ImplicitUmem {
    /// Keyed by the part's first address.
    #[pin]
    parts: Mutex<RBTree<u64, Arc<OdpUmem>>>,
    /// The root's own cost ([`IMPLICIT_CHARGE`]).
    _charge: MemCharge,
    budget: MemBudget,
    root: Root,
}

/// What an implicit MR costs its process's pinned memory before any part
/// is made, whatever its length: the kernel state behind it (the root
/// umem, its notifier, the MR), which pins nothing and would otherwise be
/// charged nothing, so that one process could register them by the
/// thousand with `RLIMIT_MEMLOCK` at 0. Under the default 8 MiB limit a
/// process without `CAP_IPC_LOCK` registers up to 2048 of them.
pub(crate) const IMPLICIT_CHARGE: usize = 4096;

/// The end of user addresses (`TASK_SIZE_MAX`).
pub(crate) fn user_end() -> u64 {
    // SAFETY: Reads a boot-time constant.
    unsafe { bindings::rrxe_helper_user_end() }
}

/// The implicit root umem, released on drop.
struct Root(NonNull<bindings::ib_umem_odp>);

// SAFETY: The root is only read (its `writable` bit) and released once.
unsafe impl Send for Root {}
// SAFETY: As for `Send`; children are made under `ImplicitUmem::parts`.
unsafe impl Sync for Root {}

impl Drop for Root {
    fn drop(&mut self) {
        // SAFETY: An implicit root from `ib_umem_odp_alloc_implicit`
        // (the `ImplicitUmem` invariant), released once; its children
        // were released before (they hold their own references on the
        // mm and the owner's pid).
        unsafe { bindings::rrxe_helper_odp_release(self.0.as_ptr()) };
    }
}

impl ImplicitUmem {
    /// Registers the calling process's whole address space for `access`
    /// (with `IB_ACCESS_ON_DEMAND`), without making any part. Sleeps.
    pub(crate) fn get<T: DeviceOps>(dev: &Device<T>, access: Access) -> Result<Arc<Self>> {
        if !enabled() || !access.contains(Access::ON_DEMAND) {
            return Err(eopnotsupp());
        }
        // (A user process's: the account is its mm, which the root
        // takes too.)
        let budget = MemBudget::current().ok_or(EINVAL)?;
        let charge = budget.charge(IMPLICIT_CHARGE)?;
        // SAFETY: `ib_umem_odp_alloc_implicit` takes the calling
        // process's mm and returns a root or an error pointer.
        let p =
            unsafe { bindings::rrxe_helper_odp_get_implicit(dev.as_raw(), access.raw() as i32) };
        let p = kernel::error::from_err_ptr(p)?;
        let root = Root(NonNull::new(p).ok_or(ENOMEM)?);
        // INVARIANT: An implicit root, and no parts yet.
        Arc::pin_init(
            pin_init!(Self {
                parts <- new_mutex!(RBTree::new(), "rrxe::ImplicitUmem::parts"),
                _charge: charge,
                budget,
                root,
            }),
            GFP_KERNEL,
        )
    }

    /// Whether the memory may be written (as [`OdpUmem::writable`]).
    pub(crate) fn writable(&self) -> bool {
        // SAFETY: By the type invariant `root` is a live umem.
        unsafe { umem_writable(self.root.0) }
    }

    /// As [`OdpUmem::check_rereg`].
    pub(crate) fn check_rereg(&self, flags: ReregFlags, access: Access) -> Result {
        // SAFETY: By the type invariant `root` is a live umem.
        unsafe { umem_check_rereg(self.root.0, flags, access) }
    }

    /// The part that holds user address `va`, and whether this call made
    /// it (then [`ImplicitUmem::forget`] it if the access fails). `EFAULT`
    /// outside user addresses, `ENOMEM` past the owner's limit. Sleeps.
    pub(crate) fn part(&self, va: u64) -> Result<(Arc<OdpUmem>, bool)> {
        let end = user_end();
        if va >= end {
            return Err(EFAULT);
        }
        let start = va - va % PART;
        let mut parts = self.parts.lock();
        if let Some(p) = parts.get(&start) {
            return Ok((p.clone(), false));
        }
        // The last part ends where user addresses do.
        let len = (end - start).min(PART);
        // Everything that can fail, before the part exists: it is not
        // released (which waits for its notifier) under the parts' lock.
        let slot = UniqueArc::new_uninit(GFP_KERNEL)?;
        let node = RBTreeNodeReservation::new(GFP_KERNEL)?;
        // The page table and the umem's own bookkeeping.
        let charge = self
            .budget
            .charge(((len / PAGE_SIZE) * 16 + 1024) as usize)?;
        // The parts' lock is held, so no part is made twice; nothing that
        // holds a part's mutex or runs its notifier takes that lock.
        // SAFETY: By the type invariant `root` is a live implicit root
        // whose mm the budget keeps allocated; `[start, start + len)` lies
        // in user addresses; the helper returns a child or an error.
        let p = unsafe { bindings::rrxe_helper_odp_alloc_child(self.root.0.as_ptr(), start, len) };
        let p = kernel::error::from_err_ptr(p)?;
        // INVARIANT: A child umem over `[start, start + len)` with pages
        // of `PAGE_SIZE` (`ib_umem_odp_alloc_child` sets it so); `p` is
        // not null (not an error pointer, and the allocator's).
        let part: Arc<OdpUmem> = slot
            .write(OdpUmem {
                raw: NonNull::new(p).ok_or(ENOMEM)?,
                addr: start,
                len,
                _charge: Some(charge),
                faulted: AtomicBool::new(false),
            })
            .into();
        parts.insert(node.into_node(start, part.clone()));
        Ok((part, true))
    }

    /// The part that holds user address `va` if an access made it.
    pub(crate) fn existing(&self, va: u64) -> Option<Arc<OdpUmem>> {
        self.parts.lock().get(&(va - va % PART)).cloned()
    }

    /// Drops `part` from the MR if it is still there and no fault over it
    /// ever succeeded: made by [`part`] for an access that failed, it
    /// holds nothing worth its table.
    ///
    /// [`part`]: ImplicitUmem::part
    pub(crate) fn forget(&self, part: &Arc<OdpUmem>) {
        if part.faulted.load(Ordering::Relaxed) {
            return;
        }
        let mut parts = self.parts.lock();
        let gone = match parts.get(&part.addr) {
            Some(p) if Arc::ptr_eq(p, part) => parts.remove(&part.addr),
            _ => None,
        };
        drop(parts);
        // (Its release, which may wait for a notifier, outside the lock.)
        drop(gone);
    }
}
