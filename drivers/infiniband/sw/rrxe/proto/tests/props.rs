// SPDX-License-Identifier: GPL-2.0

//! Property tests of sequence arithmetic (across the 24-bit wrap),
//! segmentation invariants, and segment→build→parse of whole messages.

mod common;

use common::*;
use proptest::prelude::*;
use rrxe_proto::opcode::Position;
use rrxe_proto::parse::parse_frame;
use rrxe_proto::seg::{segments, MAX_MSG_LEN};
use rrxe_proto::{
    psn_compare, IcrcFlavor, Limits, MsgOp, Msn, Mtu, Opcode, Psn, TableCrc32, Transport, TxSpec,
};
use std::cmp::Ordering;

const SPACE: u32 = 1 << 24;

/// A PSN near the wrap half the time.
fn psn_near_wrap() -> impl Strategy<Value = u32> {
    prop_oneof![
        any::<u32>(),
        (SPACE - 300..SPACE + 300).prop_map(|v| v % SPACE)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn psn_add_sub_wrap(a in psn_near_wrap(), n in any::<u32>()) {
        let p = Psn::new(a);
        prop_assert!(p.get() < SPACE);
        prop_assert_eq!(p.add(n).get(), ((a as u64 + n as u64) % SPACE as u64) as u32);
        prop_assert_eq!(p.add(n).sub(n), p);
        prop_assert_eq!(p.add(n).offset_from(p), n % SPACE);
        prop_assert_eq!(Msn::new(a).add(n).get(), p.add(n).get());
    }

    #[test]
    fn psn_compare_is_rxe_and_consistent(a in psn_near_wrap(), d in -(1i64 << 23) + 1..(1i64 << 23)) {
        let pa = Psn::new(a);
        let pb = pa.add(d.rem_euclid(SPACE as i64) as u32);
        // pb is d ahead of pa.
        prop_assert_eq!(pb.distance(pa) as i64, d);
        prop_assert_eq!(pa.distance(pb) as i64, -d);
        // rxe: sign of ((a - b) << 8) as s32.
        let c = ((pb.get().wrapping_sub(pa.get())) << 8) as i32;
        prop_assert_eq!(psn_compare(pb.get(), pa.get()), c);
        prop_assert_eq!(c.signum() as i64, d.signum());
        prop_assert_eq!(pb.compare(pa), d.cmp(&0));
        prop_assert_eq!(pa.compare(pb), 0.cmp(&d));
        prop_assert_eq!(pb.after(pa), d > 0);
        prop_assert_eq!(pb.before(pa), d < 0);
        // Upper bits of raw u32s never matter.
        prop_assert_eq!(psn_compare(pb.get() | 0x7f00_0000, pa.get()), c);
    }

    #[test]
    fn psn_windows(base in psn_near_wrap(), off in 0u32..SPACE, len in 0u32..SPACE) {
        let b = Psn::new(base);
        let p = b.add(off);
        prop_assert_eq!(p.in_window(b, len), off < len);
        if off < len && len <= 1 << 23 && off > 0 {
            prop_assert!(p.after(b));
        }
    }

    #[test]
    fn segmentation_invariants(
        t in prop::sample::select(vec![Transport::Rc, Transport::Uc, Transport::Ud]),
        op in prop::sample::select(vec![MsgOp::Send, MsgOp::SendWithImm, MsgOp::SendWithInv, MsgOp::Write,
            MsgOp::WriteWithImm, MsgOp::ReadResponse]),
        len in prop_oneof![0u32..20_000, 0u32..=MAX_MSG_LEN],
        mtu in prop::sample::select(vec![Mtu::MTU_256, Mtu::MTU_512, Mtu::MTU_1024, Mtu::MTU_2048, Mtu::MTU_4096]),
        psn in psn_near_wrap(),
    ) {
        let m = mtu.bytes() as u32;
        let Ok(segs) = segments(t, op, len, mtu, Psn::new(psn)) else {
            // Refused only where the transport lacks the operation or UD
            // would need more than one packet.
            let lacks = matches!((t, op), (Transport::Uc, MsgOp::SendWithInv | MsgOp::ReadResponse))
                || matches!((t, op), (Transport::Ud, MsgOp::SendWithInv | MsgOp::Write | MsgOp::WriteWithImm | MsgOp::ReadResponse));
            prop_assert!(lacks || (t == Transport::Ud && len > m));
            return Ok(());
        };
        let n = segs.packets();
        prop_assert_eq!(n, len.div_ceil(m).max(1));
        prop_assert_eq!(segs.psn_span(), n);
        prop_assert_eq!(segs.next_psn(), Psn::new(psn).add(n));
        prop_assert_eq!(segs.len(), n as usize);
        // Walk only the ends of huge messages (`skip` is O(1): `nth`).
        let all: Vec<(u32, _)> = if n > 3000 {
            let head = segs.clone().take(1000).enumerate().map(|(i, s)| (i as u32, s));
            let tail = segs.clone().skip(n as usize - 1000).enumerate().map(|(i, s)| (n - 1000 + i as u32, s));
            head.chain(tail).collect()
        } else {
            segs.clone().enumerate().map(|(i, s)| (i as u32, s)).collect()
        };
        let mut sum = 0u64;
        for &(i, s) in &all {
            prop_assert_eq!(s.psn, Psn::new(psn).add(i));
            prop_assert_eq!(s.offset, i * m);
            prop_assert!(s.len <= m);
            prop_assert_eq!((s.len + s.pad as u32) % 4, 0);
            prop_assert!(s.pad < 4);
            prop_assert_eq!(s.opcode.transport(), t);
            let pos = s.opcode.position();
            let want = match (i == 0, i == n - 1) {
                (true, true) => Position::Only,
                (true, false) => Position::First,
                (false, true) => Position::Last,
                (false, false) => Position::Middle,
            };
            prop_assert_eq!(pos, want);
            if matches!(pos, Position::First | Position::Middle) {
                prop_assert_eq!(s.len, m);
            }
            // Immediate or invalidate exactly on the last packet.
            let tail = matches!(pos, Position::Last | Position::Only);
            prop_assert_eq!(s.opcode.has(rrxe_proto::Hdr::ImmDt), tail && matches!(op, MsgOp::SendWithImm | MsgOp::WriteWithImm));
            prop_assert_eq!(s.opcode.has(rrxe_proto::Hdr::Ieth), tail && op == MsgOp::SendWithInv);
            // RETH only on the first packet of a write.
            prop_assert_eq!(s.opcode.has(rrxe_proto::Hdr::Reth), i == 0 && matches!(op, MsgOp::Write | MsgOp::WriteWithImm));
            sum += s.len as u64;
        }
        if n <= 3000 {
            prop_assert_eq!(sum, len as u64);
        } else {
            // Every packet but the last is full.
            let last = all.last().unwrap().1;
            prop_assert_eq!((n as u64 - 1) * m as u64 + last.len as u64, len as u64);
        }
    }

    #[test]
    fn segmented_messages_parse_back(
        op in prop::sample::select(vec![MsgOp::Send, MsgOp::SendWithImm, MsgOp::SendWithInv, MsgOp::Write,
            MsgOp::WriteWithImm, MsgOp::ReadResponse]),
        len in 0u32..5000,
        mtu in prop::sample::select(vec![Mtu::MTU_256, Mtu::MTU_1024]),
        psn in psn_near_wrap(),
        seed in any::<u64>(),
    ) {
        let msg = bytes(len as usize, seed);
        let segs = segments(Transport::Rc, op, len, mtu, Psn::new(psn)).unwrap();
        let mut got = Vec::new();
        let mut next = Psn::new(psn);
        for s in segs {
            let mut spec = TxSpec::new(s.opcode, 0x31, s.psn, s.len as usize);
            spec.ext = ext_for(s.opcode, seed);
            let chunk = &msg[s.offset as usize..(s.offset + s.len) as usize];
            let f = make_frame(&spec, chunk, &v6(), IcrcFlavor::Rxe);
            let p = parse_frame(&f, &Limits::new(mtu), &TableCrc32).unwrap().packet;
            prop_assert_eq!(p.psn(), next);
            prop_assert_eq!(usize::from(p.headers().pad()), s.pad as usize);
            next = next.next();
            got.extend_from_slice(p.payload());
        }
        prop_assert_eq!(got, msg);
    }
}

#[test]
fn psn_compare_fixed_points() {
    // Exactly half the space apart: rxe's formula gives the sign bit.
    assert!(psn_compare(1 << 23, 0) < 0);
    assert!(psn_compare(0, 1 << 23) < 0);
    assert_eq!(Psn::new(5).compare(Psn::new(5)), Ordering::Equal);
}

#[test]
fn read_request_span_and_single_ops() {
    for (len, mtu, span) in [
        (0u32, Mtu::MTU_256, 1u32),
        (1, Mtu::MTU_256, 1),
        (256, Mtu::MTU_256, 1),
        (257, Mtu::MTU_256, 2),
        (MAX_MSG_LEN, Mtu::MTU_4096, MAX_MSG_LEN / 4096),
    ] {
        let s = segments(Transport::Rc, MsgOp::ReadRequest, len, mtu, Psn::MAX).unwrap();
        assert_eq!(s.packets(), 1);
        assert_eq!(s.psn_span(), span);
        assert_eq!(s.next_psn(), Psn::MAX.add(span));
        let v: Vec<_> = s.collect();
        assert_eq!(v[0].opcode, Opcode::RcReadRequest);
        assert_eq!((v[0].len, v[0].pad), (0, 0));
    }
}
