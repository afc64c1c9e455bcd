// SPDX-License-Identifier: GPL-2.0

//! Checks every RoCEv2 frame of a packet capture with the crate's parser,
//! ICRC included: a capture of a driver's traffic then shows standard
//! RoCEv2 packets (make check runs it on the packets of rrxe's trains
//! after the stack segmented them; tests/guest/twodev.sh).
//!
//! Run: `pcap_check CAPTURE.pcap MTU MIN_FRAMES` (MTU: the QPs' path
//! MTU). Reads a classic pcap with Ethernet link type; takes the UDP
//! datagrams to port 4791 (IPv4 and IPv6, optionally VLAN-tagged).
//! Prints the first refused frames and a summary; exits 1 if any frame is
//! refused or fewer than MIN_FRAMES were seen.

use rrxe_proto::parse::parse_frame;
use rrxe_proto::{Limits, Mtu, TableCrc32};
use std::process::exit;

/// The IP datagram of an Ethernet frame carrying IPv4 or IPv6 (after an
/// optional 802.1Q tag), or `None`.
fn ip_of(frame: &[u8]) -> Option<&[u8]> {
    let mut off = 12;
    let mut ty = u16::from_be_bytes([*frame.get(off)?, *frame.get(off + 1)?]);
    if ty == 0x8100 {
        off += 4;
        ty = u16::from_be_bytes([*frame.get(off)?, *frame.get(off + 1)?]);
    }
    matches!(ty, 0x0800 | 0x86dd)
        .then(|| frame.get(off + 2..))
        .flatten()
}

/// Whether the IP datagram is UDP to port 4791.
fn is_roce(ip: &[u8]) -> bool {
    let (proto, udp) = match ip.first().map(|b| b >> 4) {
        Some(4) => (ip.get(9), ip.get(20..)),
        Some(6) => (ip.get(6), ip.get(40..)),
        _ => return false,
    };
    proto == Some(&17) && udp.and_then(|u| u.get(2..4)) == Some(&[0x12, 0xb7][..])
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let num = |i: usize| args.get(i).and_then(|m| m.parse::<usize>().ok());
    let (Some(path), Some(mtu), Some(min)) =
        (args.get(1), num(2).and_then(|m| Mtu::new(m as u32)), num(3))
    else {
        eprintln!("usage: pcap_check CAPTURE.pcap MTU MIN_FRAMES");
        exit(2);
    };
    let data = std::fs::read(path).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        exit(1)
    });
    if data.len() < 24 || data[..4] != [0xd4, 0xc3, 0xb2, 0xa1] || data[20] != 1 {
        eprintln!("{path}: not a little-endian classic pcap of Ethernet frames");
        exit(1);
    }
    let limits = Limits::new(mtu);
    let (mut off, mut seen, mut bad) = (24, 0usize, 0usize);
    while let Some(rec) = data.get(off..off + 16) {
        let caplen = u32::from_le_bytes([rec[8], rec[9], rec[10], rec[11]]) as usize;
        let wirelen = u32::from_le_bytes([rec[12], rec[13], rec[14], rec[15]]) as usize;
        let Some(frame) = data.get(off + 16..off + 16 + caplen) else {
            eprintln!("{path}: truncated record at byte {off}");
            exit(1);
        };
        off += 16 + caplen;
        let Some(ip) = ip_of(frame).filter(|ip| is_roce(ip)) else {
            continue;
        };
        seen += 1;
        if caplen != wirelen {
            bad += 1;
            if bad <= 10 {
                println!("frame {seen}: captured {caplen} of {wirelen} bytes");
            }
            continue;
        }
        if let Err(e) = parse_frame(ip, &limits, &TableCrc32) {
            bad += 1;
            if bad <= 10 {
                println!("frame {seen}: {e:?}");
            }
        }
    }
    println!("{seen} RoCEv2 frames, {bad} refused");
    if bad > 0 || seen < min {
        exit(1);
    }
}
