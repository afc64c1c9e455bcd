// SPDX-License-Identifier: GPL-2.0
/*
 * Multi-packet messages whose memory is named by several keys, on one RC
 * pair of a device connected to itself, 1 KiB path MTU.
 *
 *   sge_keys DEVICE [GID_INDEX]
 *
 * rrxe looks a key up once per message and batch (mem::KeyCache), not
 * per packet. These checks would catch a lookup kept too long or for the
 * wrong key:
 *
 *   write/   a 5000-byte WRITE gathered from three SGEs of three MRs, at
 *            odd offsets, lands at an odd remote offset, nothing around it
 *            changes; two WRITEs posted back to back to two MRs (the same
 *            offsets, different rkeys) each land in their own;
 *   send/    a SEND gathered from three MRs lands in a receive WQE whose
 *            SGEs go X, Y, X (a key comes back within one message), with
 *            byte_len right and the gaps between the SGEs untouched;
 *   read/    a READ scattered the same way X, Y, X;
 *   wrong-key/  a second SGE naming the first SGE's memory with a wrong
 *            key fails the gather (LOC_PROT_ERR) and the placement of a
 *            SEND (REM_OP_ERR, the receive LOC_PROT_ERR): a lookup that
 *            covers the bytes is no good for another key (on C rxe, which
 *            reports other statuses for these, the exact-status checks
 *            are SKIPs);
 *   range/   a WRITE running past its MR's end completes with
 *            REM_ACCESS_ERR and the memory after the MR is untouched; the
 *            responder's QP, which no receive WQE can tell, gets the
 *            affiliated asynchronous error IBV_EVENT_QP_ACCESS_ERR
 *            (C9-222.1.1; C rxe has it from Linux 7.1, a SKIP on 6.12's),
 *            and the requester's QP none; the pair is replaced and a good
 *            WRITE to the same MR works;
 *   dma-lkey/  the device's local_dma_lkey (rrxe's is a constant, so an
 *            attacker knows it), which reaches all kernel memory for a
 *            kernel QP, named by this user process: as the lkey of a SEND's
 *            or a WRITE's data (at a user address and at a guessed kernel
 *            direct-map address), of a receive, as the rkey of a WRITE and
 *            of a READ, and in a LOCAL_INV. Each is refused as any invalid
 *            key is (LOC_PROT_ERR, REM_OP_ERR, REM_ACCESS_ERR) and no byte
 *            moves: nothing reaches the buffers, nothing of the kernel's
 *            comes back;
 *   inline-read/  a READ posted with IBV_SEND_INLINE: librxe copies the
 *            bytes its SGE names into the WQE, where a READ's SGEs would
 *            be, and those bytes are an SGE of their own (buffer 3's).
 *            Inline data is for SENDs and WRITEs: the READ completes with
 *            LOC_QP_OP_ERR and nothing lands (C rxe takes the bytes as the
 *            READ's SGE: SKIPs there);
 *   dereg/   after the messages complete, every MR deregisters at once:
 *            no lookup outlives its message (a kept one would hold the MR
 *            and make ibv_dereg_mr wait).
 *
 * Prints one line per check, "PASS name" or "FAIL name: why", and "DONE"
 * last; exits non-zero if a check failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "check.h"
#include "rc_pair.h"

#define NBUF 6
#define BUF_PAGES 4

struct env {
	struct ibv_context *ctx;
	union ibv_gid gid;
	int gid_index;
	struct ibv_pd *pd;
	long page;
	uint8_t *buf[NBUF];		/* BUF_PAGES pages each, then an unregistered guard page */
	struct ibv_mr *mr[NBUF];	/* over the first BUF_PAGES pages */
};

static size_t buf_len(const struct env *e) { return BUF_PAGES * e->page; }

static void pattern(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 13 + (i >> 8));
}

static int all(const uint8_t *p, size_t n, uint8_t byte)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != byte)
			return 0;
	return 1;
}

/* Every buffer, guard pages included, to `byte`. */
static void fill_all(struct env *e, uint8_t byte)
{
	for (int i = 0; i < NBUF; i++)
		memset(e->buf[i], byte, (BUF_PAGES + 1) * e->page);
}

static struct ibv_sge sge(struct env *e, int b, size_t off, uint32_t len)
{
	return (struct ibv_sge){ .addr = (uintptr_t)e->buf[b] + off, .length = len, .lkey = e->mr[b]->lkey };
}

/* Posts wr on p->req and waits for its completion: the status or ST_*. */
static int send_wait(struct pair *p, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	if (ibv_post_send(p->req, wr, &bad))
		return ST_POST_FAILED;
	return pair_wait(p->cq, &wc);
}

/* The three source SGEs: buffers 0, 1, 2 at odd offsets, 5000 bytes in
 * all; `want` gets what they hold, in order. */
#define MSG_LEN 5000u
static void three_sources(struct env *e, struct ibv_sge s[3], uint8_t *want, uint8_t seed)
{
	static const size_t off[3] = { 1, 4095, 333 };
	static const uint32_t len[3] = { 1500, 700, 2800 };
	size_t at = 0;

	for (int i = 0; i < 3; i++) {
		s[i] = sge(e, i, off[i], len[i]);
		pattern(e->buf[i] + off[i], len[i], (uint8_t)(seed + i));
		memcpy(want + at, e->buf[i] + off[i], len[i]);
		at += len[i];
	}
}

/* The X, Y, X destination SGEs: buffers 3, 4, 3. */
static const size_t dst_off[3] = { 7, 100, 2 * 4096 + 5 };
static const uint32_t dst_len[3] = { 1200, 2000, 1800 };
static const int dst_buf[3] = { 3, 4, 3 };

/* Whether the X, Y, X SGEs hold `want` and the rest of buffers 3 and 4
 * is still `bg`. */
static int dst_holds(struct env *e, const uint8_t *want, uint8_t bg, char *why, size_t whylen)
{
	size_t at = 0;

	for (int i = 0; i < 3; i++) {
		if (memcmp(e->buf[dst_buf[i]] + dst_off[i], want + at, dst_len[i])) {
			snprintf(why, whylen, "SGE %d (buffer %d + %zu) does not hold bytes %zu..%zu", i, dst_buf[i],
				 dst_off[i], at, at + dst_len[i]);
			return 0;
		}
		at += dst_len[i];
	}
	/* The gaps: everything outside the SGEs. */
	for (int b = 3; b <= 4; b++) {
		size_t pos = 0, end = (BUF_PAGES + 1) * e->page;

		while (pos < end) {
			size_t next = end;
			int in = 0;

			for (int i = 0; i < 3; i++) {
				if (dst_buf[i] != b)
					continue;
				if (pos >= dst_off[i] && pos < dst_off[i] + dst_len[i]) {
					pos = dst_off[i] + dst_len[i];
					in = 1;
					break;
				}
				if (dst_off[i] > pos && dst_off[i] < next)
					next = dst_off[i];
			}
			if (in)
				continue;
			if (!all(e->buf[b] + pos, next - pos, bg)) {
				snprintf(why, whylen, "buffer %d changed at %zu..%zu, outside the SGEs", b, pos, next);
				return 0;
			}
			pos = next;
		}
	}
	return 1;
}

static void test_write(struct env *e, struct pair *p)
{
	uint8_t want[MSG_LEN];
	struct ibv_sge s[3];
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = s, .num_sge = 3, .opcode = IBV_WR_RDMA_WRITE,
		.wr.rdma = { .remote_addr = (uintptr_t)e->buf[3] + 3, .rkey = e->mr[3]->rkey },
	};
	struct ibv_send_wr wr2 = wr, *bad;
	struct ibv_wc wc;
	int st, st2;

	fill_all(e, 0xee);
	three_sources(e, s, want, 0x10);
	st = send_wait(p, &wr);
	check("write/three-sges-complete", st == IBV_WC_SUCCESS, "%s", st_str(st));
	check("write/three-sges-land", !memcmp(e->buf[3] + 3, want, MSG_LEN), "buffer 3 + 3 does not hold the message");
	check("write/around-untouched", all(e->buf[3], 3, 0xee) && all(e->buf[3] + 3 + MSG_LEN,
	      (BUF_PAGES + 1) * e->page - 3 - MSG_LEN, 0xee) && all(e->buf[4], (BUF_PAGES + 1) * e->page, 0xee),
	      "bytes outside the written range changed");

	/* Two WRITEs in a row, same offset, different MRs (buffers 3, 4):
	 * the second must not reuse the first's lookup. */
	fill_all(e, 0xee);
	three_sources(e, s, want, 0x20);
	wr.wr.rdma.remote_addr = (uintptr_t)e->buf[3] + 64;
	wr2.wr_id = 2;
	wr2.wr.rdma.remote_addr = (uintptr_t)e->buf[4] + 64;
	wr2.wr.rdma.rkey = e->mr[4]->rkey;
	wr.next = &wr2;
	if (ibv_post_send(p->req, &wr, &bad)) {
		fail("write/back-to-back", "ibv_post_send: %s", strerror(errno));
		return;
	}
	st = pair_wait(p->cq, &wc);
	st2 = st == IBV_WC_SUCCESS ? pair_wait(p->cq, &wc) : st;
	check("write/back-to-back-complete", st == IBV_WC_SUCCESS && st2 == IBV_WC_SUCCESS, "%s, %s", st_str(st),
	      st_str(st2));
	check("write/back-to-back-each-in-its-mr",
	      !memcmp(e->buf[3] + 64, want, MSG_LEN) && !memcmp(e->buf[4] + 64, want, MSG_LEN) &&
	      all(e->buf[3] + 64 + MSG_LEN, 100, 0xee) && all(e->buf[4] + 64 + MSG_LEN, 100, 0xee),
	      "buffer 3 or 4 does not hold the message at 64");
}

static void test_send(struct env *e, struct pair *p)
{
	uint8_t want[MSG_LEN];
	struct ibv_sge s[3], r[3];
	struct ibv_send_wr wr = { .wr_id = 3, .sg_list = s, .num_sge = 3, .opcode = IBV_WR_SEND };
	struct ibv_recv_wr rwr = { .wr_id = 4, .sg_list = r, .num_sge = 3 }, *rbad;
	struct ibv_wc wc;
	char why[160];
	int st, rst;

	fill_all(e, 0x5c);
	three_sources(e, s, want, 0x30);
	for (int i = 0; i < 3; i++)
		r[i] = sge(e, dst_buf[i], dst_off[i], dst_len[i]);
	if (ibv_post_recv(p->resp, &rwr, &rbad)) {
		fail("send/post-recv", "ibv_post_recv: %s", strerror(errno));
		return;
	}
	st = send_wait(p, &wr);
	rst = pair_wait(p->rcq, &wc);
	check("send/x-y-x-complete", st == IBV_WC_SUCCESS && rst == IBV_WC_SUCCESS && wc.byte_len == MSG_LEN,
	      "send %s, receive %s, byte_len %u", st_str(st), st_str(rst), wc.byte_len);
	check("send/x-y-x-land", dst_holds(e, want, 0x5c, why, sizeof(why)), "%s", why);
}

static void test_read(struct env *e, struct pair *p)
{
	uint8_t want[MSG_LEN];
	struct ibv_sge r[3];
	struct ibv_send_wr wr = {
		.wr_id = 5, .sg_list = r, .num_sge = 3, .opcode = IBV_WR_RDMA_READ,
		.wr.rdma = { .remote_addr = (uintptr_t)e->buf[5] + 11, .rkey = e->mr[5]->rkey },
	};
	char why[160];
	int st;

	fill_all(e, 0xa7);
	pattern(e->buf[5] + 11, MSG_LEN, 0x40);
	memcpy(want, e->buf[5] + 11, MSG_LEN);
	for (int i = 0; i < 3; i++)
		r[i] = sge(e, dst_buf[i], dst_off[i], dst_len[i]);
	st = send_wait(p, &wr);
	check("read/x-y-x-complete", st == IBV_WC_SUCCESS, "%s", st_str(st));
	check("read/x-y-x-land", dst_holds(e, want, 0xa7, why, sizeof(why)), "%s", why);
}

/*
 * One message whose second SGE names the first SGE's memory with a wrong
 * key (the MR's own with its key byte flipped). The lookup made for the
 * first SGE covers those bytes, but a lookup is only good for its own key:
 * the gather must fail with LOC_PROT_ERR (the QP goes to error, so the
 * pair is replaced afterwards). Then the same on the receive side: the
 * receive WQE's second SGE has the wrong key, the SEND is refused
 * (REM_OP_ERR) and the receive completes with LOC_PROT_ERR.
 */
static int is_rrxe;

/*
 * The exact status of a refused local access: Local Protection Error, the
 * IBA status for a WQE whose buffers its lkeys do not grant. C rxe (6.12)
 * completes a bad lkey in a send WQE with a flush status and one in a
 * receive WQE with LOC_QP_OP_ERR; on a device not named rrxe* that is a SKIP.
 */
static void status_is(const char *name, int st, int want)
{
	char why[128];

	if (st == want) {
		pass(name);
	} else if (!is_rrxe) {
		snprintf(why, sizeof(why), "%s here, not %s (C rxe's own status)", st_str(st), st_str(want));
		skip(name, why);
	} else {
		fail(name, "%s, want %s", st_str(st), st_str(want));
	}
}

/* A failed request leaves the pair's QPs in error: a new pair on the same
 * PD (the MRs stay). Non-zero if it could not be set up (reported). */
static int reopen(struct env *e, struct pair *p, const char *name)
{
	pair_close(p);
	return pair_open(p, e->ctx, &e->gid, e->gid_index, e->pd, e->pd, 3, name);
}

static void test_wrong_key(struct env *e, struct pair *p)
{
	uint32_t bad = e->mr[0]->lkey ^ 0x5a;
	struct ibv_sge s[2] = {
		sge(e, 0, 0, 2000),
		{ .addr = (uintptr_t)e->buf[0] + 100, .length = 500, .lkey = bad },
	};
	struct ibv_send_wr wr = {
		.wr_id = 7, .sg_list = s, .num_sge = 2, .opcode = IBV_WR_RDMA_WRITE,
		.wr.rdma = { .remote_addr = (uintptr_t)e->buf[3], .rkey = e->mr[3]->rkey },
	};
	struct ibv_sge r[2] = {
		sge(e, 3, 0, 2000),
		{ .addr = (uintptr_t)e->buf[3] + 100, .length = 500, .lkey = e->mr[3]->lkey ^ 0x5a },
	};
	struct ibv_recv_wr rwr = { .wr_id = 8, .sg_list = r, .num_sge = 2 }, *rbad;
	struct ibv_sge ok = sge(e, 1, 0, 2500);
	struct ibv_send_wr swr = { .wr_id = 9, .sg_list = &ok, .num_sge = 1, .opcode = IBV_WR_SEND };
	struct ibv_wc wc;
	int st, rst;

	fill_all(e, 0x61);
	st = send_wait(p, &wr);
	check("wrong-key/gather-refused", st != IBV_WC_SUCCESS && st != ST_TIMEOUT && st != ST_POST_FAILED, "%s",
	      st_str(st));
	status_is("wrong-key/gather-loc-prot", st, IBV_WC_LOC_PROT_ERR);
	if (reopen(e, p, "wrong-key/new-pair"))
		return;
	if (ibv_post_recv(p->resp, &rwr, &rbad)) {
		fail("wrong-key/post-recv", "ibv_post_recv: %s", strerror(errno));
		return;
	}
	st = send_wait(p, &swr);
	rst = pair_wait(p->rcq, &wc);
	check("wrong-key/scatter-refused", st == IBV_WC_REM_OP_ERR && rst != IBV_WC_SUCCESS && rst != ST_TIMEOUT,
	      "send %s (want %s), receive %s", st_str(st), st_str(IBV_WC_REM_OP_ERR), st_str(rst));
	status_is("wrong-key/scatter-loc-prot", rst, IBV_WC_LOC_PROT_ERR);
	reopen(e, p, "wrong-key/new-pair");
}

/*
 * rrxe's local_dma_lkey (param.rs LOCAL_DMA_LKEY). No interface gives it
 * to user space, but it is the same on every rrxe device: an attacker
 * guesses it.
 */
#define RRXE_LOCAL_DMA_LKEY 0xffffff00u
/* Where x86-64 maps physical memory without KASLR: kernel data, if the
 * key reached it. */
#define KERNEL_GUESS 0xffff888000100000ull

/* A SEND (or WRITE) gathering 64 bytes at addr with the DMA lkey. */
static void dma_lkey_gather(struct env *e, struct pair *p, const char *name, int op, uint64_t addr)
{
	struct ibv_sge s = { .addr = addr, .length = 64, .lkey = RRXE_LOCAL_DMA_LKEY };
	struct ibv_sge r = sge(e, 3, 0, 4096);
	struct ibv_send_wr wr = {
		.wr_id = 20, .sg_list = &s, .num_sge = 1, .opcode = op,
		.wr.rdma = { .remote_addr = (uintptr_t)e->buf[3], .rkey = e->mr[3]->rkey },
	};
	struct ibv_recv_wr rwr = { .wr_id = 21, .sg_list = &r, .num_sge = 1 }, *rbad;
	char n[64];
	int st;

	fill_all(e, 0x4b);
	if (op == IBV_WR_SEND && ibv_post_recv(p->resp, &rwr, &rbad)) {
		fail(name, "ibv_post_recv: %s", strerror(errno));
		return;
	}
	st = send_wait(p, &wr);
	snprintf(n, sizeof(n), "%s-refused", name);
	check(n, st != IBV_WC_SUCCESS && st != ST_TIMEOUT, "%s", st_str(st));
	snprintf(n, sizeof(n), "%s-loc-prot", name);
	status_is(n, st, IBV_WC_LOC_PROT_ERR);
	snprintf(n, sizeof(n), "%s-nothing-sent", name);
	check(n, all(e->buf[3], (BUF_PAGES + 1) * e->page, 0x4b), "the target buffer changed");
	reopen(e, p, "dma-lkey/new-pair");
}

static void test_dma_lkey(struct env *e, struct pair *p)
{
	struct ibv_sge ok = sge(e, 1, 0, 256), r = { .addr = (uintptr_t)e->buf[3], .length = 4096,
						     .lkey = RRXE_LOCAL_DMA_LKEY };
	struct ibv_send_wr swr = { .wr_id = 22, .sg_list = &ok, .num_sge = 1, .opcode = IBV_WR_SEND };
	struct ibv_recv_wr rwr = { .wr_id = 23, .sg_list = &r, .num_sge = 1 }, *rbad;
	struct ibv_wc wc;
	int st, rst;

	dma_lkey_gather(e, p, "dma-lkey/send-user-addr", IBV_WR_SEND, (uintptr_t)e->buf[0]);
	dma_lkey_gather(e, p, "dma-lkey/send-kernel-addr", IBV_WR_SEND, KERNEL_GUESS);
	dma_lkey_gather(e, p, "dma-lkey/write-kernel-addr", IBV_WR_RDMA_WRITE, KERNEL_GUESS);

	/* A receive into the key: the SEND is refused, nothing lands. */
	fill_all(e, 0x4c);
	if (ibv_post_recv(p->resp, &rwr, &rbad)) {
		fail("dma-lkey/recv", "ibv_post_recv: %s", strerror(errno));
		return;
	}
	st = send_wait(p, &swr);
	rst = pair_wait(p->rcq, &wc);
	check("dma-lkey/recv-refused", st == IBV_WC_REM_OP_ERR && rst != IBV_WC_SUCCESS && rst != ST_TIMEOUT,
	      "send %s (want %s), receive %s", st_str(st), st_str(IBV_WC_REM_OP_ERR), st_str(rst));
	status_is("dma-lkey/recv-loc-prot", rst, IBV_WC_LOC_PROT_ERR);
	check("dma-lkey/recv-nothing-landed", all(e->buf[3], (BUF_PAGES + 1) * e->page, 0x4c),
	      "the receive buffer changed");
	if (reopen(e, p, "dma-lkey/new-pair"))
		return;

	/* As an rkey: a WRITE to a user address, a READ of a kernel one. */
	fill_all(e, 0x4d);
	ok = sge(e, 1, 0, 256);
	swr.opcode = IBV_WR_RDMA_WRITE;
	swr.wr.rdma.remote_addr = (uintptr_t)e->buf[4];
	swr.wr.rdma.rkey = RRXE_LOCAL_DMA_LKEY;
	st = send_wait(p, &swr);
	check("dma-lkey/write-rkey-rem-access", st == IBV_WC_REM_ACCESS_ERR, "%s, want %s", st_str(st),
	      st_str(IBV_WC_REM_ACCESS_ERR));
	check("dma-lkey/write-rkey-nothing-landed", all(e->buf[4], (BUF_PAGES + 1) * e->page, 0x4d),
	      "the target buffer changed");
	if (reopen(e, p, "dma-lkey/new-pair"))
		return;
	ok = sge(e, 5, 0, 4096);
	swr.opcode = IBV_WR_RDMA_READ;
	swr.wr.rdma.remote_addr = KERNEL_GUESS;
	st = send_wait(p, &swr);
	check("dma-lkey/read-rkey-rem-access", st == IBV_WC_REM_ACCESS_ERR, "%s, want %s", st_str(st),
	      st_str(IBV_WC_REM_ACCESS_ERR));
	check("dma-lkey/read-rkey-nothing-read", all(e->buf[5], (BUF_PAGES + 1) * e->page, 0x4d),
	      "kernel bytes came back");
	if (reopen(e, p, "dma-lkey/new-pair"))
		return;

	/* Nor is it a key to invalidate. */
	swr = (struct ibv_send_wr){ .wr_id = 24, .opcode = IBV_WR_LOCAL_INV, .invalidate_rkey = RRXE_LOCAL_DMA_LKEY };
	st = send_wait(p, &swr);
	check("dma-lkey/local-inv-refused", st != IBV_WC_SUCCESS && st != ST_TIMEOUT, "%s", st_str(st));
	reopen(e, p, "dma-lkey/new-pair");
}

/*
 * The QP of the next asynchronous event of type `type` within `ms`
 * milliseconds in all (the events of other types before it are passed
 * over), or NULL.
 */
static struct ibv_qp *next_qp_event(struct ibv_context *ctx, enum ibv_event_type type, int ms)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	struct ibv_qp *qp;
	struct timespec t;
	long end, left;

	clock_gettime(CLOCK_MONOTONIC, &t);
	end = t.tv_sec * 1000L + t.tv_nsec / 1000000 + ms;
	fcntl(ctx->async_fd, F_SETFL, fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		left = end - (t.tv_sec * 1000L + t.tv_nsec / 1000000);
		if (left <= 0 || poll(&pfd, 1, left) <= 0)
			return NULL;
		if (ibv_get_async_event(ctx, &ev)) {
			if (errno != EAGAIN)
				return NULL;
			continue;
		}
		qp = ev.event_type == type ? ev.element.qp : NULL;
		ibv_ack_async_event(&ev);
		if (qp)
			return qp;
	}
}

static void test_range(struct env *e, struct pair *p)
{
	uint8_t want[MSG_LEN];
	struct ibv_sge s[3];
	/* 5000 bytes from 2000 before the MR's end: 3000 bytes too many. */
	struct ibv_send_wr wr = {
		.wr_id = 6, .sg_list = s, .num_sge = 3, .opcode = IBV_WR_RDMA_WRITE,
		.wr.rdma = { .remote_addr = (uintptr_t)e->buf[4] + buf_len(e) - 2000, .rkey = e->mr[4]->rkey },
	};
	int st;

	fill_all(e, 0x3d);
	three_sources(e, s, want, 0x50);
	st = send_wait(p, &wr);
	check("range/past-end-rem-access", st == IBV_WC_REM_ACCESS_ERR, "%s, want %s", st_str(st),
	      st_str(IBV_WC_REM_ACCESS_ERR));
	check("range/guard-untouched", all(e->buf[4] + buf_len(e), e->page, 0x3d),
	      "the page after the MR changed");
	{
		struct ibv_qp *q = next_qp_event(e->ctx, IBV_EVENT_QP_ACCESS_ERR, 2000);
		struct ibv_qp *q2 = q ? next_qp_event(e->ctx, IBV_EVENT_QP_ACCESS_ERR, 200) : NULL;

		if (!q && !is_rrxe)
			skip("range/responder-access-event", "no IBV_EVENT_QP_ACCESS_ERR (C rxe before Linux 7.1)");
		else
			check("range/responder-access-event", q == p->resp && !q2,
			      "IBV_EVENT_QP_ACCESS_ERR for %s, then %s", !q ? "no QP in 2 s" : q == p->resp ? "the responder" : "another QP",
			      !q2 ? "none" : q2 == p->req ? "one for the requester" : "another");
	}
	/* The requester's QP is in error now: a new pair, the same MR. */
	if (reopen(e, p, "range/new-pair"))
		return;
	wr.wr.rdma.remote_addr = (uintptr_t)e->buf[4] + buf_len(e) - MSG_LEN;
	st = send_wait(p, &wr);
	check("range/to-the-end-works", st == IBV_WC_SUCCESS && !memcmp(e->buf[4] + buf_len(e) - MSG_LEN, want, MSG_LEN),
	      "%s", st_str(st));
}

static void test_inline_read(struct env *e, struct pair *p)
{
	struct ibv_sge inl = sge(e, 2, 0, sizeof(struct ibv_sge));
	struct ibv_send_wr wr = {
		.wr_id = 9, .sg_list = &inl, .num_sge = 1, .opcode = IBV_WR_RDMA_READ,
		.send_flags = IBV_SEND_INLINE,
		.wr.rdma = { .remote_addr = (uintptr_t)e->buf[5], .rkey = e->mr[5]->rkey },
	};
	/* The inline bytes: rxe's SGE layout is ibv_sge's (addr, length, lkey). */
	struct ibv_sge as_sge = sge(e, 3, 0, 64);
	int st;

	if (reopen(e, p, "inline-read/setup"))
		return;
	fill_all(e, 0x5c);
	memcpy(e->buf[2], &as_sge, sizeof(as_sge));
	pattern(e->buf[5], 64, 0x21);
	st = send_wait(p, &wr);
	status_is("inline-read/refused", st, IBV_WC_LOC_QP_OP_ERR);
	if (all(e->buf[3], 64, 0x5c))
		pass("inline-read/nothing-landed");
	else if (!is_rrxe)
		skip("inline-read/nothing-landed", "the READ landed where its inline bytes said (C rxe)");
	else
		fail("inline-read/nothing-landed", "buffer 3 was written (the inline bytes taken as an SGE)");
	reopen(e, p, "inline-read/after");
}

int main(int argc, char **argv)
{
	const char *dev = argc > 1 ? argv[1] : "rrxe0";
	struct env e = { .gid_index = argc > 2 ? atoi(argv[2]) : 1 };
	struct pair p;

	setvbuf(stdout, NULL, _IOLBF, 0);
	e.page = sysconf(_SC_PAGESIZE);
	is_rrxe = !strncmp(dev, "rrxe", 4);
	e.ctx = open_dev_gid(dev, e.gid_index, &e.gid);
	if (!e.ctx) {
		printf("DONE\n");
		return 1;
	}
	e.pd = ibv_alloc_pd(e.ctx);
	for (int i = 0; i < NBUF && e.pd; i++) {
		void *m = mmap(NULL, (BUF_PAGES + 1) * e.page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);

		e.buf[i] = m == MAP_FAILED ? NULL : m;
		e.mr[i] = e.buf[i] ? ibv_reg_mr(e.pd, e.buf[i], buf_len(&e), PAIR_ACCESS) : NULL;
		if (!e.mr[i]) {
			fail("setup", "buffer %d: mmap or ibv_reg_mr: %s", i, strerror(errno));
			printf("DONE\n");
			return 1;
		}
	}
	if (!e.pd || pair_open(&p, e.ctx, &e.gid, e.gid_index, e.pd, e.pd, 3, "setup")) {
		fail("setup", "ibv_alloc_pd or the pair: %s", strerror(errno));
		printf("DONE\n");
		return 1;
	}
	pass("setup");

	test_write(&e, &p);
	test_send(&e, &p);
	test_read(&e, &p);
	test_wrong_key(&e, &p);
	test_range(&e, &p);
	test_dma_lkey(&e, &p);
	test_inline_read(&e, &p);

	/* With the QPs still there: nothing they did may hold an MR. */
	for (int i = 0; i < NBUF; i++) {
		struct timespec t0, t1;
		char name[32];
		int err;

		snprintf(name, sizeof(name), "dereg/mr%d", i);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		err = ibv_dereg_mr(e.mr[i]) ? errno : 0;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		check(name, !err && t1.tv_sec - t0.tv_sec < 2, "ibv_dereg_mr: %s after %ld s", err_str(err),
		      (long)(t1.tv_sec - t0.tv_sec));
	}
	pair_close(&p);
	check("teardown", ibv_dealloc_pd(e.pd) == 0 && ibv_close_device(e.ctx) == 0, "%s", strerror(errno));
	printf("DONE\n");
	return failures ? 1 : 0;
}
