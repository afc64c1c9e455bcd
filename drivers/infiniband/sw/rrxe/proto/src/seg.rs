// SPDX-License-Identifier: GPL-2.0

//! Message to packets: split a message for a path MTU, with opcodes and
//! PSNs.
//!
//! [`segments`] returns an iterator of [`Segment`]s — opcode, PSN, payload
//! offset and length, pad — for one message: FIRST, MIDDLE..., LAST, or a
//! single ONLY; immediate data or invalidate rides on the LAST/ONLY packet;
//! read responses split the same way. Single-packet requests (RDMA READ
//! request, atomics, FLUSH, ATOMIC WRITE) yield one segment, and
//! [`Segments::psn_span`] tells how many PSNs the message consumes (a READ
//! request consumes one per response packet). No allocation: the iterator
//! is a few integers.
//!
//! Opcodes come from the table through [`Opcode::compose`]; an operation
//! the transport does not have (e.g. UC read, UD write) is an error.

use super::opcode::{Opcode, Transport};
use super::parse::Mtu;
use super::psn::Psn;

/// The largest message IBA allows (2^31 bytes; rxe's `RXE_MAX_MSG_SZ`).
pub const MAX_MSG_LEN: u32 = 1 << 31;

/// A message-level operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MsgOp {
    /// SEND.
    Send,
    /// SEND with immediate (on the last packet).
    SendWithImm,
    /// SEND with invalidate (IETH on the last packet; RC only).
    SendWithInv,
    /// RDMA WRITE (RETH on the first packet).
    Write,
    /// RDMA WRITE with immediate.
    WriteWithImm,
    /// RDMA READ response (RC only): the responder's side of a READ.
    ReadResponse,
    /// RDMA READ request: one packet without payload; `len` is the read
    /// length and decides the PSN span.
    ReadRequest,
    /// Atomic compare-and-swap: one packet without payload.
    CompareSwap,
    /// Atomic fetch-and-add: one packet without payload.
    FetchAdd,
    /// FLUSH: one packet without payload (`len` is the RETH length).
    Flush,
    /// ATOMIC WRITE: one packet with an 8-byte payload (`len` must be 8).
    AtomicWrite,
}

/// The opcode's low 5 bits for each position: (first, middle, last, only).
/// `None` where the operation is a single packet.
const fn op_bits(op: MsgOp) -> (Option<(u8, u8, u8)>, u8) {
    match op {
        MsgOp::Send => (Some((0x00, 0x01, 0x02)), 0x04),
        MsgOp::SendWithImm => (Some((0x00, 0x01, 0x03)), 0x05),
        MsgOp::SendWithInv => (Some((0x00, 0x01, 0x16)), 0x17),
        MsgOp::Write => (Some((0x06, 0x07, 0x08)), 0x0a),
        MsgOp::WriteWithImm => (Some((0x06, 0x07, 0x09)), 0x0b),
        MsgOp::ReadResponse => (Some((0x0d, 0x0e, 0x0f)), 0x10),
        MsgOp::ReadRequest => (None, 0x0c),
        MsgOp::CompareSwap => (None, 0x13),
        MsgOp::FetchAdd => (None, 0x14),
        MsgOp::Flush => (None, 0x1c),
        MsgOp::AtomicWrite => (None, 0x1d),
    }
}

/// Why a message cannot be segmented.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegError {
    /// The transport has no opcodes for this operation.
    Unsupported(Transport, MsgOp),
    /// Longer than 2^31 bytes.
    TooLong,
    /// A UD message must fit one MTU.
    UdTooLong,
    /// ATOMIC WRITE carries exactly 8 bytes.
    BadAtomicWriteLen,
}

/// One packet of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// Its opcode.
    pub opcode: Opcode,
    /// Its PSN.
    pub psn: Psn,
    /// Offset of its payload in the message.
    pub offset: u32,
    /// Payload bytes.
    pub len: u32,
    /// Pad bytes after the payload (0..=3).
    pub pad: u8,
}

/// The packets of one message (an iterator of [`Segment`]).
#[derive(Debug, Clone)]
pub struct Segments {
    first: Opcode,
    middle: Opcode,
    last: Opcode,
    only: Opcode,
    mtu: u32,
    len: u32,
    packets: u32,
    span: u32,
    start_psn: Psn,
    index: u32,
}

const fn pad_of(len: u32) -> u8 {
    (len.wrapping_neg() & 3) as u8
}

/// Splits a message of `len` bytes into packets for `mtu`, starting at PSN
/// `first_psn`.
pub fn segments(
    transport: Transport,
    op: MsgOp,
    len: u32,
    mtu: Mtu,
    first_psn: Psn,
) -> Result<Segments, SegError> {
    let unsupported = SegError::Unsupported(transport, op);
    if matches!(transport, Transport::Rd) {
        return Err(unsupported);
    }
    if len > MAX_MSG_LEN {
        return Err(SegError::TooLong);
    }
    let mtu_b = mtu.bytes() as u32;
    let (multi, only_bits) = op_bits(op);
    let only = Opcode::compose(transport, only_bits).ok_or(unsupported)?;
    // MTUs are powers of two: divide by shifting (no divide, no panic path).
    let shift = mtu_b.trailing_zeros();
    let partial = u32::from(len & mtu_b.wrapping_sub(1) != 0);
    let n_mtu = len.wrapping_shr(shift).wrapping_add(partial).max(1);
    let (first, middle, last, packets, span, len) = match multi {
        Some(_) if n_mtu == 1 => (only, only, only, 1, 1, len),
        Some((f, m, l)) => {
            if matches!(transport, Transport::Ud) {
                return Err(SegError::UdTooLong);
            }
            let f = Opcode::compose(transport, f).ok_or(unsupported)?;
            let m = Opcode::compose(transport, m).ok_or(unsupported)?;
            let l = Opcode::compose(transport, l).ok_or(unsupported)?;
            (f, m, l, n_mtu, n_mtu, len)
        }
        None => {
            let (span, len) = match op {
                MsgOp::ReadRequest => (n_mtu, 0),
                MsgOp::AtomicWrite if len != 8 => return Err(SegError::BadAtomicWriteLen),
                MsgOp::AtomicWrite => (1, 8),
                _ => (1, 0),
            };
            (only, only, only, 1, span, len)
        }
    };
    Ok(Segments {
        first,
        middle,
        last,
        only,
        mtu: mtu_b,
        len,
        packets,
        span,
        start_psn: first_psn,
        index: 0,
    })
}

impl Segments {
    /// Number of packets.
    pub fn packets(&self) -> u32 {
        self.packets
    }

    /// Number of PSNs the message consumes (equal to the packets, except
    /// for a READ request: one per expected response packet).
    pub fn psn_span(&self) -> u32 {
        self.span
    }

    /// The PSN after the message: where the next message starts.
    pub fn next_psn(&self) -> Psn {
        self.start_psn.add(self.span)
    }
}

impl Iterator for Segments {
    type Item = Segment;

    fn next(&mut self) -> Option<Segment> {
        if self.index >= self.packets {
            return None;
        }
        let i = self.index;
        self.index = i.saturating_add(1);
        let offset = i.checked_mul(self.mtu)?;
        let len = self.len.saturating_sub(offset).min(self.mtu);
        let opcode = if self.packets == 1 {
            self.only
        } else if i == 0 {
            self.first
        } else if self.index == self.packets {
            self.last
        } else {
            self.middle
        };
        Some(Segment {
            opcode,
            psn: self.start_psn.add(i),
            offset,
            len,
            pad: pad_of(len),
        })
    }

    fn nth(&mut self, n: usize) -> Option<Segment> {
        let skip = u32::try_from(n).unwrap_or(u32::MAX);
        self.index = self.index.saturating_add(skip).min(self.packets);
        self.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.packets.saturating_sub(self.index) as usize;
        (n, Some(n))
    }
}

impl ExactSizeIterator for Segments {}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(t: Transport, op: MsgOp, len: u32, mtu: Mtu, psn: u32) -> Vec<Segment> {
        segments(t, op, len, mtu, Psn::new(psn)).unwrap().collect()
    }

    #[test]
    fn send_split() {
        let s = collect(
            Transport::Rc,
            MsgOp::SendWithImm,
            2500,
            Mtu::MTU_1024,
            0xff_ffff,
        );
        let ops: Vec<_> = s.iter().map(|x| x.opcode).collect();
        assert_eq!(
            ops,
            [
                Opcode::RcSendFirst,
                Opcode::RcSendMiddle,
                Opcode::RcSendLastWithImm
            ]
        );
        assert_eq!(
            s.iter().map(|x| x.psn.get()).collect::<Vec<_>>(),
            [0xff_ffff, 0, 1]
        );
        assert_eq!(
            s.iter()
                .map(|x| (x.offset, x.len, x.pad))
                .collect::<Vec<_>>(),
            [(0, 1024, 0), (1024, 1024, 0), (2048, 452, 0)]
        );
        let s = collect(Transport::Uc, MsgOp::Write, 1025, Mtu::MTU_1024, 5);
        assert_eq!(
            s.iter()
                .map(|x| (x.opcode, x.len, x.pad))
                .collect::<Vec<_>>(),
            [(Opcode::UcWriteFirst, 1024, 0), (Opcode::UcWriteLast, 1, 3)]
        );
    }

    #[test]
    fn only_and_empty() {
        let s = collect(Transport::Rc, MsgOp::SendWithInv, 0, Mtu::MTU_256, 9);
        assert_eq!(
            s,
            [Segment {
                opcode: Opcode::RcSendOnlyWithInv,
                psn: Psn::new(9),
                offset: 0,
                len: 0,
                pad: 0
            }]
        );
        let s = collect(Transport::Ud, MsgOp::Send, 4096, Mtu::MTU_4096, 0);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].opcode, Opcode::UdSendOnly);
        assert_eq!(s[0].len, 4096);
        let s = collect(Transport::Rc, MsgOp::ReadResponse, 512, Mtu::MTU_512, 0);
        assert_eq!(s[0].opcode, Opcode::RcReadResponseOnly);
    }

    #[test]
    fn single_packet_requests() {
        let m = segments(
            Transport::Rc,
            MsgOp::ReadRequest,
            10_000,
            Mtu::MTU_1024,
            Psn::new(0xff_fffe),
        )
        .unwrap();
        assert_eq!(m.psn_span(), 10);
        assert_eq!(m.next_psn(), Psn::new(8));
        let v: Vec<_> = m.collect();
        assert_eq!(
            v,
            [Segment {
                opcode: Opcode::RcReadRequest,
                psn: Psn::new(0xff_fffe),
                offset: 0,
                len: 0,
                pad: 0
            }]
        );
        let m = segments(
            Transport::Rc,
            MsgOp::ReadRequest,
            0,
            Mtu::MTU_1024,
            Psn::ZERO,
        )
        .unwrap();
        assert_eq!(m.psn_span(), 1);
        let v = collect(Transport::Rc, MsgOp::AtomicWrite, 8, Mtu::MTU_256, 1);
        assert_eq!((v[0].opcode, v[0].len), (Opcode::RcAtomicWrite, 8));
        for (op, want) in [
            (MsgOp::CompareSwap, Opcode::RcCompareSwap),
            (MsgOp::FetchAdd, Opcode::RcFetchAdd),
            (MsgOp::Flush, Opcode::RcFlush),
        ] {
            let v = collect(Transport::Rc, op, 4096, Mtu::MTU_256, 1);
            assert_eq!((v.len(), v[0].opcode, v[0].len), (1, want, 0));
        }
    }

    #[test]
    fn refusals() {
        let e = |t, op, len| segments(t, op, len, Mtu::MTU_1024, Psn::ZERO).err();
        assert_eq!(
            e(Transport::Uc, MsgOp::ReadRequest, 8),
            Some(SegError::Unsupported(Transport::Uc, MsgOp::ReadRequest))
        );
        assert_eq!(
            e(Transport::Uc, MsgOp::SendWithInv, 8),
            Some(SegError::Unsupported(Transport::Uc, MsgOp::SendWithInv))
        );
        assert_eq!(
            e(Transport::Ud, MsgOp::Write, 8),
            Some(SegError::Unsupported(Transport::Ud, MsgOp::Write))
        );
        assert_eq!(
            e(Transport::Rd, MsgOp::Send, 8),
            Some(SegError::Unsupported(Transport::Rd, MsgOp::Send))
        );
        assert_eq!(
            e(Transport::Ud, MsgOp::Send, 1025),
            Some(SegError::UdTooLong)
        );
        assert_eq!(
            e(Transport::Rc, MsgOp::Send, MAX_MSG_LEN + 1),
            Some(SegError::TooLong)
        );
        assert_eq!(
            e(Transport::Rc, MsgOp::AtomicWrite, 4),
            Some(SegError::BadAtomicWriteLen)
        );
        assert!(e(Transport::Rc, MsgOp::Send, MAX_MSG_LEN).is_none());
    }

    #[test]
    fn nth_skips_like_next() {
        let s = segments(
            Transport::Rc,
            MsgOp::Send,
            10_000,
            Mtu::MTU_256,
            Psn::new(0xff_fff0),
        )
        .unwrap();
        for k in [0usize, 1, 5, 38, 39, 40, 1000] {
            let mut a = s.clone();
            let mut b = s.clone();
            let mut want = None;
            for _ in 0..=k {
                want = b.next();
            }
            assert_eq!(a.nth(k), want, "{k}");
            assert_eq!(a.next(), b.next());
            assert_eq!(a.len(), b.len());
        }
    }

    #[test]
    fn largest_message() {
        let m = segments(
            Transport::Rc,
            MsgOp::Write,
            MAX_MSG_LEN,
            Mtu::MTU_256,
            Psn::ZERO,
        )
        .unwrap();
        assert_eq!(m.packets(), MAX_MSG_LEN / 256);
        assert_eq!(m.len(), (MAX_MSG_LEN / 256) as usize);
        let last = m.clone().last().unwrap();
        assert_eq!(last.offset, MAX_MSG_LEN - 256);
        assert_eq!(last.opcode, Opcode::RcWriteLast);
        assert_eq!(m.next_psn(), Psn::new(MAX_MSG_LEN / 256));
    }
}
