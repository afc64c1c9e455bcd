// SPDX-License-Identifier: GPL-2.0

//! Every opcode's table entry against the C driver's `rxe_opcode[]` (Linux
//! 6.12, drivers/infiniband/sw/rxe/rxe_opcode.c), transcribed here by hand
//! as the oracle: the mask bits, `.length` and `.offset[]` of each entry.

use rrxe_proto::opcode::{Hdr, PayloadRule, Position, Transport};
use rrxe_proto::Opcode;

// rxe_hdr_mask names.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum M {
    Immdt,
    Reth,
    Aeth,
    Atmeth,
    Atmack,
    Ieth,
    Rdeth,
    Deth,
    Feth,
    Payload,
    Req,
    Ack,
    Send,
    Write,
    Read,
    Atomic,
    Flush,
    Rwr,
    Comp,
    Start,
    Middle,
    End,
    AtomicWrite,
}
use M::*;

// rxe_hdr_type names for .offset[].
#[allow(clippy::upper_case_acronyms)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum O {
    RETH,
    AETH,
    ATMETH,
    ATMACK,
    IETH,
    RDETH,
    DETH,
    IMMDT,
    FETH,
    PAYLOAD,
}

struct CEntry {
    val: u8,
    name: &'static str,
    mask: &'static [M],
    length: usize,
    offset: &'static [(O, usize)],
}

macro_rules! e {
    ($val:literal, $name:literal, [$($m:ident),*], $len:expr, [$($o:ident = $off:expr),*]) => {
        CEntry { val: $val, name: $name, mask: &[$($m),*], length: $len, offset: &[$((O::$o, $off)),*] }
    };
}

const BTH: usize = 12;
const DETH_B: usize = 8;
const IMMDT_B: usize = 4;
const RETH_B: usize = 16;
const AETH_B: usize = 4;
const ATMACK_B: usize = 8;
const ATMETH_B: usize = 28;
const IETH_B: usize = 4;
const RDETH_B: usize = 4;
const FETH_B: usize = 4;

#[rustfmt::skip]
const C_TABLE: &[CEntry] = &[
    e!(0x00, "RC_SEND_FIRST", [Payload, Req, Rwr, Send, Start], BTH, [PAYLOAD = BTH]),
    e!(0x01, "RC_SEND_MIDDLE", [Payload, Req, Send, Middle], BTH, [PAYLOAD = BTH]),
    e!(0x02, "RC_SEND_LAST", [Payload, Req, Comp, Send, End], BTH, [PAYLOAD = BTH]),
    e!(0x03, "RC_SEND_LAST_WITH_IMMEDIATE", [Immdt, Payload, Req, Comp, Send, End], BTH + IMMDT_B, [IMMDT = BTH, PAYLOAD = BTH + IMMDT_B]),
    e!(0x04, "RC_SEND_ONLY", [Payload, Req, Comp, Rwr, Send, Start, End], BTH, [PAYLOAD = BTH]),
    e!(0x05, "RC_SEND_ONLY_WITH_IMMEDIATE", [Immdt, Payload, Req, Comp, Rwr, Send, Start, End], BTH + IMMDT_B, [IMMDT = BTH, PAYLOAD = BTH + IMMDT_B]),
    e!(0x06, "RC_RDMA_WRITE_FIRST", [Reth, Payload, Req, Write, Start], BTH + RETH_B, [RETH = BTH, PAYLOAD = BTH + RETH_B]),
    e!(0x07, "RC_RDMA_WRITE_MIDDLE", [Payload, Req, Write, Middle], BTH, [PAYLOAD = BTH]),
    e!(0x08, "RC_RDMA_WRITE_LAST", [Payload, Req, Write, End], BTH, [PAYLOAD = BTH]),
    e!(0x09, "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE", [Immdt, Payload, Req, Write, Comp, Rwr, End], BTH + IMMDT_B, [IMMDT = BTH, PAYLOAD = BTH + IMMDT_B]),
    e!(0x0a, "RC_RDMA_WRITE_ONLY", [Reth, Payload, Req, Write, Start, End], BTH + RETH_B, [RETH = BTH, PAYLOAD = BTH + RETH_B]),
    e!(0x0b, "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", [Reth, Immdt, Payload, Req, Write, Comp, Rwr, Start, End], BTH + IMMDT_B + RETH_B, [RETH = BTH, IMMDT = BTH + RETH_B, PAYLOAD = BTH + RETH_B + IMMDT_B]),
    e!(0x0c, "RC_RDMA_READ_REQUEST", [Reth, Req, Read, Start, End], BTH + RETH_B, [RETH = BTH, PAYLOAD = BTH + RETH_B]),
    e!(0x0d, "RC_RDMA_READ_RESPONSE_FIRST", [Aeth, Payload, Ack, Start], BTH + AETH_B, [AETH = BTH, PAYLOAD = BTH + AETH_B]),
    e!(0x0e, "RC_RDMA_READ_RESPONSE_MIDDLE", [Payload, Ack, Middle], BTH, [PAYLOAD = BTH]),
    e!(0x0f, "RC_RDMA_READ_RESPONSE_LAST", [Aeth, Payload, Ack, End], BTH + AETH_B, [AETH = BTH, PAYLOAD = BTH + AETH_B]),
    e!(0x10, "RC_RDMA_READ_RESPONSE_ONLY", [Aeth, Payload, Ack, Start, End], BTH + AETH_B, [AETH = BTH, PAYLOAD = BTH + AETH_B]),
    e!(0x11, "RC_ACKNOWLEDGE", [Aeth, Ack, Start, End], BTH + AETH_B, [AETH = BTH, PAYLOAD = BTH + AETH_B]),
    e!(0x12, "RC_ATOMIC_ACKNOWLEDGE", [Aeth, Atmack, Ack, Start, End], BTH + ATMACK_B + AETH_B, [AETH = BTH, ATMACK = BTH + AETH_B, PAYLOAD = BTH + ATMACK_B + AETH_B]),
    e!(0x13, "RC_COMPARE_SWAP", [Atmeth, Req, Atomic, Start, End], BTH + ATMETH_B, [ATMETH = BTH, PAYLOAD = BTH + ATMETH_B]),
    e!(0x14, "RC_FETCH_ADD", [Atmeth, Req, Atomic, Start, End], BTH + ATMETH_B, [ATMETH = BTH, PAYLOAD = BTH + ATMETH_B]),
    e!(0x16, "RC_SEND_LAST_WITH_INVALIDATE", [Ieth, Payload, Req, Comp, Send, End], BTH + IETH_B, [IETH = BTH, PAYLOAD = BTH + IETH_B]),
    e!(0x17, "RC_SEND_ONLY_WITH_INVALIDATE", [Ieth, Payload, Req, Comp, Rwr, Send, End, Start], BTH + IETH_B, [IETH = BTH, PAYLOAD = BTH + IETH_B]),
    // No [RXE_PAYLOAD] offset in C.
    e!(0x1c, "RC_FLUSH", [Feth, Reth, Flush, Start, End, Req], BTH + FETH_B + RETH_B, [FETH = BTH, RETH = BTH + FETH_B]),
    e!(0x1d, "RC_ATOMIC_WRITE", [Reth, Payload, Req, AtomicWrite, Start, End], BTH + RETH_B, [RETH = BTH, PAYLOAD = BTH + RETH_B]),

    e!(0x20, "UC_SEND_FIRST", [Payload, Req, Rwr, Send, Start], BTH, [PAYLOAD = BTH]),
    e!(0x21, "UC_SEND_MIDDLE", [Payload, Req, Send, Middle], BTH, [PAYLOAD = BTH]),
    e!(0x22, "UC_SEND_LAST", [Payload, Req, Comp, Send, End], BTH, [PAYLOAD = BTH]),
    e!(0x23, "UC_SEND_LAST_WITH_IMMEDIATE", [Immdt, Payload, Req, Comp, Send, End], BTH + IMMDT_B, [IMMDT = BTH, PAYLOAD = BTH + IMMDT_B]),
    e!(0x24, "UC_SEND_ONLY", [Payload, Req, Comp, Rwr, Send, Start, End], BTH, [PAYLOAD = BTH]),
    e!(0x25, "UC_SEND_ONLY_WITH_IMMEDIATE", [Immdt, Payload, Req, Comp, Rwr, Send, Start, End], BTH + IMMDT_B, [IMMDT = BTH, PAYLOAD = BTH + IMMDT_B]),
    e!(0x26, "UC_RDMA_WRITE_FIRST", [Reth, Payload, Req, Write, Start], BTH + RETH_B, [RETH = BTH, PAYLOAD = BTH + RETH_B]),
    e!(0x27, "UC_RDMA_WRITE_MIDDLE", [Payload, Req, Write, Middle], BTH, [PAYLOAD = BTH]),
    e!(0x28, "UC_RDMA_WRITE_LAST", [Payload, Req, Write, End], BTH, [PAYLOAD = BTH]),
    e!(0x29, "UC_RDMA_WRITE_LAST_WITH_IMMEDIATE", [Immdt, Payload, Req, Write, Comp, Rwr, End], BTH + IMMDT_B, [IMMDT = BTH, PAYLOAD = BTH + IMMDT_B]),
    e!(0x2a, "UC_RDMA_WRITE_ONLY", [Reth, Payload, Req, Write, Start, End], BTH + RETH_B, [RETH = BTH, PAYLOAD = BTH + RETH_B]),
    e!(0x2b, "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", [Reth, Immdt, Payload, Req, Write, Comp, Rwr, Start, End], BTH + IMMDT_B + RETH_B, [RETH = BTH, IMMDT = BTH + RETH_B, PAYLOAD = BTH + RETH_B + IMMDT_B]),

    e!(0x40, "RD_SEND_FIRST", [Rdeth, Deth, Payload, Req, Rwr, Send, Start], BTH + DETH_B + RDETH_B, [RDETH = BTH, DETH = BTH + RDETH_B, PAYLOAD = BTH + RDETH_B + DETH_B]),
    e!(0x41, "RD_SEND_MIDDLE", [Rdeth, Deth, Payload, Req, Send, Middle], BTH + DETH_B + RDETH_B, [RDETH = BTH, DETH = BTH + RDETH_B, PAYLOAD = BTH + RDETH_B + DETH_B]),
    e!(0x42, "RD_SEND_LAST", [Rdeth, Deth, Payload, Req, Comp, Send, End], BTH + DETH_B + RDETH_B, [RDETH = BTH, DETH = BTH + RDETH_B, PAYLOAD = BTH + RDETH_B + DETH_B]),
    e!(0x43, "RD_SEND_LAST_WITH_IMMEDIATE", [Rdeth, Deth, Immdt, Payload, Req, Comp, Send, End], BTH + IMMDT_B + DETH_B + RDETH_B, [RDETH = BTH, DETH = BTH + RDETH_B, IMMDT = BTH + RDETH_B + DETH_B, PAYLOAD = BTH + RDETH_B + DETH_B + IMMDT_B]),
    e!(0x44, "RD_SEND_ONLY", [Rdeth, Deth, Payload, Req, Comp, Rwr, Send, Start, End], BTH + DETH_B + RDETH_B, [RDETH = BTH, DETH = BTH + RDETH_B, PAYLOAD = BTH + RDETH_B + DETH_B]),
    e!(0x45, "RD_SEND_ONLY_WITH_IMMEDIATE", [Rdeth, Deth, Immdt, Payload, Req, Comp, Rwr, Send, Start, End], BTH + IMMDT_B + DETH_B + RDETH_B, [RDETH = BTH, DETH = BTH + RDETH_B, IMMDT = BTH + RDETH_B + DETH_B, PAYLOAD = BTH + RDETH_B + DETH_B + IMMDT_B]),
    e!(0x46, "RD_RDMA_WRITE_FIRST", [Rdeth, Deth, Reth, Payload, Req, Write, Start], BTH + RETH_B + DETH_B + RDETH_B, [RDETH = BTH, DETH = BTH + RDETH_B, RETH = BTH + RDETH_B + DETH_B, PAYLOAD = BTH + RDETH_B + DETH_B + RETH_B]),
    e!(0x47, "RD_RDMA_WRITE_MIDDLE", [Rdeth, Deth, Payload, Req, Write, Middle], BTH + DETH_B + RDETH_B, [RDETH = BTH, DETH = BTH + RDETH_B, PAYLOAD = BTH + RDETH_B + DETH_B]),
    e!(0x48, "RD_RDMA_WRITE_LAST", [Rdeth, Deth, Payload, Req, Write, End], BTH + DETH_B + RDETH_B, [RDETH = BTH, DETH = BTH + RDETH_B, PAYLOAD = BTH + RDETH_B + DETH_B]),
    e!(0x49, "RD_RDMA_WRITE_LAST_WITH_IMMEDIATE", [Rdeth, Deth, Immdt, Payload, Req, Write, Comp, Rwr, End], BTH + IMMDT_B + DETH_B + RDETH_B, [RDETH = BTH, DETH = BTH + RDETH_B, IMMDT = BTH + RDETH_B + DETH_B, PAYLOAD = BTH + RDETH_B + DETH_B + IMMDT_B]),
    e!(0x4a, "RD_RDMA_WRITE_ONLY", [Rdeth, Deth, Reth, Payload, Req, Write, Start, End], BTH + RETH_B + DETH_B + RDETH_B, [RDETH = BTH, DETH = BTH + RDETH_B, RETH = BTH + RDETH_B + DETH_B, PAYLOAD = BTH + RDETH_B + DETH_B + RETH_B]),
    e!(0x4b, "RD_RDMA_WRITE_ONLY_WITH_IMMEDIATE", [Rdeth, Deth, Reth, Immdt, Payload, Req, Write, Comp, Rwr, Start, End], BTH + IMMDT_B + RETH_B + DETH_B + RDETH_B, [RDETH = BTH, DETH = BTH + RDETH_B, RETH = BTH + RDETH_B + DETH_B, IMMDT = BTH + RDETH_B + DETH_B + RETH_B, PAYLOAD = BTH + RDETH_B + DETH_B + RETH_B + IMMDT_B]),
    e!(0x4c, "RD_RDMA_READ_REQUEST", [Rdeth, Deth, Reth, Req, Read, Start, End], BTH + RETH_B + DETH_B + RDETH_B, [RDETH = BTH, DETH = BTH + RDETH_B, RETH = BTH + RDETH_B + DETH_B, PAYLOAD = BTH + RETH_B + DETH_B + RDETH_B]),
    e!(0x4d, "RD_RDMA_READ_RESPONSE_FIRST", [Rdeth, Aeth, Payload, Ack, Start], BTH + AETH_B + RDETH_B, [RDETH = BTH, AETH = BTH + RDETH_B, PAYLOAD = BTH + RDETH_B + AETH_B]),
    e!(0x4e, "RD_RDMA_READ_RESPONSE_MIDDLE", [Rdeth, Payload, Ack, Middle], BTH + RDETH_B, [RDETH = BTH, PAYLOAD = BTH + RDETH_B]),
    e!(0x4f, "RD_RDMA_READ_RESPONSE_LAST", [Rdeth, Aeth, Payload, Ack, End], BTH + AETH_B + RDETH_B, [RDETH = BTH, AETH = BTH + RDETH_B, PAYLOAD = BTH + RDETH_B + AETH_B]),
    e!(0x50, "RD_RDMA_READ_RESPONSE_ONLY", [Rdeth, Aeth, Payload, Ack, Start, End], BTH + AETH_B + RDETH_B, [RDETH = BTH, AETH = BTH + RDETH_B, PAYLOAD = BTH + RDETH_B + AETH_B]),
    // No [RXE_PAYLOAD] offset in C.
    e!(0x51, "RD_ACKNOWLEDGE", [Rdeth, Aeth, Ack, Start, End], BTH + AETH_B + RDETH_B, [RDETH = BTH, AETH = BTH + RDETH_B]),
    // No [RXE_PAYLOAD] offset in C.
    e!(0x52, "RD_ATOMIC_ACKNOWLEDGE", [Rdeth, Aeth, Atmack, Ack, Start, End], BTH + ATMACK_B + AETH_B + RDETH_B, [RDETH = BTH, AETH = BTH + RDETH_B, ATMACK = BTH + RDETH_B + AETH_B]),
    e!(0x53, "RD_COMPARE_SWAP", [Rdeth, Deth, Atmeth, Req, Atomic, Start, End], BTH + ATMETH_B + DETH_B + RDETH_B, [RDETH = BTH, DETH = BTH + RDETH_B, ATMETH = BTH + RDETH_B + DETH_B, PAYLOAD = BTH + ATMETH_B + DETH_B + RDETH_B]),
    e!(0x54, "RD_FETCH_ADD", [Rdeth, Deth, Atmeth, Req, Atomic, Start, End], BTH + ATMETH_B + DETH_B + RDETH_B, [RDETH = BTH, DETH = BTH + RDETH_B, ATMETH = BTH + RDETH_B + DETH_B, PAYLOAD = BTH + ATMETH_B + DETH_B + RDETH_B]),

    e!(0x64, "UD_SEND_ONLY", [Deth, Payload, Req, Comp, Rwr, Send, Start, End], BTH + DETH_B, [DETH = BTH, PAYLOAD = BTH + DETH_B]),
    e!(0x65, "UD_SEND_ONLY_WITH_IMMEDIATE", [Deth, Immdt, Payload, Req, Comp, Rwr, Send, Start, End], BTH + IMMDT_B + DETH_B, [DETH = BTH, IMMDT = BTH + DETH_B, PAYLOAD = BTH + DETH_B + IMMDT_B]),
];

fn hdr_of(o: O) -> Option<Hdr> {
    Some(match o {
        O::RETH => Hdr::Reth,
        O::AETH => Hdr::Aeth,
        O::ATMETH => Hdr::AtomicEth,
        O::ATMACK => Hdr::AtomicAckEth,
        O::IETH => Hdr::Ieth,
        O::RDETH => Hdr::Rdeth,
        O::DETH => Hdr::Deth,
        O::IMMDT => Hdr::ImmDt,
        O::FETH => Hdr::Feth,
        O::PAYLOAD => return None,
    })
}

fn mask_hdr(m: M) -> Option<Hdr> {
    Some(match m {
        Immdt => Hdr::ImmDt,
        Reth => Hdr::Reth,
        Aeth => Hdr::Aeth,
        Atmeth => Hdr::AtomicEth,
        Atmack => Hdr::AtomicAckEth,
        Ieth => Hdr::Ieth,
        Rdeth => Hdr::Rdeth,
        Deth => Hdr::Deth,
        Feth => Hdr::Feth,
        _ => return None,
    })
}

#[test]
fn table_has_exactly_the_c_entries() {
    let c: Vec<u8> = C_TABLE.iter().map(|e| e.val).collect();
    let ours: Vec<u8> = Opcode::ALL.iter().map(|o| o.as_u8()).collect();
    assert_eq!(ours, c);
    for v in 0..=255u8 {
        assert_eq!(Opcode::from_u8(v).is_some(), c.contains(&v), "{v:#x}");
    }
}

#[test]
fn every_entry_matches_c() {
    for e in C_TABLE {
        let op = Opcode::from_u8(e.val).unwrap();
        let has = |m: M| e.mask.contains(&m);
        let n = e.name;
        assert_eq!(op.name(), n);
        assert_eq!(op.header_len(), e.length, "{n} length");
        for h in Hdr::ALL {
            let in_mask = e.mask.iter().any(|&m| mask_hdr(m) == Some(h));
            assert_eq!(op.has(h), in_mask, "{n} has {h:?}");
            let c_off = e
                .offset
                .iter()
                .find(|(o, _)| hdr_of(*o) == Some(h))
                .map(|&(_, v)| v);
            assert_eq!(op.offset(h), c_off, "{n} offset {h:?}");
        }
        match e.offset.iter().find(|(o, _)| *o == O::PAYLOAD) {
            Some(&(_, off)) => {
                assert_eq!(op.payload_offset(), off, "{n} payload offset");
                assert!(!op.rxe_icrc_repeats_headers(), "{n}");
            }
            None => assert!(op.rxe_icrc_repeats_headers(), "{n} has no C payload offset"),
        }
        assert_eq!(op.has_payload(), has(Payload), "{n} payload");
        assert_eq!(op.is_request(), has(Req), "{n} req");
        assert_eq!(op.is_response(), has(Ack), "{n} ack");
        assert_eq!(op.is_send(), has(Send), "{n} send");
        assert_eq!(op.is_write(), has(Write), "{n} write");
        assert_eq!(op.is_read(), has(Read), "{n} read");
        assert_eq!(op.is_atomic(), has(Atomic), "{n} atomic");
        assert_eq!(op.is_flush(), has(Flush), "{n} flush");
        assert_eq!(op.is_atomic_write(), has(AtomicWrite), "{n} atomic write");
        assert_eq!(op.consumes_recv_wqe(), has(Rwr), "{n} rwr");
        assert_eq!(op.completes(), has(Comp), "{n} comp");
        assert_eq!(op.is_start(), has(Start), "{n} start");
        assert_eq!(op.is_middle(), has(Middle), "{n} middle");
        assert_eq!(op.is_end(), has(End), "{n} end");
        assert_eq!(
            op.is_rdma_op(),
            has(Read) || has(Write) || has(Atomic) || has(AtomicWrite) || has(Flush),
            "{n} rdma op"
        );
        let t = match e.val >> 5 {
            0 => Transport::Rc,
            1 => Transport::Uc,
            2 => Transport::Rd,
            3 => Transport::Ud,
            _ => unreachable!(),
        };
        assert_eq!(op.transport(), t, "{n}");
        // Position and payload rule follow from the C flags.
        let pos = match (has(Start), has(End)) {
            (true, true) => Position::Only,
            (true, false) => Position::First,
            (false, true) => Position::Last,
            (false, false) => Position::Middle,
        };
        assert_eq!(op.position(), pos, "{n}");
        let rule = if !has(Payload) {
            PayloadRule::None
        } else if has(AtomicWrite) {
            PayloadRule::Exactly(8)
        } else {
            match pos {
                Position::First | Position::Middle => PayloadRule::FullMtu,
                Position::Last => PayloadRule::OneToMtu,
                Position::Only => PayloadRule::UpToMtu,
            }
        };
        assert_eq!(op.payload_rule(), rule, "{n}");
        // rxe sets AckReq on the END packet of a reliable request.
        assert_eq!(
            op.requires_ack(),
            matches!(t, Transport::Rc | Transport::Rd) && has(Req) && has(End),
            "{n}"
        );
    }
}
