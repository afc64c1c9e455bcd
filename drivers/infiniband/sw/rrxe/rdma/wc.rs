// SPDX-License-Identifier: GPL-2.0

//! Work completions as they sit in a CQ ring: `struct ib_wc` for kernel
//! consumers, `struct ib_uverbs_wc` for user space.

// Parts of this API serve the data path, which is being built on it.
#![allow(dead_code)]

use super::bindings;

/// A kernel work completion.
pub(crate) type Wc = bindings::ib_wc;
/// A user work completion.
pub(crate) type UWc = bindings::ib_uverbs_wc;

/// The bytes of a kernel work completion, to copy it out of a ring.
pub(crate) fn wc_bytes_mut(w: &mut Wc) -> &mut [u8] {
    // SAFETY: `ib_wc` holds only integers, C enums (integers in the
    // bindings), raw pointers and unions of those, so any byte pattern is a
    // valid value; the slice covers exactly `*w`.
    unsafe { core::slice::from_raw_parts_mut((w as *mut Wc).cast::<u8>(), core::mem::size_of::<Wc>()) }
}
