// SPDX-License-Identifier: GPL-2.0

//! The library compiled the way the kernel compiles it has no panic path.
//!
//! Builds src/ as `#[path = ".../lib.rs"] pub mod proto;` inside a `no_std`
//! crate root with `--cfg CONFIG_RUST`, edition 2021, the kernel's lints as
//! errors (missing_docs, unreachable_pub, rust_2018_idioms), overflow checks
//! and debug assertions on, at -O2, with every generic entry point
//! instantiated the way the kernel will (a `Crc32` value and `dyn Crc32`,
//! views over `&[u8]` and `&mut [u8]`). Then it reads the LLVM IR: no
//! function of core's panic machinery (panics, failed bounds checks,
//! failed unwraps, overflow traps) may be referenced. In the kernel each of
//! those would be an Oops.
//!
//! The compiler is `$RRXE_PROTO_RUSTC`, else `rustc` (run it with the
//! kernel's `/usr/bin/rustc` to check that toolchain too).

use std::path::PathBuf;
use std::process::Command;

const WRAPPER: &str = r#"
//! Stand-in for the rrxe kernel crate root.
#![no_std]
#![forbid(unsafe_code)]

#[path = "@LIB@"]
pub mod proto;

use proto::build::{build, write_headers, BuildError, Layout};
use proto::hdr::{AtomicAckEth, AtomicEth, Aeth, Bth, Deth, Feth, ImmDt, Ieth, Rdeth, Reth};
use proto::icrc::{fill_packet, packet_icrc, verify_packet};
use proto::net::{fill_udp_checksum, write_ipv4_udp, write_ipv6_udp, Ipv4Spec, Ipv6Spec};
use proto::parse::{parse, parse_frame, parse_headers, Headers};
use proto::seg::segments;
use proto::*;

/// A kernel-like CRC: a zero-sized type.
pub struct Zst;

impl Crc32 for Zst {
    fn update(&self, crc: u32, data: &[u8]) -> u32 {
        TableCrc32.update(crc, data)
    }
}

/// parse_frame, ZST and dyn.
pub fn i_parse_frame(f: &[u8], l: &Limits, d: &dyn Crc32) -> usize {
    let a = parse_frame(f, l, &Zst).map(|x| x.packet.payload().len()).unwrap_or(0);
    let b = parse_frame(f, l, d).map(|x| x.packet.psn().get() as usize).unwrap_or(0);
    a ^ b
}

/// The non-contiguous path and every header accessor.
pub fn i_parse_headers(n: &IpUdp<'_>, pre: &[u8], rest: &[u8], len: usize, l: &Limits) -> u64 {
    let Ok((h, mut icrc)) = parse_headers(n, pre, len, l, &Zst) else { return 0 };
    icrc.update(rest).update_zeros(usize::from(h.pad()));
    let mut v = u64::from(h.icrc_matches(&icrc, rest));
    v ^= h.reth().map(|x| x.va() ^ u64::from(x.rkey() ^ x.dma_len())).unwrap_or(1);
    v ^= h.aeth().map(|x| u64::from(x.syndrome().encode()) ^ u64::from(x.msn().get())).unwrap_or(2);
    v ^= h.deth().map(|x| u64::from(x.qkey() ^ x.src_qpn() ^ u32::from(x.resv8()))).unwrap_or(3);
    v ^= h.atomic_eth().map(|x| x.va() ^ x.swap_add() ^ x.comp() ^ u64::from(x.rkey())).unwrap_or(4);
    v ^= h.atomic_ack_eth().map(|x| x.orig()).unwrap_or(5);
    v ^= h.immdt().map(|x| u64::from(x.imm())).unwrap_or(6);
    v ^= h.ieth().map(|x| u64::from(x.rkey())).unwrap_or(7);
    v ^= h.feth().map(|x| u64::from(x.plt() ^ x.sel()) ^ u64::from(x.resv())).unwrap_or(8);
    v ^= h.rdeth().map(|x| u64::from(x.een() ^ u32::from(x.resv8()))).unwrap_or(9);
    let b = h.bth();
    v ^ u64::from(b.se() ^ b.mig() ^ b.fecn() ^ b.becn() ^ b.ack_req())
        ^ u64::from(b.resv6a() ^ b.resv7() ^ b.tver() ^ b.pad())
        ^ u64::from(b.pkey())
        ^ h.payload_offset() as u64
        ^ h.icrc_offset() as u64
}

/// Accepted headers seen again from what their parse found, whatever the
/// word (a queued packet's `cb`).
pub fn i_found_at(p: &[u8], w: u32) -> u64 {
    let Some(f) = proto::parse::Found::from_word(w) else {
        return 0;
    };
    let _ = f.to_word();
    Headers::at(p, f).map_or(0, |h| {
        h.payload_len() as u64 ^ h.icrc_offset() as u64 ^ u64::from(h.pad()) ^ u64::from(h.found().to_word())
    })
}

/// The Performance Management Agent, over any input and output.
pub fn i_pma(req: &[u8], out: &mut [u8], n: u64) -> bool {
    let c = proto::pma::PortCounts { xmit_bytes: n, rcv_bytes: n, xmit_pkts: n, rcv_pkts: n, rcv_errors: n, link_downed: n };
    proto::pma::answer(req, &c, out) == proto::pma::Answer::Reply
}

/// Contiguous parse with dyn.
pub fn i_parse(n: &IpUdp<'_>, p: &[u8], l: &Limits, d: &dyn Crc32) -> bool {
    parse(n, p, l, d).ok().and_then(|x| x.atomic_write_value()).is_some()
}

/// Builders.
pub fn i_build(buf: &mut [u8], s: &TxSpec, p: &[u8], n: &IpUdp<'_>) -> Result<usize, BuildError> {
    let l = write_headers(buf, s)?;
    let _ = Layout::new(s.opcode, s.payload_len)?.start_icrc(&Zst, n, buf, IcrcFlavor::Iba);
    let _ = l.udp_payload_len();
    build(buf, s, p, n, &Zst, IcrcFlavor::Rxe)
}

/// Whole-packet ICRC helpers.
pub fn i_icrc(n: &IpUdp<'_>, p: &mut [u8], d: &dyn Crc32) -> bool {
    let a = packet_icrc(d, n, p, IcrcFlavor::Rxe).is_some();
    let b = verify_packet(&Zst, n, p, IcrcFlavor::Iba);
    a ^ b ^ fill_packet(&Zst, n, p, IcrcFlavor::Rxe)
}

/// Segmentation.
pub fn i_seg(t: Transport, op: MsgOp, len: u32, mtu: Mtu, psn: Psn, out: &mut [Segment]) -> usize {
    let Ok(mut s) = segments(t, op, len, mtu, psn) else { return 0 };
    let mut n = 0;
    for o in out.iter_mut() {
        match s.next() {
            Some(x) => *o = x,
            None => break,
        }
        n += 1;
    }
    n ^ s.nth(len as usize).map(|x| x.len as usize).unwrap_or(0) ^ s.psn_span() as usize
}

/// Every view's setters over `&mut [u8]`.
pub fn i_views(b: &mut [u8], v: u64) -> u8 {
    if let Ok(mut h) = Bth::new(&mut *b) {
        h.set_opcode(v as u8); h.set_se(true); h.set_mig(true); h.set_pad(v as u8); h.set_tver(1);
        h.set_pkey(v as u16); h.set_fecn(true); h.set_becn(true); h.set_resv6a(v as u8);
        h.set_dest_qpn(v as u32); h.set_ack_req(true); h.set_resv7(v as u8); h.set_psn(Psn::new(v as u32)); h.clear();
    }
    if let Ok(mut h) = Rdeth::new(&mut *b) { h.set_een(v as u32); h.set_resv8(1); }
    if let Ok(mut h) = Deth::new(&mut *b) { h.set_qkey(v as u32); h.set_src_qpn(v as u32); h.set_resv8(1); }
    if let Ok(mut h) = Reth::new(&mut *b) { h.set_va(v); h.set_rkey(v as u32); h.set_dma_len(v as u32); }
    if let Ok(mut h) = Feth::new(&mut *b) { h.set_plt(v as u8); h.set_sel(v as u8); h.set_resv(v as u32); }
    if let Ok(mut h) = AtomicEth::new(&mut *b) { h.set_va(v); h.set_rkey(1); h.set_swap_add(v); h.set_comp(v); }
    if let Ok(mut h) = Aeth::new(&mut *b) { h.set_syndrome(Syndrome::decode(v as u8)); h.set_msn(Msn::new(v as u32)); }
    if let Ok(mut h) = AtomicAckEth::new(&mut *b) { h.set_orig(v); }
    if let Ok(mut h) = ImmDt::new(&mut *b) { h.set_imm(v as u32); h.set_imm_bytes([1; 4]); }
    if let Ok(mut h) = Ieth::new(&mut *b) { h.set_rkey(v as u32); }
    b.first().copied().unwrap_or(0)
}

/// Outer header writers.
pub fn i_net(f: &mut [u8], s4: &Ipv4Spec, s6: &Ipv6Spec, len: usize) -> bool {
    let a = write_ipv4_udp(f, s4, len).is_ok();
    let b = write_ipv6_udp(f, s6, len).is_ok();
    a ^ b ^ fill_udp_checksum(f).is_ok()
}

/// Tables and arithmetic.
pub fn i_misc(v: u8, a: u32, b: u32) -> u64 {
    let op = Opcode::from_u8(v).map(|o| o.header_len() ^ o.offset(Hdr::Reth).unwrap_or(0)).unwrap_or(0);
    let t = RnrTimer::new(v).map(|t| t.usec()).unwrap_or(0) ^ RnrTimer::at_least_usec(a).usec();
    let c = aeth::credits(v).unwrap_or(0) ^ u32::from(aeth::credit_code(a));
    let p = Psn::new(a).distance(Psn::new(b)) as u32 ^ psn_compare(a, b) as u32;
    let w = u32::from(Psn::new(a).in_window(Psn::new(b), a));
    let m = Mtu::new(a).map(|m| m.bytes()).unwrap_or(0) ^ Mtu::from_ib_enum(b).map(|m| m.bytes()).unwrap_or(0);
    (op ^ m) as u64 ^ u64::from(t ^ c ^ p ^ w)
}
"#;

/// Core's panic machinery, as it appears in mangled symbol names.
const FORBIDDEN: &[&str] = &[
    "panic",
    "_fail",
    "unwrap_failed",
    "expect_failed",
    "assert_failed",
    "overflow",
    "abort",
];

#[test]
fn module_build_has_no_panic_path() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("no_panic");
    std::fs::create_dir_all(&dir).unwrap();
    let lib = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs");
    let root = dir.join("root.rs");
    std::fs::write(&root, WRAPPER.replace("@LIB@", lib.to_str().unwrap())).unwrap();
    let ir = dir.join("root.ll");
    let rustc = std::env::var("RRXE_PROTO_RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(&rustc)
        .args([
            "--edition",
            "2021",
            "--crate-type",
            "lib",
            "--crate-name",
            "rrxe_modchk",
        ])
        .args([
            "--cfg",
            "CONFIG_RUST",
            "-C",
            "opt-level=2",
            "-C",
            "overflow-checks=on",
        ])
        .args(["-C", "debug-assertions=on", "-C", "panic=abort"])
        .args([
            "-D",
            "warnings",
            "-D",
            "missing_docs",
            "-D",
            "unreachable_pub",
        ])
        .args(["-D", "rust_2018_idioms", "--emit=llvm-ir", "-o"])
        .arg(&ir)
        .arg(&root)
        .output()
        .expect("run rustc");
    assert!(
        out.status.success(),
        "{rustc} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&ir).unwrap();
    // Every function the module calls but does not define.
    let declared: Vec<&str> = text.lines().filter(|l| l.starts_with("declare")).collect();
    assert!(
        declared.iter().any(|l| l.contains("llvm.")),
        "no IR declarations read"
    );
    let bad: Vec<&&str> = declared
        .iter()
        .filter(|l| !l.contains("@llvm."))
        .filter(|l| FORBIDDEN.iter().any(|f| l.to_lowercase().contains(f)))
        .collect();
    assert!(bad.is_empty(), "panic paths in the module build:\n{bad:#?}");
    // The instantiations really are in there.
    for f in [
        "i_parse_frame",
        "i_parse_headers",
        "i_found_at",
        "i_pma",
        "i_build",
        "i_icrc",
        "i_seg",
        "i_views",
    ] {
        assert!(text.contains(f), "{f} missing from the IR");
    }
}
