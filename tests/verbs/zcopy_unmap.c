// SPDX-License-Identifier: GPL-2.0
/*
 * A sender that takes its memory away under its own message: a looped-back
 * RC SEND or RDMA WRITE carries its payload in page fragments of the
 * sender's pinned pages, not a copy (Documentation/datapath.md, "Transmit
 * without a copy"). Those packets may still wait in the receiver's queue
 * when the sender deregisters the MR and unmaps the buffer, which unpins
 * the pages and gives them back. Each packet must hold its own page
 * references: the receiver then still reads what the buffer held, never
 * a page the kernel gave to someone else meanwhile (the debug guest's
 * KASAN also reports a read of a freed page). On an RC pair of a device
 * connected to itself, 1 KiB path MTU (rc_pair.h).
 *
 *   zcopy_unmap DEVICE [GID_INDEX]
 *
 * Each round: a fresh 1 MiB mapping filled with a pattern of non-zero
 * bytes that differs each round, registered; a 1 MiB SEND (even rounds)
 * or RDMA WRITE (odd rounds) of it into a zeroed buffer. The receiver's
 * buffer is paged on demand where the device offers it and emptied
 * (MADV_DONTNEED) each round, so that its first touch of each page faults
 * and the packets wait in its queue. At
 * once after the post the sender's MR is deregistered and the mapping
 * unmapped, and 16 MiB of new memory filled with 0xee (which the freed
 * pages may become). Then both completions are awaited (the sender's may
 * be an error: the rest of its message had no MR any more).
 *
 *   zcopy-unmap/receiver-reads-only-the-message
 *                         every byte the receiver got is 0 (not placed) or
 *                         the round's pattern at that offset, in every
 *                         round;
 *   zcopy-unmap/flushed-not-read
 *                         four 256 KiB WRITEs whose sender is moved to the
 *                         error state right after posting them, its buffer
 *                         overwritten with 0xee as soon as their
 *                         completions (flushes) are polled, into a pinned
 *                         receiver's buffer (in a PD of its own, with no
 *                         MR paged on demand): the receiver never gets a
 *                         0xee byte. A flush revokes the packets still
 *                         queued at the peer (they are dropped unread),
 *                         waiting for a copy out of one under way; and
 *                         no byte lands after the completion at all (a
 *                         WRITE done first was placed before its ACK);
 *   zcopy-unmap/flushed-not-read-odp
 *                         the same into the receiver's buffer paged on
 *                         demand: no 0xee byte. Bytes may land after the
 *                         completion (counted, not judged): such a
 *                         receiver's queue takes packets copied out of the
 *                         sender's pages as they come (datapath.md, "Memory
 *                         that faults"), which it places once its memory
 *                         is faulted in, as IBA leaves a flushed WRITE's
 *                         remote memory undefined;
 *   zcopy-unmap/zcopy-used
 *                         the device's sent_pkts_zcopy counter grew.
 *
 * The race itself is rare: the requester's key cache holds the MR, so
 * its deregistration waits for the requester's next packet, and the
 * receiver mostly drains its queue meanwhile. The summary line counts the
 * rounds in which bytes landed after the mapping was gone (they land in
 * order: a high-water mark once the mapping is gone, and at the end).
 * What makes each packet's references exact is checked first, without a
 * race:
 *
 *   zcopy-unmap/page-refs-returned
 *                         a 48 MiB buffer sent without a copy (WRITEs of
 *                         1 MiB), its MR deregistered and the buffer
 *                         unmapped: MemFree rose by at least 30 MiB from
 *                         where it was with the buffer (after its first
 *                         WRITE), so no packet kept a page reference. (A packet that took none
 *                         would put one it does not own when freed: the
 *                         page allocator's "Bad page state", which fails
 *                         the guest's run.)
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
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "check.h"
#include "rc_pair.h"

#define LEN (1u << 20)
#define FILL (16u << 20)
#define ROUNDS 24

static uint8_t pattern(uint32_t i, int r)
{
	return (uint8_t)((i * 7u + (uint32_t)r * 13u) % 255u + 1u);
}

/* The first of dst's LEN bytes that is neither 0 (not placed) nor round
 * r's pattern there, or LEN. */
static uint32_t first_foreign(const uint8_t *dst, int r)
{
	uint32_t i;

	for (i = 0; i < LEN; i++)
		if (dst[i] && dst[i] != pattern(i, r))
			break;
	return i;
}

/* A round's pair, with the receiver's buffer zeroed and unmapped from the
 * MR paged on demand (its notifier), so that the receiver faults each page
 * in again (a pinned one, `pinned`, only zeroed: its MR keeps its pages);
 * NULL, or why not (the pair is then closed). */
static const char *round_open(struct pair *p, struct ibv_context *ctx, const union ibv_gid *gid, int gid_index,
			      struct ibv_pd *pd, uint8_t *dst, const char *name, int pinned)
{
	if (pair_open(p, ctx, gid, gid_index, pd, pd, 1, name))
		return "pair";
	if (pinned) {
		memset(dst, 0, LEN);
		return NULL;
	}
	if (madvise(dst, LEN, MADV_DONTNEED)) {
		pair_close(p);
		return "madvise failed";
	}
	return NULL;
}

/* MemFree of /proc/meminfo, in KiB; -1 on failure. */
static long long mem_free_kib(void)
{
	char line[128];
	long long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemFree: %lld kB", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

#define REF_LEN (48u << 20)
#define REF_BACK_KIB (30 << 10)

/* page-refs-returned (see the top): REF_LEN sent without a copy in WRITEs
 * of LEN, its MR deregistered and the buffer unmapped; MemFree then up by
 * at least REF_BACK_KIB from where it was once the buffer was filled and
 * the first WRITE done (the caches its packets use warm by then). */
static void page_refs(struct ibv_context *ctx, struct ibv_pd *pd, const union ibv_gid *gid, int gid_index,
		      struct ibv_mr *dst_mr, uint8_t *dst)
{
	const char *name = "zcopy-unmap/page-refs-returned";
	long long m0 = -1, m1 = -1;
	struct ibv_mr *mr = NULL;
	struct pair p;
	uint8_t *buf;
	int st = IBV_WC_SUCCESS;

	buf = mmap(NULL, REF_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		fail(name, "mmap: %s", strerror(errno));
		return;
	}
	memset(buf, 0x5a, REF_LEN);
	if (pair_open(&p, ctx, gid, gid_index, pd, pd, 1, name)) {
		munmap(buf, REF_LEN);
		return;
	}
	mr = ibv_reg_mr(pd, buf, REF_LEN, PAIR_ACCESS);
	for (uint32_t off = 0; mr && off < REF_LEN && st == IBV_WC_SUCCESS; off += LEN) {
		struct ibv_sge s = { .addr = (uintptr_t)buf + off, .length = LEN, .lkey = mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;
		struct ibv_wc wc;

		wr.wr.rdma.remote_addr = (uintptr_t)dst;
		wr.wr.rdma.rkey = dst_mr->rkey;
		st = ibv_post_send(p.req, &wr, &bad) ? ST_POST_FAILED : pair_wait(p.cq, &wc);
		if (!off)
			m0 = mem_free_kib();
	}
	if (!mr || st != IBV_WC_SUCCESS || m0 < 0 || ibv_dereg_mr(mr)) {
		fail(name, "the WRITEs: %s", mr ? st_str(st) : strerror(errno));
		pair_close(&p);
		munmap(buf, REF_LEN);
		return;
	}
	pair_close(&p);
	munmap(buf, REF_LEN);
	/* The last packets are freed just after their placement: a moment. */
	for (int t = 0; t < 200; t++) {
		m1 = mem_free_kib();
		if (m1 >= m0 + REF_BACK_KIB)
			break;
		usleep(10000);
	}
	check(name, m1 >= m0 + REF_BACK_KIB,
	      "MemFree %lld KiB, %lld with the %u KiB buffer: its pages were not freed", m1, m0, REF_LEN >> 10);
	printf("# zcopy-unmap: MemFree %lld KiB with the buffer, %lld after\n", m0, m1);
}

#define FLUSH_ROUNDS 64

/* flushed-not-read (see the top): each round four WRITEs of 256 KiB of a
 * buffer whose sender goes to the error state at once; as soon as their
 * completions (flushes, or successes) are polled, the buffer is
 * overwritten with 0xee. */
static void flushed(struct ibv_context *ctx, struct ibv_pd *pd, const union ibv_gid *gid, int gid_index,
		    struct ibv_mr *dst_mr, uint8_t *dst, int odp)
{
	const char *name = odp ? "zcopy-unmap/flushed-not-read-odp" : "zcopy-unmap/flushed-not-read";
	uint32_t late = 0, bad_round = 0, bad_off = 0;
	const char *why = NULL;
	struct ibv_mr *mr;
	uint8_t *buf;

	buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	mr = buf == MAP_FAILED ? NULL : ibv_reg_mr(pd, buf, LEN, PAIR_ACCESS);
	if (!mr) {
		fail(name, "buffer or MR: %s", strerror(errno));
		return;
	}
	for (int r = 0; r < FLUSH_ROUNDS && !why && !bad_round; r++) {
		struct ibv_sge s = { .addr = (uintptr_t)buf, .length = LEN, .lkey = mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;
		struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };
		struct ibv_wc wc;
		struct pair p;
		uint32_t h1, h2;

		why = round_open(&p, ctx, gid, gid_index, pd, dst, name, !odp);
		if (why)
			break;
		for (uint32_t i = 0; i < LEN; i++)
			buf[i] = pattern(i, r);
		/* Four posts in a row: the doorbells after the first stream, and
		 * the receiver's engines run in its own work item, apart from
		 * the sender's (engine.rs, `doorbell`). */
		wr.wr.rdma.rkey = dst_mr->rkey;
		s.length = LEN / 4;
		for (int k = 0; k < 4 && !why; k++) {
			s.addr = (uintptr_t)buf + k * (LEN / 4);
			wr.wr.rdma.remote_addr = (uintptr_t)dst + k * (LEN / 4);
			if (ibv_post_send(p.req, &wr, &bad))
				why = "post failed";
		}
		if (why || ibv_modify_qp(p.req, &err, IBV_QP_STATE)) {
			why = why ? why : "modify_qp failed";
			pair_close(&p);
			break;
		}
		for (int k = 0; k < 4 && !why; k++)
			if (pair_wait(p.cq, &wc) < 0)
				why = "no completion";
		if (why) {
			pair_close(&p);
			break;
		}
		/* Completed (flushed, or done first): the buffer is ours. */
		memset(buf, 0xee, LEN);
		h1 = pair_high_water(dst, LEN);
		usleep(20000);
		h2 = pair_high_water(dst, LEN);
		pair_close(&p);
		if (h2 > h1)
			late++;
		bad_off = first_foreign(dst, r);
		if (bad_off < LEN)
			bad_round = r + 1;
	}
	if (why)
		fail(name, "%s", why);
	else if (bad_round)
		fail(name, "round %u: byte %u is 0x%02x, written after the WRITE's completion", bad_round, bad_off,
		     dst[bad_off]);
	else if (odp)
		pass(name);
	else
		check(name, !late, "in %u rounds bytes landed after the WRITE's completion", late);
	printf("# %s: bytes landed after the completion in %u of %d rounds\n", name, late, FLUSH_ROUNDS);
	ibv_dereg_mr(mr);
	munmap(buf, LEN);
}

/* flushed-not-read into a pinned buffer, in a PD of its own. */
static void pinned_flushed(struct ibv_context *ctx, const union ibv_gid *gid, int gid_index)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	uint8_t *dst = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *mr = pd && dst != MAP_FAILED ? ibv_reg_mr(pd, dst, LEN, PAIR_ACCESS) : NULL;

	if (mr)
		flushed(ctx, pd, gid, gid_index, mr, dst, 0);
	else
		fail("zcopy-unmap/flushed-not-read", "PD, buffer or MR: %s", strerror(errno));
	if (mr)
		ibv_dereg_mr(mr);
	if (dst != MAP_FAILED)
		munmap(dst, LEN);
	if (pd)
		ibv_dealloc_pd(pd);
}

int main(int argc, char **argv)
{
	const char *dev = argc > 1 ? argv[1] : "rrxe0";
	int gid_index = argc > 2 ? atoi(argv[2]) : 1;
	union ibv_gid gid;
	struct ibv_context *ctx;
	struct ibv_pd *pd = NULL;
	struct ibv_mr *dst_mr = NULL;
	uint8_t *dst = NULL;
	uint32_t rounds = 0, raced = 0, bad_round = 0, bad_off = 0;
	uint8_t bad_byte = 0;
	const char *why = NULL;
	long long z0, z1;
	int odp = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ctx = open_dev_gid(dev, gid_index, &gid);
	if (ctx)
		pd = ibv_alloc_pd(ctx);
	dst = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (dst == MAP_FAILED)
		dst = NULL;
	if (pd && dst) {
		dst_mr = ibv_reg_mr(pd, dst, LEN, PAIR_ACCESS | IBV_ACCESS_ON_DEMAND);
		odp = dst_mr != NULL;
		if (!dst_mr)
			dst_mr = ibv_reg_mr(pd, dst, LEN, PAIR_ACCESS);
	}
	if (!dst_mr) {
		fail("setup", "device, PD or MR: %s", strerror(errno));
		printf("DONE\n");
		return 1;
	}
	printf("# zcopy-unmap: the receiver's MR %s\n", odp ? "paged on demand" : "pinned");
	z0 = zcopy_count(dev);
	page_refs(ctx, pd, &gid, gid_index, dst_mr, dst);
	if (odp)
		flushed(ctx, pd, &gid, gid_index, dst_mr, dst, 1);
	pinned_flushed(ctx, &gid, gid_index);
	for (int r = 0; r < ROUNDS && !why && !bad_round; r++) {
		int send = r % 2 == 0;
		struct ibv_sge s = { .length = LEN };
		struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &s, .num_sge = 1,
					  .opcode = send ? IBV_WR_SEND : IBV_WR_RDMA_WRITE,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;
		struct ibv_sge rs = { .addr = (uintptr_t)dst, .length = LEN, .lkey = dst_mr->lkey };
		struct ibv_recv_wr rwr = { .wr_id = 2, .sg_list = &rs, .num_sge = 1 }, *rbad;
		struct ibv_mr *src_mr;
		struct ibv_wc wc;
		struct pair p;
		uint8_t *src, *fill;
		uint32_t h1, h2;
		int st;

		why = round_open(&p, ctx, &gid, gid_index, pd, dst, "setup", 0);
		if (why)
			break;
		src = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (src == MAP_FAILED) {
			why = "mmap failed";
			pair_close(&p);
			break;
		}
		for (uint32_t i = 0; i < LEN; i++)
			src[i] = pattern(i, r);
		src_mr = ibv_reg_mr(pd, src, LEN, PAIR_ACCESS);
		if (!src_mr) {
			why = "ibv_reg_mr of the source failed";
			munmap(src, LEN);
			pair_close(&p);
			break;
		}
		s.addr = (uintptr_t)src;
		s.lkey = src_mr->lkey;
		wr.wr.rdma.remote_addr = (uintptr_t)dst;
		wr.wr.rdma.rkey = dst_mr->rkey;
		if ((send && ibv_post_recv(p.resp, &rwr, &rbad)) || ibv_post_send(p.req, &wr, &bad)) {
			why = "post failed";
			ibv_dereg_mr(src_mr);
			munmap(src, LEN);
			pair_close(&p);
			break;
		}
		/* At once: the mapping, then the MR, whose unpinning frees the
		 * pages (nothing maps them any more) but for the packets'
		 * own references. */
		munmap(src, LEN);
		if (ibv_dereg_mr(src_mr)) {
			why = "ibv_dereg_mr failed";
			pair_close(&p);
			break;
		}
		h1 = pair_high_water(dst, LEN);
		fill = mmap(NULL, FILL, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (fill != MAP_FAILED)
			memset(fill, 0xee, FILL);
		st = pair_wait(p.cq, &wc);
		if (send && st == IBV_WC_SUCCESS)
			pair_wait(p.rcq, &wc);
		pair_close(&p);
		h2 = pair_high_water(dst, LEN);
		if (h2 > h1)
			raced++;
		if (fill != MAP_FAILED)
			munmap(fill, FILL);
		rounds++;
		if (st == ST_TIMEOUT || st == ST_POST_FAILED) {
			why = st_str(st);
			break;
		}
		bad_off = first_foreign(dst, r);
		if (bad_off < LEN) {
			bad_round = r + 1;
			bad_byte = dst[bad_off];
		}
	}
	z1 = zcopy_count(dev);
	if (why) {
		fail("zcopy-unmap/receiver-reads-only-the-message", "round %u: %s", rounds + 1, why);
	} else {
		check("zcopy-unmap/receiver-reads-only-the-message", !bad_round,
		      "round %u: byte %u is 0x%02x, not the message's 0x%02x", bad_round, bad_off, bad_byte,
		      bad_round ? pattern(bad_off, (int)bad_round - 1) : 0);
		check("zcopy-unmap/zcopy-used", z0 >= 0 && z1 > z0, "sent_pkts_zcopy %lld, then %lld", z0, z1);
		printf("# zcopy-unmap: %u rounds, %u raced, %lld packets without a copy\n", rounds, raced, z1 - z0);
	}
	ibv_dereg_mr(dst_mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	munmap(dst, LEN);
	printf("DONE\n");
	return failures ? 1 : 0;
}
