// SPDX-License-Identifier: GPL-2.0

//! Writes the committed seed corpus of the `parse` fuzz target
//! (fuzz/seeds/parse/): one valid frame per representative opcode, IPv4 and
//! IPv6, in the harness input format `[control, split, frame...]` (see
//! fuzz/harness.rs), plus a few build-mode inputs.
//!
//! Run: `cargo run --example fuzz_seeds -- fuzz/seeds/parse`

use rrxe_proto::build::{
    build, AethFields, AtomicEthFields, DethFields, FethFields, Layout, RethFields,
};
use rrxe_proto::net::{write_ipv4_udp, write_ipv6_udp, Ipv4Spec, Ipv6Spec};
use rrxe_proto::opcode::PayloadRule;
use rrxe_proto::{
    Ext, Hdr, IcrcFlavor, IpUdp, Msn, NakCode, Opcode, Psn, RnrTimer, Syndrome, TableCrc32, TxSpec,
};

fn ext(op: Opcode, i: u64) -> Ext {
    let mut e = Ext::default();
    for h in Hdr::ALL.into_iter().filter(|&h| op.has(h)) {
        match h {
            Hdr::Rdeth => e.rdeth = Some(0x10 + i as u32),
            Hdr::Deth => {
                e.deth = Some(DethFields {
                    qkey: 0x8001_0000,
                    src_qpn: 1,
                })
            }
            Hdr::Feth => e.feth = Some(FethFields { plt: 1, sel: 1 }),
            Hdr::Reth => {
                e.reth = Some(RethFields {
                    va: 0x7f00_0000_1000,
                    rkey: 0x1234,
                    len: 4096,
                })
            }
            Hdr::AtomicEth => {
                e.atomic_eth = Some(AtomicEthFields {
                    va: 0x7f00_0000_2000,
                    rkey: 0x5678,
                    swap_add: 1,
                    comp: 2,
                })
            }
            Hdr::Aeth => {
                let syndrome = match i % 4 {
                    0 => Syndrome::ACK_UNLIMITED,
                    1 => Syndrome::Nak(NakCode::PsnSequenceError),
                    2 => Syndrome::RnrNak(RnrTimer::new(14).unwrap()),
                    _ => Syndrome::Nak(NakCode::RemoteAccessError),
                };
                e.aeth = Some(AethFields {
                    syndrome,
                    msn: Msn::new(i as u32),
                })
            }
            Hdr::AtomicAckEth => e.atomic_ack = Some(0xdead_beef),
            Hdr::ImmDt => e.imm = Some([1, 2, 3, 4]),
            Hdr::Ieth => e.ieth = Some(0xabcd),
        }
    }
    e
}

fn frame(op: Opcode, len: usize, v6: bool, i: u64) -> Vec<u8> {
    let mut spec = TxSpec::new(op, 0x11 + i as u32, Psn::new(0xff_fff8 + i as u32), len);
    spec.ext = ext(op, i);
    let payload: Vec<u8> = (0..len).map(|k| (k * 7 + i as usize) as u8).collect();
    let layout = Layout::new(op, len).unwrap();
    let hdrs = if v6 { 48 } else { 28 };
    let mut f = vec![0u8; hdrs + layout.udp_payload_len()];
    if v6 {
        let mut a = [0u8; 16];
        a[..2].copy_from_slice(&[0xfe, 0x80]);
        let s = Ipv6Spec {
            src: a,
            dst: a,
            traffic_class: 0,
            flow_label: 0,
            hop_limit: 64,
            sport: 0xc000,
        };
        write_ipv6_udp(&mut f, &s, layout.udp_payload_len()).unwrap();
    } else {
        let s = Ipv4Spec {
            src: [192, 0, 2, 1],
            dst: [192, 0, 2, 2],
            tos: 0,
            ttl: 64,
            id: i as u16,
            sport: 0xc000,
        };
        write_ipv4_udp(&mut f, &s, layout.udp_payload_len()).unwrap();
    }
    let (h, p) = f.split_at_mut(hdrs);
    let net = IpUdp::new(&h[..hdrs - 8], &h[hdrs - 8..]).unwrap();
    build(p, &spec, &payload, &net, &TableCrc32, IcrcFlavor::Rxe).unwrap();
    f
}

fn main() {
    let dir = std::env::args().nth(1).expect("usage: fuzz_seeds <dir>");
    std::fs::create_dir_all(&dir).unwrap();
    // MTU 256 (control 0) keeps the seeds small.
    let picks = [
        Opcode::RcSendFirst,
        Opcode::RcSendMiddle,
        Opcode::RcSendLast,
        Opcode::RcSendOnly,
        Opcode::RcSendOnlyWithImm,
        Opcode::RcWriteFirst,
        Opcode::RcWriteLastWithImm,
        Opcode::RcWriteOnly,
        Opcode::RcReadRequest,
        Opcode::RcReadResponseFirst,
        Opcode::RcReadResponseMiddle,
        Opcode::RcReadResponseLast,
        Opcode::RcAck,
        Opcode::RcAtomicAck,
        Opcode::RcCompareSwap,
        Opcode::RcFetchAdd,
        Opcode::RcSendLastWithInv,
        Opcode::RcSendOnlyWithInv,
        Opcode::RcFlush,
        Opcode::RcAtomicWrite,
        Opcode::UcSendOnly,
        Opcode::UcWriteOnlyWithImm,
        Opcode::RdSendOnly,
        Opcode::RdAtomicAck,
        Opcode::UdSendOnly,
        Opcode::UdSendOnlyWithImm,
    ];
    let mut n = 0;
    for (i, &op) in picks.iter().enumerate() {
        let len = match op.payload_rule() {
            PayloadRule::None => 0,
            PayloadRule::Exactly(k) => k,
            PayloadRule::FullMtu => 256,
            PayloadRule::OneToMtu | PayloadRule::UpToMtu => 1 + i * 9 % 200,
        };
        let v6 = i % 3 == 0;
        let f = frame(op, len, v6, i as u64);
        let mut data = vec![0u8, op.header_len() as u8];
        data.extend_from_slice(&f);
        std::fs::write(
            format!("{dir}/{:02}-{}", n, op.name().to_lowercase()),
            &data,
        )
        .unwrap();
        n += 1;
    }
    // ICRC-fixing mode over a frame with a broken ICRC and odd fields.
    let mut f = frame(Opcode::RcWriteMiddle, 256, false, 99);
    let l = f.len();
    f[l - 1] ^= 0xff;
    let mut data = vec![0x20u8, 5];
    data.extend_from_slice(&f);
    std::fs::write(format!("{dir}/{n:02}-fix-icrc"), &data).unwrap();
    n += 1;
    // Build mode: opcode byte, length, v6 flag, fields.
    for (k, op) in [
        Opcode::RcWriteOnlyWithImm,
        Opcode::RcFlush,
        Opcode::UdSendOnlyWithImm,
    ]
    .iter()
    .enumerate()
    {
        let mut data = vec![0x42u8, 0, op.as_u8(), 33, 0, k as u8];
        data.extend((0..40).map(|x| (x * 13 + k) as u8));
        std::fs::write(
            format!("{dir}/{n:02}-build-{}", op.name().to_lowercase()),
            &data,
        )
        .unwrap();
        n += 1;
    }
    println!("{n} seeds written to {dir}");
}
