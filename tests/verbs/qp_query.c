// SPDX-License-Identifier: GPL-2.0
/*
 * What ibv_query_qp says of a QP's packet sequence numbers once it has
 * carried traffic, on one RC pair of a device connected to itself, 1 KiB
 * path MTU, both PSNs starting at 0 (rc_pair.h).
 *
 *   qp_query DEVICE [GID_INDEX]
 *
 * C rxe reports the live numbers (rxe_qp_to_attr: sq_psn is the
 * requester's next PSN, rq_psn the responder's next expected one), which
 * is what a consumer moving a QP to another path or debugging a stall
 * reads:
 *
 *   psn/before-traffic all four are the configured 0;
 *   psn/after-sends    3 one-packet SENDs: the sender's sq_psn and the
 *                      receiver's rq_psn are 3, the other two still 0;
 *   psn/after-write    a 5000-byte WRITE (5 packets at 1 KiB) more: 8;
 *   psn/after-read     a 3000-byte READ from the receiver's side (one
 *                      request PSN, 3 response packets): its requester's
 *                      sq_psn is 3 (a READ takes one PSN per response
 *                      packet), the other side's rq_psn 3 too.
 *
 *
 * The same numbers reach `rdma res show qp -dd` (the driver's
 * fill_res_qp_entry, as drv_ attributes), with what the QP has queued and
 * on the wire:
 *
 *   res/details        for both QPs after the READ, drv_sq_psn and
 *                      drv_rq_psn equal what ibv_query_qp says, and
 *                      drv_req_queued, drv_resp_queued, drv_pkts_out,
 *                      drv_trains_out and drv_running are there (the
 *                      rdma tool's text or JSON output).
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

#define BUF 8192

static int query_psns(struct ibv_qp *qp, uint32_t *sq, uint32_t *rq)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr init;
	int err = ibv_query_qp(qp, &a, IBV_QP_SQ_PSN | IBV_QP_RQ_PSN, &init);

	if (err)
		return err;
	*sq = a.sq_psn;
	*rq = a.rq_psn;
	return 0;
}

/* Posts wr on qp and waits for its completion (and, for a SEND, the
 * receive's on the other side); 0 or a status string. */
static const char *run(struct pair *p, struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_cq *rcq)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	int st;

	if (ibv_post_send(qp, wr, &bad))
		return "ibv_post_send failed";
	st = pair_wait(qp == p->req ? p->cq : p->rcq, &wc);
	if (st != IBV_WC_SUCCESS)
		return st_str(st);
	if (rcq) {
		st = pair_wait(rcq, &wc);
		if (st != IBV_WC_SUCCESS)
			return st_str(st);
	}
	return NULL;
}

/* One signaled RDMA `op` of `len` bytes on qp, between local (lbuf, lmr)
 * and remote (rbuf, rmr); 0 or a status string. */
static const char *rdma(struct pair *p, struct ibv_qp *qp, enum ibv_wr_opcode op, char *lbuf,
			struct ibv_mr *lmr, char *rbuf, struct ibv_mr *rmr, uint32_t len)
{
	struct ibv_sge s = { .addr = (uintptr_t)lbuf, .length = len, .lkey = lmr->lkey };
	struct ibv_send_wr wr = { .wr_id = op, .sg_list = &s, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { .remote_addr = (uintptr_t)rbuf, .rkey = rmr->rkey } };

	return run(p, qp, &wr, NULL);
}

/* The value of the driver attribute `key` of QP `qpn` of `dev` in
 * `rdma -dd res show qp` (text "drv_key N" or JSON "drv_key":N), in *val;
 * 0 if found, -1 if not. */
static int res_attr(const char *dev, uint32_t qpn, const char *key, uint32_t *val)
{
	char cmd[256], out[8192], *tok, *save;
	size_t n;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "rdma -dd -j res show qp link %s lqpn %u 2>&1", dev, qpn);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	n = fread(out, 1, sizeof(out) - 1, f);
	pclose(f);
	out[n] = 0;
	for (char *c = out; *c; c++)
		if (strchr("\"{}[],:", *c))
			*c = ' ';
	for (tok = strtok_r(out, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
		if (!strncmp(tok, "drv_", 4))
			tok += 4;
		if (strcmp(tok, key))
			continue;
		tok = strtok_r(NULL, " \n", &save);
		if (!tok)
			return -1;
		*val = strtoul(tok, NULL, 0);
		return 0;
	}
	return -1;
}

/* res/details: the driver's details of both QPs agree with ibv_query_qp. */
static void check_res(const char *dev, struct pair *p)
{
	static const char *const more[] = { "req_queued", "resp_queued", "pkts_out", "trains_out", "running" };
	struct ibv_qp *qps[2] = { p->req, p->resp };
	uint32_t sq, rq, rsq, rrq, v;

	for (int i = 0; i < 2; i++) {
		uint32_t qpn = qps[i]->qp_num;

		if (query_psns(qps[i], &sq, &rq)) {
			fail("res/details", "ibv_query_qp: %s", strerror(errno));
			return;
		}
		if (res_attr(dev, qpn, "sq_psn", &rsq) || res_attr(dev, qpn, "rq_psn", &rrq)) {
			fail("res/details", "QP %u: no drv_sq_psn/drv_rq_psn in rdma -dd res show qp", qpn);
			return;
		}
		if (rsq != sq || rrq != rq) {
			fail("res/details", "QP %u: rdma res says sq_psn %u rq_psn %u, ibv_query_qp %u %u", qpn, rsq,
			     rrq, sq, rq);
			return;
		}
		for (size_t k = 0; k < sizeof(more) / sizeof(more[0]); k++)
			if (res_attr(dev, qpn, more[k], &v)) {
				fail("res/details", "QP %u: no drv_%s", qpn, more[k]);
				return;
			}
	}
	pass("res/details");
}

static void check_psns(const char *name, struct pair *p, uint32_t req_sq, uint32_t req_rq, uint32_t resp_sq,
		       uint32_t resp_rq)
{
	uint32_t a_sq, a_rq, b_sq, b_rq;

	if (query_psns(p->req, &a_sq, &a_rq) || query_psns(p->resp, &b_sq, &b_rq)) {
		fail(name, "ibv_query_qp: %s", strerror(errno));
		return;
	}
	check(name, a_sq == req_sq && a_rq == req_rq && b_sq == resp_sq && b_rq == resp_rq,
	      "sender sq_psn %u rq_psn %u, receiver sq_psn %u rq_psn %u; want %u %u %u %u", a_sq, a_rq, b_sq, b_rq,
	      req_sq, req_rq, resp_sq, resp_rq);
}

int main(int argc, char **argv)
{
	const char *dev = argc > 1 ? argv[1] : "rrxe0";
	int gid_index = argc > 2 ? atoi(argv[2]) : 1;
	union ibv_gid gid;
	struct ibv_context *ctx;
	struct ibv_pd *pd = NULL;
	struct ibv_mr *mr = NULL, *rmr = NULL;
	char *buf = NULL, *rbuf = NULL;
	struct pair p;
	const char *why;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ctx = open_dev_gid(dev, gid_index, &gid);
	if (ctx)
		pd = ibv_alloc_pd(ctx);
	buf = calloc(1, BUF);
	rbuf = calloc(1, BUF);
	if (pd && buf && rbuf) {
		mr = ibv_reg_mr(pd, buf, BUF, PAIR_ACCESS);
		rmr = ibv_reg_mr(pd, rbuf, BUF, PAIR_ACCESS);
	}
	if (!mr || !rmr || pair_open(&p, ctx, &gid, gid_index, pd, pd, 1, "setup")) {
		fail("setup", "device, PD, MRs or the pair: %s", strerror(errno));
		printf("DONE\n");
		return 1;
	}
	pass("setup");
	check_psns("psn/before-traffic", &p, 0, 0, 0, 0);

	/* 3 SENDs of 100 bytes, each into a posted receive. */
	why = NULL;
	for (int i = 0; i < 3 && !why; i++) {
		struct ibv_sge rs = { .addr = (uintptr_t)rbuf, .length = BUF, .lkey = rmr->lkey };
		struct ibv_recv_wr rwr = { .wr_id = 100 + i, .sg_list = &rs, .num_sge = 1 }, *rbad;
		struct ibv_sge s = { .addr = (uintptr_t)buf, .length = 100, .lkey = mr->lkey };
		struct ibv_send_wr wr = { .wr_id = i, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED };

		if (ibv_post_recv(p.resp, &rwr, &rbad))
			why = "ibv_post_recv failed";
		else
			why = run(&p, p.req, &wr, p.rcq);
	}
	if (why)
		fail("psn/after-sends", "%s", why);
	else
		check_psns("psn/after-sends", &p, 3, 0, 0, 3);

	/* A 5000-byte WRITE: 5 packets. */
	why = rdma(&p, p.req, IBV_WR_RDMA_WRITE, buf, mr, rbuf, rmr, 5000);
	if (why)
		fail("psn/after-write", "%s", why);
	else
		check_psns("psn/after-write", &p, 8, 0, 0, 8);

	/* A 3000-byte READ by the receiver's QP: 3 response packets, 3 PSNs
	 * on both sides. */
	why = rdma(&p, p.resp, IBV_WR_RDMA_READ, rbuf, rmr, buf, mr, 3000);
	if (why)
		fail("psn/after-read", "%s", why);
	else
		check_psns("psn/after-read", &p, 8, 3, 3, 8);
	check_res(dev, &p);

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
