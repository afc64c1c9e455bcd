// SPDX-License-Identifier: GPL-2.0
/*
 * A receive whose completion finds its CQ full: the message is not
 * acknowledged and the receiving QP goes to the error state (IBA class G,
 * C rxe's RESPST_ERR_CQ_OVERFLOW), so the sender does not count as
 * delivered a message its receiver never learns of. On an RC pair of a
 * device connected to itself (rc_pair.h): A sends, B receives into a CQ
 * of the least size the device gives (N entries, ibv_create_cq(1)), with
 * N + 2 receives posted and nothing polled; A has an ACK timeout of 14
 * (67 ms) and one retry.
 *
 *   recv_cq_full DEVICE [GID_INDEX]
 *
 *   receiver-in-error     after N + 2 SENDs, B is in the error state;
 *   sender-not-told-done  A's completions: the first N SENDs succeed,
 *                         the next one does not (RETRY_EXC_ERR: nobody
 *                         acknowledged it);
 *   kept-completions      B's CQ holds the first N receives, each
 *                         successful, in order.
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
#define MAX_N 64

int main(int argc, char **argv)
{
	const char *dev = argc > 1 ? argv[1] : "rrxe0";
	int gid_index = argc > 2 ? atoi(argv[2]) : 1;
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC, .sq_sig_all = 1,
		.cap = { .max_send_wr = MAX_N + 4, .max_recv_wr = MAX_N + 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_wc wc[MAX_N + 4];
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	union ibv_gid gid;
	struct ibv_context *ctx;
	struct ibv_pd *pd = NULL;
	struct ibv_mr *mr = NULL;
	struct ibv_cq *acq = NULL, *bcq = NULL, *bscq = NULL;
	struct ibv_qp *a = NULL, *b = NULL;
	char *buf = NULL;
	int n = 0, got = 0, ok = 0, err = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ctx = open_dev_gid(dev, gid_index, &gid);
	if (ctx)
		pd = ibv_alloc_pd(ctx);
	buf = calloc(MAX_N + 4, 2 * MSG);
	if (pd && buf) {
		mr = ibv_reg_mr(pd, buf, (MAX_N + 4) * 2 * MSG, PAIR_ACCESS);
		acq = ibv_create_cq(ctx, 2 * MAX_N + 8, NULL, NULL, 0);
		bscq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
		bcq = ibv_create_cq(ctx, 1, NULL, NULL, 0);
	}
	if (acq && bcq && bscq) {
		n = bcq->cqe;
		init.send_cq = init.recv_cq = acq;
		a = ibv_create_qp(pd, &init);
		init.send_cq = bscq;
		init.recv_cq = bcq;
		b = ibv_create_qp(pd, &init);
	}
	if (!mr || !a || !b || n < 1 || n > MAX_N || pair_to_init(a) || pair_to_init(b) ||
	    pair_to_rts_rnr(a, &gid, gid_index, b->qp_num, 14, 1, 0) ||
	    pair_to_rts(b, &gid, gid_index, a->qp_num)) {
		fail("setup", "device, PD, MR, CQs (N %d) or QPs: %s", n, strerror(errno));
		printf("DONE\n");
		return 1;
	}
	pass("setup");
	printf("# recv_cq_full: the receive CQ holds %d\n", n);
	for (int i = 0; i < n + 2; i++) {
		struct ibv_sge rs = { .addr = (uintptr_t)(buf + (MAX_N + 4 + i) * MSG), .length = MSG,
				      .lkey = mr->lkey };
		struct ibv_recv_wr rwr = { .wr_id = 100 + i, .sg_list = &rs, .num_sge = 1 }, *rbad;

		if (ibv_post_recv(b, &rwr, &rbad))
			fail("setup", "ibv_post_recv: %s", strerror(errno));
	}
	for (int i = 0; i < n + 2; i++) {
		struct ibv_sge s = { .addr = (uintptr_t)(buf + i * MSG), .length = MSG, .lkey = mr->lkey };
		struct ibv_send_wr wr = { .wr_id = i, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND }, *bad;

		memset(buf + i * MSG, 'a' + i % 26, MSG);
		if (ibv_post_send(a, &wr, &bad))
			fail("setup", "ibv_post_send: %s", strerror(errno));
	}
	/* Every SEND ends: acknowledged, retried out, or flushed. */
	for (int t = 0; t < 300 && got < n + 2; t++) {
		int k = ibv_poll_cq(acq, n + 2 - got, wc + got);

		if (k > 0)
			got += k;
		else
			usleep(10000);
	}
	for (int i = 0; i < got && wc[i].status == IBV_WC_SUCCESS; i++)
		ok++;

	if (ibv_query_qp(b, &qa, IBV_QP_STATE, &qi))
		fail("receiver-in-error", "ibv_query_qp: %s", strerror(errno));
	else
		check("receiver-in-error", qa.qp_state == IBV_QPS_ERR, "state %d, want %d (error)",
		      qa.qp_state, IBV_QPS_ERR);
	check("sender-not-told-done", got == n + 2 && ok == n && wc[n].status == IBV_WC_RETRY_EXC_ERR,
	      "%d of %d SENDs ended, the first %d successful%s%s (want %d, then RETRY_EXC_ERR)", got, n + 2, ok,
	      ok < got ? ", then " : "", ok < got ? ibv_wc_status_str(wc[ok].status) : "", n);

	got = 0;
	for (int t = 0; t < 10 && got < n; t++) {
		int k = ibv_poll_cq(bcq, n - got, wc + got);

		if (k > 0)
			got += k;
		else
			usleep(10000);
	}
	for (int i = 0; i < got; i++)
		if (wc[i].status != IBV_WC_SUCCESS || wc[i].wr_id != (uint64_t)(100 + i) || wc[i].byte_len != MSG ||
		    memcmp(buf + (MAX_N + 4 + i) * MSG, buf + i * MSG, MSG))
			err++;
	check("kept-completions", got == n && !err, "%d of %d completions, %d wrong", got, n, err);

	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_destroy_cq(acq);
	ibv_destroy_cq(bcq);
	ibv_destroy_cq(bscq);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(buf);
	printf("DONE\n");
	return failures ? 1 : 0;
}
