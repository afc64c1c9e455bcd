// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel module's carry-less-multiply CRC (include/rrxe/rrxe_crc_clmul.h)
 * built for the host, for tests/clmul.rs: reads records from stdin (crc and
 * length as two little-endian u32, then the bytes, placed at the offset the
 * third u32 says within a 16-byte-aligned buffer) and writes the CRC of each
 * as a little-endian u32. The tail under 16 bytes goes through a bytewise
 * table here; the module passes crc32_le.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint32_t tab[256];

static uint32_t tail(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--)
		crc = tab[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

#define RRXE_CRC_TAIL(crc, p, len) tail(crc, p, len)
#include <rrxe/rrxe_crc_clmul.h>

int main(void)
{
	static uint8_t buf[(1 << 17) + 32] __attribute__((aligned(16)));
	uint32_t h[3];

	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
		tab[i] = c;
	}
	while (fread(h, sizeof(h), 1, stdin) == 1) {
		uint32_t crc;

		if (h[1] > (1 << 17) || h[2] > 16 || fread(buf + h[2], 1, h[1], stdin) != h[1])
			return 2;
		crc = rrxe_crc32_clmul(h[0], buf + h[2], h[1]);
		if (fwrite(&crc, sizeof(crc), 1, stdout) != 1 || fflush(stdout))
			return 3;
	}
	return 0;
}
