// SPDX-License-Identifier: GPL-2.0

//! Micro-benchmark (not a test) of ICRC and parse throughput on the host,
//! next to a plain memcpy of the same bytes, for 1 KiB and 4 KiB payloads.
//!
//! Run: `cargo run --release --example bench`
//!
//! Two CRC-32 steps are measured: the crate's portable slice-by-8 table
//! ([`TableCrc32`]) and `crc32fast` (PCLMULQDQ on x86-64), which stands in
//! for what the kernel's accelerated `crc32_le` offers; the ICRC is generic
//! over the step, so the kernel gets the latter.

#![allow(clippy::float_arithmetic)] // host-only: GB/s figures

use rrxe_proto::build::build;
use rrxe_proto::net::{write_ipv4_udp, Ipv4Spec};
use rrxe_proto::parse::{parse, parse_headers};
use rrxe_proto::{
    Crc32, Icrc, IcrcFlavor, IpUdp, Layout, Limits, Mtu, Opcode, Psn, TableCrc32, TxSpec,
};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// `crc32fast` behind the crate's `Crc32` step (raw state in and out).
struct FastCrc;

impl Crc32 for FastCrc {
    fn update(&self, crc: u32, data: &[u8]) -> u32 {
        let mut h = crc32fast::Hasher::new_with_initial(!crc);
        h.update(data);
        !h.finalize()
    }
}

/// Runs `f` repeatedly for about `budget`; returns seconds per call.
fn time<F: FnMut()>(budget: Duration, mut f: F) -> f64 {
    // Warm up and calibrate.
    let mut n = 1u64;
    loop {
        let t = Instant::now();
        for _ in 0..n {
            f();
        }
        let e = t.elapsed();
        if e > budget / 10 {
            break;
        }
        n *= 2;
    }
    let reps = 5;
    let mut best = f64::MAX;
    for _ in 0..reps {
        let t = Instant::now();
        for _ in 0..n {
            f();
        }
        best = best.min(t.elapsed().as_secs_f64() / n as f64);
    }
    best
}

fn main() {
    let budget = Duration::from_millis(300);
    println!(
        "{:>7}  {:<34} {:>9} {:>10}",
        "payload", "what", "GB/s", "ns/packet"
    );
    for (len, mtu, op) in [
        (1024usize, Mtu::MTU_1024, Opcode::RcWriteMiddle),
        (4096, Mtu::MTU_4096, Opcode::RcWriteMiddle),
    ] {
        let spec = TxSpec::new(op, 0x11, Psn::new(7), len);
        let payload: Vec<u8> = (0..len).map(|i| (i * 31 + 7) as u8).collect();
        let layout = Layout::new(op, len).unwrap();
        let mut frame = vec![0u8; 28 + layout.udp_payload_len()];
        let s = Ipv4Spec {
            src: [192, 0, 2, 1],
            dst: [192, 0, 2, 2],
            tos: 0,
            ttl: 64,
            id: 1,
            sport: 0xc000,
        };
        write_ipv4_udp(&mut frame, &s, layout.udp_payload_len()).unwrap();
        let (h, p) = frame.split_at_mut(28);
        let net = IpUdp::new(&h[..20], &h[20..]).unwrap();
        build(p, &spec, &payload, &net, &TableCrc32, IcrcFlavor::Rxe).unwrap();
        let p: &[u8] = p;
        let lim = Limits::new(mtu);
        // Both CRC steps agree.
        assert!(parse(&net, p, &lim, &FastCrc).is_ok());
        assert!(parse(&net, p, &lim, &TableCrc32).is_ok());

        // Bytes each measurement touches: the UDP payload (BTH..ICRC).
        let bytes = p.len() as f64;
        let mut dst = vec![0u8; p.len()];
        let row = |what: &str, secs: f64| {
            println!(
                "{:>7}  {:<34} {:>9.2} {:>10.1}",
                len,
                what,
                bytes / secs / 1e9,
                secs * 1e9
            );
        };

        row(
            "memcpy of the same bytes",
            time(budget, || {
                dst.copy_from_slice(black_box(p));
                black_box(&dst);
            }),
        );
        let icrc_with = |c: &dyn Crc32| {
            let mut i = Icrc::new(c, black_box(&net), p[..12].try_into().unwrap());
            i.update(&p[12..p.len() - 4]);
            black_box(i.value());
        };
        row(
            "ICRC, slice-by-8 table",
            time(budget, || icrc_with(&TableCrc32)),
        );
        row(
            "ICRC, crc32fast (pclmul)",
            time(budget, || icrc_with(&FastCrc)),
        );
        row(
            "parse + ICRC, slice-by-8 table",
            time(budget, || {
                black_box(parse(black_box(&net), black_box(p), &lim, &TableCrc32).is_ok());
            }),
        );
        row(
            "parse + ICRC, crc32fast (pclmul)",
            time(budget, || {
                black_box(parse(black_box(&net), black_box(p), &lim, &FastCrc).is_ok());
            }),
        );
        row(
            "parse headers only (+ hdr ICRC)",
            time(budget, || {
                black_box(
                    parse_headers(black_box(&net), black_box(p), p.len(), &lim, &FastCrc).is_ok(),
                );
            }),
        );
        row(
            "memcpy + ICRC, two passes (pclmul)",
            time(budget, || {
                dst.copy_from_slice(black_box(p));
                icrc_with(&FastCrc);
            }),
        );
    }
}
