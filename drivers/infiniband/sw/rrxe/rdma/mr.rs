// SPDX-License-Identifier: GPL-2.0

//! Memory regions: the MR objects the driver allocates (ib_core does not
//! for MRs), pinned user memory (`ib_umem`), and fast-registration page
//! lists (`ib_sg_to_pages`).

use super::bindings;
use super::crc::Fold;
use super::device::Device;
use super::ib::{Access, ReregFlags};
use super::objects::{KMr, Mr, Obj};
use super::ops::DeviceOps;
use super::skb::{SkBuff, Src};
use core::marker::PhantomData;
use core::ptr::NonNull;
use kernel::prelude::*;

/// The page size of MR translations.
pub(crate) const PAGE_SIZE: u64 = 1 << bindings::PAGE_SHIFT;

/// What `alloc_mr` is asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MrType {
    /// Fast registration with a page list (`IB_MR_TYPE_MEM_REG`).
    MemReg,
    /// Fast registration of arbitrary SG lists (`IB_MR_TYPE_SG_GAPS`).
    SgGaps,
    /// Signature/integrity MRs (`IB_MR_TYPE_INTEGRITY`).
    Integrity,
}

impl MrType {
    pub(crate) fn from_raw(t: bindings::ib_mr_type) -> Option<Self> {
        match t {
            bindings::ib_mr_type_IB_MR_TYPE_MEM_REG => Some(Self::MemReg),
            bindings::ib_mr_type_IB_MR_TYPE_SG_GAPS => Some(Self::SgGaps),
            bindings::ib_mr_type_IB_MR_TYPE_INTEGRITY => Some(Self::Integrity),
            _ => None,
        }
    }
}

impl<T: DeviceOps> Mr<T> {
    /// Allocates an MR on `pd`, initialises its state in place with `init`,
    /// runs `created` and returns the C pointer for ib_core, which owns the
    /// MR until `dereg_mr`.
    pub(crate) fn alloc(
        pd: *mut bindings::ib_pd,
        init: Result<impl PinInit<T::Mr, Error>>,
        created: impl FnOnce(&Mr<T>) -> Result,
    ) -> Result<*mut bindings::ib_mr> {
        let init = init?;
        let b = KBox::<Mr<T>>::new_uninit(GFP_KERNEL | __GFP_ZERO)?;
        let raw = KBox::into_raw(b).cast::<Mr<T>>();
        let ib = raw.cast::<bindings::ib_mr>();
        // SAFETY: `raw` is a zeroed allocation of an `Mr<T>`; the C part
        // (first field) gets the device and PD now, as ib_core sets them
        // again after we return; `pd` is live for the call. The box stays
        // in place until `free` drops the state and frees it.
        let r = unsafe {
            (*ib).device = (*pd).device;
            (*ib).pd = pd;
            Obj::<KMr, T>::init_state(ib, init)
        };
        if let Err(e) = r {
            // SAFETY: The state is not initialised: only the (zeroed,
            // plain C) allocation is given back.
            drop(unsafe { KBox::from_raw(raw.cast::<core::mem::MaybeUninit<Mr<T>>>()) });
            return Err(e);
        }
        // SAFETY: The state is initialised.
        let mr = unsafe { Mr::<T>::from_raw(ib) };
        if let Err(e) = created(mr) {
            // SAFETY: Ours alone: nobody else saw the MR.
            unsafe { Self::free(ib) };
            return Err(e);
        }
        Ok(ib)
    }

    /// Takes the MR out of its pool, drops its state and frees it.
    ///
    /// # Safety
    ///
    /// `ib` must come from [`Self::alloc`] and not be used afterwards.
    pub(crate) unsafe fn free(ib: *mut bindings::ib_mr) {
        // SAFETY: Per the caller; the box was made by `alloc`.
        unsafe {
            Self::destroy_state(ib);
            drop(KBox::from_raw(ib.cast::<core::mem::MaybeUninit<Mr<T>>>()));
        }
    }
}

/// Pinned user memory of a user MR.
///
/// # Invariants
///
/// `raw` is an `ib_umem` from `ib_umem_get`, released on drop; `pages`
/// holds its pages in order, each pinned while `raw` lives.
pub(crate) struct Umem {
    raw: NonNull<bindings::ib_umem>,
    /// One pointer per page: 4 MiB for 2 GiB, so vmalloc'd beyond what
    /// kmalloc gives.
    pages: KVVec<NonNull<bindings::page>>,
}

// SAFETY: The pinned pages may be accessed from any thread; release is
// thread safe.
unsafe impl Send for Umem {}
// SAFETY: Only shared, copying access is given out.
unsafe impl Sync for Umem {}

impl Umem {
    /// Pins `[addr, addr + len)` of the calling process for `access`
    /// (`IB_ACCESS_*`).
    pub(crate) fn get<T: DeviceOps>(
        dev: &Device<T>,
        addr: u64,
        len: u64,
        access: Access,
    ) -> Result<Self> {
        let len_us = usize::try_from(len).map_err(|_| EINVAL)?;
        // SAFETY: `ib_umem_get` checks the range against the caller's
        // address space and returns a pinned umem or an error pointer.
        let p =
            unsafe { bindings::ib_umem_get(dev.as_raw(), addr as _, len_us, access.raw() as i32) };
        let p = kernel::error::from_err_ptr(p)?;
        let raw = NonNull::new(p).ok_or(ENOMEM)?;
        let first = addr & !(PAGE_SIZE - 1);
        let end = addr.checked_add(len).ok_or(EINVAL)?;
        let npages = usize::try_from((end.div_ceil(PAGE_SIZE) * PAGE_SIZE - first) / PAGE_SIZE)
            .map_err(|_| EINVAL)?;
        let mut this = Self {
            raw,
            pages: KVVec::new(),
        };
        let mut v = KVVec::<*mut bindings::page>::with_capacity(npages, GFP_KERNEL)?;
        // SAFETY: `v` has room for `npages` pointers; the helper writes at
        // most that many and returns the count.
        let got = unsafe {
            let n =
                bindings::rrxe_helper_umem_page_array(raw.as_ptr(), v.as_mut_ptr(), npages as _);
            let n = (n as usize).min(npages);
            v.set_len(n);
            n
        };
        if got != npages {
            return Err(EFAULT);
        }
        this.pages = KVVec::with_capacity(npages, GFP_KERNEL)?;
        for p in v.iter() {
            this.pages
                .push(NonNull::new(*p).ok_or(EFAULT)?, GFP_KERNEL)?;
        }
        Ok(this)
    }

    /// Whether the pages were pinned for writing (`ib_umem.writable`,
    /// from the access flags at registration).
    pub(crate) fn writable(&self) -> bool {
        // SAFETY: By the type invariant `raw` is a live umem; `writable`
        // is set by `ib_umem_get` and never changes.
        unsafe { (*self.raw.as_ptr()).writable() != 0 }
    }

    /// Whether every pinned page is persistent memory.
    pub(crate) fn persistent(&self) -> bool {
        self.pages.iter().all(|p| {
            // SAFETY: The page is pinned while `self` lives; the helper
            // only reads its physical address.
            unsafe { bindings::rrxe_helper_page_is_pmem(p.as_ptr()) }
        })
    }

    /// `ib_umem_check_rereg`: EACCES if an access change without a new
    /// translation (`IB_MR_REREG_ACCESS` without `_TRANS`) asks for write
    /// access to pages that were pinned read-only.
    pub(crate) fn check_rereg(&self, flags: ReregFlags, access: Access) -> Result {
        // SAFETY: By the type invariant `raw` is a live umem; the function
        // only reads its `writable` bit.
        kernel::error::to_result(unsafe {
            bindings::ib_umem_check_rereg(self.raw.as_ptr(), flags.raw() as _, access.raw() as _)
        })
    }

    /// The page holding byte `off` (counted from the start of the first
    /// page), the offset in it, and how many bytes from there to the end
    /// of the page, at most `max`.
    fn page_at(&self, off: u64, max: usize) -> Result<(NonNull<bindings::page>, usize, usize)> {
        let page = usize::try_from(off / PAGE_SIZE).map_err(|_| EFAULT)?;
        let in_page = (off % PAGE_SIZE) as usize;
        let p = *self.pages.get(page).ok_or(EFAULT)?;
        Ok((p, in_page, (PAGE_SIZE as usize - in_page).min(max)))
    }

    /// The bytes from `off` (counted from the start of the first page) to
    /// the end of its page, at most `max`: (kernel address, length).
    fn span(&self, off: u64, max: usize) -> Result<(*mut u8, usize)> {
        let (p, in_page, n) = self.page_at(off, max)?;
        // SAFETY: The page is pinned while `self` lives; on 64-bit every
        // page has a permanent kernel mapping.
        let base = unsafe { bindings::rrxe_helper_page_address(p.as_ptr()) }.cast::<u8>();
        if base.is_null() {
            return Err(EFAULT);
        }
        // SAFETY: `in_page < PAGE_SIZE`: inside the page.
        Ok((unsafe { base.add(in_page) }, n))
    }

    /// Copies `src` into the pinned memory at `off` (from the start of the
    /// first page).
    pub(crate) fn write(&self, mut off: u64, src: Src<'_>) -> Result {
        let mut at = 0usize;
        while at < src.len() {
            let (p, n) = self.span(off, src.len() - at)?;
            let part = src.get(at..at + n).ok_or(EFAULT)?;
            // SAFETY: `p` is valid for `n` bytes of a pinned page; user
            // space may access the page concurrently, as with DMA.
            unsafe { part.copy_to(p) }?;
            at += n;
            off += n as u64;
        }
        Ok(())
    }

    /// Attaches the `n` pinned bytes at `off` (from the start of the first
    /// page) to `skb` as page fragments, each with a page reference of its
    /// own: the pages then outlive this umem while the packet lives.
    /// `false` if the skb has too few fragment slots left (it then holds
    /// some of the bytes: the caller drops it).
    pub(crate) fn attach(&self, mut off: u64, n: usize, skb: &mut SkBuff) -> Result<bool> {
        let mut at = 0usize;
        while at < n {
            let (p, in_page, k) = self.page_at(off, n - at)?;
            // SAFETY: The page is pinned while `self` lives (borrowed).
            if !unsafe { skb.add_page(p, in_page, k) } {
                return Ok(false);
            }
            at += k;
            off += k as u64;
        }
        Ok(true)
    }

    /// Copies from the pinned memory at `off` into `buf`, through `fold`.
    pub(crate) fn read(&self, mut off: u64, mut buf: &mut [u8], fold: &mut Fold) -> Result {
        while !buf.is_empty() {
            let (p, n) = self.span(off, buf.len())?;
            let (head, tail) = buf.split_at_mut(n);
            // SAFETY: As in `write`; `head` is ours, not the user's page.
            unsafe { fold.copy(head.as_mut_ptr(), p, n) };
            buf = tail;
            off += n as u64;
        }
        Ok(())
    }

    /// The 8-byte word at `off` (8-aligned), for atomics.
    pub(crate) fn word(&self, off: u64) -> Result<&core::sync::atomic::AtomicU64> {
        if off % 8 != 0 {
            return Err(EINVAL);
        }
        let (p, n) = self.span(off, 8)?;
        if n < 8 {
            return Err(EFAULT);
        }
        // SAFETY: 8 aligned bytes of a pinned page, valid while `self` is
        // borrowed; others access the word atomically (or race, as DMA).
        Ok(unsafe { &*p.cast::<core::sync::atomic::AtomicU64>() })
    }
}

/// Kernel memory that a kernel consumer registered (a DMA MR covers all of
/// it; a fast-registration MR gets page addresses from `ib_map_mr_sg`).
///
/// Only made by the adapter for what a kernel consumer creates: its MRs,
/// and its QPs (whose SGEs may name the device's `local_dma_lkey`). Access
/// trusts the addresses as C drivers do: kernel consumers own their
/// registrations the way they own DMA mappings.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KernelMem(());

impl KernelMem {
    /// For the adapter: a token for what a kernel consumer created.
    pub(super) fn new() -> Self {
        Self(())
    }

    /// Copies `src` to kernel address `addr`.
    pub(crate) fn write(&self, addr: u64, src: Src<'_>) -> Result {
        if addr == 0 || addr.checked_add(src.len() as u64).is_none() {
            return Err(EFAULT);
        }
        // SAFETY: See the type's documentation: the consumer registered
        // this memory for the device to write.
        unsafe { src.copy_to(addr as usize as *mut u8) }
    }

    /// Copies from kernel address `addr` into `buf`, through `fold`.
    pub(crate) fn read(&self, addr: u64, buf: &mut [u8], fold: &mut Fold) -> Result {
        if addr == 0 || addr.checked_add(buf.len() as u64).is_none() {
            return Err(EFAULT);
        }
        // SAFETY: As in `write` (a consumer's registered memory is not
        // the packet buffer `buf` borrows).
        unsafe { fold.copy(buf.as_mut_ptr(), addr as usize as *const u8, buf.len()) };
        Ok(())
    }

    /// The 8-byte word at `addr` (8-aligned), for atomics.
    pub(crate) fn word(&self, addr: u64) -> Result<&core::sync::atomic::AtomicU64> {
        if addr == 0 || addr % 8 != 0 {
            return Err(EINVAL);
        }
        // SAFETY: As in `write`.
        Ok(unsafe { &*(addr as usize as *const core::sync::atomic::AtomicU64) })
    }
}

impl Drop for Umem {
    fn drop(&mut self) {
        // SAFETY: By the type invariant `raw` is ours to release.
        unsafe { bindings::ib_umem_release(self.raw.as_ptr()) };
    }
}

/// The scatterlist of a `map_mr_sg` call.
pub(crate) struct SgList<'a, T: DeviceOps> {
    mr: *mut bindings::ib_mr,
    sg: *mut bindings::scatterlist,
    nents: i32,
    offset: *mut kernel::ffi::c_uint,
    _p: PhantomData<(&'a (), T)>,
}

impl<'a, T: DeviceOps> SgList<'a, T> {
    /// Wraps the arguments of `map_mr_sg`.
    ///
    /// # Safety
    ///
    /// `mr` must be a live MR of driver `T`, `sg` a scatterlist of `nents`
    /// entries and `offset` null or valid, for `'a`.
    pub(crate) unsafe fn new(
        mr: *mut bindings::ib_mr,
        sg: *mut bindings::scatterlist,
        nents: i32,
        offset: *mut kernel::ffi::c_uint,
    ) -> Self {
        Self {
            mr,
            sg,
            nents,
            offset,
            _p: PhantomData,
        }
    }

    /// Walks the list in pages of the MR's page size (`ib_sg_to_pages`),
    /// giving each page address to `T::mr_set_page`; returns the number of
    /// entries mapped. Also sets the MR's IOVA and length.
    pub(crate) fn map_pages(&mut self) -> Result<i32> {
        // SAFETY: Per `new`; `set_page` only runs during this call.
        let n = unsafe {
            bindings::ib_sg_to_pages(
                self.mr,
                self.sg,
                self.nents,
                self.offset,
                Some(set_page::<T>),
            )
        };
        if n < 0 {
            Err(Error::from_errno(n))
        } else {
            Ok(n)
        }
    }

    /// Walks the list entry by entry for an `IB_MR_TYPE_SG_GAPS` MR: each
    /// entry's (address, length), the first from `*offset` bytes into it,
    /// goes to `f` in order until `f` refuses one (the MR is full). Sets
    /// the MR's IOVA to the first byte and its length to the sum of the
    /// entries taken (as `ib_sg_to_pages` does for a page list); returns
    /// their number, or `f`'s error if it took none.
    pub(crate) fn map_segments(&mut self, mut f: impl FnMut(u64, u64) -> Result) -> Result<i32> {
        // SAFETY: Per `new`, `offset` is null or valid for the call.
        let mut skip = u64::from(unsafe { self.offset.as_ref() }.copied().unwrap_or(0));
        let mut sg = self.sg;
        if self.nents <= 0 || sg.is_null() {
            return Err(EINVAL);
        }
        let mut length = 0u64;
        let mut n = 0;
        while n < self.nents && !sg.is_null() {
            // SAFETY: Per `new`, `sg` is an entry of the consumer's list of
            // `nents` entries (`sg_next` follows its chain links).
            let (addr, len) = unsafe {
                (
                    bindings::rrxe_helper_sg_dma_address(sg),
                    u64::from(bindings::rrxe_helper_sg_dma_len(sg)),
                )
            };
            if n == 0 {
                if skip > len {
                    return Err(EINVAL);
                }
                // SAFETY: Per `new`, `mr` is live; the consumer serialises
                // registration of one MR.
                unsafe { (*self.mr).iova = addr.wrapping_add(skip) };
            }
            let addr = addr.checked_add(skip).ok_or(EINVAL)?;
            if let Err(e) = f(addr, len - skip) {
                // Nothing fits: the error, as `ib_sg_to_pages` answers.
                if n == 0 {
                    return Err(e);
                }
                break;
            }
            length += len - skip;
            skip = 0;
            n += 1;
            // SAFETY: As above.
            sg = unsafe { bindings::rrxe_helper_sg_next(sg) };
        }
        // SAFETY: As above; `offset` is null or valid.
        unsafe {
            (*self.mr).length = length;
            if let Some(o) = self.offset.as_mut() {
                *o = skip as kernel::ffi::c_uint;
            }
        }
        Ok(n)
    }

    /// The page size the consumer asked for (`ib_map_mr_sg` sets it).
    pub(crate) fn page_size(&self) -> u32 {
        // SAFETY: Per `new`, `mr` is live; the consumer serialises
        // registration of one MR.
        unsafe { (*self.mr).page_size }
    }
}

/// # Safety
///
/// Only `ib_sg_to_pages` calls this, from `map_pages`, with the MR that
/// `map_pages` was given.
unsafe extern "C" fn set_page<T: DeviceOps>(
    mr: *mut bindings::ib_mr,
    addr: u64,
) -> kernel::ffi::c_int {
    // SAFETY: `ib_sg_to_pages` passes the MR given to `map_pages`.
    let mr = unsafe { Mr::<T>::from_raw(mr) };
    match T::mr_set_page(mr, addr) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}
