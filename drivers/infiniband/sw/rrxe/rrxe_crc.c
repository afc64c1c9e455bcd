// SPDX-License-Identifier: GPL-2.0
/*
 * The carry-less-multiply CRC-32 of the ICRC (include/rrxe/rrxe_crc_clmul.h),
 * compiled with SSE and PCLMULQDQ enabled (Kbuild). This file holds nothing
 * else: the compiler may use SSE registers anywhere in it, so it is only
 * called between kernel_fpu_begin() and kernel_fpu_end()
 * (rrxe_helper_crc32 in rrxe_helpers.c).
 */
#include <linux/types.h>
#include <linux/crc32.h>
#include <rrxe/rrxe_helpers.h>

#define RRXE_CRC_TAIL(crc, p, len) crc32_le(crc, p, len)
#include <rrxe/rrxe_crc_clmul.h>

u32 rrxe_crc32_clmul_fpu(u32 crc, const u8 *p, size_t len)
{
	return rrxe_crc32_clmul(crc, p, len);
}

u32 rrxe_crc32_clmul_copy_fpu(u32 crc, u8 *dst, const u8 *src, size_t len)
{
	return rrxe_crc32_clmul_copy(crc, dst, src, len);
}
