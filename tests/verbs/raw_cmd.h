/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Raw uverbs commands that libibverbs 44 cannot send for librxe (it has no
 * rereg_mr op), or not alone (the kernel's part of a destroy): written on
 * the context's command fd. Needs check.h first.
 */
#ifndef RRXE_TESTS_VERBS_RAW_CMD_H
#define RRXE_TESTS_VERBS_RAW_CMD_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

/* enum ib_mr_rereg_flags (include/rdma/ib_verbs.h). */
#define REREG_TRANS 1u
#define REREG_PD 2u
#define REREG_ACCESS 4u

struct keys { uint32_t lkey, rkey; };

/*
 * write(IB_USER_VERBS_CMD_REREG_MR) on the uverbs fd: 0 or the errno.
 * in_words and out_words count 4-byte words; in_words includes the header.
 */
static inline int raw_rereg(struct ibv_context *ctx, uint32_t mr_handle, uint32_t flags, uint64_t start,
		     uint64_t length, uint64_t hca_va, uint32_t pd_handle, uint32_t access, struct keys *out)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_rereg_mr core;
	} cmd = {};
	struct ib_uverbs_rereg_mr_resp resp;

	memset(&resp, 0xa5, sizeof(resp));
	cmd.hdr.command = IB_USER_VERBS_CMD_REREG_MR;
	cmd.hdr.in_words = sizeof(cmd) / 4;
	cmd.hdr.out_words = sizeof(resp) / 4;
	cmd.core.response = (uintptr_t)&resp;
	cmd.core.mr_handle = mr_handle;
	cmd.core.flags = flags;
	cmd.core.start = start;
	cmd.core.length = length;
	cmd.core.hca_va = hca_va;
	cmd.core.pd_handle = pd_handle;
	cmd.core.access_flags = access;
	if (write(ctx->cmd_fd, &cmd, sizeof(cmd)) != (ssize_t)sizeof(cmd))
		return errno;
	if (out) {
		out->lkey = resp.lkey;
		out->rkey = resp.rkey;
	}
	return 0;
}

/*
 * write(IB_USER_VERBS_CMD_DESTROY_QP) on the uverbs fd: the kernel's part of
 * ibv_destroy_qp only (librxe would unmap the rings after): 0 or the errno.
 */
static inline int raw_destroy_qp(struct ibv_context *ctx, uint32_t qp_handle)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_destroy_qp core;
	} cmd = {};
	struct ib_uverbs_destroy_qp_resp resp;

	cmd.hdr.command = IB_USER_VERBS_CMD_DESTROY_QP;
	cmd.hdr.in_words = sizeof(cmd) / 4;
	cmd.hdr.out_words = sizeof(resp) / 4;
	cmd.core.response = (uintptr_t)&resp;
	cmd.core.qp_handle = qp_handle;
	if (write(ctx->cmd_fd, &cmd, sizeof(cmd)) != (ssize_t)sizeof(cmd))
		return errno;
	return 0;
}

#endif
