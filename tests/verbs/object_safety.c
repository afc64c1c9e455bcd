// SPDX-License-Identifier: GPL-2.0
/*
 * Object safety, tested as an attacker would: one object that relies on
 * another must hold it (or name it by something never reused), never keep
 * its number; a long operation keeps what it depends on; teardown always
 * ends. Each test is a subcommand:
 *
 *   object_safety mw DEV GID FILE        (run it as an unprivileged user)
 *     A memory window over an MR, and the MR's owner moving the MR's pages
 *     under it. The control: a WRITE through a type 1 window lands. Then:
 *     ibv_dereg_mr of the MR is refused while the window is bound (C rxe:
 *     EINVAL); were it not, the MR's index is reused by MRs over FILE (a
 *     root-owned read-only file mapped read-only at the old address), at
 *     most OBJECT_SAFETY_CYCLES (default 2000) registrations, and a WRITE
 *     through the stale window must not reach the file. A rereg with
 *     IB_MR_REREG_TRANS of a bound MR onto the file mapped read-only,
 *     pinned without write access, is refused, and a WRITE through the
 *     window leaves the file as it was (it wrote into the file's page cache
 *     when the window followed its MR by index); a rereg that changes the
 *     PD of a bound MR is refused; a rereg that takes local write away
 *     from a bound MR makes WRITEs through its window fail
 *     (IBV_WC_REM_ACCESS_ERR) and leave the memory alone; once the windows
 *     are gone, the MRs deregister.
 *
 *   object_safety qp-reuse DEV GID [MAX_CREATES]
 *     A type 2 window bound by QP N is used, the QP destroyed, and QPs are
 *     created until one gets number N again (set rdma_rrxe's debugfs
 *     rdma_rrxe/qpn_max to 64 so that numbers come back within a few dozen
 *     creates): a WRITE
 *     through the window to the new QP N fails and leaves the memory alone,
 *     whether the new QP is in another PD or in the same one. Before
 *     that: another QP's peer cannot invalidate the window with a SEND
 *     with invalidate (a type 2 window is its QP's), and the window still
 *     serves its own QP afterwards. Then peer-reuse/: QP A's loopback
 *     peer is destroyed, and a QP of another PD that gets the peer's
 *     number, connected to A with the PSN A expects, SENDs to A: A must
 *     not take it (the control: the real peer's SEND landed before).
 *
 *   object_safety uc-access DEV GID
 *     A UC responder without IBV_ACCESS_REMOTE_WRITE takes no WRITE (the
 *     memory stays as it was); with it, the WRITE lands (the control).
 *
 *   object_safety cq-events DEV GID
 *     Flushing 32 receive WQEs of an errored QP into a CQ of one entry
 *     raises IBV_EVENT_CQ_ERR once, not once per WQE; the CQ is then in
 *     error: emptied and overflowed again, it raises nothing; resized, it
 *     raises the event once more.
 *
 *   object_safety resize-fault DEV GID
 *     A resize_cq whose response buffer ends on a PROT_NONE page (the
 *     driver's mmap info there) fails with EFAULT, and the CQ stays on the
 *     ring its process knows: a completion posted after it is polled.
 *
 *   object_safety big-mr DEV GID
 *     An MR over 2 GiB + 2 MiB of address space (a 2 MiB memfd mapped
 *     1025 times): registration works (its page array is above what
 *     kmalloc gives: a warning in the kernel log otherwise), and a WRITE at
 *     its last page lands in the memfd.
 *
 *   object_safety mcast-icrc DEV GID RX_IF TX_IF
 *     Three UD QPs attached to one group; frames written on TX_IF arrive on
 *     RX_IF (a veth pair) from 10.0.0.9. A frame with a bad ICRC reaches no
 *     member and counts once in rcvd_icrc_err (the ICRC is checked once per
 *     packet, not once per member); a good one reaches all three.
 *
 *   object_safety read-mtu DEV GID RX_IF TX_IF
 *     An RC QP whose peer is 10.0.0.9 (neighbour entry set by the caller),
 *     path MTU 4096, on RX_IF at MTU 1500: a 16 MiB RDMA READ request from
 *     the wire, and RX_IF's MTU raised to 9000 once the first responses
 *     came: every response keeps the READ's MTU (1024-byte payloads, PSNs
 *     in order, 16384 of them, the MR's bytes), and the next request (a
 *     WRITE) is acknowledged (the responder re-read the MTU and never
 *     finished the READ).
 *
 *   object_safety stale-ack DEV GID RX_IF TX_IF
 *     An RC requester (ACK timeout 4 ms, retry_cnt 2) whose peer, 10.0.0.9,
 *     never answers, while ACKs and NAKs for a PSN behind what is
 *     acknowledged come from the wire every 2 ms: they are no progress and
 *     fail nothing, and the retries run out (RETRY_EXC_ERR) within 5 s.
 *
 *   object_safety memlock DEV GID      (run it as an unprivileged user)
 *     The rings of a user's QPs and CQs and the kernel's copy of its send
 *     queue count against its RLIMIT_MEMLOCK, with the pages its MRs pin
 *     (/proc/self/status: VmPin): a QP whose rings exceed the limit is
 *     refused (ENOMEM), where 2^20 WRs of 32 SGEs would cost the kernel
 *     gigabytes; one within
 *     it shows in VmPin and leaves it when destroyed, so creating and
 *     destroying such QPs over and over keeps working.
 *
 *   object_safety destroy DEV GID [ROUNDS]
 *     ibv_destroy_qp returns within 10 s, always: a QP connected to itself
 *     while another QP's work, resending to it, runs its engine; and two
 *     QPs with bursts of WRITEs to each other under way, destroyed at the
 *     same time by two threads.
 *
 * Prints one line per check, "PASS name" or "FAIL name: why" (or "SKIP
 * name: why"), comment lines starting with '#', and "DONE" last.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_user_rxe.h>

#include "check.h"
#include "rc_pair.h"
#include "raw_cmd.h"

#define LW IBV_ACCESS_LOCAL_WRITE
#define RW IBV_ACCESS_REMOTE_WRITE
#define RR IBV_ACCESS_REMOTE_READ
#define BIND IBV_ACCESS_MW_BIND

static long page;

struct env {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	union ibv_gid gid;
	int gid_index;
};

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* --- one RDMA operation from a pair's requester ------------------------------- */

/* An RDMA WRITE of len bytes at laddr (lkey) to raddr (rkey): its status. */
static int rdma_op(struct pair *p, enum ibv_wr_opcode op, void *laddr, uint32_t lkey, uint32_t len,
		   uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)laddr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	}, *bad;
	struct ibv_wc wc;

	if (ibv_post_send(p->req, &wr, &bad))
		return ST_POST_FAILED;
	return pair_wait(p->cq, &wc);
}

/* A type 1 window bound over [addr, addr + len) of mr through qp: its
 * rkey, or 0 on failure. */
static uint32_t bind1(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mw *mw, struct ibv_mr *mr, void *addr,
		      size_t len, unsigned int access)
{
	struct ibv_mw_bind b = {
		.wr_id = 7, .send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = mr, .addr = (uintptr_t)addr, .length = len, .mw_access_flags = access },
	};
	struct ibv_wc wc;

	if (ibv_bind_mw(qp, mw, &b))
		return 0;
	if (pair_wait(cq, &wc) != IBV_WC_SUCCESS)
		return 0;
	return mw->rkey;
}

/* A type 2 window bound by qp (BIND_MW work request): its new rkey, or 0. */
static uint32_t bind2(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mw *mw, struct ibv_mr *mr, void *addr,
		      size_t len, unsigned int access)
{
	uint32_t rkey = ibv_inc_rkey(mw->rkey);
	struct ibv_send_wr wr = {
		.wr_id = 8, .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED,
		.bind_mw = { .mw = mw, .rkey = rkey,
			     .bind_info = { .mr = mr, .addr = (uintptr_t)addr, .length = len,
					    .mw_access_flags = access } },
	}, *bad;
	struct ibv_wc wc;

	if (ibv_post_send(qp, &wr, &bad) || pair_wait(cq, &wc) != IBV_WC_SUCCESS)
		return 0;
	mw->rkey = rkey;
	return rkey;
}

static void *anon_page(int fill)
{
	void *p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memset(p, fill, page);
	return p;
}

/* --- mw -------------------------------------------------------------------- */

static int file_same(int fd, const char *orig)
{
	char now_[4096];

	if (pread(fd, now_, sizeof(now_), 0) != (ssize_t)sizeof(now_))
		return 0;
	return !memcmp(now_, orig, sizeof(now_));
}

/* Puts FILE's first page, read-only and shared, at addr. */
static int map_file_at(void *addr, int fd)
{
	if (munmap(addr, page))
		return -1;
	return mmap(addr, page, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) == addr ? 0 : -1;
}

static void test_mw(struct env *e, const char *file)
{
	static const char msg[] = "written through a memory window";
	char orig[4096], *src;
	struct ibv_mr *mr1, *mr2, *mr3, *smr;
	struct ibv_mw *mw1, *mw2, *mw3;
	uint32_t rkey1, rkey2, rkey3, old_index;
	struct ibv_pd *pd2;
	struct pair p;
	char *a, *b, *c;
	int fd, err, st;

	fd = open(file, O_RDONLY);
	if (fd < 0 || pread(fd, orig, sizeof(orig), 0) != (ssize_t)sizeof(orig) || page != 4096) {
		fail("setup", "cannot read 4096 bytes of %s: %s", file, strerror(errno));
		return;
	}
	printf("# running as uid %d\n", (int)getuid());
	src = anon_page(0);
	smr = src ? ibv_reg_mr(e->pd, src, page, LW) : NULL;
	a = anon_page('a');
	b = anon_page('b');
	c = anon_page('c');
	if (!smr || !a || !b || !c) {
		fail("setup", "buffers: %s", strerror(errno));
		return;
	}
	memcpy(src, msg, sizeof(msg));
	mr1 = ibv_reg_mr(e->pd, a, page, LW | BIND);
	mr2 = ibv_reg_mr(e->pd, b, page, LW | BIND);
	mr3 = ibv_reg_mr(e->pd, c, page, LW | BIND);
	mw1 = ibv_alloc_mw(e->pd, IBV_MW_TYPE_1);
	mw2 = ibv_alloc_mw(e->pd, IBV_MW_TYPE_1);
	mw3 = ibv_alloc_mw(e->pd, IBV_MW_TYPE_1);
	if (!mr1 || !mr2 || !mr3 || !mw1 || !mw2 || !mw3) {
		fail("setup", "MRs and MWs: %s", strerror(errno));
		return;
	}
	if (pair_open(&p, e->ctx, &e->gid, e->gid_index, e->pd, e->pd, 1, "setup"))
		return;
	/* (Local write in the windows' rights too: earlier rrxe refused a
	 * window with remote write without it.) */
	rkey1 = bind1(p.resp, p.rcq, mw1, mr1, a, page, LW | RW);
	rkey2 = bind1(p.resp, p.rcq, mw2, mr2, b, page, LW | RW);
	rkey3 = bind1(p.resp, p.rcq, mw3, mr3, c, page, LW | RW);
	if (!rkey1 || !rkey2 || !rkey3) {
		fail("setup", "binding the windows failed");
		return;
	}

	/* The control: a WRITE through the window lands. */
	st = rdma_op(&p, IBV_WR_RDMA_WRITE, src, smr->lkey, sizeof(msg), (uintptr_t)a + 100, rkey1);
	check("control-write-through-window", st == IBV_WC_SUCCESS && !memcmp(a + 100, msg, sizeof(msg)),
	      "status %s", st_str(st));
	pair_close(&p);

	/* 1. The MR goes while the window is bound. */
	old_index = mr1->lkey >> 8;
	err = ibv_dereg_mr(mr1);
	check("dereg-of-bound-mr-refused", err != 0, "ibv_dereg_mr succeeded with a window bound (C rxe: EINVAL)");
	if (err == 0) {
		long cycles = getenv("OBJECT_SAFETY_CYCLES") ? atol(getenv("OBJECT_SAFETY_CYCLES")) : 2000;
		struct ibv_mr *m = NULL;
		long i;

		/* The attack: the file where the page was, MRs over it pinned
		 * without write access until one gets the old index. */
		if (map_file_at(a, fd)) {
			fail("stale-window", "mapping the file: %s", strerror(errno));
		} else {
			for (i = 0; i < cycles; i++) {
				m = ibv_reg_mr(e->pd, a, page, 0);
				if (!m || m->lkey >> 8 == old_index)
					break;
				ibv_dereg_mr(m);
				m = NULL;
			}
			printf("# the deregistered MR's index %u %s after %ld registrations\n", old_index,
			       m ? "came back" : "did not come back", i);
			if (m && !pair_open(&p, e->ctx, &e->gid, e->gid_index, e->pd, e->pd, 1, "stale-window")) {
				st = rdma_op(&p, IBV_WR_RDMA_WRITE, src, smr->lkey, sizeof(msg), (uintptr_t)a + 100,
					     rkey1);
				check("stale-window-cannot-write-read-only-file", file_same(fd, orig),
				      "the WRITE (status %s) changed the read-only file", st_str(st));
				pair_close(&p);
			}
			if (m)
				ibv_dereg_mr(m);
		}
		mr1 = NULL;
	} else {
		/* The MR and the window still work. */
		if (!pair_open(&p, e->ctx, &e->gid, e->gid_index, e->pd, e->pd, 1, "window-after-refused-dereg")) {
			memset(a, 'a', page);
			st = rdma_op(&p, IBV_WR_RDMA_WRITE, src, smr->lkey, sizeof(msg), (uintptr_t)a + 200, rkey1);
			check("window-after-refused-dereg", st == IBV_WC_SUCCESS && !memcmp(a + 200, msg, sizeof(msg)),
			      "status %s", st_str(st));
			pair_close(&p);
		}
	}

	/* 2. The MR moves, under its window, onto the read-only file. */
	if (map_file_at(b, fd)) {
		fail("rereg-trans-of-bound-mr-refused", "mapping the file: %s", strerror(errno));
	} else {
		err = raw_rereg(e->ctx, mr2->handle, REREG_TRANS | REREG_ACCESS, (uintptr_t)b, page, (uintptr_t)b,
				0, 0, NULL);
		check("rereg-trans-of-bound-mr-refused", err != 0,
		      "a rereg moved a bound MR onto a read-only mapping");
		if (!pair_open(&p, e->ctx, &e->gid, e->gid_index, e->pd, e->pd, 1, "read-only-file-unchanged")) {
			st = rdma_op(&p, IBV_WR_RDMA_WRITE, src, smr->lkey, sizeof(msg), (uintptr_t)b + 300, rkey2);
			check("read-only-file-unchanged", file_same(fd, orig),
			      "the WRITE through the window (status %s) changed the read-only file", st_str(st));
			pair_close(&p);
		}
	}

	/* 3. The PD of a bound MR. */
	pd2 = ibv_alloc_pd(e->ctx);
	err = pd2 ? raw_rereg(e->ctx, mr3->handle, REREG_PD, 0, 0, 0, pd2->handle, 0, NULL) : -1;
	check("rereg-pd-of-bound-mr-refused", err != 0, "a rereg moved a bound MR to another PD");

	/* 4. Local write taken away from a bound MR. */
	err = raw_rereg(e->ctx, mr3->handle, REREG_ACCESS, 0, 0, 0, 0, BIND, NULL);
	check("rereg-access-of-bound-mr", err == 0, "rereg to MW_BIND alone: %s", strerror(err));
	if (!pair_open(&p, e->ctx, &e->gid, e->gid_index, e->pd, e->pd, 1, "write-without-local-write-refused")) {
		memset(c, 'c', page);
		st = rdma_op(&p, IBV_WR_RDMA_WRITE, src, smr->lkey, sizeof(msg), (uintptr_t)c + 400, rkey3);
		check("write-without-local-write-refused", st == IBV_WC_REM_ACCESS_ERR && c[400] == 'c',
		      "status %s, memory %s", st_str(st), c[400] == 'c' ? "unchanged" : "changed");
		pair_close(&p);
	}

	/* C rxe binds a window with remote write alone (the MR must have
	 * local write, the window need not). */
	if (!pair_open(&p, e->ctx, &e->gid, e->gid_index, e->pd, e->pd, 1, "bind-remote-write-without-local-write")) {
		struct ibv_mr *mr4 = ibv_reg_mr(e->pd, src + 2048, 1024, LW | BIND);
		struct ibv_mw *mw4 = ibv_alloc_mw(e->pd, IBV_MW_TYPE_1);

		check("bind-remote-write-without-local-write",
		      mr4 && mw4 && bind1(p.resp, p.rcq, mw4, mr4, src + 2048, 1024, RW),
		      "a window with IBV_ACCESS_REMOTE_WRITE alone was not bound");
		if (mw4)
			ibv_dealloc_mw(mw4);
		if (mr4)
			ibv_dereg_mr(mr4);
		pair_close(&p);
	}

	/* Once the windows are gone, the MRs go. */
	err = ibv_dealloc_mw(mw1) | ibv_dealloc_mw(mw2) | ibv_dealloc_mw(mw3);
	check("dealloc", err == 0, "ibv_dealloc_mw failed");
	err = (mr1 ? ibv_dereg_mr(mr1) : 0) | ibv_dereg_mr(mr2) | ibv_dereg_mr(mr3);
	check("dereg-after-windows-gone", err == 0, "ibv_dereg_mr failed");
	if (pd2)
		ibv_dealloc_pd(pd2);
	ibv_dereg_mr(smr);
	close(fd);
}

/* --- qp-reuse ------------------------------------------------------------ */

/* A QP of pd numbered want, created by cycling through QP numbers; NULL
 * if it did not come back within max creates. */
static struct ibv_qp *qp_numbered(struct env *e, struct ibv_pd *pd, struct ibv_cq *cq, uint32_t want, long max)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC, .sq_sig_all = 1, .send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	for (long i = 0; i < max; i++) {
		struct ibv_qp *qp = ibv_create_qp(pd, &init);

		if (!qp)
			return NULL;
		if (qp->qp_num == want) {
			printf("# QP number %u came back after %ld creates\n", want, i + 1);
			return qp;
		}
		ibv_destroy_qp(qp);
	}
	return NULL;
}

/* X (numbered like the dead QP) connected to a new requester Y: Y
 * WRITEs through the window; the status. */
static int write_via(struct env *e, struct ibv_pd *pd, struct ibv_qp *x, struct ibv_cq *xcq, struct ibv_mr *smr,
		     void *src, uint64_t raddr, uint32_t rkey)
{
	struct pair p = { .rcq = xcq, .resp = x };
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC, .sq_sig_all = 1,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	int st = ST_POST_FAILED;

	p.cq = ibv_create_cq(e->ctx, 16, NULL, NULL, 0);
	init.send_cq = init.recv_cq = p.cq;
	p.req = p.cq ? ibv_create_qp(pd, &init) : NULL;
	if (p.req && !pair_to_init(p.req) && !pair_to_init(x) &&
	    !pair_to_rts(p.req, &e->gid, e->gid_index, x->qp_num) &&
	    !pair_to_rts(x, &e->gid, e->gid_index, p.req->qp_num))
		st = rdma_op(&p, IBV_WR_RDMA_WRITE, src, smr->lkey, 32, raddr, rkey);
	if (p.req)
		ibv_destroy_qp(p.req);
	if (p.cq)
		ibv_destroy_cq(p.cq);
	return st;
}

static void test_qp_reuse(struct env *e, long max)
{
	struct ibv_pd *pd2 = ibv_alloc_pd(e->ctx);
	struct ibv_cq *cq = ibv_create_cq(e->ctx, 16, NULL, NULL, 0);
	char *buf = anon_page('m'), *src = anon_page('X');
	struct ibv_mr *mr = buf ? ibv_reg_mr(e->pd, buf, page, LW | BIND) : NULL;
	struct ibv_mr *smr = src ? ibv_reg_mr(e->pd, src, page, LW) : NULL;
	struct ibv_mr *smr2 = src && pd2 ? ibv_reg_mr(pd2, src, page, LW) : NULL;
	struct ibv_mw *mw = ibv_alloc_mw(e->pd, IBV_MW_TYPE_2);
	struct ibv_qp *x;
	struct pair p;
	uint32_t rkey, n;
	int st;

	if (!pd2 || !cq || !mr || !smr || !smr2 || !mw) {
		fail("setup", "%s", strerror(errno));
		return;
	}
	if (pair_open(&p, e->ctx, &e->gid, e->gid_index, e->pd, e->pd, 1, "setup"))
		return;
	/* Bound by the responder: WRITEs to it may use the window. */
	rkey = bind2(p.resp, p.rcq, mw, mr, buf, page, LW | RW);
	st = rkey ? rdma_op(&p, IBV_WR_RDMA_WRITE, src, smr->lkey, 32, (uintptr_t)buf, rkey) : ST_POST_FAILED;
	check("control-write-through-type2-window", st == IBV_WC_SUCCESS && buf[0] == 'X',
	      "bind %s, status %s", rkey ? "done" : "failed", st_str(st));
	/* Another QP of the PD cannot have the window invalidated by its
	 * peer: a type 2 window is its own QP's. */
	{
		struct pair q;

		if (!pair_open(&q, e->ctx, &e->gid, e->gid_index, e->pd, e->pd, 1, "send-inv-of-other-qps-window")) {
			struct ibv_sge rs = { .addr = (uintptr_t)src + 1024, .length = 64, .lkey = smr->lkey };
			struct ibv_recv_wr rw = { .wr_id = 5, .sg_list = &rs, .num_sge = 1 }, *rbad;
			struct ibv_sge ss = { .addr = (uintptr_t)src, .length = 8, .lkey = smr->lkey };
			struct ibv_send_wr sw = {
				.wr_id = 6, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND_WITH_INV,
				.send_flags = IBV_SEND_SIGNALED, .invalidate_rkey = rkey,
			}, *sbad;
			struct ibv_wc wc;
			int st2;

			st = ibv_post_recv(q.resp, &rw, &rbad) || ibv_post_send(q.req, &sw, &sbad) ? ST_POST_FAILED
											       : pair_wait(q.cq, &wc);
			memset(buf, 'm', 32);
			st2 = rdma_op(&p, IBV_WR_RDMA_WRITE, src, smr->lkey, 32, (uintptr_t)buf, rkey);
			check("send-inv-of-other-qps-window", st != IBV_WC_SUCCESS && st2 == IBV_WC_SUCCESS && buf[0] == 'X',
			      "SEND_WITH_INV from another QP's peer: %s; the window's own QP then wrote: %s",
			      st_str(st), st_str(st2));
			pair_close(&q);
		}
	}
	n = p.resp->qp_num;
	pair_close(&p);
	memset(buf, 'm', page);

	/* Another PD (another user of the device), the same QP number. */
	x = qp_numbered(e, pd2, cq, n, max);
	if (!x) {
		fail("other-pd-refused", "QP number %u did not come back within %ld creates (qpn_max?)", n,
		     max);
	} else {
		st = write_via(e, pd2, x, cq, smr2, src, (uintptr_t)buf, rkey);
		check("other-pd-refused", st != IBV_WC_SUCCESS && buf[0] == 'm',
		      "a QP of another PD numbered like the window's dead QP wrote through it (status %s)",
		      st_str(st));
		ibv_destroy_qp(x);
	}
	/* The same PD, the same number: still not the QP that bound it. */
	x = qp_numbered(e, e->pd, cq, n, max);
	if (!x) {
		fail("same-pd-refused", "QP number %u did not come back within %ld creates", n, max);
	} else {
		st = write_via(e, e->pd, x, cq, smr, src, (uintptr_t)buf, rkey);
		check("same-pd-refused", st != IBV_WC_SUCCESS && buf[0] == 'm',
		      "a new QP numbered like the window's dead QP wrote through it (status %s)", st_str(st));
		ibv_destroy_qp(x);
	}
	check("dealloc", !ibv_dealloc_mw(mw) && !ibv_dereg_mr(mr), "dealloc or dereg failed");
	ibv_dereg_mr(smr);
	ibv_dereg_mr(smr2);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd2);
}

/*
 * peer-reuse/: QP A's peer B (a loopback pair) is destroyed while A stays
 * in RTS, and QPs of another PD (another user) are created until one, C,
 * gets B's number; C, connected to A with the PSN A expects next, SENDs
 * to A. A must not take it: a looped-back packet is checked against the
 * QP A was connected to, not against its number. The control: B's SEND
 * before lands.
 */
static int to_rts_psn(struct ibv_qp *qp, struct env *e, uint32_t dest, uint32_t sq_psn)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = dest,
		.rq_psn = 0, .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
		.ah_attr = {
			.is_global = 1, .port_num = 1,
			.grh = { .dgid = e->gid, .sgid_index = e->gid_index, .hop_limit = 1 },
		},
	};
	int err = pair_to_init(qp);

	err = err ? err : ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 1;
	a.rnr_retry = 1;
	a.sq_psn = sq_psn;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static void test_peer_reuse(struct env *e, long max)
{
	struct ibv_pd *pd2 = ibv_alloc_pd(e->ctx);
	struct ibv_cq *ccq = ibv_create_cq(e->ctx, 16, NULL, NULL, 0);
	char *buf = anon_page('p');
	struct ibv_mr *mr = buf ? ibv_reg_mr(e->pd, buf, page, LW) : NULL;
	struct ibv_mr *mr2 = buf && pd2 ? ibv_reg_mr(pd2, buf, page, LW) : NULL;
	struct ibv_sge rs = { .addr = (uintptr_t)buf + 2048, .length = 64 };
	struct ibv_recv_wr rw = { .wr_id = 8, .sg_list = &rs, .num_sge = 1 }, *rbad;
	struct ibv_sge ss = { .addr = (uintptr_t)buf, .length = 16 };
	struct ibv_send_wr sw = {
		.wr_id = 9, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	}, *sbad;
	struct ibv_qp *c;
	struct ibv_wc wc;
	struct pair p;
	uint32_t n;
	int st, got;

	if (!pd2 || !ccq || !mr || !mr2) {
		fail("peer-reuse/setup", "%s", strerror(errno));
		return;
	}
	if (pair_open(&p, e->ctx, &e->gid, e->gid_index, e->pd, e->pd, 1, "peer-reuse/setup"))
		return;
	rs.lkey = ss.lkey = mr->lkey;
	memcpy(buf, "from the peer QP", 16);
	st = ibv_post_recv(p.resp, &rw, &rbad) || ibv_post_send(p.req, &sw, &sbad) ? ST_POST_FAILED
										 : pair_wait(p.rcq, &wc);
	check("peer-reuse/control-peer-send-lands", st == IBV_WC_SUCCESS && !memcmp(buf + 2048, buf, 16),
	      "the peer's SEND: %s", st_str(st));
	pair_wait(p.cq, &wc);
	/* A (p.resp) stays in RTS, expecting PSN 1; its peer goes. */
	n = p.req->qp_num;
	ibv_destroy_qp(p.req);
	p.req = NULL;
	c = qp_numbered(e, pd2, ccq, n, max);
	if (!c) {
		fail("peer-reuse/new-qp-refused", "QP number %u did not come back within %ld creates (qpn_max?)", n,
		     max);
	} else {
		memset(buf + 2048, 0, 64);
		memcpy(buf + 16, "from an intruder", 16);
		ss.addr = (uintptr_t)buf + 16;
		ss.lkey = mr2->lkey;
		got = 0;
		if (to_rts_psn(c, e, p.resp->qp_num, 1) || ibv_post_recv(p.resp, &rw, &rbad) ||
		    ibv_post_send(c, &sw, &sbad)) {
			fail("peer-reuse/new-qp-refused", "setting the intruder up: %s", strerror(errno));
		} else {
			for (int i = 0; i < 150 && !got; i++) {
				got = ibv_poll_cq(p.rcq, 1, &wc);
				usleep(10000);
			}
			check("peer-reuse/new-qp-refused", !got && buf[2048] == 0,
			      "A took a SEND from a new QP numbered like its dead peer (%d completion, status %s)",
			      got, got > 0 ? st_str(wc.status) : "-");
		}
		ibv_destroy_qp(c);
	}
	pair_close(&p);
	ibv_dereg_mr(mr);
	ibv_dereg_mr(mr2);
	ibv_destroy_cq(ccq);
	ibv_dealloc_pd(pd2);
}

/* --- uc-access --------------------------------------------------------------- */

static int uc_to_rts(struct ibv_qp *qp, struct env *e, uint32_t dest, unsigned int access)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = access };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = e->gid;
	a.ah_attr.grh.sgid_index = e->gid_index;
	a.ah_attr.grh.hop_limit = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

static void test_uc_access(struct env *e)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_UC, .sq_sig_all = 1,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	char *buf = anon_page('u'), *src = anon_page('W');
	struct ibv_mr *mr = ibv_reg_mr(e->pd, buf, page, LW | RW);
	struct ibv_mr *smr = ibv_reg_mr(e->pd, src, page, LW);
	struct ibv_qp_attr a = { .qp_access_flags = RW };
	struct pair p = {};
	int st;

	p.cq = ibv_create_cq(e->ctx, 16, NULL, NULL, 0);
	p.rcq = ibv_create_cq(e->ctx, 16, NULL, NULL, 0);
	init.send_cq = init.recv_cq = p.cq;
	p.req = ibv_create_qp(e->pd, &init);
	init.send_cq = init.recv_cq = p.rcq;
	p.resp = ibv_create_qp(e->pd, &init);
	if (!mr || !smr || !p.req || !p.resp || uc_to_rts(p.req, e, p.resp->qp_num, 0) ||
	    uc_to_rts(p.resp, e, p.req->qp_num, 0)) {
		fail("setup", "%s", strerror(errno));
		return;
	}
	st = rdma_op(&p, IBV_WR_RDMA_WRITE, src, smr->lkey, 64, (uintptr_t)buf, mr->rkey);
	usleep(300000);
	check("write-refused-without-remote-write", buf[0] == 'u',
	      "a UC WRITE (status %s) landed on a QP without IBV_ACCESS_REMOTE_WRITE", st_str(st));
	/* The control: the same WRITE once the QP allows it. */
	if (ibv_modify_qp(p.resp, &a, IBV_QP_ACCESS_FLAGS)) {
		fail("write-lands-with-remote-write", "modify_qp(ACCESS_FLAGS): %s", strerror(errno));
	} else {
		st = rdma_op(&p, IBV_WR_RDMA_WRITE, src, smr->lkey, 64, (uintptr_t)buf, mr->rkey);
		for (int i = 0; i < 100 && buf[63] != 'W'; i++)
			usleep(10000);
		check("write-lands-with-remote-write", buf[0] == 'W' && buf[63] == 'W' && buf[64] == 'u',
		      "status %s", st_str(st));
	}
	pair_close(&p);
	ibv_dereg_mr(mr);
	ibv_dereg_mr(smr);
}

/* --- cq-events --------------------------------------------------------------- */

/* CQ_ERR events within wait seconds (the async fd is non-blocking). */
static int cq_err_events(struct ibv_context *ctx, double wait)
{
	double end = now() + wait;
	struct ibv_async_event ev;
	int n = 0;

	while (now() < end) {
		struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };

		if (poll(&pfd, 1, 100) <= 0)
			continue;
		while (!ibv_get_async_event(ctx, &ev)) {
			if (ev.event_type == IBV_EVENT_CQ_ERR)
				n++;
			else
				printf("# async event %d\n", ev.event_type);
			ibv_ack_async_event(&ev);
		}
	}
	return n;
}

static int flush_into(struct ibv_qp *qp, struct ibv_mr *mr, char *buf)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		return -1;
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	for (int i = 0; i < 32; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)buf + 64 * i, .length = 64, .lkey = mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

		if (ibv_post_recv(qp, &wr, &bad))
			return -1;
	}
	a.qp_state = IBV_QPS_ERR;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

/* resize-fault: a resize_cq (raw command) whose response ends with the
 * driver's part (the new ring's mmap info) on a PROT_NONE page fails with
 * EFAULT, and the CQ stays on the ring its process knows: a flushed send
 * completion posted after it is polled through librxe. Before, the CQ
 * moved to the new ring first and the failed write left the process
 * reading the old one: every later completion was lost. */
static void test_resize_fault(struct env *e)
{
	long page = sysconf(_SC_PAGESIZE);
	struct ibv_cq *cq = ibv_create_cq(e->ctx, 16, NULL, NULL, 0);
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC, .send_cq = cq, .recv_cq = cq, .sq_sig_all = 1,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = cq ? ibv_create_qp(e->pd, &init) : NULL;
	struct ibv_qp_attr err_attr = { .qp_state = IBV_QPS_ERR };
	struct ibv_send_wr wr = { .wr_id = 9, .opcode = IBV_WR_SEND }, *bad;
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_resize_cq core;
	} cmd = {};
	uint8_t *two = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_wc wc;
	ssize_t w;
	int n = 0, i, werr;

	if (!qp || two == MAP_FAILED || mprotect(two + page, page, PROT_NONE) || pair_to_init(qp) ||
	    ibv_modify_qp(qp, &err_attr, IBV_QP_STATE)) {
		fail("setup", "%s", strerror(errno));
		return;
	}
	cmd.hdr.command = IB_USER_VERBS_CMD_RESIZE_CQ;
	cmd.hdr.in_words = sizeof(cmd) / 4;
	cmd.hdr.out_words = (sizeof(struct ib_uverbs_resize_cq_resp) + sizeof(struct rxe_resize_cq_resp)) / 4;
	/* The core's 8 bytes at the end of the writable page, the driver's
	 * mmap info on the PROT_NONE one. */
	cmd.core.response = (uintptr_t)(two + page - sizeof(struct ib_uverbs_resize_cq_resp));
	cmd.core.cq_handle = cq->handle;
	cmd.core.cqe = 64;
	w = write(e->ctx->cmd_fd, &cmd, sizeof(cmd));
	werr = w < 0 ? errno : 0;
	check("efault", w < 0 && werr == EFAULT, "the resize returned %zd (%s), want EFAULT", w,
	      strerror(werr));
	/* The QP is in the error state: the send is flushed to the CQ. */
	if (ibv_post_send(qp, &wr, &bad)) {
		fail("completion-after", "ibv_post_send: %s", strerror(errno));
	} else {
		for (i = 0; i < 200 && n == 0; i++) {
			n = ibv_poll_cq(cq, 1, &wc);
			if (!n)
				usleep(10000);
		}
		check("completion-after", n == 1 && wc.wr_id == 9 && wc.status == IBV_WC_WR_FLUSH_ERR,
		      "%s", n == 1 ? ibv_wc_status_str(wc.status) : "no completion within 2 s (lost to a ring "
		      "the process does not know)");
	}
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	munmap(two, 2 * page);
}

static void test_cq_events(struct env *e)
{
	struct ibv_cq *small = ibv_create_cq(e->ctx, 1, NULL, NULL, 0);
	struct ibv_cq *scq = ibv_create_cq(e->ctx, 16, NULL, NULL, 0);
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC, .send_cq = scq, .recv_cq = small,
		.cap = { .max_send_wr = 4, .max_recv_wr = 32, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	char *buf = anon_page(0);
	struct ibv_mr *mr = ibv_reg_mr(e->pd, buf, page, LW);
	struct ibv_qp *qp = small && scq ? ibv_create_qp(e->pd, &init) : NULL;
	struct ibv_wc wc[64];
	int n;

	if (!qp || !mr || fcntl(e->ctx->async_fd, F_SETFL, fcntl(e->ctx->async_fd, F_GETFL) | O_NONBLOCK)) {
		fail("setup", "%s", strerror(errno));
		return;
	}
	printf("# CQ of %d entries, 32 receives flushed into it\n", small->cqe);
	if (flush_into(qp, mr, buf)) {
		fail("one-per-overflow", "setting up the flush: %s", strerror(errno));
	} else {
		n = cq_err_events(e->ctx, 2.0);
		check("one-per-overflow", n == 1, "%d IBV_EVENT_CQ_ERR events for one overflow", n);
	}
	/* In error now: emptied and overflowed again, it raises nothing (a
	 * user who empties the ring by writing its consumer index would
	 * otherwise raise events at will). */
	while (ibv_poll_cq(small, 64, wc) > 0)
		;
	if (flush_into(qp, mr, buf)) {
		fail("no-event-while-in-error", "setting up the flush: %s", strerror(errno));
	} else {
		n = cq_err_events(e->ctx, 2.0);
		check("no-event-while-in-error", n == 0, "%d IBV_EVENT_CQ_ERR events for a second overflow", n);
	}
	/* A resize gives a new ring: its overflow raises the event again. */
	while (ibv_poll_cq(small, 64, wc) > 0)
		;
	if (ibv_resize_cq(small, 2) || flush_into(qp, mr, buf)) {
		fail("one-after-resize", "resize or flush: %s", strerror(errno));
	} else {
		n = cq_err_events(e->ctx, 2.0);
		check("one-after-resize", n == 1, "%d IBV_EVENT_CQ_ERR events after a resize", n);
	}
	ibv_destroy_qp(qp);
	ibv_destroy_cq(small);
	ibv_destroy_cq(scq);
	ibv_dereg_mr(mr);
}

/* --- big-mr ------------------------------------------------------------------ */

static void test_big_mr(struct env *e)
{
	const size_t chunk = 2u << 20, size = (2048u + 2) << 20;
	char *src = anon_page('B'), *base;
	struct ibv_mr *mr, *smr = ibv_reg_mr(e->pd, src, page, LW);
	int fd = memfd_create("big-mr", 0);
	struct pair p;
	double t0;
	int st;

	if (fd < 0 || ftruncate(fd, chunk) || !smr) {
		fail("setup", "%s", strerror(errno));
		return;
	}
	base = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED) {
		fail("setup", "reserving %zu bytes: %s", size, strerror(errno));
		return;
	}
	for (size_t off = 0; off < size; off += chunk)
		if (mmap(base + off, chunk, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) != base + off) {
			fail("setup", "mapping the memfd at +%zu: %s", off, strerror(errno));
			return;
		}
	memset(base, 'z', chunk);
	t0 = now();
	mr = ibv_reg_mr(e->pd, base, size, LW | RW);
	printf("# registering %zu MiB took %.1f s\n", size >> 20, now() - t0);
	check("register-over-2GiB", mr, "ibv_reg_mr of %zu MiB: %s", size >> 20, strerror(errno));
	if (mr && !pair_open(&p, e->ctx, &e->gid, e->gid_index, e->pd, e->pd, 1, "write-at-last-page")) {
		size_t at = size - page + 100;

		st = rdma_op(&p, IBV_WR_RDMA_WRITE, src, smr->lkey, 64, (uintptr_t)base + at, mr->rkey);
		check("write-at-last-page", st == IBV_WC_SUCCESS && base[at % chunk] == 'B' &&
		      base[at % chunk + 64] == 'z', "status %s", st_str(st));
		pair_close(&p);
	}
	if (mr)
		check("dereg", !ibv_dereg_mr(mr), "ibv_dereg_mr: %s", strerror(errno));
	munmap(base, size);
	close(fd);
	ibv_dereg_mr(smr);
}

/* --- frames from the wire ---------------------------------------------------- */

static const uint8_t PEER_IP[4] = { 10, 0, 0, 9 };
#define PEER_QPN 0x99u
#define RQ_PSN 0x1000u

static uint32_t crc_table[256];

static uint32_t crc32_le(uint32_t crc, const uint8_t *p, size_t n)
{
	if (!crc_table[1])
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;

			for (int k = 0; k < 8; k++)
				c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
			crc_table[i] = c;
		}
	crc = ~crc;
	while (n--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

static uint16_t ip_csum(const uint8_t *h)
{
	uint32_t s = 0;

	for (int i = 0; i < 20; i += 2)
		s += h[i] << 8 | h[i + 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return ~s;
}

struct wire {
	int tx, rx;		/* AF_PACKET: writes on TX_IF, captures on TX_IF */
	int ifindex;
	uint8_t rx_mac[6], tx_mac[6], rx_ip[4];
};

static int if_info(const char *ifname, uint8_t mac[6], uint8_t ip[4], int *ifindex)
{
	struct ifreq r = {};
	int s = socket(AF_INET, SOCK_DGRAM, 0), ret = 0;

	strncpy(r.ifr_name, ifname, IFNAMSIZ - 1);
	if (ioctl(s, SIOCGIFHWADDR, &r))
		ret = -1;
	else
		memcpy(mac, r.ifr_hwaddr.sa_data, 6);
	if (ip && !ret) {
		if (ioctl(s, SIOCGIFADDR, &r))
			ret = -1;
		else
			memcpy(ip, &((struct sockaddr_in *)&r.ifr_addr)->sin_addr, 4);
	}
	if (ifindex && !ret)
		*ifindex = if_nametoindex(ifname);
	close(s);
	return ret;
}

static int wire_open(struct wire *w, const char *rx_if, const char *tx_if)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_IP) };
	int big = 128 << 20;

	if (if_info(rx_if, w->rx_mac, w->rx_ip, NULL) || if_info(tx_if, w->tx_mac, NULL, &w->ifindex))
		return -1;
	sll.sll_ifindex = w->ifindex;
	w->tx = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_IP));
	w->rx = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_IP));
	if (w->tx < 0 || w->rx < 0)
		return -1;
	setsockopt(w->rx, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
	if (bind(w->tx, (struct sockaddr *)&sll, sizeof(sll)) || bind(w->rx, (struct sockaddr *)&sll, sizeof(sll)))
		return -1;
	return 0;
}

/* Sends transport (BTH onwards, without the ICRC) from 10.0.0.9 to
 * dst_ip/dst_mac, with a correct ICRC unless bad_icrc. */
static int wire_send(struct wire *w, const uint8_t dst_mac[6], const uint8_t dst_ip[4], const uint8_t *transport,
		     size_t tlen, int bad_icrc)
{
	uint8_t f[9100], masked[60 + 8];
	size_t udp_len = 8 + tlen + 4, ip_len = 20 + udp_len;
	uint8_t *ip = f + 14, *udp = ip + 20;
	uint32_t crc;

	if (14 + ip_len > sizeof(f))
		return -1;
	memcpy(f, dst_mac, 6);
	memcpy(f + 6, w->tx_mac, 6);
	f[12] = 0x08;
	f[13] = 0x00;
	memset(ip, 0, 20);
	ip[0] = 0x45;
	ip[2] = ip_len >> 8;
	ip[3] = ip_len;
	ip[4] = 0x42;
	ip[6] = 0x40;
	ip[8] = 64;
	ip[9] = 17;
	memcpy(ip + 12, PEER_IP, 4);
	memcpy(ip + 16, dst_ip, 4);
	{
		uint16_t c = ip_csum(ip);

		ip[10] = c >> 8;
		ip[11] = c;
	}
	udp[0] = 0xc1;
	udp[1] = 0x23;
	udp[2] = 4791 >> 8;
	udp[3] = 4791 & 0xff;
	udp[4] = udp_len >> 8;
	udp[5] = udp_len;
	udp[6] = udp[7] = 0;
	memcpy(udp + 8, transport, tlen);
	/* IBA A17: 8 bytes of ones, IP with TOS, TTL and checksum as ones,
	 * UDP with its checksum as ones, BTH with byte 4 as ones. */
	memset(masked, 0xff, 8);
	memcpy(masked + 8, ip, 20);
	masked[8 + 1] = 0xff;
	masked[8 + 8] = 0xff;
	masked[8 + 10] = masked[8 + 11] = 0xff;
	memcpy(masked + 28, udp, 8);
	masked[28 + 6] = masked[28 + 7] = 0xff;
	memcpy(masked + 36, transport, 12);
	masked[36 + 4] = 0xff;
	crc = crc32_le(0, masked, 48);
	crc = crc32_le(crc, transport + 12, tlen - 12);
	if (bad_icrc)
		crc ^= 1;
	memcpy(udp + 8 + tlen, &crc, 4);	/* little-endian on x86 */
	return send(w->tx, f, 14 + ip_len, 0) == (ssize_t)(14 + ip_len) ? 0 : -1;
}

static size_t bth(uint8_t *b, uint8_t opcode, uint32_t dqpn, uint32_t psn, int ack_req, size_t payload)
{
	int pad = (4 - payload % 4) % 4;

	b[0] = opcode;
	b[1] = pad << 4;
	b[2] = b[3] = 0xff;
	b[4] = 0;
	b[5] = dqpn >> 16;
	b[6] = dqpn >> 8;
	b[7] = dqpn;
	b[8] = ack_req ? 0x80 : 0;
	b[9] = psn >> 16;
	b[10] = psn >> 8;
	b[11] = psn;
	return 12;
}

static void put32(uint8_t *b, uint32_t v)
{
	b[0] = v >> 24;
	b[1] = v >> 16;
	b[2] = v >> 8;
	b[3] = v;
}

static void put64(uint8_t *b, uint64_t v)
{
	put32(b, v >> 32);
	put32(b + 4, v);
}

/* A captured RoCE packet from the device (src RX_IF's IP): opcode, PSN,
 * payload (after BTH and AETH) and its length; 0 if none within ms. */
struct rpkt {
	uint8_t op;
	uint32_t psn;
	const uint8_t *payload;
	size_t len;
};

static int wire_recv(struct wire *w, uint8_t *buf, size_t size, struct rpkt *r, int ms)
{
	for (;;) {
		struct pollfd pfd = { .fd = w->rx, .events = POLLIN };
		ssize_t n;
		uint8_t *ip, *udp, *t;
		size_t ulen, hdr;
		int pad;

		if (poll(&pfd, 1, ms) <= 0)
			return 0;
		n = recv(w->rx, buf, size, 0);
		if (n < 14 + 20 + 8 + 12 + 4)
			continue;
		ip = buf + 14;
		if (ip[9] != 17 || memcmp(ip + 12, w->rx_ip, 4))
			continue;
		udp = ip + (ip[0] & 0xf) * 4;
		if ((udp[2] << 8 | udp[3]) != 4791)
			continue;
		ulen = udp[4] << 8 | udp[5];
		t = udp + 8;
		r->op = t[0];
		pad = (t[1] >> 4) & 3;
		r->psn = (t[9] << 16 | t[10] << 8 | t[11]) & 0xffffff;
		hdr = 12 + ((r->op >= 0x0d && r->op <= 0x11) && r->op != 0x0e ? 4 : 0);
		if (ulen < 8 + hdr + 4 + pad)
			continue;
		r->payload = t + hdr;
		r->len = ulen - 8 - hdr - 4 - pad;
		return 1;
	}
}

static int set_mtu(const char *ifname, int mtu)
{
	struct ifreq r = { .ifr_mtu = mtu };
	int s = socket(AF_INET, SOCK_DGRAM, 0), ret;

	strncpy(r.ifr_name, ifname, IFNAMSIZ - 1);
	ret = ioctl(s, SIOCSIFMTU, &r);
	close(s);
	return ret;
}

/* --- mcast-icrc -------------------------------------------------------------- */

static long hw_counter(const char *dev, const char *name)
{
	char path[256];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/hw_counters/%s", dev, name);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

#define QKEY 0x1234567u

static void test_mcast_icrc(struct env *e, const char *dev, const char *rx_if, const char *tx_if)
{
	static const uint8_t group[4] = { 239, 1, 2, 4 }, gmac[6] = { 0x01, 0x00, 0x5e, 0x01, 0x02, 0x04 };
	union ibv_gid mgid = { .raw = { [10] = 0xff, [11] = 0xff, 239, 1, 2, 4 } };
	struct ibv_cq *cq = ibv_create_cq(e->ctx, 64, NULL, NULL, 0);
	char *buf = mmap(NULL, 3 * 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *mr = buf != MAP_FAILED ? ibv_reg_mr(e->pd, buf, 3 * 8192, LW) : NULL;
	struct ibv_qp *qp[3] = {};
	uint8_t t[12 + 8 + 64];
	struct ip_mreqn mreq = { .imr_multiaddr.s_addr = htonl(0xef010204) };
	struct wire w;
	struct ibv_wc wc[8];
	long before, after;
	int sock, got[3] = {}, n, bad = 0;

	if (!cq || !mr || wire_open(&w, rx_if, tx_if)) {
		fail("setup", "%s", strerror(errno));
		return;
	}
	for (int i = 0; i < 3; i++) {
		struct ibv_qp_init_attr init = {
			.qp_type = IBV_QPT_UD, .send_cq = cq, .recv_cq = cq,
			.cap = { .max_send_wr = 1, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
		};
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY };
		struct ibv_sge sge = { .addr = (uintptr_t)buf + 8192 * i, .length = 8192, .lkey = mr->lkey };
		struct ibv_recv_wr rw = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *badw;

		qp[i] = ibv_create_qp(e->pd, &init);
		if (!qp[i] || ibv_modify_qp(qp[i], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY)) {
			fail("setup", "UD QP: %s", strerror(errno));
			return;
		}
		a.qp_state = IBV_QPS_RTR;
		if (ibv_modify_qp(qp[i], &a, IBV_QP_STATE)) {
			fail("setup", "RTR: %s", strerror(errno));
			return;
		}
		a.qp_state = IBV_QPS_RTS;
		if (ibv_modify_qp(qp[i], &a, IBV_QP_STATE | IBV_QP_SQ_PSN) || ibv_post_recv(qp[i], &rw, &badw) ||
		    ibv_attach_mcast(qp[i], &mgid, 0)) {
			fail("setup", "RTS, receive or attach: %s", strerror(errno));
			return;
		}
	}
	/* The IP layer delivers a group's packets once the interface joined. */
	sock = socket(AF_INET, SOCK_DGRAM, 0);
	mreq.imr_ifindex = if_nametoindex(rx_if);
	if (setsockopt(sock, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mreq, sizeof(mreq))) {
		fail("setup", "IP_ADD_MEMBERSHIP: %s", strerror(errno));
		return;
	}
	usleep(200000);
	bth(t, 0x64, 0xffffff, 0x42, 0, 64);
	put32(t + 12, QKEY);
	put32(t + 16, 0x99);
	for (int i = 0; i < 64; i++)
		t[20 + i] = 'M' + i % 7;

	before = hw_counter(dev, "rcvd_icrc_err");
	wire_send(&w, gmac, group, t, sizeof(t), 1);
	usleep(500000);
	n = ibv_poll_cq(cq, 8, wc);
	after = hw_counter(dev, "rcvd_icrc_err");
	printf("# rcvd_icrc_err %ld -> %ld, %d completions\n", before, after, n);
	check("bad-icrc-reaches-no-member", n == 0, "%d completions", n);
	check("bad-icrc-counted-once", before >= 0 && after == before + 1,
	      "rcvd_icrc_err went from %ld to %ld for one packet to three members", before, after);

	wire_send(&w, gmac, group, t, sizeof(t), 0);
	for (double end = now() + 3; now() < end && got[0] + got[1] + got[2] < 3;) {
		n = ibv_poll_cq(cq, 8, wc);
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS || wc[i].byte_len != 40 + 64 ||
			    memcmp(buf + 8192 * wc[i].wr_id + 40, t + 20, 64))
				bad++;
			else
				got[wc[i].wr_id]++;
		}
		if (!n)
			usleep(10000);
	}
	check("good-reaches-every-member", got[0] == 1 && got[1] == 1 && got[2] == 1 && !bad,
	      "completions per member %d %d %d, %d bad", got[0], got[1], got[2], bad);
	for (int i = 0; i < 3; i++) {
		ibv_detach_mcast(qp[i], &mgid, 0);
		ibv_destroy_qp(qp[i]);
	}
	close(sock);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(mr);
}

/* --- read-mtu ---------------------------------------------------------------- */

static void test_read_mtu(struct env *e, const char *rx_if, const char *tx_if)
{
	const size_t len = 16u << 20;
	const uint32_t mtu = 1024, npkts = len / mtu;
	union ibv_gid peer = { .raw = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 9 } };
	struct ibv_cq *cq = ibv_create_cq(e->ctx, 16, NULL, NULL, 0);
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC, .send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	uint8_t *mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *mr = mem != MAP_FAILED ? ibv_reg_mr(e->pd, mem, len, LW | RW | RR) : NULL;
	struct ibv_qp *qp = cq ? ibv_create_qp(e->pd, &init) : NULL;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = RW | RR };
	uint8_t req[12 + 16], wreq[12 + 16 + 32], *rbuf = malloc(16384);
	uint32_t next = RQ_PSN, seen = 0, wrong_len = 0, wrong_psn = 0, wrong_data = 0, wrong_op = 0;
	int changed = 0, acked = 0;
	struct rpkt r;
	struct wire w;

	if (!mr || !qp || !rbuf || wire_open(&w, rx_if, tx_if) ||
	    ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
		fail("setup", "%s", strerror(errno));
		return;
	}
	for (size_t i = 0; i < len; i++)
		mem[i] = (i * 7 + 3) & 0xff;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_4096;
	a.dest_qp_num = PEER_QPN;
	a.rq_psn = RQ_PSN;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = peer;
	a.ah_attr.grh.sgid_index = e->gid_index;
	a.ah_attr.grh.hop_limit = 64;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
		fail("setup", "RTR: %s", strerror(errno));
		return;
	}
	if (set_mtu(rx_if, 1500)) {
		fail("setup", "MTU 1500: %s", strerror(errno));
		return;
	}
	usleep(100000);
	bth(req, 0x0c, qp->qp_num, RQ_PSN, 1, 0);
	put64(req + 12, (uintptr_t)mem);
	put32(req + 20, mr->rkey);
	put32(req + 24, len);
	if (wire_send(&w, w.rx_mac, w.rx_ip, req, sizeof(req), 0)) {
		fail("setup", "sending the READ: %s", strerror(errno));
		return;
	}
	while (wire_recv(&w, rbuf, 16384, &r, 3000)) {
		uint32_t k = r.psn - RQ_PSN;
		uint8_t want_op = npkts == 1 ? 0x10 : k == 0 ? 0x0d : k == npkts - 1 ? 0x0f : 0x0e;

		if (r.op < 0x0d || r.op > 0x10)
			continue;
		seen++;
		if (r.psn != next)
			wrong_psn++;
		next = r.psn + 1;
		if (r.len != mtu)
			wrong_len++;
		if (r.op != want_op)
			wrong_op++;
		else if (k < npkts && r.len <= mtu && memcmp(r.payload, mem + (size_t)k * mtu, r.len))
			wrong_data++;
		if (seen == 64 && !changed) {
			changed = !set_mtu(rx_if, 9000);
			printf("# MTU of %s raised to 9000 after %u responses\n", rx_if, seen);
		}
	}
	printf("# %u responses (want %u): %u out of order, %u not %u bytes, %u wrong opcode, %u wrong data\n", seen,
	       npkts, wrong_psn, wrong_len, mtu, wrong_op, wrong_data);
	if (!changed)
		skip("responses-keep-their-mtu", "the READ ended before the MTU changed");
	else
		check("responses-keep-their-mtu",
		      seen == npkts && !wrong_psn && !wrong_len && !wrong_op && !wrong_data,
		      "%u responses (want %u): %u out of order, %u not %u bytes, %u wrong opcode, %u wrong data",
		      seen, npkts, wrong_psn, wrong_len, mtu, wrong_op, wrong_data);
	/* The next request is answered. */
	bth(wreq, 0x0a, qp->qp_num, RQ_PSN + npkts, 1, 32);
	put64(wreq + 12, (uintptr_t)mem);
	put32(wreq + 20, mr->rkey);
	put32(wreq + 24, 32);
	memset(wreq + 28, 0xee, 32);
	wire_send(&w, w.rx_mac, w.rx_ip, wreq, sizeof(wreq), 0);
	while (wire_recv(&w, rbuf, 16384, &r, 3000))
		if (r.op == 0x11 && r.psn == ((RQ_PSN + npkts) & 0xffffff)) {
			acked = 1;
			break;
		}
	check("next-request-answered", acked && mem[0] == 0xee && mem[31] == 0xee,
	      "the WRITE after the READ was %s", acked ? "acknowledged but did not land" : "not acknowledged");
	set_mtu(rx_if, 1500);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(mr);
	munmap(mem, len);
	free(rbuf);
}

/* --- stale-ack ---------------------------------------------------------------- */

/* An RC requester whose peer is 10.0.0.9 (nobody: its packets are lost),
 * first PSN SQ_PSN, in RTS with ACK timeout `timeout` and `retry_cnt`;
 * NULL on failure (reported as `name`). */
#define SQ_PSN 0x2000u

static struct ibv_qp *silent_requester(struct env *e, struct ibv_cq *cq, const char *name, uint8_t timeout,
				       uint8_t retry_cnt)
{
	union ibv_gid peer = { .raw = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 9 } };
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC, .send_cq = cq, .recv_cq = cq, .sq_sig_all = 1,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(e->pd, &init);
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };

	if (!qp || ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
		fail(name, "setup: %s", strerror(errno));
		return NULL;
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = PEER_QPN;
	a.rq_psn = RQ_PSN;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = peer;
	a.ah_attr.grh.sgid_index = e->gid_index;
	a.ah_attr.grh.hop_limit = 64;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
		fail(name, "RTR: %s", strerror(errno));
		ibv_destroy_qp(qp);
		return NULL;
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = timeout;
	a.retry_cnt = retry_cnt;
	a.rnr_retry = 7;
	a.sq_psn = SQ_PSN;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
			  IBV_QP_MAX_QP_RD_ATOMIC)) {
		fail(name, "RTS: %s", strerror(errno));
		ibv_destroy_qp(qp);
		return NULL;
	}
	return qp;
}

/* The requester above (ACK timeout 10: 4 ms, retry_cnt 2) posts one RDMA
 * WRITE; meanwhile ACKs and NAKs (remote access error, RNR, PSN sequence
 * error) for SQ_PSN + rel come from the wire every 2 ms. With rel -1, a
 * PSN already behind what is acknowledged: duplicates (late, or forged:
 * RoCE has no authentication) about no request still out. With rel 4096,
 * a PSN the requester never sent: forged. Either way they are no progress
 * and complete or fail nothing: the WRITE must end in RETRY_EXC_ERR (not
 * SUCCESS, not REM_ACCESS_ERR) within 5 s (3 timeouts of 4-32 ms; C rxe
 * ignores such packets too).
 */
static void stale_ack_case(struct env *e, const char *rx_if, const char *tx_if, const char *name,
			   const uint8_t *syndromes, int nsyn, int32_t rel)
{
	struct ibv_cq *cq = ibv_create_cq(e->ctx, 16, NULL, NULL, 0);
	uint8_t *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *mr = mem != MAP_FAILED ? ibv_reg_mr(e->pd, mem, 4096, LW) : NULL;
	struct ibv_qp *qp = cq && mr ? silent_requester(e, cq, name, 10, 2) : NULL;
	struct ibv_sge sge = { .addr = (uintptr_t)mem, .length = 64 };
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.wr.rdma = { .remote_addr = 0x10000, .rkey = 0x1234 },
	}, *bad;
	uint8_t ack[12 + 4];
	struct ibv_wc wc;
	struct timespec t0, t;
	double took = 0;
	int n = 0, acks = 0;
	struct wire w;

	if (!qp || wire_open(&w, rx_if, tx_if)) {
		fail(name, "setup: %s", strerror(errno));
		return;
	}
	sge.lkey = mr->lkey;
	/* ACKNOWLEDGE packets (opcode 0x11), MSN 0, cycling through the
	 * syndromes. */
	bth(ack, 0x11, qp->qp_num, (SQ_PSN + rel) & 0xffffff, 0, 0);
	if (ibv_post_send(qp, &wr, &bad)) {
		fail(name, "post: %s", strerror(errno));
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		n = ibv_poll_cq(cq, 1, &wc);
		clock_gettime(CLOCK_MONOTONIC, &t);
		took = (t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9;
		if (n || took > 5)
			break;
		put32(ack + 12, (uint32_t)syndromes[acks % nsyn] << 24);
		if (!wire_send(&w, w.rx_mac, w.rx_ip, ack, sizeof(ack), 0))
			acks++;
		usleep(2000);
	}
	printf("# %s: %d packets sent; the WRITE %s after %.3f s\n", name, acks,
	       n == 1 ? ibv_wc_status_str(wc.status) : "had not completed", took);
	check(name, acks > 0 && n == 1 && wc.status == IBV_WC_RETRY_EXC_ERR,
	      "the WRITE %s after %.3f s with %d packets (want RETRY_EXC_ERR within 5 s)",
	      n == 1 ? ibv_wc_status_str(wc.status) : "had not completed", took, acks);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(mr);
	munmap(mem, 4096);
	close(w.tx);
	close(w.rx);
}

/* An ACK beyond a READ whose response was lost (an honest peer's, for the
 * WRITE posted after the READ): the requester resends from the READ and
 * takes its response when it comes (C rxe's ERROR_RETRY). The requester
 * (ACK timeout 14: 67 ms, retry_cnt 7) posts a 64-byte READ (PSN SQ_PSN)
 * and a WRITE (SQ_PSN + 1); the wire then brings an ACK of SQ_PSN + 1, the
 * READ's response (64 bytes at SQ_PSN) and the ACK again: the READ must
 * complete with SUCCESS and the response's bytes, then the WRITE. Before,
 * the ACK moved the completer past the READ's PSN, its response was taken
 * for a duplicate and dropped, and the READ ended in RETRY_EXC_ERR. */
static void test_ack_past_read(struct env *e, const char *rx_if, const char *tx_if)
{
	const char *name = "ack-past-read-then-its-response";
	struct ibv_cq *cq = ibv_create_cq(e->ctx, 16, NULL, NULL, 0);
	uint8_t *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *mr = mem != MAP_FAILED ? ibv_reg_mr(e->pd, mem, 4096, LW) : NULL;
	struct ibv_qp *qp = cq && mr ? silent_requester(e, cq, name, 14, 7) : NULL;
	struct ibv_sge rsge = { .addr = (uintptr_t)mem, .length = 64 };
	struct ibv_sge wsge = { .addr = (uintptr_t)mem + 2048, .length = 64 };
	struct ibv_send_wr wwr = {
		.wr_id = 2, .sg_list = &wsge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.wr.rdma = { .remote_addr = 0x10000, .rkey = 0x1234 },
	};
	struct ibv_send_wr rwr = {
		.wr_id = 1, .sg_list = &rsge, .num_sge = 1, .opcode = IBV_WR_RDMA_READ,
		.wr.rdma = { .remote_addr = 0x20000, .rkey = 0x1234 }, .next = &wwr,
	}, *bad;
	uint8_t ack[12 + 4], resp[12 + 4 + 64];
	struct ibv_wc wc[2];
	int n = 0, i, got;
	struct wire w;

	if (!qp || wire_open(&w, rx_if, tx_if)) {
		fail(name, "setup: %s", strerror(errno));
		return;
	}
	rsge.lkey = wsge.lkey = mr->lkey;
	bth(ack, 0x11, qp->qp_num, SQ_PSN + 1, 0, 0);
	put32(ack + 12, 0x1fu << 24 | 2);
	bth(resp, 0x10, qp->qp_num, SQ_PSN, 0, 64);
	put32(resp + 12, 0x1fu << 24 | 1);
	for (i = 0; i < 64; i++)
		resp[16 + i] = 0xc0 + i;
	if (ibv_post_send(qp, &rwr, &bad)) {
		fail(name, "post: %s", strerror(errno));
		return;
	}
	usleep(5000);
	wire_send(&w, w.rx_mac, w.rx_ip, ack, sizeof(ack), 0);
	usleep(5000);
	wire_send(&w, w.rx_mac, w.rx_ip, resp, sizeof(resp), 0);
	usleep(5000);
	wire_send(&w, w.rx_mac, w.rx_ip, ack, sizeof(ack), 0);
	for (i = 0; i < 300 && n < 2; i++) {
		got = ibv_poll_cq(cq, 2 - n, wc + n);
		if (got > 0)
			n += got;
		else
			usleep(10000);
	}
	printf("# %s: %d completions: %s, %s; READ data %s\n", name, n,
	       n > 0 ? ibv_wc_status_str(wc[0].status) : "-", n > 1 ? ibv_wc_status_str(wc[1].status) : "-",
	       mem[0] == 0xc0 && mem[63] == 0xc0 + 63 ? "as sent" : "not as sent");
	check(name, n == 2 && wc[0].wr_id == 1 && wc[0].status == IBV_WC_SUCCESS && wc[1].wr_id == 2 &&
		    wc[1].status == IBV_WC_SUCCESS && mem[0] == 0xc0 && mem[63] == 0xc0 + 63,
	      "%d completions (want the READ's and the WRITE's, SUCCESS): %s, %s", n,
	      n > 0 ? ibv_wc_status_str(wc[0].status) : "-", n > 1 ? ibv_wc_status_str(wc[1].status) : "-");
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(mr);
	munmap(mem, 4096);
	close(w.tx);
	close(w.rx);
}

/* Stale ACKs alone (each refreshed the retry budget before), then ACKs
 * and NAKs in turn: ACK, NAK remote access error, RNR NAK, NAK PSN
 * sequence error (a stale NAK failed the WRITE before); the same for a
 * PSN never sent (an ACK of it completed the WRITE unsent before); an ACK
 * past a READ whose response comes after it. */
static void test_stale_ack(struct env *e, const char *rx_if, const char *tx_if)
{
	static const uint8_t acks[] = { 0x1f }, mixed[] = { 0x1f, 0x62, 0x21, 0x60 };

	stale_ack_case(e, rx_if, tx_if, "acks-retries-run-out", acks, 1, -1);
	stale_ack_case(e, rx_if, tx_if, "acks-and-naks-retries-run-out", mixed, 4, -1);
	stale_ack_case(e, rx_if, tx_if, "unsent-psn-acks-retries-run-out", acks, 1, 4096);
	stale_ack_case(e, rx_if, tx_if, "unsent-psn-acks-and-naks-retries-run-out", mixed, 4, 4096);
	test_ack_past_read(e, rx_if, tx_if);
}

/* --- memlock ----------------------------------------------------------------- */

static void test_memlock(struct env *e)
{
	struct ibv_cq *cq = ibv_create_cq(e->ctx, 16, NULL, NULL, 0);
	/* 16 MiB of send ring and as much again of its kernel copy: twice
	 * the default limit (2^20 WRs would make it gigabytes, more than the
	 * guest has, and fail for that reason alone). */
	struct ibv_qp_init_attr big = {
		.qp_type = IBV_QPT_RC, .send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 65535, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	/* About 1 MiB of send ring (4096 slots of 256 bytes) and its shadow. */
	struct ibv_qp_init_attr mid = {
		.qp_type = IBV_QPT_RC, .send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 4000, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct rlimit rl;
	struct ibv_qp *qp;
	long before, during, after;
	int ok = 1, i;

	if (!cq || getrlimit(RLIMIT_MEMLOCK, &rl)) {
		fail("setup", "%s", strerror(errno));
		return;
	}
	printf("# RLIMIT_MEMLOCK %llu kB\n", (unsigned long long)rl.rlim_cur >> 10);
	errno = 0;
	qp = ibv_create_qp(e->pd, &big);
	check("qp-over-limit-refused", !qp && errno == ENOMEM,
	      "a QP of 65535 send WRs (about 32 MiB of kernel memory, over the limit): %s",
	      qp ? "created" : strerror(errno));
	if (qp)
		ibv_destroy_qp(qp);
	before = vm_pin_kib(getpid());
	qp = ibv_create_qp(e->pd, &mid);
	during = vm_pin_kib(getpid());
	if (qp)
		ibv_destroy_qp(qp);
	after = vm_pin_kib(getpid());
	printf("# VmPin %ld kB, with a 4000-WR QP %ld kB, after it %ld kB\n", before, during, after);
	check("qp-charged-while-it-lives", qp && during - before >= 1024 && after == before,
	      "VmPin %ld kB, with the QP %ld kB, after %ld kB", before, during, after);
	/* Released every time: more than the limit in total, one at a time. */
	for (i = 0; i < 24 && ok; i++) {
		qp = ibv_create_qp(e->pd, &mid);
		ok = qp != NULL;
		if (qp)
			ibv_destroy_qp(qp);
	}
	check("charge-released-on-destroy", ok, "create number %d failed: %s", i, strerror(errno));
	ibv_destroy_cq(cq);
}

/* --- destroy ----------------------------------------------------------------- */

static struct ibv_qp *rc_qp(struct env *e, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC, .send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 128, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp(e->pd, &init);
}

/* 120 WRITEs posted at once (one doorbell), not waited for. */
static int post_burst(struct ibv_qp *qp, struct ibv_mr *mr, char *buf)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 256, .lkey = mr->lkey };
	struct ibv_send_wr wr[120], *bad;

	for (int i = 0; i < 120; i++)
		wr[i] = (struct ibv_send_wr){
			.wr_id = i, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED, .next = i < 119 ? &wr[i + 1] : NULL,
			.wr.rdma = { .remote_addr = (uintptr_t)buf + 2048, .rkey = mr->rkey },
		};
	return ibv_post_send(qp, wr, &bad);
}

struct destroyer {
	struct ibv_qp *qp;
	double took;
	int err;
};

static void *destroy_one(void *arg)
{
	struct destroyer *d = arg;
	double t0 = now();

	d->err = ibv_destroy_qp(d->qp);
	d->took = now() - t0;
	return NULL;
}

static void test_destroy(struct env *e, int rounds)
{
	char *buf = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *mr = buf != MAP_FAILED ? ibv_reg_mr(e->pd, buf, 4 * 4096, LW | RW) : NULL;
	double worst_self = 0, worst_pair = 0;
	int errs = 0, bad_rounds = 0;

	if (!mr) {
		fail("setup", "%s", strerror(errno));
		return;
	}
	for (int r = 0; r < rounds; r++) {
		struct ibv_cq *cq = ibv_create_cq(e->ctx, 256, NULL, NULL, 0);
		struct ibv_cq *cq2 = ibv_create_cq(e->ctx, 256, NULL, NULL, 0);
		struct ibv_qp *self = rc_qp(e, cq), *kicker = rc_qp(e, cq2);
		struct destroyer d1 = {}, d2 = {};
		pthread_t t1, t2;

		/* self is connected to itself; kicker to self, with an ACK
		 * timeout of 8 us: no ACK ever comes back (self acknowledges
		 * itself), so kicker resends its burst every tick from its
		 * work, which runs self's engine right after its own (the
		 * packets went to self). self is destroyed meanwhile: its
		 * engine, run by kicker's work, sends self ACKs it must not
		 * hold on to. */
		if (!self || !kicker || pair_to_init(self) || pair_to_init(kicker) ||
		    pair_to_rts(self, &e->gid, e->gid_index, self->qp_num) ||
		    pair_to_rts_timeout(kicker, &e->gid, e->gid_index, self->qp_num, 1) ||
		    post_burst(kicker, mr, buf + 4096)) {
			fail("setup", "round %d: %s", r, strerror(errno));
			return;
		}
		usleep((r % 5) * 1000);
		d1.qp = self;
		destroy_one(&d1);
		d2.qp = kicker;
		destroy_one(&d2);
		errs += !!d1.err + !!d2.err;
		if (d1.took > worst_self)
			worst_self = d1.took;
		if (d1.took > 10 || d2.took > 10)
			bad_rounds++;

		/* Two QPs streaming to each other, destroyed together while
		 * their engines still work through what was posted. */
		{
			struct ibv_qp *x = rc_qp(e, cq), *y = rc_qp(e, cq2);

			if (!x || !y || pair_to_init(x) || pair_to_init(y) ||
			    pair_to_rts(x, &e->gid, e->gid_index, y->qp_num) ||
			    pair_to_rts(y, &e->gid, e->gid_index, x->qp_num) ||
			    post_burst(x, mr, buf) || post_burst(y, mr, buf + 4096)) {
				fail("setup", "pair in round %d: %s", r, strerror(errno));
				return;
			}
			d1 = (struct destroyer){ .qp = x };
			d2 = (struct destroyer){ .qp = y };
			pthread_create(&t1, NULL, destroy_one, &d1);
			pthread_create(&t2, NULL, destroy_one, &d2);
			pthread_join(t1, NULL);
			pthread_join(t2, NULL);
			errs += !!d1.err + !!d2.err;
			if (d1.took > worst_pair)
				worst_pair = d1.took;
			if (d2.took > worst_pair)
				worst_pair = d2.took;
			if (d1.took > 10 || d2.took > 10)
				bad_rounds++;
		}
		ibv_destroy_cq(cq);
		ibv_destroy_cq(cq2);
	}
	printf("# %d rounds: slowest destroy %.3f s (self-connected), %.3f s (pair)\n", rounds, worst_self,
	       worst_pair);
	check("self-connected-and-pairs-within-10s", !bad_rounds && !errs,
	      "%d rounds over 10 s, %d destroy errors (slowest %.1f s, %.1f s)", bad_rounds, errs, worst_self,
	      worst_pair);
	ibv_dereg_mr(mr);
}

int main(int argc, char **argv)
{
	struct env e = {};
	const char *test = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	page = sysconf(_SC_PAGESIZE);
	if (argc < 4) {
		fprintf(stderr, "usage: %s TEST DEV GID_INDEX [ARGS]\n", argv[0]);
		return 2;
	}
	e.ctx = open_dev(argv[2]);
	e.gid_index = atoi(argv[3]);
	if (!e.ctx || ibv_query_gid(e.ctx, 1, e.gid_index, &e.gid) || !(e.pd = ibv_alloc_pd(e.ctx))) {
		fail("setup", "cannot open %s: %s", argv[2], strerror(errno));
		return 1;
	}
	if (!strcmp(test, "mw") && argc > 4)
		test_mw(&e, argv[4]);
	else if (!strcmp(test, "qp-reuse")) {
		test_qp_reuse(&e, argc > 4 ? atol(argv[4]) : 5000);
		test_peer_reuse(&e, argc > 4 ? atol(argv[4]) : 5000);
	}
	else if (!strcmp(test, "uc-access"))
		test_uc_access(&e);
	else if (!strcmp(test, "cq-events"))
		test_cq_events(&e);
	else if (!strcmp(test, "resize-fault"))
		test_resize_fault(&e);
	else if (!strcmp(test, "big-mr"))
		test_big_mr(&e);
	else if (!strcmp(test, "mcast-icrc") && argc > 5)
		test_mcast_icrc(&e, argv[2], argv[4], argv[5]);
	else if (!strcmp(test, "read-mtu") && argc > 5)
		test_read_mtu(&e, argv[4], argv[5]);
	else if (!strcmp(test, "stale-ack") && argc > 5)
		test_stale_ack(&e, argv[4], argv[5]);
	else if (!strcmp(test, "memlock"))
		test_memlock(&e);
	else if (!strcmp(test, "destroy"))
		test_destroy(&e, argc > 4 ? atoi(argv[4]) : 50);
	else {
		fprintf(stderr, "unknown test or missing arguments: %s\n", test);
		return 2;
	}
	ibv_dealloc_pd(e.pd);
	ibv_close_device(e.ctx);
	printf("DONE\n");
	return failures ? 1 : 0;
}
