// SPDX-License-Identifier: GPL-2.0
/*
 * RDMA FLUSH (IBA FLUSH annex) as a user posts it, between two loopback RC
 * QPs of one device: the responder's checks and the requester's RETH.
 *
 *   flush_wr DEV GID_INDEX
 *
 * rdma-core 44 has no ibv_wr_flush; rdma-core 45 added it to librxe, which
 * writes the WQE as this program does: opcode IB_UVERBS_WR_FLUSH, the
 * remote address, rkey, placement type and selectivity level in the WQE's
 * flush fields, the length in dma.length/dma.resid (where C rxe takes the
 * RETH length from) and flush.length left 0. Here the WQE is first written
 * by ibv_wr_rdma_write (which leaves it unpublished until ibv_wr_complete),
 * found in the send ring by its unique wr_id and rewritten as librxe 45
 * writes a FLUSH.
 *
 * Checks (the responder's QP grants both flush rights unless said):
 *   reg/persistent-refused, reg/odp-persistent-refused: an MR with the
 *       persistent flush right over memory that is not persistent memory
 *       (here: anonymous memory, pinned or paged on demand) is EINVAL, as
 *       C rxe refuses it;
 *   flush/global-range: a global FLUSH of a range of an MR with the global
 *       right completes;
 *   flush/range-past-end-rem-access: a range past the MR's end fails with
 *       REM_ACCESS_ERR (the length reaches the responder);
 *   flush/bad-rkey-rem-access, flush/zero-length-bad-rkey-rem-access: an
 *       rkey no MR has fails, with a length and without one (a FLUSH is
 *       not a zero-length READ or WRITE: its rkey is checked);
 *   flush/no-flush-right-rem-access: an MR with remote read and write but
 *       no flush right;
 *   flush/persistent-on-global-mr-rem-access: the persistent placement
 *       type on an MR with only the global right;
 *   flush/mr-level-ignores-range: selectivity level MR flushes the whole
 *       MR, whatever range the RETH names;
 *   flush/qp-without-right-rem-inv-req: a responder QP whose access flags
 *       lack the flush right refuses the request (REM_INV_REQ_ERR);
 *   flush/window-cannot-grant-what-its-mr-lacks: a memory window bound
 *       with the global flush right over an MR without it: REM_ACCESS_ERR;
 *   flush/flush-only-mr: an MR whose only remote right is the global flush
 *       has an rkey, and a FLUSH through it completes;
 *   flush/odp-untouched, flush/odp-past-end-rem-access: the same on an
 *       on-demand-paging MR over pages nothing touched yet;
 *   flush/odp-implicit: through an implicit ODP MR;
 *   flush/after-write: a WRITE, then a FLUSH of its range, completes and
 *       the data is there.
 *
 * Prints one line per check, "PASS name" or "FAIL name: why", and "DONE"
 * last; exits non-zero if a check failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_user_rxe.h>

#include "check.h"
#include "rc_pair.h"

/* Not in rdma-core 44's headers (kernel uapi and rdma-core 45 values). */
#define ACCESS_FLUSH_GLOBAL (1 << 8)		/* IB_UVERBS_ACCESS_FLUSH_GLOBAL */
#define ACCESS_FLUSH_PERSISTENT (1 << 9)	/* IB_UVERBS_ACCESS_FLUSH_PERSISTENT */
#define WR_FLUSH 14				/* IB_UVERBS_WR_FLUSH */
#define FLUSH_GLOBAL 1				/* IBV_FLUSH_GLOBAL */
#define FLUSH_PERSISTENT 2			/* IBV_FLUSH_PERSISTENT */
#define FLUSH_RANGE 0
#define FLUSH_MR 1

/* The flush fields of the WQE's union (kernel rdma_user_rxe.h): remote_addr
 * where rdma.remote_addr is, then length, rkey, type, level. */
#define OFF_WR offsetof(struct rxe_send_wqe, wr.wr.rdma.remote_addr)
#define OFF_FLUSH_LENGTH (OFF_WR + 8)
#define OFF_FLUSH_RKEY (OFF_WR + 12)
#define OFF_FLUSH_TYPE (OFF_WR + 16)
#define OFF_FLUSH_LEVEL (OFF_WR + 17)

#define BOTH_RIGHTS (ACCESS_FLUSH_GLOBAL | ACCESS_FLUSH_PERSISTENT)
#define LEN (4 * 4096)

struct env {
	struct ibv_context *ctx;
	union ibv_gid gid;
	int gid_index;
	struct ibv_pd *pd;
	struct ibv_cq *cq, *rcq;
	uint64_t next_id;
};

static void *map_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* The WQE whose wr_id is id, in a read-write mapping of the uverbs device
 * (the rings librxe mapped), or NULL. */
static uint8_t *find_wqe(uint64_t id)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512], perms[8];
	unsigned long lo, hi;
	uint8_t *found = NULL;

	while (f && !found && fgets(line, sizeof(line), f)) {
		if (!strstr(line, "/dev/infiniband/uverbs") ||
		    sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 || strncmp(perms, "rw", 2))
			continue;
		for (uint8_t *p = (uint8_t *)lo; p + sizeof(struct rxe_send_wqe) <= (uint8_t *)hi; p += 8)
			if (!memcmp(p, &id, sizeof(id)) &&
			    ((struct rxe_send_wqe *)p)->wr.opcode == IBV_WR_RDMA_WRITE) {
				found = p;
				break;
			}
	}
	if (f)
		fclose(f);
	return found;
}

/* A requester and a responder whose QP access flags are resp_access,
 * connected; 0 or -1. */
static int open_qps(struct env *e, int resp_access, struct ibv_qp **req, struct ibv_qp **resp)
{
	struct ibv_qp_init_attr_ex init = {
		.qp_type = IBV_QPT_RC, .sq_sig_all = 1, .send_cq = e->cq, .recv_cq = e->cq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = e->pd, .send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE,
	};
	struct ibv_qp_init_attr rinit = {
		.qp_type = IBV_QPT_RC, .sq_sig_all = 1, .send_cq = e->rcq, .recv_cq = e->rcq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_access_flags = resp_access };

	*req = ibv_create_qp_ex(e->ctx, &init);
	*resp = *req ? ibv_create_qp(e->pd, &rinit) : NULL;
	if (!*resp || pair_to_init(*req) || pair_to_init(*resp) || ibv_modify_qp(*resp, &a, IBV_QP_ACCESS_FLAGS) ||
	    pair_to_rts(*req, &e->gid, e->gid_index, (*resp)->qp_num) ||
	    pair_to_rts(*resp, &e->gid, e->gid_index, (*req)->qp_num))
		return -1;
	return 0;
}

static void close_qps(struct ibv_qp *req, struct ibv_qp *resp)
{
	if (resp)
		ibv_destroy_qp(resp);
	if (req)
		ibv_destroy_qp(req);
}

/* A FLUSH of [raddr, raddr + len) under rkey, written as librxe 45 writes
 * it; the requester's completion status, or ST_*. */
static int post_flush(struct env *e, struct ibv_qp *qp, uint32_t rkey, uint64_t raddr, uint32_t len, uint8_t type,
		      uint8_t level)
{
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(qp);
	uint64_t id = 0xf1a5000000000000ull | ++e->next_id;
	struct rxe_send_wqe *w;
	struct ibv_wc wc;
	uint8_t *p;

	ibv_wr_start(x);
	x->wr_id = id;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(x, rkey, raddr);
	p = find_wqe(id);
	if (!p) {
		ibv_wr_abort(x);
		printf("# the WQE of wr_id 0x%" PRIx64 " is not in a uverbs mapping\n", id);
		return ST_POST_FAILED;
	}
	w = (struct rxe_send_wqe *)p;
	w->wr.opcode = WR_FLUSH;
	memset(p + OFF_WR, 0, sizeof(w->wr.wr));
	memcpy(p + OFF_WR, &raddr, sizeof(raddr));
	memcpy(p + OFF_FLUSH_RKEY, &rkey, sizeof(rkey));
	p[OFF_FLUSH_TYPE] = type;
	p[OFF_FLUSH_LEVEL] = level;
	w->iova = raddr;
	w->dma.length = len;
	w->dma.resid = len;
	w->dma.num_sge = 0;
	if (ibv_wr_complete(x))
		return ST_POST_FAILED;
	return pair_wait(e->cq, &wc);
}

/* One FLUSH on a fresh QP pair (an error leaves the pair in the error
 * state): the status. */
static int flush_once(struct env *e, int resp_access, uint32_t rkey, uint64_t raddr, uint32_t len, uint8_t type,
		      uint8_t level)
{
	struct ibv_qp *req = NULL, *resp = NULL;
	int st = ST_POST_FAILED;

	if (!open_qps(e, resp_access, &req, &resp))
		st = post_flush(e, req, rkey, raddr, len, type, level);
	close_qps(req, resp);
	return st;
}

#define EXPECT(name, st, want)                                                                      \
	do {                                                                                        \
		int st_ = (st);                                                                     \
		check(name, st_ == (want), "%s, want %s", st_str(st_), st_str(want));               \
	} while (0)

static void test_reg(struct env *e)
{
	uint8_t *m = map_anon(LEN);
	struct ibv_mr *mr;
	int err;

	mr = m ? ibv_reg_mr(e->pd, m, LEN, PAIR_ACCESS | ACCESS_FLUSH_PERSISTENT) : NULL;
	err = errno;
	check("reg/persistent-refused", !mr && err == EINVAL, "%s", mr ? "registered" : strerror(err));
	if (mr)
		ibv_dereg_mr(mr);
	mr = m ? ibv_reg_mr(e->pd, m, LEN, PAIR_ACCESS | IBV_ACCESS_ON_DEMAND | ACCESS_FLUSH_PERSISTENT) : NULL;
	err = errno;
	check("reg/odp-persistent-refused", !mr && err == EINVAL, "%s", mr ? "registered" : strerror(err));
	if (mr)
		ibv_dereg_mr(mr);
	if (m)
		munmap(m, LEN);
}

/* A type 1 window bound with the global flush right over `mr`, which has
 * none: a FLUSH through it is refused (the window cannot grant what its MR
 * lacks). */
static void test_window(struct env *e, struct ibv_mr *mr, uint64_t addr)
{
	const int qa = PAIR_ACCESS | BOTH_RIGHTS;
	struct ibv_mw *mw = ibv_alloc_mw(e->pd, IBV_MW_TYPE_1);
	struct ibv_qp *req = NULL, *resp = NULL;
	struct ibv_mw_bind bind = {
		.wr_id = 1, .send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = mr, .addr = addr, .length = 4096,
			       .mw_access_flags = IBV_ACCESS_REMOTE_WRITE | ACCESS_FLUSH_GLOBAL },
	};
	struct ibv_wc wc;
	int st = ST_POST_FAILED;

	if (!mw || open_qps(e, qa, &req, &resp) || ibv_bind_mw(resp, mw, &bind) ||
	    pair_wait(e->rcq, &wc) != IBV_WC_SUCCESS) {
		fail("flush/window-cannot-grant-what-its-mr-lacks", "set-up or bind: %s", strerror(errno));
		goto out;
	}
	st = post_flush(e, req, mw->rkey, addr, 64, FLUSH_GLOBAL, FLUSH_RANGE);
	EXPECT("flush/window-cannot-grant-what-its-mr-lacks", st, IBV_WC_REM_ACCESS_ERR);
out:
	close_qps(req, resp);
	if (mw)
		ibv_dealloc_mw(mw);
}

/* An MR whose only remote right is the global flush: it has an rkey, a
 * FLUSH through it completes. */
static void test_flush_only(struct env *e)
{
	uint8_t *m = map_anon(LEN);
	struct ibv_mr *mr = m ? ibv_reg_mr(e->pd, m, LEN, IBV_ACCESS_LOCAL_WRITE | ACCESS_FLUSH_GLOBAL) : NULL;

	if (!mr) {
		fail("flush/flush-only-mr", "ibv_reg_mr: %s", strerror(errno));
	} else {
		EXPECT("flush/flush-only-mr",
		       flush_once(e, PAIR_ACCESS | BOTH_RIGHTS, mr->rkey, (uintptr_t)m, 64, FLUSH_GLOBAL, FLUSH_RANGE),
		       IBV_WC_SUCCESS);
		ibv_dereg_mr(mr);
	}
	if (m)
		munmap(m, LEN);
}

static void test_pinned(struct env *e)
{
	const int qa = PAIR_ACCESS | BOTH_RIGHTS;
	uint8_t *m = map_anon(LEN), *n = map_anon(LEN);
	struct ibv_mr *mr = m ? ibv_reg_mr(e->pd, m, LEN, PAIR_ACCESS | ACCESS_FLUSH_GLOBAL) : NULL;
	struct ibv_mr *plain = n ? ibv_reg_mr(e->pd, n, LEN, PAIR_ACCESS | IBV_ACCESS_MW_BIND) : NULL;
	uint64_t a = (uintptr_t)m;

	if (!mr || !plain) {
		fail("flush/setup", "ibv_reg_mr: %s", strerror(errno));
		goto out;
	}
	EXPECT("flush/global-range", flush_once(e, qa, mr->rkey, a + 100, 5000, FLUSH_GLOBAL, FLUSH_RANGE),
	       IBV_WC_SUCCESS);
	EXPECT("flush/range-past-end-rem-access",
	       flush_once(e, qa, mr->rkey, a + LEN - 100, 200, FLUSH_GLOBAL, FLUSH_RANGE), IBV_WC_REM_ACCESS_ERR);
	EXPECT("flush/bad-rkey-rem-access", flush_once(e, qa, mr->rkey ^ 0x5a5a00, a, 64, FLUSH_GLOBAL, FLUSH_RANGE),
	       IBV_WC_REM_ACCESS_ERR);
	EXPECT("flush/zero-length-bad-rkey-rem-access",
	       flush_once(e, qa, mr->rkey ^ 0x5a5a00, a, 0, FLUSH_GLOBAL, FLUSH_RANGE), IBV_WC_REM_ACCESS_ERR);
	EXPECT("flush/no-flush-right-rem-access",
	       flush_once(e, qa, plain->rkey, (uintptr_t)n, 64, FLUSH_GLOBAL, FLUSH_RANGE), IBV_WC_REM_ACCESS_ERR);
	EXPECT("flush/persistent-on-global-mr-rem-access",
	       flush_once(e, qa, mr->rkey, a, 64, FLUSH_PERSISTENT, FLUSH_RANGE), IBV_WC_REM_ACCESS_ERR);
	EXPECT("flush/mr-level-ignores-range",
	       flush_once(e, qa, mr->rkey, a + 64 * LEN, 1u << 20, FLUSH_GLOBAL, FLUSH_MR), IBV_WC_SUCCESS);
	EXPECT("flush/qp-without-right-rem-inv-req",
	       flush_once(e, PAIR_ACCESS, mr->rkey, a, 64, FLUSH_GLOBAL, FLUSH_RANGE), IBV_WC_REM_INV_REQ_ERR);
	test_window(e, plain, (uintptr_t)n);
out:
	if (plain)
		ibv_dereg_mr(plain);
	if (mr)
		ibv_dereg_mr(mr);
	if (m)
		munmap(m, LEN);
	if (n)
		munmap(n, LEN);
}

static void test_odp(struct env *e)
{
	const int qa = PAIR_ACCESS | BOTH_RIGHTS;
	const int odp = PAIR_ACCESS | IBV_ACCESS_ON_DEMAND | ACCESS_FLUSH_GLOBAL;
	uint8_t *m = map_anon(LEN);
	struct ibv_mr *mr = m ? ibv_reg_mr(e->pd, m, LEN, odp) : NULL;
	struct ibv_mr *imr = ibv_reg_mr(e->pd, NULL, SIZE_MAX, odp);
	uint64_t a = (uintptr_t)m;

	if (!mr || !imr) {
		fail("flush/odp-setup", "ibv_reg_mr: %s", strerror(errno));
		goto out;
	}
	EXPECT("flush/odp-untouched", flush_once(e, qa, mr->rkey, a + 4096, 8192, FLUSH_GLOBAL, FLUSH_RANGE),
	       IBV_WC_SUCCESS);
	EXPECT("flush/odp-past-end-rem-access", flush_once(e, qa, mr->rkey, a + 4096, LEN, FLUSH_GLOBAL, FLUSH_RANGE),
	       IBV_WC_REM_ACCESS_ERR);
	EXPECT("flush/odp-implicit", flush_once(e, qa, imr->rkey, a, LEN, FLUSH_GLOBAL, FLUSH_RANGE), IBV_WC_SUCCESS);
out:
	if (imr)
		ibv_dereg_mr(imr);
	if (mr)
		ibv_dereg_mr(mr);
	if (m)
		munmap(m, LEN);
}

static void test_after_write(struct env *e)
{
	uint8_t *src = map_anon(LEN), *dst = map_anon(LEN);
	struct ibv_mr *smr = src ? ibv_reg_mr(e->pd, src, LEN, PAIR_ACCESS) : NULL;
	struct ibv_mr *dmr = dst ? ibv_reg_mr(e->pd, dst, LEN, PAIR_ACCESS | ACCESS_FLUSH_GLOBAL) : NULL;
	struct ibv_qp *req = NULL, *resp = NULL;
	struct ibv_qp_ex *x;
	struct ibv_wc wc;
	int st = ST_POST_FAILED, fst = ST_POST_FAILED;

	if (!smr || !dmr || open_qps(e, PAIR_ACCESS | ACCESS_FLUSH_GLOBAL, &req, &resp)) {
		fail("flush/after-write", "set-up: %s", strerror(errno));
		goto out;
	}
	for (int i = 0; i < LEN; i++)
		src[i] = (uint8_t)(i * 7 + 3);
	x = ibv_qp_to_qp_ex(req);
	ibv_wr_start(x);
	x->wr_id = 1;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(x, dmr->rkey, (uintptr_t)dst);
	ibv_wr_set_sge(x, smr->lkey, (uintptr_t)src, LEN);
	if (!ibv_wr_complete(x))
		st = pair_wait(e->cq, &wc);
	if (st == IBV_WC_SUCCESS)
		fst = post_flush(e, req, dmr->rkey, (uintptr_t)dst, LEN, FLUSH_GLOBAL, FLUSH_RANGE);
	check("flush/after-write", st == IBV_WC_SUCCESS && fst == IBV_WC_SUCCESS && !memcmp(src, dst, LEN),
	      "WRITE %s, FLUSH %s%s", st_str(st), st_str(fst), memcmp(src, dst, LEN) ? ", data differs" : "");
out:
	close_qps(req, resp);
	if (dmr)
		ibv_dereg_mr(dmr);
	if (smr)
		ibv_dereg_mr(smr);
	if (src)
		munmap(src, LEN);
	if (dst)
		munmap(dst, LEN);
}

int main(int argc, char **argv)
{
	const char *dev = argc > 1 ? argv[1] : "rrxe0";
	struct env e = { .gid_index = argc > 2 ? atoi(argv[2]) : 1 };

	setvbuf(stdout, NULL, _IOLBF, 0);
	e.ctx = open_dev_gid(dev, e.gid_index, &e.gid);
	if (!e.ctx) {
		printf("DONE\n");
		return 1;
	}
	e.pd = ibv_alloc_pd(e.ctx);
	e.cq = ibv_create_cq(e.ctx, 16, NULL, NULL, 0);
	e.rcq = ibv_create_cq(e.ctx, 16, NULL, NULL, 0);
	if (!e.pd || !e.cq || !e.rcq) {
		fail("setup", "ibv_alloc_pd or ibv_create_cq: %s", strerror(errno));
		printf("DONE\n");
		return 1;
	}
	test_reg(&e);
	test_pinned(&e);
	test_flush_only(&e);
	test_odp(&e);
	test_after_write(&e);
	ibv_destroy_cq(e.cq);
	ibv_destroy_cq(e.rcq);
	check("teardown", ibv_dealloc_pd(e.pd) == 0 && ibv_close_device(e.ctx) == 0, "%s", strerror(errno));
	printf("DONE\n");
	return failures ? 1 : 0;
}
