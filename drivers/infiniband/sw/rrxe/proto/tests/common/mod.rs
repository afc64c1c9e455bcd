// SPDX-License-Identifier: GPL-2.0

//! Helpers shared by the integration tests: whole frames built with the
//! crate's writers, the extended header fields every opcode needs, and an
//! independent ICRC oracle (zlib CRC-32 from the `crc32fast` crate over a
//! masked copy of the frame, with the masks written out here again).

#![allow(dead_code, unreachable_pub)]

use rrxe_proto::build::{
    build, AethFields, AtomicEthFields, DethFields, FethFields, Layout, RethFields,
};
use rrxe_proto::net::{
    write_ipv4_udp, write_ipv6_udp, Ipv4Spec, Ipv6Spec, IPV4_LEN, IPV6_LEN, UDP_LEN,
};
use rrxe_proto::{Ext, Hdr, IcrcFlavor, IpUdp, Msn, Opcode, Syndrome, TableCrc32, TxSpec};

/// Outer headers of a test frame.
#[derive(Debug, Clone, Copy)]
pub enum NetKind {
    V4(Ipv4Spec),
    V6(Ipv6Spec),
}

impl NetKind {
    pub fn ip_len(&self) -> usize {
        match self {
            NetKind::V4(_) => IPV4_LEN,
            NetKind::V6(_) => IPV6_LEN,
        }
    }
}

pub fn v4() -> NetKind {
    NetKind::V4(Ipv4Spec {
        src: [192, 0, 2, 1],
        dst: [192, 0, 2, 2],
        tos: 0,
        ttl: 64,
        id: 7,
        sport: 0xc001,
    })
}

pub fn v6() -> NetKind {
    NetKind::V6(Ipv6Spec {
        src: [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
        dst: [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
        traffic_class: 0,
        flow_label: 0,
        hop_limit: 64,
        sport: 0xc002,
    })
}

/// Every extended header `op` needs, with fields derived from `seed`.
pub fn ext_for(op: Opcode, seed: u64) -> Ext {
    let s = seed;
    let mut e = Ext::default();
    for h in Hdr::ALL {
        if !op.has(h) {
            continue;
        }
        match h {
            Hdr::Rdeth => e.rdeth = Some(s as u32 & 0xff_ffff),
            Hdr::Deth => {
                e.deth = Some(DethFields {
                    qkey: (s >> 8) as u32,
                    src_qpn: (s >> 20) as u32 & 0xff_ffff,
                })
            }
            Hdr::Feth => {
                e.feth = Some(FethFields {
                    plt: (s & 0xf) as u8,
                    sel: ((s >> 4) & 3) as u8,
                })
            }
            Hdr::Reth => {
                e.reth = Some(RethFields {
                    va: s.rotate_left(13),
                    rkey: (s >> 3) as u32,
                    len: (s >> 33) as u32,
                })
            }
            Hdr::AtomicEth => {
                e.atomic_eth = Some(AtomicEthFields {
                    va: s,
                    rkey: !(s as u32),
                    swap_add: s.rotate_left(7),
                    comp: s.rotate_right(9),
                })
            }
            Hdr::Aeth => {
                e.aeth = Some(AethFields {
                    syndrome: Syndrome::decode(s as u8 & 0x7f),
                    msn: Msn::new((s >> 8) as u32),
                })
            }
            Hdr::AtomicAckEth => e.atomic_ack = Some(s ^ 0x5555_5555_5555_5555),
            Hdr::ImmDt => e.imm = Some(((s >> 16) as u32).to_be_bytes()),
            Hdr::Ieth => e.ieth = Some((s >> 24) as u32),
        }
    }
    e
}

/// A whole IP datagram for `spec` with `payload`.
pub fn make_frame(spec: &TxSpec, payload: &[u8], net: &NetKind, flavor: IcrcFlavor) -> Vec<u8> {
    let layout = Layout::new(spec.opcode, spec.payload_len).expect("layout");
    let udp_payload_len = layout.udp_payload_len();
    let hdrs = net.ip_len() + UDP_LEN;
    let mut f = vec![0u8; hdrs + udp_payload_len];
    match net {
        NetKind::V4(s) => write_ipv4_udp(&mut f, s, udp_payload_len).expect("ipv4"),
        NetKind::V6(s) => write_ipv6_udp(&mut f, s, udp_payload_len).expect("ipv6"),
    };
    let (h, p) = f.split_at_mut(hdrs);
    let ip_len = net.ip_len();
    let ipudp = IpUdp::new(&h[..ip_len], &h[ip_len..]).expect("ipudp");
    let n = build(p, spec, payload, &ipudp, &TableCrc32, flavor).expect("build");
    assert_eq!(n, udp_payload_len);
    f
}

/// (byte offset, bit mask) of every field the ICRC masks, for a frame.
pub fn masked_bits(frame: &[u8]) -> Vec<(usize, u8)> {
    let mut v = Vec::new();
    let ip_len = if frame[0] >> 4 == 4 {
        v.extend([(1, 0xff), (8, 0xff), (10, 0xff), (11, 0xff)]);
        IPV4_LEN
    } else {
        v.extend([(0, 0x0f), (1, 0xff), (2, 0xff), (3, 0xff), (7, 0xff)]);
        IPV6_LEN
    };
    v.extend([
        (ip_len + 6, 0xff),
        (ip_len + 7, 0xff),
        (ip_len + UDP_LEN + 4, 0xff),
    ]);
    v
}

/// True if bit `bit` of byte `i` is in a masked field.
pub fn is_masked(masks: &[(usize, u8)], i: usize, bit: u8) -> bool {
    masks.iter().any(|&(o, m)| o == i && m & bit != 0)
}

/// The ICRC of a frame computed independently: zlib CRC-32 of 8 ones
/// bytes, then the frame up to the ICRC with the masked bits set to one
/// (the IBA way), optionally with rxe's repeated headers for `rxe_repeat`
/// header bytes. Returns the 4 trailer bytes.
pub fn oracle_icrc(frame: &[u8], rxe_repeat: Option<usize>) -> [u8; 4] {
    let mut c = frame[..frame.len() - 4].to_vec();
    for (i, m) in masked_bits(frame) {
        c[i] |= m;
    }
    let mut h = crc32fast::Hasher::new();
    h.update(&[0xff; 8]);
    h.update(&c);
    if let Some(hl) = rxe_repeat {
        let ip_len = if frame[0] >> 4 == 4 {
            IPV4_LEN
        } else {
            IPV6_LEN
        };
        let bth = ip_len + UDP_LEN;
        h.update(&frame[bth..bth + hl]);
    }
    h.finalize().to_le_bytes()
}

/// Offset of the BTH in a frame.
pub fn bth_offset(frame: &[u8]) -> usize {
    (if frame[0] >> 4 == 4 {
        IPV4_LEN
    } else {
        IPV6_LEN
    }) + UDP_LEN
}

/// Random outer headers, IPv4 or IPv6, with random masked fields.
pub fn any_net() -> impl proptest::strategy::Strategy<Value = NetKind> {
    use proptest::prelude::*;
    prop_oneof![
        (
            any::<[u8; 4]>(),
            any::<[u8; 4]>(),
            any::<u8>(),
            any::<u8>(),
            any::<u16>(),
            any::<u16>()
        )
            .prop_map(|(src, dst, tos, ttl, id, sport)| NetKind::V4(Ipv4Spec {
                src,
                dst,
                tos,
                ttl,
                id,
                sport
            })),
        (
            any::<[u8; 16]>(),
            any::<[u8; 16]>(),
            any::<u8>(),
            0u32..1 << 20,
            any::<u8>(),
            any::<u16>()
        )
            .prop_map(|(src, dst, traffic_class, flow_label, hop_limit, sport)| {
                NetKind::V6(Ipv6Spec {
                    src,
                    dst,
                    traffic_class,
                    flow_label,
                    hop_limit,
                    sport,
                })
            }),
    ]
}

/// Deterministic pseudo-random bytes.
pub fn bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
