// SPDX-License-Identifier: GPL-2.0

//! The port's Performance Management Agent (IBA 16.1): the answers to a
//! PMA `Get` of `ClassPortInfo`, `PortCounters` and
//! `PortCountersExtended`, from the port's counts, as ib_mad asks a driver
//! through `process_mad` before it looks for an agent of its own.
//!
//! A MAD is 256 bytes: the common header (24 bytes), then for the PMA 40
//! reserved bytes and the attribute's data from byte 64. Every field is
//! big-endian.
//!
//! - [`answer`] writes the response into its output: the request's header
//!   with the method `GetResp`, and the attribute's data; an attribute
//!   this agent does not have gets the status "unsupported method and
//!   attribute" and no data, a class version other than 1 the status "bad
//!   version".
//! - A MAD that is not a PMA `Get` (another class, or a response on its
//!   way back to whoever asked) is none of the agent's: [`answer`] leaves
//!   it to ib_mad's agents.
//! - The 32-bit and narrower counters of `PortCounters` stop at all ones
//!   instead of wrapping (IBA 16.1.3.5); data counters count 4-byte words.

use super::be;

/// The size of a MAD (`IB_MGMT_MAD_SIZE`).
pub const MAD_SIZE: usize = 256;

/// `IB_MGMT_CLASS_PERF_MGMT`.
pub const CLASS_PERF_MGMT: u8 = 0x04;
/// `IB_MGMT_METHOD_GET`.
pub const METHOD_GET: u8 = 0x01;
/// `IB_MGMT_METHOD_GET_RESP`.
pub const METHOD_GET_RESP: u8 = 0x81;
/// `IB_PMA_CLASS_PORT_INFO`.
pub const ATTR_CLASS_PORT_INFO: u16 = 0x0001;
/// `IB_PMA_PORT_COUNTERS`.
pub const ATTR_PORT_COUNTERS: u16 = 0x0012;
/// `IB_PMA_PORT_COUNTERS_EXT`.
pub const ATTR_PORT_COUNTERS_EXT: u16 = 0x001d;
/// `IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB`.
pub const STATUS_UNSUPPORTED_ATTR: u16 = 0x000c;
/// `IB_PMA_CLASS_CAP_EXT_WIDTH_NOIETF`: the 64-bit data and packet
/// counters of `PortCountersExtended` are there (tools read them rather
/// than the 32-bit ones), but not its unicast and multicast ones (which
/// `IB_PMA_CLASS_CAP_EXT_WIDTH` would promise).
pub const CAP_EXT_WIDTH_NOIETF: u16 = 1 << 10;
/// `IB_MGMT_MAD_STATUS_BAD_VERSION`.
pub const STATUS_BAD_VERSION: u16 = 0x0004;
/// The PMA class version this agent speaks.
pub const CLASS_VERSION: u8 = 1;

// The common MAD header.
const MGMT_CLASS: usize = 1;
const CLASS_VERSION_AT: usize = 2;
const METHOD: usize = 3;
const STATUS: usize = 4;
const ATTR_ID: usize = 16;
/// Where the PMA attribute's data starts.
pub const DATA: usize = 64;

// ClassPortInfo: base version, class version, capability mask.
const CPI_CAP_MASK: usize = DATA + 2;
// PortCounters (`struct ib_pma_portcounters`).
const PC_PORT_SELECT: usize = DATA + 1;
const PC_COUNTER_SELECT: usize = DATA + 2;
const PC_LINK_DOWNED: usize = DATA + 7;
const PC_RCV_ERRORS: usize = DATA + 8;
const PC_XMIT_DATA: usize = DATA + 24;
const PC_RCV_DATA: usize = DATA + 28;
const PC_XMIT_PKTS: usize = DATA + 32;
const PC_RCV_PKTS: usize = DATA + 36;
// PortCountersExtended (`struct ib_pma_portcounters_ext`).
const PCE_XMIT_DATA: usize = DATA + 8;
const PCE_RCV_DATA: usize = DATA + 16;
const PCE_XMIT_PKTS: usize = DATA + 24;
const PCE_RCV_PKTS: usize = DATA + 32;

/// What a port counted, in the units its counters keep.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortCounts {
    /// Bytes sent and received: each RoCE packet's UDP payload.
    pub xmit_bytes: u64,
    /// See `xmit_bytes`.
    pub rcv_bytes: u64,
    /// Packets sent and received.
    pub xmit_pkts: u64,
    /// See `xmit_pkts`.
    pub rcv_pkts: u64,
    /// Packets received with errors (a bad ICRC).
    pub rcv_errors: u64,
    /// Times the link went down.
    pub link_downed: u64,
}

/// What [`answer`] made of a MAD.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The response is in the output: send it.
    Reply,
    /// Not a PMA `Get` (or too short): ib_mad's agents take it.
    NotMine,
}

/// Answers `req` (a MAD as received) into `out` (the response, all of it
/// written) from `counts`; see the module's description.
pub fn answer(req: &[u8], counts: &PortCounts, out: &mut [u8]) -> Answer {
    let (Some(req), Some(out)) = (req.get(..MAD_SIZE), out.get_mut(..MAD_SIZE)) else {
        return Answer::NotMine;
    };
    if be::u8_at(req, MGMT_CLASS) != CLASS_PERF_MGMT || be::u8_at(req, METHOD) != METHOD_GET {
        return Answer::NotMine;
    }
    out.fill(0);
    for (o, i) in out.iter_mut().zip(req.iter()).take(DATA) {
        *o = *i;
    }
    be::set_u8(out, METHOD, METHOD_GET_RESP);
    be::set_u16(out, STATUS, 0);
    if be::u8_at(req, CLASS_VERSION_AT) != CLASS_VERSION {
        be::set_u16(out, STATUS, STATUS_BAD_VERSION);
        return Answer::Reply;
    }
    match be::u16_at(req, ATTR_ID) {
        ATTR_CLASS_PORT_INFO => be::set_u16(out, CPI_CAP_MASK, CAP_EXT_WIDTH_NOIETF),
        ATTR_PORT_COUNTERS => port_counters(req, counts, out),
        ATTR_PORT_COUNTERS_EXT => port_counters_ext(req, counts, out),
        _ => be::set_u16(out, STATUS, STATUS_UNSUPPORTED_ATTR),
    }
    Answer::Reply
}

/// `v`, or `max` (a field's all ones) if it is more.
fn sat(v: u64, max: u64) -> u64 {
    v.min(max)
}

fn port_counters(req: &[u8], c: &PortCounts, out: &mut [u8]) {
    be::set_u8(out, PC_PORT_SELECT, be::u8_at(req, PC_PORT_SELECT));
    be::set_u16(out, PC_COUNTER_SELECT, be::u16_at(req, PC_COUNTER_SELECT));
    be::set_u8(
        out,
        PC_LINK_DOWNED,
        sat(c.link_downed, u8::MAX.into()) as u8,
    );
    be::set_u16(
        out,
        PC_RCV_ERRORS,
        sat(c.rcv_errors, u16::MAX.into()) as u16,
    );
    be::set_u32(
        out,
        PC_XMIT_DATA,
        sat(c.xmit_bytes / 4, u32::MAX.into()) as u32,
    );
    be::set_u32(
        out,
        PC_RCV_DATA,
        sat(c.rcv_bytes / 4, u32::MAX.into()) as u32,
    );
    be::set_u32(out, PC_XMIT_PKTS, sat(c.xmit_pkts, u32::MAX.into()) as u32);
    be::set_u32(out, PC_RCV_PKTS, sat(c.rcv_pkts, u32::MAX.into()) as u32);
}

fn port_counters_ext(req: &[u8], c: &PortCounts, out: &mut [u8]) {
    be::set_u8(out, PC_PORT_SELECT, be::u8_at(req, PC_PORT_SELECT));
    be::set_u16(out, PC_COUNTER_SELECT, be::u16_at(req, PC_COUNTER_SELECT));
    be::set_u64(out, PCE_XMIT_DATA, c.xmit_bytes / 4);
    be::set_u64(out, PCE_RCV_DATA, c.rcv_bytes / 4);
    be::set_u64(out, PCE_XMIT_PKTS, c.xmit_pkts);
    be::set_u64(out, PCE_RCV_PKTS, c.rcv_pkts);
}
