// SPDX-License-Identifier: GPL-2.0

//! `struct ib_udata`: the driver-specific part of a uverbs command, a
//! request buffer and a response buffer in user memory.

use super::bindings;

/// The user buffers of one verbs call; empty for kernel callers.
///
/// # Invariants
///
/// `raw` is null or points at an `ib_udata` valid for `'a`.
pub(crate) struct UData<'a> {
    raw: Option<&'a bindings::ib_udata>,
}

impl<'a> UData<'a> {
    /// Wraps the udata of a verbs callback.
    ///
    /// # Safety
    ///
    /// `raw` must be null or valid for `'a`.
    pub(crate) unsafe fn from_raw(raw: *mut bindings::ib_udata) -> Self {
        // SAFETY: Per the caller.
        Self { raw: unsafe { raw.as_ref() } }
    }

    /// Length of the request buffer.
    pub(crate) fn inlen(&self) -> usize {
        self.raw.map_or(0, |u| u.inlen)
    }

    /// Length of the response buffer.
    pub(crate) fn outlen(&self) -> usize {
        self.raw.map_or(0, |u| u.outlen)
    }
}

