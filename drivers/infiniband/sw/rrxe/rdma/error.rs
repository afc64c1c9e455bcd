// SPDX-License-Identifier: GPL-2.0

//! Error codes the `kernel` crate of this kernel does not define.

use super::bindings;
use kernel::error::Error;

/// `EOPNOTSUPP`: operation not supported (what verbs return for an
/// unsupported attribute or request).
pub(crate) fn eopnotsupp() -> Error {
    Error::from_errno(-(bindings::EOPNOTSUPP as i32))
}
