// SPDX-License-Identifier: GPL-2.0
/*
 * On-demand paging (ODP) MRs while their owner changes its memory under
 * them, on RC pairs of a device connected to itself (1 KiB path MTU); the
 * pinned buffers the data comes from and goes to are ordinary MRs.
 *
 *   odp_mr DEVICE [GID_INDEX]                  every group but reclaim/
 *   odp_mr DEVICE GID_INDEX reclaim FILE       reclaim/ only (run it in a
 *                                              memory cgroup that is small
 *                                              beside FILE)
 *   odp_mr DEVICE GID_INDEX advise             caps/ and advise/ only (run
 *                                              it with a librxe that has
 *                                              advise_mr: EOPNOTSUPP then
 *                                              fails)
 *
 *   caps/     query_device_ex reports ODP: IBV_ODP_SUPPORT and
 *             IBV_ODP_SUPPORT_IMPLICIT, RC send/recv/write/read/atomic/SRQ
 *             receive/FLUSH/ATOMIC WRITE, UD send/recv; on a device
 *             without ODP every check is a SKIP;
 *   reg/      a range in kernel space or wrapping around is refused; a
 *             range nothing
 *             maps registers (nothing is pinned), a WRITE into it fails
 *             with REM_ACCESS_ERR, and once the owner maps memory there a
 *             WRITE lands in it (the MR follows the address space); the
 *             page tables of an ODP MR are charged to VmPin and given back;
 *   basic/    WRITE, READ, SEND/RECV and atomics on pages nothing touched
 *             yet, a READ of the zero page then a WRITE to it, and a WRITE
 *             into an ODP MR over a read-only mapping (refused, nothing
 *             changes; a READ of it works);
 *   munmap/   an MR over a memfd mapped twice, the MR over one view (A)
 *             and the other (B) watching: once part of A is unmapped,
 *             WRITEs and READs there fail with REM_ACCESS_ERR and the
 *             file's page is not written (a stale page would be), while
 *             the mapped part keeps working; then a thread unmaps half of
 *             an MR while WRITEs and READs run over all of it: only
 *             success, or REM_ACCESS_ERR for the unmapped half;
 *   madvise/  MADV_DONTNEED drops an MR's anonymous pages: the next WRITE
 *             lands in the new pages, a READ sees what the CPU wrote
 *             since (byte for byte); then a thread drops the pages of a
 *             memfd MR again and again while WRITEs and READs of 64 KiB
 *             run and are verified byte for byte;
 *   fork/     a child gets a copy of an MR's pages: the parent's WRITEs
 *             and READs go on in its own pages (verified) and never reach
 *             the child's copy, whether the child writes first or not,
 *             and after the child exits;
 *   implicit/ an implicit ODP MR (NULL, SIZE_MAX: the whole address
 *             space, MR address = user address): WRITE across a 2 MiB
 *             boundary, READ, fetch-and-add, SEND/RECV through its lkey;
 *             parts of it are charged to VmPin as they are reached and
 *             given back at deregistration; a WRITE to a hole, to a
 *             kernel address or to a read-only page fails with
 *             REM_ACCESS_ERR and changes nothing (and a failed access
 *             leaves no part charged, also past the end of user space
 *             in the last part's 2 MiB); after munmap a WRITE fails, and
 *             once the owner maps memory there again it lands; a nonzero
 *             iova for it is EINVAL; a memory window binds over user
 *             addresses of it, not across their end nor wrapping;
 *   atomic-write/ ATOMIC WRITE (ibv_wr_atomic_write) into an explicit
 *             ODP MR's page nothing touched yet and through an implicit
 *             MR lands all 8 bytes; into an unmapped page it fails with
 *             REM_ACCESS_ERR;
 *   advise/   ibv_advise_mr (SKIP where the provider has none: librxe
 *             before rdma-core 59). With IBV_ADVISE_MR_FLAG_FLUSH:
 *             PREFETCH_WRITE of untouched pages brings them all in
 *             (mincore) and the WRITE that follows waits for no fault
 *             (the device's odp_faults counter; one into pages not
 *             prefetched does); PREFETCH maps them for reading, a READ
 *             then waits for none; PREFETCH_NO_FAULT brings nothing in,
 *             but maps the pages the owner wrote since, so a WRITE there
 *             waits for none; across the 2 MiB parts of an implicit MR
 *             the same, its parts charged, while one of a hole fails
 *             with EFAULT and leaves no part charged, and NO_FAULT there
 *             makes none. Refused: an lkey that is no MR's, another
 *             PD's MR, a range past the MR, PREFETCH_WRITE into an MR
 *             without write access (EFAULT), an MR that is not ODP
 *             (EINVAL), an unknown advice (EOPNOTSUPP), one bad SGE of
 *             two (EFAULT, nothing of the good one fetched), memory the
 *             owner does not map (EFAULT; accepted without the flag).
 *             Without the flag: the pages come in shortly after, and 64
 *             prefetches in a row (more than a user may have queued:
 *             the rest are dropped) are all accepted, the MR
 *             deregistered right after, its VmPin charge given back
 *             once the jobs that hold it end;
 *   huge/     an ODP MR over 2 MiB huge pages (MAP_HUGETLB, registered
 *             with IBV_ACCESS_HUGETLB: the umem's page table has one entry
 *             per huge page): WRITEs deep inside a huge page and across
 *             the boundary of two land exactly there (nothing else in the
 *             4 MiB changes), a READ and a fetch-and-add deep inside one,
 *             a SEND into a receive there; after the second huge page is
 *             unmapped a WRITE there fails with REM_ACCESS_ERR and the
 *             first still works; IBV_ACCESS_HUGETLB without ON_DEMAND is
 *             refused (EOPNOTSUPP), and with it over base pages
 *             registers but a WRITE fails with REM_ACCESS_ERR (needs
 *             huge pages reserved: vm.nr_hugepages >= 2);
 *   reclaim/  an MR over a read-only private mapping of FILE (page cache
 *             pages that reclaim drops, no swap needed): READs of 64 KiB
 *             out of it, two passes over the whole file, and SENDs of
 *             every other chunk in each pass, are compared with pread(2)
 *             of the same bytes.
 *
 * Prints one line per check, "PASS name" or "FAIL name: why" (or SKIP),
 * and "DONE" last; exits non-zero if a check failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "check.h"
#include "rc_pair.h"

#define ODP_ACCESS (PAIR_ACCESS | IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_ON_DEMAND)
#define PIN_LEN (128u * 1024)
#define CHUNK (64u * 1024)

struct env {
	struct ibv_context *ctx;
	union ibv_gid gid;
	int gid_index;
	struct ibv_pd *pd;
	size_t page;
	uint8_t *src, *dst;		/* pinned, PIN_LEN each */
	struct ibv_mr *src_mr, *dst_mr;
	struct pair p;
};

static void pattern(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7 + (i >> 9));
}

static int all(const uint8_t *p, size_t n, uint8_t byte)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != byte)
			return 0;
	return 1;
}

static void *map_anon(size_t len)
{
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return m == MAP_FAILED ? NULL : m;
}

static struct ibv_mr *reg_odp(struct env *e, void *addr, size_t len, int access, const char *name)
{
	struct ibv_mr *mr = ibv_reg_mr(e->pd, addr, len, access);

	if (!mr)
		fail(name, "ibv_reg_mr(ON_DEMAND) of %zu bytes: %s", len, strerror(errno));
	return mr;
}

/* The pair with atomics allowed on the responder; reported as NAME. */
static int open_pair(struct env *e, const char *name)
{
	struct ibv_qp_attr a = { .qp_access_flags = PAIR_ACCESS | IBV_ACCESS_REMOTE_ATOMIC };
	int err;

	if (pair_open(&e->p, e->ctx, &e->gid, e->gid_index, e->pd, e->pd, 2, name))
		return -1;
	err = ibv_modify_qp(e->p.resp, &a, IBV_QP_ACCESS_FLAGS);
	if (err) {
		fail(name, "ibv_modify_qp(ACCESS_FLAGS): %s", strerror(err));
		pair_close(&e->p);
		return -1;
	}
	return 0;
}

/* A failed request leaves the pair in error: a new one. */
static int reopen(struct env *e, const char *name)
{
	pair_close(&e->p);
	return open_pair(e, name);
}

/* One request on the pair's requester, waited for: its status or ST_*. */
static int post_wait(struct env *e, enum ibv_wr_opcode op, void *laddr, uint32_t len, uint32_t lkey,
		     uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge s = { .addr = (uintptr_t)laddr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = op,
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	}, *bad;
	struct ibv_wc wc;

	if (ibv_post_send(e->p.req, &wr, &bad))
		return ST_POST_FAILED;
	return pair_wait(e->p.cq, &wc);
}

/* WRITE len bytes of the pinned source to raddr. */
static int write_to(struct env *e, uint32_t len, void *raddr, struct ibv_mr *mr)
{
	return post_wait(e, IBV_WR_RDMA_WRITE, e->src, len, e->src_mr->lkey, (uintptr_t)raddr, mr->rkey);
}

/* READ len bytes at raddr into the pinned destination. */
static int read_from(struct env *e, uint32_t len, void *raddr, struct ibv_mr *mr)
{
	return post_wait(e, IBV_WR_RDMA_READ, e->dst, len, e->dst_mr->lkey, (uintptr_t)raddr, mr->rkey);
}

/* An atomic on the 8 bytes at raddr, its result into `res` (of lmr). */
static int atomic_on(struct env *e, enum ibv_wr_opcode op, uint64_t *res, struct ibv_mr *lmr, void *raddr,
		     struct ibv_mr *mr, uint64_t add_or_cmp, uint64_t swap)
{
	struct ibv_sge s = { .addr = (uintptr_t)res, .length = 8, .lkey = lmr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 2, .sg_list = &s, .num_sge = 1, .opcode = op,
		.wr.atomic = { .remote_addr = (uintptr_t)raddr, .rkey = mr->rkey, .compare_add = add_or_cmp,
			       .swap = swap },
	}, *bad;
	struct ibv_wc wc;

	if (ibv_post_send(e->p.req, &wr, &bad))
		return ST_POST_FAILED;
	return pair_wait(e->p.cq, &wc);
}

/* A SEND of len bytes at from (lkey) into a receive at to (lkey); the
 * worse of the two statuses (the send's if both fail). */
static int send_recv(struct env *e, void *from, uint32_t flkey, void *to, uint32_t tlkey, uint32_t len,
		     uint32_t *got)
{
	struct ibv_sge r = { .addr = (uintptr_t)to, .length = len, .lkey = tlkey };
	struct ibv_recv_wr rwr = { .wr_id = 3, .sg_list = &r, .num_sge = 1 }, *rbad;
	struct ibv_wc wc;
	int st, rst;

	if (ibv_post_recv(e->p.resp, &rwr, &rbad))
		return ST_POST_FAILED;
	st = post_wait(e, IBV_WR_SEND, from, len, flkey, 0, 0);
	rst = pair_wait(e->p.rcq, &wc);
	if (got)
		*got = wc.byte_len;
	return st != IBV_WC_SUCCESS ? st : rst;
}

/* --- caps/ -------------------------------------------------------------------------- */

/* FLUSH and ATOMIC WRITE on ODP MRs (IBV_ODP_SUPPORT_FLUSH, _ATOMIC_WRITE in
 * newer rdma-core; 44 names neither). */
#define ODP_SUPPORT_FLUSH (1 << 6)
#define ODP_SUPPORT_ATOMIC_WRITE (1 << 7)
#define RC_CAPS (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ | \
		 IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV | ODP_SUPPORT_FLUSH | ODP_SUPPORT_ATOMIC_WRITE)
#define UD_CAPS (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV)

/* Whether the device has ODP (else every check skips). */
static int test_caps(struct env *e)
{
	struct ibv_device_attr_ex a;
	int err = ibv_query_device_ex(e->ctx, NULL, &a);

	if (err) {
		fail("caps/query", "ibv_query_device_ex: %s", strerror(err));
		return 0;
	}
	if (!(a.odp_caps.general_caps & IBV_ODP_SUPPORT)) {
		skip("caps", "the device has no on-demand paging (C rxe before 6.13)");
		return 0;
	}
	check("caps/general", a.odp_caps.general_caps == (IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT),
	      "general_caps 0x%" PRIx64 ", want IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT", a.odp_caps.general_caps);
	check("caps/rc", a.odp_caps.per_transport_caps.rc_odp_caps == RC_CAPS, "rc_odp_caps 0x%x, want 0x%x",
	      a.odp_caps.per_transport_caps.rc_odp_caps, RC_CAPS);
	check("caps/ud", a.odp_caps.per_transport_caps.ud_odp_caps == UD_CAPS, "ud_odp_caps 0x%x, want 0x%x",
	      a.odp_caps.per_transport_caps.ud_odp_caps, UD_CAPS);
	return 1;
}

/* --- reg/ --------------------------------------------------------------------------- */

static void test_reg_refused(struct env *e)
{
	struct ibv_mr *mr;
	int err;

	/* The kernel's direct map (without KASLR). */
	errno = 0;
	mr = ibv_reg_mr(e->pd, (void *)0xffff888000100000ull, 2 * e->page, ODP_ACCESS);
	err = errno;
	check("reg/kernel-range-refused", !mr && err == EFAULT, "%s, want %s",
	      mr ? "registered" : strerror(err), strerror(EFAULT));
	if (mr)
		ibv_dereg_mr(mr);

	/* The last page of the address space and one more. */
	errno = 0;
	mr = ibv_reg_mr(e->pd, (void *)(UINTPTR_MAX - e->page + 1), 2 * e->page, ODP_ACCESS);
	check("reg/wrapping-range-refused", !mr, "registered");
	if (mr)
		ibv_dereg_mr(mr);
}

/* An MR over addresses nothing maps, then maps memory there. */
static void test_reg_hole(struct env *e)
{
	size_t len = 4 * e->page;
	uint8_t *hole = map_anon(len), *m;
	struct ibv_mr *mr;
	int st;

	if (!hole || munmap(hole, len)) {
		fail("reg/hole", "mmap: %s", strerror(errno));
		return;
	}
	mr = reg_odp(e, hole, len, ODP_ACCESS, "reg/hole-registers");
	if (!mr)
		return;
	pass("reg/hole-registers");
	pattern(e->src, len, 0x31);
	st = write_to(e, len, hole, mr);
	check("reg/write-to-hole-rem-access", st == IBV_WC_REM_ACCESS_ERR, "%s, want %s", st_str(st),
	      st_str(IBV_WC_REM_ACCESS_ERR));
	if (reopen(e, "reg/new-pair"))
		goto out;
	m = mmap(hole, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (m != hole) {
		skip("reg/follows-mapping", "the hole was taken before it could be mapped again");
		if (m != MAP_FAILED)
			munmap(m, len);
		goto out;
	}
	st = write_to(e, len, hole, mr);
	check("reg/follows-mapping", st == IBV_WC_SUCCESS && !memcmp(hole, e->src, len), "%s%s", st_str(st),
	      st == IBV_WC_SUCCESS ? ", but the new pages do not hold the data" : "");
	munmap(hole, len);
out:
	ibv_dereg_mr(mr);
}

/* The page tables of a 1 GiB ODP MR: 16 bytes a page, in VmPin. */
static void test_reg_charge(struct env *e)
{
	size_t len = 1ul << 30;
	long before = vm_pin_kib(getpid()), during, after, want = (long)(len / e->page * 16 / 1024);
	/* A reservation: no memory, only addresses. */
	void *r = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	struct ibv_mr *mr;

	if (r == MAP_FAILED) {
		skip("reg/tables-charged", "no 1 GiB of addresses");
		return;
	}
	mr = reg_odp(e, r, len, ODP_ACCESS, "reg/tables-charged");
	if (mr) {
		during = vm_pin_kib(getpid());
		check("reg/tables-charged", during - before == want, "VmPin %ld kB -> %ld kB, want +%ld kB", before,
		      during, want);
		ibv_dereg_mr(mr);
		after = vm_pin_kib(getpid());
		check("reg/tables-uncharged", after == before, "VmPin %ld kB, was %ld kB", after, before);
	}
	munmap(r, len);
}

/* --- basic/ ------------------------------------------------------------------------- */

static void test_basic_remote(struct env *e, uint8_t *r, struct ibv_mr *rmr)
{
	size_t pg = e->page;
	int st;

	/* Pages 0-1: a WRITE into memory nothing touched yet. */
	pattern(e->src, 5000, 0x41);
	st = write_to(e, 5000, r + 100, rmr);
	check("basic/write-untouched", st == IBV_WC_SUCCESS && !memcmp(r + 100, e->src, 5000) && all(r, 100, 0) &&
	      all(r + 5100, 2 * pg - 5100, 0), "%s", st_str(st));

	/* Pages 2-3: the CPU writes, a READ gets it. */
	pattern(r + 2 * pg, 2 * pg, 0x42);
	memset(e->dst, 0, PIN_LEN);
	st = read_from(e, 6000, r + 2 * pg + 77, rmr);
	check("basic/read", st == IBV_WC_SUCCESS && !memcmp(e->dst, r + 2 * pg + 77, 6000), "%s", st_str(st));

	/* Page 4: READ of a page never touched (the zero page, mapped for
	 * reading), then a WRITE to it (now faulted in for writing). */
	memset(e->dst, 0xee, pg);
	st = read_from(e, pg, r + 4 * pg, rmr);
	check("basic/read-zero-page", st == IBV_WC_SUCCESS && all(e->dst, pg, 0), "%s", st_str(st));
	pattern(e->src, pg, 0x43);
	st = write_to(e, pg, r + 4 * pg, rmr);
	check("basic/write-after-read-fault", st == IBV_WC_SUCCESS && !memcmp(r + 4 * pg, e->src, pg), "%s",
	      st_str(st));
}

static void test_basic_local(struct env *e, uint8_t *r, struct ibv_mr *rmr, uint8_t *l, struct ibv_mr *lmr)
{
	size_t pg = e->page;
	uint64_t *w = (uint64_t *)(r + 5 * pg + 8), *res = (uint64_t *)(l + 3 * pg);
	uint32_t got = 0;
	int st;

	/* SEND out of an ODP MR into a receive in another (pages 5-6 of l,
	 * 1-2 of r, after the CPU wrote the data). */
	pattern(l + pg, 3000, 0x44);
	st = send_recv(e, l + pg + 10, lmr->lkey, r + 6 * pg, rmr->lkey, 3000, &got);
	check("basic/send-recv", st == IBV_WC_SUCCESS && got == 3000 && !memcmp(r + 6 * pg, l + pg + 10, 3000),
	      "%s, %u bytes", st_str(st), got);

	/* A READ into an ODP MR (the completer places it). */
	pattern(r + 7 * pg, pg, 0x45);
	st = post_wait(e, IBV_WR_RDMA_READ, l + 2 * pg, (uint32_t)pg, lmr->lkey, (uintptr_t)(r + 7 * pg), rmr->rkey);
	check("basic/read-into-odp", st == IBV_WC_SUCCESS && !memcmp(l + 2 * pg, r + 7 * pg, pg), "%s", st_str(st));

	/* Atomics on a word of a page nothing touched, results into an
	 * untouched page of the local ODP MR. */
	st = atomic_on(e, IBV_WR_ATOMIC_FETCH_AND_ADD, res, lmr, w, rmr, 5, 0);
	check("basic/fetch-add", st == IBV_WC_SUCCESS && *res == 0 && *w == 5, "%s, result %" PRIu64 ", word %"
	      PRIu64, st_str(st), *res, *w);
	st = atomic_on(e, IBV_WR_ATOMIC_CMP_AND_SWP, res + 1, lmr, w, rmr, 5, 0x1234);
	check("basic/cmp-swap", st == IBV_WC_SUCCESS && res[1] == 5 && *w == 0x1234, "%s, result %" PRIu64
	      ", word %" PRIu64, st_str(st), res[1], *w);
}

/* An ODP MR with write access over a read-only mapping. */
static void test_basic_readonly(struct env *e)
{
	size_t len = 2 * e->page;
	uint8_t *m = map_anon(len);
	struct ibv_mr *mr;
	int st;

	if (!m) {
		fail("basic/readonly", "mmap: %s", strerror(errno));
		return;
	}
	memset(m, 0x77, len);
	mprotect(m, len, PROT_READ);
	mr = reg_odp(e, m, len, ODP_ACCESS, "basic/readonly-registers");
	if (!mr)
		goto out;
	pattern(e->src, len, 0x46);
	st = write_to(e, len, m, mr);
	check("basic/readonly-write-rem-access", st == IBV_WC_REM_ACCESS_ERR, "%s, want %s", st_str(st),
	      st_str(IBV_WC_REM_ACCESS_ERR));
	check("basic/readonly-unchanged", all(m, len, 0x77), "the read-only pages changed");
	if (!reopen(e, "basic/new-pair")) {
		memset(e->dst, 0, len);
		st = read_from(e, len, m, mr);
		check("basic/readonly-read", st == IBV_WC_SUCCESS && all(e->dst, len, 0x77), "%s", st_str(st));
	}
	ibv_dereg_mr(mr);
out:
	munmap(m, len);
}

static void test_basic(struct env *e)
{
	size_t len = 8 * e->page;
	uint8_t *r = map_anon(len), *l = map_anon(len);
	struct ibv_mr *rmr = r ? reg_odp(e, r, len, ODP_ACCESS, "basic/register") : NULL;
	struct ibv_mr *lmr = l && rmr ? reg_odp(e, l, len, ODP_ACCESS, "basic/register") : NULL;

	if (rmr && lmr) {
		test_basic_remote(e, r, rmr);
		test_basic_local(e, r, rmr, l, lmr);
	}
	if (lmr)
		ibv_dereg_mr(lmr);
	if (rmr)
		ibv_dereg_mr(rmr);
	if (l)
		munmap(l, len);
	if (r)
		munmap(r, len);
	test_basic_readonly(e);
}

/* --- munmap/ ------------------------------------------------------------------------ */

/* A memfd of len bytes mapped twice: *a and *b. */
static int memfd_views(size_t len, uint8_t **a, uint8_t **b)
{
	int fd = memfd_create("odp_mr", 0);
	void *x, *y;

	if (fd < 0 || ftruncate(fd, (off_t)len)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	x = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	y = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (x == MAP_FAILED || y == MAP_FAILED)
		return -1;
	*a = x;
	*b = y;
	return 0;
}

static void test_munmap_views(struct env *e)
{
	size_t pg = e->page, len = 8 * pg;
	uint8_t *a, *b, want[4096];
	struct ibv_mr *mr;
	int st;

	if (memfd_views(len, &a, &b) || pg > sizeof(want)) {
		fail("munmap/setup", "memfd: %s", strerror(errno));
		return;
	}
	memset(b, 0x11, len);
	mr = reg_odp(e, a, len, ODP_ACCESS, "munmap/register");
	if (!mr)
		return;
	pattern(e->src, pg, 0x51);
	memcpy(want, e->src, pg);
	st = write_to(e, (uint32_t)pg, a + 5 * pg, mr);
	check("munmap/write-reaches-the-file", st == IBV_WC_SUCCESS && !memcmp(b + 5 * pg, want, pg), "%s",
	      st_str(st));

	/* Pages 4-7 of A go; the file keeps them (B). */
	munmap(a + 4 * pg, 4 * pg);
	pattern(e->src, pg, 0x52);
	st = write_to(e, (uint32_t)pg, a + 5 * pg, mr);
	check("munmap/write-unmapped-rem-access", st == IBV_WC_REM_ACCESS_ERR, "%s, want %s", st_str(st),
	      st_str(IBV_WC_REM_ACCESS_ERR));
	check("munmap/unmapped-page-not-written", !memcmp(b + 5 * pg, want, pg),
	      "the page A no longer maps was written through the MR");
	if (reopen(e, "munmap/new-pair"))
		goto out;
	memset(e->dst, 0x22, pg);
	st = read_from(e, (uint32_t)pg, a + 6 * pg, mr);
	check("munmap/read-unmapped-rem-access", st == IBV_WC_REM_ACCESS_ERR, "%s, want %s", st_str(st),
	      st_str(IBV_WC_REM_ACCESS_ERR));
	check("munmap/read-unmapped-nothing-read", all(e->dst, pg, 0x22), "bytes came back");
	if (reopen(e, "munmap/new-pair"))
		goto out;
	pattern(e->src, pg, 0x53);
	st = write_to(e, (uint32_t)pg, a + pg, mr);
	check("munmap/mapped-part-writes", st == IBV_WC_SUCCESS && !memcmp(b + pg, e->src, pg) &&
	      !memcmp(a + pg, e->src, pg), "%s", st_str(st));
	pattern(b + 2 * pg, pg, 0x54);
	st = read_from(e, (uint32_t)pg, a + 2 * pg, mr);
	check("munmap/mapped-part-reads", st == IBV_WC_SUCCESS && !memcmp(e->dst, b + 2 * pg, pg), "%s",
	      st_str(st));
	/* A WRITE that runs from page 3 into page 4. */
	st = write_to(e, (uint32_t)pg, a + 3 * pg + pg / 2, mr);
	check("munmap/straddling-write-rem-access", st == IBV_WC_REM_ACCESS_ERR, "%s, want %s", st_str(st),
	      st_str(IBV_WC_REM_ACCESS_ERR));
	reopen(e, "munmap/new-pair");
out:
	ibv_dereg_mr(mr);
	munmap(a, 4 * pg);
	munmap(b, len);
}

struct unmapper {
	uint8_t *at;
	size_t len;
	useconds_t delay;
	int err;
};

static void *unmap_later(void *arg)
{
	struct unmapper *u = arg;

	usleep(u->delay);
	u->err = munmap(u->at, u->len) ? errno : 0;
	return NULL;
}

/* One round: WRITEs and READs over all 64 pages of r while a thread
 * unmaps pages 32-63. What went wrong, or NULL. */
static const char *munmap_race_round(struct env *e, uint8_t *r, struct ibv_mr *mr, int round, char *why,
				     size_t whylen)
{
	size_t pg = e->page;
	struct unmapper u = { .at = r + 32 * pg, .len = 32 * pg, .delay = 2000 + 3000 * round };
	pthread_t t;
	int st = IBV_WC_SUCCESS, i;

	if (pthread_create(&t, NULL, unmap_later, &u))
		return "pthread_create failed";
	for (i = 0; i < 400 && st == IBV_WC_SUCCESS; i++) {
		int page = (i * 37 + round) % 64;

		if (i % 2)
			st = write_to(e, (uint32_t)pg, r + page * pg, mr);
		else
			st = read_from(e, (uint32_t)pg, r + page * pg, mr);
		if (st != IBV_WC_SUCCESS && !(st == IBV_WC_REM_ACCESS_ERR && page >= 32)) {
			snprintf(why, whylen, "round %d, request %d (page %d): %s", round, i, page, st_str(st));
			pthread_join(t, NULL);
			return why;
		}
	}
	pthread_join(t, NULL);
	printf("# munmap race round %d: %d requests, the last %s\n", round, i, st_str(st));
	if (u.err)
		return "munmap failed";
	return NULL;
}

static void test_munmap_race(struct env *e)
{
	size_t pg = e->page, len = 64 * pg;
	uint8_t *r = map_anon(len);
	struct ibv_mr *mr = r ? reg_odp(e, r, len, ODP_ACCESS, "munmap-race/register") : NULL;
	const char *bad = NULL;
	char why[160];
	int round, good = 1;

	if (!mr)
		return;
	pattern(e->src, pg, 0x55);
	for (round = 0; round < 3 && !bad; round++) {
		memset(r, 0, 32 * pg);
		bad = munmap_race_round(e, r, mr, round, why, sizeof(why));
		if (reopen(e, "munmap-race/new-pair"))
			break;
		/* The mapped half still works, byte for byte. */
		for (int page = 0; page < 32 && good; page += 5) {
			int st = write_to(e, (uint32_t)pg, r + page * pg, mr);

			good = st == IBV_WC_SUCCESS && !memcmp(r + page * pg, e->src, pg);
		}
		/* Pages 32-63 come back for the next round. */
		if (mmap(r + 32 * pg, 32 * pg, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) != r + 32 * pg) {
			bad = "could not map the unmapped half again";
			break;
		}
	}
	check("munmap-race/only-success-or-rem-access", !bad, "%s", bad);
	check("munmap-race/mapped-half-works", good, "a WRITE to the mapped half failed or did not land");
	ibv_dereg_mr(mr);
	munmap(r, len);
}

/* --- madvise/ ----------------------------------------------------------------------- */

static void test_madvise(struct env *e)
{
	size_t pg = e->page, len = 8 * pg;
	uint8_t *r = map_anon(len);
	struct ibv_mr *mr = r ? reg_odp(e, r, len, ODP_ACCESS, "madvise/register") : NULL;
	int st;

	if (!mr)
		return;
	pattern(e->src, len, 0x61);
	st = write_to(e, (uint32_t)len, r, mr);
	check("madvise/write", st == IBV_WC_SUCCESS && !memcmp(r, e->src, len), "%s", st_str(st));
	madvise(r, len, MADV_DONTNEED);
	check("madvise/dropped", all(r, len, 0), "MADV_DONTNEED left data");
	pattern(e->src, len, 0x62);
	st = write_to(e, (uint32_t)len, r, mr);
	check("madvise/write-lands-in-new-pages", st == IBV_WC_SUCCESS && !memcmp(r, e->src, len),
	      "%s%s", st_str(st), st == IBV_WC_SUCCESS ? ": the CPU does not see the data (old pages written?)" : "");
	madvise(r, len, MADV_DONTNEED);
	pattern(r, len, 0x63);
	st = read_from(e, (uint32_t)len, r, mr);
	check("madvise/read-sees-new-pages", st == IBV_WC_SUCCESS && !memcmp(e->dst, r, len), "%s", st_str(st));
	madvise(r, len, MADV_DONTNEED);
	memset(e->dst, 0xee, len);
	st = read_from(e, (uint32_t)len, r, mr);
	check("madvise/read-dropped-is-zero", st == IBV_WC_SUCCESS && all(e->dst, len, 0), "%s", st_str(st));
	ibv_dereg_mr(mr);
	munmap(r, len);
}

struct dropper {
	uint8_t *at;
	size_t len;
	volatile int stop;
	long n;
};

static void *drop_pages(void *arg)
{
	struct dropper *d = arg;

	while (!d->stop) {
		madvise(d->at, d->len, MADV_DONTNEED);
		d->n++;
		usleep(200);
	}
	return NULL;
}

/* A memfd keeps its data through MADV_DONTNEED, which only unmaps it:
 * every byte must come back as written, however often the MR's pages go. */
static void test_madvise_race(struct env *e)
{
	uint8_t *a, *b;
	struct dropper d = { .len = CHUNK };
	struct ibv_mr *mr;
	pthread_t t;
	char why[160] = "";
	int round, st;

	if (memfd_views(CHUNK, &a, &b)) {
		fail("madvise-race/setup", "memfd: %s", strerror(errno));
		return;
	}
	munmap(b, CHUNK);
	mr = reg_odp(e, a, CHUNK, ODP_ACCESS, "madvise-race/register");
	d.at = a;
	if (!mr || pthread_create(&t, NULL, drop_pages, &d))
		goto out;
	for (round = 0; round < 60 && !why[0]; round++) {
		pattern(e->src, CHUNK, (uint8_t)(0x70 + round));
		st = write_to(e, CHUNK, a, mr);
		if (st != IBV_WC_SUCCESS) {
			snprintf(why, sizeof(why), "round %d: WRITE %s", round, st_str(st));
			break;
		}
		memset(e->dst, 0, CHUNK);
		st = read_from(e, CHUNK, a, mr);
		if (st != IBV_WC_SUCCESS)
			snprintf(why, sizeof(why), "round %d: READ %s", round, st_str(st));
		else if (memcmp(e->dst, e->src, CHUNK))
			snprintf(why, sizeof(why), "round %d: READ back differs from what was written", round);
		else if (memcmp(a, e->src, CHUNK))
			snprintf(why, sizeof(why), "round %d: the CPU sees other bytes than were written", round);
	}
	d.stop = 1;
	pthread_join(t, NULL);
	printf("# madvise race: %d rounds, %ld MADV_DONTNEED\n", round, d.n);
	check("madvise-race/verified", !why[0] && d.n > 0, "%s", why[0] ? why : "no MADV_DONTNEED ran");
out:
	if (mr)
		ibv_dereg_mr(mr);
	munmap(a, CHUNK);
}

/* --- fork/ -------------------------------------------------------------------------- */

/* The child: waits for `go`, then checks its copy holds `byte` (after
 * writing it first if `write_first`). Exit status 0 if so. */
static int child(uint8_t *m, size_t len, int write_first, uint8_t byte, int go, int ready)
{
	char c = 0;

	if (write_first)
		memset(m, byte, len);
	if (write(ready, &c, 1) != 1 || read(go, &c, 1) != 1)
		return 2;
	return all(m, len, byte) ? 0 : 1;
}

/* Forks; the parent WRITEs and READs its pages while the child keeps its
 * copy. `write_first`: the child writes its copy before the parent's
 * WRITE, else the parent writes first and the child finds the pages as
 * they were at the fork. */
static void fork_round(struct env *e, uint8_t *m, struct ibv_mr *mr, size_t len, int write_first,
		       const char *name)
{
	int to_child[2], to_parent[2], status = -1, st;
	uint8_t byte = write_first ? 0xcc : 0x5a;
	char c = 0, n[64];
	pid_t pid;

	/* What the child finds if it does not write first. */
	if (!write_first)
		memset(m, byte, len);
	if (pipe(to_child) || pipe(to_parent)) {
		fail(name, "pipe: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0)
		_exit(child(m, len, write_first, byte, to_child[0], to_parent[1]));
	if (pid < 0 || read(to_parent[0], &c, 1) != 1) {
		fail(name, "fork: %s", strerror(errno));
		return;
	}
	pattern(e->src, len, (uint8_t)(write_first ? 0x81 : 0x82));
	st = write_to(e, (uint32_t)len, m, mr);
	snprintf(n, sizeof(n), "%s/parent-write", name);
	check(n, st == IBV_WC_SUCCESS && !memcmp(m, e->src, len), "%s", st_str(st));
	pattern(m, len, (uint8_t)(write_first ? 0x83 : 0x84));
	st = read_from(e, (uint32_t)len, m, mr);
	snprintf(n, sizeof(n), "%s/parent-read", name);
	check(n, st == IBV_WC_SUCCESS && !memcmp(e->dst, m, len), "%s", st_str(st));
	if (write(to_child[1], &c, 1) != 1 || waitpid(pid, &status, 0) != pid)
		status = -1;
	snprintf(n, sizeof(n), "%s/child-copy-untouched", name);
	check(n, WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status 0x%x (1: its copy changed)", status);
	close(to_child[0]);
	close(to_child[1]);
	close(to_parent[0]);
	close(to_parent[1]);
	/* The child is gone: the parent's MR goes on. */
	pattern(e->src, len, 0x85);
	st = write_to(e, (uint32_t)len, m, mr);
	snprintf(n, sizeof(n), "%s/after-child-exit", name);
	check(n, st == IBV_WC_SUCCESS && !memcmp(m, e->src, len), "%s", st_str(st));
}

static void test_fork(struct env *e)
{
	size_t len = 4 * e->page;
	uint8_t *m = map_anon(len);
	struct ibv_mr *mr = m ? reg_odp(e, m, len, ODP_ACCESS, "fork/register") : NULL;
	int st;

	if (!mr)
		return;
	pattern(e->src, len, 0x80);
	st = write_to(e, (uint32_t)len, m, mr);
	check("fork/before", st == IBV_WC_SUCCESS && !memcmp(m, e->src, len), "%s", st_str(st));
	fork_round(e, m, mr, len, 1, "fork/child-writes-first");
	fork_round(e, m, mr, len, 0, "fork/parent-writes-first");
	ibv_dereg_mr(mr);
	munmap(m, len);
}

/* --- reclaim/ ----------------------------------------------------------------------- */

struct reclaim {
	int fd;
	uint8_t *m;		/* FILE, read-only, private */
	size_t len;
	struct ibv_mr *mr, *rmr;
	uint8_t *rbuf, *chk;	/* an anonymous ODP receive buffer; pread's copy */
};

/* One chunk at off: READ it, and SEND it if `send`; compared with pread. */
static const char *reclaim_chunk(struct env *e, struct reclaim *rc, size_t off, int send, char *why,
				 size_t whylen)
{
	uint32_t got = 0;
	int st;

	if (pread(rc->fd, rc->chk, CHUNK, (off_t)off) != CHUNK)
		return "pread failed";
	st = read_from(e, CHUNK, rc->m + off, rc->mr);
	if (st != IBV_WC_SUCCESS || memcmp(e->dst, rc->chk, CHUNK)) {
		snprintf(why, whylen, "READ at %zu: %s%s", off, st_str(st),
			 st == IBV_WC_SUCCESS ? ", bytes differ from the file" : "");
		return why;
	}
	if (!send)
		return NULL;
	st = send_recv(e, rc->m + off, rc->mr->lkey, rc->rbuf, rc->rmr->lkey, CHUNK, &got);
	if (st != IBV_WC_SUCCESS || got != CHUNK || memcmp(rc->rbuf, rc->chk, CHUNK)) {
		snprintf(why, whylen, "SEND at %zu: %s, %u bytes%s", off, st_str(st), got,
			 st == IBV_WC_SUCCESS ? ", bytes differ from the file" : "");
		return why;
	}
	return NULL;
}

static void test_reclaim(struct env *e, const char *file)
{
	struct reclaim rc = { .fd = open(file, O_RDONLY) };
	const char *bad = NULL;
	struct stat s;
	char why[160];
	int pass_no;

	if (rc.fd < 0 || fstat(rc.fd, &s) || s.st_size < (off_t)(4 * CHUNK)) {
		fail("reclaim/setup", "%s: %s", file, rc.fd < 0 ? strerror(errno) : "too small");
		return;
	}
	rc.len = (size_t)s.st_size / CHUNK * CHUNK;
	rc.m = mmap(NULL, rc.len, PROT_READ, MAP_PRIVATE, rc.fd, 0);
	rc.rbuf = map_anon(CHUNK);
	rc.chk = malloc(CHUNK);
	if (rc.m == MAP_FAILED || !rc.rbuf || !rc.chk) {
		fail("reclaim/setup", "mmap: %s", strerror(errno));
		return;
	}
	/* Read-only: the pages are faulted in for reading, never written. */
	rc.mr = reg_odp(e, rc.m, rc.len, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ON_DEMAND, "reclaim/register");
	rc.rmr = rc.mr ? reg_odp(e, rc.rbuf, CHUNK, ODP_ACCESS, "reclaim/register") : NULL;
	if (!rc.rmr)
		return;
	for (pass_no = 0; pass_no < 2 && !bad; pass_no++) {
		for (size_t off = 0; off < rc.len && !bad; off += CHUNK)
			bad = reclaim_chunk(e, &rc, off, (off / CHUNK) % 2 == (size_t)pass_no, why, sizeof(why));
		printf("# reclaim pass %d over %zu bytes: %s\n", pass_no, rc.len, bad ? bad : "verified");
	}
	check("reclaim/read-and-send-verified", !bad, "pass %d: %s", pass_no - 1, bad);
	ibv_dereg_mr(rc.rmr);
	ibv_dereg_mr(rc.mr);
	munmap(rc.m, rc.len);
	close(rc.fd);
}

/* --- implicit/ ------------------------------------------------------------------------ */

#define PART (2ul << 20)

/* p rounded up to a multiple of `to` (a power of two). */
static uint8_t *align_up(uint8_t *p, size_t to)
{
	return (uint8_t *)(((uintptr_t)p + to - 1) & ~(uintptr_t)(to - 1));
}

/* An address range nothing maps, PART-aligned, of two parts. */
static uint8_t *part_hole(void)
{
	uint8_t *h = map_anon(3 * PART);

	if (!h || munmap(h, 3 * PART))
		return NULL;
	return align_up(h, PART);
}

/* A type 1 window bound over [addr, addr + len) of mr: the status. */
static int bind_on(struct env *e, struct ibv_mw *mw, struct ibv_mr *mr, uint64_t addr, uint64_t len)
{
	struct ibv_mw_bind bind = {
		.wr_id = 7, .send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = mr, .addr = addr, .length = len, .mw_access_flags = IBV_ACCESS_REMOTE_WRITE },
	};
	struct ibv_wc wc;

	if (ibv_bind_mw(e->p.req, mw, &bind))
		return ST_POST_FAILED;
	return pair_wait(e->p.cq, &wc);
}

/* Windows over an implicit MR: only over user addresses. */
static void test_implicit_mw(struct env *e, struct ibv_mr *mr, uint8_t *b)
{
	struct ibv_mw *mw = ibv_alloc_mw(e->pd, IBV_MW_TYPE_1);
	int st;

	if (!mw) {
		fail("implicit/mw", "ibv_alloc_mw: %s", strerror(errno));
		return;
	}
	st = bind_on(e, mw, mr, (uintptr_t)b, 4 * e->page);
	check("implicit/mw-bind-in-user-space", st == IBV_WC_SUCCESS, "%s", st_str(st));
	/* Across the end of user space (4-level paging). */
	st = bind_on(e, mw, mr, 0x7ffffffff000ull - e->page, 2 * e->page);
	check("implicit/mw-bind-past-user-end-refused", st != IBV_WC_SUCCESS, "bound");
	/* A range whose end wraps around. */
	if (st == IBV_WC_SUCCESS || !reopen(e, "implicit/new-pair")) {
		st = bind_on(e, mw, mr, UINT64_MAX - e->page + 1, 2 * e->page);
		check("implicit/mw-bind-wrapping-refused", st != IBV_WC_SUCCESS, "bound");
		if (st != IBV_WC_SUCCESS)
			reopen(e, "implicit/new-pair");
	}
	ibv_dealloc_mw(mw);
}

static void test_implicit_faults(struct env *e, struct ibv_mr *mr, uint8_t *b)
{
	size_t pg = e->page;
	long pin1, pin2;
	uint8_t *h = part_hole(), *m, keep[64];
	int st;

	/* A hole: no part is left behind for it, nothing is charged. */
	pin1 = vm_pin_kib(getpid());
	st = h ? write_to(e, pg, h, mr) : ST_POST_FAILED;
	check("implicit/write-to-hole-rem-access", st == IBV_WC_REM_ACCESS_ERR, "%s, want %s", st_str(st),
	      st_str(IBV_WC_REM_ACCESS_ERR));
	pin2 = vm_pin_kib(getpid());
	check("implicit/failed-access-leaves-no-part", pin2 == pin1, "VmPin %ld kB -> %ld kB", pin1, pin2);
	if (reopen(e, "implicit/new-pair"))
		return;
	/* A kernel address (the direct map, without KASLR). */
	st = write_to(e, 64, (void *)0xffff888000100000ull, mr);
	check("implicit/kernel-address-rem-access", st == IBV_WC_REM_ACCESS_ERR, "%s, want %s", st_str(st),
	      st_str(IBV_WC_REM_ACCESS_ERR));
	if (reopen(e, "implicit/new-pair"))
		return;
	/* The last page below 128 TiB, past the end of user space (4-level
	 * paging), in the same 2 MiB as the last user pages. */
	pin1 = vm_pin_kib(getpid());
	st = write_to(e, 64, (void *)0x7ffffffff000ull, mr);
	pin2 = vm_pin_kib(getpid());
	check("implicit/past-user-end-rem-access", st == IBV_WC_REM_ACCESS_ERR && pin2 == pin1,
	      "%s (want %s), VmPin %ld kB -> %ld kB", st_str(st), st_str(IBV_WC_REM_ACCESS_ERR), pin1, pin2);
	if (reopen(e, "implicit/new-pair"))
		return;
	/* A read-only page of the owner's. */
	memset(b + 8 * pg, 0x3c, pg);
	memcpy(keep, b + 8 * pg, sizeof(keep));
	if (mprotect(b + 8 * pg, pg, PROT_READ)) {
		fail("implicit/read-only-page", "mprotect: %s", strerror(errno));
		return;
	}
	pattern(e->src, pg, 0x44);
	st = write_to(e, 64, b + 8 * pg, mr);
	check("implicit/read-only-page-not-written", st == IBV_WC_REM_ACCESS_ERR && !memcmp(b + 8 * pg, keep, 64),
	      "%s, want %s", st_str(st), st_str(IBV_WC_REM_ACCESS_ERR));
	mprotect(b + 8 * pg, pg, PROT_READ | PROT_WRITE);
	if (reopen(e, "implicit/new-pair"))
		return;
	/* munmap of pages a WRITE reached before, then a new mapping. */
	if (munmap(b, 4 * pg)) {
		fail("implicit/munmap", "munmap: %s", strerror(errno));
		return;
	}
	st = write_to(e, 4 * pg, b, mr);
	check("implicit/munmap/write-rem-access", st == IBV_WC_REM_ACCESS_ERR, "%s, want %s", st_str(st),
	      st_str(IBV_WC_REM_ACCESS_ERR));
	if (reopen(e, "implicit/new-pair"))
		return;
	m = mmap(b, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (m != b) {
		skip("implicit/munmap/follows-mapping", "the range was taken before it could be mapped again");
		return;
	}
	pattern(e->src, 4 * pg, 0x66);
	st = write_to(e, 4 * pg, b, mr);
	check("implicit/munmap/follows-mapping", st == IBV_WC_SUCCESS && !memcmp(b, e->src, 4 * pg), "%s%s",
	      st_str(st), st == IBV_WC_SUCCESS ? ", but the new pages do not hold the data" : "");
}

static void test_implicit(struct env *e)
{
	size_t pg = e->page, len = 8 * pg;
	long pin0 = vm_pin_kib(getpid()), pin1, pin2;
	uint8_t *m = map_anon(3 * PART), *b, *w;
	uint64_t *word, *res = (uint64_t *)e->dst;
	struct ibv_mr *mr;
	int st, err;

	errno = 0;
	mr = ibv_reg_mr_iova(e->pd, NULL, SIZE_MAX, 4096, ODP_ACCESS);
	err = errno;
	check("implicit/iova-nonzero-einval", !mr && err == EINVAL, "%s", mr ? "registered" : strerror(err));
	if (mr)
		ibv_dereg_mr(mr);
	mr = ibv_reg_mr(e->pd, NULL, SIZE_MAX, ODP_ACCESS | IBV_ACCESS_MW_BIND);
	if (!mr || !m) {
		fail("implicit/registers", "ibv_reg_mr(NULL, SIZE_MAX, ON_DEMAND) or mmap: %s", strerror(errno));
		goto out;
	}
	pass("implicit/registers");
	/* A 2 MiB boundary with 4 pages of the mapping before it. */
	b = align_up(m + 4 * pg, PART);
	w = b - 4 * pg;
	pattern(e->src, len, 0x5a);
	st = write_to(e, len, w, mr);
	check("implicit/write-across-parts", st == IBV_WC_SUCCESS && !memcmp(w, e->src, len), "%s%s", st_str(st),
	      st == IBV_WC_SUCCESS ? ", but the pages do not hold the data" : "");
	pin1 = vm_pin_kib(getpid());
	check("implicit/parts-charged", pin1 > pin0, "VmPin %ld kB -> %ld kB", pin0, pin1);
	pattern(w, len, 0x77);
	st = read_from(e, len, w, mr);
	check("implicit/read", st == IBV_WC_SUCCESS && !memcmp(e->dst, w, len), "%s%s", st_str(st),
	      st == IBV_WC_SUCCESS ? ", but the data differ" : "");
	word = (uint64_t *)(b + 64);
	*word = 40;
	*res = 0;
	st = atomic_on(e, IBV_WR_ATOMIC_FETCH_AND_ADD, res, e->dst_mr, word, mr, 2, 0);
	check("implicit/fetch-add", st == IBV_WC_SUCCESS && *res == 40 && *word == 42,
	      "%s, returned %" PRIu64 " (want 40), word %" PRIu64 " (want 42)", st_str(st), *res, *word);
	pattern(w, pg, 0x11);
	memset(b + 12 * pg, 0, pg);
	st = send_recv(e, w, mr->lkey, b + 12 * pg, mr->lkey, (uint32_t)pg, NULL);
	check("implicit/send-recv-lkey", st == IBV_WC_SUCCESS && !memcmp(b + 12 * pg, w, pg), "%s%s", st_str(st),
	      st == IBV_WC_SUCCESS ? ", but the receive buffer does not hold the data" : "");
	if (st != IBV_WC_SUCCESS && reopen(e, "implicit/new-pair"))
		goto out;
	test_implicit_mw(e, mr, b);
	test_implicit_faults(e, mr, b);
out:
	if (mr) {
		ibv_dereg_mr(mr);
		pin2 = vm_pin_kib(getpid());
		check("implicit/parts-uncharged", pin2 == pin0, "VmPin %ld kB, was %ld kB", pin2, pin0);
	}
	if (m)
		munmap(m, 3 * PART);
}

/* --- atomic-write/ -------------------------------------------------------------------- */

/* ATOMIC WRITE of val to raddr (rkey), from a requester made with
 * ibv_create_qp_ex to a responder of its own: the status. */
static int atomic_write_to(struct env *e, void *raddr, uint32_t rkey, uint64_t val)
{
	struct ibv_qp_init_attr_ex init = {
		.qp_type = IBV_QPT_RC, .sq_sig_all = 1, .send_cq = e->p.cq, .recv_cq = e->p.cq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = e->pd, .send_ops_flags = IBV_QP_EX_WITH_ATOMIC_WRITE,
	};
	struct ibv_qp_init_attr rinit = {
		.qp_type = IBV_QPT_RC, .sq_sig_all = 1, .send_cq = e->p.rcq, .recv_cq = e->p.rcq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_access_flags = PAIR_ACCESS | IBV_ACCESS_REMOTE_ATOMIC };
	struct ibv_qp *qp = ibv_create_qp_ex(e->ctx, &init), *resp = qp ? ibv_create_qp(e->pd, &rinit) : NULL;
	struct ibv_qp_ex *x;
	struct ibv_wc wc;
	int st = ST_POST_FAILED;

	if (!qp || !resp || pair_to_init(qp) || pair_to_init(resp) ||
	    ibv_modify_qp(resp, &a, IBV_QP_ACCESS_FLAGS) || pair_to_rts(qp, &e->gid, e->gid_index, resp->qp_num) ||
	    pair_to_rts(resp, &e->gid, e->gid_index, qp->qp_num))
		goto out;
	x = ibv_qp_to_qp_ex(qp);
	ibv_wr_start(x);
	x->wr_id = 9;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(x, rkey, (uintptr_t)raddr, &val);
	if (ibv_wr_complete(x))
		goto out;
	st = pair_wait(e->p.cq, &wc);
out:
	if (resp)
		ibv_destroy_qp(resp);
	if (qp)
		ibv_destroy_qp(qp);
	return st;
}

static void test_atomic_write(struct env *e)
{
	size_t pg = e->page;
	uint8_t *r = map_anon(4 * pg), *h = part_hole();
	struct ibv_mr *mr = r ? reg_odp(e, r, 4 * pg, ODP_ACCESS, "atomic-write/reg") : NULL;
	struct ibv_mr *imr = ibv_reg_mr(e->pd, NULL, SIZE_MAX, ODP_ACCESS);
	const uint64_t v = 0x0123456789abcdefull;
	uint64_t *word;
	int st;

	if (!mr || !imr) {
		fail("atomic-write/setup", "ibv_reg_mr: %s", strerror(errno));
		goto out;
	}
	/* A page nothing touched since the mapping (no page yet). */
	word = (uint64_t *)(r + 2 * pg + 8);
	st = atomic_write_to(e, word, mr->rkey, v);
	check("atomic-write/explicit-untouched-page", st == IBV_WC_SUCCESS && *word == v,
	      "%s, word 0x%" PRIx64 ", want 0x%" PRIx64, st_str(st), *word, v);
	word = (uint64_t *)(r + 3 * pg + 16);
	st = atomic_write_to(e, word, imr->rkey, ~v);
	check("atomic-write/implicit", st == IBV_WC_SUCCESS && *word == ~v, "%s, word 0x%" PRIx64 ", want 0x%" PRIx64,
	      st_str(st), *word, ~v);
	st = h ? atomic_write_to(e, h + 8, imr->rkey, v) : ST_POST_FAILED;
	check("atomic-write/unmapped-rem-access", st == IBV_WC_REM_ACCESS_ERR, "%s, want %s", st_str(st),
	      st_str(IBV_WC_REM_ACCESS_ERR));
out:
	if (imr)
		ibv_dereg_mr(imr);
	if (mr)
		ibv_dereg_mr(mr);
	if (r)
		munmap(r, 4 * pg);
}

/* --- advise/ ------------------------------------------------------------------------ */

#ifndef IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT
#define IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT 2
#endif

/* The device's odp_faults counter (accesses that waited for a fault), or
 * -1. Nothing else uses the device while this program runs. ib_core keeps
 * what it read for the rest of the jiffy (HZ 1000 here): a read 2 ms on
 * is a new one. */
static long odp_faults(struct env *e)
{
	char path[256];
	long v = -1;
	FILE *f;

	usleep(2000);

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/hw_counters/odp_faults",
		 ibv_get_device_name(e->ctx->device));
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* How many of the pages at p (len bytes) the owner's page tables hold. */
static size_t resident(struct env *e, uint8_t *p, size_t len)
{
	unsigned char vec[1024];
	size_t n = len / e->page, in = 0;

	if (n > sizeof(vec) || mincore(p, len, vec))
		return (size_t)-1;
	for (size_t i = 0; i < n; i++)
		in += vec[i] & 1;
	return in;
}

/* ibv_advise_mr of one SGE: 0 or the errno. */
static int advise(struct ibv_pd *pd, int advice, uint32_t flags, void *addr, uint32_t len,
		  uint32_t lkey)
{
	struct ibv_sge s = { .addr = (uintptr_t)addr, .length = len, .lkey = lkey };

	return ibv_advise_mr(pd, advice, flags, &s, 1);
}

#define ADV_W IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE
#define ADV_R IBV_ADVISE_MR_ADVICE_PREFETCH
#define ADV_PRESENT IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT
#define ADV_SYNC IBV_ADVISE_MR_FLAG_FLUSH

/* A WRITE of len bytes of the source pattern `seed` into r, then whether
 * it landed and how many faults it waited for (into *faults). */
static int write_counted(struct env *e, uint8_t *r, struct ibv_mr *mr, size_t len, uint8_t seed, long *faults)
{
	long f0 = odp_faults(e);
	int st;

	pattern(e->src, len, seed);
	st = write_to(e, (uint32_t)len, r, mr);
	*faults = odp_faults(e) - f0;
	return st == IBV_WC_SUCCESS && !memcmp(r, e->src, len);
}

/* Synchronous prefetches of explicit ODP MRs: pages come in (for writing,
 * for reading, or only mapped where the owner has them), and the next
 * access waits for no fault. */
static void test_advise_sync(struct env *e)
{
	size_t pg = e->page, len = 16 * pg;
	uint8_t *r = map_anon(2 * len);
	struct ibv_mr *mr = r ? reg_odp(e, r, 2 * len, ODP_ACCESS, "advise/reg") : NULL;
	size_t in;
	long faults;
	int err;

	if (!mr)
		goto out;
	/* PREFETCH_WRITE of untouched pages: all in, the WRITE faults none. */
	in = resident(e, r, len);
	err = advise(e->pd, ADV_W, ADV_SYNC, r, (uint32_t)len, mr->lkey);
	check("advise/write-sync", err == 0 && resident(e, r, len) == len / pg,
	      "%s, %zu of %zu pages resident (before: %zu)", err_str(err), resident(e, r, len), len / pg, in);
	check("advise/write-sync-access-waits-for-no-fault", write_counted(e, r, mr, len, 0x21, &faults) &&
	      faults == 0, "faults %ld during the WRITE, want 0 (or the data did not land)", faults);
	/* A control: the same WRITE into untouched pages of the MR waits. */
	check("advise/control-access-waits-for-fault", write_counted(e, r + len, mr, len, 0x22, &faults) &&
	      faults > 0, "faults %ld during the WRITE, want > 0 (or the data did not land)", faults);
	ibv_dereg_mr(mr);
	munmap(r, 2 * len);

	/* PREFETCH (read) of untouched pages: mapped (the zero page); a READ
	 * waits for no fault and reads zeros. */
	r = map_anon(2 * len);
	mr = r ? reg_odp(e, r, 2 * len, ODP_ACCESS, "advise/reg") : NULL;
	if (!mr)
		goto out;
	err = advise(e->pd, ADV_R, ADV_SYNC, r, (uint32_t)len, mr->lkey);
	in = resident(e, r, len);
	check("advise/read-sync", err == 0 && in == len / pg, "%s, %zu of %zu pages resident", err_str(err), in,
	      len / pg);
	{
		long f0 = odp_faults(e);
		int st;

		memset(e->dst, 0xee, len);
		st = read_from(e, (uint32_t)len, r, mr);
		faults = odp_faults(e) - f0;
		check("advise/read-sync-access-waits-for-no-fault",
		      st == IBV_WC_SUCCESS && all(e->dst, len, 0) && faults == 0, "%s, faults %ld (want 0)%s",
		      st_str(st), faults, st == IBV_WC_SUCCESS && !all(e->dst, len, 0) ? ", data not zero" : "");
	}
	/* NO_FAULT of untouched pages brings nothing in. */
	err = advise(e->pd, ADV_PRESENT, ADV_SYNC, r + len, (uint32_t)len, mr->lkey);
	in = resident(e, r + len, len);
	check("advise/no-fault-faults-nothing", err == 0 && in == 0, "%s, %zu pages resident, want 0",
	      err_str(err), in);
	/* Pages the owner wrote since, which the MR has not mapped: NO_FAULT
	 * maps them, and a WRITE there waits for no fault. */
	memset(r + len, 0x5c, len);
	err = advise(e->pd, ADV_PRESENT, ADV_SYNC, r + len, (uint32_t)len, mr->lkey);
	check("advise/no-fault-maps-present-pages", err == 0 && write_counted(e, r + len, mr, len, 0x23, &faults) &&
	      faults == 0, "%s, faults %ld during the WRITE, want 0 (or the data did not land)", err_str(err),
	      faults);
	ibv_dereg_mr(mr);
out:
	if (r)
		munmap(r, 2 * len);
}

/* What a prefetch refuses, with the errors of ibv_advise_mr(3). */
static void test_advise_refused(struct env *e)
{
	size_t pg = e->page, len = 4 * pg;
	uint8_t *r = map_anon(len), *hole = map_anon(len);
	struct ibv_mr *mr = r ? reg_odp(e, r, len, ODP_ACCESS, "advise/reg") : NULL;
	struct ibv_mr *ro = r ? reg_odp(e, r, len, IBV_ACCESS_ON_DEMAND, "advise/reg-read-only") : NULL;
	struct ibv_mr *hmr = NULL;
	struct ibv_pd *pd2 = ibv_alloc_pd(e->ctx);
	struct ibv_sge many[2];
	int err;

	if (!mr || !ro || !hole || !pd2 || munmap(hole, len)) {
		fail("advise/refused-setup", "ibv_reg_mr, ibv_alloc_pd or mmap: %s", strerror(errno));
		goto out;
	}
	err = advise(e->pd, ADV_W, ADV_SYNC, r, (uint32_t)len, mr->lkey ^ 0x1);
	check("advise/bad-lkey-efault", err == EFAULT, "%s, want EFAULT", err_str(err));
	err = advise(pd2, ADV_W, ADV_SYNC, r, (uint32_t)len, mr->lkey);
	check("advise/other-pd-efault", err == EFAULT, "%s, want EFAULT", err_str(err));
	err = advise(e->pd, ADV_W, ADV_SYNC, r + pg, (uint32_t)len, mr->lkey);
	check("advise/past-mr-end-efault", err == EFAULT, "%s, want EFAULT", err_str(err));
	err = advise(e->pd, ADV_W, ADV_SYNC, r, (uint32_t)len, ro->lkey);
	check("advise/write-without-write-access-efault", err == EFAULT, "%s, want EFAULT", err_str(err));
	err = advise(e->pd, ADV_W, ADV_SYNC, e->src, 64, e->src_mr->lkey);
	check("advise/pinned-mr-einval", err == EINVAL, "%s, want EINVAL", err_str(err));
	err = advise(e->pd, 7, ADV_SYNC, r, (uint32_t)len, mr->lkey);
	check("advise/unknown-advice-eopnotsupp", err == EOPNOTSUPP, "%s, want EOPNOTSUPP", err_str(err));
	/* One bad SGE fails the call: nothing of the good one is fetched. */
	many[0] = (struct ibv_sge){ .addr = (uintptr_t)r, .length = (uint32_t)len, .lkey = mr->lkey };
	many[1] = (struct ibv_sge){ .addr = (uintptr_t)r, .length = (uint32_t)len, .lkey = mr->lkey ^ 0x1 };
	err = ibv_advise_mr(e->pd, ADV_W, ADV_SYNC, many, 2);
	check("advise/one-bad-sge-fails-all", err == EFAULT && resident(e, r, len) == 0,
	      "%s (want EFAULT), %zu pages resident (want 0)", err_str(err), resident(e, r, len));
	err = advise(e->pd, ADV_R, ADV_SYNC, r, (uint32_t)len, ro->lkey);
	check("advise/read-without-write-access", err == 0 && resident(e, r, len) == len / pg,
	      "%s, %zu of %zu pages resident", err_str(err), resident(e, r, len), len / pg);
	/* Memory the owner does not map: refused when synchronous, left to
	 * the access when not. */
	hmr = reg_odp(e, hole, len, ODP_ACCESS, "advise/reg-hole");
	if (hmr) {
		err = advise(e->pd, ADV_W, ADV_SYNC, hole, (uint32_t)len, hmr->lkey);
		check("advise/unmapped-sync-efault", err == EFAULT, "%s, want EFAULT", err_str(err));
		err = advise(e->pd, ADV_W, 0, hole, (uint32_t)len, hmr->lkey);
		check("advise/unmapped-async-accepted", err == 0, "%s", err_str(err));
		ibv_dereg_mr(hmr);
	}
out:
	if (ro)
		ibv_dereg_mr(ro);
	if (mr)
		ibv_dereg_mr(mr);
	if (pd2)
		ibv_dealloc_pd(pd2);
	if (r)
		munmap(r, len);
}

/* Prefetches without the flush flag: the pages come in soon after, and
 * more of them than a user's bound of queued work all succeed; an MR
 * deregistered and unmapped right after its prefetches goes cleanly. */
static void test_advise_async(struct env *e)
{
	size_t pg = e->page, len = 64 * pg;
	uint8_t *r = map_anon(len);
	struct ibv_mr *mr = r ? reg_odp(e, r, len, ODP_ACCESS, "advise/reg") : NULL;
	long pin0 = vm_pin_kib(getpid()), pin = 0;
	int err, bad = 0;
	size_t in = 0;

	if (!mr)
		goto out;
	err = advise(e->pd, ADV_W, 0, r, (uint32_t)len, mr->lkey);
	for (int i = 0; i < 500 && err == 0 && (in = resident(e, r, len)) != len / pg; i++)
		usleep(10000);
	check("advise/async-write-pages-come-in", err == 0 && in == len / pg,
	      "%s, %zu of %zu pages resident after 5 s", err_str(err), in, len / pg);
	ibv_dereg_mr(mr);
	munmap(r, len);
	/* 64 prefetches of 256 pages each, then the MR and mapping go. */
	len = 64 * 256 * pg;
	r = map_anon(len);
	mr = r ? reg_odp(e, r, len, ODP_ACCESS, "advise/reg-large") : NULL;
	if (!mr)
		goto out;
	for (int i = 0; i < 64; i++) {
		err = advise(e->pd, ADV_W, 0, r + (size_t)i * 256 * pg, (uint32_t)(256 * pg), mr->lkey);
		bad += err != 0;
	}
	check("advise/async-many-accepted", bad == 0, "%d of 64 refused", bad);
	err = ibv_dereg_mr(mr);
	mr = NULL;
	check("advise/async-then-dereg", err == 0, "ibv_dereg_mr: %s", err_str(err));
	/* The jobs still under way hold its umem (and its charge) until
	 * they end. */
	for (int i = 0; i < 1000 && (pin = vm_pin_kib(getpid())) > pin0; i++)
		usleep(10000);
	check("advise/async-jobs-end", pin <= pin0, "VmPin %ld kB after 10 s, was %ld kB", pin, pin0);
out:
	if (mr)
		ibv_dereg_mr(mr);
	if (r)
		munmap(r, len);
}

/* An implicit MR: a prefetch across a part boundary brings both parts'
 * pages in (and charges the parts), one of a hole fails and leaves no
 * part charged. */
static void test_advise_implicit(struct env *e)
{
	size_t pg = e->page, len = 8 * pg;
	uint8_t *m = map_anon(3 * PART), *w, *h = part_hole();
	struct ibv_mr *mr = ibv_reg_mr(e->pd, NULL, SIZE_MAX, ODP_ACCESS);
	long pin0 = vm_pin_kib(getpid()), pin1, faults;
	int err;

	if (!mr || !m || !h) {
		fail("advise/implicit-setup", "ibv_reg_mr(NULL, SIZE_MAX) or mmap: %s", strerror(errno));
		goto out;
	}
	w = align_up(m + 4 * pg, PART) - 4 * pg;
	err = advise(e->pd, ADV_W, ADV_SYNC, w, (uint32_t)len, mr->lkey);
	pin1 = vm_pin_kib(getpid());
	check("advise/implicit-across-parts", err == 0 && resident(e, w, len) == len / pg && pin1 > pin0,
	      "%s, %zu of %zu pages resident, VmPin %ld kB -> %ld kB", err_str(err), resident(e, w, len), len / pg,
	      pin0, pin1);
	check("advise/implicit-access-waits-for-no-fault", write_counted(e, w, mr, len, 0x24, &faults) &&
	      faults == 0, "faults %ld during the WRITE, want 0 (or the data did not land)", faults);
	err = advise(e->pd, ADV_W, ADV_SYNC, h, (uint32_t)pg, mr->lkey);
	check("advise/implicit-hole-efault-no-part", err == EFAULT && vm_pin_kib(getpid()) == pin1,
	      "%s (want EFAULT), VmPin %ld kB -> %ld kB", err_str(err), pin1, vm_pin_kib(getpid()));
	err = advise(e->pd, ADV_PRESENT, ADV_SYNC, h, (uint32_t)pg, mr->lkey);
	check("advise/implicit-no-fault-makes-no-part", err == 0 && vm_pin_kib(getpid()) == pin1,
	      "%s, VmPin %ld kB -> %ld kB", err_str(err), pin1, vm_pin_kib(getpid()));
out:
	if (mr)
		ibv_dereg_mr(mr);
	if (m)
		munmap(m, 3 * PART);
}

/* advise/: ibv_advise_mr, where the provider offers it (librxe of
 * rdma-core 59 and later); if `required` (the program's advise mode, run
 * with such a librxe), an EOPNOTSUPP is the device's and fails. */
static void test_advise(struct env *e, int required)
{
	uint8_t *r = map_anon(e->page);
	struct ibv_mr *mr = r ? reg_odp(e, r, e->page, ODP_ACCESS, "advise/reg") : NULL;
	int err;

	if (!mr)
		return;
	err = advise(e->pd, ADV_W, ADV_SYNC, r, (uint32_t)e->page, mr->lkey);
	ibv_dereg_mr(mr);
	munmap(r, e->page);
	if ((err == EOPNOTSUPP || err == ENOSYS) && !required) {
		skip("advise", "the provider has no advise_mr (librxe before rdma-core 59)");
		return;
	}
	check("advise/supported", err == 0, "PREFETCH_WRITE of an ODP MR's page: %s", err_str(err));
	if (err)
		return;
	if (odp_faults(e) < 0) {
		fail("advise/counter", "no hw_counters/odp_faults on %s", ibv_get_device_name(e->ctx->device));
		return;
	}
	test_advise_sync(e);
	test_advise_refused(e);
	test_advise_async(e);
	test_advise_implicit(e);
}

/* --- main --------------------------------------------------------------------------- */

/* --- huge/ -------------------------------------------------------------------------- */

#define HUGE (2u << 20)

/* WRITE len bytes of the pattern `seed` to r + off (of the 2 * HUGE at r,
 * zero elsewhere): they land there and nowhere else. */
static void huge_write(struct env *e, uint8_t *r, struct ibv_mr *mr, size_t off, uint32_t len, uint8_t seed,
		       const char *name)
{
	int st;

	pattern(e->src, len, seed);
	st = write_to(e, len, r + off, mr);
	check(name, st == IBV_WC_SUCCESS && !memcmp(r + off, e->src, len) && all(r, off, 0) &&
	      all(r + off + len, 2 * HUGE - off - len, 0), "%s%s", st_str(st),
	      st == IBV_WC_SUCCESS ? ", but not exactly there" : "");
	memset(r + off, 0, len);
}

static void test_huge_pages(struct env *e, uint8_t *r, struct ibv_mr *mr)
{
	size_t pg = e->page, deep = 5 * pg + 100;
	uint64_t *w = (uint64_t *)(r + HUGE + 7 * pg + 8), *res = (uint64_t *)e->dst;
	uint32_t got = 0;
	int st;

	huge_write(e, r, mr, deep, 6000, 0x51, "huge/write-deep-in-page");
	huge_write(e, r, mr, HUGE - 2500, 5000, 0x52, "huge/write-across-huge-pages");
	huge_write(e, r, mr, HUGE + 300 * pg, (uint32_t)pg, 0x53, "huge/write-second-page");

	pattern(r + HUGE / 2 + 123, 7000, 0x54);
	memset(e->dst, 0, PIN_LEN);
	st = read_from(e, 7000, r + HUGE / 2 + 123, mr);
	check("huge/read-deep-in-page", st == IBV_WC_SUCCESS && !memcmp(e->dst, r + HUGE / 2 + 123, 7000), "%s",
	      st_str(st));
	memset(r + HUGE / 2 + 123, 0, 7000);

	*w = 40;
	st = atomic_on(e, IBV_WR_ATOMIC_FETCH_AND_ADD, res, e->dst_mr, w, mr, 2, 0);
	check("huge/fetch-add-deep-in-page", st == IBV_WC_SUCCESS && *res == 40 && *w == 42,
	      "%s, result %" PRIu64 ", word %" PRIu64, st_str(st), *res, *w);
	*w = 0;

	pattern(e->src, 3000, 0x55);
	st = send_recv(e, e->src, e->src_mr->lkey, r + HUGE + 9 * pg + 17, mr->lkey, 3000, &got);
	check("huge/send-into-page", st == IBV_WC_SUCCESS && got == 3000 &&
	      !memcmp(r + HUGE + 9 * pg + 17, e->src, 3000) && all(r, HUGE + 9 * pg + 17, 0),
	      "%s, %u bytes", st_str(st), got);
	memset(r + HUGE + 9 * pg + 17, 0, 3000);

	/* The second huge page unmapped: the MR follows. */
	if (munmap(r + HUGE, HUGE)) {
		fail("huge/munmap", "%s", strerror(errno));
		return;
	}
	pattern(e->src, 4000, 0x56);
	st = write_to(e, 4000, r + HUGE + 11 * pg, mr);
	check("huge/munmap/write-rem-access", st == IBV_WC_REM_ACCESS_ERR, "%s, want %s", st_str(st),
	      st_str(IBV_WC_REM_ACCESS_ERR));
	if (!reopen(e, "huge/munmap/new-pair")) {
		st = write_to(e, 4000, r + 13 * pg, mr);
		check("huge/munmap/first-page-still-written", st == IBV_WC_SUCCESS &&
		      !memcmp(r + 13 * pg, e->src, 4000), "%s", st_str(st));
	}
}

static void test_huge(struct env *e)
{
	uint8_t *r = mmap(NULL, 2 * HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	uint8_t *b = map_anon(2 * e->page);
	struct ibv_mr *mr;
	int st;

	/* Pinned memory is pinned page by page: the flag means nothing there. */
	mr = b ? ibv_reg_mr(e->pd, b, 2 * e->page, PAIR_ACCESS | IBV_ACCESS_HUGETLB) : NULL;
	check("huge/pinned-refused", b && !mr && errno == EOPNOTSUPP, "%s",
	      mr ? "registered" : strerror(errno));
	if (mr)
		ibv_dereg_mr(mr);
	/* Over base pages: registers (nothing is faulted in yet), an access
	 * finds no huge page and fails. */
	mr = b ? reg_odp(e, b, 2 * e->page, ODP_ACCESS | IBV_ACCESS_HUGETLB, "huge/base-pages-register") : NULL;
	if (mr) {
		memset(b, 0x66, 2 * e->page);
		pattern(e->src, 100, 0x57);
		st = write_to(e, 100, b + 10, mr);
		check("huge/base-pages-write-rem-access", st == IBV_WC_REM_ACCESS_ERR && all(b, 2 * e->page, 0x66),
		      "%s, want %s", st_str(st), st_str(IBV_WC_REM_ACCESS_ERR));
		ibv_dereg_mr(mr);
		reopen(e, "huge/base-pages-new-pair");
	}
	if (b)
		munmap(b, 2 * e->page);

	if (r == MAP_FAILED) {
		fail("huge/mmap", "MAP_HUGETLB of 4 MiB: %s (vm.nr_hugepages?)", strerror(errno));
		return;
	}
	memset(r, 0, 2 * HUGE);
	mr = reg_odp(e, r, 2 * HUGE, ODP_ACCESS | IBV_ACCESS_HUGETLB, "huge/register");
	if (mr) {
		test_huge_pages(e, r, mr);
		ibv_dereg_mr(mr);
	}
	munmap(r, 2 * HUGE);
}

static int setup(struct env *e, const char *dev)
{
	e->page = (size_t)sysconf(_SC_PAGESIZE);
	e->ctx = open_dev(dev);
	if (!e->ctx || ibv_query_gid(e->ctx, 1, e->gid_index, &e->gid)) {
		fail("setup", "open %s or query GID %d: %s", dev, e->gid_index, strerror(errno));
		return -1;
	}
	e->pd = ibv_alloc_pd(e->ctx);
	e->src = map_anon(PIN_LEN);
	e->dst = map_anon(PIN_LEN);
	if (!e->pd || !e->src || !e->dst) {
		fail("setup", "ibv_alloc_pd or mmap: %s", strerror(errno));
		return -1;
	}
	e->src_mr = ibv_reg_mr(e->pd, e->src, PIN_LEN, PAIR_ACCESS);
	e->dst_mr = ibv_reg_mr(e->pd, e->dst, PIN_LEN, PAIR_ACCESS);
	if (!e->src_mr || !e->dst_mr) {
		fail("setup", "ibv_reg_mr: %s", strerror(errno));
		return -1;
	}
	return open_pair(e, "setup");
}

int main(int argc, char **argv)
{
	const char *dev = argc > 1 ? argv[1] : "rrxe0";
	struct env e = { .gid_index = argc > 2 ? atoi(argv[2]) : 1 };
	int reclaim = argc > 4 && !strcmp(argv[3], "reclaim");
	int advise_only = argc > 3 && !strcmp(argv[3], "advise");

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (setup(&e, dev)) {
		printf("DONE\n");
		return 1;
	}
	if (test_caps(&e)) {
		if (reclaim) {
			test_reclaim(&e, argv[4]);
		} else if (advise_only) {
			test_advise(&e, 1);
		} else {
			test_reg_refused(&e);
			test_reg_hole(&e);
			test_reg_charge(&e);
			test_basic(&e);
			test_munmap_views(&e);
			test_munmap_race(&e);
			test_madvise(&e);
			test_madvise_race(&e);
			test_fork(&e);
			test_implicit(&e);
			test_atomic_write(&e);
			test_advise(&e, 0);
			test_huge(&e);
		}
	}
	pair_close(&e.p);
	ibv_dereg_mr(e.src_mr);
	ibv_dereg_mr(e.dst_mr);
	check("teardown", ibv_dealloc_pd(e.pd) == 0 && ibv_close_device(e.ctx) == 0, "%s", strerror(errno));
	printf("DONE\n");
	return failures ? 1 : 0;
}
