// SPDX-License-Identifier: GPL-2.0
/*
 * Ring layout test: the queues an rxe-ABI driver shares with librxe.
 *
 *   ring_layout DEVICE [GID_INDEX]
 *
 * Creates CQs, QPs and SRQs through plain libibverbs (librxe underneath),
 * finds the rings librxe mapped by diffing /proc/self/maps (mappings of
 * /dev/infiniband/uverbsN) around each create, and checks each ring against
 * the uapi header include/uapi/rdma/rdma_user_rxe.h:
 *
 *   struct rxe_queue_buf: log2_elem_size at 0, index_mask at 4,
 *   producer_index at byte 128, consumer_index at byte 256, data at 384;
 *   slots = index_mask + 1 = roundup_pow_of_two(requested + 1) (one slot is
 *   always kept empty, so the reported depth is index_mask); element size =
 *   roundup_pow_of_two(max(64, needed)) where needed is
 *     SQ:  sizeof(rxe_send_wqe) + max(max_send_sge * 16, max_inline_data)
 *     RQ:  sizeof(rxe_recv_wqe) + max_recv_sge * 16   (SRQ: max_sge)
 *     CQ:  a user CQE (struct ib_uverbs_wc, 48 bytes); C rxe pads its
 *          kernel CQE union to 128, so 64 and 128 are both accepted;
 *   mapping length = PAGE_ALIGN(384 + slots * element size).
 *
 * Posting a receive through librxe must advance the producer index of the
 * ring that has the RQ's geometry by one and leave the WQE (wr_id, SGEs) in
 * the slot the old producer index named: that proves the create-QP response
 * carries rq_mi before sq_mi, as librxe reads it. The create-SRQ and
 * create-AH responses are also checked raw (legacy write() commands on the
 * uverbs fd, bypassing librxe): struct mminfo then srq_num, and a non-zero
 * ah_num.
 *
 * malformed-recv/...: a receive WQE whose num_sge is rewritten in the ring
 * after the post completes in error with its own wr_id (see
 * test_malformed_recv). atomic-write-no-room/...: an ATOMIC WRITE from a QP
 * without SGE or inline room (see test_atomic_write_no_room).
 *
 * Prints one line per check, "PASS name" or "FAIL name: why", and "DONE"
 * last.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_rxe.h>

#include "check.h"
#include "rc_pair.h"

/* The layout the uapi header promises (include/uapi/rdma/rdma_user_rxe.h). */
_Static_assert(offsetof(struct rxe_queue_buf, log2_elem_size) == 0, "log2_elem_size");
_Static_assert(offsetof(struct rxe_queue_buf, index_mask) == 4, "index_mask");
_Static_assert(offsetof(struct rxe_queue_buf, producer_index) == 128, "producer_index");
_Static_assert(offsetof(struct rxe_queue_buf, consumer_index) == 256, "consumer_index");
_Static_assert(offsetof(struct rxe_queue_buf, data) == 384, "data");
_Static_assert(sizeof(struct rxe_send_wqe) == 208, "rxe_send_wqe");
_Static_assert(sizeof(struct rxe_recv_wqe) == 40, "rxe_recv_wqe");
_Static_assert(offsetof(struct rxe_recv_wqe, dma.sge) == 40, "recv sge");
_Static_assert(sizeof(struct ib_uverbs_wc) == 48, "ib_uverbs_wc");
_Static_assert(sizeof(struct mminfo) == 16, "mminfo");
_Static_assert(sizeof(struct rxe_create_srq_resp) == 24, "rxe_create_srq_resp");

#define HDR_SIZE 384u
#define CACHE_LINE 64u
#define SGE_SIZE 16u

static uint64_t pow2_up(uint64_t x)
{
	uint64_t p = 1;

	while (p < x)
		p <<= 1;
	return p;
}

static uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }

static uint64_t page_align(uint64_t x)
{
	uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE);

	return (x + ps - 1) & ~(ps - 1);
}

/* --- /proc/self/maps ------------------------------------------------------ */

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

		if (!strstr(line, "/dev/infiniband/uverbs"))
			continue;
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR, &s, &e) == 2 && out->n < 256)
			out->v[out->n++] = (struct vma){ s, e };
	}
	fclose(f);
}

/* The mappings in b that are not in a. */
static int new_vmas(const struct vmas *a, const struct vmas *b, struct vma *out, int max)
{
	int n = 0;

	for (int i = 0; i < b->n; i++) {
		int found = 0;

		for (int j = 0; j < a->n; j++)
			if (a->v[j].start == b->v[i].start && a->v[j].end == b->v[i].end)
				found = 1;
		if (!found && n < max)
			out[n++] = b->v[i];
	}
	return n;
}

/* --- ring header checks ----------------------------------------------------- */

static uint32_t rd32(uintptr_t base, size_t off) { return *(volatile uint32_t *)(base + off); }

/*
 * Checks a mapped ring: header fields at their byte offsets, indices zero,
 * slots and element size, and the mapping's length. want_elem == 0 accepts
 * any of accept_elem[] instead.
 */
static void check_ring(const char *what, struct vma m, uint64_t want_slots,
		       uint64_t want_elem, const uint64_t *accept_elem, int n_accept)
{
	char name[128];
	uint32_t log2 = rd32(m.start, 0), mask = rd32(m.start, 4);
	uint32_t prod = rd32(m.start, 128), cons = rd32(m.start, 256);
	uint64_t elem = log2 < 32 ? (1ull << log2) : 0;
	uint64_t slots = (uint64_t)mask + 1;
	int ok_elem = 0;

	printf("# %s: log2_elem_size %u (elem %" PRIu64 "), index_mask %u, producer %u, consumer %u, mapping %#lx bytes\n",
	       what, log2, elem, mask, prod, cons, (unsigned long)(m.end - m.start));

	snprintf(name, sizeof(name), "%s/slots-power-of-two", what);
	check(name, slots && !(slots & (slots - 1)), "index_mask %#x + 1 is not a power of two", mask);
	snprintf(name, sizeof(name), "%s/slots", what);
	check(name, slots == want_slots, "index_mask + 1 = %" PRIu64 ", want %" PRIu64, slots, want_slots);
	snprintf(name, sizeof(name), "%s/indices-zero", what);
	check(name, prod == 0 && cons == 0, "producer_index (byte 128) %u, consumer_index (byte 256) %u, want 0 0", prod, cons);
	snprintf(name, sizeof(name), "%s/element-size", what);
	if (want_elem)
		ok_elem = elem == want_elem;
	for (int i = 0; i < n_accept; i++)
		ok_elem |= elem == accept_elem[i];
	if (want_elem)
		check(name, ok_elem, "log2_elem_size %u = %" PRIu64 " bytes, want %" PRIu64, log2, elem, want_elem);
	else
		check(name, ok_elem, "log2_elem_size %u = %" PRIu64 " bytes, want %" PRIu64 " or %" PRIu64,
		      log2, elem, accept_elem[0], accept_elem[n_accept - 1]);
	snprintf(name, sizeof(name), "%s/mapping-length", what);
	check(name, elem && m.end - m.start == page_align(HDR_SIZE + slots * elem),
	      "mapping is %#lx bytes, want PAGE_ALIGN(384 + %" PRIu64 " * %" PRIu64 ") = %#" PRIx64,
	      (unsigned long)(m.end - m.start), slots, elem, page_align(HDR_SIZE + slots * elem));
}

/* --- raw uverbs write() commands -------------------------------------------- */

static int uverbs_write(int fd, uint32_t command, void *cmd, size_t cmd_len, size_t resp_len)
{
	struct ib_uverbs_cmd_hdr *hdr = cmd;

	hdr->command = command;
	hdr->in_words = cmd_len / 4;
	hdr->out_words = resp_len / 4;
	if (write(fd, cmd, cmd_len) != (ssize_t)cmd_len)
		return errno;
	return 0;
}

struct raw_srq {
	uint32_t handle, max_wr, srq_num;
	struct mminfo mi;
};

static int raw_create_srq(struct ibv_context *ctx, struct ibv_pd *pd, uint32_t max_wr,
			  uint32_t max_sge, struct raw_srq *out)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_create_srq core;
	} cmd = {};
	struct {
		struct ib_uverbs_create_srq_resp core;
		struct rxe_create_srq_resp drv;
	} resp;
	int err;

	memset(&resp, 0xa5, sizeof(resp));
	cmd.core.response = (uintptr_t)&resp;
	cmd.core.user_handle = 0x5151;
	cmd.core.pd_handle = pd->handle;
	cmd.core.max_wr = max_wr;
	cmd.core.max_sge = max_sge;
	err = uverbs_write(ctx->cmd_fd, IB_USER_VERBS_CMD_CREATE_SRQ, &cmd, sizeof(cmd), sizeof(resp));
	if (err)
		return err;
	out->handle = resp.core.srq_handle;
	out->max_wr = resp.core.max_wr;
	out->srq_num = resp.drv.srq_num;
	out->mi = resp.drv.mi;
	return 0;
}

static int raw_destroy_srq(struct ibv_context *ctx, uint32_t handle)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_destroy_srq core;
	} cmd = {};
	struct ib_uverbs_destroy_srq_resp resp;

	cmd.core.response = (uintptr_t)&resp;
	cmd.core.srq_handle = handle;
	return uverbs_write(ctx->cmd_fd, IB_USER_VERBS_CMD_DESTROY_SRQ, &cmd, sizeof(cmd), sizeof(resp));
}

static int raw_create_ah(struct ibv_context *ctx, struct ibv_pd *pd, const union ibv_gid *dgid,
			 int sgid_index, uint32_t *handle, uint32_t *ah_num)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_create_ah core;
	} cmd = {};
	struct {
		struct ib_uverbs_create_ah_resp core;
		struct rxe_create_ah_resp drv;
	} __attribute__((packed)) resp;
	int err;

	memset(&resp, 0, sizeof(resp));
	cmd.core.response = (uintptr_t)&resp;
	cmd.core.user_handle = 0xa4a4;
	cmd.core.pd_handle = pd->handle;
	cmd.core.attr.is_global = 1;
	cmd.core.attr.port_num = 1;
	cmd.core.attr.grh.sgid_index = sgid_index;
	cmd.core.attr.grh.hop_limit = 1;
	memcpy(cmd.core.attr.grh.dgid, dgid->raw, 16);
	err = uverbs_write(ctx->cmd_fd, IB_USER_VERBS_CMD_CREATE_AH, &cmd, sizeof(cmd), sizeof(resp));
	if (err)
		return err;
	*handle = resp.core.ah_handle;
	*ah_num = resp.drv.ah_num;
	return 0;
}

static int raw_destroy_ah(struct ibv_context *ctx, uint32_t handle)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_destroy_ah core;
	} cmd = {};

	cmd.core.ah_handle = handle;
	return uverbs_write(ctx->cmd_fd, IB_USER_VERBS_CMD_DESTROY_AH, &cmd, sizeof(cmd), 0);
}

/* --- the tests ---------------------------------------------------------------- */

static void test_cq(struct ibv_context *ctx, int cqe)
{
	static const uint64_t accept[] = { 64, 128 };
	char what[64], name[128];
	struct vmas before, after;
	struct vma nv[4];
	struct ibv_cq *cq;
	int n;

	snprintf(what, sizeof(what), "cq%d", cqe);
	uverbs_vmas(&before);
	cq = ibv_create_cq(ctx, cqe, NULL, NULL, 0);
	snprintf(name, sizeof(name), "%s/create", what);
	if (!cq) {
		fail(name, "ibv_create_cq(cqe=%d): %s", cqe, strerror(errno));
		return;
	}
	pass(name);
	uverbs_vmas(&after);
	n = new_vmas(&before, &after, nv, 4);
	snprintf(name, sizeof(name), "%s/one-mapping", what);
	check(name, n == 1, "create added %d uverbs mappings, want 1", n);
	if (n == 1) {
		uint64_t slots = pow2_up((uint64_t)cqe + 1);

		check_ring(what, nv[0], slots, 0, accept, 2);
		snprintf(name, sizeof(name), "%s/reported-cqe-is-index-mask", what);
		check(name, (uint64_t)cq->cqe == slots - 1 && (uint32_t)cq->cqe == rd32(nv[0].start, 4),
		      "ibv_cq.cqe %d, index_mask %u, want %" PRIu64, cq->cqe, rd32(nv[0].start, 4), slots - 1);
		snprintf(name, sizeof(name), "%s/holds-user-cqe", what);
		check(name, (1ull << rd32(nv[0].start, 0)) >= sizeof(struct ib_uverbs_wc),
		      "element %llu bytes < sizeof(struct ib_uverbs_wc) 48", 1ull << rd32(nv[0].start, 0));
	}
	snprintf(name, sizeof(name), "%s/destroy", what);
	check(name, ibv_destroy_cq(cq) == 0, "ibv_destroy_cq: %s", strerror(errno));
	uverbs_vmas(&after);
	snprintf(name, sizeof(name), "%s/unmapped-after-destroy", what);
	check(name, after.n == before.n, "%d uverbs mappings after destroy, %d before create", after.n, before.n);
}

static struct vma *find_mask(struct vma *v, int n, uint32_t mask)
{
	for (int i = 0; i < n; i++)
		if (rd32(v[i].start, 4) == mask)
			return &v[i];
	return NULL;
}

static void test_qp(struct ibv_pd *pd, struct ibv_cq *cq, struct ibv_mr *mr)
{
	/* Distinct geometries, so that each ring is recognised by its header. */
	const uint32_t send_wr = 20, recv_wr = 5, send_sge = 3, recv_sge = 4, inline_data = 100;
	const uint64_t sq_slots = pow2_up(send_wr + 1), rq_slots = pow2_up(recv_wr + 1);
	const uint64_t sq_room = max64(send_sge * SGE_SIZE, inline_data);
	const uint64_t sq_elem = pow2_up(max64(CACHE_LINE, sizeof(struct rxe_send_wqe) + sq_room));
	const uint64_t rq_elem = pow2_up(max64(CACHE_LINE, sizeof(struct rxe_recv_wqe) + recv_sge * SGE_SIZE));
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = send_wr, .max_recv_wr = recv_wr, .max_send_sge = send_sge,
			 .max_recv_sge = recv_sge, .max_inline_data = inline_data },
	};
	struct ibv_qp_attr attr = {}, qattr;
	struct ibv_qp_init_attr qinit;
	struct vmas before, after;
	struct vma nv[4], *sq, *rq;
	struct ibv_qp *qp;
	int n;

	uverbs_vmas(&before);
	qp = ibv_create_qp(pd, &init);
	if (!qp) {
		fail("qp/create", "ibv_create_qp(RC, send 20x3 inline 100, recv 5x4): %s", strerror(errno));
		return;
	}
	pass("qp/create");
	uverbs_vmas(&after);
	n = new_vmas(&before, &after, nv, 4);
	check("qp/two-mappings", n == 2, "create added %d uverbs mappings, want 2 (rq, sq)", n);

	/* What create reported back, through libibverbs, to librxe. */
	printf("# qp caps: send_wr %u send_sge %u inline %u recv_wr %u recv_sge %u\n",
	       init.cap.max_send_wr, init.cap.max_send_sge, init.cap.max_inline_data,
	       init.cap.max_recv_wr, init.cap.max_recv_sge);
	check("qp/reported-send-wr", init.cap.max_send_wr == sq_slots - 1,
	      "max_send_wr %u, want %" PRIu64, init.cap.max_send_wr, sq_slots - 1);
	check("qp/reported-recv-wr", init.cap.max_recv_wr == rq_slots - 1,
	      "max_recv_wr %u, want %" PRIu64, init.cap.max_recv_wr, rq_slots - 1);
	check("qp/reported-send-sge", init.cap.max_send_sge == sq_room / SGE_SIZE,
	      "max_send_sge %u, want max(3*16, 100)/16 = %" PRIu64, init.cap.max_send_sge, sq_room / SGE_SIZE);
	check("qp/reported-inline", init.cap.max_inline_data == sq_room,
	      "max_inline_data %u, want max(3*16, 100) = %" PRIu64, init.cap.max_inline_data, sq_room);
	check("qp/reported-recv-sge", init.cap.max_recv_sge == recv_sge,
	      "max_recv_sge %u, want %u", init.cap.max_recv_sge, recv_sge);
	if (ibv_query_qp(qp, &qattr, IBV_QP_CAP, &qinit) == 0)
		check("qp/query-caps-match-create",
		      qinit.cap.max_send_wr == init.cap.max_send_wr && qinit.cap.max_recv_wr == init.cap.max_recv_wr &&
		      qinit.cap.max_send_sge == init.cap.max_send_sge && qinit.cap.max_recv_sge == init.cap.max_recv_sge &&
		      qinit.cap.max_inline_data == init.cap.max_inline_data,
		      "query: send_wr %u send_sge %u inline %u recv_wr %u recv_sge %u",
		      qinit.cap.max_send_wr, qinit.cap.max_send_sge, qinit.cap.max_inline_data,
		      qinit.cap.max_recv_wr, qinit.cap.max_recv_sge);
	else
		fail("qp/query-caps-match-create", "ibv_query_qp: %s", strerror(errno));

	sq = find_mask(nv, n, sq_slots - 1);
	rq = find_mask(nv, n, rq_slots - 1);
	check("qp/sq-ring-found", sq != NULL, "no new mapping with index_mask %" PRIu64, sq_slots - 1);
	check("qp/rq-ring-found", rq != NULL, "no new mapping with index_mask %" PRIu64, rq_slots - 1);
	if (sq)
		check_ring("qp/sq", *sq, sq_slots, sq_elem, NULL, 0);
	if (rq)
		check_ring("qp/rq", *rq, rq_slots, rq_elem, NULL, 0);

	/* librxe posts receives only after RESET. */
	attr.qp_state = IBV_QPS_INIT;
	attr.pkey_index = 0;
	attr.port_num = 1;
	attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE;
	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
		fail("qp/modify-init", "ibv_modify_qp(INIT): %s", strerror(errno));
	} else if (sq && rq) {
		struct ibv_sge sge[2] = {
			{ .addr = (uintptr_t)mr->addr, .length = 64, .lkey = mr->lkey },
			{ .addr = (uintptr_t)mr->addr + 128, .length = 32, .lkey = mr->lkey },
		};
		struct ibv_recv_wr wr = { .wr_id = 0x1122334455667788ull, .sg_list = sge, .num_sge = 2 }, *bad;
		uint32_t p0 = rd32(rq->start, 128);
		struct rxe_recv_wqe *wqe;
		int err, posted = 1;

		pass("qp/modify-init");
		err = ibv_post_recv(qp, &wr, &bad);
		check("qp/post-recv", err == 0, "ibv_post_recv: %s", strerror(err));
		check("qp/rq-producer-advanced-by-one", rd32(rq->start, 128) == ((p0 + 1) & (rq_slots - 1)),
		      "RQ producer_index %u -> %u", p0, rd32(rq->start, 128));
		check("qp/rq-consumer-unchanged", rd32(rq->start, 256) == 0, "RQ consumer_index %u", rd32(rq->start, 256));
		check("qp/sq-producer-unchanged", rd32(sq->start, 128) == 0,
		      "SQ producer_index %u: the receive went into the SQ ring (rq_mi/sq_mi swapped?)", rd32(sq->start, 128));
		wqe = (struct rxe_recv_wqe *)(rq->start + HDR_SIZE + ((uint64_t)p0 << rd32(rq->start, 0)));
		check("qp/rq-wqe-wr-id-in-slot", wqe->wr_id == wr.wr_id,
		      "slot %u wr_id %#" PRIx64 ", want %#" PRIx64, p0, (uint64_t)wqe->wr_id, (uint64_t)wr.wr_id);
		check("qp/rq-wqe-sges", wqe->dma.num_sge == 2 && wqe->dma.length == 96 &&
		      wqe->dma.sge[0].addr == sge[0].addr && wqe->dma.sge[1].lkey == mr->lkey &&
		      wqe->dma.sge[1].length == 32,
		      "num_sge %u length %u sge0.addr %#llx", wqe->dma.num_sge, wqe->dma.length,
		      (unsigned long long)wqe->dma.sge[0].addr);
		/* Fill the ring: exactly index_mask receives fit, one slot stays empty. */
		wr.num_sge = 1;
		for (uint32_t i = 1; i < rq_slots - 1; i++) {
			wr.wr_id = i;
			if (ibv_post_recv(qp, &wr, &bad) == 0)
				posted++;
		}
		check("qp/rq-holds-index-mask-wqes", posted == (int)(rq_slots - 1),
		      "posted %d receives, want %" PRIu64, posted, rq_slots - 1);
		err = ibv_post_recv(qp, &wr, &bad);
		check("qp/rq-full-keeps-one-slot-empty", err == ENOMEM,
		      "post %" PRIu64 "th receive: %s, want ENOMEM", rq_slots, err ? strerror(err) : "success");
		check("qp/rq-producer-at-index-mask", rd32(rq->start, 128) == rq_slots - 1,
		      "producer_index %u", rd32(rq->start, 128));
	}
	check("qp/destroy", ibv_destroy_qp(qp) == 0, "ibv_destroy_qp: %s", strerror(errno));
	uverbs_vmas(&after);
	check("qp/unmapped-after-destroy", after.n == before.n,
	      "%d uverbs mappings after destroy, %d before create", after.n, before.n);
}

static void test_srq(struct ibv_pd *pd, struct ibv_cq *cq, struct ibv_mr *mr)
{
	const uint32_t max_wr = 10, max_sge = 3;
	const uint64_t slots = pow2_up(max_wr + 1);
	const uint64_t elem = pow2_up(max64(CACHE_LINE, sizeof(struct rxe_recv_wqe) + max_sge * SGE_SIZE));
	struct ibv_srq_init_attr init = { .attr = { .max_wr = max_wr, .max_sge = max_sge } };
	struct vmas before, after;
	struct vma nv[4];
	struct ibv_srq *srq;
	int n;

	uverbs_vmas(&before);
	srq = ibv_create_srq(pd, &init);
	if (!srq) {
		fail("srq/create", "ibv_create_srq(10 x 3): %s", strerror(errno));
		return;
	}
	pass("srq/create");
	uverbs_vmas(&after);
	n = new_vmas(&before, &after, nv, 4);
	check("srq/one-mapping", n == 1, "create added %d uverbs mappings, want 1", n);
	check("srq/reported-max-wr", init.attr.max_wr == slots - 1, "max_wr %u, want %" PRIu64, init.attr.max_wr, slots - 1);
	if (n == 1) {
		struct ibv_sge sge = { .addr = (uintptr_t)mr->addr, .length = 16, .lkey = mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 0xfeedf00dcafe0001ull, .sg_list = &sge, .num_sge = 1 }, *bad;
		struct rxe_recv_wqe *wqe;
		int err;

		check_ring("srq", nv[0], slots, elem, NULL, 0);
		err = ibv_post_srq_recv(srq, &wr, &bad);
		check("srq/post-recv", err == 0, "ibv_post_srq_recv: %s", strerror(err));
		check("srq/producer-advanced-by-one", rd32(nv[0].start, 128) == 1, "producer_index %u", rd32(nv[0].start, 128));
		wqe = (struct rxe_recv_wqe *)(nv[0].start + HDR_SIZE);
		check("srq/wqe-wr-id-in-slot", wqe->wr_id == wr.wr_id && wqe->dma.num_sge == 1,
		      "slot 0 wr_id %#" PRIx64 " num_sge %u", (uint64_t)wqe->wr_id, wqe->dma.num_sge);
	}

	/* A QP on the SRQ has no RQ ring: only the SQ is mapped. */
	{
		struct ibv_qp_init_attr qinit = {
			.send_cq = cq, .recv_cq = cq, .srq = srq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 8, .max_send_sge = 1 },
		};
		struct vmas b2, a2;
		struct ibv_qp *qp;

		uverbs_vmas(&b2);
		qp = ibv_create_qp(pd, &qinit);
		if (!qp) {
			fail("srq/qp-create", "ibv_create_qp(RC on SRQ): %s", strerror(errno));
		} else {
			pass("srq/qp-create");
			uverbs_vmas(&a2);
			n = new_vmas(&b2, &a2, nv, 4);
			check("srq/qp-maps-only-sq", n == 1, "create added %d uverbs mappings, want 1 (sq)", n);
			if (n == 1)
				check("srq/qp-sq-geometry", rd32(nv[0].start, 4) == 15,
				      "index_mask %u, want 15", rd32(nv[0].start, 4));
			check("srq/qp-destroy", ibv_destroy_qp(qp) == 0, "ibv_destroy_qp: %s", strerror(errno));
		}
	}
	check("srq/destroy", ibv_destroy_srq(srq) == 0, "ibv_destroy_srq: %s", strerror(errno));
	uverbs_vmas(&after);
	check("srq/unmapped-after-destroy", after.n == before.n,
	      "%d uverbs mappings after destroy, %d before create", after.n, before.n);
}

/* The create-SRQ response, read raw: struct mminfo, then srq_num. */
static void test_srq_resp(struct ibv_context *ctx, struct ibv_pd *pd)
{
	const uint64_t slots = 32;
	const uint64_t elem = pow2_up(max64(CACHE_LINE, sizeof(struct rxe_recv_wqe) + 2 * SGE_SIZE));
	struct raw_srq a, b;
	int err;

	err = raw_create_srq(ctx, pd, 20, 2, &a);
	if (err) {
		fail("srq-resp/create-raw", "write(CREATE_SRQ): %s", strerror(err));
		return;
	}
	pass("srq-resp/create-raw");
	printf("# raw srq: handle %u max_wr %u mi.offset %#llx mi.size %u srq_num %#x\n", a.handle, a.max_wr,
	       (unsigned long long)a.mi.offset, a.mi.size, a.srq_num);
	check("srq-resp/max-wr", a.max_wr == slots - 1, "max_wr %u, want %" PRIu64, a.max_wr, slots - 1);
	/* C rxe rounds mi.size up to a page; the ring itself is what must fit. */
	check("srq-resp/mi-size", a.mi.size >= HDR_SIZE + slots * elem &&
	      a.mi.size <= page_align(HDR_SIZE + slots * elem),
	      "mi.size %u, want 384 + %" PRIu64 " * %" PRIu64 " (page-aligned or not)", a.mi.size, slots, elem);
	check("srq-resp/mi-offset-page-aligned", a.mi.offset % (uint64_t)sysconf(_SC_PAGESIZE) == 0,
	      "mi.offset %#llx", (unsigned long long)a.mi.offset);
	check("srq-resp/srq-num-nonzero", a.srq_num != 0 && a.srq_num != 0xa5a5a5a5u, "srq_num %#x", a.srq_num);
	{
		void *p = mmap(NULL, a.mi.size, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->cmd_fd, a.mi.offset);

		if (p == MAP_FAILED) {
			fail("srq-resp/mmap", "mmap(mi.size %u, mi.offset %#llx): %s", a.mi.size,
			     (unsigned long long)a.mi.offset, strerror(errno));
		} else {
			pass("srq-resp/mmap");
			check("srq-resp/mapped-header", rd32((uintptr_t)p, 4) == slots - 1 &&
			      (1ull << rd32((uintptr_t)p, 0)) == elem,
			      "index_mask %u log2_elem_size %u", rd32((uintptr_t)p, 4), rd32((uintptr_t)p, 0));
			munmap(p, a.mi.size);
		}
	}
	err = raw_create_srq(ctx, pd, 20, 2, &b);
	if (err) {
		fail("srq-resp/srq-num-distinct", "second write(CREATE_SRQ): %s", strerror(err));
	} else {
		check("srq-resp/srq-num-distinct", b.srq_num != a.srq_num && b.srq_num != 0,
		      "srq_num %#x and %#x", a.srq_num, b.srq_num);
		check("srq-resp/mi-offset-distinct", b.mi.offset != a.mi.offset,
		      "both mi.offset %#llx", (unsigned long long)a.mi.offset);
		err = raw_destroy_srq(ctx, b.handle);
		check("srq-resp/destroy-raw-2", err == 0, "write(DESTROY_SRQ): %s", strerror(err));
	}
	err = raw_destroy_srq(ctx, a.handle);
	check("srq-resp/destroy-raw", err == 0, "write(DESTROY_SRQ): %s", strerror(err));
}

/* The create-AH response, read raw: a non-zero ah_num (else librxe falls
 * back to its pre-4.x path and builds the address vector itself). */
static void test_ah_resp(struct ibv_context *ctx, struct ibv_pd *pd, int gid_index)
{
	union ibv_gid gid;
	uint32_t h1, h2, n1 = 0, n2 = 0;
	int err;

	if (ibv_query_gid(ctx, 1, gid_index, &gid)) {
		fail("ah-resp/query-gid", "ibv_query_gid(1, %d): %s", gid_index, strerror(errno));
		return;
	}
	err = raw_create_ah(ctx, pd, &gid, gid_index, &h1, &n1);
	if (err) {
		fail("ah-resp/create-raw", "write(CREATE_AH): %s", strerror(err));
		return;
	}
	pass("ah-resp/create-raw");
	check("ah-resp/ah-num-nonzero", n1 != 0, "ah_num 0");
	err = raw_create_ah(ctx, pd, &gid, gid_index, &h2, &n2);
	if (err) {
		fail("ah-resp/ah-num-distinct", "second write(CREATE_AH): %s", strerror(err));
	} else {
		check("ah-resp/ah-num-distinct", n2 != 0 && n2 != n1, "ah_num %u and %u", n1, n2);
		raw_destroy_ah(ctx, h2);
	}
	printf("# raw ah: ah_num %u, %u\n", n1, n2);
	err = raw_destroy_ah(ctx, h1);
	check("ah-resp/destroy-raw", err == 0, "write(DESTROY_AH): %s", strerror(err));
}

/*
 * malformed-recv/...: a receive WQE rewritten in its ring after librxe
 * posted it, its num_sge over any QP's max_sge (a process may write its
 * ring at any time): the zero-length SEND that takes it completes it in
 * error (LOC_QP_OP_ERR, as C rxe's malformed-WQE class A error) with the
 * WQE's own wr_id. Before, such a WQE was held as wr_id 0 with no buffer,
 * and a zero-length SEND completed it with SUCCESS.
 */
static void test_malformed_recv(struct ibv_context *ctx, struct ibv_pd *pd, int gid_index)
{
	struct ibv_recv_wr rwr = { .wr_id = 0x77, .num_sge = 0 }, *rbad;
	struct ibv_send_wr swr = { .wr_id = 5, .opcode = IBV_WR_SEND, .num_sge = 0 }, *sbad;
	struct vmas before, after;
	struct vma nv[8];
	union ibv_gid gid;
	struct ibv_wc wc;
	struct pair p;
	uintptr_t rq = 0;
	int n, i, got = 0;

	if (ibv_query_gid(ctx, 1, gid_index, &gid)) {
		fail("malformed-recv/setup", "ibv_query_gid: %s", strerror(errno));
		return;
	}
	uverbs_vmas(&before);
	if (pair_open(&p, ctx, &gid, gid_index, pd, pd, 1, "malformed-recv/setup"))
		return;
	uverbs_vmas(&after);
	n = new_vmas(&before, &after, nv, 8);
	if (ibv_post_recv(p.resp, &rwr, &rbad)) {
		fail("malformed-recv/setup", "ibv_post_recv: %s", strerror(errno));
		pair_close(&p);
		return;
	}
	/* The responder's RQ: the new ring whose producer moved to 1 with
	 * our wr_id in its first slot. */
	for (i = 0; i < n; i++)
		if (rd32(nv[i].start, 128) == 1 && *(volatile uint64_t *)(nv[i].start + 384) == 0x77)
			rq = nv[i].start;
	if (!rq) {
		fail("malformed-recv/setup", "the RQ ring was not found among %d new mappings", n);
		pair_close(&p);
		return;
	}
	*(volatile uint32_t *)(rq + 384 + offsetof(struct rxe_recv_wqe, dma.num_sge)) = 1000;
	if (ibv_post_send(p.req, &swr, &sbad)) {
		fail("malformed-recv/setup", "ibv_post_send: %s", strerror(errno));
		pair_close(&p);
		return;
	}
	for (i = 0; i < 300 && !got; i++) {
		got = ibv_poll_cq(p.rcq, 1, &wc);
		if (!got)
			usleep(10000);
	}
	printf("# malformed-recv: %s\n", got == 1 ? ibv_wc_status_str(wc.status) : "no completion");
	check("malformed-recv/completes-in-error", got == 1 && wc.status != IBV_WC_SUCCESS,
	      "%s", got == 1 ? ibv_wc_status_str(wc.status) : "no receive completion within 3 s");
	check("malformed-recv/its-own-wr-id", got == 1 && wc.wr_id == 0x77, "wr_id %#llx, want 0x77",
	      got == 1 ? (unsigned long long)wc.wr_id : 0ULL);
	pair_close(&p);
}

/*
 * atomic-write-no-room/...: an RC QP created with max_send_sge 0 and
 * max_inline_data 0 sends an ATOMIC WRITE (ibv_wr_atomic_write: librxe puts
 * the 8-byte value in the slot, which is rounded up to 256 bytes anyway):
 * it completes with SUCCESS and the value lands. Before, the kernel's copy
 * of the slot had no room for the value and the WQE failed (LOC_LEN_ERR).
 */
static void test_atomic_write_no_room(struct ibv_context *ctx, struct ibv_pd *pd, int gid_index)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp_init_attr_ex ix = {
		.qp_type = IBV_QPT_RC, .send_cq = cq, .recv_cq = cq, .sq_sig_all = 1, .pd = pd,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_WRITE,
		.cap = { .max_send_wr = 4, .max_recv_wr = 1, .max_send_sge = 0, .max_recv_sge = 1 },
	};
	struct ibv_qp_init_attr ri = {
		.qp_type = IBV_QPT_RC, .send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	uint64_t *target = aligned_alloc(4096, 4096);
	struct ibv_mr *mr = target ? ibv_reg_mr(pd, target, 4096, PAIR_ACCESS | IBV_ACCESS_REMOTE_ATOMIC) : NULL;
	struct ibv_qp *req = cq ? ibv_create_qp_ex(ctx, &ix) : NULL;
	struct ibv_qp *resp = cq ? ibv_create_qp(pd, &ri) : NULL;
	const uint64_t value = 0x1122334455667788ull;
	struct ibv_qp_ex *qx;
	union ibv_gid gid;
	struct ibv_wc wc;
	int got = 0, i, err;

	if (!mr || !req || !resp || ibv_query_gid(ctx, 1, gid_index, &gid)) {
		fail("atomic-write-no-room/setup", "CQ, MR, QPs or GID: %s", strerror(errno));
		goto out;
	}
	memset(target, 0, 4096);
	err = pair_to_init(req);
	err = err ? err : pair_to_init(resp);
	err = err ? err : pair_to_rts(req, &gid, gid_index, resp->qp_num);
	err = err ? err : pair_to_rts(resp, &gid, gid_index, req->qp_num);
	if (err) {
		fail("atomic-write-no-room/setup", "to RTS: %s", strerror(err));
		goto out;
	}
	qx = ibv_qp_to_qp_ex(req);
	ibv_wr_start(qx);
	qx->wr_id = 3;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(qx, mr->rkey, (uintptr_t)&target[8], &value);
	err = ibv_wr_complete(qx);
	if (err) {
		fail("atomic-write-no-room/post", "ibv_wr_complete: %s", strerror(err));
		goto out;
	}
	for (i = 0; i < 300 && !got; i++) {
		got = ibv_poll_cq(cq, 1, &wc);
		if (!got)
			usleep(10000);
	}
	check("atomic-write-no-room/success", got == 1 && wc.status == IBV_WC_SUCCESS, "%s",
	      got == 1 ? ibv_wc_status_str(wc.status) : "no completion within 3 s");
	check("atomic-write-no-room/landed", target[8] == value, "the target holds %#llx",
	      (unsigned long long)target[8]);
out:
	if (req)
		ibv_destroy_qp(req);
	if (resp)
		ibv_destroy_qp(resp);
	if (cq)
		ibv_destroy_cq(cq);
	if (mr)
		ibv_dereg_mr(mr);
	free(target);
}

int main(int argc, char **argv)
{
	const char *dev = argc > 1 ? argv[1] : "rrxe0";
	int gid_index = argc > 2 ? atoi(argv[2]) : 1;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	void *buf;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ctx = open_dev(dev);
	if (!ctx) {
		fail("open-device", "%s: %s", dev, strerror(errno));
		printf("DONE\n");
		return 1;
	}
	pass("open-device");
	pd = ibv_alloc_pd(ctx);
	if (!pd) {
		fail("alloc-pd", "%s", strerror(errno));
		printf("DONE\n");
		return 1;
	}
	buf = aligned_alloc(4096, 4096);
	mr = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		fail("reg-mr", "%s", strerror(errno));

	test_cq(ctx, 1);
	test_cq(ctx, 100);
	test_cq(ctx, 127);
	test_cq(ctx, 128);

	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (!cq) {
		fail("cq-for-qp", "ibv_create_cq: %s", strerror(errno));
	} else if (mr) {
		test_qp(pd, cq, mr);
		test_srq(pd, cq, mr);
	}
	test_srq_resp(ctx, pd);
	test_ah_resp(ctx, pd, gid_index);
	test_malformed_recv(ctx, pd, gid_index);
	test_atomic_write_no_room(ctx, pd, gid_index);

	if (cq)
		check("teardown/destroy-cq", ibv_destroy_cq(cq) == 0, "%s", strerror(errno));
	if (mr)
		check("teardown/dereg-mr", ibv_dereg_mr(mr) == 0, "%s", strerror(errno));
	check("teardown/dealloc-pd", ibv_dealloc_pd(pd) == 0, "%s", strerror(errno));
	check("teardown/close-device", ibv_close_device(ctx) == 0, "%s", strerror(errno));
	free(buf);
	printf("DONE\n");
	return failures ? 1 : 0;
}
