// SPDX-License-Identifier: GPL-2.0

//! The kernel module's carry-less-multiply CRC-32 (the C of
//! include/rrxe/rrxe_crc_clmul.h, which the module runs inside a kernel FPU
//! section) against this crate's portable reference, on the host: random
//! lengths from 0 to 64 KiB at every alignment and seed, and the golden
//! vectors' ICRCs computed with it. The C is built with the host's `cc`
//! (tests/clmul/crc_clmul.c) and driven over a pipe, so the test needs no
//! `unsafe`. x86-64 with PCLMULQDQ only; elsewhere it says so and passes.

use rrxe_proto::icrc::verify_packet;
use rrxe_proto::{Crc32, IcrcFlavor, IpUdp, TableCrc32};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Mutex;

/// The C CRC in a child process.
struct Clmul {
    io: Mutex<(ChildStdin, ChildStdout)>,
    child: Child,
}

impl Clmul {
    /// Builds (as `name`: each test its own, as they run in parallel) and
    /// starts tests/clmul/crc_clmul.c; `None` where the CPU cannot run it.
    fn start(name: &str) -> Option<Self> {
        if !cfg!(target_arch = "x86_64") {
            eprintln!("not x86-64: the carry-less-multiply CRC is not built here");
            return None;
        }
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        if !cpuinfo.split_whitespace().any(|f| f == "pclmulqdq") {
            eprintln!("this CPU has no PCLMULQDQ");
            return None;
        }
        let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let include = here.join("../../../../../include");
        let exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let st = Command::new(&cc)
            .args([
                "-O2", "-Wall", "-Wextra", "-Werror", "-mpclmul", "-msse2", "-I",
            ])
            .arg(&include)
            .arg(here.join("tests/clmul/crc_clmul.c"))
            .arg("-o")
            .arg(&exe)
            .status()
            .unwrap_or_else(|e| panic!("{cc}: {e}"));
        assert!(st.success(), "building tests/clmul/crc_clmul.c failed");
        let mut child = Command::new(&exe)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let io = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
        Some(Self {
            io: Mutex::new(io),
            child,
        })
    }

    /// The C CRC of `data`, continuing from `crc`, with `data` placed
    /// `align` bytes past a 16-byte boundary.
    fn crc_at(&self, crc: u32, data: &[u8], align: u32) -> u32 {
        let mut io = self.io.lock().unwrap();
        let (w, r) = &mut *io;
        let mut rec = Vec::with_capacity(12 + data.len());
        rec.extend_from_slice(&crc.to_le_bytes());
        rec.extend_from_slice(&u32::try_from(data.len()).unwrap().to_le_bytes());
        rec.extend_from_slice(&align.to_le_bytes());
        rec.extend_from_slice(data);
        w.write_all(&rec).unwrap();
        w.flush().unwrap();
        let mut out = [0u8; 4];
        r.read_exact(&mut out).unwrap();
        u32::from_le_bytes(out)
    }
}

impl Clmul {
    /// The C copy and CRC of `data` (`table`: the slice-by-8 copy, else the
    /// fold's), continuing from `crc`, with `data` placed `align` bytes past
    /// a 16-byte boundary: the CRC, and whether the copy is exact.
    fn copy_at(&self, table: bool, crc: u32, data: &[u8], align: u32) -> (u32, bool) {
        let mut io = self.io.lock().unwrap();
        let (w, r) = &mut *io;
        let mode = if table { 0x200 } else { 0x100 };
        let mut rec = Vec::with_capacity(12 + data.len());
        rec.extend_from_slice(&crc.to_le_bytes());
        rec.extend_from_slice(&u32::try_from(data.len()).unwrap().to_le_bytes());
        rec.extend_from_slice(&(align | mode).to_le_bytes());
        rec.extend_from_slice(data);
        w.write_all(&rec).unwrap();
        w.flush().unwrap();
        let mut out = [0u8; 8];
        r.read_exact(&mut out).unwrap();
        (
            u32::from_le_bytes(out[..4].try_into().unwrap()),
            u32::from_le_bytes(out[4..].try_into().unwrap()) == 1,
        )
    }
}

impl Drop for Clmul {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Crc32 for Clmul {
    fn update(&self, crc: u32, data: &[u8]) -> u32 {
        self.crc_at(crc, data, 0)
    }
}

/// A small xorshift generator: the same bytes every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// A generator from `seed` and 64 KiB + 16 bytes drawn from it.
fn sample(seed: u64) -> (Rng, Vec<u8>) {
    let mut rng = Rng(seed);
    let buf = (0..65536 + 16).map(|_| rng.next() as u8).collect();
    (rng, buf)
}

#[test]
fn equals_the_reference_on_any_length_alignment_and_seed() {
    let Some(c) = Clmul::start("crc_clmul_ref") else {
        return;
    };
    let (mut rng, buf) = sample(0x9e37_79b9_7f4a_7c15);
    let mut lens: Vec<usize> = vec![
        0, 1, 15, 16, 17, 31, 32, 48, 63, 64, 65, 79, 80, 127, 128, 129, 255, 256, 1024, 1500,
        4095, 4096, 4097, 65535, 65536,
    ];
    lens.extend((0..200).map(|_| (rng.next() % 65537) as usize));
    let mut checked = 0;
    for &len in &lens {
        for align in 0..16u32 {
            let seed = rng.next() as u32;
            let data = &buf[align as usize..align as usize + len];
            let want = TableCrc32.update(seed, data);
            let got = c.crc_at(seed, data, align);
            assert_eq!(
                got, want,
                "length {len}, alignment {align}, seed {seed:#010x}: clmul {got:#010x}, reference {want:#010x}"
            );
            checked += 1;
        }
    }
    // zlib's check value through the same code: crc32("123456789").
    assert_eq!(!c.crc_at(!0, b"123456789", 3), 0xcbf4_3926);
    let long: Vec<u8> = b"123456789".iter().copied().cycle().take(9 * 100).collect();
    assert_eq!(
        c.crc_at(!0, &long, 0),
        TableCrc32::update_bytewise(!0, &long)
    );
    assert!(checked >= 225 * 16);
}

#[test]
fn copy_and_crc_in_one_pass_equal_the_reference_and_copy_exactly() {
    let Some(c) = Clmul::start("crc_copy_ref") else {
        return;
    };
    let (mut rng, buf) = sample(0x2545_f491_4f6c_dd1d);
    let mut lens: Vec<usize> = vec![
        0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 255, 256, 257, 1024, 4095, 4096, 4097, 65536,
    ];
    lens.extend((0..60).map(|_| (rng.next() % 65537) as usize));
    let mut checked = 0;
    for &len in &lens {
        for align in 0..16u32 {
            let seed = rng.next() as u32;
            let data = &buf[align as usize..align as usize + len];
            let want = TableCrc32.update(seed, data);
            for table in [false, true] {
                let (got, copied) = c.copy_at(table, seed, data, align);
                let what = if table { "table copy" } else { "clmul copy" };
                assert_eq!(
                    got, want,
                    "{what}: length {len}, alignment {align}, seed {seed:#010x}: {got:#010x}, reference {want:#010x}"
                );
                assert!(
                    copied,
                    "{what}: length {len}, alignment {align}: the copy differs or spilled"
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 79 * 16 * 2);
}

#[test]
fn golden_vectors_verify_with_it() {
    let Some(c) = Clmul::start("crc_clmul_golden") else {
        return;
    };
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let hex = line.split_whitespace().next().unwrap();
            let mut frame: Vec<u8> = (0..hex.len())
                .step_by(2)
                .map(|k| u8::from_str_radix(&hex[k..k + 2], 16).unwrap())
                .collect();
            let at = format!("{}: {}", path.display(), &line[hex.len()..]);
            let (net, p) = IpUdp::split_frame(&frame).unwrap();
            assert!(verify_packet(&c, &net, p, IcrcFlavor::Rxe), "{at}: ICRC");
            // The last byte before the ICRC is covered: flipped, the ICRC
            // through the same CRC fails.
            let end = net.ip_bytes().len() + 8 + p.len();
            frame[end - 5] ^= 0x10;
            let (net, p) = IpUdp::split_frame(&frame).unwrap();
            assert!(
                !verify_packet(&c, &net, p, IcrcFlavor::Rxe),
                "{at}: a flipped byte verified"
            );
            n += 1;
        }
    }
    assert!(n >= 50, "only {n} golden frames");
}
