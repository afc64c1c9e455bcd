// SPDX-License-Identifier: GPL-2.0

//! Bindings to the C API of the RDMA core, netdev and UDP tunnels.
//!
//! Generated at build time by bindgen from `include/rrxe/rrxe_bindings.h`
//! (see this directory's `Kbuild`), with the kernel's own bindgen
//! parameters. Only the `rdma` abstraction layer may use this module; the
//! driver sees safe wrappers.

#![allow(
    clippy::all,
    clippy::undocumented_unsafe_blocks,
    dead_code,
    improper_ctypes,
    missing_docs,
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    unknown_lints,
    unnecessary_transmutes,
    unreachable_pub,
    unsafe_op_in_unsafe_fn
)]

use kernel::ffi;

// The kernel's bindgen parameters blocklist these; define them as the kernel
// crate does.
type __kernel_size_t = usize;
type __kernel_ssize_t = isize;
type __kernel_ptrdiff_t = isize;

include!("bindings_generated.rs");
