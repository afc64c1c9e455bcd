// SPDX-License-Identifier: GPL-2.0
/*
 * tdtraffic: one kind of verified RDMA traffic between two QPs of one
 * process, run until it is stopped or its device goes away. It is the
 * load of tests/guest/teardown.sh, which tears devices down under it.
 *
 *   tdtraffic [options] MODE DEV_A GID_A [DEV_B GID_B]
 *
 *   MODE   rc  RC SEND/RECV, A to B then B to A, four messages at a time,
 *              1 byte to 8 KiB (up to 8 packets of the 1 KiB path MTU);
 *              every receive checked for length, slot and every byte;
 *          ud  UD SEND/RECV the same way, 16 to 1024 bytes; a message
 *              carries its sequence number, from which its length and
 *              bytes follow, so a late or lost one is still told apart
 *              from a corrupted one (UD may lose: counted, not fatal);
 *          mw  RDMA WRITE and READ from A through memory windows bound
 *              over an MR of B: alternately a type 1 window (ibv_bind_mw)
 *              and a type 2 window (IBV_WR_BIND_MW on B's QP), each over
 *              a random range; A writes a pattern through the window's
 *              rkey, B checks its whole MR against a shadow copy (the
 *              range written, nothing else changed), B rewrites the
 *              range, A reads it back and checks it. Then the type 2
 *              window is invalidated (LOCAL_INV by B, or SEND_WITH_INV
 *              from A, whose receive must report the rkey) and the type
 *              1 window rebound; every fourth window the old rkey is
 *              tried once more: the WRITE must fail with
 *              IBV_WC_REM_ACCESS_ERR and leave the MR alone, and the QP
 *              pair is reset and reconnected.
 *   DEV_A, GID_A   the device and GID index of side A (the requester);
 *   DEV_B, GID_B   side B's (default: A's device and GID: loopback).
 *
 *   -n PATH, -N PATH
 *            create side A's (-n) or B's (-N) UD address handle inside
 *            the network namespace PATH (/run/netns/NAME), the one that
 *            holds that side's net device: libibverbs resolves a UD
 *            destination's MAC with netlink in the caller's namespace.
 *            The namespace is left again and its file closed, so the
 *            process holds no reference to it.
 *   -L       bind the windows with IBV_ACCESS_LOCAL_WRITE added to their
 *            remote access (pyverbs does; ibv_bind_mw(3) lists only the
 *            remote flags, and C rxe binds without it).
 *   -T SEC   a wait longer than SEC (default 60) is a stall: exit 4.
 *   -i SEC   progress line interval (default 2).
 *   -d MS    pause MS milliseconds between batches (default 0), watching
 *            the async events meanwhile: bounds the load a process puts
 *            on a slow (emulated) machine.
 *   -y NICE  run at this nice value (as nice(1) would, without starting
 *            one more program).
 *
 * Each side opens its own device context. Completions are awaited on a
 * completion channel, with the async event fds of both contexts polled
 * at the same time.
 *
 * Output: "ready" once connected; a progress line every interval:
 *   tdtraffic MODE DEV_A->DEV_B: progress ops N bytes N lost N late N probes N
 * and a last line "exit CODE (REASON): ops ... bytes ...". "bytes" counts
 * payload bytes that arrived and were checked.
 *
 * Exit status:
 *   0  stopped by SIGTERM or SIGINT, every byte so far as expected;
 *   1  data mismatch, or a successful completion that says the wrong
 *      thing (length, slot, opcode, source QP, invalidated rkey);
 *   2  setup failed;
 *   3  the device went away: IBV_EVENT_PORT_ERR or DEVICE_FATAL, or an
 *      error completion or failed verb that was not asked for;
 *   4  stalled: no completion within -T seconds.
 * In every case the process destroys what it created before it exits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

enum { EX_STOPPED, EX_MISMATCH, EX_SETUP, EX_GONE, EX_STALL };

#define NB 4			/* messages per batch */
#define RC_MAX 8192
#define RC_SLOT (RC_MAX + 64)
#define UD_MAX 1024
#define UD_GRH 40
#define UD_SLOT (UD_GRH + UD_MAX)
#define UD_QKEY 0x11111111
#define MW_MR (64 * 1024)
#define MW_MAX (16 * 1024)

struct side {
	const char *dev;
	int gidx;
	struct ibv_context *ctx;
	struct ibv_comp_channel *ch;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	union ibv_gid gid;
	uint8_t *buf;
	size_t len;
	struct ibv_mr *mr;
	struct ibv_ah *ah;	/* UD: towards the other side */
	int armed;
};

static struct side A, B;
static const char *mode, *netns_a, *netns_b;
static volatile sig_atomic_t stop;
static double stall_s = 60, interval = 2, last_tick;
static int pause_ms;
static uint64_t salt, iter;
static uint64_t ops, bytes, lost, late, probes;
static int in_finish;
static unsigned int mw_access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

/* mw mode */
static struct ibv_mw *mw1, *mw2;
static uint8_t *shadow;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void counters(FILE *f)
{
	fprintf(f, "ops %" PRIu64 " bytes %" PRIu64 " lost %" PRIu64 " late %" PRIu64 " probes %" PRIu64,
		ops, bytes, lost, late, probes);
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	printf("tdtraffic %s %s->%s: ", mode, A.dev, B.dev);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static void tick(void)
{
	if (now() - last_tick < interval)
		return;
	last_tick = now();
	printf("tdtraffic %s %s->%s: progress ", mode, A.dev, B.dev);
	counters(stdout);
	printf("\n");
	fflush(stdout);
}

static void side_close(struct side *s)
{
	if (s->qp)
		ibv_destroy_qp(s->qp);
	if (s->ah)
		ibv_destroy_ah(s->ah);
	if (s->mr)
		ibv_dereg_mr(s->mr);
	if (s->cq)
		ibv_destroy_cq(s->cq);
	if (s->ch)
		ibv_destroy_comp_channel(s->ch);
	if (s->pd)
		ibv_dealloc_pd(s->pd);
	if (s->ctx)
		ibv_close_device(s->ctx);
	free(s->buf);
	s->qp = NULL, s->ah = NULL, s->mr = NULL, s->cq = NULL, s->ch = NULL, s->pd = NULL, s->ctx = NULL;
	s->buf = NULL;
}

/* Prints the last line, destroys everything, exits with code. */
static void finish(int code, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
static void finish(int code, const char *fmt, ...)
{
	va_list ap;

	if (in_finish)
		_exit(code);
	in_finish = 1;
	printf("tdtraffic %s %s->%s: exit %d (", mode, A.dev, B.dev, code);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("): ");
	counters(stdout);
	printf("\n");
	fflush(stdout);
	/* The QPs first: a window of type 2 is bound to B's QP. */
	if (B.qp)
		ibv_destroy_qp(B.qp), B.qp = NULL;
	if (A.qp)
		ibv_destroy_qp(A.qp), A.qp = NULL;
	if (mw1)
		ibv_dealloc_mw(mw1);
	if (mw2)
		ibv_dealloc_mw(mw2);
	side_close(&A);
	side_close(&B);
	free(shadow);
	exit(code);
}

/* --- patterns ------------------------------------------------------------ */

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t rnd(void)
{
	static uint64_t n;

	return mix(salt ^ (0x5bd1e995ull * ++n));
}

/* Bytes [0, n) of the stream of seed: word i is mix(seed ^ mix(i)). */
static void fill(uint8_t *p, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i += 8) {
		uint64_t w = mix(seed ^ mix(i / 8));
		memcpy(p + i, &w, n - i < 8 ? n - i : 8);
	}
}

/* The offset of the first byte of p[0, n) that is not seed's, or -1. */
static long check(const uint8_t *p, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i += 8) {
		uint64_t w = mix(seed ^ mix(i / 8));
		size_t k = n - i < 8 ? n - i : 8;

		if (memcmp(p + i, &w, k))
			for (size_t j = 0; j < k; j++)
				if (p[i + j] != ((uint8_t *)&w)[j])
					return i + j;
	}
	return -1;
}

static void expect(const uint8_t *p, size_t n, uint64_t seed, const char *what)
{
	long bad = check(p, n, seed);

	if (bad >= 0)
		finish(EX_MISMATCH, "data mismatch: %s, byte %ld of %zu", what, bad, n);
}

/* --- waiting ------------------------------------------------------------- */

static void events(struct side *s)
{
	struct ibv_async_event ev;

	if (!s->ctx)
		return;
	while (ibv_get_async_event(s->ctx, &ev) == 0) {
		enum ibv_event_type t = ev.event_type;

		ibv_ack_async_event(&ev);
		if (t == IBV_EVENT_PORT_ERR || t == IBV_EVENT_DEVICE_FATAL)
			finish(EX_GONE, "%s on %s", ibv_event_type_str(t), s->dev);
		say("event %s on %s", ibv_event_type_str(t), s->dev);
	}
}

/*
 * The next completion of s's CQ into wc: 1, or 0 when asked to stop, or
 * -1 after timeout seconds. Async events of both sides are handled
 * meanwhile (a port error ends the process).
 */
static int next_wc(struct side *s, struct ibv_wc *wc, double timeout)
{
	double t0 = now();

	for (;;) {
		struct pollfd p[3] = {
			{ .fd = s->ch->fd, .events = POLLIN },
			{ .fd = A.ctx->async_fd, .events = POLLIN },
			{ .fd = B.ctx->async_fd, .events = POLLIN },
		};
		struct ibv_cq *ev_cq;
		void *ev_ctx;
		int n = ibv_poll_cq(s->cq, 1, wc);

		if (n < 0)
			finish(EX_GONE, "ibv_poll_cq on %s failed", s->dev);
		if (n == 1)
			return 1;
		if (!s->armed) {
			if (ibv_req_notify_cq(s->cq, 0))
				finish(EX_GONE, "ibv_req_notify_cq on %s: %s", s->dev, strerror(errno));
			s->armed = 1;
			continue;
		}
		poll(p, 3, 200);
		if ((p[0].revents & POLLIN) && ibv_get_cq_event(s->ch, &ev_cq, &ev_ctx) == 0) {
			ibv_ack_cq_events(ev_cq, 1);
			s->armed = 0;
		}
		events(&A);
		events(&B);
		tick();
		if (stop)
			return 0;
		if (now() - t0 > timeout)
			return -1;
	}
}

/* Like next_wc, but stopping ends the process and a stall is fatal. */
static void must_wc(struct side *s, struct ibv_wc *wc, const char *what)
{
	int r = next_wc(s, wc, stall_s);

	if (r == 0)
		finish(EX_STOPPED, "stopped");
	if (r < 0)
		finish(EX_STALL, "no completion for %s on %s within %.0f s", what, s->dev, stall_s);
}

/* The pause between batches (-d), and the end of a batch: stop if asked. */
static void between(void)
{
	if (pause_ms > 0 && !stop) {
		struct pollfd p[2] = {
			{ .fd = A.ctx->async_fd, .events = POLLIN },
			{ .fd = B.ctx->async_fd, .events = POLLIN },
		};

		poll(p, 2, pause_ms);
		events(&A);
		events(&B);
	}
	tick();
	if (stop)
		finish(EX_STOPPED, "stopped");
}

/* A completion that must have succeeded. */
static void must_succeed(struct side *s, const struct ibv_wc *wc, const char *what)
{
	if (wc->status != IBV_WC_SUCCESS)
		finish(EX_GONE, "%s on %s completed with %s", what, s->dev, ibv_wc_status_str(wc->status));
}

static void post_send(struct side *s, struct ibv_send_wr *wr, const char *what)
{
	struct ibv_send_wr *bad;
	int err = ibv_post_send(s->qp, wr, &bad);

	if (err)
		finish(EX_GONE, "posting %s on %s: %s", what, s->dev, strerror(err));
}

static void post_recv(struct side *s, void *addr, uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len, .lkey = s->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;
	int err = ibv_post_recv(s->qp, &wr, &bad);

	if (err)
		finish(EX_GONE, "posting a receive on %s: %s", s->dev, strerror(err));
}

/* --- set-up ------------------------------------------------------------- */

static void side_open(struct side *s, size_t buflen, int access)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	int flags;

	for (int i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), s->dev))
			s->ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!s->ctx)
		finish(EX_SETUP, "cannot open %s", s->dev);
	flags = fcntl(s->ctx->async_fd, F_GETFL);
	if (fcntl(s->ctx->async_fd, F_SETFL, flags | O_NONBLOCK))
		finish(EX_SETUP, "async fd: %s", strerror(errno));
	if (ibv_query_gid(s->ctx, 1, s->gidx, &s->gid))
		finish(EX_SETUP, "no GID %d on %s", s->gidx, s->dev);
	s->ch = ibv_create_comp_channel(s->ctx);
	if (!s->ch)
		finish(EX_SETUP, "ibv_create_comp_channel on %s: %s", s->dev, strerror(errno));
	flags = fcntl(s->ch->fd, F_GETFL);
	if (fcntl(s->ch->fd, F_SETFL, flags | O_NONBLOCK))
		finish(EX_SETUP, "channel fd: %s", strerror(errno));
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = s->pd ? ibv_create_cq(s->ctx, 64, NULL, s->ch, 0) : NULL;
	if (!s->cq)
		finish(EX_SETUP, "PD or CQ on %s: %s", s->dev, strerror(errno));
	s->len = buflen;
	s->buf = aligned_alloc(4096, buflen);
	if (!s->buf)
		finish(EX_SETUP, "out of memory");
	memset(s->buf, 0, buflen);
	s->mr = ibv_reg_mr(s->pd, s->buf, buflen, access);
	if (!s->mr)
		finish(EX_SETUP, "ibv_reg_mr on %s: %s", s->dev, strerror(errno));
}

static void qp_create(struct side *s, enum ibv_qp_type type)
{
	struct ibv_qp_init_attr init = {
		.send_cq = s->cq, .recv_cq = s->cq, .qp_type = type, .sq_sig_all = 0,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	s->qp = ibv_create_qp(s->pd, &init);
	if (!s->qp)
		finish(EX_SETUP, "ibv_create_qp on %s: %s", s->dev, strerror(errno));
}

/* RC: RESET (from any state), INIT, RTR towards peer, RTS. */
static int rc_connect(struct side *s, struct side *peer)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	int err;

	err = ibv_modify_qp(s->qp, &a, IBV_QP_STATE);
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	err = ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer->qp->qp_num;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = peer->gid;
	a.ah_attr.grh.sgid_index = s->gidx;
	a.ah_attr.grh.hop_limit = 64;
	err = ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	/* 4.096 us * 2^18 = 1.07 s, 7 retries: a loaded TCG guest may not
	 * answer within the usual 67 ms. */
	a.timeout = 18;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	return ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static void rc_pair(void)
{
	int err;

	qp_create(&A, IBV_QPT_RC);
	qp_create(&B, IBV_QPT_RC);
	err = rc_connect(&A, &B);
	err = err ? err : rc_connect(&B, &A);
	if (err)
		finish(EX_SETUP, "connecting the RC QPs: %s", strerror(err));
}

static void ud_up(struct side *s)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = UD_QKEY };
	int err;

	err = ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
	a.qp_state = IBV_QPS_RTR;
	err = err ? err : ibv_modify_qp(s->qp, &a, IBV_QP_STATE);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	err = err ? err : ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	if (err)
		finish(EX_SETUP, "UD QP on %s to RTS: %s", s->dev, strerror(err));
}

static void ud_ah(struct side *s, struct side *peer, const char *netns)
{
	struct ibv_ah_attr a = {
		.is_global = 1, .port_num = 1,
		.grh = { .dgid = peer->gid, .sgid_index = s->gidx, .hop_limit = 64 },
	};
	int home = -1, there = -1;

	if (netns) {
		home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
		there = open(netns, O_RDONLY | O_CLOEXEC);
		if (home < 0 || there < 0 || setns(there, CLONE_NEWNET))
			finish(EX_SETUP, "entering %s: %s", netns, strerror(errno));
		close(there);
	}
	s->ah = ibv_create_ah(s->pd, &a);
	if (netns) {
		if (setns(home, CLONE_NEWNET))
			finish(EX_SETUP, "leaving %s: %s", netns, strerror(errno));
		close(home);
	}
	if (!s->ah)
		finish(EX_SETUP, "ibv_create_ah on %s: %s", s->dev, strerror(errno));
}

/* --- rc ------------------------------------------------------------------ */

static size_t pick_size(size_t max)
{
	uint64_t r = rnd();

	switch (r % 4) {
	case 0: return 1 + (r >> 8) % 64;
	case 1: return 1000 + (r >> 8) % 100;		/* around the 1 KiB MTU */
	case 2: return 1 + (r >> 8) % max;
	default: return max - (r >> 8) % 8;
	}
}

/* NB messages from s to r; the receive slots follow the send slots. */
static void rc_batch(struct side *s, struct side *r, int dir)
{
	size_t sz[NB];
	uint64_t seed[NB];
	int sends = 0, recvs = 0;
	struct ibv_wc wc;

	for (int k = 0; k < NB; k++)
		post_recv(r, r->buf + (NB + k) * RC_SLOT, RC_SLOT, k);
	for (int k = 0; k < NB; k++) {
		struct ibv_sge sge;
		struct ibv_send_wr wr = { .wr_id = 100 + k, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };

		sz[k] = pick_size(RC_MAX);
		seed[k] = salt ^ iter << 8 ^ dir << 4 ^ k;
		fill(s->buf + k * RC_SLOT, sz[k], seed[k]);
		sge = (struct ibv_sge){ (uintptr_t)(s->buf + k * RC_SLOT), sz[k], s->mr->lkey };
		post_send(s, &wr, "an RC SEND");
	}
	while (sends < NB) {
		must_wc(s, &wc, "an RC SEND");
		must_succeed(s, &wc, "an RC SEND");
		if (wc.opcode != IBV_WC_SEND || wc.wr_id != (uint64_t)(100 + sends))
			finish(EX_MISMATCH, "bad send completion: opcode %d wr_id %" PRIu64, wc.opcode, wc.wr_id);
		sends++;
	}
	while (recvs < NB) {
		char what[64];
		int k;

		must_wc(r, &wc, "an RC RECV");
		must_succeed(r, &wc, "an RC RECV");
		k = (int)wc.wr_id;
		if (wc.opcode != IBV_WC_RECV || k != recvs || wc.qp_num != r->qp->qp_num)
			finish(EX_MISMATCH, "bad receive completion: opcode %d wr_id %d (want %d) qp %u",
			       wc.opcode, k, recvs, wc.qp_num);
		if (wc.byte_len != sz[k])
			finish(EX_MISMATCH, "receive %d: %u bytes, sent %zu", k, wc.byte_len, sz[k]);
		snprintf(what, sizeof(what), "RC message %d of batch %" PRIu64 " dir %d", k, iter, dir);
		expect(r->buf + (NB + k) * RC_SLOT, sz[k], seed[k], what);
		ops++;
		bytes += sz[k];
		recvs++;
	}
}

static void run_rc(void)
{
	side_open(&A, 2 * NB * RC_SLOT, IBV_ACCESS_LOCAL_WRITE);
	side_open(&B, 2 * NB * RC_SLOT, IBV_ACCESS_LOCAL_WRITE);
	rc_pair();
	say("ready");
	for (;; iter++) {
		rc_batch(&A, &B, 0);
		rc_batch(&B, &A, 1);
		between();
	}
}

/* --- ud ------------------------------------------------------------------ */

static uint64_t ud_seq[2];

static size_t ud_size(uint64_t seq, int dir)
{
	return 16 + mix(salt ^ seq << 1 ^ dir) % (UD_MAX - 16 + 1);
}

static uint64_t ud_seed(uint64_t seq, int dir)
{
	return mix(salt ^ 0xd00d ^ seq << 1 ^ dir);
}

/* r's receive slot k, reposted. */
static void ud_repost(struct side *r, int k)
{
	post_recv(r, r->buf + (NB + k) * UD_SLOT, UD_SLOT, k);
}

/*
 * A receive completion on r, of direction dir (0: A to B), checked by
 * the sequence number the message carries; its slot is reposted.
 * Returns that sequence number.
 */
static uint64_t ud_received(struct side *r, struct side *s, const struct ibv_wc *wc, int dir)
{
	uint8_t want[UD_MAX], *p;
	uint64_t seq;
	size_t sz;
	int k = (int)wc->wr_id;

	must_succeed(r, wc, "a UD RECV");
	if (wc->opcode != IBV_WC_RECV || k < 0 || k >= NB || wc->src_qp != s->qp->qp_num ||
	    wc->byte_len < UD_GRH + 16)
		finish(EX_MISMATCH, "bad UD receive: opcode %d wr_id %d src_qp %u (want %u) %u bytes",
		       wc->opcode, k, wc->src_qp, s->qp->qp_num, wc->byte_len);
	p = r->buf + (NB + k) * UD_SLOT + UD_GRH;
	memcpy(&seq, p, 8);
	if (seq >= ud_seq[dir])
		finish(EX_MISMATCH, "UD message with sequence %" PRIu64 ", only %" PRIu64 " sent", seq, ud_seq[dir]);
	sz = ud_size(seq, dir);
	if (wc->byte_len != UD_GRH + sz)
		finish(EX_MISMATCH, "UD message %" PRIu64 ": %u bytes, want %zu", seq, wc->byte_len, UD_GRH + sz);
	/* The first 8 bytes carry the sequence number. */
	fill(want, sz, ud_seed(seq, dir));
	if (memcmp(want + 8, p + 8, sz - 8))
		finish(EX_MISMATCH, "data mismatch: UD message %" PRIu64 " direction %d", seq, dir);
	ud_repost(r, k);
	ops++;
	bytes += sz;
	return seq;
}

static void ud_batch(struct side *s, struct side *r, int dir)
{
	uint64_t first = ud_seq[dir];
	int sends = 0, got = 0;
	struct ibv_wc wc;

	for (int k = 0; k < NB; k++) {
		uint64_t seq = ud_seq[dir]++;
		size_t sz = ud_size(seq, dir);
		uint8_t *p = s->buf + k * UD_SLOT;
		struct ibv_sge sge = { (uintptr_t)p, sz, s->mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 100 + k, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
					  .wr.ud = { .ah = s->ah, .remote_qpn = r->qp->qp_num,
						     .remote_qkey = UD_QKEY } };

		fill(p, sz, ud_seed(seq, dir));
		memcpy(p, &seq, 8);
		post_send(s, &wr, "a UD SEND");
	}
	while (sends < NB) {
		must_wc(s, &wc, "a UD SEND");
		if (wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV) {
			/* A late message of the other direction. */
			ud_received(s, r, &wc, !dir);
			late++;
			continue;
		}
		must_succeed(s, &wc, "a UD SEND");
		if (wc.opcode != IBV_WC_SEND)
			finish(EX_MISMATCH, "bad UD send completion: opcode %d", wc.opcode);
		sends++;
	}
	while (got < NB) {
		int w = next_wc(r, &wc, 5);

		if (w == 0)
			finish(EX_STOPPED, "stopped");
		if (w < 0) {
			lost += NB - got;
			return;
		}
		if (ud_received(r, s, &wc, dir) >= first)
			got++;
		else
			late++;
	}
}

static void run_ud(void)
{
	side_open(&A, 2 * NB * UD_SLOT, IBV_ACCESS_LOCAL_WRITE);
	side_open(&B, 2 * NB * UD_SLOT, IBV_ACCESS_LOCAL_WRITE);
	qp_create(&A, IBV_QPT_UD);
	qp_create(&B, IBV_QPT_UD);
	ud_up(&A);
	ud_up(&B);
	ud_ah(&A, &B, netns_a);
	ud_ah(&B, &A, netns_b);
	for (int k = 0; k < NB; k++) {
		ud_repost(&A, k);
		ud_repost(&B, k);
	}
	say("ready");
	for (;; iter++) {
		ud_batch(&A, &B, 0);
		ud_batch(&B, &A, 1);
		between();
	}
}

/* --- mw ------------------------------------------------------------------ */

/* B's whole MR must equal the shadow. */
static void mr_unchanged(const char *what)
{
	for (size_t i = 0; i < MW_MR; i++)
		if (B.buf[i] != shadow[i])
			finish(EX_MISMATCH, "data mismatch: B's MR byte %zu changed (%s)", i, what);
}

/* One completion on s that must be a success of opcode op. */
static void mw_wait(struct side *s, enum ibv_wc_opcode op, const char *what)
{
	struct ibv_wc wc;

	must_wc(s, &wc, what);
	must_succeed(s, &wc, what);
	if (wc.opcode != op)
		finish(EX_MISMATCH, "%s: completion opcode %d, want %d", what, wc.opcode, op);
}

/* A RDMA WRITEs or READs len bytes at A's offset aoff to addr with rkey. */
static void mw_rdma(enum ibv_wr_opcode op, size_t aoff, uint64_t addr, size_t len, uint32_t rkey)
{
	struct ibv_sge sge = { (uintptr_t)(A.buf + aoff), len, A.mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { .remote_addr = addr, .rkey = rkey } };

	post_send(&A, &wr, op == IBV_WR_RDMA_WRITE ? "an RDMA WRITE" : "an RDMA READ");
}

/* Binds window type t over B's [off, off + len): its rkey. */
static uint32_t mw_bind(int t, size_t off, size_t len)
{
	struct ibv_mw_bind_info info = {
		.mr = B.mr, .addr = (uintptr_t)(B.buf + off), .length = len, .mw_access_flags = mw_access,
	};

	if (t == 1) {
		struct ibv_mw_bind bind = { .wr_id = 7, .send_flags = IBV_SEND_SIGNALED, .bind_info = info };
		int err = ibv_bind_mw(B.qp, mw1, &bind);

		if (err)
			finish(EX_GONE, "ibv_bind_mw (type 1) on %s: %s", B.dev, strerror(err));
		mw_wait(&B, IBV_WC_BIND_MW, "binding the type 1 window");
		return mw1->rkey;
	} else {
		uint32_t rkey = ibv_inc_rkey(mw2->rkey);
		struct ibv_send_wr wr = { .wr_id = 8, .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED,
					  .bind_mw = { .mw = mw2, .rkey = rkey, .bind_info = info } };

		post_send(&B, &wr, "IBV_WR_BIND_MW (type 2)");
		mw_wait(&B, IBV_WC_BIND_MW, "binding the type 2 window");
		mw2->rkey = rkey;
		return rkey;
	}
}

/* Invalidates the type 2 window's rkey: B's LOCAL_INV, or A's SEND_WITH_INV. */
static void mw_invalidate(uint32_t rkey, int remote)
{
	if (!remote) {
		struct ibv_send_wr wr = { .wr_id = 9, .opcode = IBV_WR_LOCAL_INV, .send_flags = IBV_SEND_SIGNALED,
					  .invalidate_rkey = rkey };

		post_send(&B, &wr, "LOCAL_INV");
		mw_wait(&B, IBV_WC_LOCAL_INV, "LOCAL_INV of the type 2 window");
	} else {
		struct ibv_sge sge = { (uintptr_t)A.buf, 8, A.mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 10, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND_WITH_INV,
					  .send_flags = IBV_SEND_SIGNALED, .invalidate_rkey = rkey };
		struct ibv_wc wc;

		/* The receive lands in B's MR past the windows' reach. */
		post_recv(&B, B.buf + MW_MR, 64, 11);
		post_send(&A, &wr, "SEND_WITH_INV");
		mw_wait(&A, IBV_WC_SEND, "SEND_WITH_INV");
		must_wc(&B, &wc, "the receive of SEND_WITH_INV");
		must_succeed(&B, &wc, "the receive of SEND_WITH_INV");
		/* rxe's CQ ring carries the kernel's flags: IB_WC_WITH_INVALIDATE
		 * is bit 2, where libibverbs has IBV_WC_IP_CSUM_OK (C rxe and
		 * librxe 44 alike); either bit is taken. */
		if (wc.opcode != IBV_WC_RECV || !(wc.wc_flags & (IBV_WC_WITH_INV | IBV_WC_IP_CSUM_OK)) ||
		    wc.invalidated_rkey != rkey)
			finish(EX_MISMATCH, "SEND_WITH_INV received as opcode %d flags %#x rkey %#x, want rkey %#x",
			       wc.opcode, wc.wc_flags, wc.invalidated_rkey, rkey);
	}
}

/*
 * The stale rkey (and an address it covered) must not reach B's memory:
 * the WRITE fails with IBV_WC_REM_ACCESS_ERR. Both QPs are then reset
 * and reconnected.
 */
static void mw_probe(uint32_t rkey, uint64_t addr)
{
	struct ibv_wc wc;
	int err;

	fill(A.buf, 64, salt ^ 0xbad);
	mw_rdma(IBV_WR_RDMA_WRITE, 0, addr, 64, rkey);
	must_wc(&A, &wc, "a WRITE through a stale rkey");
	if (wc.status == IBV_WC_SUCCESS)
		finish(EX_MISMATCH, "a WRITE through the invalidated rkey %#x succeeded", rkey);
	if (wc.status != IBV_WC_REM_ACCESS_ERR)
		finish(EX_GONE, "a WRITE through a stale rkey completed with %s, want %s",
		       ibv_wc_status_str(wc.status), ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
	mr_unchanged("a WRITE through a stale rkey");
	probes++;
	err = rc_connect(&A, &B);
	err = err ? err : rc_connect(&B, &A);
	if (err)
		finish(EX_GONE, "reconnecting after the stale-rkey probe: %s", strerror(err));
	/* Whatever the error flushed. */
	while (ibv_poll_cq(A.cq, 1, &wc) > 0 || ibv_poll_cq(B.cq, 1, &wc) > 0)
		if (wc.status != IBV_WC_WR_FLUSH_ERR)
			finish(EX_GONE, "after the probe: a completion with %s", ibv_wc_status_str(wc.status));
}

static void run_mw(void)
{
	side_open(&A, 2 * MW_MAX, IBV_ACCESS_LOCAL_WRITE);
	/* 64 bytes past the windows' range take SEND_WITH_INV's receive. */
	side_open(&B, MW_MR + 4096,
		  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND);
	shadow = calloc(1, MW_MR);
	mw1 = ibv_alloc_mw(B.pd, IBV_MW_TYPE_1);
	mw2 = ibv_alloc_mw(B.pd, IBV_MW_TYPE_2);
	if (!shadow || !mw1 || !mw2)
		finish(EX_SETUP, "ibv_alloc_mw on %s: %s", B.dev, strerror(errno));
	rc_pair();
	say("ready");
	for (;; iter++) {
		int t = iter & 1 ? 2 : 1;
		size_t len = 1 + rnd() % MW_MAX;
		size_t off = rnd() % (MW_MR - len + 1);
		size_t wlo = off - rnd() % (off + 1) % 256;		/* the window: a little wider */
		size_t whi = off + len + rnd() % (MW_MR - off - len + 1) % 256;
		uint64_t addr = (uintptr_t)(B.buf + off);
		uint64_t seed = salt ^ iter << 4;
		uint32_t rkey;

		rkey = mw_bind(t, wlo, whi - wlo);
		mr_unchanged("binding");

		/* WRITE through the window; B checks its whole MR. */
		fill(A.buf, len, seed);
		mw_rdma(IBV_WR_RDMA_WRITE, 0, addr, len, rkey);
		mw_wait(&A, IBV_WC_RDMA_WRITE, "an RDMA WRITE through a window");
		fill(shadow + off, len, seed);
		mr_unchanged("an RDMA WRITE through a window");
		ops++;
		bytes += len;

		/* B rewrites the range; A READs it through the window. */
		fill(B.buf + off, len, seed ^ 1);
		fill(shadow + off, len, seed ^ 1);
		memset(A.buf + MW_MAX, 0, len);
		mw_rdma(IBV_WR_RDMA_READ, MW_MAX, addr, len, rkey);
		mw_wait(&A, IBV_WC_RDMA_READ, "an RDMA READ through a window");
		expect(A.buf + MW_MAX, len, seed ^ 1, "an RDMA READ through a window");
		ops++;
		bytes += len;

		/* Invalidate (type 2) or rebind elsewhere (type 1); now and
		 * then check that the old rkey is dead. */
		if (t == 2) {
			mw_invalidate(rkey, (iter >> 1) & 1);
		} else {
			size_t o2 = rnd() % (MW_MR - 4096);

			mw_bind(1, o2, 4096);
		}
		if ((iter & 7) >= 6)
			mw_probe(rkey, addr);
		between();
	}
}

/* --- main ---------------------------------------------------------------- */

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(void)
{
	fprintf(stderr, "usage: tdtraffic [-n|-N NETNS_PATH] [-L] [-T SEC] [-i SEC] [-d MS] [-y NICE] rc|ud|mw DEV_A GID_A [DEV_B GID_B]\n");
	exit(EX_SETUP);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	int c;

	while ((c = getopt(argc, argv, "n:N:LT:i:d:y:")) != -1) {
		switch (c) {
		case 'n': netns_a = optarg; break;
		case 'N': netns_b = optarg; break;
		case 'L': mw_access |= IBV_ACCESS_LOCAL_WRITE; break;
		case 'T': stall_s = atof(optarg); break;
		case 'i': interval = atof(optarg); break;
		case 'd': pause_ms = atoi(optarg); break;
		case 'y':
			if (setpriority(PRIO_PROCESS, 0, atoi(optarg)))
				perror("setpriority");
			break;
		default: usage();
		}
	}
	if (argc - optind != 3 && argc - optind != 5)
		usage();
	mode = argv[optind];
	A.dev = argv[optind + 1];
	A.gidx = atoi(argv[optind + 2]);
	B.dev = argc - optind == 5 ? argv[optind + 3] : A.dev;
	B.gidx = argc - optind == 5 ? atoi(argv[optind + 4]) : A.gidx;
	salt = mix(getpid() ^ (uint64_t)(now() * 1e9));
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	last_tick = now();
	if (!strcmp(mode, "rc"))
		run_rc();
	else if (!strcmp(mode, "ud"))
		run_ud();
	else if (!strcmp(mode, "mw"))
		run_mw();
	usage();
}
