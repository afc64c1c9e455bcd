// SPDX-License-Identifier: GPL-2.0

//! Golden vectors: every file under tests/golden/ holds RoCEv2 frames, one
//! per line, as `<hex of IP+UDP+BTH..ICRC> [mtu=N] <label>` (`#` starts a
//! comment line; see Documentation/proto.md). For each frame: parse must
//! succeed, its ICRC must verify, flipping any bit the ICRC covers must make
//! the ICRC fail, and flipping any bit of a masked field must not.

mod common;

use common::*;
use rrxe_proto::icrc::verify_packet;
use rrxe_proto::parse::parse_frame;
use rrxe_proto::{IcrcFlavor, IpUdp, Limits, Mtu, ReservedPolicy, TableCrc32};
use std::path::PathBuf;

struct Vector {
    file: String,
    line: usize,
    frame: Vec<u8>,
    mtu: Mtu,
    label: String,
}

fn load() -> Vec<Vector> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut tokens = line.split_whitespace();
            let hex = tokens.next().unwrap();
            assert!(hex.len() % 2 == 0, "{file}:{}: odd hex length", i + 1);
            let frame: Vec<u8> = (0..hex.len())
                .step_by(2)
                .map(|k| {
                    u8::from_str_radix(&hex[k..k + 2], 16)
                        .unwrap_or_else(|_| panic!("{file}:{}: bad hex", i + 1))
                })
                .collect();
            let mut mtu = Mtu::MTU_4096;
            let mut label = Vec::new();
            for t in tokens {
                match t.strip_prefix("mtu=") {
                    Some(v) if label.is_empty() => {
                        mtu = v
                            .parse()
                            .ok()
                            .and_then(Mtu::new)
                            .unwrap_or_else(|| panic!("{file}:{}: bad {t}", i + 1))
                    }
                    _ => label.push(t),
                }
            }
            out.push(Vector {
                file: file.clone(),
                line: i + 1,
                frame,
                mtu,
                label: label.join(" "),
            });
        }
    }
    out
}

#[test]
fn golden_vectors() {
    let vectors = load();
    assert!(!vectors.is_empty(), "no golden vectors under tests/golden/");
    let mut synthetic = 0;
    for v in &vectors {
        let at = format!("{}:{} ({})", v.file, v.line, v.label);
        if v.label.contains("SYNTHETIC") {
            synthetic += 1;
        }
        let lim = Limits {
            mtu: v.mtu,
            icrc: IcrcFlavor::Rxe,
            reserved: ReservedPolicy::Ignore,
        };
        let fr = parse_frame(&v.frame, &lim, &TableCrc32).unwrap_or_else(|e| panic!("{at}: {e:?}"));
        let op = fr.packet.opcode();
        let (net, p) = IpUdp::split_frame(&v.frame).unwrap();
        assert!(
            verify_packet(&TableCrc32, &net, p, IcrcFlavor::Rxe),
            "{at}: ICRC"
        );

        // The frame as the IP layer hands it over (no Ethernet padding).
        let ip_len = net.ip_bytes().len();
        let end = ip_len + 8 + p.len();
        let f = &v.frame[..end];
        let mut masks = masked_bits(f);
        if IcrcFlavor::Rxe.repeats_headers(op) {
            let b4 = bth_offset(f) + 4;
            masks.retain(|&(o, _)| o != b4);
        }
        let icrc_at = end - 4;
        for i in 0..end {
            for bit in 0..8 {
                let m = 1u8 << bit;
                let mut g = f.to_vec();
                g[i] ^= m;
                // Same byte ranges as the original, whatever a flipped
                // length says.
                let verdict = match IpUdp::new(&g[..ip_len], &g[ip_len..ip_len + 8]) {
                    Ok(n) => verify_packet(&TableCrc32, &n, &g[ip_len + 8..], IcrcFlavor::Rxe),
                    Err(_) => false,
                };
                if i < icrc_at && is_masked(&masks, i, m) {
                    assert!(
                        verdict,
                        "{at}: flipping masked byte {i} bit {bit} broke the ICRC"
                    );
                    parse_frame(&g, &lim, &TableCrc32)
                        .unwrap_or_else(|e| panic!("{at}: masked byte {i} bit {bit}: {e:?}"));
                } else {
                    assert!(
                        !verdict,
                        "{at}: flipping covered byte {i} bit {bit} kept the ICRC valid"
                    );
                    assert!(
                        parse_frame(&g, &lim, &TableCrc32).is_err(),
                        "{at}: byte {i} bit {bit}"
                    );
                }
            }
        }
    }
    eprintln!("{} golden vectors ({} synthetic)", vectors.len(), synthetic);
}
