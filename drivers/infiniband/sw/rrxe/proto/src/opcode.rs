// SPDX-License-Identifier: GPL-2.0

//! The opcode table: the single source of what each BTH opcode carries.
//!
//! It lists exactly the opcodes of the C driver's `rxe_opcode[]` in Linux
//! 6.12 (RC, UC, RD and UD; rxe has no RD QPs but lists RD opcodes, so they
//! are here too, and its transport check rejects them). For each opcode the
//! table holds the extended headers present, and flags with the meaning of
//! rxe's `RXE_*_MASK` bits: request or response, send/write/read/atomic/
//! flush/atomic-write, consumes a receive WQE, completes at the responder,
//! and first/middle/last position in a message. Header offsets and lengths
//! are derived from the header set, in IBA order (BTH, RDETH, DETH, FETH,
//! RETH, AtomicETH, AETH, AtomicAckETH, ImmDt, IETH); the payload follows
//! the last header.
//!
//! Everything else in the crate (parse, build, segmentation) asks this
//! table; nothing repeats it. An opcode byte becomes an [`Opcode`] only
//! through [`Opcode::from_u8`] / `TryFrom<u8>`, which reject values rxe does
//! not know, so no code ever indexes a table with a wire byte.

use super::hdr::Bth;

/// Length of the BTH.
pub const BTH_LEN: usize = 12;
/// The largest header length of any opcode (RD atomics: BTH, RDETH, DETH
/// and AtomicETH make 52; the largest RC one is 40). A linear prefix of
/// this many bytes always holds every header.
pub const MAX_HDR_LEN: usize = 52;

/// The transport service an opcode belongs to (its top 3 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transport {
    /// Reliable Connected (0x00..0x1f).
    Rc,
    /// Unreliable Connected (0x20..0x3f).
    Uc,
    /// Reliable Datagram (0x40..0x5f); listed by rxe, not implemented.
    Rd,
    /// Unreliable Datagram (0x60..0x7f).
    Ud,
}

impl Transport {
    /// The opcode bits of this transport (`IB_OPCODE_RC` etc.).
    pub const fn bits(self) -> u8 {
        match self {
            Self::Rc => 0x00,
            Self::Uc => 0x20,
            Self::Rd => 0x40,
            Self::Ud => 0x60,
        }
    }
}

/// An extended transport header an opcode may carry after the BTH.
///
/// The variants are in wire order: when an opcode has several, they follow
/// the BTH in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Hdr {
    /// Reliable Datagram ETH (4 bytes).
    Rdeth,
    /// Datagram ETH (8 bytes).
    Deth,
    /// FLUSH ETH (4 bytes).
    Feth,
    /// RDMA ETH (16 bytes).
    Reth,
    /// Atomic ETH (28 bytes).
    AtomicEth,
    /// ACK ETH (4 bytes).
    Aeth,
    /// Atomic ACK ETH (8 bytes).
    AtomicAckEth,
    /// Immediate data (4 bytes).
    ImmDt,
    /// Invalidate ETH (4 bytes).
    Ieth,
}

impl Hdr {
    /// Every extended header, in wire order.
    pub const ALL: [Hdr; 9] = [
        Hdr::Rdeth,
        Hdr::Deth,
        Hdr::Feth,
        Hdr::Reth,
        Hdr::AtomicEth,
        Hdr::Aeth,
        Hdr::AtomicAckEth,
        Hdr::ImmDt,
        Hdr::Ieth,
    ];

    /// Length of the header in bytes.
    pub const fn size(self) -> usize {
        match self {
            Hdr::Rdeth | Hdr::Feth | Hdr::Aeth | Hdr::ImmDt | Hdr::Ieth => 4,
            Hdr::Deth | Hdr::AtomicAckEth => 8,
            Hdr::Reth => 16,
            Hdr::AtomicEth => 28,
        }
    }

    const fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

/// Where a packet sits in its message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Position {
    /// First packet of a multi-packet message.
    First,
    /// Neither first nor last.
    Middle,
    /// Last packet of a multi-packet message.
    Last,
    /// The whole message in one packet.
    Only,
}

/// How many payload bytes a packet of an opcode may carry, for a path MTU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PayloadRule {
    /// No payload at all (ACKs, read requests, atomics, FLUSH).
    None,
    /// Exactly this many bytes (ATOMIC WRITE: 8).
    Exactly(usize),
    /// Exactly one MTU (first and middle packets).
    FullMtu,
    /// 1 to MTU bytes (last packets).
    OneToMtu,
    /// 0 to MTU bytes (only packets).
    UpToMtu,
}

// Header bits (the `hdrs` column).
const RDETH: u16 = Hdr::Rdeth.bit();
const DETH: u16 = Hdr::Deth.bit();
const FETH: u16 = Hdr::Feth.bit();
const RETH: u16 = Hdr::Reth.bit();
const ATMETH: u16 = Hdr::AtomicEth.bit();
const AETH: u16 = Hdr::Aeth.bit();
const ATMACK: u16 = Hdr::AtomicAckEth.bit();
const IMMDT: u16 = Hdr::ImmDt.bit();
const IETH: u16 = Hdr::Ieth.bit();

// Flag bits (the `flags` column), named after rxe's RXE_*_MASK.
const PAYLOAD: u32 = 1 << 0;
const REQ: u32 = 1 << 1;
const ACK: u32 = 1 << 2;
const SEND: u32 = 1 << 3;
const WRITE: u32 = 1 << 4;
const READ: u32 = 1 << 5;
const ATOMIC: u32 = 1 << 6;
const FLUSH: u32 = 1 << 7;
const ATOMIC_WRITE: u32 = 1 << 8;
const RWR: u32 = 1 << 9;
const COMP: u32 = 1 << 10;
const START: u32 = 1 << 11;
const MIDDLE: u32 = 1 << 12;
const END: u32 = 1 << 13;
/// rxe 6.12's entry has no `[RXE_PAYLOAD]` offset (so it is 0), which makes
/// its ICRC cover the BTH and extended headers a second time; see
/// [`Opcode::rxe_icrc_repeats_headers`].
const NO_PAYLOAD_OFFSET: u32 = 1 << 14;

/// Total length of the headers in the set `hdrs` (at most 84 bytes, so the
/// additions cannot wrap).
const fn set_len(hdrs: u16) -> usize {
    let mut len = 0usize;
    let mut rest: &[Hdr] = &Hdr::ALL;
    while let Some((h, tail)) = rest.split_first() {
        if hdrs & h.bit() != 0 {
            len = len.wrapping_add(h.size());
        }
        rest = tail;
    }
    len
}

#[derive(Clone, Copy)]
struct Row {
    name: &'static str,
    hdrs: u16,
    flags: u32,
    /// BTH plus extended headers, in bytes.
    len: u8,
}

/// The table indexed by opcode byte, built at compile time: a lookup per
/// query is one load (bytes that are no opcode have empty rows, which no
/// `Opcode` can name).
// Evaluated at compile time: an index out of range would fail the build,
// not panic.
#[allow(clippy::indexing_slicing)]
static ROWS: [Row; 256] = {
    let mut t = [Row {
        name: "",
        hdrs: 0,
        flags: 0,
        len: 0,
    }; 256];
    let mut i = 0;
    while i < Opcode::ALL.len() {
        let op = Opcode::ALL[i];
        t[op as usize] = op.make_row();
        i += 1;
    }
    t
};

/// The returned error of `Opcode::try_from(u8)`: the byte is not an opcode
/// rxe knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnknownOpcode(pub u8);

macro_rules! opcode_table {
    ($( $variant:ident = $val:literal, $name:literal,
        [$($h:ident)|*], [$($f:ident)|+]; )*) => {
        /// A BTH opcode known to rxe (see the module documentation).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum Opcode {
            $(
                #[doc = concat!("`IB_OPCODE_", $name, "` (", stringify!($val), ").")]
                $variant = $val,
            )*
        }

        impl Opcode {
            /// Every opcode of the table, in numeric order.
            pub const ALL: &'static [Opcode] = &[$(Opcode::$variant),*];

            /// Parses an opcode byte; `None` if rxe does not know it.
            pub const fn from_u8(v: u8) -> Option<Self> {
                match v {
                    $($val => Some(Opcode::$variant),)*
                    _ => None,
                }
            }

            // Only called to build `ROWS` at compile time: an overflow
            // would fail the build, not wrap.
            #[allow(clippy::arithmetic_side_effects)]
            const fn make_row(self) -> Row {
                match self {
                    $(Opcode::$variant => {
                        let hdrs = 0 $(| $h)*;
                        Row {
                            name: $name,
                            hdrs,
                            flags: 0 $(| $f)+,
                            len: (BTH_LEN + set_len(hdrs)) as u8,
                        }
                    },)*
                }
            }

            #[inline]
            // An opcode is a byte, and `ROWS` has a row for each of the 256.
            #[allow(clippy::indexing_slicing)]
            const fn row(self) -> &'static Row {
                &ROWS[self as usize]
            }
        }
    };
}

opcode_table! {
    // RC
    RcSendFirst = 0x00, "RC_SEND_FIRST", [], [PAYLOAD | REQ | RWR | SEND | START];
    RcSendMiddle = 0x01, "RC_SEND_MIDDLE", [], [PAYLOAD | REQ | SEND | MIDDLE];
    RcSendLast = 0x02, "RC_SEND_LAST", [], [PAYLOAD | REQ | COMP | SEND | END];
    RcSendLastWithImm = 0x03, "RC_SEND_LAST_WITH_IMMEDIATE", [IMMDT],
        [PAYLOAD | REQ | COMP | SEND | END];
    RcSendOnly = 0x04, "RC_SEND_ONLY", [], [PAYLOAD | REQ | COMP | RWR | SEND | START | END];
    RcSendOnlyWithImm = 0x05, "RC_SEND_ONLY_WITH_IMMEDIATE", [IMMDT],
        [PAYLOAD | REQ | COMP | RWR | SEND | START | END];
    RcWriteFirst = 0x06, "RC_RDMA_WRITE_FIRST", [RETH], [PAYLOAD | REQ | WRITE | START];
    RcWriteMiddle = 0x07, "RC_RDMA_WRITE_MIDDLE", [], [PAYLOAD | REQ | WRITE | MIDDLE];
    RcWriteLast = 0x08, "RC_RDMA_WRITE_LAST", [], [PAYLOAD | REQ | WRITE | END];
    RcWriteLastWithImm = 0x09, "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE", [IMMDT],
        [PAYLOAD | REQ | WRITE | COMP | RWR | END];
    RcWriteOnly = 0x0a, "RC_RDMA_WRITE_ONLY", [RETH], [PAYLOAD | REQ | WRITE | START | END];
    RcWriteOnlyWithImm = 0x0b, "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", [RETH | IMMDT],
        [PAYLOAD | REQ | WRITE | COMP | RWR | START | END];
    RcReadRequest = 0x0c, "RC_RDMA_READ_REQUEST", [RETH], [REQ | READ | START | END];
    RcReadResponseFirst = 0x0d, "RC_RDMA_READ_RESPONSE_FIRST", [AETH], [PAYLOAD | ACK | START];
    RcReadResponseMiddle = 0x0e, "RC_RDMA_READ_RESPONSE_MIDDLE", [], [PAYLOAD | ACK | MIDDLE];
    RcReadResponseLast = 0x0f, "RC_RDMA_READ_RESPONSE_LAST", [AETH], [PAYLOAD | ACK | END];
    RcReadResponseOnly = 0x10, "RC_RDMA_READ_RESPONSE_ONLY", [AETH],
        [PAYLOAD | ACK | START | END];
    RcAck = 0x11, "RC_ACKNOWLEDGE", [AETH], [ACK | START | END];
    RcAtomicAck = 0x12, "RC_ATOMIC_ACKNOWLEDGE", [AETH | ATMACK], [ACK | START | END];
    RcCompareSwap = 0x13, "RC_COMPARE_SWAP", [ATMETH], [REQ | ATOMIC | START | END];
    RcFetchAdd = 0x14, "RC_FETCH_ADD", [ATMETH], [REQ | ATOMIC | START | END];
    RcSendLastWithInv = 0x16, "RC_SEND_LAST_WITH_INVALIDATE", [IETH],
        [PAYLOAD | REQ | COMP | SEND | END];
    RcSendOnlyWithInv = 0x17, "RC_SEND_ONLY_WITH_INVALIDATE", [IETH],
        [PAYLOAD | REQ | COMP | RWR | SEND | START | END];
    RcFlush = 0x1c, "RC_FLUSH", [FETH | RETH], [REQ | FLUSH | START | END | NO_PAYLOAD_OFFSET];
    RcAtomicWrite = 0x1d, "RC_ATOMIC_WRITE", [RETH],
        [PAYLOAD | REQ | ATOMIC_WRITE | START | END];

    // UC
    UcSendFirst = 0x20, "UC_SEND_FIRST", [], [PAYLOAD | REQ | RWR | SEND | START];
    UcSendMiddle = 0x21, "UC_SEND_MIDDLE", [], [PAYLOAD | REQ | SEND | MIDDLE];
    UcSendLast = 0x22, "UC_SEND_LAST", [], [PAYLOAD | REQ | COMP | SEND | END];
    UcSendLastWithImm = 0x23, "UC_SEND_LAST_WITH_IMMEDIATE", [IMMDT],
        [PAYLOAD | REQ | COMP | SEND | END];
    UcSendOnly = 0x24, "UC_SEND_ONLY", [], [PAYLOAD | REQ | COMP | RWR | SEND | START | END];
    UcSendOnlyWithImm = 0x25, "UC_SEND_ONLY_WITH_IMMEDIATE", [IMMDT],
        [PAYLOAD | REQ | COMP | RWR | SEND | START | END];
    UcWriteFirst = 0x26, "UC_RDMA_WRITE_FIRST", [RETH], [PAYLOAD | REQ | WRITE | START];
    UcWriteMiddle = 0x27, "UC_RDMA_WRITE_MIDDLE", [], [PAYLOAD | REQ | WRITE | MIDDLE];
    UcWriteLast = 0x28, "UC_RDMA_WRITE_LAST", [], [PAYLOAD | REQ | WRITE | END];
    UcWriteLastWithImm = 0x29, "UC_RDMA_WRITE_LAST_WITH_IMMEDIATE", [IMMDT],
        [PAYLOAD | REQ | WRITE | COMP | RWR | END];
    UcWriteOnly = 0x2a, "UC_RDMA_WRITE_ONLY", [RETH], [PAYLOAD | REQ | WRITE | START | END];
    UcWriteOnlyWithImm = 0x2b, "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", [RETH | IMMDT],
        [PAYLOAD | REQ | WRITE | COMP | RWR | START | END];

    // RD (listed by rxe; no RD QPs)
    RdSendFirst = 0x40, "RD_SEND_FIRST", [RDETH | DETH], [PAYLOAD | REQ | RWR | SEND | START];
    RdSendMiddle = 0x41, "RD_SEND_MIDDLE", [RDETH | DETH], [PAYLOAD | REQ | SEND | MIDDLE];
    RdSendLast = 0x42, "RD_SEND_LAST", [RDETH | DETH], [PAYLOAD | REQ | COMP | SEND | END];
    RdSendLastWithImm = 0x43, "RD_SEND_LAST_WITH_IMMEDIATE", [RDETH | DETH | IMMDT],
        [PAYLOAD | REQ | COMP | SEND | END];
    RdSendOnly = 0x44, "RD_SEND_ONLY", [RDETH | DETH],
        [PAYLOAD | REQ | COMP | RWR | SEND | START | END];
    RdSendOnlyWithImm = 0x45, "RD_SEND_ONLY_WITH_IMMEDIATE", [RDETH | DETH | IMMDT],
        [PAYLOAD | REQ | COMP | RWR | SEND | START | END];
    RdWriteFirst = 0x46, "RD_RDMA_WRITE_FIRST", [RDETH | DETH | RETH],
        [PAYLOAD | REQ | WRITE | START];
    RdWriteMiddle = 0x47, "RD_RDMA_WRITE_MIDDLE", [RDETH | DETH], [PAYLOAD | REQ | WRITE | MIDDLE];
    RdWriteLast = 0x48, "RD_RDMA_WRITE_LAST", [RDETH | DETH], [PAYLOAD | REQ | WRITE | END];
    RdWriteLastWithImm = 0x49, "RD_RDMA_WRITE_LAST_WITH_IMMEDIATE", [RDETH | DETH | IMMDT],
        [PAYLOAD | REQ | WRITE | COMP | RWR | END];
    RdWriteOnly = 0x4a, "RD_RDMA_WRITE_ONLY", [RDETH | DETH | RETH],
        [PAYLOAD | REQ | WRITE | START | END];
    RdWriteOnlyWithImm = 0x4b, "RD_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
        [RDETH | DETH | RETH | IMMDT], [PAYLOAD | REQ | WRITE | COMP | RWR | START | END];
    RdReadRequest = 0x4c, "RD_RDMA_READ_REQUEST", [RDETH | DETH | RETH],
        [REQ | READ | START | END];
    RdReadResponseFirst = 0x4d, "RD_RDMA_READ_RESPONSE_FIRST", [RDETH | AETH],
        [PAYLOAD | ACK | START];
    RdReadResponseMiddle = 0x4e, "RD_RDMA_READ_RESPONSE_MIDDLE", [RDETH],
        [PAYLOAD | ACK | MIDDLE];
    RdReadResponseLast = 0x4f, "RD_RDMA_READ_RESPONSE_LAST", [RDETH | AETH],
        [PAYLOAD | ACK | END];
    RdReadResponseOnly = 0x50, "RD_RDMA_READ_RESPONSE_ONLY", [RDETH | AETH],
        [PAYLOAD | ACK | START | END];
    RdAck = 0x51, "RD_ACKNOWLEDGE", [RDETH | AETH], [ACK | START | END | NO_PAYLOAD_OFFSET];
    RdAtomicAck = 0x52, "RD_ATOMIC_ACKNOWLEDGE", [RDETH | AETH | ATMACK],
        [ACK | START | END | NO_PAYLOAD_OFFSET];
    RdCompareSwap = 0x53, "RD_COMPARE_SWAP", [RDETH | DETH | ATMETH],
        [REQ | ATOMIC | START | END];
    RdFetchAdd = 0x54, "RD_FETCH_ADD", [RDETH | DETH | ATMETH], [REQ | ATOMIC | START | END];

    // UD
    UdSendOnly = 0x64, "UD_SEND_ONLY", [DETH],
        [PAYLOAD | REQ | COMP | RWR | SEND | START | END];
    UdSendOnlyWithImm = 0x65, "UD_SEND_ONLY_WITH_IMMEDIATE", [DETH | IMMDT],
        [PAYLOAD | REQ | COMP | RWR | SEND | START | END];
}

impl TryFrom<u8> for Opcode {
    type Error = UnknownOpcode;

    fn try_from(v: u8) -> Result<Self, UnknownOpcode> {
        Self::from_u8(v).ok_or(UnknownOpcode(v))
    }
}

impl From<Opcode> for u8 {
    fn from(op: Opcode) -> u8 {
        op.as_u8()
    }
}

impl Opcode {
    /// The opcode byte.
    pub const fn as_u8(self) -> u8 {
        self as u8
    }

    /// The opcode of the BTH in `bth`, if rxe knows it.
    pub fn of_bth<T: AsRef<[u8]>>(bth: &Bth<T>) -> Option<Self> {
        Self::from_u8(bth.opcode())
    }

    /// The opcode for `transport` and the 5-bit operation `op` (the low
    /// bits, e.g. 0x04 for SEND ONLY), if rxe knows that combination.
    pub const fn compose(transport: Transport, op: u8) -> Option<Self> {
        Self::from_u8(transport.bits() | (op & 0x1f))
    }

    /// The 5-bit operation part of the opcode (the same for RC, UC, RD, UD).
    pub const fn operation(self) -> u8 {
        self.as_u8() & 0x1f
    }

    /// The IBA name without the `IB_OPCODE_` prefix, e.g. `"RC_SEND_ONLY"`.
    pub const fn name(self) -> &'static str {
        self.row().name
    }

    /// The transport service.
    pub const fn transport(self) -> Transport {
        match self.as_u8() & 0xe0 {
            0x00 => Transport::Rc,
            0x20 => Transport::Uc,
            0x40 => Transport::Rd,
            _ => Transport::Ud,
        }
    }

    const fn flag(self, f: u32) -> bool {
        self.row().flags & f != 0
    }

    /// The opcode carries extended header `h`.
    pub const fn has(self, h: Hdr) -> bool {
        self.row().hdrs & h.bit() != 0
    }

    /// Offset of extended header `h` from the start of the BTH, if present.
    pub const fn offset(self, h: Hdr) -> Option<usize> {
        if !self.has(h) {
            return None;
        }
        // The headers before `h` in wire order are the lower bits.
        let before = self.row().hdrs & h.bit().wrapping_sub(1);
        Some(BTH_LEN.wrapping_add(set_len(before)))
    }

    /// Bytes from the start of the BTH to the end of the last extended
    /// header (rxe's `rxe_opcode[].length`).
    pub const fn header_len(self) -> usize {
        self.row().len as usize
    }

    /// Offset of the payload from the start of the BTH: right after the
    /// headers.
    pub const fn payload_offset(self) -> usize {
        self.header_len()
    }

    /// The opcode may carry payload (`RXE_PAYLOAD_MASK`).
    pub const fn has_payload(self) -> bool {
        self.flag(PAYLOAD)
    }

    /// A request, handled by the responder (`RXE_REQ_MASK`).
    pub const fn is_request(self) -> bool {
        self.flag(REQ)
    }

    /// A response (ACK, atomic ACK, read response), handled by the
    /// completer (`RXE_ACK_MASK`).
    pub const fn is_response(self) -> bool {
        self.flag(ACK)
    }

    /// A SEND (`RXE_SEND_MASK`).
    pub const fn is_send(self) -> bool {
        self.flag(SEND)
    }

    /// An RDMA WRITE (`RXE_WRITE_MASK`).
    pub const fn is_write(self) -> bool {
        self.flag(WRITE)
    }

    /// An RDMA READ request (`RXE_READ_MASK`; read responses are
    /// [`Opcode::is_response`]).
    pub const fn is_read(self) -> bool {
        self.flag(READ)
    }

    /// Compare-and-swap or fetch-and-add (`RXE_ATOMIC_MASK`).
    pub const fn is_atomic(self) -> bool {
        self.flag(ATOMIC)
    }

    /// FLUSH (`RXE_FLUSH_MASK`).
    pub const fn is_flush(self) -> bool {
        self.flag(FLUSH)
    }

    /// ATOMIC WRITE (`RXE_ATOMIC_WRITE_MASK`).
    pub const fn is_atomic_write(self) -> bool {
        self.flag(ATOMIC_WRITE)
    }

    /// An RDMA operation that needs an R_Key check at the responder
    /// (`RXE_RDMA_OP_MASK`: read, write, atomic, atomic write, flush).
    pub const fn is_rdma_op(self) -> bool {
        self.flag(READ | WRITE | ATOMIC | ATOMIC_WRITE | FLUSH)
    }

    /// Consumes a receive WQE at the responder (`RXE_RWR_MASK`).
    pub const fn consumes_recv_wqe(self) -> bool {
        self.flag(RWR)
    }

    /// Generates a completion at the responder (`RXE_COMP_MASK`).
    pub const fn completes(self) -> bool {
        self.flag(COMP)
    }

    /// Starts a message (`RXE_START_MASK`).
    pub const fn is_start(self) -> bool {
        self.flag(START)
    }

    /// Continues a message (`RXE_MIDDLE_MASK`).
    pub const fn is_middle(self) -> bool {
        self.flag(MIDDLE)
    }

    /// Ends a message (`RXE_END_MASK`).
    pub const fn is_end(self) -> bool {
        self.flag(END)
    }

    /// First, middle, last or only.
    pub const fn position(self) -> Position {
        match (self.is_start(), self.is_end()) {
            (true, true) => Position::Only,
            (true, false) => Position::First,
            (false, true) => Position::Last,
            (false, false) => Position::Middle,
        }
    }

    /// The requester asks for an acknowledge on this opcode: a request of a
    /// reliable service that ends a message (rxe additionally sets AckReq
    /// on every `RXE_MAX_PKT_PER_ACK`-th packet of a long message).
    pub const fn requires_ack(self) -> bool {
        matches!(self.transport(), Transport::Rc | Transport::Rd)
            && self.is_request()
            && self.is_end()
    }

    /// The payload length rule of this opcode.
    pub const fn payload_rule(self) -> PayloadRule {
        if !self.has_payload() {
            PayloadRule::None
        } else if self.is_atomic_write() {
            PayloadRule::Exactly(8)
        } else {
            match self.position() {
                Position::First | Position::Middle => PayloadRule::FullMtu,
                Position::Last => PayloadRule::OneToMtu,
                Position::Only => PayloadRule::UpToMtu,
            }
        }
    }

    /// rxe 6.12 computes the ICRC of this opcode over the headers twice.
    ///
    /// Its `rxe_opcode[]` entry has no `[RXE_PAYLOAD]` offset (true for
    /// RC FLUSH, RD ACKNOWLEDGE and RD ATOMIC ACKNOWLEDGE), so
    /// `payload_addr()` is the BTH itself and `rxe_icrc_check()` /
    /// `rxe_icrc_generate()` feed BTH..end-of-headers, unmasked, after the
    /// (masked) headers. See [`super::icrc::IcrcFlavor`].
    pub const fn rxe_icrc_repeats_headers(self) -> bool {
        self.flag(NO_PAYLOAD_OFFSET)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_u8_is_exactly_the_table() {
        let mut known = 0;
        for v in 0..=255u8 {
            match Opcode::from_u8(v) {
                Some(op) => {
                    known += 1;
                    assert_eq!(op.as_u8(), v);
                    assert_eq!(Opcode::try_from(v), Ok(op));
                    assert_eq!(u8::from(op), v);
                }
                None => assert_eq!(Opcode::try_from(v), Err(UnknownOpcode(v))),
            }
        }
        assert_eq!(known, 60);
        assert_eq!(Opcode::ALL.len(), 60);
        assert!(Opcode::ALL.windows(2).all(|w| w[0].as_u8() < w[1].as_u8()));
        // Reserved or unlisted values: 0x15, CNP 0x81, RD FLUSH 0x5c, XRC.
        for v in [
            0x15u8, 0x18, 0x1e, 0x2c, 0x55, 0x5c, 0x60, 0x66, 0x80, 0x81, 0xa0, 0xe0, 0xff,
        ] {
            assert_eq!(Opcode::from_u8(v), None, "{v:#x}");
        }
    }

    #[test]
    fn compose_and_transport() {
        assert_eq!(
            Opcode::compose(Transport::Uc, 0x04),
            Some(Opcode::UcSendOnly)
        );
        assert_eq!(
            Opcode::compose(Transport::Ud, 0x05),
            Some(Opcode::UdSendOnlyWithImm)
        );
        assert_eq!(Opcode::compose(Transport::Uc, 0x0c), None);
        assert_eq!(Opcode::compose(Transport::Ud, 0x00), None);
        for &op in Opcode::ALL {
            assert_eq!(Opcode::compose(op.transport(), op.operation()), Some(op));
            assert_eq!(op.transport().bits() | op.operation(), op.as_u8());
        }
    }

    #[test]
    fn headers_follow_each_other() {
        for &op in Opcode::ALL {
            let mut end = BTH_LEN;
            for h in Hdr::ALL {
                if let Some(off) = op.offset(h) {
                    assert_eq!(off, end, "{} {:?}", op.name(), h);
                    end += h.size();
                }
            }
            assert_eq!(op.header_len(), end);
            assert!(op.header_len() <= MAX_HDR_LEN);
            assert_eq!(op.header_len() % 4, 0);
        }
        assert_eq!(
            Opcode::ALL.iter().map(|o| o.header_len()).max(),
            Some(MAX_HDR_LEN)
        );
    }

    #[test]
    fn every_opcode_has_exactly_one_position() {
        for &op in Opcode::ALL {
            let n = [
                op.is_start() && op.is_end(),
                op.is_start() && !op.is_end(),
                op.is_middle(),
                !op.is_start() && op.is_end(),
            ]
            .iter()
            .filter(|&&b| b)
            .count();
            assert_eq!(n, 1, "{}", op.name());
            assert!(!(op.is_middle() && (op.is_start() || op.is_end())));
            assert!(op.is_request() ^ op.is_response(), "{}", op.name());
        }
    }
}
