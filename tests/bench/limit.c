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
 *   crc32_zlib_mibs    zlib's crc32() on the same buffers, for comparison
 *                      (absent if built without zlib)
 *   crc32_check        ok if both CRCs agree with each other and with the
 *                      CRC-32 check value of "123456789"
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

enum kind { COPY, COPY_HOT, CRC_SB8, CRC_ZLIB };

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

	printf("memcpy_mibs=%.1f\n", best(COPY, src, dst, secs));
	printf("memcpy_hot_mibs=%.1f\n", best(COPY_HOT, src, dst, secs));
	printf("crc32_sb8_mibs=%.1f\n", best(CRC_SB8, src, dst, secs));
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
