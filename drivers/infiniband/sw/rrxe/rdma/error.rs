// SPDX-License-Identifier: GPL-2.0

//! Error codes the `kernel` crate of this kernel does not define.

use super::bindings;
use kernel::error::Error;

/// `EOPNOTSUPP`: operation not supported (what verbs return for an
/// unsupported attribute or request).
pub(crate) fn eopnotsupp() -> Error {
    Error::from_errno(-(bindings::EOPNOTSUPP as i32))
}

/// `EHOSTUNREACH`: no route to the destination.
pub(crate) fn ehostunreach() -> Error {
    Error::from_errno(-(bindings::EHOSTUNREACH as i32))
}

/// `EAFNOSUPPORT`: the address family (IPv6) is not available.
pub(crate) fn eafnosupport() -> Error {
    Error::from_errno(-(bindings::EAFNOSUPPORT as i32))
}

/// `EADDRINUSE`: the port is taken.
pub(crate) fn eaddrinuse() -> Error {
    Error::from_errno(-(bindings::EADDRINUSE as i32))
}

/// `ECANCELED`: a packet's pages were revoked by its sender
/// (`QpTask::zc_revoke`).
pub(crate) fn ecanceled() -> Error {
    Error::from_errno(-(bindings::ECANCELED as i32))
}

/// `EMSGSIZE`: a netlink message has no room left.
pub(crate) fn emsgsize() -> Error {
    Error::from_errno(-(bindings::EMSGSIZE as i32))
}
