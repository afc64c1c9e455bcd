// SPDX-License-Identifier: GPL-2.0
/*
 * hostile: a process that writes random bytes into the queue rings it
 * shares with the kernel while it keeps posting work.
 *
 *   hostile [-s|-n] DEVICE GID_INDEX SECONDS [SEED]
 *
 * -s: corrupt only the slots (WQE and CQE contents), never the ring
 *     headers (indices, index_mask, log2_elem_size);
 * -n: corrupt nothing: only the random posts, doorbells, state changes and
 *     abrupt exits (to validate the harness on a driver that cannot take
 *     the corruption).
 *
 * Runs child processes one after another until SECONDS have passed. Each
 * child opens DEVICE, creates a CQ and two QPs of one type (RC, UC or UD,
 * in turn) connected to each other through the device's GID, finds the
 * rings librxe mapped for them (the new mappings of /dev/infiniband/uverbs*
 * in /proc/self/maps around each create: the CQ ring, each QP's send and
 * receive rings), and then, for a few seconds, mixes:
 *   - random bytes written into those rings: ring headers (producer and
 *     consumer indices, index_mask, log2_elem_size), WQE slots, whole slots;
 *   - ibv_post_send with random opcodes, lengths, keys and addresses, and
 *     ibv_post_recv, on the corrupted QP (librxe rings the doorbell);
 *   - bare doorbells: the uverbs POST_SEND command with no work requests;
 *   - ibv_poll_cq, QP state changes back to RTS, and re-creating the QPs.
 * Some children exit without destroying anything, some are killed by the
 * signal their own librxe raises on a garbage index (their problem, not
 * the kernel's): the kernel has to clean up after all of them.
 *
 * The kernel must survive this with a clean log, leak nothing, and keep
 * serving the device's other QPs; the guest script checks that. This
 * program prints one summary line and exits 0 unless it could not run at
 * all (no device, no rings found).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

static uint64_t rng_state;
static int slots_only, no_corruption;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static uint32_t rndn(uint32_t n) { return n ? rnd() % n : 0; }

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* --- ring discovery ----------------------------------------------------------- */

struct vma { uintptr_t start, end; };
struct vmas { struct vma v[256]; int n; };

static void uverbs_vmas(struct vmas *out)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];

	out->n = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		uintptr_t s, e;

		if (strstr(line, "/dev/infiniband/uverbs") &&
		    sscanf(line, "%" SCNxPTR "-%" SCNxPTR, &s, &e) == 2 && out->n < 256)
			out->v[out->n++] = (struct vma){ s, e };
	}
	fclose(f);
}

#define MAX_RINGS 16
static struct vma rings[MAX_RINGS];
static int nrings;

/* Records the mappings in b that are not in a as rings to corrupt. */
static void add_new(const struct vmas *a, const struct vmas *b)
{
	for (int i = 0; i < b->n; i++) {
		int found = 0;

		for (int j = 0; j < a->n; j++)
			found |= a->v[j].start == b->v[i].start && a->v[j].end == b->v[i].end;
		for (int j = 0; j < nrings; j++)
			found |= rings[j].start == b->v[i].start;
		if (!found && nrings < MAX_RINGS)
			rings[nrings++] = b->v[i];
	}
}

/* Forgets rings that are no longer mapped (their QP or CQ was destroyed). */
static void prune_rings(void)
{
	struct vmas m;
	int n = 0;

	uverbs_vmas(&m);
	for (int i = 0; i < nrings; i++)
		for (int j = 0; j < m.n; j++)
			if (m.v[j].start == rings[i].start && m.v[j].end == rings[i].end) {
				rings[n++] = rings[i];
				break;
			}
	nrings = n;
}

/* --- corruption ---------------------------------------------------------------------- */

static void corrupt(void)
{
	struct vma r;
	size_t len;
	volatile uint8_t *p;

	if (!nrings || no_corruption)
		return;
	r = rings[rndn(nrings)];
	len = r.end - r.start;
	p = (volatile uint8_t *)r.start;
	if (slots_only) {
		/* a few bytes, a 64-byte stretch or a page, all past the header */
		switch (rndn(3)) {
		case 0:
			for (int i = rndn(16) + 1; i > 0; i--)
				p[384 + rndn(len - 384)] = rnd();
			return;
		case 1:
		{
			size_t off = 384 + rndn(len - 384 - 64);

			for (int i = 0; i < 64; i++)
				p[off + i] = rnd();
			return;
		}
		default:
			for (size_t i = 384; i + 8 <= len && i < 384 + 4096; i += 8)
				*(volatile uint64_t *)(p + i) = rnd();
			return;
		}
	}
	switch (rndn(6)) {
	case 0: /* the header: log2_elem_size, index_mask (the first 8 bytes) */
		((volatile uint32_t *)p)[rndn(2)] = rnd();
		break;
	case 1: /* producer_index (byte 128) or consumer_index (byte 256) */
		*(volatile uint32_t *)(p + (rndn(2) ? 128 : 256)) = rndn(4) ? rnd() : rndn(64);
		break;
	case 2: /* one 64-byte stretch of a slot */
	{
		size_t off = 384 + rndn(len - 384 - 64);

		for (int i = 0; i < 64; i++)
			p[off + i] = rnd();
		break;
	}
	case 3: /* a few random bytes anywhere */
		for (int i = rndn(16) + 1; i > 0; i--)
			p[rndn(len)] = rnd();
		break;
	case 4: /* a whole page of the slots */
	{
		size_t pages = len / 4096;
		size_t off = pages > 1 ? 4096 * (1 + rndn(pages - 1)) : 384;
		size_t end = pages > 1 ? off + 4096 : len;

		for (size_t i = off; i + 8 <= end; i += 8)
			*(volatile uint64_t *)(p + i) = rnd();
		break;
	}
	default: /* indices near each other: a full or nearly empty ring */
	{
		uint32_t c = rnd();

		*(volatile uint32_t *)(p + 256) = c;
		*(volatile uint32_t *)(p + 128) = c + rndn(3) - 1;
		break;
	}
	}
}

/* --- verbs ---------------------------------------------------------------------------- */

struct world {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp[2];
	struct ibv_ah *ah;
	enum ibv_qp_type type;
	union ibv_gid gid;
	int gidx;
	uint8_t *buf;
	size_t len;
};

static struct ibv_qp *make_qp(struct world *w)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = w->cq, .recv_cq = w->cq, .qp_type = w->type,
		.cap = { .max_send_wr = 32, .max_recv_wr = 32, .max_send_sge = 4,
			 .max_recv_sge = 4, .max_inline_data = 64 },
	};
	struct vmas a, b;
	struct ibv_qp *qp;

	uverbs_vmas(&a);
	qp = ibv_create_qp(w->pd, &ia);
	uverbs_vmas(&b);
	if (qp)
		add_new(&a, &b);
	return qp;
}

static int to_rts(struct world *w, struct ibv_qp *qp, uint32_t dest_qpn)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x11111111,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC,
	};
	int init_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	if (w->type == IBV_QPT_UD)
		init_mask |= IBV_QP_QKEY;
	else
		init_mask |= IBV_QP_ACCESS_FLAGS;
	ibv_modify_qp(qp, &(struct ibv_qp_attr){ .qp_state = IBV_QPS_RESET }, IBV_QP_STATE);
	if (ibv_modify_qp(qp, &a, init_mask))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	if (w->type == IBV_QPT_UD) {
		if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
			return -1;
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = rndn(1 << 24);
		return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	}
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = w->gid;
	a.ah_attr.grh.sgid_index = w->gidx;
	a.ah_attr.grh.hop_limit = 1;
	int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;

	if (w->type == IBV_QPT_RC)
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	if (ibv_modify_qp(qp, &a, mask))
		return -1;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	a.timeout = 8; /* ~1 ms: a dead peer is noticed fast */
	a.retry_cnt = 1;
	a.rnr_retry = 1;
	a.max_rd_atomic = 4;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (w->type == IBV_QPT_RC)
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	return ibv_modify_qp(qp, &a, mask);
}

static void make_pair(struct world *w)
{
	for (int i = 0; i < 2; i++)
		if (!w->qp[i])
			w->qp[i] = make_qp(w);
	if (w->qp[0] && w->qp[1]) {
		to_rts(w, w->qp[0], w->qp[1]->qp_num);
		to_rts(w, w->qp[1], w->qp[0]->qp_num);
	}
}

static void random_send(struct world *w, struct ibv_qp *qp, struct ibv_qp *peer)
{
	static const enum ibv_wr_opcode ops[] = {
		IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM,
		IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD,
		IBV_WR_SEND_WITH_INV, IBV_WR_LOCAL_INV,
	};
	struct ibv_sge sge[4];
	struct ibv_send_wr wr = { 0 }, *bad;
	int nsge = rndn(5);

	for (int i = 0; i < nsge; i++) {
		uint32_t off = rndn(w->len);

		sge[i].addr = (uintptr_t)w->buf + (rndn(8) ? off : rnd());
		sge[i].length = rndn(8) ? rndn(w->len - off + 1) : rnd();
		sge[i].lkey = rndn(8) ? w->mr->lkey : rnd();
	}
	wr.wr_id = rnd();
	wr.sg_list = sge;
	wr.num_sge = nsge;
	wr.opcode = rndn(16) ? ops[rndn(sizeof(ops) / sizeof(ops[0]))] : rnd() % 16;
	wr.send_flags = rnd() & (IBV_SEND_SIGNALED | IBV_SEND_FENCE | IBV_SEND_SOLICITED |
				 (rndn(4) ? 0 : IBV_SEND_INLINE));
	wr.imm_data = rnd();
	if (w->type == IBV_QPT_UD) {
		wr.wr.ud.ah = w->ah;
		wr.wr.ud.remote_qpn = rndn(4) ? peer->qp_num : rnd();
		wr.wr.ud.remote_qkey = rndn(4) ? 0x11111111 : rnd();
	} else if (wr.opcode == IBV_WR_ATOMIC_CMP_AND_SWP || wr.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = (uintptr_t)w->buf + (rndn(4) ? 8 * rndn(w->len / 8) : rnd());
		wr.wr.atomic.rkey = rndn(4) ? w->mr->rkey : rnd();
		wr.wr.atomic.compare_add = rnd();
		wr.wr.atomic.swap = rnd();
	} else {
		wr.wr.rdma.remote_addr = (uintptr_t)w->buf + (rndn(4) ? rndn(w->len) : rnd());
		wr.wr.rdma.rkey = rndn(4) ? w->mr->rkey : rnd();
	}
	ibv_post_send(qp, &wr, &bad);
}

static void random_recv(struct world *w, struct ibv_qp *qp)
{
	struct ibv_sge sge[4];
	struct ibv_recv_wr wr = { 0 }, *bad;
	int nsge = rndn(5);

	for (int i = 0; i < nsge; i++) {
		uint32_t off = rndn(w->len);

		sge[i].addr = (uintptr_t)w->buf + off;
		sge[i].length = rndn(8) ? rndn(w->len - off + 1) : rnd();
		sge[i].lkey = rndn(8) ? w->mr->lkey : rnd();
	}
	wr.wr_id = rnd();
	wr.sg_list = sge;
	wr.num_sge = nsge;
	ibv_post_recv(qp, &wr, &bad);
}

/* The doorbell librxe rings after writing WQEs: POST_SEND with no WRs. */
static void doorbell(struct world *w, struct ibv_qp *qp)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_post_send cmd;
	} c = { 0 };
	struct ib_uverbs_post_send_resp resp;

	c.hdr.command = IB_USER_VERBS_CMD_POST_SEND;
	c.hdr.in_words = sizeof(c) / 4;
	c.hdr.out_words = sizeof(resp) / 4;
	c.cmd.response = (uintptr_t)&resp;
	c.cmd.qp_handle = qp->handle;
	c.cmd.wqe_size = sizeof(struct ib_uverbs_send_wr);
	if (write(w->ctx->cmd_fd, &c, sizeof(c)) < 0 && errno == EBADF)
		_exit(3);
}

static int child(struct ibv_device *dev, int gidx, enum ibv_qp_type type, double secs)
{
	struct world w = { .type = type, .gidx = gidx, .len = 8192 };
	struct ibv_wc wc[16];
	struct vmas a, b;
	double end = now() + secs;

	w.ctx = ibv_open_device(dev);
	if (!w.ctx || ibv_query_gid(w.ctx, 1, gidx, &w.gid))
		return 2;
	w.pd = ibv_alloc_pd(w.ctx);
	w.buf = aligned_alloc(4096, w.len);
	memset(w.buf, 0, w.len);
	w.mr = ibv_reg_mr(w.pd, w.buf, w.len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	uverbs_vmas(&a);
	w.cq = ibv_create_cq(w.ctx, 64, NULL, NULL, 0);
	uverbs_vmas(&b);
	if (!w.pd || !w.mr || !w.cq)
		return 2;
	add_new(&a, &b);
	struct ibv_ah_attr ah = {
		.is_global = 1, .port_num = 1,
		.grh = { .dgid = w.gid, .sgid_index = gidx, .hop_limit = 1 },
	};
	w.ah = ibv_create_ah(w.pd, &ah);
	make_pair(&w);
	if (!w.qp[0] || !w.qp[1] || nrings < 3)
		return 2;

	while (now() < end) {
		int q = rndn(2), op = rndn(100);
		struct ibv_qp *qp = w.qp[q], *peer = w.qp[!q];

		if (op < 30)
			corrupt();
		else if (op < 60)
			random_send(&w, qp, peer);
		else if (op < 75)
			random_recv(&w, rndn(2) ? qp : peer);
		else if (op < 85)
			doorbell(&w, qp);
		else if (op < 95)
			ibv_poll_cq(w.cq, 16, wc);
		else if (op < 98)
			make_pair(&w); /* back to RTS after an error */
		else {
			/* A new QP in place of one of them, with fresh rings. */
			ibv_destroy_qp(w.qp[q]);
			w.qp[q] = NULL;
			prune_rings();
			make_pair(&w);
			if (!w.qp[0] || !w.qp[1])
				return 0;
		}
	}
	if (rndn(2))
		return 0; /* exit holding everything: the kernel cleans up */
	for (int i = 0; i < 2; i++)
		if (w.qp[i])
			ibv_destroy_qp(w.qp[i]);
	if (w.ah)
		ibv_destroy_ah(w.ah);
	ibv_destroy_cq(w.cq);
	ibv_dereg_mr(w.mr);
	ibv_dealloc_pd(w.pd);
	ibv_close_device(w.ctx);
	return 0;
}

int main(int argc, char **argv)
{
	struct ibv_device **list, *dev = NULL;
	static const enum ibv_qp_type types[] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD };
	static const char *names[] = { "RC", "UC", "UD" };
	int gidx, runs = 0, clean = 0, signalled = 0, failed = 0;
	double secs, end;
	uint64_t seed;

	if (argc > 1 && (!strcmp(argv[1], "-s") || !strcmp(argv[1], "-n"))) {
		slots_only = argv[1][1] == 's';
		no_corruption = argv[1][1] == 'n';
		argv++;
		argc--;
	}
	if (argc < 4) {
		fprintf(stderr, "usage: hostile [-s|-n] DEVICE GID_INDEX SECONDS [SEED]\n");
		return 2;
	}
	gidx = atoi(argv[2]);
	secs = atof(argv[3]);
	seed = argc > 4 ? strtoull(argv[4], NULL, 0) : (uint64_t)time(NULL) * 2654435761u;
	printf("# hostile: seed %#" PRIx64 ", corrupting %s\n", seed,
	       no_corruption ? "nothing" : slots_only ? "slots only" : "headers and slots");
	list = ibv_get_device_list(NULL);
	for (int i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			dev = list[i];
	if (!dev) {
		fprintf(stderr, "hostile: no device %s\n", argv[1]);
		return 2;
	}
	end = now() + secs;
	while (now() < end) {
		int st, t = runs % 3;
		uint64_t s = seed + 0x9e3779b97f4a7c15ull * (runs + 1);
		pid_t pid;

		fflush(stdout);
		pid = fork();
		if (pid < 0) {
			perror("fork");
			return 2;
		}
		if (!pid) {
			rng_state = s | 1;
			alarm(60);
			_exit(child(dev, gidx, types[t], 2 + rndn(6)));
		}
		waitpid(pid, &st, 0);
		runs++;
		if (WIFSIGNALED(st)) {
			signalled++;
			printf("# run %d (%s, seed %#" PRIx64 "): killed by signal %d\n", runs, names[t], s,
			       WTERMSIG(st));
		} else if (WEXITSTATUS(st) == 0) {
			clean++;
		} else {
			failed++;
			printf("# run %d (%s, seed %#" PRIx64 "): exit %d\n", runs, names[t], s, WEXITSTATUS(st));
		}
	}
	printf("hostile: %d runs: %d exited, %d killed by a signal, %d could not set up\n", runs, clean,
	       signalled, failed);
	ibv_free_device_list(list);
	return failed > runs / 2 ? 1 : 0;
}
