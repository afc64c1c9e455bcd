// SPDX-License-Identifier: GPL-2.0
/*
 * Send queue drain (RTS -> SQD) with a message half sent: the drain is
 * over, and IBV_EVENT_SQ_DRAINED reported, only once every message that
 * had started is complete (IBA 10.3.1: in SQD the requester finishes the
 * messages in progress and starts no new one). On an RC pair of a device
 * connected to itself, 1 KiB path MTU (rc_pair.h), the sender A with an
 * ACK timeout of 14 (67 ms) and infinite retries.
 *
 *   sqd_drain DEVICE [GID_INDEX]
 *
 *   started             a 1 MiB WRITE (1024 packets) goes out while the
 *                       receiver B is still in INIT, which drops every
 *                       packet: A's sq_psn (ibv_query_qp) has moved;
 *   not-drained-while-half-sent
 *                       A to SQD (asking for the event): no SQ_DRAINED
 *                       within 500 ms, and ibv_query_qp says SQD with
 *                       sq_draining set (the WRITE is half sent, nothing
 *                       acknowledged);
 *   started-message-completes
 *                       B to RTR: A's retries land and the WRITE, started
 *                       before the drain, completes in SQD with the 1 MiB
 *                       in B's buffer byte for byte;
 *   drained-after-it
 *                       then SQ_DRAINED comes, and sq_draining is clear;
 *   new-message-waits
 *                       a WRITE posted in SQD is not sent: no completion
 *                       within 300 ms, B's buffer unchanged;
 *   new-message-after-rts
 *                       A back to RTS: it completes and lands.
 *
 * Prints one line per check, "PASS name" or "FAIL name: why", and "DONE"
 * last; exits non-zero if a check failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "check.h"
#include "rc_pair.h"

#define BIG (1u << 20)
#define SMALL 4096u

/* The next SQ_DRAINED event of ctx for qp within ms milliseconds: 1 if it
 * came, 0 if not (other events are acknowledged and passed over). */
static int drained_event(struct ibv_context *ctx, struct ibv_qp *qp, int ms)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;

	while (poll(&pfd, 1, ms) == 1) {
		if (ibv_get_async_event(ctx, &ev))
			return 0;
		int hit = ev.event_type == IBV_EVENT_SQ_DRAINED && ev.element.qp == qp;

		ibv_ack_async_event(&ev);
		if (hit)
			return 1;
	}
	return 0;
}

/* A's state and sq_draining, or -1 after a FAIL line for `name`. */
static int query(struct ibv_qp *qp, const char *name, int *draining, uint32_t *sq_psn)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr init;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN, &init)) {
		fail(name, "ibv_query_qp: %s", strerror(errno));
		return -1;
	}
	*draining = a.sq_draining;
	*sq_psn = a.sq_psn;
	return a.qp_state;
}

static int post_write(struct ibv_qp *qp, uint64_t id, char *buf, uint32_t len, struct ibv_mr *mr, char *rbuf,
		      struct ibv_mr *rmr)
{
	struct ibv_sge s = { .addr = (uintptr_t)buf, .length = len, .lkey = mr->lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { .remote_addr = (uintptr_t)rbuf, .rkey = rmr->rkey } }, *bad;

	return ibv_post_send(qp, &wr, &bad);
}

/* The completion of A's CQ within ms milliseconds: 1 and *wc, or 0. */
static int completion_within(struct ibv_cq *cq, struct ibv_wc *wc, int ms)
{
	for (int i = 0; i < ms; i++) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n)
			return n == 1;
		usleep(1000);
	}
	return 0;
}

static void fill(char *p, uint32_t n, unsigned seed)
{
	for (uint32_t i = 0; i < n; i++)
		p[i] = (char)(seed + i * 13 + (i >> 10));
}

static void drain_test(struct ibv_context *ctx, struct pair *p, const union ibv_gid *gid, int gid_index,
		       char *buf, struct ibv_mr *mr, char *rbuf, struct ibv_mr *rmr)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_SQD, .en_sqd_async_notify = 1 };
	struct ibv_wc wc;
	uint32_t psn;
	int draining, st, got;

	fill(buf, BIG, 1);
	if (post_write(p->req, 1, buf, BIG, mr, rbuf, rmr)) {
		fail("started", "ibv_post_send: %s", strerror(errno));
		return;
	}
	usleep(100 * 1000);
	st = query(p->req, "started", &draining, &psn);
	if (st < 0)
		return;
	if (psn == 0) {
		fail("started", "sq_psn still 0: the WRITE did not start");
		return;
	}
	pass("started");

	if (ibv_modify_qp(p->req, &a, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY)) {
		fail("not-drained-while-half-sent", "modify to SQD: %s", strerror(errno));
		return;
	}
	got = drained_event(ctx, p->req, 500);
	st = query(p->req, "not-drained-while-half-sent", &draining, &psn);
	if (st < 0)
		return;
	check("not-drained-while-half-sent", !got && st == IBV_QPS_SQD && draining,
	      "%s, state %d, sq_draining %d (want no event, SQD, 1)", got ? "SQ_DRAINED came" : "no event", st,
	      draining);

	/* B comes up: the retries land. */
	if (pair_to_rts(p->resp, gid, gid_index, p->req->qp_num)) {
		fail("started-message-completes", "B to RTS: %s", strerror(errno));
		return;
	}
	st = pair_wait(p->cq, &wc);
	check("started-message-completes", st == IBV_WC_SUCCESS && wc.wr_id == 1 && !memcmp(rbuf, buf, BIG),
	      "%s, wr_id %" PRIu64 "%s", st_str(st), st >= 0 ? (uint64_t)wc.wr_id : 0,
	      st == IBV_WC_SUCCESS && memcmp(rbuf, buf, BIG) ? ", data differs" : "");

	got = drained_event(ctx, p->req, 5000);
	st = query(p->req, "drained-after-it", &draining, &psn);
	if (st < 0)
		return;
	check("drained-after-it", got && st == IBV_QPS_SQD && !draining,
	      "%s, state %d, sq_draining %d (want the event, SQD, 0)", got ? "SQ_DRAINED came" : "no event", st,
	      draining);

	fill(buf + BIG, SMALL, 2);
	memset(rbuf + BIG, 0, SMALL);
	if (post_write(p->req, 2, buf + BIG, SMALL, mr, rbuf + BIG, rmr)) {
		fail("new-message-waits", "ibv_post_send: %s", strerror(errno));
		return;
	}
	got = completion_within(p->cq, &wc, 300);
	check("new-message-waits", !got && rbuf[BIG] == 0 && !memcmp(rbuf + BIG, rbuf + BIG + 1, SMALL - 1),
	      "%s", got ? "completed in SQD" : "data landed in SQD");

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	if (ibv_modify_qp(p->req, &a, IBV_QP_STATE)) {
		fail("new-message-after-rts", "SQD to RTS: %s", strerror(errno));
		return;
	}
	st = got ? (int)wc.status : pair_wait(p->cq, &wc);
	check("new-message-after-rts", st == IBV_WC_SUCCESS && wc.wr_id == 2 &&
	      !memcmp(rbuf + BIG, buf + BIG, SMALL), "%s", st_str(st));
}

int main(int argc, char **argv)
{
	const char *dev = argc > 1 ? argv[1] : "rrxe0";
	int gid_index = argc > 2 ? atoi(argv[2]) : 1;
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	union ibv_gid gid;
	struct ibv_context *ctx;
	struct ibv_pd *pd = NULL;
	struct ibv_mr *mr = NULL, *rmr = NULL;
	char *buf = NULL, *rbuf = NULL;
	struct pair p = { 0 };

	setvbuf(stdout, NULL, _IOLBF, 0);
	ctx = open_dev_gid(dev, gid_index, &gid);
	if (ctx)
		pd = ibv_alloc_pd(ctx);
	buf = calloc(1, BIG + SMALL);
	rbuf = calloc(1, BIG + SMALL);
	if (pd && buf && rbuf) {
		mr = ibv_reg_mr(pd, buf, BIG + SMALL, PAIR_ACCESS);
		rmr = ibv_reg_mr(pd, rbuf, BIG + SMALL, PAIR_ACCESS);
		p.cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
		p.rcq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	}
	if (p.cq && p.rcq) {
		init.send_cq = init.recv_cq = p.cq;
		p.req = ibv_create_qp(pd, &init);
		init.send_cq = init.recv_cq = p.rcq;
		p.resp = ibv_create_qp(pd, &init);
	}
	/* A in RTS towards B, B in INIT (it drops A's packets). */
	if (!mr || !rmr || !p.req || !p.resp || pair_to_init(p.req) || pair_to_init(p.resp) ||
	    pair_to_rts(p.req, &gid, gid_index, p.resp->qp_num)) {
		fail("setup", "device, PD, MRs, CQs or QPs: %s", strerror(errno));
		printf("DONE\n");
		return 1;
	}
	pass("setup");
	drain_test(ctx, &p, &gid, gid_index, buf, mr, rbuf, rmr);

	pair_close(&p);
	ibv_dereg_mr(mr);
	ibv_dereg_mr(rmr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(buf);
	free(rbuf);
	printf("DONE\n");
	return failures ? 1 : 0;
}
