// SPDX-License-Identifier: GPL-2.0

//! The CRC-32 step of the ICRC (reflected polynomial 0xEDB88320, no
//! inversion: the kernel's `crc32_le`), as the protocol crate wants it:
//! the table CRC, or on x86-64 with PCLMULQDQ the carry-less-multiply fold
//! inside a kernel FPU section, whichever the `icrc` module parameter
//! chose at load (`rrxe_helper_crc32`, `rrxe_helper_crc_select`).

use super::bindings;
use crate::proto::Crc32;
use kernel::error::to_result;
use kernel::prelude::*;

/// The ICRC's CRC-32 as chosen at load.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct KernelCrc;

impl Crc32 for KernelCrc {
    fn update(&self, crc: u32, data: &[u8]) -> u32 {
        // SAFETY: `data` is a valid slice; the helper only reads it.
        unsafe { bindings::rrxe_helper_crc32(crc, data.as_ptr(), data.len()) }
    }

    fn shift(&self, crc: u32, n: usize) -> u32 {
        // SAFETY: Arithmetic on two integers (`crc32_le_shift`).
        unsafe { bindings::rrxe_helper_crc32_shift(crc, n) }
    }
}

/// Chooses the CRC as the `icrc` module parameter says (once, when the
/// module loads): EINVAL if it forces the carry-less multiply on a CPU
/// without it.
pub(crate) fn select() -> Result {
    // SAFETY: Called once from module init, before any device (so any
    // CRC) exists; the helper only reads the parameter and the CPU's
    // features and writes its own static choice.
    to_result(unsafe { bindings::rrxe_helper_crc_select() })
}

impl KernelCrc {
    /// Whether the wire path's transmit copies and folds a payload in one
    /// pass (the `icrc_fused` module parameter, off by default).
    pub(crate) fn fused() -> bool {
        // SAFETY: Reads a module parameter.
        unsafe { bindings::rrxe_helper_param_icrc_fused() }
    }
}

/// A copy of a packet's payload out of memory that may also fold the
/// bytes, as it copies them, into a CRC begun from 0 (Documentation/
/// datapath.md, "Copy and CRC in one pass"): the wire path's transmit then
/// puts that CRC after its headers' ([`crate::proto::Icrc::append`])
/// instead of reading the payload again. The fold holds only while the
/// copies come one after the other from the payload's start: a copy
/// anywhere else turns it off, and [`Fold::crc_of`] then says so (the
/// caller computes the CRC over the packet, as without it).
pub(crate) struct Fold {
    /// The CRC of the bytes copied so far, `None` if off.
    crc: Option<u32>,
    /// Where the next copy must start for the fold to go on.
    next: usize,
    /// The bytes folded.
    len: usize,
}

impl Fold {
    /// A fold of the payload that will be written from the start of `dst`
    /// on (off unless `on`).
    pub(crate) fn at(on: bool, dst: &[u8]) -> Self {
        Self {
            crc: on.then_some(0),
            next: dst.as_ptr() as usize,
            len: 0,
        }
    }

    /// The CRC (from 0) of the first `n` bytes of the payload, if exactly
    /// those were copied through the fold, in order.
    pub(crate) fn crc_of(&self, n: usize) -> Option<u32> {
        self.crc.filter(|_| self.len == n)
    }

    /// Copies `n` bytes from `src` to `dst`, folding them if the fold is
    /// on and `dst` is where the last copy ended.
    ///
    /// # Safety
    ///
    /// `src` must be valid for reads and `dst` for writes of `n` bytes,
    /// and they must not overlap. (`src` may be a user's memory, written
    /// meanwhile: the copy reads each byte once, and folds what it
    /// stored.)
    pub(crate) unsafe fn copy(&mut self, dst: *mut u8, src: *const u8, n: usize) {
        match self.crc {
            Some(crc) if dst as usize == self.next => {
                // SAFETY: Per the contract.
                let c = unsafe { bindings::rrxe_helper_crc32_copy(crc, dst, src, n) };
                self.crc = Some(c);
                self.next = self.next.wrapping_add(n);
                self.len = self.len.wrapping_add(n);
            }
            _ => {
                self.crc = None;
                // SAFETY: Per the contract.
                unsafe { core::ptr::copy_nonoverlapping(src, dst, n) };
            }
        }
    }

    /// [`Fold::copy`] of a slice into another of the same length.
    pub(crate) fn copy_slice(&mut self, dst: &mut [u8], src: &[u8]) {
        let n = dst.len().min(src.len());
        if n != src.len() {
            self.crc = None;
        }
        // SAFETY: Both are valid for `n` bytes; a `&mut` slice overlaps
        // no other borrow.
        unsafe { self.copy(dst.as_mut_ptr(), src.as_ptr(), n) }
    }
}
