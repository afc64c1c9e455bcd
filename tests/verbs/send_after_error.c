// SPDX-License-Identifier: GPL-2.0
/*
 * A send WQE that fails locally stops its QP: nothing posted after it
 * reaches the peer (IBA: a local error moves the QP to the error state and
 * the WQEs behind it are flushed; C rxe fails the QP as soon as its
 * requester finds the error). On an RC pair of a device connected to
 * itself (rc_pair.h), A posts three SENDs in one ibv_post_send: the first
 * good, the second with an lkey that names no MR (a local protection
 * error when its payload is gathered), the third good; B has three
 * receives posted.
 *
 *   send_after_error DEVICE [GID_INDEX]
 *
 *   failed-wqe-status  the second SEND completes with LOC_PROT_ERR (the
 *                      LOCAL_INV of round two with LOC_QP_OP_ERR) and the
 *                      third with WR_FLUSH_ERR (the first with SUCCESS or,
 *                      as C rxe may, WR_FLUSH_ERR);
 *   later-not-sent     B receives nothing of the third SEND: at most one
 *                      successful receive, holding the first SEND's bytes,
 *                      within 200 ms after A's completions;
 *   sender-in-error    A is in the error state.
 *
 * The second round does the same with a LOCAL_INV of a key that names no
 * MR as the failing WQE (a local operation, as iSER and rdma_rw post one
 * before a REG_MR and the SEND that uses it), checks under local-inv/.
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
#include <unistd.h>

#include <infiniband/verbs.h>

#include "check.h"
#include "rc_pair.h"

#define MSG 64u

static void round_(struct ibv_context *ctx, struct ibv_pd *pd, const union ibv_gid *gid, int gid_index,
		   char *buf, struct ibv_mr *mr, int local_inv, const char *pfx)
{
	char name[64];
	struct pair p;
	struct ibv_wc wc[4];
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	struct ibv_sge s[3], rs[3];
	struct ibv_send_wr wr[3], *bad;
	struct ibv_recv_wr rwr[3], *rbad;
	int st[3] = { -1, -1, -1 }, got = 0, recvs = 0, recv_ok = 0, third = 0;

	snprintf(name, sizeof(name), "%ssetup", pfx);
	if (pair_open(&p, ctx, gid, gid_index, pd, pd, 1, name))
		return;
	memset(buf, 0, 6 * MSG);
	memset(buf, 'a', MSG);
	memset(buf + 2 * MSG, 'c', MSG);
	for (int i = 0; i < 3; i++) {
		rs[i] = (struct ibv_sge){ .addr = (uintptr_t)(buf + (3 + i) * MSG), .length = MSG,
					  .lkey = mr->lkey };
		rwr[i] = (struct ibv_recv_wr){ .wr_id = 10 + i, .sg_list = &rs[i], .num_sge = 1,
					       .next = i < 2 ? &rwr[i + 1] : NULL };
		s[i] = (struct ibv_sge){ .addr = (uintptr_t)(buf + i * MSG), .length = MSG, .lkey = mr->lkey };
		wr[i] = (struct ibv_send_wr){ .wr_id = i, .sg_list = &s[i], .num_sge = 1, .opcode = IBV_WR_SEND,
					      .next = i < 2 ? &wr[i + 1] : NULL };
	}
	/* An lkey whose index names no MR of this device. */
	if (local_inv) {
		wr[1].opcode = IBV_WR_LOCAL_INV;
		wr[1].num_sge = 0;
		wr[1].sg_list = NULL;
		wr[1].invalidate_rkey = mr->lkey + (0x7ff << 8);
	} else {
		s[1].lkey = mr->lkey + (0x7ff << 8);
	}
	if (ibv_post_recv(p.resp, rwr, &rbad) || ibv_post_send(p.req, wr, &bad)) {
		fail(name, "post: %s", strerror(errno));
		pair_close(&p);
		return;
	}
	pass(name);
	for (int i = 0; i < 3; i++) {
		int r = pair_wait(p.cq, &wc[0]);

		if (r < 0)
			break;
		if (wc[0].wr_id < 3)
			st[wc[0].wr_id] = r;
		got++;
	}
	usleep(200000);
	for (;;) {
		int k = ibv_poll_cq(p.rcq, 1, &wc[0]);

		if (k <= 0)
			break;
		recvs++;
		if (wc[0].status == IBV_WC_SUCCESS) {
			int slot = (int)wc[0].wr_id - 10;

			recv_ok++;
			if (slot >= 0 && slot < 3 && !memcmp(buf + (3 + slot) * MSG, buf + 2 * MSG, MSG))
				third++;
		}
	}

	snprintf(name, sizeof(name), "%sfailed-wqe-status", pfx);
	check(name, got == 3 && (st[0] == IBV_WC_SUCCESS || st[0] == IBV_WC_WR_FLUSH_ERR) &&
			    st[1] == (local_inv ? IBV_WC_LOC_QP_OP_ERR : IBV_WC_LOC_PROT_ERR) && st[2] == IBV_WC_WR_FLUSH_ERR,
	      "%d of 3 completions: %s, %s, %s", got, st[0] >= 0 ? ibv_wc_status_str(st[0]) : "none",
	      st[1] >= 0 ? ibv_wc_status_str(st[1]) : "none", st[2] >= 0 ? ibv_wc_status_str(st[2]) : "none");
	snprintf(name, sizeof(name), "%slater-not-sent", pfx);
	check(name, recv_ok <= 1 && !third,
	      "B received %d messages successfully (%d completions), %d of them the third SEND's", recv_ok, recvs,
	      third);
	snprintf(name, sizeof(name), "%ssender-in-error", pfx);
	if (ibv_query_qp(p.req, &qa, IBV_QP_STATE, &qi))
		fail(name, "ibv_query_qp: %s", strerror(errno));
	else
		check(name, qa.qp_state == IBV_QPS_ERR, "state %d, want %d (error)", qa.qp_state, IBV_QPS_ERR);
	pair_close(&p);
}

int main(int argc, char **argv)
{
	const char *dev = argc > 1 ? argv[1] : "rrxe0";
	int gid_index = argc > 2 ? atoi(argv[2]) : 1;
	union ibv_gid gid;
	struct ibv_context *ctx;
	struct ibv_pd *pd = NULL;
	struct ibv_mr *mr = NULL;
	char *buf = calloc(6, MSG);

	setvbuf(stdout, NULL, _IOLBF, 0);
	ctx = open_dev_gid(dev, gid_index, &gid);
	if (ctx)
		pd = ibv_alloc_pd(ctx);
	if (pd && buf)
		mr = ibv_reg_mr(pd, buf, 6 * MSG, PAIR_ACCESS);
	if (!mr) {
		fail("setup", "device, PD or MR: %s", strerror(errno));
		printf("DONE\n");
		return 1;
	}
	round_(ctx, pd, &gid, gid_index, buf, mr, 0, "");
	round_(ctx, pd, &gid, gid_index, buf, mr, 1, "local-inv/");
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(buf);
	printf("DONE\n");
	return failures ? 1 : 0;
}
