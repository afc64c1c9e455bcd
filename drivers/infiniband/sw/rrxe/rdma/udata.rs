// SPDX-License-Identifier: GPL-2.0

//! `struct ib_udata`: the driver-specific part of a uverbs command, a
//! request buffer and a response buffer in user memory.

use super::bindings;
use super::mr::KernelMem;
use super::objects::UContext;
use super::ops::DeviceOps;
use kernel::prelude::*;
use kernel::types::{AsBytes, FromBytes};
use kernel::uaccess::UserSlice;

/// The user buffers of one verbs call; empty for kernel callers.
///
/// # Invariants
///
/// `raw` is null or points at an `ib_udata` valid for `'a`; if `bundled`,
/// that udata is embedded in a `uverbs_attr_bundle` whose context is the
/// caller's user context.
pub(crate) struct UData<'a> {
    raw: Option<&'a bindings::ib_udata>,
    bundled: bool,
}

impl<'a> UData<'a> {
    /// Wraps the udata of a verbs callback.
    ///
    /// # Safety
    ///
    /// `raw` must be null or a udata that ib_core passed to the op, valid
    /// for `'a`.
    pub(crate) unsafe fn from_raw(raw: *mut bindings::ib_udata) -> Self {
        // SAFETY: Per the caller.
        let raw = unsafe { raw.as_ref() };
        // INVARIANT: Every udata that ib_core passes a verbs op with a user
        // caller is the `driver_udata` of the call's attr bundle, except
        // `query_device`'s (`from_raw_bare`).
        Self { raw, bundled: true }
    }

    /// Wraps the udata of `query_device`, which ib_core also passes a bare
    /// one (`setup_device`: on its stack, both lengths zero): its lengths
    /// and buffers are read, never the user context it would be bundled
    /// with.
    ///
    /// # Safety
    ///
    /// `raw` must be null or a udata that ib_core passed to the op, valid
    /// for `'a`.
    pub(crate) unsafe fn from_raw_bare(raw: *mut bindings::ib_udata) -> Self {
        // SAFETY: Per the caller.
        let u = unsafe { Self::from_raw(raw) };
        // INVARIANT: Not known to be bundled.
        Self {
            bundled: false,
            ..u
        }
    }

    /// Whether the call came from user space.
    pub(crate) fn is_user(&self) -> bool {
        self.raw.is_some()
    }

    /// For a kernel caller (no user buffers), the token that lets what it
    /// creates reach kernel memory by address (a kernel QP's SGEs that
    /// name the device's `local_dma_lkey`); `None` for user space.
    pub(crate) fn kernel_mem(&self) -> Option<KernelMem> {
        match self.raw {
            None => Some(KernelMem::new()),
            Some(_) => None,
        }
    }

    /// Length of the request buffer.
    pub(crate) fn inlen(&self) -> usize {
        self.raw.map_or(0, |u| u.inlen)
    }

    /// Length of the response buffer.
    pub(crate) fn outlen(&self) -> usize {
        self.raw.map_or(0, |u| u.outlen)
    }

    /// The calling user context.
    pub(crate) fn ucontext<T: DeviceOps>(&self) -> Option<&'a UContext<T>> {
        if !self.bundled {
            return None;
        }
        let u = self.raw?;
        // SAFETY: By the type invariant the udata is embedded in an attr
        // bundle whose context is a live context of this device (uverbs
        // holds it for the call), initialised by our alloc_ucontext.
        unsafe {
            let uc = bindings::rrxe_helper_udata_to_ucontext(
                (u as *const bindings::ib_udata).cast_mut(),
            );
            if uc.is_null() {
                None
            } else {
                Some(UContext::<T>::from_raw(uc))
            }
        }
    }

    /// Reads the request as a `T`; it must hold at least `size_of::<T>()`
    /// bytes (extra bytes are ignored).
    pub(crate) fn read<V: FromBytes>(&self) -> Result<V> {
        let u = self.raw.ok_or(EINVAL)?;
        if u.inlen < core::mem::size_of::<V>() {
            return Err(EINVAL);
        }
        UserSlice::new(u.inbuf as usize, core::mem::size_of::<V>())
            .reader()
            .read::<V>()
    }

    /// Writes `v` to the response buffer, truncated to the buffer's length
    /// (as `ib_copy_to_udata`).
    pub(crate) fn write<V: AsBytes>(&mut self, v: &V) -> Result {
        let u = self.raw.ok_or(EINVAL)?;
        let bytes = bytes_of(v);
        let n = bytes.len().min(u.outlen);
        UserSlice::new(u.outbuf as usize, n)
            .writer()
            .write_slice(bytes.get(..n).unwrap_or(&[]))
    }

    /// Writes `v` to the caller's memory at `addr` (a pointer the request
    /// carried), as `copy_to_user`.
    pub(crate) fn write_user<V: AsBytes>(&mut self, addr: u64, v: &V) -> Result {
        if self.raw.is_none() {
            return Err(EINVAL);
        }
        UserSlice::new(addr as usize, core::mem::size_of::<V>())
            .writer()
            .write(v)
    }
}

/// Copies the bytes of `v` to the start of `out`; `EINVAL` if it is
/// shorter.
pub(crate) fn put_bytes<V: AsBytes>(v: &V, out: &mut [u8]) -> Result {
    let bytes = bytes_of(v);
    out.get_mut(..bytes.len())
        .ok_or(EINVAL)?
        .copy_from_slice(bytes);
    Ok(())
}

/// The bytes of `v`.
pub(crate) fn bytes_of<V: AsBytes>(v: &V) -> &[u8] {
    // SAFETY: `V: AsBytes` has no padding or uninitialised bytes, so its
    // `size_of::<V>()` bytes may be read as `u8`s for as long as `v` is
    // borrowed.
    unsafe { core::slice::from_raw_parts((v as *const V).cast::<u8>(), core::mem::size_of::<V>()) }
}
