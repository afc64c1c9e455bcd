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
 * rnr/...: the peer has no receive posted and the requester's rnr_retry
 * is 1: a SEND ends in RNR_RETRY_EXC_ERR (RNR NAKs spend the RNR budget,
 * they do not refresh it).
 *
 * held/...: the requester on DEV and its peer on PEER_DEV; once both are
 * in RTS (their path resolved), the shell command HOLD makes the host hold
 * DEV's packets to PEER_DEV in a queue (tests/guest/twodev.sh: a netem
 * qdisc that lets one packet out every 5 s), and a second pair, a
 * loopback one on DEV, streams RDMA WRITEs while the requester's WRITE
 * waits, so the device moves packets. rrxe puts a timeout off while
 * requests of the QP are still in the host and the host moves packets
 * (Documentation/datapath.md, "Completer"), but at most 8 times in a row:
 * the WRITE must end in RETRY_EXC_ERR within HELD_LIMIT_S (8 put-offs and
 * 3 timeouts of 4 ms, backed off to 32 ms, are about 0.35 s; with no bound
 * it would wait while the queue trickles). Then the shell command RELEASE
 * drops the queue (destroying the QP waits for its packets).
 *
 *   retry_exc [DEV [GID_INDEX]]
 *   retry_exc held DEV GID_INDEX PEER_DEV PEER_GID_INDEX HOLD RELEASE
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "rc_pair.h"

#define LEN 16384
#define HELD_LIMIT_S 5.0

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

/* rnr/...: the peer has no receive posted and the requester's rnr_retry is
 * 1: a SEND draws an RNR NAK, is retried once, draws another and ends in
 * RNR_RETRY_EXC_ERR (an RNR NAK is no progress: it must not give the
 * budget back, or the SEND would be retried for ever). */
static void rnr_case(struct ibv_context *ctx, const union ibv_gid *gid, int gid_index, struct ibv_pd *pd,
		     struct ibv_mr *mr)
{
	struct ibv_sge sge = { .addr = (uintptr_t)mr->addr, .length = 64, .lkey = mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 5, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_qp_attr reset = { .qp_state = IBV_QPS_RESET };
	struct ibv_wc wc;
	struct pair p;
	int st;

	if (pair_open(&p, ctx, gid, gid_index, pd, pd, 1, "rnr/setup"))
		return;
	st = ibv_modify_qp(p.req, &reset, IBV_QP_STATE);
	st = st ? st : pair_to_init(p.req);
	st = st ? st : pair_to_rts_rnr(p.req, gid, gid_index, p.resp->qp_num, 14, 7, 1);
	check("rnr/setup", st == 0, "ibv_modify_qp (RESET to RTS, rnr_retry 1): %s", strerror(st));
	if (st) {
		pair_close(&p);
		return;
	}
	st = ibv_post_send(p.req, &wr, &bad);
	check("rnr/post", st == 0, "ibv_post_send: %s", strerror(st));
	if (!st) {
		st = pair_wait(p.cq, &wc);
		check("rnr/retry-exceeded", st == IBV_WC_RNR_RETRY_EXC_ERR && wc.wr_id == 5,
		      "the SEND completed with %s (want RNR_RETRY_EXC_ERR)", st_str(st));
	}
	pair_close(&p);
}

struct end {
	struct ibv_context *ctx;
	union ibv_gid gid;
	int gid_index;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	void *buf;
};

/* One end of the held case: its device, PD, an MR of 2 * LEN, a CQ and
 * an RC QP in INIT. */
static int end_open(struct end *e, const char *dev, int gid_index)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC, .sq_sig_all = 1,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	memset(e, 0, sizeof(*e));
	e->gid_index = gid_index;
	e->ctx = open_dev_gid(dev, gid_index, &e->gid);
	if (!e->ctx)
		return -1;
	e->pd = ibv_alloc_pd(e->ctx);
	e->buf = mmap(NULL, 2 * LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (e->buf == MAP_FAILED)
		e->buf = NULL;
	e->mr = e->pd && e->buf ? ibv_reg_mr(e->pd, e->buf, 2 * LEN, PAIR_ACCESS) : NULL;
	e->cq = e->mr ? ibv_create_cq(e->ctx, 16, NULL, NULL, 0) : NULL;
	init.send_cq = init.recv_cq = e->cq;
	e->qp = e->cq ? ibv_create_qp(e->pd, &init) : NULL;
	if (!e->qp || pair_to_init(e->qp)) {
		fail("held/setup", "%s: PD, MR, CQ or QP: %s", dev, strerror(errno));
		return -1;
	}
	return 0;
}

static void end_close(struct end *e)
{
	if (e->qp)
		ibv_destroy_qp(e->qp);
	if (e->cq)
		ibv_destroy_cq(e->cq);
	if (e->mr)
		ibv_dereg_mr(e->mr);
	if (e->pd)
		ibv_dealloc_pd(e->pd);
	if (e->buf)
		munmap(e->buf, 2 * LEN);
	if (e->ctx)
		ibv_close_device(e->ctx);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* One RDMA WRITE of LEN from the first half of mr to the second half of
 * remote (rkey's MR at raddr). */
static int post_write(struct ibv_qp *qp, struct ibv_mr *mr, uint64_t raddr, uint32_t rkey, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)mr->addr, .length = LEN, .lkey = mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED, .wr.rdma = { .remote_addr = raddr + LEN, .rkey = rkey },
	}, *bad;

	return ibv_post_send(qp, &wr, &bad);
}

/* The held case: see the top of the file. */
static int held(const char *dev, int gid_index, const char *peer_dev, int peer_gid_index, const char *hold,
		const char *release)
{
	struct end a, b;
	struct pair s = {};
	struct ibv_wc wc;
	double t0, t = 0;
	long streamed = 0;
	int st = ST_TIMEOUT, err, holding = 0;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	if (end_open(&a, dev, gid_index) || end_open(&b, peer_dev, peer_gid_index))
		goto out;
	err = pair_to_rts_retry(a.qp, &b.gid, a.gid_index, b.qp->qp_num, 10, 2);
	err = err ? err : pair_to_rts(b.qp, &a.gid, b.gid_index, a.qp->qp_num);
	if (err) {
		fail("held/setup", "ibv_modify_qp to RTS: %s", strerror(err));
		goto out;
	}
	if (pair_open(&s, a.ctx, &a.gid, a.gid_index, a.pd, a.pd, 1, "held/setup"))
		goto out;
	pass("held/setup");
	err = system(hold);
	check("held/hold", err == 0, "'%s' exited %d", hold, err);
	if (err)
		goto out;
	holding = 1;
	err = post_write(a.qp, a.mr, (uintptr_t)b.mr->addr, b.mr->rkey, 1);
	check("held/post", err == 0, "ibv_post_send: %s", strerror(err));
	if (err)
		goto out;
	/* Stream on the loopback pair until the held WRITE completes. */
	t0 = now_s();
	while (now_s() - t0 < PAIR_TIMEOUT_S) {
		if (ibv_poll_cq(a.cq, 1, &wc) == 1) {
			st = wc.status;
			t = now_s() - t0;
			break;
		}
		err = post_write(s.req, a.mr, (uintptr_t)a.mr->addr, a.mr->rkey, 2);
		err = err ? ST_POST_FAILED : pair_wait(s.cq, &wc);
		if (err != IBV_WC_SUCCESS) {
			fail("held/stream", "loopback WRITE %ld: %s", streamed + 1, st_str(err));
			goto out;
		}
		streamed++;
	}
	pass("held/stream");
	printf("# held: the WRITE completed with %s after %.3f s, %ld loopback WRITEs meanwhile\n", st_str(st), t,
	       streamed);
	check("held/retry-exceeded", st == IBV_WC_RETRY_EXC_ERR && t < HELD_LIMIT_S,
	      "the held WRITE completed with %s after %.3f s (want RETRY_EXC_ERR within %.0f s)", st_str(st), t,
	      HELD_LIMIT_S);
out:
	if (holding) {
		err = system(release);
		check("held/release", err == 0, "'%s' exited %d", release, err);
	}
	/* (Destroying a QP waits for its packets: RELEASE dropped them.) */
	pair_close(&s);
	end_close(&a);
	end_close(&b);
	printf("DONE\n");
	return failures ? 1 : 0;
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
	if (argc == 8 && !strcmp(argv[1], "held"))
		return held(argv[2], atoi(argv[3]), argv[4], atoi(argv[5]), argv[6], argv[7]);
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
	rnr_case(ctx, &gid, gid_index, pd, mr);
	check("teardown", ibv_dereg_mr(mr) == 0 && ibv_dealloc_pd(pd) == 0 && ibv_close_device(ctx) == 0, "%s",
	      strerror(errno));
	printf("DONE\n");
	return failures ? 1 : 0;
}
