// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel module's carry-less-multiply CRC (include/rrxe/rrxe_crc_clmul.h)
 * built for the host, for tests/clmul.rs: reads records from stdin (crc and
 * length as two little-endian u32, then the bytes, placed at the offset the
 * third u32 says within a 16-byte-aligned buffer) and writes the CRC of each
 * as a little-endian u32. The tail under 16 bytes goes through a bytewise
 * table here; the module passes crc32_le.
 *
 * Bit 8 of the third u32 asks for the fold's copy (rrxe_crc32_clmul_copy),
 * bit 9 for the tables' (include/rrxe/rrxe_crc_copy.h): the bytes are
 * copied to a second buffer at another alignment, and a second u32 follows
 * the CRC: 1 if the copy equals the source and the bytes around it are
 * untouched, else 0.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* What the kernel gives the shared headers. */
typedef uint8_t u8;
typedef uint32_t u32;
typedef uint64_t u64;
#ifndef __always_inline /* glibc's cdefs.h has it */
#define __always_inline inline __attribute__((always_inline))
#endif
#define __aligned(x) __attribute__((aligned(x)))

static uint32_t tab[256];

static uint32_t tail(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--)
		crc = tab[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

#define RRXE_CRC_TAIL(crc, p, len) tail(crc, p, len)
#include <rrxe/rrxe_crc_clmul.h>
#include <rrxe/rrxe_crc_copy.h>
#include <string.h>

static uint32_t tab8[8][256];

int main(void)
{
	static uint8_t buf[(1 << 17) + 32] __attribute__((aligned(16)));
	static uint8_t out[(1 << 17) + 64] __attribute__((aligned(16)));
	uint32_t h[3];

	rrxe_crc_copy_tables(tab8);

	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
		tab[i] = c;
	}
	while (fread(h, sizeof(h), 1, stdin) == 1) {
		uint32_t crc;

		uint32_t mode = h[2] & 0x300, align = h[2] & 0xff, ok = 1;
		/* The copy's destination: another alignment, guarded each side. */
		uint32_t dalign = 16 + (align * 7 + 3) % 16;

		if (h[1] > (1 << 17) || align > 16 || fread(buf + align, 1, h[1], stdin) != h[1])
			return 2;
		if (!mode) {
			crc = rrxe_crc32_clmul(h[0], buf + align, h[1]);
		} else {
			memset(out, 0xa5, sizeof(out));
			if (mode == 0x100)
				crc = rrxe_crc32_clmul_copy(h[0], out + dalign, buf + align, h[1]);
			else
				crc = rrxe_crc32_copy(tab8, h[0], out + dalign, buf + align, h[1]);
			ok = !memcmp(out + dalign, buf + align, h[1]);
			for (uint32_t i = 0; i < dalign; i++)
				ok &= out[i] == 0xa5;
			for (uint32_t i = dalign + h[1]; i < h[1] + 64 && i < sizeof(out); i++)
				ok &= out[i] == 0xa5;
		}
		if (fwrite(&crc, sizeof(crc), 1, stdout) != 1)
			return 3;
		if (mode && fwrite(&ok, sizeof(ok), 1, stdout) != 1)
			return 3;
		if (fflush(stdout))
			return 3;
	}
	return 0;
}
