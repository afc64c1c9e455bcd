// SPDX-License-Identifier: GPL-2.0

//! Memory shared with user space: the rxe queue buffers (CQ, SQ, RQ, SRQ
//! rings) that librxe maps with `mmap`.
//!
//! A [`SharedBuf`] is `vmalloc_user` memory (zeroed, mappable). User space
//! may write any byte of a mapped buffer at any time, so the driver never
//! holds a Rust reference into it: every access goes through the methods
//! here, which copy with bounds checks. A value read from the buffer is
//! untrusted input and must be validated after the copy; each read copies
//! once.
//!
//! [`SharedBuf::expose`] offers a buffer to a user context through ib_core's
//! mmap entries (`rdma_user_mmap_entry`). The entry holds its own
//! reference to the buffer, so a `mmap` call racing with the object's
//! destruction maps memory that is still allocated; and each VMA that
//! maps it holds a reference on the entry (ib_core's record of the
//! mapping, as for `rdma_user_mmap_io`) until it is closed, so the
//! buffer, and the charge to the process that goes with it, outlive the
//! object while a mapping does. When the device goes with users present
//! (`disassociate_ucontext`), ib_core drops those references; the pages
//! stay mapped with references of their own (`remap_vmalloc_range`), the
//! process's memory until it unmaps them.

use super::bindings;
use super::charge::MemCharge;
use super::objects::UContext;
use super::ops::DeviceOps;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::types::Opaque;

/// The page size.
pub(crate) const PAGE_SIZE: usize = 1 << bindings::PAGE_SHIFT;

/// A buffer that user space may map.
///
/// # Invariants
///
/// `ptr` points at `len` bytes from `vmalloc_user`, freed on drop.
pub(crate) struct SharedBuf {
    ptr: NonNull<u8>,
    len: usize,
    /// What the buffer is charged to its process for: it goes with the
    /// buffer, which lives while the object or any mapping of it does
    /// (a mapping holds the mmap entry, which holds the buffer). Held by
    /// the object instead, it went with the object, and a process that
    /// mapped a ring a second time kept its pages past its limit.
    _charge: Option<MemCharge>,
}

// SAFETY: The memory is only accessed through raw copies and atomics.
unsafe impl Send for SharedBuf {}
// SAFETY: See `Send`.
unsafe impl Sync for SharedBuf {}

impl Drop for SharedBuf {
    fn drop(&mut self) {
        // SAFETY: By the type invariant `ptr` came from `vmalloc_user`.
        unsafe { bindings::vfree(self.ptr.as_ptr().cast()) };
    }
}

impl SharedBuf {
    /// A zeroed buffer of `len` bytes (`len > 0`), holding `charge`.
    pub(crate) fn new(len: usize, charge: Option<MemCharge>) -> Result<Arc<Self>> {
        if len == 0 {
            return Err(EINVAL);
        }
        // SAFETY: `vmalloc_user` returns zeroed, page-aligned memory or
        // null.
        let p = unsafe { bindings::rrxe_helper_vmalloc_user(len as _) };
        let ptr = NonNull::new(p.cast::<u8>()).ok_or(ENOMEM)?;
        // INVARIANT: `ptr` is a `vmalloc_user` allocation of `len` bytes.
        Ok(Arc::new(
            Self {
                ptr,
                len,
                _charge: charge,
            },
            GFP_KERNEL,
        )?)
    }

    fn range(&self, off: usize, n: usize) -> Result<*mut u8> {
        match off.checked_add(n) {
            Some(end) if end <= self.len => {
                // SAFETY: `off < len` (or `n == 0` and `off <= len`), so
                // the result is in or one past the allocation.
                Ok(unsafe { self.ptr.as_ptr().add(off) })
            }
            _ => Err(EINVAL),
        }
    }

    fn atomic(&self, off: usize) -> Result<&AtomicU32> {
        if off % 4 != 0 {
            return Err(EINVAL);
        }
        let p = self.range(off, 4)?;
        // SAFETY: `p` is 4-aligned (the buffer is page-aligned) and in
        // bounds; an `AtomicU32` may alias memory that others write
        // atomically or not (user space): reads may observe any value.
        Ok(unsafe { &*p.cast::<AtomicU32>() })
    }

    /// Reads the `u32` at `off` with acquire ordering.
    pub(crate) fn load_acquire(&self, off: usize) -> Result<u32> {
        Ok(self.atomic(off)?.load(Ordering::Acquire))
    }

    /// Writes the `u32` at `off` with release ordering.
    pub(crate) fn store_release(&self, off: usize, v: u32) -> Result {
        self.atomic(off)?.store(v, Ordering::Release);
        Ok(())
    }

    /// Copies `dst.len()` bytes at `off` out of the buffer.
    pub(crate) fn read(&self, off: usize, dst: &mut [u8]) -> Result {
        let p = self.range(off, dst.len())?;
        // SAFETY: The source is in bounds. Concurrent user writes may tear
        // the copy, which is why callers validate what they read and read
        // each field once (as C's memcpy from the same memory).
        unsafe { core::ptr::copy_nonoverlapping(p, dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    /// Copies `src` into the buffer at `off`.
    pub(crate) fn write(&self, off: usize, src: &[u8]) -> Result {
        let p = self.range(off, src.len())?;
        // SAFETY: The destination is in bounds; no Rust reference to the
        // buffer exists, so this aliases nothing.
        unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), p, src.len()) };
        Ok(())
    }

    /// Copies `n` bytes from `src` at `from` into `self` at `to`.
    pub(crate) fn copy_from(&self, to: usize, src: &SharedBuf, from: usize, n: usize) -> Result {
        let s = src.range(from, n)?;
        let d = self.range(to, n)?;
        // SAFETY: Both ranges are in bounds of their buffers.
        unsafe { core::ptr::copy(s, d, n) };
        Ok(())
    }

    /// Offers the buffer to `uctx` for `mmap`. The returned [`Mapping`]
    /// gives the offset and size user space passes to `mmap`; dropping it
    /// withdraws the offer (existing mappings stay valid).
    pub(crate) fn expose<T: DeviceOps>(self: &Arc<Self>, uctx: &UContext<T>) -> Result<Mapping> {
        let size = self.len.div_ceil(PAGE_SIZE) * PAGE_SIZE;
        let entry = KBox::new(
            MmapEntry {
                entry: Opaque::new(bindings::rdma_user_mmap_entry::default()),
                buf: self.clone(),
            },
            GFP_KERNEL,
        )?;
        let raw = KBox::into_raw(entry);
        // SAFETY: `raw` is a valid entry; on success ib_core owns it until
        // it calls `mmap_free`, which frees it (see `MmapEntry::free`).
        let ret = unsafe {
            bindings::rdma_user_mmap_entry_insert(
                uctx.raw(),
                Opaque::raw_get(core::ptr::addr_of!((*raw).entry)),
                size,
            )
        };
        if ret != 0 {
            // SAFETY: Not inserted: still ours.
            drop(unsafe { KBox::from_raw(raw) });
            return Err(Error::from_errno(ret));
        }
        // SAFETY: Inserted entries stay allocated until removed and unmapped.
        let offset = unsafe { bindings::rrxe_helper_mmap_get_offset((*raw).entry.get()) };
        // INVARIANT: The entry is inserted and not yet removed.
        Ok(Mapping {
            // SAFETY: `raw` is non-null (from `KBox::into_raw`).
            entry: unsafe { NonNull::new_unchecked(raw) },
            offset,
            size: size as u32,
        })
    }
}

/// An mmap entry for a [`SharedBuf`].
#[repr(C)]
pub(crate) struct MmapEntry {
    entry: Opaque<bindings::rdma_user_mmap_entry>,
    buf: Arc<SharedBuf>,
}

impl MmapEntry {
    /// Maps the entry `vma` refers to (the `mmap` op).
    ///
    /// # Safety
    ///
    /// `uctx` and `vma` must be the arguments of ib_core's `mmap` op.
    pub(crate) unsafe fn mmap(
        uctx: *mut bindings::ib_ucontext,
        vma: *mut bindings::vm_area_struct,
    ) -> Result {
        // SAFETY: Per the caller. A found entry comes with a reference.
        let e = unsafe { bindings::rdma_user_mmap_entry_get(uctx, vma) };
        if e.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: Every entry this driver inserts is the first field of a
        // `MmapEntry`; the reference taken keeps it (and its buffer) alive.
        let this = unsafe { &*kernel::container_of!(e, MmapEntry, entry) };
        // The helper hands the mapping to ib_core, which takes a reference
        // on the entry for it (and for each copy) until the VMA is closed
        // or the context is disassociated: the entry, its buffer and the
        // buffer's charge live while any mapping does (and the pages,
        // mapped with references of their own, while any maps them).
        // SAFETY: The buffer is a `vmalloc_user` area of the entry's size,
        // which ib_core checked equals the VMA's.
        let ret =
            unsafe { bindings::rrxe_helper_mmap_vmalloc(vma, this.buf.ptr.as_ptr().cast(), e) };
        // SAFETY: Gives back the reference `get` took.
        unsafe { bindings::rdma_user_mmap_entry_put(e) };
        if ret != 0 {
            return Err(Error::from_errno(ret));
        }
        Ok(())
    }

    /// Frees an entry whose last reference is gone (the `mmap_free` op).
    ///
    /// # Safety
    ///
    /// `e` must be an entry this driver inserted, passed by ib_core once.
    pub(crate) unsafe fn free(e: *mut bindings::rdma_user_mmap_entry) {
        // SAFETY: Per the caller, `e` is the first field of a `MmapEntry`
        // allocated by `expose` and now ours again.
        drop(unsafe { KBox::from_raw(kernel::container_of!(e, MmapEntry, entry).cast_mut()) });
    }
}

/// An offer of a buffer to user space's `mmap`.
///
/// # Invariants
///
/// `entry` is inserted in its context and not removed.
pub(crate) struct Mapping {
    entry: NonNull<MmapEntry>,
    offset: u64,
    size: u32,
}

// SAFETY: Removal may happen on any thread.
unsafe impl Send for Mapping {}
// SAFETY: Only plain data is read through `&Mapping`.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// The `mmap` offset.
    pub(crate) fn offset(&self) -> u64 {
        self.offset
    }

    /// The `mmap` length (page aligned).
    pub(crate) fn size(&self) -> u32 {
        self.size
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: By the invariant the entry is inserted; after removal
        // ib_core calls `mmap_free` once the last mapping is gone (each
        // holds a reference, see `MmapEntry::mmap`).
        unsafe {
            bindings::rdma_user_mmap_entry_remove(Opaque::raw_get(core::ptr::addr_of!(
                (*self.entry.as_ptr()).entry
            )))
        };
    }
}
