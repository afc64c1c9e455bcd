// SPDX-License-Identifier: GPL-2.0
// In the kernel (CONFIG_RUST set by kbuild) this is a module of the driver
// crate, as a module or built in; on the host it is a no_std crate.
#![cfg_attr(not(any(test, CONFIG_RUST)), no_std)]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
// Totality of the library code (tests may index and unwrap freely).
#![cfg_attr(not(test), deny(clippy::indexing_slicing))]
#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects))]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![cfg_attr(not(test), deny(clippy::panic, clippy::unreachable))]

//! The RoCEv2 wire core of rrxe: every rule about Soft-RoCE packets, in one
//! place, with no allocation, no `unsafe` and no dependency beyond `core`.
//!
//! The same source files are built twice: as the host crate `rrxe_proto`
//! (tested with `cargo test`) and as the module `proto` of the rrxe kernel
//! crate (`#[path = "proto/src/lib.rs"] pub mod proto;`). For that reason
//! modules refer to each other with `super::`, never with `crate::`.
//!
//! Layout, bottom up:
//! - [`be`]: big-endian field access, the only place byte order is handled;
//! - [`crc32`]: the [`crc32::Crc32`] step the ICRC is generic over, and a
//!   portable slice-by-8 implementation;
//! - [`net`]: views over the outer IPv4/IPv6 and UDP headers;
//! - [`hdr`]: views over the IBA transport headers (BTH and the extended
//!   transport headers);
//! - [`opcode`]: the opcode table, the single source of which headers and
//!   payload rules each opcode has;
//! - [`psn`] and [`aeth`]: 24-bit sequence arithmetic and ACK syndromes;
//! - [`deadline`]: the retransmit deadline, moved without touching the
//!   kernel timer that enforces it;
//! - [`icrc`]: the streaming invariant CRC of IBA Annex A17;
//! - [`parse`]: validation of received packets;
//! - [`build`] and [`seg`]: writing headers and splitting messages into
//!   packets;
//! - [`pma`]: the port's Performance Management Agent (MADs, not packets).
//!
//! Everything on the receive path is total: any input yields `Ok` or a typed
//! error, never a panic (arithmetic is checked, slices are read with `get`).

#[macro_use]
mod view;

pub mod aeth;
pub mod be;
pub mod build;
pub mod crc32;
pub mod deadline;
pub mod hdr;
pub mod icrc;
pub mod net;
pub mod opcode;
pub mod parse;
pub mod pma;
pub mod psn;
pub mod seg;

pub use self::aeth::{NakCode, RnrTimer, Syndrome};
pub use self::build::{BuildError, Ext, Layout, TxSpec};
pub use self::crc32::{Crc32, TableCrc32};
pub use self::deadline::{Deadline, Fired, Jiffies};
pub use self::icrc::{Icrc, IcrcFlavor, ICRC_LEN};
pub use self::net::{IpUdp, NetError, ROCE_V2_UDP_DPORT};
pub use self::opcode::{Hdr, Opcode, Position, Transport, UnknownOpcode};
pub use self::parse::{Frame, Headers, Limits, Mtu, Packet, ParseError, ReservedPolicy};
pub use self::psn::{psn_compare, Msn, Psn};
pub use self::seg::{MsgOp, SegError, Segment, Segments};
