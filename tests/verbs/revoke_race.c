// SPDX-License-Identifier: GPL-2.0
/*
 * A grant taken away while a peer is using it: once ibv_dealloc_mw has
 * returned, the WRITE in progress through that window may place at most
 * the packet being placed as it happened, not the rest of a batch. On an
 * RC pair of a device connected to itself, 1 KiB path MTU (rc_pair.h).
 *
 *   revoke_race DEVICE [GID_INDEX]
 *
 * Each round: a type 1 window over a zeroed 1 MiB buffer (remote write),
 * a 1 MiB WRITE of 0xff through it; once the first 256 KiB have landed,
 * the window is deallocated. The bytes land in order, so how far they
 * reach is a high-water mark: h1 just after ibv_dealloc_mw returned, h2
 * once the WRITE has completed (in error, or whole if it was done
 * first).
 *
 *   revoke/dealloc-mw-stops-writes  in no round does h2 pass h1 by more
 *                                   than 2 KiB (two packets: the one
 *                                   being placed, and one that may land
 *                                   while h1 is read);
 *   revoke/raced                    in at least one round the dealloc
 *                                   came while the WRITE was under way
 *                                   (it completed with REM_ACCESS_ERR),
 *                                   so that the first check had a race
 *                                   to judge.
 *
 * Prints one line per check, "PASS name" or "FAIL name: why", and "DONE"
 * last; exits non-zero if a check failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "check.h"
#include "rc_pair.h"

#define LEN (1u << 20)
#define ROUNDS 40
#define SLACK 2048u

static int bind_window(struct pair *p, struct ibv_mw *mw, struct ibv_mr *mr, void *buf)
{
	struct ibv_mw_bind bind = {
		.wr_id = 9, .send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = mr, .addr = (uintptr_t)buf, .length = LEN,
			       .mw_access_flags = IBV_ACCESS_REMOTE_WRITE },
	};
	struct ibv_wc wc;

	if (ibv_bind_mw(p->resp, mw, &bind))
		return -1;
	return pair_wait(p->rcq, &wc) == IBV_WC_SUCCESS ? 0 : -1;
}

int main(int argc, char **argv)
{
	const char *dev = argc > 1 ? argv[1] : "rrxe0";
	int gid_index = argc > 2 ? atoi(argv[2]) : 1;
	union ibv_gid gid;
	struct ibv_context *ctx;
	struct ibv_pd *pd = NULL;
	struct ibv_mr *src_mr = NULL, *mr = NULL;
	uint8_t *src = NULL, *buf = NULL;
	uint32_t worst = 0, raced = 0, rounds = 0;
	const char *why = NULL;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ctx = open_dev_gid(dev, gid_index, &gid);
	if (ctx)
		pd = ibv_alloc_pd(ctx);
	src = malloc(LEN);
	buf = malloc(LEN);
	if (pd && src && buf) {
		memset(src, 0xff, LEN);
		src_mr = ibv_reg_mr(pd, src, LEN, PAIR_ACCESS);
		mr = ibv_reg_mr(pd, buf, LEN, PAIR_ACCESS | IBV_ACCESS_MW_BIND);
	}
	if (!src_mr || !mr) {
		fail("setup", "device, PD or MRs: %s", strerror(errno));
		printf("DONE\n");
		return 1;
	}
	for (int r = 0; r < ROUNDS && !why; r++) {
		struct ibv_sge s = { .addr = (uintptr_t)src, .length = LEN, .lkey = src_mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;
		struct timespec t0, t;
		struct ibv_mw *mw;
		struct ibv_wc wc;
		struct pair p;
		uint32_t h1, h2;
		int st;

		if (pair_open(&p, ctx, &gid, gid_index, pd, pd, 1, "setup")) {
			why = "pair";
			break;
		}
		memset(buf, 0, LEN);
		mw = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
		if (!mw || bind_window(&p, mw, mr, buf)) {
			why = "alloc or bind of the window failed";
			pair_close(&p);
			break;
		}
		wr.wr.rdma.remote_addr = (uintptr_t)buf;
		wr.wr.rdma.rkey = mw->rkey;
		if (ibv_post_send(p.req, &wr, &bad)) {
			why = "ibv_post_send failed";
			pair_close(&p);
			break;
		}
		clock_gettime(CLOCK_MONOTONIC, &t0);
		while (!((volatile uint8_t *)buf)[LEN / 4]) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			if (t.tv_sec - t0.tv_sec > 10)
				break;
		}
		if (ibv_dealloc_mw(mw)) {
			why = "ibv_dealloc_mw failed";
			pair_close(&p);
			break;
		}
		h1 = pair_high_water(buf, LEN);
		st = pair_wait(p.cq, &wc);
		h2 = pair_high_water(buf, LEN);
		pair_close(&p);
		rounds++;
		if (st == IBV_WC_REM_ACCESS_ERR)
			raced++;
		else if (st != IBV_WC_SUCCESS) {
			why = st_str(st);
			break;
		}
		if (h2 - h1 > worst)
			worst = h2 - h1;
	}
	if (why) {
		fail("revoke/dealloc-mw-stops-writes", "round %u: %s", rounds + 1, why);
	} else {
		check("revoke/dealloc-mw-stops-writes", worst <= SLACK,
		      "up to %u bytes landed after ibv_dealloc_mw returned (want at most %u)", worst, SLACK);
		check("revoke/raced", raced > 0, "no round's dealloc came while its WRITE was under way");
		printf("# revoke: %u rounds, %u raced, at most %u bytes after the dealloc\n", rounds, raced, worst);
	}
	ibv_dereg_mr(mr);
	ibv_dereg_mr(src_mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(src);
	free(buf);
	printf("DONE\n");
	return failures ? 1 : 0;
}
