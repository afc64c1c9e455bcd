// SPDX-License-Identifier: GPL-2.0

//! The CRC-32 step of the ICRC: the kernel's `crc32_le` (reflected
//! polynomial 0xEDB88320, no inversion), as the protocol crate wants it.

use super::bindings;
use crate::proto::Crc32;

/// The kernel's `crc32_le`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct KernelCrc;

impl Crc32 for KernelCrc {
    fn update(&self, crc: u32, data: &[u8]) -> u32 {
        // SAFETY: `data` is a valid slice; `crc32_le` only reads it.
        unsafe { bindings::crc32_le(crc, data.as_ptr(), data.len()) }
    }
}
