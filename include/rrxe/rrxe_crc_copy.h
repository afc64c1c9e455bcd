/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CRC-32 (the ICRC's: reflected polynomial 0xEDB88320, no pre- or
 * post-inversion, crc32_le's semantics) of bytes copied in the same pass:
 * slice-by-8, each 8 bytes loaded once, stored at the destination and
 * folded through eight 256-entry tables (table k: the CRC of a byte
 * followed by k zero bytes). The copy and CRC of the wire path's
 * transmit, where the CPU has no carry-less multiply or it measured
 * slower (datapath.md, "Copy and CRC in one pass").
 *
 * Header only, with no includes, so that the kernel module
 * (rrxe_helpers.c) and the host tests (proto/tests/clmul, against the
 * portable reference) compile the same code. The includer provides
 * u8, u32, u64 and size_t (as the kernel defines them). Little-endian
 * loads: on a big-endian build the copy goes a byte at a time.
 */
#ifndef RRXE_CRC_COPY_H
#define RRXE_CRC_COPY_H

#define RRXE_CRC_POLY 0xEDB88320u

/* Fills the slice-by-8 tables. */
static inline void rrxe_crc_copy_tables(u32 t[8][256])
{
	u32 i, c;
	int k;

	for (i = 0; i < 256; i++) {
		c = i;
		for (k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ RRXE_CRC_POLY : c >> 1;
		t[0][i] = c;
	}
	for (k = 1; k < 8; k++)
		for (i = 0; i < 256; i++)
			t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xff];
}

/*
 * The CRC of len bytes at src, continuing from crc, copying them to dst
 * in the same pass (no overlap).
 */
static inline u32 rrxe_crc32_copy(const u32 t[8][256], u32 crc, u8 *dst,
				  const u8 *src, size_t len)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	for (; len >= 8; len -= 8, src += 8, dst += 8) {
		u64 q;
		u32 lo, hi;

		__builtin_memcpy(&q, src, 8);
		__builtin_memcpy(dst, &q, 8);
		lo = (u32)q ^ crc;
		hi = (u32)(q >> 32);
		crc = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^
		      t[4][lo >> 24] ^ t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^
		      t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
	}
#endif
	for (; len; len--) {
		u8 b = *src++;

		*dst++ = b;
		crc = t[0][(crc ^ b) & 0xff] ^ (crc >> 8);
	}
	return crc;
}

#endif
