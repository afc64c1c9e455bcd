// SPDX-License-Identifier: GPL-2.0
/*
 * The machine's limit for a soft RoCE data path, measured in the bench
 * guest: what one CPU can copy and checksum in 4 KiB buffers.
 *
 *   limit [SECONDS [TSC_MHZ]]   time per figure (default 0.3; best of 3)
 *   limit now                   print "TSC CLOCK_MONOTONIC_ns" (the bench's
 *                               clock probe)
 *
 * With TSC_MHZ (the TSC rate measured on the host, where the clock is
 * sound) every figure is timed with the TSC at that rate: under TCG the
 * guest's TSC is the host's, while the guest's own clock may run slow (a
 * guest that could not calibrate its TSC keeps time with jiffies and loses
 * ticks when the host is busy). Without it, CLOCK_MONOTONIC_RAW times them.
 *
 * Prints key=value lines:
 *   memcpy_mibs        memcpy() of 4 KiB buffers walking a 4 MiB working set
 *   memcpy_hot_mibs    memcpy() of one 4 KiB buffer to another (cache hot)
 *   crc32_sb8_mibs     CRC-32 (crc32_le, poly 0xEDB88320) over 4 KiB buffers
 *                      walking the 4 MiB set, slice-by-8: the algorithm of
 *                      the kernel's lib/crc32.c with CONFIG_CRC32_SLICEBY8,
 *                      which is what crc32_le and the crypto API's
 *                      "crc32-generic" run in the bench kernel (it has no
 *                      CRYPTO_CRC32_PCLMUL). A user-space proxy: same
 *                      algorithm and tables, built by gcc -O2, not clang.
 *   crc32_clmul_mibs   the same CRC folded 64 bytes at a time with the
 *                      carry-less multiply (PCLMULQDQ; the method of Intel's
 *                      "Fast CRC Computation for Generic Polynomials Using
 *                      PCLMULQDQ", as the crypto API's crc32-pclmul), what
 *                      a hardware-speed ICRC would run; absent if the CPU
 *                      (or the emulated one) has no PCLMULQDQ
 *   crc32_zlib_mibs    zlib's crc32() on the same buffers, for comparison
 *                      (absent if built without zlib)
 *   crc32_check        ok if all the CRCs agree with each other and with
 *                      the CRC-32 check value of "123456789"
 *   tsc_mhz            the TSC rate measured against CLOCK_MONOTONIC_RAW
 *                      over 0.3 s (on the host: the rate the bench uses;
 *                      in the guest: TSC_MHZ / tsc_mhz is how fast the
 *                      guest's clock runs against real time)
 *   cpuinfo_mhz        the first "cpu MHz" of /proc/cpuinfo (0 when the
 *                      kernel could not calibrate the TSC: perftest, which
 *                      reads it, then prints 0 or inf)
 * MiB/s are 2^20 bytes per second of wall-clock time on one thread.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__has_include)
#if __has_include(<zlib.h>)
#include <zlib.h>
#define HAVE_ZLIB 1
#endif
#endif
#if defined(__x86_64__)
#include <x86intrin.h>
#include <immintrin.h>
#define HAVE_CLMUL 1
#endif

#define BUF 4096
#define SET (4u << 20)

static uint32_t tab[8][256];

static void crc_init(void)
{
	for (unsigned i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
		tab[0][i] = c;
	}
	for (unsigned i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			tab[t][i] = (tab[t - 1][i] >> 8) ^ tab[0][tab[t - 1][i] & 0xff];
}

/* crc32_le semantics: no pre- or post-inversion (the caller does that). */
static uint32_t crc32_sb8(uint32_t crc, const unsigned char *p, size_t len)
{
	while (len >= 8) {
		uint32_t lo, hi;

		memcpy(&lo, p, 4);
		memcpy(&hi, p + 4, 4);
		lo ^= crc;
		crc = tab[7][lo & 0xff] ^ tab[6][(lo >> 8) & 0xff] ^
		      tab[5][(lo >> 16) & 0xff] ^ tab[4][lo >> 24] ^
		      tab[3][hi & 0xff] ^ tab[2][(hi >> 8) & 0xff] ^
		      tab[1][(hi >> 16) & 0xff] ^ tab[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = tab[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

#ifdef HAVE_CLMUL
/*
 * crc32_sb8's result, four 128-bit lanes folded over 64 bytes at a time
 * (x^544 and x^480 mod P), then folded into one (x^160, x^96), reduced to
 * 64 bits (x^64) and 32 (Barrett with P and floor(x^64 / P)); all
 * constants bit-reflected. The tail under 16 bytes and buffers under 64
 * go through the tables.
 */
/* x folded by k (x's low half times k's low, high times high) into d. */
__attribute__((target("pclmul,sse4.1")))
static inline __m128i fold(__m128i x, __m128i k, __m128i d)
{
	return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), d);
}

__attribute__((target("pclmul,sse4.1")))
static uint32_t crc32_clmul(uint32_t crc, const unsigned char *p, size_t len)
{
	const __m128i k12 = _mm_set_epi64x(0x01c6e41596ll, 0x0154442bd4ll);
	const __m128i k34 = _mm_set_epi64x(0x00ccaa009ell, 0x01751997d0ll);
	const __m128i k5 = _mm_set_epi64x(0, 0x0163cd6124ll);
	const __m128i pmu = _mm_set_epi64x(0x01f7011641ll, 0x01db710641ll);
	const __m128i m32 = _mm_set_epi32(0, 0, 0, -1);
	__m128i x[4], y;

	if (len < 64)
		return crc32_sb8(crc, p, len);
	for (int i = 0; i < 4; i++)
		x[i] = _mm_loadu_si128((const __m128i *)(p + 16 * i));
	x[0] = _mm_xor_si128(x[0], _mm_cvtsi32_si128((int)crc));
	for (p += 64, len -= 64; len >= 64; p += 64, len -= 64)
		for (int i = 0; i < 4; i++)
			x[i] = fold(x[i], k12, _mm_loadu_si128((const __m128i *)(p + 16 * i)));
	/* The four lanes into one, then each further 16 bytes. */
	for (int i = 1; i < 4; i++)
		x[0] = fold(x[0], k34, x[i]);
	for (; len >= 16; p += 16, len -= 16)
		x[0] = fold(x[0], k34, _mm_loadu_si128((const __m128i *)p));
	/* 128 to 64 bits, 64 to 32, then Barrett. */
	y = _mm_clmulepi64_si128(x[0], k34, 0x10);
	x[0] = _mm_xor_si128(_mm_srli_si128(x[0], 8), y);
	y = _mm_srli_si128(x[0], 4);
	x[0] = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x[0], m32), k5, 0x00), y);
	y = _mm_clmulepi64_si128(_mm_and_si128(x[0], m32), pmu, 0x10);
	y = _mm_clmulepi64_si128(_mm_and_si128(y, m32), pmu, 0x00);
	crc = (uint32_t)_mm_extract_epi32(_mm_xor_si128(x[0], y), 1);
	return crc32_sb8(crc, p, len);
}

static int have_clmul(void)
{
	return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
}
#endif

static double tsc_hz;

static double now(void)
{
	struct timespec ts;

#if defined(__x86_64__)
	if (tsc_hz > 0)
		return __rdtsc() / tsc_hz;
#endif
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static volatile uint32_t sink;

enum kind { COPY, COPY_HOT, CRC_SB8, CRC_CLMUL, CRC_ZLIB };

/* MiB/s of one kind over `secs` seconds, 4 KiB at a time. */
static double run(enum kind k, unsigned char *src, unsigned char *dst, double secs)
{
	size_t off = 0, bytes = 0;
	uint32_t crc = 0;
	double t0 = now(), t;

	do {
		for (int i = 0; i < 256; i++) {
			switch (k) {
			case COPY:
				memcpy(dst + off, src + off, BUF);
				break;
			case COPY_HOT:
				memcpy(dst, src, BUF);
				/* keep the compiler from merging the copies */
				__asm__ volatile("" : : "r"(dst) : "memory");
				break;
			case CRC_SB8:
				crc = crc32_sb8(crc, src + off, BUF);
				break;
			case CRC_CLMUL:
#ifdef HAVE_CLMUL
				crc = crc32_clmul(crc, src + off, BUF);
#endif
				break;
			case CRC_ZLIB:
#ifdef HAVE_ZLIB
				crc = crc32(crc, src + off, BUF);
#endif
				break;
			}
			off = (off + BUF) % SET;
			bytes += BUF;
		}
		t = now() - t0;
	} while (t < secs);
	sink = crc + dst[off];
	return bytes / t / 1048576.0;
}

static double best(enum kind k, unsigned char *src, unsigned char *dst, double secs)
{
	double b = 0;

	for (int i = 0; i < 3; i++) {
		double r = run(k, src, dst, secs);

		if (r > b)
			b = r;
	}
	return b;
}

int main(int argc, char **argv)
{
	double secs;
	unsigned char *src, *dst;
	const unsigned char check[] = "123456789";
	int ok;

	if (argc > 1 && strcmp(argv[1], "now") == 0) {
		struct timespec ts;
		unsigned long long tsc = 0;

#if defined(__x86_64__)
		tsc = __rdtsc();
#endif
		clock_gettime(CLOCK_MONOTONIC, &ts);
		printf("%llu %lld\n", tsc, (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
		return 0;
	}
	secs = argc > 1 ? atof(argv[1]) : 0.3;
	if (argc > 2)
		tsc_hz = atof(argv[2]) * 1e6;
	src = aligned_alloc(4096, SET);
	dst = aligned_alloc(4096, SET);
	if (!src || !dst || secs <= 0) {
		fprintf(stderr, "usage: limit [SECONDS [TSC_MHZ]] | limit now\n");
		return 2;
	}
	for (size_t i = 0; i < SET; i++)
		src[i] = (unsigned char)(i * 2654435761u >> 13);
	memset(dst, 0, SET);
	crc_init();

	/* crc32_le(~0, "123456789") ^ ~0 is the CRC-32 check value. */
	ok = (crc32_sb8(~0u, check, 9) ^ ~0u) == 0xCBF43926u;
#ifdef HAVE_ZLIB
	ok = ok && crc32(0, check, 9) == 0xCBF43926u &&
	     crc32(0, src, SET) == (crc32_sb8(~0u, src, SET) ^ ~0u);
#endif

#ifdef HAVE_CLMUL
	if (have_clmul()) {
		ok = ok && (crc32_clmul(~0u, check, 9) ^ ~0u) == 0xCBF43926u &&
		     crc32_clmul(~0u, src, SET) == crc32_sb8(~0u, src, SET);
		/* every length to 300 bytes, at every alignment to 16 */
		for (size_t n = 0; n <= 300; n++)
			for (size_t a = 0; a < 16; a++)
				ok = ok && crc32_clmul(0x1234u, src + a, n) == crc32_sb8(0x1234u, src + a, n);
	}
#endif

	printf("memcpy_mibs=%.1f\n", best(COPY, src, dst, secs));
	printf("memcpy_hot_mibs=%.1f\n", best(COPY_HOT, src, dst, secs));
	printf("crc32_sb8_mibs=%.1f\n", best(CRC_SB8, src, dst, secs));
#ifdef HAVE_CLMUL
	if (have_clmul())
		printf("crc32_clmul_mibs=%.1f\n", best(CRC_CLMUL, src, dst, secs));
#endif
#ifdef HAVE_ZLIB
	printf("crc32_zlib_mibs=%.1f\n", best(CRC_ZLIB, src, dst, secs));
#endif
	printf("crc32_check=%s\n", ok ? "ok" : "MISMATCH");

#if defined(__x86_64__)
	{
		double t0, t1;
		uint64_t c0, c1;

		tsc_hz = 0; /* against the clock */
		t0 = now();
		c0 = __rdtsc();
		do {
			t1 = now();
		} while (t1 - t0 < 0.3);
		c1 = __rdtsc();
		printf("tsc_mhz=%.1f\n", (c1 - c0) / (t1 - t0) / 1e6);
	}
#endif
	{
		FILE *f = fopen("/proc/cpuinfo", "r");
		char line[256];
		double mhz;

		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "cpu MHz : %lf", &mhz) == 1) {
				printf("cpuinfo_mhz=%.1f\n", mhz);
				break;
			}
		if (f)
			fclose(f);
	}
	return 0;
}
