// SPDX-License-Identifier: GPL-2.0

//! Safe abstractions over the kernel's RDMA core, network devices and UDP
//! tunnels: the only home of `unsafe` in rdma_rrxe.
//!
//! The driver above this layer sees Rust types with documented lifetime and
//! locking rules; every `unsafe` block here names the C contract it relies
//! on. Generated bindings stay private to this module.

mod bindings;

pub(crate) mod attrs;
pub(crate) mod charge;
pub(crate) mod consts;
pub(crate) mod crc;
pub(crate) mod debugfs;
pub(crate) mod device;
pub(crate) mod error;
pub(crate) mod ib;
pub(crate) mod link;
pub(crate) mod mr;
pub(crate) mod net;
pub(crate) mod netdev;
pub(crate) mod objects;
pub(crate) mod odp;
pub(crate) mod ops;
pub(crate) mod pool;
pub(crate) mod shmem;
pub(crate) mod skb;
pub(crate) mod stats;
pub(crate) mod sync;
pub(crate) mod task;
pub(crate) mod trace;
pub(crate) mod uapi;
pub(crate) mod udata;
pub(crate) mod wc;
pub(crate) mod wqe;
