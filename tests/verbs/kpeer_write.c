// SPDX-License-Identifier: GPL-2.0
/*
 * A user QP writes into a kernel consumer's fast-registration MR.
 *
 *   kpeer_write DEV GID_INDEX
 *
 * Needs tests/kverbs' module loaded with peer=1 dev=DEV: a kernel RC QP of
 * DEV and an MR of two pages mapped in softirq context (as a kernel
 * consumer may map one in its completion handler), described in
 * /sys/kernel/debug/rrxe_kverbs/peer ("QPN RKEY IOVA LEN SEED"). This
 * program connects an RC QP to the kernel's (the module connects its QP
 * to ours when we write our QPN there), then RDMA WRITEs LEN bytes of
 * pat(SEED, i) into the MR. The packets are looped back with 1 KiB
 * payloads from a user MR, so they go without a copy: the responder
 * copies them into the kernel MR under the MR's lock, taking the sender's
 * zero-copy gate there. The module checks the bytes when "check" is
 * written (its result: peer/user-write-landed in "results"). Checks:
 *   user-write-completed   the WRITE completed with success;
 *   user-write-zero-copy   the device's sent_pkts_zcopy counter grew by
 *                          at least the WRITE's 1 KiB packets (else the
 *                          path under test was not taken).
 * The kernel log must hold no lockdep report (the VM harness, and
 * kverbs.sh's peer/no-lockdep-report).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "check.h"
#include "rc_pair.h"

#define PEER "/sys/kernel/debug/rrxe_kverbs/peer"

/* As tests/kverbs/rrxe_kverbs.c's pat(): every bit of i counts. */
static uint8_t pat(uint32_t s, uint64_t i)
{
	uint64_t h = (i + 1) * 0x9E3779B97F4A7C15ull ^ ((uint64_t)s << 32 | s);

	h ^= h >> 29;
	h *= 0xBF58476D1CE4E5B9ull;
	h ^= h >> 32;
	return (uint8_t)h;
}

int main(int argc, char **argv)
{
	const char *dev = argc > 1 ? argv[1] : "rrxe0";
	int gid_index = argc > 2 ? atoi(argv[2]) : 1;
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC, .sq_sig_all = 1,
		.cap = { .max_send_wr = 4, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	uint32_t kqpn, rkey, seed;
	uint64_t iova;
	unsigned long len;
	union ibv_gid gid;
	struct ibv_context *ctx;
	struct ibv_pd *pd = NULL;
	struct ibv_cq *cq = NULL;
	struct ibv_qp *qp = NULL;
	struct ibv_mr *mr = NULL;
	struct ibv_sge sge;
	struct ibv_send_wr wr = {}, *bad;
	struct ibv_wc wc;
	uint8_t *buf = NULL;
	long long z0, z1;
	FILE *f;
	int st, err;

	setvbuf(stdout, NULL, _IOLBF, 0);
	f = fopen(PEER, "r");
	if (!f || fscanf(f, "%" SCNu32 " %" SCNu32 " %" SCNu64 " %lu %" SCNu32, &kqpn, &rkey, &iova,
			 &len, &seed) != 5) {
		fail("setup", "cannot read %s: %s", PEER, strerror(errno));
		printf("DONE\n");
		return 1;
	}
	fclose(f);
	ctx = open_dev_gid(dev, gid_index, &gid);
	if (ctx)
		pd = ibv_alloc_pd(ctx);
	if (pd)
		cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	if (cq) {
		init.send_cq = init.recv_cq = cq;
		qp = ibv_create_qp(pd, &init);
	}
	if (posix_memalign((void **)&buf, 4096, len))
		buf = NULL;
	if (qp && buf)
		mr = ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE);
	if (!mr) {
		fail("setup", "device, PD, CQ, QP or MR: %s", strerror(errno));
		printf("DONE\n");
		return 1;
	}
	for (unsigned long i = 0; i < len; i++)
		buf[i] = pat(seed, i);
	err = pair_to_init(qp);
	f = err ? NULL : fopen(PEER, "w");
	if (!err && (!f || fprintf(f, "%u\n", qp->qp_num) < 0 || fclose(f))) {
		fail("setup", "cannot give the kernel QP our QPN: %s", strerror(errno));
		printf("DONE\n");
		return 1;
	}
	err = err ? err : pair_to_rts(qp, &gid, gid_index, kqpn);
	if (err) {
		fail("setup", "ibv_modify_qp: %s", strerror(err));
		printf("DONE\n");
		return 1;
	}
	z0 = zcopy_count(dev);
	sge = (struct ibv_sge){ .addr = (uintptr_t)buf, .length = len, .lkey = mr->lkey };
	wr.wr_id = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = iova;
	wr.wr.rdma.rkey = rkey;
	st = ibv_post_send(qp, &wr, &bad) ? ST_POST_FAILED : pair_wait(cq, &wc);
	check("user-write-completed", st == IBV_WC_SUCCESS, "the WRITE of %lu bytes: %s", len,
	      st_str(st));
	z1 = zcopy_count(dev);
	check("user-write-zero-copy", z0 >= 0 && z1 - z0 >= (long long)(len / 1024),
	      "sent_pkts_zcopy went from %lld to %lld, want %lu more", z0, z1, len / 1024);
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(buf);
	printf("DONE\n");
	return failures != 0;
}
