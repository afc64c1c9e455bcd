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
