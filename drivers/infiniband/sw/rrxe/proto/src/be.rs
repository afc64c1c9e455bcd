// SPDX-License-Identifier: GPL-2.0

//! Big-endian field access: the one place where byte order is handled.
//!
//! Every multi-byte field of the IBA transport headers and of the outer
//! IP/UDP headers is big-endian ("network order") on the wire. The header
//! views in [`super::hdr`] and [`super::net`] read and write through these
//! functions only.
//!
//! The functions are total: a view checks its length once when it is made,
//! so its reads are always in range, but should a caller ever pass an offset
//! outside the buffer, a read yields `0` and a write is dropped instead of
//! panicking (a panic in the kernel is an Oops).

/// Copies `N` bytes at `off` out of `buf`; zeroes if out of range.
#[inline(always)]
fn take<const N: usize>(buf: &[u8], off: usize) -> [u8; N] {
    let mut out = [0u8; N];
    if let Some(src) = buf.get(off..off.saturating_add(N)) {
        for (o, s) in out.iter_mut().zip(src) {
            *o = *s;
        }
    }
    out
}

/// Stores `val` at `off` in `buf`; does nothing if out of range.
#[inline(always)]
fn put<const N: usize>(buf: &mut [u8], off: usize, val: [u8; N]) {
    if let Some(dst) = buf.get_mut(off..off.saturating_add(N)) {
        for (d, s) in dst.iter_mut().zip(val) {
            *d = s;
        }
    }
}

/// Reads the byte at `off` (0 if out of range).
#[inline(always)]
pub fn u8_at(buf: &[u8], off: usize) -> u8 {
    buf.get(off).copied().unwrap_or(0)
}

/// Writes the byte at `off` (dropped if out of range).
#[inline(always)]
pub fn set_u8(buf: &mut [u8], off: usize, val: u8) {
    if let Some(b) = buf.get_mut(off) {
        *b = val;
    }
}

/// Reads a big-endian `u16` at `off` (0 if out of range).
#[inline(always)]
pub fn u16_at(buf: &[u8], off: usize) -> u16 {
    u16::from_be_bytes(take(buf, off))
}

/// Writes a big-endian `u16` at `off` (dropped if out of range).
#[inline(always)]
pub fn set_u16(buf: &mut [u8], off: usize, val: u16) {
    put(buf, off, val.to_be_bytes());
}

/// Reads a big-endian `u32` at `off` (0 if out of range).
#[inline(always)]
pub fn u32_at(buf: &[u8], off: usize) -> u32 {
    u32::from_be_bytes(take(buf, off))
}

/// Writes a big-endian `u32` at `off` (dropped if out of range).
#[inline(always)]
pub fn set_u32(buf: &mut [u8], off: usize, val: u32) {
    put(buf, off, val.to_be_bytes());
}

/// Reads a big-endian `u64` at `off` (0 if out of range).
#[inline(always)]
pub fn u64_at(buf: &[u8], off: usize) -> u64 {
    u64::from_be_bytes(take(buf, off))
}

/// Writes a big-endian `u64` at `off` (dropped if out of range).
#[inline(always)]
pub fn set_u64(buf: &mut [u8], off: usize, val: u64) {
    put(buf, off, val.to_be_bytes());
}

/// Reads the 4 bytes at `off` unchanged, in wire order.
#[inline(always)]
pub fn bytes4_at(buf: &[u8], off: usize) -> [u8; 4] {
    take(buf, off)
}

/// Writes 4 bytes at `off` unchanged, in wire order.
#[inline(always)]
pub fn set_bytes4(buf: &mut [u8], off: usize, val: [u8; 4]) {
    put(buf, off, val);
}

/// Reads the bits `mask` of the big-endian `u32` at `off`, shifted down so
/// that the lowest bit of `mask` becomes bit 0.
#[inline(always)]
pub fn bits32_at(buf: &[u8], off: usize, mask: u32) -> u32 {
    (u32_at(buf, off) & mask).wrapping_shr(mask.trailing_zeros())
}

/// Replaces the bits `mask` of the big-endian `u32` at `off` with `val`
/// (shifted up to the lowest bit of `mask`); other bits are kept. Bits of
/// `val` that do not fit in `mask` are dropped.
#[inline(always)]
pub fn set_bits32(buf: &mut [u8], off: usize, mask: u32, val: u32) {
    let old = u32_at(buf, off);
    let new = (old & !mask) | (val.wrapping_shl(mask.trailing_zeros()) & mask);
    set_u32(buf, off, new);
}

/// Reads the bits `mask` of the byte at `off`, shifted down to bit 0.
#[inline(always)]
pub fn bits8_at(buf: &[u8], off: usize, mask: u8) -> u8 {
    (u8_at(buf, off) & mask).wrapping_shr(mask.trailing_zeros())
}

/// Replaces the bits `mask` of the byte at `off` with `val`; other bits are
/// kept, bits of `val` that do not fit are dropped.
#[inline(always)]
pub fn set_bits8(buf: &mut [u8], off: usize, mask: u8, val: u8) {
    let old = u8_at(buf, off);
    let new = (old & !mask) | (val.wrapping_shl(mask.trailing_zeros()) & mask);
    set_u8(buf, off, new);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_order() {
        let mut b = [0u8; 12];
        set_u16(&mut b, 0, 0x1234);
        set_u32(&mut b, 2, 0x5678_9abc);
        assert_eq!(&b[..6], &[0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc]);
        set_u64(&mut b, 4, 0x0102_0304_0506_0708);
        assert_eq!(&b[4..], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(u64_at(&b, 4), 0x0102_0304_0506_0708);
        assert_eq!(u16_at(&b, 0), 0x1234);
        assert_eq!(u32_at(&b, 4), 0x0102_0304);
    }

    #[test]
    fn out_of_range_is_harmless() {
        let mut b = [0xaau8; 3];
        assert_eq!(u32_at(&b, 0), 0);
        assert_eq!(u16_at(&b, 2), 0);
        assert_eq!(u64_at(&b, usize::MAX), 0);
        assert_eq!(u8_at(&b, 3), 0);
        set_u32(&mut b, 0, 0xffff_ffff);
        set_u16(&mut b, usize::MAX - 1, 1);
        set_u8(&mut b, 3, 1);
        assert_eq!(b, [0xaa; 3]);
    }

    #[test]
    fn bit_fields() {
        let mut b = [0xffu8; 4];
        set_bits32(&mut b, 0, 0x00ff_ffff, 0x12_3456);
        assert_eq!(b, [0xff, 0x12, 0x34, 0x56]);
        assert_eq!(bits32_at(&b, 0, 0x00ff_ffff), 0x12_3456);
        set_bits32(&mut b, 0, 0x00ff_ffff, 0xffff_ffff);
        assert_eq!(b, [0xff; 4]);
        set_bits8(&mut b, 1, 0x30, 2);
        assert_eq!(b[1], 0xef);
        assert_eq!(bits8_at(&b, 1, 0x30), 2);
    }
}
