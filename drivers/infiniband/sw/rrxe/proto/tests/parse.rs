// SPDX-License-Identifier: GPL-2.0

//! Parse and validate: build→parse round trips for every opcode and size
//! (exhaustive over the boundaries, and property-based), the non-contiguous
//! path against the contiguous one, and every error the validator has.

mod common;

use common::*;
use proptest::prelude::*;
use rrxe_proto::icrc::fill_packet;
use rrxe_proto::net::NetError;
use rrxe_proto::opcode::{PayloadRule, Position};
use rrxe_proto::parse::{parse, parse_frame, parse_headers, Found, Headers};
use rrxe_proto::{
    Hdr, IcrcFlavor, IpUdp, Limits, Mtu, Opcode, ParseError, Psn, ReservedPolicy, TableCrc32,
    TxSpec,
};

const MTUS: [Mtu; 5] = [
    Mtu::MTU_256,
    Mtu::MTU_512,
    Mtu::MTU_1024,
    Mtu::MTU_2048,
    Mtu::MTU_4096,
];

fn limits(mtu: Mtu, icrc: IcrcFlavor) -> Limits {
    Limits {
        mtu,
        icrc,
        reserved: ReservedPolicy::Ignore,
    }
}

/// Builds, parses, and checks every field that went in came out.
fn round_trip(spec: &TxSpec, payload: &[u8], net: &NetKind, mtu: Mtu, flavor: IcrcFlavor) {
    let f = make_frame(spec, payload, net, flavor);
    let op = spec.opcode;
    for reserved in [ReservedPolicy::Ignore, ReservedPolicy::Reject] {
        let lim = Limits {
            mtu,
            icrc: flavor,
            reserved,
        };
        let fr = parse_frame(&f, &lim, &TableCrc32)
            .unwrap_or_else(|e| panic!("{} len {} mtu {:?}: {e:?}", op.name(), payload.len(), mtu));
        let p = fr.packet;
        let h = p.headers();
        // What the checks found, through its word, and the packet's
        // first bytes give the same headers: from the headers alone, or
        // any longer prefix (a looped-back packet's payload in page
        // fragments); a prefix shorter than the headers gives nothing.
        let udp_payload = &f[bth_offset(&f)..];
        let found = Found::from_word(h.found().to_word());
        assert_eq!(found, Some(h.found()), "{} found's word", op.name());
        let found = h.found();
        assert_eq!(found.opcode(), op);
        let hlen = op.header_len();
        for k in [hlen, hlen + 1, udp_payload.len() / 2, udp_payload.len()] {
            if let Some(prefix) = udp_payload.get(..k.max(hlen)) {
                assert_eq!(
                    Headers::at(prefix, found).as_ref(),
                    Some(h),
                    "{} seen again from {} bytes",
                    op.name(),
                    prefix.len()
                );
            }
        }
        assert_eq!(
            Headers::at(&udp_payload[..hlen - 1], found),
            None,
            "{} seen again short of its headers",
            op.name()
        );
        assert_eq!(p.opcode(), op);
        assert_eq!(p.payload(), payload);
        assert_eq!(p.psn(), spec.psn);
        assert_eq!(p.dest_qpn(), spec.dest_qpn & 0xff_ffff);
        assert_eq!(h.se(), spec.se);
        assert_eq!(h.bth().mig(), spec.mig);
        assert_eq!(h.pkey(), spec.pkey);
        assert_eq!(h.ack_req(), spec.ack_req);
        assert_eq!(h.bth().tver(), 0);
        assert_eq!(usize::from(h.pad()), (4 - payload.len() % 4) % 4);
        assert_eq!(h.payload_offset(), op.header_len());
        assert_eq!(h.icrc_offset(), f.len() - bth_offset(&f) - 4);
        assert_eq!(h.udp_payload_len(), f.len() - bth_offset(&f));
        assert_eq!(h.position(), op.position());
        let e = &spec.ext;
        assert_eq!(h.rdeth().map(|v| v.een()), e.rdeth);
        assert_eq!(
            h.deth().map(|v| (v.qkey(), v.src_qpn())),
            e.deth.map(|d| (d.qkey, d.src_qpn))
        );
        assert_eq!(
            h.feth().map(|v| (v.plt(), v.sel())),
            e.feth.map(|d| (d.plt, d.sel))
        );
        assert_eq!(
            h.reth().map(|v| (v.va(), v.rkey(), v.dma_len())),
            e.reth.map(|d| (d.va, d.rkey, d.len))
        );
        assert_eq!(
            h.atomic_eth()
                .map(|v| (v.va(), v.rkey(), v.swap_add(), v.comp())),
            e.atomic_eth.map(|d| (d.va, d.rkey, d.swap_add, d.comp))
        );
        assert_eq!(
            h.aeth().map(|v| (v.syndrome(), v.msn())),
            e.aeth.map(|d| (d.syndrome, d.msn))
        );
        assert_eq!(h.atomic_ack_eth().map(|v| v.orig()), e.atomic_ack);
        assert_eq!(h.immdt().map(|v| v.imm_bytes()), e.imm);
        assert_eq!(h.ieth().map(|v| v.rkey()), e.ieth);
        assert_eq!(
            p.atomic_write_value().map(|v| v.value_bytes().to_vec()),
            op.is_atomic_write().then(|| payload.to_vec())
        );
        // The ICRC is the independent oracle's.
        let repeat =
            (flavor == IcrcFlavor::Rxe && op.rxe_icrc_repeats_headers()).then(|| op.header_len());
        assert_eq!(f[f.len() - 4..], oracle_icrc(&f, repeat));
    }
}

/// The payload lengths an opcode accepts at `mtu`, at the boundaries.
fn valid_lengths(op: Opcode, mtu: usize) -> Vec<usize> {
    match op.payload_rule() {
        PayloadRule::None => vec![0],
        PayloadRule::Exactly(n) => vec![n],
        PayloadRule::FullMtu => vec![mtu],
        PayloadRule::OneToMtu => vec![1, 2, 3, 4, 5, mtu - 1, mtu],
        PayloadRule::UpToMtu => vec![0, 1, 2, 3, 4, 7, mtu - 3, mtu],
    }
}

#[test]
fn every_opcode_every_boundary_round_trips() {
    let mut n = 0;
    for &op in Opcode::ALL {
        for mtu in MTUS {
            for len in valid_lengths(op, mtu.bytes()) {
                for (i, net) in [v4(), v6()].iter().enumerate() {
                    for flavor in [IcrcFlavor::Iba, IcrcFlavor::Rxe] {
                        let seed = (op.as_u8() as u64) << 32 | (len as u64) << 4 | i as u64;
                        let mut spec =
                            TxSpec::new(op, 0x12_3456, Psn::new(0xff_fff0 + len as u32), len);
                        spec.ext = ext_for(op, seed);
                        spec.se = len % 2 == 1;
                        round_trip(&spec, &bytes(len, seed), net, mtu, flavor);
                        n += 1;
                    }
                }
            }
        }
    }
    assert!(n > 60 * 5 * 2 * 2);
}

/// Builds an `op` packet with `len` payload bytes (the builder does not know
/// the MTU) and returns what the parser says at `mtu`.
fn parse_len(op: Opcode, len: usize, mtu: Mtu) -> Result<(), ParseError> {
    let mut spec = TxSpec::new(op, 5, Psn::new(1), len);
    spec.ext = ext_for(op, 3);
    let f = make_frame(&spec, &bytes(len, 9), &v4(), IcrcFlavor::Rxe);
    parse_frame(&f, &limits(mtu, IcrcFlavor::Rxe), &TableCrc32).map(|_| ())
}

#[test]
fn payload_rules_against_mtu() {
    for &op in Opcode::ALL {
        for mtu in MTUS {
            let m = mtu.bytes();
            match op.payload_rule() {
                PayloadRule::FullMtu => {
                    assert_eq!(
                        parse_len(op, m - 4, mtu),
                        Err(ParseError::NotFullMtu),
                        "{}",
                        op.name()
                    );
                    assert_eq!(parse_len(op, m - 1, mtu), Err(ParseError::NotFullMtu));
                    assert_eq!(parse_len(op, m + 4, mtu), Err(ParseError::NotFullMtu));
                    assert_eq!(parse_len(op, 0, mtu), Err(ParseError::NotFullMtu));
                }
                PayloadRule::OneToMtu => {
                    assert_eq!(
                        parse_len(op, 0, mtu),
                        Err(ParseError::EmptyLast),
                        "{}",
                        op.name()
                    );
                    assert_eq!(parse_len(op, m + 1, mtu), Err(ParseError::PayloadTooLong));
                }
                PayloadRule::UpToMtu => {
                    assert_eq!(
                        parse_len(op, m + 1, mtu),
                        Err(ParseError::PayloadTooLong),
                        "{}",
                        op.name()
                    );
                    assert_eq!(parse_len(op, m + 4, mtu), Err(ParseError::PayloadTooLong));
                }
                PayloadRule::None | PayloadRule::Exactly(_) => {}
            }
        }
    }
}

/// The frame of a valid `op` packet, its UDP payload offset, and the net.
fn sample(op: Opcode, len: usize) -> Vec<u8> {
    let mut spec = TxSpec::new(op, 0x99, Psn::new(77), len);
    spec.ext = ext_for(op, 1);
    make_frame(&spec, &bytes(len, 2), &v4(), IcrcFlavor::Rxe)
}

/// Parses a modified UDP payload `p` under the headers of frame `f`.
fn parse_udp(f: &[u8], p: &[u8], mtu: Mtu, reserved: ReservedPolicy) -> Result<(), ParseError> {
    let b = bth_offset(f);
    let net = IpUdp::new(&f[..b - 8], &f[b - 8..b]).unwrap();
    parse(
        &net,
        p,
        &Limits {
            mtu,
            icrc: IcrcFlavor::Rxe,
            reserved,
        },
        &TableCrc32,
    )
    .map(|_| ())
}

/// Refreshes the ICRC of the UDP payload `p` under the headers of `f`.
fn refill(f: &[u8], p: &mut [u8]) {
    let b = bth_offset(f);
    let net = IpUdp::new(&f[..b - 8], &f[b - 8..b]).unwrap();
    assert!(fill_packet(&TableCrc32, &net, p, IcrcFlavor::Rxe));
}

#[test]
fn header_errors() {
    let f = sample(Opcode::RcSendOnly, 8);
    let b = bth_offset(&f);
    let p = f[b..].to_vec();
    let ok = |q: &[u8]| parse_udp(&f, q, Mtu::MTU_1024, ReservedPolicy::Ignore);
    assert_eq!(ok(&p), Ok(()));
    for len in 0..12 {
        assert_eq!(ok(&p[..len]), Err(ParseError::NoBth { len }));
    }
    for bad in [0x15u8, 0x5c, 0x81, 0xff] {
        let mut q = p.clone();
        q[0] = bad;
        assert_eq!(ok(&q), Err(ParseError::UnknownOpcode(bad)));
    }
    assert_eq!(
        ok(&p[..15]),
        Err(ParseError::Truncated { need: 16, len: 15 })
    );
    let mut q = sample(Opcode::RcCompareSwap, 0)[b..].to_vec();
    q.truncate(40 + 3);
    assert_eq!(ok(&q), Err(ParseError::Truncated { need: 44, len: 43 }));

    let mut q = p.clone();
    q[1] |= 0x01;
    assert_eq!(ok(&q), Err(ParseError::BadTver(1)));
    let mut q = p.clone();
    q[5..8].fill(0);
    refill(&f, &mut q);
    assert_eq!(ok(&q), Err(ParseError::Qp0));

    // Reserved bits: ignored by default (resv6a is even masked from the
    // ICRC), refused on request.
    let mut q = p.clone();
    q[4] |= 0x01; // resv6a
    assert_eq!(ok(&q), Ok(()));
    assert_eq!(
        parse_udp(&f, &q, Mtu::MTU_1024, ReservedPolicy::Reject),
        Err(ParseError::ReservedBits)
    );
    let mut q = p.clone();
    q[8] |= 0x40; // resv7
    refill(&f, &mut q);
    assert_eq!(ok(&q), Ok(()));
    assert_eq!(
        parse_udp(&f, &q, Mtu::MTU_1024, ReservedPolicy::Reject),
        Err(ParseError::ReservedBits)
    );
    let mut q = p.clone();
    q[4] |= 0xc0; // FECN and BECN are not reserved
    assert_eq!(
        parse_udp(&f, &q, Mtu::MTU_1024, ReservedPolicy::Reject),
        Ok(())
    );
    let ud = sample(Opcode::UdSendOnly, 4);
    let mut q = ud[b..].to_vec();
    q[12 + 4] = 1; // DETH reserved byte
    refill(&ud, &mut q);
    assert_eq!(
        parse_udp(&ud, &q, Mtu::MTU_1024, ReservedPolicy::Ignore),
        Ok(())
    );
    assert_eq!(
        parse_udp(&ud, &q, Mtu::MTU_1024, ReservedPolicy::Reject),
        Err(ParseError::ReservedBits)
    );
    let fl = sample(Opcode::RcFlush, 0);
    let mut q = fl[b..].to_vec();
    q[12] = 0x80; // FETH reserved bits
    refill(&fl, &mut q);
    assert_eq!(
        parse_udp(&fl, &q, Mtu::MTU_1024, ReservedPolicy::Ignore),
        Ok(())
    );
    assert_eq!(
        parse_udp(&fl, &q, Mtu::MTU_1024, ReservedPolicy::Reject),
        Err(ParseError::ReservedBits)
    );
    let rd = sample(Opcode::RdSendOnly, 0);
    let mut q = rd[b..].to_vec();
    q[12] = 1; // RDETH reserved byte
    refill(&rd, &mut q);
    assert_eq!(
        parse_udp(&rd, &q, Mtu::MTU_1024, ReservedPolicy::Reject),
        Err(ParseError::ReservedBits)
    );
}

#[test]
fn length_errors() {
    let b = bth_offset(&sample(Opcode::RcSendOnly, 0));
    // Misaligned: one byte more between headers and ICRC.
    let f = sample(Opcode::RcSendOnly, 8);
    let mut q = f[b..].to_vec();
    q.insert(20, 0);
    refill(&f, &mut q);
    assert_eq!(
        parse_udp(&f, &q, Mtu::MTU_1024, ReservedPolicy::Ignore),
        Err(ParseError::Misaligned)
    );
    // Pad count larger than the region: an empty SEND ONLY with pad 3.
    let f = sample(Opcode::RcSendOnly, 0);
    let mut q = f[b..].to_vec();
    q[1] |= 0x30;
    refill(&f, &mut q);
    assert_eq!(
        parse_udp(&f, &q, Mtu::MTU_1024, ReservedPolicy::Ignore),
        Err(ParseError::PadTooLarge)
    );
    // Payload after an ACK, a READ request, an atomic, a FLUSH.
    for op in [
        Opcode::RcAck,
        Opcode::RcReadRequest,
        Opcode::RcFetchAdd,
        Opcode::RcFlush,
        Opcode::RcAtomicAck,
    ] {
        let f = sample(op, 0);
        let mut q = f[b..].to_vec();
        let at = q.len() - 4;
        q.splice(at..at, [0u8; 4]);
        refill(&f, &mut q);
        assert_eq!(
            parse_udp(&f, &q, Mtu::MTU_1024, ReservedPolicy::Ignore),
            Err(ParseError::UnexpectedPayload),
            "{}",
            op.name()
        );
    }
    // ATOMIC WRITE: 8 bytes and no pad.
    let f = sample(Opcode::RcAtomicWrite, 8);
    let mut q = f[b..].to_vec();
    q[1] |= 0x10; // pad 1: 7 payload bytes
    refill(&f, &mut q);
    assert_eq!(
        parse_udp(&f, &q, Mtu::MTU_1024, ReservedPolicy::Ignore),
        Err(ParseError::BadAtomicWriteLen)
    );
    let mut q = f[b..].to_vec();
    let at = q.len() - 4;
    q.splice(at..at, [0u8; 4]);
    refill(&f, &mut q);
    assert_eq!(
        parse_udp(&f, &q, Mtu::MTU_1024, ReservedPolicy::Ignore),
        Err(ParseError::BadAtomicWriteLen)
    );
    // A corrupted ICRC.
    let f = sample(Opcode::RcSendOnly, 8);
    let mut q = f[b..].to_vec();
    *q.last_mut().unwrap() ^= 1;
    assert_eq!(
        parse_udp(&f, &q, Mtu::MTU_1024, ReservedPolicy::Ignore),
        Err(ParseError::BadIcrc)
    );
}

#[test]
fn frame_errors() {
    let f = sample(Opcode::RcSendOnly, 8);
    let lim = limits(Mtu::MTU_1024, IcrcFlavor::Rxe);
    let pf = |g: &[u8]| parse_frame(g, &lim, &TableCrc32).map(|_| ());
    assert_eq!(pf(&f), Ok(()));
    // Ethernet padding after the datagram is ignored.
    let mut g = f.clone();
    g.extend([0u8; 6]);
    assert_eq!(pf(&g), Ok(()));
    assert_eq!(pf(&[]), Err(ParseError::Net(NetError::BadVersion(0))));
    assert_eq!(pf(&f[..19]), Err(ParseError::Net(NetError::TooShort)));
    let mut g = f.clone();
    g[0] = 0x55;
    assert_eq!(pf(&g), Err(ParseError::Net(NetError::BadVersion(5))));
    let mut g = f.clone();
    g[0] = 0x46;
    assert_eq!(pf(&g), Err(ParseError::Net(NetError::Ipv4Options)));
    let mut g = f.clone();
    g[6] |= 0x20;
    assert_eq!(pf(&g), Err(ParseError::Net(NetError::Fragmented)));
    let mut g = f.clone();
    g[7] = 1;
    assert_eq!(pf(&g), Err(ParseError::Net(NetError::Fragmented)));
    let mut g = f.clone();
    g[9] = 6;
    assert_eq!(pf(&g), Err(ParseError::Net(NetError::NotUdp(6))));
    assert_eq!(
        pf(&f[..f.len() - 1]),
        Err(ParseError::Net(NetError::BadLength))
    );
    let mut g = f.clone();
    g[20 + 4..20 + 6].copy_from_slice(&7u16.to_be_bytes());
    assert_eq!(pf(&g), Err(ParseError::Net(NetError::BadLength)));
    let mut g = f.clone();
    g[20 + 2..20 + 4].copy_from_slice(&4792u16.to_be_bytes());
    assert_eq!(pf(&g), Err(ParseError::Net(NetError::WrongPort(4792))));
    // A UDP length shorter than the IP datagram: the packet is what UDP says.
    let mut g = f.clone();
    let ul = u16::from_be_bytes([g[24], g[25]]) - 4;
    g[24..26].copy_from_slice(&ul.to_be_bytes());
    assert_eq!(pf(&g), Err(ParseError::BadIcrc));
    // IPv6 with a next header other than UDP, or a short payload length.
    let s = TxSpec::new(Opcode::RcSendOnly, 3, Psn::ZERO, 0);
    let f6 = make_frame(&s, &[], &v6(), IcrcFlavor::Rxe);
    assert_eq!(pf(&f6), Ok(()));
    let mut g = f6.clone();
    g[6] = 0;
    assert_eq!(pf(&g), Err(ParseError::Net(NetError::NotUdp(0))));
    let mut g = f6.clone();
    g[4..6].copy_from_slice(&100u16.to_be_bytes());
    assert_eq!(pf(&g), Err(ParseError::Net(NetError::BadLength)));
}

#[test]
fn prefix_errors() {
    let f = sample(Opcode::RcWriteFirst, 1024);
    let b = bth_offset(&f);
    let p = &f[b..];
    let net = IpUdp::new(&f[..20], &f[20..28]).unwrap();
    let lim = limits(Mtu::MTU_1024, IcrcFlavor::Rxe);
    for n in 0..28 {
        let r = parse_headers(&net, &p[..n], p.len(), &lim, &TableCrc32).map(|_| ());
        let need = if n == 0 { 12 } else { 28 };
        assert_eq!(r, Err(ParseError::PrefixTooShort { need }), "{n}");
    }
    let (h, _) = parse_headers(&net, &p[..28], p.len(), &lim, &TableCrc32).unwrap();
    assert_eq!(h.header_bytes().len(), 28);
    assert_eq!(h.icrc_remaining(), 28..28 + 1024);
    // A prefix running past the UDP payload is cut to it: here the payload
    // is said to end 4 bytes early, so the ICRC offset moves with it.
    let f = sample(Opcode::RcSendOnly, 8);
    let p = &f[b..];
    let (h2, _) = parse_headers(&net, p, p.len() - 4, &lim, &TableCrc32).unwrap();
    assert_eq!((h2.icrc_offset(), h2.payload_len()), (p.len() - 8, 4));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_packet_round_trips_and_streams(
        op in prop::sample::select(Opcode::ALL.to_vec()),
        mtu in prop::sample::select(MTUS.to_vec()),
        len_seed in any::<u32>(),
        net in any_net(),
        flavor in prop::sample::select(vec![IcrcFlavor::Iba, IcrcFlavor::Rxe]),
        seed in any::<u64>(),
        se in any::<bool>(),
        mig in any::<bool>(),
        ack in any::<bool>(),
        pkey in any::<u16>(),
        qpn in 1u32..1 << 24,
        psn in any::<u32>(),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..5),
        flip in any::<prop::sample::Index>(),
    ) {
        let m = mtu.bytes();
        let len = match op.payload_rule() {
            PayloadRule::None => 0,
            PayloadRule::Exactly(n) => n,
            PayloadRule::FullMtu => m,
            PayloadRule::OneToMtu => 1 + len_seed as usize % m,
            PayloadRule::UpToMtu => len_seed as usize % (m + 1),
        };
        let mut spec = TxSpec::new(op, qpn, Psn::new(psn), len);
        spec.ext = ext_for(op, seed);
        spec.se = se;
        spec.mig = mig;
        spec.ack_req = ack;
        spec.pkey = pkey;
        let payload = bytes(len, seed);
        round_trip(&spec, &payload, &net, mtu, flavor);

        // Non-contiguous: headers from an exact prefix, payload and pad fed
        // in arbitrary chunks, trailer checked at the end.
        let f = make_frame(&spec, &payload, &net, flavor);
        let (ipudp, p) = IpUdp::split_frame(&f).unwrap();
        let lim = limits(mtu, flavor);
        let hl = op.header_len();
        let (h, mut icrc) = parse_headers(&ipudp, &p[..hl], p.len(), &lim, &TableCrc32).unwrap();
        let whole = parse(&ipudp, p, &lim, &TableCrc32).unwrap();
        prop_assert_eq!(&h, whole.headers());
        let rest = &p[h.icrc_remaining()];
        let mut points: Vec<usize> = cuts.iter().map(|i| i.index(rest.len() + 1)).collect();
        points.sort_unstable();
        let mut at = 0;
        for c in points.into_iter().chain([rest.len()]) {
            icrc.update(&rest[at..c]);
            at = c;
        }
        prop_assert!(h.icrc_matches(&icrc, &p[h.icrc_offset()..]));
        prop_assert_eq!(h.position() == Position::Only, op.is_start() && op.is_end());

        // Any flipped bit outside the masked fields makes the frame fail.
        let mut masks = masked_bits(&f);
        if flavor.repeats_headers(op) {
            // rxe's repeated headers cover the BTH unmasked: its byte 4
            // counts (as in C, where a router setting FECN/BECN there
            // would break the ICRC of a FLUSH).
            let b4 = bth_offset(&f) + 4;
            masks.retain(|&(o, _)| o != b4);
        }
        let i = flip.index(f.len() * 8);
        let (byte, bit) = (i / 8, 1u8 << (i % 8));
        let mut g = f.clone();
        g[byte] ^= bit;
        let r = parse_frame(&g, &lim, &TableCrc32);
        if is_masked(&masks, byte, bit) {
            prop_assert!(r.is_ok(), "masked flip at {} refused: {:?}", byte, r.err());
        } else {
            prop_assert!(r.is_err(), "covered flip at {} bit {} accepted", byte, bit);
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(
        frame in proptest::collection::vec(any::<u8>(), 0..200),
        mtu in prop::sample::select(MTUS.to_vec()),
        prefix in any::<prop::sample::Index>(),
    ) {
        let lim = limits(mtu, IcrcFlavor::Rxe);
        let _ = parse_frame(&frame, &lim, &TableCrc32);
        if frame.len() >= 28 {
            if let Ok(net) = IpUdp::new(&frame[..20], &frame[20..28]) {
                let p = &frame[28..];
                let _ = parse(&net, p, &lim, &TableCrc32);
                let n = prefix.index(p.len() + 1);
                let _ = parse_headers(&net, &p[..n], p.len(), &lim, &TableCrc32);
            }
        }
    }
}

#[test]
fn headers_accessors_for_absent_headers_are_none() {
    let f = sample(Opcode::RcSendMiddle, 1024);
    let p = parse_frame(&f, &limits(Mtu::MTU_1024, IcrcFlavor::Rxe), &TableCrc32)
        .unwrap()
        .packet;
    let h = p.headers();
    assert!(h.reth().is_none() && h.aeth().is_none() && h.deth().is_none() && h.immdt().is_none());
    assert!(h.ieth().is_none() && h.feth().is_none() && h.rdeth().is_none());
    assert!(h.atomic_eth().is_none() && h.atomic_ack_eth().is_none());
    assert!(p.atomic_write_value().is_none());
    for hd in Hdr::ALL {
        assert!(!Opcode::RcSendMiddle.has(hd));
    }
}

/// A word that no accepted packet's `Found` packs to is none; every other
/// word unpacks to the `Found` that packs to it.
#[test]
fn found_words() {
    assert_eq!(Found::from_word(0), None, "a zeroed word");
    let lens = [0u32, 1, 2, 3, 1024, 4095, 4096, 4097, 4099, 0x1fff];
    for valid in [0u32, 1] {
        for reserved in [0u32, 1, 0x80, 0xff] {
            for len in lens {
                for pad in 0..4u32 {
                    for op in 0..=255u32 {
                        let w = valid << 31 | reserved << 23 | len << 10 | pad << 8 | op;
                        let known = Opcode::from_u8(op as u8);
                        let ok = valid == 1 && reserved == 0 && len <= 4096 && known.is_some();
                        let f = Found::from_word(w);
                        assert_eq!(f.is_some(), ok, "{w:#x}");
                        if let Some(f) = f {
                            assert_eq!(f.to_word(), w, "{w:#x} unpacks and packs back");
                            assert_eq!(Some(f.opcode()), known, "{w:#x}");
                        }
                    }
                }
            }
        }
    }
}
