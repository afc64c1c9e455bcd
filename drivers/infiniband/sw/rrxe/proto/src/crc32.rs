// SPDX-License-Identifier: GPL-2.0

//! The CRC-32 step the ICRC is built on, as a parameter.
//!
//! The ICRC of IBA Annex A17 is the Ethernet CRC-32 (polynomial 0x04C11DB7,
//! bit-reflected: 0xEDB88320). The kernel already has fast implementations
//! of that CRC (`crc32_le`, with PCLMULQDQ or similar where the CPU has it),
//! so [`super::icrc`] does not hard-wire one: it is generic over [`Crc32`].
//! The kernel passes a zero-sized type whose `update` calls `crc32_le`; the
//! host and the tests pass [`TableCrc32`], a portable slice-by-8 table
//! implementation usable in `no_std` (8 KiB of tables built at compile
//! time).
//!
//! `update` has the semantics of the kernel's `crc32_le(crc, p, len)`: the
//! running value goes in and comes out as is, with no implicit inversion
//! before or after. The classic zlib `crc32(data)` equals
//! `!update(!0, data)`.

/// One step of the reflected CRC-32 (poly 0xEDB88320), like the kernel's
/// `crc32_le`.
pub trait Crc32 {
    /// Continues the CRC `crc` over `data` and returns the new value, with
    /// no pre- or post-inversion.
    fn update(&self, crc: u32, data: &[u8]) -> u32;

    /// Whether `update` computes anything. A step that does not (a
    /// receive path that trusts a packet's ICRC) lets the ICRC skip the
    /// work done only to feed it, such as building the masked headers.
    fn computes(&self) -> bool {
        true
    }

    /// The state `crc` continued over `n` zero bytes: `crc` times
    /// x^(8n) mod P (the kernel's `crc32_le_shift`). By the CRC's
    /// linearity, `update(s, b)` is `shift(s, b.len()) ^ update(0, b)`:
    /// what lets bytes folded apart (from 0) be put after a state
    /// ([`super::icrc::Icrc::append`]).
    fn shift(&self, crc: u32, n: usize) -> u32 {
        shift(crc, n)
    }
}

impl<T: Crc32 + ?Sized> Crc32 for &T {
    #[inline]
    fn update(&self, crc: u32, data: &[u8]) -> u32 {
        (**self).update(crc, data)
    }

    #[inline]
    fn shift(&self, crc: u32, n: usize) -> u32 {
        (**self).shift(crc, n)
    }

    #[inline]
    fn computes(&self) -> bool {
        (**self).computes()
    }
}

/// The reflected CRC-32 polynomial.
pub const POLY: u32 = 0xEDB8_8320;

/// `a` times `b` modulo P, both bit-reflected (bit 31 is x^0).
fn mul_mod_p(a: u32, mut b: u32) -> u32 {
    let mut p = 0;
    let mut m = 1u32 << 31;
    while m != 0 {
        if a & m != 0 {
            p ^= b;
        }
        m >>= 1;
        b = if b & 1 != 0 { (b >> 1) ^ POLY } else { b >> 1 };
    }
    p
}

/// `crc` continued over `n` zero bytes, in O(log n) steps: `crc` times
/// x^(8n) mod P, from the squares x^(2^k) (see [`Crc32::shift`]).
pub fn shift(crc: u32, n: usize) -> u32 {
    // x^8, bit-reflected; squared at each bit of `n`.
    let mut sq = mul_mod_p(1 << 23, 1 << 31);
    let mut x = 1u32 << 31;
    let mut n = n;
    while n != 0 {
        if n & 1 != 0 {
            x = mul_mod_p(sq, x);
        }
        sq = mul_mod_p(sq, sq);
        n >>= 1;
    }
    mul_mod_p(x, crc)
}

/// The slice-by-8 tables: `TABLES[0]` is the classic byte table, and
/// `TABLES[k][n]` is the CRC of byte `n` followed by `k` zero bytes.
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
const fn make_tables() -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut n = 0;
    while n < 256 {
        let mut c = n as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
            k += 1;
        }
        t[0][n] = c;
        n += 1;
    }
    let mut k = 1;
    while k < 8 {
        let mut n = 0;
        while n < 256 {
            let prev = t[k - 1][n];
            t[k][n] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            n += 1;
        }
        k += 1;
    }
    t
}

static TABLES: [[u32; 256]; 8] = make_tables();

/// Looks up table `k` at the low byte of `i`.
#[inline(always)]
#[allow(clippy::indexing_slicing)]
fn t<const K: usize>(i: u32) -> u32 {
    // `K` is below 8 at every call site and `i as u8` below 256: both
    // indices are in range by type, so this cannot panic (and the compiler
    // emits no bounds check).
    TABLES[K][usize::from(i as u8)]
}

/// Portable table-driven CRC-32 (slice-by-8), for the host and for any
/// build without a faster `crc32_le`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TableCrc32;

impl TableCrc32 {
    /// Continues `crc` over `data` one byte at a time (the reference the
    /// sliced loop is checked against).
    pub fn update_bytewise(crc: u32, data: &[u8]) -> u32 {
        data.iter()
            .fold(crc, |c, &b| (c >> 8) ^ t::<0>(c ^ u32::from(b)))
    }
}

impl Crc32 for TableCrc32 {
    fn update(&self, crc: u32, data: &[u8]) -> u32 {
        let mut c = crc;
        let chunks = data.chunks_exact(8);
        let rest = chunks.remainder();
        for chunk in chunks {
            if let &[b0, b1, b2, b3, b4, b5, b6, b7] = chunk {
                let lo = c ^ u32::from_le_bytes([b0, b1, b2, b3]);
                let hi = u32::from_le_bytes([b4, b5, b6, b7]);
                c = t::<7>(lo)
                    ^ t::<6>(lo >> 8)
                    ^ t::<5>(lo >> 16)
                    ^ t::<4>(lo >> 24)
                    ^ t::<3>(hi)
                    ^ t::<2>(hi >> 8)
                    ^ t::<1>(hi >> 16)
                    ^ t::<0>(hi >> 24);
            }
        }
        Self::update_bytewise(c, rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bit-at-a-time CRC-32, straight from the definition.
    fn bitwise(mut crc: u32, data: &[u8]) -> u32 {
        for &b in data {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 != 0 {
                    (crc >> 1) ^ POLY
                } else {
                    crc >> 1
                };
            }
        }
        crc
    }

    #[test]
    fn check_value() {
        // The CRC-32 check value of "123456789" (zlib/Ethernet).
        let c = !TableCrc32.update(!0, b"123456789");
        assert_eq!(c, 0xCBF4_3926);
    }

    #[test]
    fn matches_bitwise_and_zlib_at_every_length_and_seed() {
        let data: Vec<u8> = (0..300u32).map(|i| (i * 131 + 7) as u8).collect();
        for seed in [0u32, !0, 0xdebb_20e3, 0x1234_5678] {
            for len in 0..data.len() {
                for start in [0usize, 1, 3, 7] {
                    if start > len {
                        continue;
                    }
                    let d = &data[start..len];
                    let want = bitwise(seed, d);
                    assert_eq!(TableCrc32.update(seed, d), want, "len {len} seed {seed:x}");
                    assert_eq!(TableCrc32::update_bytewise(seed, d), want);
                }
            }
        }
        let d = &data[..];
        let mut h = crc32fast::Hasher::new();
        h.update(d);
        assert_eq!(!TableCrc32.update(!0, d), h.finalize());
    }

    #[test]
    fn streaming_equals_one_shot() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i ^ (i >> 3)) as u8).collect();
        let whole = TableCrc32.update(!0, &data);
        for cut in [0, 1, 7, 8, 9, 500, 999, 1000] {
            let (a, b) = data.split_at(cut);
            assert_eq!(TableCrc32.update(TableCrc32.update(!0, a), b), whole);
        }
    }

    #[test]
    fn shift_is_zeros_and_puts_a_part_after_a_state() {
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 37 ^ (i >> 5)) as u8).collect();
        for seed in [0u32, !0, 0xdebb_20e3, 1, 0x8000_0000] {
            for n in [0usize, 1, 2, 3, 7, 8, 63, 64, 1000, 4096, 4999] {
                let zeros = vec![0u8; n];
                assert_eq!(
                    shift(seed, n),
                    TableCrc32.update(seed, &zeros),
                    "{seed:x} {n}"
                );
                let (a, b) = data.split_at(n);
                let whole = TableCrc32.update(seed, &data);
                let sa = TableCrc32.update(seed, a);
                assert_eq!(
                    TableCrc32.shift(sa, b.len()) ^ TableCrc32.update(0, b),
                    whole
                );
            }
        }
    }

    #[test]
    fn reference_impl_via_trait_object() {
        let c: &dyn Crc32 = &TableCrc32;
        assert_eq!((&c).update(!0, b"abc"), TableCrc32.update(!0, b"abc"));
    }
}
