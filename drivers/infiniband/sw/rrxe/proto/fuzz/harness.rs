// SPDX-License-Identifier: GPL-2.0

//! The fuzz harness for parse-and-validate, shared by the cargo-fuzz target
//! `parse` and the corpus regression test (tests/fuzz_corpus.rs).
//!
//! Input: `[control, split, frame...]`.
//! - control bits 0-2: path MTU (value mod 5: 256 ... 4096); bit 3: reject
//!   reserved bits; bit 4: IBA ICRC flavour (else rxe's); bit 5: recompute
//!   the ICRC before parsing (so the fuzzer gets past it); bit 6: build mode
//!   (the rest of the input describes a packet to build, then parse).
//! - split: how many bytes of the UDP payload the linear prefix holds for
//!   the non-contiguous parse.
//! - frame: an IP datagram (IPv4/IPv6 + UDP + BTH..ICRC).
//!
//! Oracles (a violation panics): no panic anywhere; `parse_frame`, `parse`
//! and the non-contiguous `parse_headers` + streamed ICRC agree; an accepted
//! packet obeys the length invariants; rebuilding an accepted packet from
//! its parsed fields gives back the same bytes, except where reserved/ECN
//! bits or pad bytes were not zero; a built packet parses back.

#![allow(dead_code, unreachable_pub)]

use rrxe_proto::build::{
    build, AethFields, AtomicEthFields, DethFields, FethFields, Layout, RethFields,
};
use rrxe_proto::icrc::fill_packet;
use rrxe_proto::net::{write_ipv4_udp, write_ipv6_udp, Ipv4Spec, Ipv6Spec};
use rrxe_proto::opcode::PayloadRule;
use rrxe_proto::parse::{parse, parse_frame, parse_headers};
use rrxe_proto::{
    Ext, Hdr, IcrcFlavor, IpUdp, Limits, Mtu, Opcode, Packet, ParseError, Psn, ReservedPolicy,
    TableCrc32, TxSpec,
};

const MTUS: [Mtu; 5] = [
    Mtu::MTU_256,
    Mtu::MTU_512,
    Mtu::MTU_1024,
    Mtu::MTU_2048,
    Mtu::MTU_4096,
];

/// Runs one fuzz input; returns whether a packet was accepted.
pub fn run(data: &[u8]) -> bool {
    let (ctl, split, rest) = match data {
        [c, s, rest @ ..] => (*c, *s, rest),
        _ => (0, 0, data),
    };
    let lim = Limits {
        mtu: MTUS[usize::from(ctl & 7) % 5],
        reserved: if ctl & 0x08 != 0 {
            ReservedPolicy::Reject
        } else {
            ReservedPolicy::Ignore
        },
        icrc: if ctl & 0x10 != 0 {
            IcrcFlavor::Iba
        } else {
            IcrcFlavor::Rxe
        },
    };
    if ctl & 0x40 != 0 {
        return build_then_parse(rest, &lim);
    }
    let mut frame = rest.to_vec();
    if ctl & 0x20 != 0 {
        fix_icrc(&mut frame, lim.icrc);
    }
    check(&frame, &lim, usize::from(split))
}

fn fix_icrc(buf: &mut [u8], flavor: IcrcFlavor) {
    let Ok((net, p)) = IpUdp::split_frame(buf) else {
        return;
    };
    let ip_len = net.ip_bytes().len();
    let plen = p.len();
    let (hdrs, rest) = buf.split_at_mut(ip_len + 8);
    let net = IpUdp::new(&hdrs[..ip_len], &hdrs[ip_len..]).expect("headers accepted once");
    fill_packet(&TableCrc32, &net, &mut rest[..plen], flavor);
}

fn check(frame: &[u8], lim: &Limits, split: usize) -> bool {
    let r = parse_frame(frame, lim, &TableCrc32);
    let Ok((net, p)) = IpUdp::split_frame(frame) else {
        assert!(r.is_err());
        return false;
    };
    let whole = parse(&net, p, lim, &TableCrc32);
    assert_eq!(r.map(|f| f.packet), whole, "parse_frame and parse disagree");

    // The same through a linear prefix of `split` bytes.
    let n = split.min(p.len());
    let nc = match parse_headers(&net, &p[..n], p.len(), lim, &TableCrc32) {
        Err(ParseError::PrefixTooShort { need }) => {
            assert!(need > n, "asked for {need} with {n} given");
            parse_headers(&net, p, p.len(), lim, &TableCrc32)
        }
        other => other,
    };
    match (nc, whole) {
        (Ok((h, mut icrc)), Ok(pk)) => {
            assert_eq!(&h, pk.headers());
            icrc.update(&p[h.icrc_remaining()]);
            assert!(h.icrc_matches(&icrc, &p[h.icrc_offset()..]));
            invariants(&pk, p.len(), lim);
            rebuild(&pk, &net, p, lim);
            true
        }
        (Ok((h, mut icrc)), Err(e)) => {
            assert_eq!(e, ParseError::BadIcrc);
            icrc.update(&p[h.icrc_remaining()]);
            assert!(!h.icrc_matches(&icrc, &p[h.icrc_offset()..]));
            false
        }
        (Err(e), whole) => {
            assert_eq!(Err(e), whole.map(|_| ()));
            false
        }
    }
}

fn invariants(pk: &Packet<'_>, udp_len: usize, lim: &Limits) {
    let h = pk.headers();
    let op = pk.opcode();
    assert_eq!(h.payload_offset(), op.header_len());
    assert_eq!(h.payload_len(), pk.payload().len());
    assert!(h.pad() < 4);
    assert_eq!(
        h.payload_offset() + h.payload_len() + usize::from(h.pad()) + 4,
        udp_len
    );
    assert_eq!((h.payload_len() + usize::from(h.pad())) % 4, 0);
    let mtu = lim.mtu.bytes();
    match op.payload_rule() {
        PayloadRule::None => assert_eq!(h.payload_len() + usize::from(h.pad()), 0),
        PayloadRule::Exactly(n) => assert_eq!(h.payload_len(), n),
        PayloadRule::FullMtu => assert_eq!(h.payload_len(), mtu),
        PayloadRule::OneToMtu => assert!((1..=mtu).contains(&h.payload_len())),
        PayloadRule::UpToMtu => assert!(h.payload_len() <= mtu),
    }
    assert_ne!(h.dest_qpn(), 0);
    assert_eq!(h.bth().tver(), 0);
    assert_eq!(h.reth().is_some(), op.has(Hdr::Reth));
    assert_eq!(h.aeth().is_some(), op.has(Hdr::Aeth));
    assert_eq!(h.deth().is_some(), op.has(Hdr::Deth));
    assert_eq!(h.immdt().is_some(), op.has(Hdr::ImmDt));
    assert_eq!(h.ieth().is_some(), op.has(Hdr::Ieth));
    assert_eq!(h.atomic_eth().is_some(), op.has(Hdr::AtomicEth));
    assert_eq!(h.atomic_ack_eth().is_some(), op.has(Hdr::AtomicAckEth));
    assert_eq!(h.feth().is_some(), op.has(Hdr::Feth));
    assert_eq!(h.rdeth().is_some(), op.has(Hdr::Rdeth));
}

fn spec_of(pk: &Packet<'_>) -> TxSpec {
    let h = pk.headers();
    let mut spec = TxSpec::new(pk.opcode(), h.dest_qpn(), h.psn(), h.payload_len());
    spec.se = h.se();
    spec.mig = h.bth().mig();
    spec.pkey = h.pkey();
    spec.ack_req = h.ack_req();
    spec.ext = Ext {
        rdeth: h.rdeth().map(|r| r.een()),
        deth: h.deth().map(|d| DethFields {
            qkey: d.qkey(),
            src_qpn: d.src_qpn(),
        }),
        feth: h.feth().map(|f| FethFields {
            plt: f.plt(),
            sel: f.sel(),
        }),
        reth: h.reth().map(|r| RethFields {
            va: r.va(),
            rkey: r.rkey(),
            len: r.dma_len(),
        }),
        atomic_eth: h.atomic_eth().map(|a| AtomicEthFields {
            va: a.va(),
            rkey: a.rkey(),
            swap_add: a.swap_add(),
            comp: a.comp(),
        }),
        aeth: h.aeth().map(|a| AethFields {
            syndrome: a.syndrome(),
            msn: a.msn(),
        }),
        atomic_ack: h.atomic_ack_eth().map(|a| a.orig()),
        imm: h.immdt().map(|i| i.imm_bytes()),
        ieth: h.ieth().map(|i| i.rkey()),
    };
    spec
}

fn rebuild(pk: &Packet<'_>, net: &IpUdp<'_>, p: &[u8], lim: &Limits) {
    let spec = spec_of(pk);
    let mut out = vec![0u8; p.len()];
    let n = build(&mut out, &spec, pk.payload(), net, &TableCrc32, lim.icrc).expect("rebuild");
    assert_eq!(n, p.len());
    if out != p {
        let h = pk.headers();
        let b = h.bth();
        let pad_start = h.payload_offset() + h.payload_len();
        let dirty = b.fecn()
            || b.becn()
            || b.resv6a() != 0
            || b.resv7() != 0
            || h.rdeth().is_some_and(|r| r.resv8() != 0)
            || h.deth().is_some_and(|d| d.resv8() != 0)
            || h.feth().is_some_and(|f| f.resv() != 0)
            || p[pad_start..h.icrc_offset()].iter().any(|&x| x != 0);
        assert!(dirty, "rebuilt packet differs without a reason");
    }
}

/// Build mode: `[opcode, len lo, len hi, v6?, fields...]` → build → parse.
fn build_then_parse(d: &[u8], lim: &Limits) -> bool {
    let byte = |i: usize| d.get(i).copied().unwrap_or(0);
    let word = |i: usize| u64::from_le_bytes(core::array::from_fn(|k| byte(i + k)));
    let op =
        Opcode::from_u8(byte(0)).unwrap_or(Opcode::ALL[usize::from(byte(0)) % Opcode::ALL.len()]);
    let mtu = lim.mtu.bytes();
    let raw = usize::from(u16::from_le_bytes([byte(1), byte(2)]));
    let len = match op.payload_rule() {
        PayloadRule::None => 0,
        PayloadRule::Exactly(n) => n,
        PayloadRule::FullMtu => mtu,
        PayloadRule::OneToMtu => 1 + raw % mtu,
        PayloadRule::UpToMtu => raw % (mtu + 1),
    };
    let w = word(4);
    let mut spec = TxSpec::new(
        op,
        (w as u32 & 0xff_ffff).max(1),
        Psn::new((w >> 24) as u32),
        len,
    );
    spec.se = w & 1 << 56 != 0;
    spec.mig = w & 1 << 57 != 0;
    spec.ack_req = w & 1 << 58 != 0;
    spec.pkey = (w >> 40) as u16;
    let f = word(12);
    let g = word(20);
    let mut e = Ext::default();
    for h in Hdr::ALL.into_iter().filter(|&h| op.has(h)) {
        match h {
            Hdr::Rdeth => e.rdeth = Some(f as u32 & 0xff_ffff),
            Hdr::Deth => {
                e.deth = Some(DethFields {
                    qkey: f as u32,
                    src_qpn: (g as u32) & 0xff_ffff,
                })
            }
            Hdr::Feth => {
                e.feth = Some(FethFields {
                    plt: f as u8 & 0xf,
                    sel: (g as u8) & 3,
                })
            }
            Hdr::Reth => {
                e.reth = Some(RethFields {
                    va: f,
                    rkey: g as u32,
                    len: (g >> 32) as u32,
                })
            }
            Hdr::AtomicEth => {
                e.atomic_eth = Some(AtomicEthFields {
                    va: f,
                    rkey: g as u32,
                    swap_add: g,
                    comp: !f,
                })
            }
            Hdr::Aeth => {
                e.aeth = Some(AethFields {
                    syndrome: rrxe_proto::Syndrome::decode(f as u8),
                    msn: rrxe_proto::Msn::new(g as u32),
                })
            }
            Hdr::AtomicAckEth => e.atomic_ack = Some(g),
            Hdr::ImmDt => e.imm = Some((f as u32).to_be_bytes()),
            Hdr::Ieth => e.ieth = Some((g >> 16) as u32),
        }
    }
    spec.ext = e;
    let payload: Vec<u8> = (0..len).map(|i| byte(28 + i % 64) ^ i as u8).collect();
    let layout = Layout::new(op, len).expect("layout of a valid length");
    let v6 = byte(3) & 1 != 0;
    let hdrs = if v6 { 48 } else { 28 };
    let mut frame = vec![0u8; hdrs + layout.udp_payload_len()];
    if v6 {
        let s = Ipv6Spec {
            src: [byte(5); 16],
            dst: [byte(6); 16],
            traffic_class: byte(7),
            flow_label: f as u32 & 0xf_ffff,
            hop_limit: byte(8),
            sport: g as u16,
        };
        write_ipv6_udp(&mut frame, &s, layout.udp_payload_len()).expect("v6 headers");
    } else {
        let s = Ipv4Spec {
            src: [byte(5); 4],
            dst: [byte(6); 4],
            tos: byte(7),
            ttl: byte(8),
            id: f as u16,
            sport: g as u16,
        };
        write_ipv4_udp(&mut frame, &s, layout.udp_payload_len()).expect("v4 headers");
    }
    let ip_len = hdrs - 8;
    let (h, p) = frame.split_at_mut(hdrs);
    let net = IpUdp::new(&h[..ip_len], &h[ip_len..]).expect("own headers");
    build(p, &spec, &payload, &net, &TableCrc32, lim.icrc).expect("build");
    // Build never writes reserved bits, so strict parsing accepts it too.
    let strict = Limits {
        reserved: ReservedPolicy::Reject,
        ..*lim
    };
    let pk = parse_frame(&frame, &strict, &TableCrc32)
        .expect("a built packet parses")
        .packet;
    assert_eq!(spec_of(&pk), spec);
    assert_eq!(pk.payload(), &payload[..]);
    assert!(check(&frame, lim, usize::from(byte(9))));
    true
}
