// SPDX-License-Identifier: GPL-2.0

//! ICRC: against an independent oracle (zlib CRC-32 of the masked frame,
//! the masks written out again in tests/common), streaming in any chunking,
//! mask coverage bit by bit, and rxe's FLUSH quirk.

mod common;

use common::*;
use proptest::prelude::*;
use rrxe_proto::icrc::{masked_headers, packet_icrc, verify_packet, LRH_SEED};
use rrxe_proto::opcode::BTH_LEN;
use rrxe_proto::{Crc32, Icrc, IcrcFlavor, IpUdp, Opcode, Psn, TableCrc32, TxSpec};

fn split(frame: &[u8]) -> (IpUdp<'_>, &[u8]) {
    IpUdp::split_frame(frame).unwrap()
}

#[test]
fn seed_is_crc_of_eight_ones() {
    assert_eq!(TableCrc32.update(!0, &[0xff; 8]), LRH_SEED);
    assert_eq!(!crc32fast::hash(&[0xff; 8]), LRH_SEED);
}

#[test]
fn masked_header_bytes_v4_v6() {
    let spec = TxSpec::new(Opcode::RcSendOnly, 0x11, Psn::new(1), 0);
    for net in [v4(), v6()] {
        let mut f = make_frame(&spec, &[], &net, IcrcFlavor::Iba);
        let b = bth_offset(&f);
        f[b + 4] = 0x12; // something in resv8a
        let (n, p) = split(&f);
        let mut out = [0u8; 60];
        let len = masked_headers(&n, p[..BTH_LEN].try_into().unwrap(), &mut out);
        assert_eq!(len, b + BTH_LEN);
        let mut want = f[..b + BTH_LEN].to_vec();
        for (i, m) in masked_bits(&f) {
            want[i] |= m;
        }
        assert_eq!(&out[..len], &want[..]);
        // Spot-check by hand: the v6 first word becomes 6fffffff, v4 TOS/TTL.
        if f[0] >> 4 == 6 {
            assert_eq!(&out[..4], &[0x6f, 0xff, 0xff, 0xff]);
            assert_eq!(out[7], 0xff);
        } else {
            assert_eq!((out[1], out[8], out[10], out[11]), (0xff, 0xff, 0xff, 0xff));
            assert_eq!(out[9], 17);
        }
        assert_eq!(out[b + 4], 0xff);
    }
}

#[test]
fn every_covered_bit_matters_and_no_masked_bit_does() {
    let payload: Vec<u8> = (0..37u8).collect();
    let mut spec = TxSpec::new(
        Opcode::RcWriteOnlyWithImm,
        0x123,
        Psn::new(0xfffffe),
        payload.len(),
    );
    spec.ext = ext_for(spec.opcode, 0x0123_4567_89ab_cdef);
    for net in [v4(), v6()] {
        let f = make_frame(&spec, &payload, &net, IcrcFlavor::Rxe);
        let (n, p) = split(&f);
        assert!(verify_packet(&TableCrc32, &n, p, IcrcFlavor::Rxe));
        let masks = masked_bits(&f);
        let good = packet_icrc(&TableCrc32, &n, p, IcrcFlavor::Rxe).unwrap();
        let icrc_at = f.len() - 4;
        for i in 0..icrc_at {
            for bit in 0..8 {
                let m = 1u8 << bit;
                let mut g = f.clone();
                g[i] ^= m;
                // The same byte ranges as the good frame (a flipped length
                // field must not move them).
                let ip_len = bth_offset(&f) - 8;
                let Ok(ipudp) = IpUdp::new(&g[..ip_len], &g[ip_len..ip_len + 8]) else {
                    // Refused outright (IP version or IHL changed): fine
                    // for a covered bit, never for a masked one.
                    assert!(
                        !is_masked(&masks, i, m),
                        "masked byte {i} bit {bit} refused"
                    );
                    continue;
                };
                let v = packet_icrc(&TableCrc32, &ipudp, &g[ip_len + 8..], IcrcFlavor::Rxe);
                if is_masked(&masks, i, m) {
                    assert_eq!(v, Some(good), "masked byte {i} bit {bit} changed the ICRC");
                } else {
                    assert_ne!(
                        v,
                        Some(good),
                        "covered byte {i} bit {bit} left the ICRC unchanged"
                    );
                }
            }
        }
        // The trailer itself.
        for i in icrc_at..f.len() {
            let mut g = f.clone();
            g[i] ^= 0x10;
            let (n2, p2) = split(&g);
            assert!(!verify_packet(&TableCrc32, &n2, p2, IcrcFlavor::Rxe));
        }
    }
}

#[test]
fn flush_quirk() {
    let mut spec = TxSpec::new(Opcode::RcFlush, 0x77, Psn::new(3), 0);
    spec.ext = ext_for(spec.opcode, 42);
    for net in [v4(), v6()] {
        let iba = make_frame(&spec, &[], &net, IcrcFlavor::Iba);
        let rxe = make_frame(&spec, &[], &net, IcrcFlavor::Rxe);
        assert_eq!(iba[..iba.len() - 4], rxe[..rxe.len() - 4]);
        assert_ne!(iba[iba.len() - 4..], rxe[rxe.len() - 4..]);
        assert_eq!(iba[iba.len() - 4..], oracle_icrc(&iba, None));
        assert_eq!(
            rxe[rxe.len() - 4..],
            oracle_icrc(&rxe, Some(Opcode::RcFlush.header_len()))
        );
        let (n, p) = split(&rxe);
        assert!(verify_packet(&TableCrc32, &n, p, IcrcFlavor::Rxe));
        assert!(!verify_packet(&TableCrc32, &n, p, IcrcFlavor::Iba));
    }
    // Only the three opcodes without a C payload offset differ.
    for &op in Opcode::ALL {
        assert_eq!(
            IcrcFlavor::Rxe.repeats_headers(op),
            matches!(op, Opcode::RcFlush | Opcode::RdAck | Opcode::RdAtomicAck)
        );
        assert!(!IcrcFlavor::Iba.repeats_headers(op));
    }
}

#[test]
fn state_resume_and_zeros() {
    let payload = vec![0xabu8; 4000];
    let spec = TxSpec::new(Opcode::UcSendOnly, 9, Psn::ZERO, payload.len());
    let f = make_frame(&spec, &payload, &v4(), IcrcFlavor::Iba);
    let (n, p) = split(&f);
    let mut a = Icrc::new(&TableCrc32, &n, p[..12].try_into().unwrap());
    a.update(&p[12..100]);
    // The caller runs its own CRC-32 over a chunk, then resumes.
    let mid = crc32fast_like(a.state(), &p[100..3000]);
    let mut b = Icrc::resume(&TableCrc32, mid);
    b.update(&p[3000..p.len() - 4]);
    assert!(b.matches(&p[p.len() - 4..]));
    let mut z1 = Icrc::resume(&TableCrc32, 5);
    z1.update(&[0; 130]);
    let mut z2 = Icrc::resume(&TableCrc32, 5);
    z2.update_zeros(130);
    assert_eq!(z1.state(), z2.state());
    assert_eq!(z1.value(), !z1.state());
    assert_eq!(z1.trailer(), z1.value().to_le_bytes());
}

/// A CRC step that counts the bytes it is fed, and says whether it
/// computes anything.
struct Counting {
    computes: bool,
    fed: std::cell::Cell<usize>,
}

impl Crc32 for Counting {
    fn update(&self, crc: u32, data: &[u8]) -> u32 {
        self.fed.set(self.fed.get() + data.len());
        crc
    }

    fn computes(&self) -> bool {
        self.computes
    }
}

#[test]
fn a_step_that_computes_nothing_gets_no_headers() {
    let spec = TxSpec::new(Opcode::RcSendOnly, 9, Psn::ZERO, 64);
    let f = make_frame(&spec, &[7u8; 64], &v4(), IcrcFlavor::Rxe);
    let (n, p) = split(&f);
    let bth: &[u8; BTH_LEN] = p[..12].try_into().unwrap();
    // A trusting receive path: no masked headers are built or fed.
    let none = Counting {
        computes: false,
        fed: 0.into(),
    };
    let i = Icrc::new(&none, &n, bth);
    assert_eq!(none.fed.get(), 0);
    assert_eq!(i.state(), LRH_SEED);
    // Through a reference too (the kernel passes `&KernelCrc`-like steps).
    let by_ref = &none;
    let _ = Icrc::new(&by_ref, &n, bth);
    assert_eq!(none.fed.get(), 0);
    // A computing step is fed the IPv4 pseudo-header, UDP and BTH: 40 bytes.
    let some = Counting {
        computes: true,
        fed: 0.into(),
    };
    let _ = Icrc::new(&some, &n, bth);
    assert_eq!(some.fed.get(), 40);
}

/// A CRC step without the crate: bitwise reflected CRC-32.
fn crc32fast_like(mut crc: u32, data: &[u8]) -> u32 {
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    crc
}

#[test]
fn short_inputs_are_refused_not_panicking() {
    let spec = TxSpec::new(Opcode::RcSendOnly, 1, Psn::ZERO, 0);
    let f = make_frame(&spec, &[], &v4(), IcrcFlavor::Iba);
    let (n, p) = split(&f);
    for len in 0..p.len() {
        let short = &p[..len];
        if len < 16 {
            assert_eq!(packet_icrc(&TableCrc32, &n, short, IcrcFlavor::Rxe), None);
            assert!(!verify_packet(&TableCrc32, &n, short, IcrcFlavor::Rxe));
        }
    }
    let mut buf = [0u8; 10];
    assert!(!rrxe_proto::icrc::fill_packet(
        &TableCrc32,
        &n,
        &mut buf,
        IcrcFlavor::Rxe
    ));
    assert_eq!(buf, [0; 10]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn matches_oracle_in_any_chunking(
        net in any_net(),
        payload in proptest::collection::vec(any::<u8>(), 0..3000),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..6),
        seed in any::<u64>(),
        resv in any::<u8>(),
        udp_csum in any::<u16>(),
    ) {
        let mut spec = TxSpec::new(Opcode::RcSendOnlyWithImm, 0x42, Psn::new(seed as u32), payload.len());
        spec.ext = ext_for(spec.opcode, seed);
        let mut f = make_frame(&spec, &payload, &net, IcrcFlavor::Rxe);
        prop_assert_eq!(&f[f.len() - 4..], &oracle_icrc(&f, None)[..]);
        // Masked fields may hold anything: FECN/BECN/resv6a, UDP checksum,
        // and (through the strategy) TOS/TTL/TC/flow label/hop limit.
        let b = bth_offset(&f);
        f[b + 4] = resv;
        f[b - 2..b].copy_from_slice(&udp_csum.to_be_bytes());
        let (n, p) = split(&f);
        prop_assert!(verify_packet(&TableCrc32, &n, p, IcrcFlavor::Rxe));
        // Stream BTH.. in arbitrary chunks.
        let body = &p[12..p.len() - 4];
        let mut points: Vec<usize> = cuts.iter().map(|i| i.index(body.len() + 1)).collect();
        points.sort_unstable();
        let mut icrc = Icrc::new(&TableCrc32, &n, p[..12].try_into().unwrap());
        let mut at = 0;
        for c in points.into_iter().chain([body.len()]) {
            icrc.update(&body[at..c]);
            at = c;
        }
        prop_assert!(icrc.matches(&p[p.len() - 4..]));
    }
}
