// SPDX-License-Identifier: GPL-2.0
/*
 * rereg_user_mr test: IB_MR_REREG_TRANS, _ACCESS and _PD, proven with
 * traffic.
 *
 *   rereg_mr DEVICE [GID_INDEX]
 *
 * librxe (rdma-core 44) has no rereg_mr provider op, so ibv_rereg_mr() fails
 * in libibverbs before reaching the kernel. This program sends the legacy
 * uverbs write() command IB_USER_VERBS_CMD_REREG_MR (struct
 * ib_uverbs_rereg_mr, response struct ib_uverbs_rereg_mr_resp) on the
 * context's cmd_fd itself, then checks what the re-registered MR does with
 * RDMA WRITEs and READs between two RC QPs of the device connected to each
 * other (loopback through the device's own GID):
 *
 *   trans/   the MR moves to another buffer, length and IOVA: the keys in the
 *            response are the MR's keys; WRITEs land in the new buffer (also
 *            across one of its page boundaries and at its last bytes), not in
 *            the old one; READs return the new buffer; the lkey translates
 *            the new IOVA; the old IOVA is refused remotely and locally;
 *   access/  dropping REMOTE_WRITE makes a WRITE complete with
 *            IBV_WC_REM_ACCESS_ERR and leaves the memory alone while READs
 *            still work; giving it back makes WRITEs work again; without any
 *            remote access the rkey is 0 and READs are refused too; an MR
 *            pinned read-only cannot be made writable without a new
 *            translation (EACCES, as ib_umem_check_rereg says), but can be
 *            with one; REMOTE_WRITE without LOCAL_WRITE is EINVAL;
 *   pd/      the MR moves to another PD: a QP of the old PD gets
 *            IBV_WC_LOC_PROT_ERR for the lkey and its responder refuses the
 *            rkey, QPs of the new PD use both; the old PD can then be
 *            deallocated and the new one cannot (EBUSY) until the MR is gone;
 *   odp/     an on-demand paging MR (on a device with ODP) moves to another
 *            buffer and stays paged on demand: WRITEs land in the new buffer,
 *            not the old one; an access change keeps it so (remote write
 *            dropped: refused; given back: lands); an access without
 *            ON_DEMAND, with a new translation or not, is EOPNOTSUPP (an MR
 *            keeps its kind of pages) and changes nothing;
 *   all/     TRANS, ACCESS and PD in one command;
 *   bad/     flags 0 (EINVAL), an unknown flag (EOPNOTSUPP), no such MR
 *            (ENOENT), a deregistered MR's handle (ENOENT), a PD's handle
 *            (EINVAL), an IOVA whose page offset differs from the start's,
 *            length 0, an overflowing or an unmapped range, bad access bits,
 *            a bad PD handle; after all of them the MR still works with its
 *            old translation, access and keys.
 *
 * (A DMA MR cannot be named from user space: get_dma_mr is for kernel
 * consumers only, so "rereg of a non-user MR" is not reachable here.)
 *
 * C rxe (6.12) implements only ACCESS and PD: on a device whose name does
 * not start with "rrxe", an EOPNOTSUPP for TRANS is a SKIP.
 *
 * Prints one line per check, "PASS name" or "FAIL name: why" (or "SKIP name:
 * why"), comment lines starting with '#', and "DONE" last; exits non-zero
 * if a check failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

#include "check.h"
#include "rc_pair.h"
#include "raw_cmd.h"

#define LW IBV_ACCESS_LOCAL_WRITE
#define RW IBV_ACCESS_REMOTE_WRITE
#define RR IBV_ACCESS_REMOTE_READ

/* An IOVA unrelated to any buffer address; its page offset is set per use. */
#define FAR_IOVA 0x5a5a00000000ull

static int is_rrxe;
static long page;

/* --- the environment: device, PDs, a peer buffer ------------------------------- */

struct env {
	struct ibv_context *ctx;
	union ibv_gid gid;
	int gid_index;
	struct ibv_pd *pd;		/* the peer MR's and most QPs' */
	uint8_t *peer;			/* the other end of every transfer */
	struct ibv_mr *peer_mr;		/* LW | RW | RR on pd */
};

static void *map_pages(size_t n, int fill)
{
	void *p = mmap(NULL, n * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memset(p, fill, n * page);
	return p;
}

static void pattern(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

/* Whether [p, p + n) is all `byte`. */
static int all(const uint8_t *p, size_t n, uint8_t byte)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != byte)
			return 0;
	return 1;
}

/*
 * One signaled RDMA WRITE or READ on p->req: local [laddr, +len) with lkey,
 * remote raddr with rkey. Returns the completion's status, or ST_*.
 */
static int rdma_op(struct pair *p, enum ibv_wr_opcode op, uint64_t laddr, uint32_t lkey, uint32_t len,
		   uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { .addr = laddr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr = {
		.wr_id = 0x7e7e, .sg_list = &sge, .num_sge = 1, .opcode = op, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	}, *bad;
	struct ibv_wc wc;

	if (ibv_post_send(p->req, &wr, &bad))
		return ST_POST_FAILED;
	return pair_wait(p->cq, &wc);
}

/*
 * A transfer on a fresh pair that must succeed: check NAME passes if it
 * completes with IBV_WC_SUCCESS. Returns whether it did.
 */
static int op_ok(struct env *e, const char *name, struct ibv_pd *req_pd, struct ibv_pd *resp_pd,
		 enum ibv_wr_opcode op, uint64_t laddr, uint32_t lkey, uint32_t len, uint64_t raddr, uint32_t rkey)
{
	struct pair p;
	int st;

	if (pair_open(&p, e->ctx, &e->gid, e->gid_index, req_pd, resp_pd, 1, name))
		return 0;
	st = rdma_op(&p, op, laddr, lkey, len, raddr, rkey);
	pair_close(&p);
	check(name, st == IBV_WC_SUCCESS, "%s %u bytes local %#" PRIx64 "/lkey %#x remote %#" PRIx64 "/rkey %#x: %s",
	      op == IBV_WR_RDMA_WRITE ? "WRITE" : "READ", len, laddr, lkey, raddr, rkey, st_str(st));
	return st == IBV_WC_SUCCESS;
}

/* A transfer on a fresh pair that must complete with status `want`. */
static void op_fails(struct env *e, const char *name, struct ibv_pd *req_pd, struct ibv_pd *resp_pd,
		     enum ibv_wr_opcode op, uint64_t laddr, uint32_t lkey, uint32_t len, uint64_t raddr,
		     uint32_t rkey, int want)
{
	struct pair p;
	int st;

	if (pair_open(&p, e->ctx, &e->gid, e->gid_index, req_pd, resp_pd, 1, name))
		return;
	st = rdma_op(&p, op, laddr, lkey, len, raddr, rkey);
	pair_close(&p);
	check(name, st == want, "%s %u bytes local %#" PRIx64 "/lkey %#x remote %#" PRIx64 "/rkey %#x: %s, want %s",
	      op == IBV_WR_RDMA_WRITE ? "WRITE" : "READ", len, laddr, lkey, raddr, rkey, st_str(st), st_str(want));
}

/* Writes `len` pattern bytes from the peer into (raddr, rkey), which maps
 * to `dst`; passes NAME if they arrive there. */
static void write_lands(struct env *e, const char *name, struct ibv_pd *resp_pd, uint64_t raddr,
			uint32_t rkey, const uint8_t *dst, uint32_t len, uint8_t seed)
{
	char sub[128];

	pattern(e->peer, len, seed);
	snprintf(sub, sizeof(sub), "%s-completes", name);
	if (!op_ok(e, sub, e->pd, resp_pd, IBV_WR_RDMA_WRITE, (uintptr_t)e->peer, e->peer_mr->lkey, len, raddr, rkey))
		return;
	check(name, !memcmp(dst, e->peer, len), "the %u bytes written to %#" PRIx64 " are not at %p", len, raddr,
	      (void *)dst);
}

/* Reads `len` bytes from (raddr, rkey), which maps to `src`, into the peer;
 * passes NAME if they are src's. */
static void read_returns(struct env *e, const char *name, struct ibv_pd *resp_pd, uint64_t raddr,
			 uint32_t rkey, uint8_t *src, uint32_t len, uint8_t seed)
{
	char sub[128];

	pattern(src, len, seed);
	memset(e->peer, 0, len);
	snprintf(sub, sizeof(sub), "%s-completes", name);
	if (!op_ok(e, sub, e->pd, resp_pd, IBV_WR_RDMA_READ, (uintptr_t)e->peer, e->peer_mr->lkey, len, raddr, rkey))
		return;
	check(name, !memcmp(e->peer, src, len), "the %u bytes read from %#" PRIx64 " are not those at %p", len,
	      raddr, (void *)src);
}

/* --- IB_MR_REREG_TRANS ------------------------------------------------------------ */

static void test_trans(struct env *e)
{
	const size_t a_pages = 2, b_pages = 4;
	const uint64_t b_off = 256, b_len = 3 * page;	/* B's range: [B + 256, B + 256 + 3 pages) */
	const uint64_t iova = FAR_IOVA + b_off;	/* same page offset as the start */
	uint8_t *a = map_pages(a_pages, 0xaa), *b = map_pages(b_pages, 0xbb);
	struct ibv_mr *mr;
	struct keys k;
	int err;

	if (!a || !b) {
		fail("trans/setup", "mmap: %s", strerror(errno));
		return;
	}
	mr = ibv_reg_mr(e->pd, a, a_pages * page, LW | RW | RR);
	if (!mr) {
		fail("trans/reg-mr", "ibv_reg_mr: %s", strerror(errno));
		return;
	}
	printf("# trans: MR handle %u lkey %#x rkey %#x over A %p (%zu bytes), B %p\n", mr->handle, mr->lkey,
	       mr->rkey, (void *)a, a_pages * page, (void *)b);
	write_lands(e, "trans/before-write-in-a", e->pd, (uintptr_t)a + 64, mr->rkey, a + 64, 64, 1);
	memset(a, 0xaa, a_pages * page);

	err = raw_rereg(e->ctx, mr->handle, REREG_TRANS, (uintptr_t)b + b_off, b_len, iova, 0, 0, &k);
	if (err == EOPNOTSUPP && !is_rrxe) {
		skip("trans/rereg", "EOPNOTSUPP: C rxe does not implement IB_MR_REREG_TRANS");
		ibv_dereg_mr(mr);
		return;
	}
	if (err) {
		fail("trans/rereg", "REREG_MR(TRANS, start B + 256, length %" PRIu64 ", iova %#" PRIx64 "): %s", b_len,
		     iova, strerror(err));
		ibv_dereg_mr(mr);
		return;
	}
	pass("trans/rereg");
	printf("# trans: rereg response lkey %#x rkey %#x\n", k.lkey, k.rkey);
	check("trans/resp-lkey-kept", k.lkey == mr->lkey, "response lkey %#x, the MR's was %#x", k.lkey, mr->lkey);
	check("trans/resp-rkey-kept", k.rkey == mr->rkey && k.rkey != 0, "response rkey %#x, the MR's was %#x", k.rkey,
	      mr->rkey);

	/* Remote access through the new IOVA reaches B, never A. */
	write_lands(e, "trans/write-lands-in-b", e->pd, iova + 100, k.rkey, b + b_off + 100, 64, 2);
	write_lands(e, "trans/write-across-b-page", e->pd, iova + (page - b_off) - 40, k.rkey, b + page - 40, 80, 3);
	write_lands(e, "trans/write-at-new-end", e->pd, iova + b_len - 64, k.rkey, b + b_off + b_len - 64, 64, 4);
	check("trans/a-untouched", all(a, a_pages * page, 0xaa), "buffer A changed after the rereg");
	check("trans/b-outside-range-untouched", all(b, b_off, 0xbb) && all(b + b_off + b_len, b_pages * page - b_off - b_len, 0xbb),
	      "bytes of B outside [B + 256, + 3 pages) changed");
	read_returns(e, "trans/read-returns-b", e->pd, iova + 2000, k.rkey, b + b_off + 2000, 128, 5);

	/* The lkey translates the new IOVA too: B's bytes go out. */
	pattern(b + b_off + 500, 48, 6);
	memset(e->peer, 0, 48);
	if (op_ok(e, "trans/lkey-new-iova-completes", e->pd, e->pd, IBV_WR_RDMA_WRITE, iova + 500, k.lkey, 48,
		  (uintptr_t)e->peer, e->peer_mr->rkey))
		check("trans/lkey-new-iova-sends-b", !memcmp(e->peer, b + b_off + 500, 48),
		      "the peer did not get B's bytes");

	/* The old translation is gone. */
	op_fails(e, "trans/old-iova-remote-refused", e->pd, e->pd, IBV_WR_RDMA_WRITE, (uintptr_t)e->peer,
		 e->peer_mr->lkey, 64, (uintptr_t)a + 64, k.rkey, IBV_WC_REM_ACCESS_ERR);
	op_fails(e, "trans/beyond-new-end-refused", e->pd, e->pd, IBV_WR_RDMA_WRITE, (uintptr_t)e->peer,
		 e->peer_mr->lkey, 64, iova + b_len - 32, k.rkey, IBV_WC_REM_ACCESS_ERR);
	op_fails(e, "trans/old-address-lkey-refused", e->pd, e->pd, IBV_WR_RDMA_WRITE, (uintptr_t)a + 64, k.lkey, 64,
		 (uintptr_t)e->peer, e->peer_mr->rkey, IBV_WC_LOC_PROT_ERR);
	check("trans/a-untouched-after-refusals", all(a, a_pages * page, 0xaa), "buffer A changed");

	/* Back to a translation where IOVA = address (as ibv_reg_mr makes it). */
	err = raw_rereg(e->ctx, mr->handle, REREG_TRANS, (uintptr_t)a, page, (uintptr_t)a, 0, 0, &k);
	check("trans/rereg-back-to-a", err == 0 && k.lkey == mr->lkey, "REREG_MR(TRANS, A, 1 page): %s, lkey %#x",
	      err_str(err), k.lkey);
	if (!err)
		write_lands(e, "trans/write-lands-in-a-again", e->pd, (uintptr_t)a + 8, k.rkey, a + 8, 32, 7);
	check("trans/dereg", ibv_dereg_mr(mr) == 0, "ibv_dereg_mr: %s", strerror(errno));
	munmap(a, a_pages * page);
	munmap(b, b_pages * page);
}

/* --- on-demand paging MRs --------------------------------------------------------- */

static void test_odp(struct env *e)
{
	const uint32_t od = IBV_ACCESS_ON_DEMAND;
	struct ibv_device_attr_ex x;
	uint8_t *a, *b;
	struct ibv_mr *mr;
	struct keys k;
	int err;

	if (ibv_query_device_ex(e->ctx, NULL, &x) || !(x.odp_caps.general_caps & IBV_ODP_SUPPORT)) {
		skip("odp", "the device has no on-demand paging");
		return;
	}
	a = map_pages(2, 0xa1);
	b = map_pages(2, 0xb1);
	mr = a && b ? ibv_reg_mr(e->pd, a, 2 * page, LW | RW | RR | od) : NULL;
	if (!mr) {
		fail("odp/reg-mr", "mmap or ibv_reg_mr(ON_DEMAND): %s", strerror(errno));
		return;
	}
	write_lands(e, "odp/before-write-in-a", e->pd, (uintptr_t)a + 64, mr->rkey, a + 64, 64, 21);
	memset(a, 0xa1, 2 * page);
	err = raw_rereg(e->ctx, mr->handle, REREG_TRANS, (uintptr_t)b, 2 * page, (uintptr_t)b, 0, 0, &k);
	check("odp/rereg-trans", err == 0 && k.lkey == mr->lkey && k.rkey == mr->rkey, "REREG_MR(TRANS, B): %s",
	      err_str(err));
	if (err)
		goto out;
	write_lands(e, "odp/write-lands-in-b", e->pd, (uintptr_t)b + page - 32, k.rkey, b + page - 32, 64, 22);
	check("odp/a-untouched", all(a, 2 * page, 0xa1), "buffer A changed after the rereg");
	read_returns(e, "odp/read-returns-b", e->pd, (uintptr_t)b + 512, k.rkey, b + 512, 128, 23);

	err = raw_rereg(e->ctx, mr->handle, REREG_ACCESS, 0, 0, 0, 0, LW | RR | od, &k);
	check("odp/rereg-access-drop-remote-write", err == 0, "REREG_MR(ACCESS, LW | RR | ON_DEMAND): %s",
	      err_str(err));
	memset(b, 0xb2, 2 * page);
	op_fails(e, "odp/write-refused", e->pd, e->pd, IBV_WR_RDMA_WRITE, (uintptr_t)e->peer, e->peer_mr->lkey, 64,
		 (uintptr_t)b + 8, k.rkey, IBV_WC_REM_ACCESS_ERR);
	check("odp/refused-write-left-b-alone", all(b, 2 * page, 0xb2), "buffer B changed");
	err = raw_rereg(e->ctx, mr->handle, REREG_ACCESS, 0, 0, 0, 0, LW | RW | RR | od, &k);
	check("odp/rereg-access-back", err == 0, "REREG_MR(ACCESS, LW | RW | RR | ON_DEMAND): %s", err_str(err));
	write_lands(e, "odp/write-after-access-back", e->pd, (uintptr_t)b + 8, k.rkey, b + 8, 64, 24);

	/* The MR stays paged on demand. */
	err = raw_rereg(e->ctx, mr->handle, REREG_ACCESS, 0, 0, 0, 0, LW | RW | RR, NULL);
	check("odp/to-pinned-eopnotsupp", err == EOPNOTSUPP, "%s, want EOPNOTSUPP", err_str(err));
	err = raw_rereg(e->ctx, mr->handle, REREG_TRANS | REREG_ACCESS, (uintptr_t)a, 2 * page, (uintptr_t)a, 0,
			LW | RW | RR, NULL);
	check("odp/trans-to-pinned-eopnotsupp", err == EOPNOTSUPP, "%s, want EOPNOTSUPP", err_str(err));
	write_lands(e, "odp/write-after-refusals", e->pd, (uintptr_t)b + 200, k.rkey, b + 200, 64, 25);
	check("odp/a-untouched-after-refusals", all(a, 2 * page, 0xa1), "buffer A changed");
out:
	check("odp/dereg", ibv_dereg_mr(mr) == 0, "ibv_dereg_mr: %s", strerror(errno));
	munmap(a, 2 * page);
	munmap(b, 2 * page);
}

/* --- IB_MR_REREG_ACCESS ----------------------------------------------------------- */

static void test_access(struct env *e)
{
	uint8_t *c = map_pages(2, 0xcc);
	struct ibv_mr *mr, *ro;
	struct keys k;
	int err;

	if (!c) {
		fail("access/setup", "mmap: %s", strerror(errno));
		return;
	}
	mr = ibv_reg_mr(e->pd, c, 2 * page, LW | RW | RR);
	if (!mr) {
		fail("access/reg-mr", "ibv_reg_mr: %s", strerror(errno));
		return;
	}

	/* Drop REMOTE_WRITE: WRITEs refused, READs still served. */
	err = raw_rereg(e->ctx, mr->handle, REREG_ACCESS, 0, 0, 0, 0, LW | RR, &k);
	check("access/drop-remote-write", err == 0, "REREG_MR(ACCESS, LW | RR): %s", err_str(err));
	if (!err) {
		printf("# access: LW | RR: lkey %#x rkey %#x (MR's %#x %#x)\n", k.lkey, k.rkey, mr->lkey, mr->rkey);
		check("access/keys-kept-with-remote-read", k.lkey == mr->lkey && k.rkey == mr->rkey,
		      "response lkey %#x rkey %#x, the MR's %#x %#x", k.lkey, k.rkey, mr->lkey, mr->rkey);
	}
	pattern(e->peer, 64, 9);
	op_fails(e, "access/write-refused", e->pd, e->pd, IBV_WR_RDMA_WRITE, (uintptr_t)e->peer, e->peer_mr->lkey,
		 64, (uintptr_t)c + 128, mr->rkey, IBV_WC_REM_ACCESS_ERR);
	check("access/refused-write-left-memory-alone", all(c, 2 * page, 0xcc), "the refused WRITE changed the MR's memory");
	read_returns(e, "access/read-still-served", e->pd, (uintptr_t)c + 1000, mr->rkey, c + 1000, 100, 10);

	/* Give it back. */
	err = raw_rereg(e->ctx, mr->handle, REREG_ACCESS, 0, 0, 0, 0, LW | RW | RR, &k);
	check("access/restore-remote-write", err == 0 && k.lkey == mr->lkey && k.rkey == mr->rkey,
	      "REREG_MR(ACCESS, LW | RW | RR): %s, lkey %#x rkey %#x", err_str(err), k.lkey, k.rkey);
	write_lands(e, "access/write-allowed-again", e->pd, (uintptr_t)c + 128, mr->rkey, c + 128, 64, 11);

	/* No remote access at all: no rkey. */
	err = raw_rereg(e->ctx, mr->handle, REREG_ACCESS, 0, 0, 0, 0, LW, &k);
	check("access/local-only", err == 0, "REREG_MR(ACCESS, LW): %s", err_str(err));
	if (!err) {
		printf("# access: LW only: lkey %#x rkey %#x\n", k.lkey, k.rkey);
		check("access/local-only-rkey-zero", k.lkey == mr->lkey && k.rkey == 0,
		      "response lkey %#x rkey %#x, want %#x and 0", k.lkey, k.rkey, mr->lkey);
	}
	op_fails(e, "access/local-only-read-refused", e->pd, e->pd, IBV_WR_RDMA_READ, (uintptr_t)e->peer,
		 e->peer_mr->lkey, 64, (uintptr_t)c, mr->rkey, IBV_WC_REM_ACCESS_ERR);
	/* The lkey still works for local writes (a READ's destination). */
	pattern(e->peer + 512, 32, 12);
	if (op_ok(e, "access/local-only-lkey-completes", e->pd, e->pd, IBV_WR_RDMA_READ, (uintptr_t)c + 64, mr->lkey,
		  32, (uintptr_t)e->peer + 512, e->peer_mr->rkey))
		check("access/local-only-lkey-writes", !memcmp(c + 64, e->peer + 512, 32), "READ data did not arrive");
	err = raw_rereg(e->ctx, mr->handle, REREG_ACCESS, 0, 0, 0, 0, LW | RW | RR, &k);
	check("access/remote-again-rkey-back", err == 0 && k.lkey == mr->lkey && k.rkey == mr->rkey,
	      "REREG_MR(ACCESS, LW | RW | RR): %s, lkey %#x rkey %#x, want %#x %#x", err_str(err), k.lkey, k.rkey,
	      mr->lkey, mr->rkey);
	write_lands(e, "access/remote-again-write", e->pd, (uintptr_t)c + 256, k.rkey, c + 256, 64, 13);

	/* Invalid combinations, from ib_check_mr_access. */
	err = raw_rereg(e->ctx, mr->handle, REREG_ACCESS, 0, 0, 0, 0, RW | RR, NULL);
	check("access/remote-write-without-local-write-einval", err == EINVAL, "%s, want EINVAL", err_str(err));
	err = raw_rereg(e->ctx, mr->handle, REREG_ACCESS, 0, 0, 0, 0, LW | IBV_ACCESS_REMOTE_ATOMIC, NULL);
	check("access/atomic-with-local-write-ok", err == 0, "REREG_MR(ACCESS, LW | ATOMIC): %s", err_str(err));
	err = raw_rereg(e->ctx, mr->handle, REREG_ACCESS, 0, 0, 0, 0, IBV_ACCESS_REMOTE_ATOMIC, NULL);
	check("access/atomic-without-local-write-einval", err == EINVAL, "%s, want EINVAL", err_str(err));
	/* Bits 10 to 19 are neither access flags nor optional ones. */
	err = raw_rereg(e->ctx, mr->handle, REREG_ACCESS, 0, 0, 0, 0, LW | (1u << 15), NULL);
	check("access/unknown-bit-einval", err == EINVAL, "%s, want EINVAL", err_str(err));
	/* Pinned pages do not turn into pages paged on demand in place (and
	 * without ODP, ib_core refuses the flag). */
	err = raw_rereg(e->ctx, mr->handle, REREG_ACCESS, 0, 0, 0, 0, LW | IBV_ACCESS_ON_DEMAND, NULL);
	check("access/on-demand-eopnotsupp", err == EOPNOTSUPP, "%s, want EOPNOTSUPP", err_str(err));
	/* None of them changed it. */
	err = raw_rereg(e->ctx, mr->handle, REREG_ACCESS, 0, 0, 0, 0, LW | RW | RR, &k);
	check("access/restored-after-refusals", err == 0, "%s", err_str(err));
	write_lands(e, "access/write-after-refusals", e->pd, (uintptr_t)c + 320, mr->rkey, c + 320, 64, 14);
	check("access/dereg", ibv_dereg_mr(mr) == 0, "ibv_dereg_mr: %s", strerror(errno));

	/*
	 * An MR pinned read-only (no write access at registration) cannot be
	 * made writable in place: its pages were not pinned for writing
	 * (ib_umem_check_rereg: EACCES). With a new translation they are pinned
	 * again, for the new access.
	 */
	memset(c, 0xcc, 2 * page);
	ro = ibv_reg_mr(e->pd, c, 2 * page, RR);
	if (!ro) {
		fail("access/read-only-reg-mr", "ibv_reg_mr(REMOTE_READ): %s", strerror(errno));
	} else {
		err = raw_rereg(e->ctx, ro->handle, REREG_ACCESS, 0, 0, 0, 0, LW | RW | RR, &k);
		check("access/read-only-pin-to-writable-eacces", err == EACCES, "REREG_MR(ACCESS, LW | RW | RR): %s, want EACCES",
		      err_str(err));
		op_fails(e, "access/read-only-write-still-refused", e->pd, e->pd, IBV_WR_RDMA_WRITE, (uintptr_t)e->peer,
			 e->peer_mr->lkey, 64, (uintptr_t)c, ro->rkey, IBV_WC_REM_ACCESS_ERR);
		check("access/read-only-memory-untouched", all(c, 2 * page, 0xcc), "the MR's memory changed");
		err = raw_rereg(e->ctx, ro->handle, REREG_TRANS | REREG_ACCESS, (uintptr_t)c, 2 * page, (uintptr_t)c, 0,
				LW | RW | RR, &k);
		if (err == EOPNOTSUPP && !is_rrxe) {
			skip("access/read-only-to-writable-with-trans", "EOPNOTSUPP: C rxe does not implement IB_MR_REREG_TRANS");
		} else {
			check("access/read-only-to-writable-with-trans", err == 0 && k.rkey != 0,
			      "REREG_MR(TRANS | ACCESS, same range, LW | RW | RR): %s, rkey %#x", err_str(err), k.rkey);
			if (!err)
				write_lands(e, "access/read-only-to-writable-write", e->pd, (uintptr_t)c + 8, k.rkey, c + 8, 64, 15);
		}
		check("access/read-only-dereg", ibv_dereg_mr(ro) == 0, "ibv_dereg_mr: %s", strerror(errno));
	}
	munmap(c, 2 * page);
}

/* --- IB_MR_REREG_PD --------------------------------------------------------------- */

static void test_pd(struct env *e)
{
	struct ibv_pd *old_pd = ibv_alloc_pd(e->ctx), *new_pd = ibv_alloc_pd(e->ctx);
	uint8_t *d = map_pages(1, 0xdd);
	struct ibv_mr *mr;
	struct keys k;
	int err;

	if (!old_pd || !new_pd || !d) {
		fail("pd/setup", "ibv_alloc_pd or mmap: %s", strerror(errno));
		return;
	}
	mr = ibv_reg_mr(old_pd, d, page, LW | RW | RR);
	if (!mr) {
		fail("pd/reg-mr", "ibv_reg_mr: %s", strerror(errno));
		return;
	}
	err = raw_rereg(e->ctx, mr->handle, REREG_PD, 0, 0, 0, old_pd->handle, 0, &k);
	check("pd/same-pd-ok", err == 0 && k.lkey == mr->lkey && k.rkey == mr->rkey,
	      "REREG_MR(PD, its own PD): %s, lkey %#x rkey %#x", err_str(err), k.lkey, k.rkey);
	err = raw_rereg(e->ctx, mr->handle, REREG_PD, 0, 0, 0, mr->handle, 0, NULL);
	check("pd/mr-handle-as-pd-einval", err == EINVAL, "REREG_MR(PD, the MR's handle): %s, want EINVAL",
	      err_str(err));

	err = raw_rereg(e->ctx, mr->handle, REREG_PD, 0, 0, 0, new_pd->handle, 0, &k);
	check("pd/move", err == 0, "REREG_MR(PD, new PD): %s", err_str(err));
	if (err) {
		ibv_dereg_mr(mr);
		return;
	}
	check("pd/move-keys-kept", k.lkey == mr->lkey && k.rkey == mr->rkey,
	      "response lkey %#x rkey %#x, the MR's %#x %#x", k.lkey, k.rkey, mr->lkey, mr->rkey);

	/* The lkey, as a WRITE's source. */
	op_fails(e, "pd/lkey-on-old-pd-qp-loc-prot-err", old_pd, e->pd, IBV_WR_RDMA_WRITE, (uintptr_t)d, mr->lkey, 32,
		 (uintptr_t)e->peer, e->peer_mr->rkey, IBV_WC_LOC_PROT_ERR);
	pattern(d + 100, 32, 20);
	memset(e->peer, 0, 32);
	if (op_ok(e, "pd/lkey-on-new-pd-qp-completes", new_pd, e->pd, IBV_WR_RDMA_WRITE, (uintptr_t)d + 100, mr->lkey,
		  32, (uintptr_t)e->peer, e->peer_mr->rkey))
		check("pd/lkey-on-new-pd-qp-sends", !memcmp(e->peer, d + 100, 32), "the peer did not get the MR's bytes");

	/* The rkey, at a responder of each PD. */
	memset(d, 0xdd, page);
	op_fails(e, "pd/rkey-at-old-pd-qp-refused", e->pd, old_pd, IBV_WR_RDMA_WRITE, (uintptr_t)e->peer,
		 e->peer_mr->lkey, 64, (uintptr_t)d + 200, mr->rkey, IBV_WC_REM_ACCESS_ERR);
	check("pd/refused-write-left-memory-alone", all(d, page, 0xdd), "the refused WRITE changed the MR's memory");
	write_lands(e, "pd/rkey-at-new-pd-qp", new_pd, (uintptr_t)d + 200, mr->rkey, d + 200, 64, 21);

	/* ib_core moved the PD's use count: the old one is free, the new one busy. */
	check("pd/old-pd-dealloc", ibv_dealloc_pd(old_pd) == 0, "ibv_dealloc_pd(old PD): %s", strerror(errno));
	err = ibv_dealloc_pd(new_pd);
	check("pd/new-pd-busy", err == EBUSY, "ibv_dealloc_pd(new PD): %s, want EBUSY", err_str(err));
	check("pd/dereg", ibv_dereg_mr(mr) == 0, "ibv_dereg_mr: %s", strerror(errno));
	if (err == EBUSY)
		check("pd/new-pd-dealloc-after-dereg", ibv_dealloc_pd(new_pd) == 0, "ibv_dealloc_pd: %s",
		      strerror(errno));
	munmap(d, page);
}

/* --- all three at once --------------------------------------------------------------- */

static void test_all(struct env *e)
{
	struct ibv_pd *new_pd = ibv_alloc_pd(e->ctx);
	uint8_t *f = map_pages(1, 0x11), *g = map_pages(2, 0x22);
	const uint64_t iova = FAR_IOVA + 0x10000000 + 64;
	struct ibv_mr *mr;
	struct keys k;
	int err;

	if (!new_pd || !f || !g) {
		fail("all/setup", "ibv_alloc_pd or mmap: %s", strerror(errno));
		return;
	}
	mr = ibv_reg_mr(e->pd, f, page, LW | RW | RR);
	if (!mr) {
		fail("all/reg-mr", "ibv_reg_mr: %s", strerror(errno));
		return;
	}
	err = raw_rereg(e->ctx, mr->handle, REREG_TRANS | REREG_ACCESS | REREG_PD, (uintptr_t)g + 64, page, iova,
			new_pd->handle, LW | RR, &k);
	if (err == EOPNOTSUPP && !is_rrxe) {
		skip("all/rereg", "EOPNOTSUPP: C rxe does not implement IB_MR_REREG_TRANS");
	} else if (err) {
		fail("all/rereg", "REREG_MR(TRANS | ACCESS | PD): %s", strerror(err));
	} else {
		pass("all/rereg");
		check("all/keys-kept", k.lkey == mr->lkey && k.rkey == mr->rkey,
		      "response lkey %#x rkey %#x, the MR's %#x %#x", k.lkey, k.rkey, mr->lkey, mr->rkey);
		read_returns(e, "all/read-new-iova-new-pd", new_pd, iova + page - 64 - 16, k.rkey, g + page - 16, 32, 30);
		op_fails(e, "all/write-refused", e->pd, new_pd, IBV_WR_RDMA_WRITE, (uintptr_t)e->peer, e->peer_mr->lkey,
			 32, iova, k.rkey, IBV_WC_REM_ACCESS_ERR);
		op_fails(e, "all/old-pd-refused", e->pd, e->pd, IBV_WR_RDMA_READ, (uintptr_t)e->peer, e->peer_mr->lkey,
			 32, iova, k.rkey, IBV_WC_REM_ACCESS_ERR);
		check("all/f-untouched", all(f, page, 0x11), "the old buffer changed");
	}
	check("all/dereg", ibv_dereg_mr(mr) == 0, "ibv_dereg_mr: %s", strerror(errno));
	check("all/dealloc-pd", ibv_dealloc_pd(new_pd) == 0, "ibv_dealloc_pd: %s", strerror(errno));
	munmap(f, page);
	munmap(g, 2 * page);
}

/* --- bad input ----------------------------------------------------------------------- */

static void test_bad(struct env *e)
{
	uint8_t *h = map_pages(3, 0x33), *hole;
	struct ibv_mr *mr, *gone;
	uint32_t gone_handle;
	struct keys k;
	int err;

	if (!h) {
		fail("bad/setup", "mmap: %s", strerror(errno));
		return;
	}
	/* h: two pages, then an unmapped one. */
	munmap(h + 2 * page, page);
	mr = ibv_reg_mr(e->pd, h, 2 * page, LW | RW | RR);
	gone = ibv_reg_mr(e->pd, h, page, LW);
	if (!mr || !gone) {
		fail("bad/reg-mr", "ibv_reg_mr: %s", strerror(errno));
		return;
	}
	gone_handle = gone->handle;
	ibv_dereg_mr(gone);

	err = raw_rereg(e->ctx, mr->handle, 0, 0, 0, 0, 0, 0, NULL);
	check("bad/flags-zero-einval", err == EINVAL, "%s, want EINVAL", err_str(err));
	err = raw_rereg(e->ctx, mr->handle, REREG_ACCESS | 8, 0, 0, 0, 0, LW, NULL);
	check("bad/unknown-flag-eopnotsupp", err == EOPNOTSUPP, "flags ACCESS | 8: %s, want EOPNOTSUPP", err_str(err));
	err = raw_rereg(e->ctx, 0xfffff, REREG_ACCESS, 0, 0, 0, 0, LW, NULL);
	check("bad/no-such-mr-enoent", err == ENOENT, "%s, want ENOENT", err_str(err));
	err = raw_rereg(e->ctx, gone_handle, REREG_ACCESS, 0, 0, 0, 0, LW, NULL);
	check("bad/deregistered-mr-enoent", err == ENOENT, "%s, want ENOENT", err_str(err));
	err = raw_rereg(e->ctx, e->pd->handle, REREG_ACCESS, 0, 0, 0, 0, LW, NULL);
	check("bad/pd-handle-as-mr-einval", err == EINVAL, "%s, want EINVAL", err_str(err));
	err = raw_rereg(e->ctx, mr->handle, REREG_PD, 0, 0, 0, 0xfffff, 0, NULL);
	check("bad/no-such-pd-enoent", err == ENOENT, "%s, want ENOENT", err_str(err));

	err = raw_rereg(e->ctx, mr->handle, REREG_TRANS, (uintptr_t)h, page, FAR_IOVA + 8, 0, 0, NULL);
	check("bad/trans-iova-page-offset-differs-einval", err == EINVAL, "%s, want EINVAL", err_str(err));
	err = raw_rereg(e->ctx, mr->handle, REREG_TRANS, (uintptr_t)h, 0, (uintptr_t)h, 0, 0, NULL);
	if (err == EOPNOTSUPP && !is_rrxe)
		skip("bad/trans-length-zero-einval", "EOPNOTSUPP: C rxe does not implement IB_MR_REREG_TRANS");
	else
		check("bad/trans-length-zero-einval", err == EINVAL, "%s, want EINVAL", err_str(err));
	err = raw_rereg(e->ctx, mr->handle, REREG_TRANS, UINT64_MAX & ~(uint64_t)(page - 1), 2 * page,
			UINT64_MAX & ~(uint64_t)(page - 1), 0, 0, NULL);
	if (err == EOPNOTSUPP && !is_rrxe)
		skip("bad/trans-range-overflow-einval", "EOPNOTSUPP: C rxe does not implement IB_MR_REREG_TRANS");
	else
		check("bad/trans-range-overflow-einval", err == EINVAL, "%s, want EINVAL", err_str(err));
	/* Mapped, then unmapped right away, so nothing else is there yet. */
	hole = map_pages(4, 0);
	if (hole) {
		munmap(hole, 4 * page);
		err = raw_rereg(e->ctx, mr->handle, REREG_TRANS, (uintptr_t)hole, 4 * page, (uintptr_t)hole, 0, 0, NULL);
		if (err == EOPNOTSUPP && !is_rrxe)
			skip("bad/trans-unmapped-efault", "EOPNOTSUPP: C rxe does not implement IB_MR_REREG_TRANS");
		else
			check("bad/trans-unmapped-efault", err == EFAULT, "%s, want EFAULT", err_str(err));
	}
	/* The MR's second page and the unmapped one after it, with an access
	 * change that must not happen either. */
	err = raw_rereg(e->ctx, mr->handle, REREG_TRANS | REREG_ACCESS, (uintptr_t)h + page, 2 * page,
			(uintptr_t)h + page, 0, LW, NULL);
	if (err == EOPNOTSUPP && !is_rrxe)
		skip("bad/trans-half-unmapped-efault", "EOPNOTSUPP: C rxe does not implement IB_MR_REREG_TRANS");
	else
		check("bad/trans-half-unmapped-efault", err == EFAULT,
		      "REREG_MR(TRANS | ACCESS LW) over the MR's last page and an unmapped one: %s, want EFAULT",
		      err_str(err));

	/* After all of that the MR has its old translation, access and keys. */
	write_lands(e, "bad/still-writes-old-translation", e->pd, (uintptr_t)h + page + 100, mr->rkey,
		    h + page + 100, 64, 40);
	read_returns(e, "bad/still-reads-old-translation", e->pd, (uintptr_t)h + 10, mr->rkey, h + 10, 64, 41);
	pattern(h + 300, 32, 42);
	memset(e->peer, 0, 32);
	if (op_ok(e, "bad/still-lkey-completes", e->pd, e->pd, IBV_WR_RDMA_WRITE, (uintptr_t)h + 300, mr->lkey, 32,
		  (uintptr_t)e->peer, e->peer_mr->rkey))
		check("bad/still-lkey-sends", !memcmp(e->peer, h + 300, 32), "the peer did not get the MR's bytes");
	err = raw_rereg(e->ctx, mr->handle, REREG_ACCESS, 0, 0, 0, 0, LW | RW | RR, &k);
	check("bad/keys-unchanged", err == 0 && k.lkey == mr->lkey && k.rkey == mr->rkey,
	      "REREG_MR(ACCESS, same access): %s, lkey %#x rkey %#x, the MR's %#x %#x", err_str(err), k.lkey, k.rkey,
	      mr->lkey, mr->rkey);
	check("bad/dereg", ibv_dereg_mr(mr) == 0, "ibv_dereg_mr: %s", strerror(errno));
	munmap(h, 2 * page);
}

int main(int argc, char **argv)
{
	const char *dev = argc > 1 ? argv[1] : "rrxe0";
	struct env e = { .gid_index = argc > 2 ? atoi(argv[2]) : 1 };

	setvbuf(stdout, NULL, _IOLBF, 0);
	page = sysconf(_SC_PAGESIZE);
	is_rrxe = !strncmp(dev, "rrxe", 4);
	e.ctx = open_dev(dev);
	if (!e.ctx) {
		fail("open-device", "%s: %s", dev, strerror(errno));
		printf("DONE\n");
		return 1;
	}
	pass("open-device");
	if (ibv_query_gid(e.ctx, 1, e.gid_index, &e.gid)) {
		fail("query-gid", "ibv_query_gid(1, %d): %s", e.gid_index, strerror(errno));
		printf("DONE\n");
		return 1;
	}
	e.pd = ibv_alloc_pd(e.ctx);
	e.peer = map_pages(1, 0);
	e.peer_mr = e.pd && e.peer ? ibv_reg_mr(e.pd, e.peer, page, LW | RW | RR) : NULL;
	if (!e.peer_mr) {
		fail("setup", "ibv_alloc_pd, mmap or ibv_reg_mr: %s", strerror(errno));
		printf("DONE\n");
		return 1;
	}
	pass("setup");

	test_trans(&e);
	test_access(&e);
	test_pd(&e);
	test_all(&e);
	test_odp(&e);
	test_bad(&e);

	check("teardown/dereg-peer", ibv_dereg_mr(e.peer_mr) == 0, "%s", strerror(errno));
	check("teardown/dealloc-pd", ibv_dealloc_pd(e.pd) == 0, "%s", strerror(errno));
	check("teardown/close-device", ibv_close_device(e.ctx) == 0, "%s", strerror(errno));
	printf("DONE\n");
	return failures ? 1 : 0;
}
