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
 * Per-QP counters (`rdma statistic qp`): both QPs are bound to counters
 * of their own before any traffic (`rdma statistic qp bind`), so:
 *
 *   stat/bind          both binds succeed;
 *   stat/qp-counts     the sender's counter has rdma_sends 3 and
 *                      sent_pkts at least 11 (3 SENDs, 5 WRITE packets, 3
 *                      READ responses), the receiver's rdma_recvs 3 and
 *                      rcvd_pkts at least 11;
 *   stat/port-once     the port's sent_pkts (rdma statistic show: the
 *                      device's plus its counters') grew by exactly the
 *                      two counters' sent_pkts: a bound QP's packets are
 *                      counted once;
 *   stat/kept          once the QPs are destroyed (ib_core unbinds them
 *                      and frees their counters), the counters are gone
 *                      and the port's sent_pkts is what it was.
 *   stat/auto          in auto mode by QP type (`rdma statistic qp set
 *                      link DEV/1 auto type on`), a new pair's two QPs
 *                      share one counter, which has rdma_sends 1 and
 *                      rdma_recvs 1 after one SEND; auto mode is turned
 *                      off again after.
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

/* Runs `cmd` (a shell command line) and reads its output into out. */
static int run_cmd(const char *cmd, char *out, size_t size)
{
	size_t n = 0, r;
	FILE *f = popen(cmd, "r");

	if (!f)
		return -1;
	while (n < size - 1 && (r = fread(out + n, 1, size - 1 - n, f)) > 0)
		n += r;
	out[n] = 0;
	return pclose(f);
}

/* The number after "key": in the JSON text [s, end); -1 if none. */
static long long json_num(const char *s, const char *end, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(s, pat);
	if (!p || p >= end)
		return -1;
	return strtoll(p + strlen(pat), NULL, 10);
}

/* In `rdma -j statistic qp show`'s output, the counter object whose lqpn
 * list holds qpn: its start in *obj and end in *end; 0 if found. */
static int counter_of(const char *json, uint32_t qpn, const char **obj, const char **end)
{
	int depth = 0;
	const char *start = NULL;

	for (const char *c = json; *c; c++) {
		if (*c == '{' && depth++ == 0)
			start = c;
		if (*c != '}' || --depth != 0 || !start)
			continue;
		for (const char *l = strstr(start, "\"lqpn\":["); l && l < c;) {
			char *next;

			l += strlen("\"lqpn\":[");
			while (*l && *l != ']') {
				unsigned long v = strtoul(l, &next, 10);

				if (next == l)
					break;
				if (v == qpn) {
					*obj = start;
					*end = c;
					return 0;
				}
				l = next + (*next == ',');
			}
			break;
		}
	}
	return -1;
}

/* The port's sent_pkts as `rdma statistic show link DEV/1` gives it. */
static long long port_sent(const char *dev)
{
	char cmd[128], out[16384];

	snprintf(cmd, sizeof(cmd), "rdma -j statistic show link %s/1 2>&1", dev);
	if (run_cmd(cmd, out, sizeof(out)))
		return -1;
	return json_num(out, out + strlen(out), "sent_pkts");
}

/* Binds qp to a counter of its own (manual mode). */
static int stat_bind(const char *dev, uint32_t qpn)
{
	char cmd[128], out[1024];

	snprintf(cmd, sizeof(cmd), "rdma statistic qp bind link %s/1 lqpn %u 2>&1", dev, qpn);
	if (run_cmd(cmd, out, sizeof(out))) {
		fprintf(stderr, "%s: %s\n", cmd, out);
		return -1;
	}
	return 0;
}

/* stat/qp-counts and stat/port-once, after the traffic; port0 is the
 * port's sent_pkts from before it. */
static void check_stats(const char *dev, struct pair *p, long long port0)
{
	static char out[65536];
	const char *ro, *re, *so, *se;
	long long r_sends, r_sent, s_recvs, s_rcvd, s_sent, port1;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rdma -j statistic qp show link %s/1 2>&1", dev);
	if (run_cmd(cmd, out, sizeof(out)) || counter_of(out, p->req->qp_num, &ro, &re) ||
	    counter_of(out, p->resp->qp_num, &so, &se)) {
		fail("stat/qp-counts", "no counter lists QP %u and QP %u: %.300s", p->req->qp_num,
		     p->resp->qp_num, out);
		fail("stat/port-once", "no counters");
		return;
	}
	r_sends = json_num(ro, re, "rdma_sends");
	r_sent = json_num(ro, re, "sent_pkts");
	s_recvs = json_num(so, se, "rdma_recvs");
	s_rcvd = json_num(so, se, "rcvd_pkts");
	s_sent = json_num(so, se, "sent_pkts");
	check("stat/qp-counts", r_sends == 3 && r_sent >= 11 && s_recvs == 3 && s_rcvd >= 11,
	      "sender rdma_sends %lld sent_pkts %lld, receiver rdma_recvs %lld rcvd_pkts %lld; want 3, >= 11, 3, >= 11",
	      r_sends, r_sent, s_recvs, s_rcvd);
	port1 = port_sent(dev);
	check("stat/port-once", port0 >= 0 && port1 - port0 == r_sent + s_sent,
	      "port sent_pkts %lld -> %lld, counters' sent_pkts %lld + %lld", port0, port1, r_sent, s_sent);
}

/* stat/kept: the QPs' counters went with them, their counts stayed in the
 * port's. */
static void check_kept(const char *dev, uint32_t req, uint32_t resp, long long port1)
{
	static char out[65536];
	const char *o, *e;
	char cmd[128];
	long long port2 = port_sent(dev);

	snprintf(cmd, sizeof(cmd), "rdma -j statistic qp show link %s/1 2>&1", dev);
	if (run_cmd(cmd, out, sizeof(out)))
		out[0] = 0;
	check("stat/kept",
	      port1 >= 0 && port2 == port1 && counter_of(out, req, &o, &e) && counter_of(out, resp, &o, &e),
	      "port sent_pkts %lld -> %lld after the destroys; counters left: %.200s", port1, port2, out);
}

/* stat/auto: a pair made in auto mode is counted in one counter. */
static void check_auto(const char *dev, struct ibv_context *ctx, const union ibv_gid *gid, int gid_index,
		       struct ibv_pd *pd, char *buf, struct ibv_mr *mr, char *rbuf, struct ibv_mr *rmr)
{
	static char out[65536];
	const char *o1, *e1, *o2, *e2;
	char cmd[128];
	struct pair p;
	const char *why;

	snprintf(cmd, sizeof(cmd), "rdma statistic qp set link %s/1 auto type on 2>&1", dev);
	if (run_cmd(cmd, out, sizeof(out))) {
		fail("stat/auto", "%s: %.200s", cmd, out);
		return;
	}
	if (pair_open(&p, ctx, gid, gid_index, pd, pd, 1, "stat/auto")) {
		fail("stat/auto", "pair: %s", strerror(errno));
		why = "no pair";
	} else {
		struct ibv_sge rs = { .addr = (uintptr_t)rbuf, .length = BUF, .lkey = rmr->lkey };
		struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = &rs, .num_sge = 1 }, *rbad;
		struct ibv_sge ss = { .addr = (uintptr_t)buf, .length = 64, .lkey = mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 2, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED };

		why = ibv_post_recv(p.resp, &rwr, &rbad) ? "ibv_post_recv failed" : run(&p, p.req, &wr, p.rcq);
		snprintf(cmd, sizeof(cmd), "rdma -j statistic qp show link %s/1 2>&1", dev);
		if (why)
			fail("stat/auto", "SEND: %s", why);
		else if (run_cmd(cmd, out, sizeof(out)) || counter_of(out, p.req->qp_num, &o1, &e1) ||
			 counter_of(out, p.resp->qp_num, &o2, &e2))
			fail("stat/auto", "no counter lists QP %u and QP %u: %.300s", p.req->qp_num,
			     p.resp->qp_num, out);
		else
			check("stat/auto",
			      o1 == o2 && json_num(o1, e1, "rdma_sends") == 1 && json_num(o1, e1, "rdma_recvs") == 1,
			      "QPs %u and %u in %s counters; rdma_sends %lld rdma_recvs %lld, want one counter, 1, 1",
			      p.req->qp_num, p.resp->qp_num, o1 == o2 ? "one" : "two", json_num(o1, e1, "rdma_sends"),
			      json_num(o1, e1, "rdma_recvs"));
		pair_close(&p);
	}
	snprintf(cmd, sizeof(cmd), "rdma statistic qp set link %s/1 auto off 2>&1", dev);
	if (run_cmd(cmd, out, sizeof(out)))
		fail("stat/auto-off", "%s: %.200s", cmd, out);
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
	long long port0, port1;
	uint32_t req_qpn, resp_qpn;
	int bound;

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
	port0 = port_sent(dev);
	bound = !stat_bind(dev, p.req->qp_num) && !stat_bind(dev, p.resp->qp_num);
	check("stat/bind", bound, "rdma statistic qp bind failed");

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
	if (bound)
		check_stats(dev, &p, port0);
	port1 = port_sent(dev);
	req_qpn = p.req->qp_num;
	resp_qpn = p.resp->qp_num;

	pair_close(&p);
	if (bound)
		check_kept(dev, req_qpn, resp_qpn, port1);
	check_auto(dev, ctx, &gid, gid_index, pd, buf, mr, rbuf, rmr);
	ibv_dereg_mr(mr);
	ibv_dereg_mr(rmr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(buf);
	free(rbuf);
	printf("DONE\n");
	return failures ? 1 : 0;
}
