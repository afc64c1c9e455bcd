// SPDX-License-Identifier: GPL-2.0
/*
 * One multicast GID attached under two MLIDs (found by uverbs_fuzz).
 *
 *   mcast_mlids DEVICE
 *
 * uverbs records an attachment per (MGID, MLID) pair and ib_core counts
 * every attach the driver accepts in qp->usecnt, undone only by a detach
 * the driver accepts; a QP with a non-zero usecnt cannot be destroyed
 * (EBUSY). On RoCE the MLID means nothing to the driver, so a second
 * attach of the same MGID under another MLID reaches the driver as a
 * duplicate. If the driver takes it as a no-op (0) but refuses the second
 * detach (not a member), usecnt never returns to 0: the QP cannot be
 * destroyed, and when its context is closed uverbs WARNs
 * (uverbs_destroy_ufile_hw), abandons the QP, its PD and CQs and frees
 * the ucontext under them; `rdma resource show pd` then reads freed
 * memory (KASAN use-after-free in fill_res_pd_entry, an oops). Any user
 * can do it. A driver must either refuse the duplicate attach or count
 * it, so that every attach it accepted has a detach it accepts.
 *
 * Checks:
 *   detach-each-attach: attach under MLID 0 works; if the attach under
 *       MLID 1 works too, both detaches work, else the first does;
 *   destroy-after-detach: the QP can then be destroyed;
 *   close-attached: a child attaches under both MLIDs and exits without
 *       detaching; it prints its pid ("# child PID") so that the caller
 *       can check that restrack lists nothing of it afterwards.
 * Prints PASS/FAIL lines and DONE.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "check.h"

struct ud { struct ibv_pd *pd; struct ibv_cq *cq; struct ibv_qp *qp; };

static int ud_open(struct ibv_context *ctx, struct ud *u)
{
	struct ibv_qp_init_attr a = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	u->pd = ibv_alloc_pd(ctx);
	u->cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	if (!u->pd || !u->cq)
		return -1;
	a.send_cq = a.recv_cq = u->cq;
	u->qp = ibv_create_qp(u->pd, &a);
	return u->qp ? 0 : -1;
}

int main(int argc, char **argv)
{
	union ibv_gid g = { .raw = { 0xff, 0x0e, [15] = 0x42 } };
	struct ibv_context *ctx;
	struct ud u;
	int a0, a1, d0, d1, rc;
	pid_t pid;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DEVICE\n", argv[0]);
		return 2;
	}
	ctx = open_dev(argv[1]);
	if (!ctx || ud_open(ctx, &u)) {
		fail("setup", "device, PD, CQ or UD QP: %s", strerror(errno));
		return 1;
	}
	a0 = ibv_attach_mcast(u.qp, &g, 0);
	a1 = ibv_attach_mcast(u.qp, &g, 1);
	d0 = ibv_detach_mcast(u.qp, &g, 0);
	d1 = a1 ? 0 : ibv_detach_mcast(u.qp, &g, 1);
	printf("# attach MLID 0: %s, MLID 1: %s; detach MLID 0: %s, MLID 1: %s\n", err_str(a0), err_str(a1),
	       err_str(d0), a1 ? "(not attached)" : err_str(d1));
	check("detach-each-attach", !a0 && !d0 && !d1,
	      "attach MLID 0 %s, MLID 1 %s, then detach MLID 0 %s, MLID 1 %s: an attach the driver took has no "
	      "detach it takes, so ib_core's qp->usecnt stays above 0", err_str(a0), err_str(a1), err_str(d0),
	      err_str(d1));
	rc = ibv_destroy_qp(u.qp);
	check("destroy-after-detach", !rc, "ibv_destroy_qp: %s (EBUSY: qp->usecnt left above 0)", err_str(rc));
	if (rc)
		printf("# the QP stays; closing this context will WARN\n");

	fflush(stdout);
	pid = fork();
	if (!pid) {
		struct ibv_context *c = open_dev(argv[1]);
		struct ud v;

		if (!c || ud_open(c, &v))
			_exit(3);
		ibv_attach_mcast(v.qp, &g, 0);
		ibv_attach_mcast(v.qp, &g, 1);
		_exit(0);	/* the context closes with the QP attached */
	}
	waitpid(pid, &rc, 0);
	printf("# child %d\n", pid);
	check("close-attached-child-ran", WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "the child failed (status %#x)", rc);
	printf("DONE\n");
	return failures ? 1 : 0;
}
