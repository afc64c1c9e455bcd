// SPDX-License-Identifier: GPL-2.0

//! The driver's debugfs directory, `rdma_rrxe/`, while the module is
//! loaded: what only tests set or read, kept out of the module parameters
//! that users see. `qpn_max` (read-write, root only): the highest QP index
//! a device added from then on gives out (0: all of them), so that QP
//! numbers come back soon; `icrc_folds` (read only): spans of traffic the
//! carry-less-multiply CRC has folded. Without debugfs the defaults hold.

use super::bindings;

/// The directory; removed, with its files, when dropped.
pub(crate) struct DebugDir(*mut bindings::dentry);

// SAFETY: The pointer is only handed back to debugfs when the directory is
// dropped; debugfs's files are served by debugfs, from any CPU.
unsafe impl Send for DebugDir {}
// SAFETY: No method reads or writes through the pointer.
unsafe impl Sync for DebugDir {}

impl DebugDir {
    /// Makes the directory and its files (an error pointer if debugfs
    /// could not, which debugfs takes back as nothing).
    pub(crate) fn new() -> Self {
        // SAFETY: Makes a directory and files of static data; no
        // preconditions.
        Self(unsafe { bindings::rrxe_helper_debugfs_create() })
    }
}

impl Drop for DebugDir {
    fn drop(&mut self) {
        // SAFETY: The directory made by `new`, removed once (an error
        // pointer is ignored by debugfs).
        unsafe { bindings::rrxe_helper_debugfs_remove(self.0) }
    }
}
