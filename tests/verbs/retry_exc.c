// SPDX-License-Identifier: GPL-2.0
/*
 * A requester whose peer QP fails ends in IBV_WC_RETRY_EXC_ERR: its
 * retransmit timeouts are counted and its retry budget runs out. Two RC
 * QPs of one device (loopback), ACK timeout 10 (4 ms), retry_cnt 2; the
 * peer is then
 *   peer-destroyed/...  destroyed (its packets find no QP),
 *   peer-in-error/...   moved to the error state (its packets are refused
 *                       on arrival),
 * and the requester posts two RDMA WRITEs of 16 KiB: the first must
 * complete with RETRY_EXC_ERR and the second, flushed, with WR_FLUSH_ERR,
 * within 30 s. C rxe passes it too.
 *
 *   retry_exc [DEV [GID_INDEX]]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "rc_pair.h"

#define LEN 16384

/* req again from RESET to RTS, with the ACK timeout 10 (4 ms) and
 * retry_cnt 2 (7 would be infinite). */
static int req_to_rts_retry(struct ibv_qp *qp, const union ibv_gid *gid, int gid_index, uint32_t dest_qpn)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	int err;

	err = ibv_modify_qp(qp, &a, IBV_QP_STATE);
	err = err ? err : pair_to_init(qp);
	return err ? err : pair_to_rts_retry(qp, gid, gid_index, dest_qpn, 10, 2);
}

static int retry_pair(struct pair *p, struct ibv_context *ctx, const union ibv_gid *gid, int gid_index,
		      struct ibv_pd *pd, const char *name)
{
	int err;

	if (pair_open(p, ctx, gid, gid_index, pd, pd, 1, name))
		return -1;
	err = req_to_rts_retry(p->req, gid, gid_index, p->resp->qp_num);
	if (err) {
		fail(name, "ibv_modify_qp (RESET to RTS, timeout 10, retry_cnt 2): %s", strerror(err));
		pair_close(p);
		return -1;
	}
	return 0;
}

static void run_case(struct ibv_context *ctx, const union ibv_gid *gid, int gid_index, struct ibv_pd *pd,
		     struct ibv_mr *mr, const char *group, int destroy)
{
	struct ibv_sge sge = { .addr = (uintptr_t)mr->addr, .length = LEN, .lkey = mr->lkey };
	struct ibv_send_wr wr[2] = {}, *bad;
	struct ibv_qp_attr err_attr = { .qp_state = IBV_QPS_ERR };
	struct ibv_wc wc;
	char name[64];
	struct pair p;
	int st;

	snprintf(name, sizeof(name), "%s/setup", group);
	if (retry_pair(&p, ctx, gid, gid_index, pd, name))
		return;
	pass(name);
	snprintf(name, sizeof(name), "%s/peer-fails", group);
	if (destroy) {
		check(name, ibv_destroy_qp(p.resp) == 0, "ibv_destroy_qp: %s", strerror(errno));
		p.resp = NULL;
	} else {
		check(name, ibv_modify_qp(p.resp, &err_attr, IBV_QP_STATE) == 0, "ibv_modify_qp to ERR: %s",
		      strerror(errno));
	}
	for (int i = 0; i < 2; i++) {
		wr[i].wr_id = i + 1;
		wr[i].sg_list = &sge;
		wr[i].num_sge = 1;
		wr[i].opcode = IBV_WR_RDMA_WRITE;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].wr.rdma.remote_addr = (uintptr_t)mr->addr + LEN;
		wr[i].wr.rdma.rkey = mr->rkey;
		wr[i].next = i == 0 ? &wr[1] : NULL;
	}
	snprintf(name, sizeof(name), "%s/post", group);
	st = ibv_post_send(p.req, wr, &bad);
	check(name, st == 0, "ibv_post_send: %s", strerror(st));
	if (st) {
		pair_close(&p);
		return;
	}
	snprintf(name, sizeof(name), "%s/retry-exceeded", group);
	st = pair_wait(p.cq, &wc);
	check(name, st == IBV_WC_RETRY_EXC_ERR && wc.wr_id == 1, "first completion: %s (wr_id %llu)", st_str(st),
	      (unsigned long long)wc.wr_id);
	snprintf(name, sizeof(name), "%s/next-flushed", group);
	st = pair_wait(p.cq, &wc);
	check(name, st == IBV_WC_WR_FLUSH_ERR && wc.wr_id == 2, "second completion: %s (wr_id %llu)", st_str(st),
	      (unsigned long long)wc.wr_id);
	pair_close(&p);
}

int main(int argc, char **argv)
{
	const char *dev = argc > 1 ? argv[1] : "rrxe0";
	int gid_index = argc > 2 ? atoi(argv[2]) : 1;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	union ibv_gid gid;
	void *buf;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ctx = open_dev_gid(dev, gid_index, &gid);
	if (!ctx) {
		printf("DONE\n");
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	buf = mmap(NULL, 2 * LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	mr = pd && buf != MAP_FAILED ? ibv_reg_mr(pd, buf, 2 * LEN, PAIR_ACCESS) : NULL;
	if (!mr) {
		fail("setup", "ibv_alloc_pd, mmap or ibv_reg_mr: %s", strerror(errno));
		printf("DONE\n");
		return 1;
	}
	pass("setup");
	run_case(ctx, &gid, gid_index, pd, mr, "peer-destroyed", 1);
	run_case(ctx, &gid, gid_index, pd, mr, "peer-in-error", 0);
	check("teardown", ibv_dereg_mr(mr) == 0 && ibv_dealloc_pd(pd) == 0 && ibv_close_device(ctx) == 0, "%s",
	      strerror(errno));
	printf("DONE\n");
	return failures ? 1 : 0;
}
