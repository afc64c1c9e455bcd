/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Two RC QPs of one device connected to each other through the device's
 * own GID (loopback): "req" posts, "resp" answers. Each has its own CQ.
 * Needs check.h first.
 */
#ifndef RRXE_TESTS_VERBS_RC_PAIR_H
#define RRXE_TESTS_VERBS_RC_PAIR_H

#include <errno.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define PAIR_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

struct pair {
	struct ibv_cq *cq, *rcq;	/* req's, resp's */
	struct ibv_qp *req, *resp;
};

static inline int pair_to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = PAIR_ACCESS,
	};

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

/* RTR then RTS, 1 KiB path MTU, towards dest_qpn at gid, with the local
 * ACK timeout `timeout` (4.096 us * 2^timeout), `retry_cnt` transport
 * retries (7: infinite on rxe) and `rnr_retry` RNR retries (7: infinite). */
static inline int pair_to_rts_rnr(struct ibv_qp *qp, const union ibv_gid *gid, int gid_index, uint32_t dest_qpn,
				  uint8_t timeout, uint8_t retry_cnt, uint8_t rnr_retry)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = dest_qpn,
		.rq_psn = 0, .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
		.ah_attr = {
			.is_global = 1, .port_num = 1,
			.grh = { .dgid = *gid, .sgid_index = gid_index, .hop_limit = 1 },
		},
	};
	int err;

	err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = timeout;
	a.retry_cnt = retry_cnt;
	a.rnr_retry = rnr_retry;
	a.sq_psn = 0;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* The same with infinite RNR retries. */
static inline int pair_to_rts_retry(struct ibv_qp *qp, const union ibv_gid *gid, int gid_index, uint32_t dest_qpn,
				    uint8_t timeout, uint8_t retry_cnt)
{
	return pair_to_rts_rnr(qp, gid, gid_index, dest_qpn, timeout, retry_cnt, 7);
}

/* The same with infinite retries. */
static inline int pair_to_rts_timeout(struct ibv_qp *qp, const union ibv_gid *gid, int gid_index, uint32_t dest_qpn,
				      uint8_t timeout)
{
	return pair_to_rts_retry(qp, gid, gid_index, dest_qpn, timeout, 7);
}

/* RTR then RTS, 1 KiB path MTU, towards dest_qpn at gid. */
static inline int pair_to_rts(struct ibv_qp *qp, const union ibv_gid *gid, int gid_index, uint32_t dest_qpn)
{
	return pair_to_rts_timeout(qp, gid, gid_index, dest_qpn, 14);
}

static inline void pair_close(struct pair *p)
{
	if (p->req)
		ibv_destroy_qp(p->req);
	if (p->resp)
		ibv_destroy_qp(p->resp);
	if (p->cq)
		ibv_destroy_cq(p->cq);
	if (p->rcq)
		ibv_destroy_cq(p->rcq);
	memset(p, 0, sizeof(*p));
}

/* req on req_pd, resp on resp_pd, up to max_sge SGEs per WQE; a failure
 * is reported as check NAME. */
static inline int pair_open(struct pair *p, struct ibv_context *ctx, const union ibv_gid *gid, int gid_index,
			    struct ibv_pd *req_pd, struct ibv_pd *resp_pd, uint32_t max_sge, const char *name)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC, .sq_sig_all = 1,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = max_sge, .max_recv_sge = max_sge },
	};
	int err;

	memset(p, 0, sizeof(*p));
	p->cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	p->rcq = p->cq ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	if (!p->rcq) {
		fail(name, "ibv_create_cq: %s", strerror(errno));
		pair_close(p);
		return -1;
	}
	init.send_cq = init.recv_cq = p->cq;
	p->req = ibv_create_qp(req_pd, &init);
	init.send_cq = init.recv_cq = p->rcq;
	p->resp = p->req ? ibv_create_qp(resp_pd, &init) : NULL;
	if (!p->req || !p->resp) {
		fail(name, "ibv_create_qp: %s", strerror(errno));
		pair_close(p);
		return -1;
	}
	err = pair_to_init(p->req);
	err = err ? err : pair_to_init(p->resp);
	err = err ? err : pair_to_rts(p->req, gid, gid_index, p->resp->qp_num);
	err = err ? err : pair_to_rts(p->resp, gid, gid_index, p->req->qp_num);
	if (err) {
		fail(name, "ibv_modify_qp to RTS: %s", strerror(err));
		pair_close(p);
		return -1;
	}
	return 0;
}

/* How many bytes from the start of b (len bytes) are written (non-zero),
 * given that they are written in order: a high-water mark. */
static inline uint32_t pair_high_water(const volatile uint8_t *b, uint32_t len)
{
	uint32_t lo = 0, hi = len;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (b[mid])
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The device's sent_pkts_zcopy counter (packets sent without a copy),
 * or -1. */
static inline long long zcopy_count(const char *dev)
{
	char path[256];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/hw_counters/sent_pkts_zcopy", dev);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

#define PAIR_TIMEOUT_S 30
#define ST_POST_FAILED (-1)
#define ST_TIMEOUT (-2)

static inline const char *st_str(int st)
{
	if (st == ST_POST_FAILED)
		return "post or poll failed";
	if (st == ST_TIMEOUT)
		return "no completion within 30 s";
	return ibv_wc_status_str(st);
}

/* The next completion on cq, into wc: its status, or ST_*. */
static inline int pair_wait(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct timespec t0, t;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		n = ibv_poll_cq(cq, 1, wc);
		if (n < 0)
			return ST_POST_FAILED;
		if (n == 1)
			return wc->status;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > PAIR_TIMEOUT_S)
			return ST_TIMEOUT;
		usleep(100);
	}
}

#endif
