/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CRC-32 (the ICRC's: reflected polynomial 0xEDB88320, no pre- or
 * post-inversion, crc32_le's semantics) folded with the carry-less multiply
 * (PCLMULQDQ), for x86-64.
 *
 * Four 128-bit lanes are folded over 64 bytes at a time (by x^544 and
 * x^480 mod P), then into one lane (x^160, x^96), each further 16 bytes
 * folded into it, and the 128 bits reduced to 64 (x^64), to 32 and by
 * Barrett reduction (P and floor(x^64 / P)); every constant bit-reflected.
 * This is the method of Intel's "Fast CRC Computation for Generic
 * Polynomials Using PCLMULQDQ".
 *
 * rrxe_crc32_clmul_copy() is the same fold that also stores each 16 bytes
 * it loads at a destination: a copy and its CRC in one pass (the wire
 * path's transmit, datapath.md "Copy and CRC in one pass").
 *
 * Header only, with no includes, so that the kernel module
 * (drivers/infiniband/sw/rrxe/rrxe_crc.c, inside a kernel FPU section) and
 * the host tests (proto/, against the portable reference) compile the same
 * code. The includer provides u8, u32, u64, size_t, __always_inline and
 * __aligned (as the kernel defines them), and
 * RRXE_CRC_TAIL(crc, p, len), the table CRC for what is left under 16
 * bytes (and for buffers under 64). Compiled with PCLMULQDQ and SSE
 * enabled; GCC's and clang's vector extensions and
 * __builtin_ia32_pclmulqdq128 only, no intrinsics headers.
 */
#ifndef RRXE_CRC_CLMUL_H
#define RRXE_CRC_CLMUL_H

typedef long long rrxe_v2di __attribute__((vector_size(16)));
typedef long long rrxe_v2di_u __attribute__((vector_size(16))) __aligned(1);

/*
 * x's low half times k's low half, xor x's high half times k's high half,
 * xor d: x folded forward by k onto d.
 */
static inline rrxe_v2di rrxe_clmul_fold(rrxe_v2di x, rrxe_v2di k, rrxe_v2di d)
{
	return __builtin_ia32_pclmulqdq128(x, k, 0x00) ^
	       __builtin_ia32_pclmulqdq128(x, k, 0x11) ^ d;
}

static inline rrxe_v2di rrxe_clmul_load(const u8 *p)
{
	return (rrxe_v2di)*(const rrxe_v2di_u *)p;
}

/* The next 16 bytes at p, also stored at dst if it is not NULL. */
static __always_inline rrxe_v2di rrxe_clmul_take(const u8 *p, u8 *dst)
{
	rrxe_v2di v = rrxe_clmul_load(p);

	if (dst)
		*(rrxe_v2di_u *)dst = (rrxe_v2di_u)v;
	return v;
}

/*
 * The CRC of len bytes at p, continuing from crc; if dst is not NULL the
 * bytes are also copied there as they are folded (each read once). dst
 * and p must not overlap. Always inlined: each of the two callers below
 * gets its own loop, with the test of dst folded away.
 */
static __always_inline u32
rrxe_crc32_clmul_do(u32 crc, u8 *dst, const u8 *p, size_t len)
{
	/*
	 * k12: x^(4*128+32), x^(4*128-32); k34: x^(128+32), x^(128-32);
	 * k5: x^64; pmu: P, floor(x^64 / P).
	 */
	const rrxe_v2di k12 = { 0x0154442bd4ll, 0x01c6e41596ll };
	const rrxe_v2di k34 = { 0x01751997d0ll, 0x00ccaa009ell };
	const rrxe_v2di k5 = { 0x0163cd6124ll, 0 };
	const rrxe_v2di pmu = { 0x01db710641ll, 0x01f7011641ll };
	const rrxe_v2di m32 = { 0xffffffffll, 0 };
	rrxe_v2di x0, x1, x2, x3, y;
	u64 lo, hi;
	size_t i;

	if (len < 64)
		goto tail;
	x0 = rrxe_clmul_take(p, dst) ^ (rrxe_v2di){ (long long)crc, 0 };
	x1 = rrxe_clmul_take(p + 16, dst ? dst + 16 : dst);
	x2 = rrxe_clmul_take(p + 32, dst ? dst + 32 : dst);
	x3 = rrxe_clmul_take(p + 48, dst ? dst + 48 : dst);
	for (p += 64, dst = dst ? dst + 64 : dst, len -= 64; len >= 64;
	     p += 64, dst = dst ? dst + 64 : dst, len -= 64) {
		x0 = rrxe_clmul_fold(x0, k12, rrxe_clmul_take(p, dst));
		x1 = rrxe_clmul_fold(x1, k12, rrxe_clmul_take(p + 16, dst ? dst + 16 : dst));
		x2 = rrxe_clmul_fold(x2, k12, rrxe_clmul_take(p + 32, dst ? dst + 32 : dst));
		x3 = rrxe_clmul_fold(x3, k12, rrxe_clmul_take(p + 48, dst ? dst + 48 : dst));
	}
	/* The four lanes into one, then each further 16 bytes. */
	x0 = rrxe_clmul_fold(x0, k34, x1);
	x0 = rrxe_clmul_fold(x0, k34, x2);
	x0 = rrxe_clmul_fold(x0, k34, x3);
	for (; len >= 16; p += 16, dst = dst ? dst + 16 : dst, len -= 16)
		x0 = rrxe_clmul_fold(x0, k34, rrxe_clmul_take(p, dst));
	/* 128 bits to 64: the low half times x^96, onto the high half. */
	y = __builtin_ia32_pclmulqdq128(x0, k34, 0x10);
	x0 = (rrxe_v2di){ x0[1], 0 } ^ y;
	/* 64 to 32: the low 32 bits times x^64, onto the rest shifted down. */
	lo = (u64)x0[0];
	hi = (u64)x0[1];
	y = (rrxe_v2di){ (long long)((lo >> 32) | (hi << 32)), (long long)(hi >> 32) };
	x0 = __builtin_ia32_pclmulqdq128(x0 & m32, k5, 0x00) ^ y;
	/* Barrett: q = (low 32 bits * floor(x^64 / P)), crc = x0 ^ q * P. */
	y = __builtin_ia32_pclmulqdq128(x0 & m32, pmu, 0x10);
	y = __builtin_ia32_pclmulqdq128(y & m32, pmu, 0x00);
	crc = (u32)((u64)(x0 ^ y)[0] >> 32);
tail:
	/*
	 * The tail copied, then folded from the copy: each source byte is
	 * read once (the source may be written meanwhile, and the CRC must
	 * be that of the bytes stored).
	 */
	if (dst) {
		for (i = 0; i < len; i++)
			dst[i] = p[i];
		p = dst;
	}
	return RRXE_CRC_TAIL(crc, p, len);
}

/* The CRC of len bytes at p, continuing from crc. */
static inline u32 rrxe_crc32_clmul(u32 crc, const u8 *p, size_t len)
{
	return rrxe_crc32_clmul_do(crc, (u8 *)0, p, len);
}

/*
 * The CRC of len bytes at src, continuing from crc, copying them to dst
 * in the same pass (no overlap).
 */
static inline u32 rrxe_crc32_clmul_copy(u32 crc, u8 *dst, const u8 *src, size_t len)
{
	return rrxe_crc32_clmul_do(crc, dst, src, len);
}

#endif
