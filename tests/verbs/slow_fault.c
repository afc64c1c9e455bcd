// SPDX-License-Identifier: GPL-2.0
/*
 * A QP whose memory faults slowly must not stall the QPs that send to it.
 *
 *   slow_fault DEV GID_INDEX
 *
 * Needs tests/kverbs' module loaded with peer=1 dev=DEV: its file
 * /sys/kernel/debug/rrxe_kverbs/slowfault maps memory whose every fault
 * waits until "release" is written there (or 10 s pass) and then fails,
 * as a FUSE file whose server never answers would. Any user may register
 * such memory for on-demand paging (ODP) and connect a QP to another
 * user's QP of the same device.
 *
 * Two processes, two users of the device. The attacker (a child) has QP
 * U with two receives posted: one into pinned memory, then one into an
 * ODP MR over that file; the victim (the parent) has QP V connected to
 * U. V's first SEND lands in the first (the control, first-send-completes;
 * V now waits on its QP, so its next doorbell runs its engines, and their
 * loopback chain, in the system call). V's second SEND faults. The fault
 * must wait in U's own work, never in V's system call or work (a loopback
 * run of another QP), and hold nothing of V's:
 *   first-send-completes  (the control) V's first SEND completes;
 *   post-send-returns   ibv_post_send of the second returns within 2 s
 *                       (it waited in U's fault until the fault gave up);
 *   fault-entered       the fault was entered (U's work took the SEND:
 *                       else the path under test was not taken);
 *   query-while-faulting  `rdma res show qp` (any user may run it; it
 *                       queries every QP, U's too) returns within 3 s
 *                       (query_qp took the engine mutex, which U's
 *                       faulting run holds);
 *   others-still-run    while U waits in its fault, another pair of the
 *                       victim's completes a SEND;
 *   victim-destroy-prompt  V, its SEND outstanding, is destroyed within
 *                       3 s while U still waits (V's packet, held by U's
 *                       run, held V);
 *   after-release       (the attacker) after "release", U's receive
 *                       completes (in error: the fault failed);
 *   destroy-prompt      (the attacker) then U is destroyed within 3 s.
 * Then the attacker's QP U2 SENDs to the victim's V2 from pinned memory
 * and at once from slow memory: U2's own requester faults just after it
 * sent to V2.
 *   attacker-send-lands    (the control) V2's receive completes;
 *   attacker-fault-entered the fault was entered;
 *   victim-destroy-while-attacker-faults  V2 is destroyed within 3 s (a
 *                       run parked the QP it sent to in its kick slot
 *                       until it ended: V2's destroy waited for U2's
 *                       fault).
 * (One process would not do where the memory's fault keeps the process's
 * mmap lock while it waits, as it does when it may not be retried: then
 * librxe's destroy, which unmaps the rings, waits for it.)
 *
 *   slow_fault DEV GID_INDEX users N
 *
 * Two unprivileged users of distinct uids (children of root, which keeps
 * the slow file). The attacker (uid 60001) makes N RC pairs in a PD with
 * an ODP MR over the slow file, each SENDing into a receive in slow
 * memory, so that more QPs than a workqueue runs at once wait for faults.
 * The victim (uid 60002), while the faults wait:
 *   attacker-faults-entered  (the control) 16 faults entered;
 *   fresh-pair-send-prompt  a SEND on a fresh RC pair of its own
 *                       completes within 1 s (its QPs' work waited behind
 *                       the attacker's faults on one shared workqueue);
 * then the attacker itself, its faults still waiting (no QP's run waits
 * in a fault: a fault has a work item of its own), the three at once:
 *   owner-pair-send-prompt  a SEND on a fresh RC pair of plain memory
 *                       completes within 1 s (its work waited behind its
 *                       faulting QPs' runs on the user's workqueue);
 *   owner-modify-prompt  modifying a faulting QP (the second pair's
 *                       receiver) to ERR returns within 1 s (modify_qp
 *                       waited for the engine mutex its faulting run held);
 *   owner-flush-prompt  and its receive completes, flushed, within 1 s
 *                       of the modify;
 *   owner-destroy-prompt  destroying another (the first pair's receiver;
 *                       the kernel's destroy_qp alone, written on the
 *                       command fd: librxe would then unmap the rings,
 *                       which may wait for the fault's hold on the
 *                       process's mmap lock) returns within 1 s (it waited for the
 *                       QP's faulting run);
 * then, once the slow file is released:
 *   attacker-qps-complete  the attacker's other N - 1 receives complete
 *                       (in error: their faults failed; the flushed one
 *                       counts).
 *
 *   slow_fault DEV GID_INDEX root N
 *
 * The same checks with both processes root (privileged, CAP_SYS_RESOURCE:
 * charged nothing, no workqueues of a user's own): the faults of such
 * contexts' QPs must not hold the slots of the workqueue that all their
 * QPs' work shares (the module's `rrxe`), so the victim's fresh pair and
 * the attacker's own checks are as prompt as between two users.
 *   slow_fault DEV GID_INDEX unplug N
 *
 * The device goes while a user holds it and its faults wait. The attacker
 * (uid 60001) makes N RC pairs whose receives fault on the slow file, as
 * in `users`, and a pair of plain memory with one receive completed and
 * not polled; root then deletes DEV (`rdma link delete`):
 *   attacker-faults-entered  (the control) 16 faults entered;
 *   owner-maps-while-faulting  the attacker maps and unmaps memory within
 *                       1 s (a fault held its mmap lock while it waited:
 *                       a thread waiting to map behind it then held
 *                       ib_core's disassociation, which takes that lock);
 *   unplug-prompt       the delete completes within 5 s while the faults
 *                       still wait (ib_uverbs waited for every process to
 *                       close the device, and the device's teardown for
 *                       the user's faults);
 *   fatal-event         the attacker gets IBV_EVENT_DEVICE_FATAL;
 *   rings-kept          its CQ still gives the completion it never
 *                       polled (the rings stay mapped, the process's own
 *                       memory now: no page of them is freed or
 *                       replaced under it);
 *   verbs-fail          ibv_post_send and ibv_alloc_pd fail;
 * then, once the slow file is released:
 *   destroy-after-unplug  destroying every object and closing the device
 *                       succeed;
 *   attacker-exits-clean  the attacker exits 0.
 *
 * Prints one line per check, "PASS name" or "FAIL name: why", and "DONE"
 * last; exits non-zero if a check failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
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

#include "check.h"
#include "raw_cmd.h"
#include "rc_pair.h"
#include "users.h"

#define SLOW "/sys/kernel/debug/rrxe_kverbs/slowfault"

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* Faults entered on the slow file so far, or -1. */
static int entered(int fd)
{
	char line[32] = {};
	int n = -1;

	if (pread(fd, line, sizeof(line) - 1, 0) <= 0 || sscanf(line, "%d", &n) != 1)
		return -1;
	return n;
}

static int say(int fd, const char *what)
{
	return pwrite(fd, what, strlen(what), 0) == (ssize_t)strlen(what) ? 0 : -1;
}

/* The next completion on cq within `secs`: its status, or ST_*. */
static int wait_wc(struct ibv_cq *cq, double secs)
{
	double end = now() + secs;
	struct ibv_wc wc;

	while (now() < end) {
		int n = ibv_poll_cq(cq, 1, &wc);

		if (n < 0)
			return ST_POST_FAILED;
		if (n)
			return wc.status;
		usleep(1000);
	}
	return ST_TIMEOUT;
}

/* One 32-bit word over a pipe; 0 on success. */
static int put(int fd, uint32_t v)
{
	return write(fd, &v, sizeof(v)) == sizeof(v) ? 0 : -1;
}

static int get(int fd, uint32_t *v)
{
	return read(fd, v, sizeof(*v)) == sizeof(*v) ? 0 : -1;
}

static const struct ibv_qp_init_attr qp_init = {
	.qp_type = IBV_QPT_RC, .sq_sig_all = 1,
	.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
};

/*
 * The attacker: QP U, a receive into slow memory. Sends U's number on
 * `to`, reads V's on `from`, connects, posts the receive, says ready (1);
 * then waits for the victim's word that the fault was released (2).
 */
static int attacker(const char *dev, int gid_index, int fd, int to, int from)
{
	struct ibv_qp_init_attr init = qp_init;
	long page = sysconf(_SC_PAGESIZE);
	struct ibv_context *ctx;
	struct ibv_pd *pd = NULL;
	struct ibv_cq *cq = NULL;
	struct ibv_mr *mr = NULL, *pmr = NULL;
	struct ibv_qp *u = NULL;
	struct ibv_sge r, pr;
	struct ibv_recv_wr rwr, prw, *bad;
	struct ibv_wc wc;
	union ibv_gid gid;
	uint8_t *slow, *plain = aligned_alloc(page, page);
	uint32_t vqpn, word;
	double t0, t;
	int err, st;

	ctx = open_dev_gid(dev, gid_index, &gid);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	slow = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (cq && slow != MAP_FAILED && plain)
		pmr = ibv_reg_mr(pd, plain, page, IBV_ACCESS_LOCAL_WRITE);
	if (pmr)
		mr = ibv_reg_mr(pd, slow, 2 * page,
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_ON_DEMAND);
	init.send_cq = init.recv_cq = cq;
	u = mr ? ibv_create_qp(pd, &init) : NULL;
	if (!u || put(to, u->qp_num) || get(from, &vqpn)) {
		fail("setup", "attacker: the device, an MR on demand over " SLOW " or QP U: %s", strerror(errno));
		put(to, 0);
		return 1;
	}
	pr = (struct ibv_sge){ .addr = (uintptr_t)plain, .length = 64, .lkey = pmr->lkey };
	prw = (struct ibv_recv_wr){ .wr_id = 1, .sg_list = &pr, .num_sge = 1 };
	r = (struct ibv_sge){ .addr = (uintptr_t)slow + 100, .length = 64, .lkey = mr->lkey };
	rwr = (struct ibv_recv_wr){ .wr_id = 2, .sg_list = &r, .num_sge = 1 };
	err = pair_to_init(u);
	err = err ? err : ibv_post_recv(u, &prw, &bad);
	err = err ? err : ibv_post_recv(u, &rwr, &bad);
	err = err ? err : pair_to_rts(u, &gid, gid_index, vqpn);
	if (err || put(to, 1)) {
		fail("setup", "attacker: connect U: %s", strerror(err));
		return 1;
	}
	/* (Nothing here maps or unmaps memory until the release: the fault
	 * holds this process's mmap lock for reading.) */
	if (get(from, &word) || word != 2) {
		fail("after-release", "the victim did not get that far");
		return 1;
	}
	/* The first receive's completion (the control), then the slow one's. */
	st = ST_TIMEOUT;
	for (t0 = now(); now() - t0 < 15;) {
		int n = ibv_poll_cq(cq, 1, &wc);

		if (n > 0 && wc.wr_id == 2) {
			st = wc.status;
			break;
		}
		if (n == 0)
			usleep(1000);
	}
	check("after-release", st != ST_TIMEOUT, "U's slow receive: %s", st_str(st));
	printf("# U's slow receive completed with %s\n", st_str(st));
	t0 = now();
	err = ibv_destroy_qp(u) ? errno : 0;
	t = now() - t0;
	check("destroy-prompt", !err && t < 3, "ibv_destroy_qp(U): %s after %.1f s", strerror(err), t);

	/* Second round: U2 SENDs to the victim's V2 from pinned memory, then
	 * from slow memory (its own requester faults, after the first SEND
	 * was looped back to V2). */
	u = ibv_create_qp(pd, &init);
	if (!u || put(to, u->qp_num) || get(from, &vqpn)) {
		fail("attacker-send-lands", "attacker: QP U2: %s", strerror(errno));
		put(to, 0);
		return 1;
	}
	err = pair_to_init(u);
	err = err ? err : pair_to_rts(u, &gid, gid_index, vqpn);
	if (err || put(to, 1) || get(from, &word) || word != 5) {
		fail("attacker-send-lands", "attacker: connect U2: %s", strerror(err));
		return 1;
	}
	{
		struct ibv_sge s2 = { .addr = (uintptr_t)slow + 200, .length = 64, .lkey = mr->lkey };
		struct ibv_sge s1 = { .addr = (uintptr_t)plain, .length = 64, .lkey = pmr->lkey };
		struct ibv_send_wr w2 = { .wr_id = 12, .sg_list = &s2, .num_sge = 1, .opcode = IBV_WR_SEND };
		struct ibv_send_wr w1 = {
			.wr_id = 11, .sg_list = &s1, .num_sge = 1, .opcode = IBV_WR_SEND, .next = &w2,
		};
		struct ibv_send_wr *sbad;

		memset(plain, 0x5a, 64);
		err = ibv_post_send(u, &w1, &sbad);
	}
	if (err || get(from, &word) || word != 6) {
		fail("attacker-send-lands", "attacker: post the SENDs: %s", strerror(err));
		return 1;
	}
	wait_wc(cq, 5);
	ibv_destroy_qp(u);
	ibv_dereg_mr(mr);
	ibv_dereg_mr(pmr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	munmap(slow, 2 * page);
	return failures ? 1 : 0;
}

/* Milliseconds since t0, or UINT32_MAX if !ok. */
static uint32_t ms_since(double t0, int ok)
{
	return ok ? (uint32_t)((now() - t0) * 1000) : UINT32_MAX;
}

/*
 * users: the attacker's checks on its own QPs while their faults wait
 * (see the top), all three at once, so that each meets the faults still
 * waiting: a fresh pair's SEND (here), the modify of `m` to ERR and its
 * receive's flush, and the destroy of `d` (each in a thread made before
 * the faults began). Into ms[]: the four times. `got` counts the
 * receives of `cq` (the faulting QPs') taken meanwhile, but `d`'s. Maps
 * no memory, prints nothing.
 */
struct owner_job {
	struct ibv_qp *m, *d;
	struct ibv_cq *cq;
	int go[2], done[2];
	uint32_t ms[2], got;
};

static void *modify_job(void *arg)
{
	struct owner_job *j = arg;
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	struct ibv_wc wc;
	uint32_t w;
	int err, flushed = 0;
	double t0;

	if (get(j->go[0], &w))
		return NULL;
	t0 = now();
	err = ibv_modify_qp(j->m, &attr, IBV_QP_STATE);
	j->ms[0] = ms_since(t0, !err);
	while (!err && !flushed && now() - t0 < 15) {
		int k = ibv_poll_cq(j->cq, 1, &wc);

		if (k > 0 && wc.wr_id >= 100 && wc.qp_num != j->d->qp_num)
			j->got++;
		if (k > 0 && wc.qp_num == j->m->qp_num && wc.status == IBV_WC_WR_FLUSH_ERR)
			flushed = 1;
		else if (k == 0)
			usleep(1000);
	}
	j->ms[1] = ms_since(t0, flushed);
	put(j->done[1], 1);
	for (;;)
		pause();
}

static void *destroy_job(void *arg)
{
	struct owner_job *j = arg;
	uint32_t w;
	double t0;
	int err;

	if (get(j->go[0], &w))
		return NULL;
	t0 = now();
	err = raw_destroy_qp(j->d->context, j->d->handle);
	put(j->done[1], ms_since(t0, !err));
	for (;;)
		pause();
}

/* Starts the two jobs' threads, waiting on their pipes; 0 or -1. */
static int owner_jobs(struct owner_job *mj, struct owner_job *dj)
{
	pthread_t t;

	return pipe(mj->go) || pipe(mj->done) || pipe(dj->go) || pipe(dj->done) ||
	       pthread_create(&t, NULL, modify_job, mj) || pthread_create(&t, NULL, destroy_job, dj) ? -1 : 0;
}

static void owner_checks(struct pair *own, uint8_t *buf, struct ibv_mr *bmr, struct owner_job *mj,
			 struct owner_job *dj, uint32_t ms[4], uint32_t *got)
{
	struct ibv_sge ps = { .addr = (uintptr_t)buf + 1024, .length = 32, .lkey = bmr->lkey };
	struct ibv_sge pr = { .addr = (uintptr_t)buf + 2048, .length = 32, .lkey = bmr->lkey };
	struct ibv_recv_wr prw = { .wr_id = 4, .sg_list = &pr, .num_sge = 1 }, *rbad;
	struct ibv_send_wr psw = { .wr_id = 3, .sg_list = &ps, .num_sge = 1, .opcode = IBV_WR_SEND }, *bad;
	uint32_t w;
	int err, st;
	double t0;

	put(mj->go[1], 1);
	put(dj->go[1], 1);
	t0 = now();
	err = ibv_post_recv(own->resp, &prw, &rbad);
	err = err ? err : ibv_post_send(own->req, &psw, &bad);
	st = err ? ST_POST_FAILED : wait_wc(own->cq, 15);
	ms[0] = ms_since(t0, st == IBV_WC_SUCCESS);
	if (get(mj->done[0], &w)) {
		ms[1] = ms[2] = UINT32_MAX;
	} else {
		ms[1] = mj->ms[0];
		ms[2] = mj->ms[1];
		*got += mj->got;
	}
	if (get(dj->done[0], &ms[3]))
		ms[3] = UINT32_MAX;
}

/*
 * users: the attacker (uid 60001, or root): N pairs whose receives fault, and a
 * pair of plain memory. Starts the SENDs and says ready (1) on `to`; on
 * the word 7 on `from`, runs its own checks and sends their four times;
 * after the release word (2), counts its receives' completions and sends
 * the count.
 */
static int users_attacker(const char *dev, int gid_index, int fd, int n, uid_t uid, int to, int from)
{
	struct ibv_qp_init_attr init = qp_init;
	long page = sysconf(_SC_PAGESIZE);
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd = NULL, *pd2 = NULL;
	struct ibv_cq *cq = NULL;
	struct ibv_mr *mr = NULL, *pmr = NULL, *pmr2 = NULL;
	struct ibv_qp *s[64] = {}, *u[64] = {};
	uint8_t *slow = MAP_FAILED, *plain = aligned_alloc(page, page), *plain2 = aligned_alloc(page, page);
	union ibv_gid gid;
	uint32_t word = 0, got = 0, ms[4];
	struct ibv_wc wc;
	struct owner_job mj = {}, dj = {};
	struct pair own;
	double t0;
	int err = -1, i;

	if (become_user(uid, RLIM_INFINITY, RLIM_INFINITY))
		return put(to, 0), 1;
	ctx = open_dev_gid(dev, gid_index, &gid);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	pd2 = pd ? ibv_alloc_pd(ctx) : NULL;
	cq = pd2 ? ibv_create_cq(ctx, 4 * n + 16, NULL, NULL, 0) : NULL;
	if (cq)
		slow = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (slow != MAP_FAILED && plain && plain2) {
		pmr = ibv_reg_mr(pd, plain, page, IBV_ACCESS_LOCAL_WRITE);
		pmr2 = ibv_reg_mr(pd2, plain2, page, IBV_ACCESS_LOCAL_WRITE);
		mr = ibv_reg_mr(pd, slow, 2 * page,
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_ON_DEMAND);
	}
	init.send_cq = init.recv_cq = cq;
	for (i = 0; mr && pmr && i < n; i++) {
		s[i] = ibv_create_qp(pd, &init);
		u[i] = s[i] ? ibv_create_qp(pd, &init) : NULL;
		if (!u[i])
			break;
		err = pair_to_init(s[i]) || pair_to_init(u[i]);
		if (!err) {
			struct ibv_sge r = { .addr = (uintptr_t)slow + 64 * i, .length = 64, .lkey = mr->lkey };
			struct ibv_recv_wr rw = { .wr_id = 100 + i, .sg_list = &r, .num_sge = 1 }, *rbad;

			err = ibv_post_recv(u[i], &rw, &rbad);
		}
		err = err ? err : pair_to_rts(s[i], &gid, gid_index, u[i]->qp_num);
		err = err ? err : pair_to_rts(u[i], &gid, gid_index, s[i]->qp_num);
		if (err)
			break;
	}
	/* (Made now: while the faults wait, nothing here may map memory.) */
	mj.cq = dj.cq = cq;
	mj.m = dj.m = u[1];
	mj.d = dj.d = u[0];
	if (i < n || n < 2 || !pmr2 || pair_open(&own, ctx, &gid, gid_index, pd2, pd2, 1, "setup") ||
	    owner_jobs(&mj, &dj)) {
		fail("setup", "attacker: its QPs, MRs or the slow file: %s", strerror(errno));
		put(to, 0);
		return 1;
	}
	for (i = 0; !err && i < n; i++) {
		struct ibv_sge sg = { .addr = (uintptr_t)plain, .length = 64, .lkey = pmr->lkey };
		struct ibv_send_wr sw = { .wr_id = i, .sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_SEND }, *sbad;

		err = ibv_post_send(s[i], &sw, &sbad);
	}
	if (err || put(to, 1)) {
		fail("setup", "attacker: post the SENDs: %s", strerror(err));
		return 1;
	}
	/* (Nothing here maps or unmaps memory, nor prints, until the release:
	 * the faults hold this process's mmap lock for reading.) */
	if (get(from, &word) || word != 7)
		return 1;
	owner_checks(&own, plain2, pmr2, &mj, &dj, ms, &got);
	for (i = 0; i < 4; i++)
		put(to, ms[i]);
	if (get(from, &word) || word != 2)
		return 1;
	for (t0 = now(); got < (uint32_t)n - 1 && now() - t0 < 30;) {
		int k = ibv_poll_cq(cq, 1, &wc);

		if (k > 0 && wc.wr_id >= 100 && wc.qp_num != mj.d->qp_num)
			got++;
		else if (k == 0)
			usleep(1000);
	}
	put(to, got);
	/* (u[0]'s kernel object is gone: its handle is not used again.) */
	for (i = 0; i < n; i++) {
		ibv_destroy_qp(s[i]);
		if (i)
			ibv_destroy_qp(u[i]);
	}
	return 0;
}

/*
 * users: the victim (uid 60002, or root): a fresh pair, then ready (1) on `to`; on
 * the go word (3) on `from` the timed SEND; then 4.
 */
static int users_victim(const char *dev, int gid_index, uid_t uid, int to, int from)
{
	long page = sysconf(_SC_PAGESIZE);
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd = NULL;
	struct ibv_mr *mr = NULL;
	struct pair p;
	union ibv_gid gid;
	uint8_t *buf = aligned_alloc(page, page);
	uint32_t word = 0;
	double t0, t;
	int err, st;

	if (become_user(uid, RLIM_INFINITY, RLIM_INFINITY))
		return put(to, 0), 1;
	ctx = open_dev_gid(dev, gid_index, &gid);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	mr = pd && buf ? ibv_reg_mr(pd, buf, page, IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!mr || pair_open(&p, ctx, &gid, gid_index, pd, pd, 1, "setup") || put(to, 1)) {
		fail("setup", "victim: its QPs: %s", strerror(errno));
		put(to, 0);
		return 1;
	}
	if (get(from, &word) || word != 3)
		return 1;
	{
		struct ibv_sge ps = { .addr = (uintptr_t)buf + 1024, .length = 32, .lkey = mr->lkey };
		struct ibv_sge pr = { .addr = (uintptr_t)buf + 2048, .length = 32, .lkey = mr->lkey };
		struct ibv_recv_wr prw = { .wr_id = 4, .sg_list = &pr, .num_sge = 1 }, *rbad;
		struct ibv_send_wr psw = { .wr_id = 3, .sg_list = &ps, .num_sge = 1, .opcode = IBV_WR_SEND }, *bad;

		t0 = now();
		err = ibv_post_recv(p.resp, &prw, &rbad);
		err = err ? err : ibv_post_send(p.req, &psw, &bad);
		st = err ? ST_POST_FAILED : wait_wc(p.cq, 15);
		t = now() - t0;
		check("fresh-pair-send-prompt", st == IBV_WC_SUCCESS && t < 1,
		      "a fresh pair's SEND: %s after %.1f s", st_str(st), t);
	}
	pair_close(&p);
	put(to, 4);
	return 0;
}

/* users: has the attacker run its own checks (word 7), and judges them. */
static void owner_report(int up, int down)
{
	static const char *const name[4] = {
		"owner-pair-send-prompt", "owner-modify-prompt", "owner-flush-prompt", "owner-destroy-prompt",
	};
	uint32_t ms[4];
	int i;

	if (put(down, 7)) {
		fail(name[0], "the attacker is gone");
		return;
	}
	for (i = 0; i < 4; i++) {
		if (get(up, &ms[i]))
			ms[i] = UINT32_MAX;
		if (ms[i] == UINT32_MAX)
			fail(name[i], "failed, or no answer");
		else
			check(name[i], ms[i] < 1000, "after %u ms", ms[i]);
	}
}

/*
 * users: root keeps the slow file and passes the words between the two,
 * the attacker of uid `ua`, the victim of uid `uv`.
 */
static int users(const char *dev, int gid_index, int fd, int n, uid_t ua, uid_t uv)
{
	int a_up[2], a_down[2], v_up[2], v_down[2], k, status;
	uint32_t word = 0, got = 0;
	pid_t a, v;
	double t0;

	n = n < 1 ? 1 : n > 64 ? 64 : n;
	if (pipe(a_up) || pipe(a_down) || pipe(v_up) || pipe(v_down))
		return fail("setup", "pipe: %s", strerror(errno)), 1;
	fflush(stdout);
	a = fork();
	if (a == 0)
		_exit(users_attacker(dev, gid_index, fd, n, ua, a_up[1], a_down[0]));
	v = fork();
	if (v == 0)
		_exit(users_victim(dev, gid_index, uv, v_up[1], v_down[0]));
	if (get(a_up[0], &word) || word != 1 || get(v_up[0], &word) || word != 1) {
		fail("setup", "the attacker's or the victim's QPs");
	} else {
		t0 = now();
		while ((k = entered(fd)) < 16 && now() - t0 < 8)
			usleep(10000);
		check("attacker-faults-entered", k >= 16, "%d faults entered on the slow file", k);
		printf("# users: %d faults entered, %.1f s after the attacker posted\n", k, now() - t0);
		if (put(v_down[1], 3) || get(v_up[0], &word) || word != 4)
			fail("victim", "the victim did not finish");
		owner_report(a_up[0], a_down[1]);
		say(fd, "release");
		if (put(a_down[1], 2) || get(a_up[0], &got))
			got = 0;
		check("attacker-qps-complete", got == (uint32_t)n - 1,
		      "%u of the attacker's %d receives left completed", got, n - 1);
	}
	say(fd, "release");
	kill(a, SIGKILL);
	kill(v, SIGKILL);
	waitpid(a, &status, 0);
	waitpid(v, &status, 0);
	return failures ? 1 : 0;
}

/* unplug: whether async event `type` comes within `secs`. */
static int async_event(struct ibv_context *ctx, int type, double secs)
{
	struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	double end = now() + secs;
	int t;

	while (now() < end) {
		if (poll(&p, 1, (int)((end - now()) * 1000) + 1) != 1 || ibv_get_async_event(ctx, &ev))
			return 0;
		t = ev.event_type;
		ibv_ack_async_event(&ev);
		if (t == type)
			return 1;
	}
	return 0;
}

/*
 * unplug: the attacker (uid 60001). N pairs faulting on the slow file and
 * a plain pair with a receive completion left in its CQ; says ready (1)
 * on `to`. On the word 9 maps and unmaps a page and sends how many ms
 * that took. On the word 8 (the device was deleted) runs the checks
 * that need no unmap and sends a bit per check (fatal-event,
 * rings-kept, verbs-fail); on the release word (2) destroys everything
 * and sends whether that worked.
 */
static int unplug_attacker(const char *dev, int gid_index, int fd, int n, int to, int from)
{
	struct ibv_qp_init_attr init = qp_init;
	long page = sysconf(_SC_PAGESIZE);
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd = NULL;
	struct ibv_cq *cq = NULL;
	struct ibv_mr *mr = NULL, *pmr = NULL;
	struct ibv_qp *s[64] = {}, *u[64] = {};
	uint8_t *slow = MAP_FAILED, *plain = aligned_alloc(page, page);
	union ibv_gid gid;
	uint32_t word = 0, bits = 0;
	struct ibv_wc wc;
	struct pair own = {};
	int err = -1, i, bad = 0;

	if (become_user(60001, RLIM_INFINITY, RLIM_INFINITY))
		return put(to, 0), 1;
	ctx = open_dev_gid(dev, gid_index, &gid);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	cq = pd ? ibv_create_cq(ctx, 4 * n + 16, NULL, NULL, 0) : NULL;
	if (cq)
		slow = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (slow != MAP_FAILED && plain) {
		pmr = ibv_reg_mr(pd, plain, page, IBV_ACCESS_LOCAL_WRITE);
		mr = ibv_reg_mr(pd, slow, 2 * page,
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_ON_DEMAND);
	}
	init.send_cq = init.recv_cq = cq;
	for (i = 0; mr && pmr && i < n; i++) {
		struct ibv_sge r = { .addr = (uintptr_t)slow + 64 * i, .length = 64, .lkey = mr->lkey };
		struct ibv_recv_wr rw = { .wr_id = 100 + i, .sg_list = &r, .num_sge = 1 }, *rbad;

		s[i] = ibv_create_qp(pd, &init);
		u[i] = s[i] ? ibv_create_qp(pd, &init) : NULL;
		err = !u[i] || pair_to_init(s[i]) || pair_to_init(u[i]);
		err = err ? err : ibv_post_recv(u[i], &rw, &rbad);
		err = err ? err : pair_to_rts(s[i], &gid, gid_index, u[i]->qp_num);
		err = err ? err : pair_to_rts(u[i], &gid, gid_index, s[i]->qp_num);
		if (err)
			break;
	}
	if (i < n || pair_open(&own, ctx, &gid, gid_index, pd, pd, 1, "setup")) {
		fail("setup", "attacker: its QPs, MRs or the slow file: %s", strerror(errno));
		put(to, 0);
		return 1;
	}
	/* The plain pair: a SEND, its receive's completion left in own.rcq. */
	{
		struct ibv_sge sg = { .addr = (uintptr_t)plain, .length = 32, .lkey = pmr->lkey };
		struct ibv_sge rg = { .addr = (uintptr_t)plain + 1024, .length = 32, .lkey = pmr->lkey };
		struct ibv_recv_wr rw = { .wr_id = 1, .sg_list = &rg, .num_sge = 1 }, *rbad;
		struct ibv_send_wr sw = { .wr_id = 2, .sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_SEND }, *sbad;

		err = ibv_post_recv(own.resp, &rw, &rbad);
		err = err ? err : ibv_post_send(own.req, &sw, &sbad);
		if (err || wait_wc(own.cq, 5) != IBV_WC_SUCCESS) {
			fail("setup", "attacker: the plain pair's SEND: %s", strerror(err));
			put(to, 0);
			return 1;
		}
	}
	for (i = 0; !err && i < n; i++) {
		struct ibv_sge sg = { .addr = (uintptr_t)plain, .length = 64, .lkey = pmr->lkey };
		struct ibv_send_wr sw = { .wr_id = i, .sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_SEND }, *sbad;

		err = ibv_post_send(s[i], &sw, &sbad);
	}
	if (err || put(to, 1)) {
		fail("setup", "attacker: post the SENDs: %s", strerror(err));
		return 1;
	}
	if (get(from, &word) || word != 9)
		return 1;
	{
		double t0 = now();
		void *p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p != MAP_FAILED)
			munmap(p, page);
		if (put(to, p == MAP_FAILED ? UINT32_MAX : ms_since(t0, 1)))
			return 1;
	}
	if (get(from, &word) || word != 8)
		return 1;
	if (async_event(ctx, IBV_EVENT_DEVICE_FATAL, 10))
		bits |= 1;
	if (ibv_poll_cq(own.rcq, 1, &wc) == 1 && wc.wr_id == 1 && wc.status == IBV_WC_SUCCESS)
		bits |= 2;
	{
		struct ibv_sge sg = { .addr = (uintptr_t)plain, .length = 32, .lkey = pmr->lkey };
		struct ibv_send_wr sw = { .wr_id = 3, .sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_SEND }, *sbad;

		if (ibv_post_send(own.req, &sw, &sbad) && !ibv_alloc_pd(ctx))
			bits |= 4;
	}
	if (put(to, bits) || get(from, &word) || word != 2)
		return 1;
	for (i = 0; i < n; i++)
		bad |= ibv_destroy_qp(s[i]) | ibv_destroy_qp(u[i]);
	bad |= ibv_destroy_qp(own.req) | ibv_destroy_qp(own.resp);
	bad |= ibv_destroy_cq(own.cq) | ibv_destroy_cq(own.rcq) | ibv_destroy_cq(cq);
	bad |= ibv_dereg_mr(mr) | ibv_dereg_mr(pmr);
	bad |= ibv_dealloc_pd(pd) | ibv_close_device(ctx);
	munmap(slow, 2 * page);
	put(to, bad ? 0 : 1);
	return 0;
}

/* unplug: root deletes `dev` while the attacker's faults wait. */
static int unplug(const char *dev, int gid_index, int fd, int n)
{
	static const char *const name[3] = { "fatal-event", "rings-kept", "verbs-fail" };
	int up[2], down[2], k, status, done = 0, i;
	uint32_t word = 0;
	pid_t a, del;
	double t0, t = 0;

	n = n < 1 ? 1 : n > 64 ? 64 : n;
	if (pipe(up) || pipe(down))
		return fail("setup", "pipe: %s", strerror(errno)), 1;
	fflush(stdout);
	a = fork();
	if (a == 0)
		_exit(unplug_attacker(dev, gid_index, fd, n, up[1], down[0]));
	if (get(up[0], &word) || word != 1) {
		fail("setup", "the attacker's QPs");
		goto out;
	}
	t0 = now();
	while ((k = entered(fd)) < 16 && now() - t0 < 8)
		usleep(10000);
	check("attacker-faults-entered", k >= 16, "%d faults entered on the slow file", k);
	if (put(down[1], 9) || get(up[0], &word))
		word = UINT32_MAX;
	check("owner-maps-while-faulting", word < 1000, "mmap and munmap: %d ms", (int)word);
	fflush(stdout);
	del = fork();
	if (del == 0) {
		execlp("rdma", "rdma", "link", "delete", dev, (char *)NULL);
		_exit(127);
	}
	for (t0 = now(); !done && (t = now() - t0) < 5;) {
		done = waitpid(del, &status, WNOHANG) == del;
		if (!done)
			usleep(10000);
	}
	k = entered(fd);
	check("unplug-prompt", done && WIFEXITED(status) && !WEXITSTATUS(status) && k >= 16,
	      "rdma link delete %s: %s after %.1f s, %d faults entered", dev,
	      done ? "exit status" : "still running", t, k);
	printf("# unplug: the delete %s after %.1f s\n", done ? "ended" : "was still waiting", t);
	if (!done) {
		/* Without disassociation it waits for the attacker to go. */
		say(fd, "release");
		kill(a, SIGKILL);
		waitpid(del, &status, 0);
		goto out;
	}
	/* (The delete ended: the contexts were disassociated, the rings
	 * zapped, after the event was sent.) */
	if (put(down[1], 8) || get(up[0], &word))
		word = 0;
	for (i = 0; i < 3; i++)
		check(name[i], word & (1u << i), "not seen");
	say(fd, "release");
	if (put(down[1], 2) || get(up[0], &word))
		word = 0;
	check("destroy-after-unplug", word == 1, "a destroy or the close failed");
out:
	say(fd, "release");
	waitpid(a, &status, 0);
	check("attacker-exits-clean", WIFEXITED(status) && !WEXITSTATUS(status), "status %#x", status);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *dev = argc > 1 ? argv[1] : "rrxe0";
	int gid_index = argc > 2 ? atoi(argv[2]) : 1;
	struct ibv_qp_init_attr init = qp_init;
	long page = sysconf(_SC_PAGESIZE);
	struct ibv_context *ctx;
	struct ibv_pd *pd = NULL;
	struct ibv_cq *cq = NULL;
	struct ibv_qp *v = NULL;
	struct ibv_mr *mr = NULL;
	struct ibv_send_wr wr, *bad;
	struct ibv_recv_wr *rbad;
	struct ibv_sge s;
	struct pair p2;
	union ibv_gid gid;
	uint8_t *buf;
	uint32_t uqpn = 0, word = 0;
	int up[2], down[2], fd, err, n, st, status;
	double t0, t;
	pid_t child;

	setvbuf(stdout, NULL, _IOLBF, 0);
	fd = open(SLOW, O_RDWR);
	if (fd < 0 || say(fd, "reset") || pipe(up) || pipe(down)) {
		fail("setup", "%s: %s", SLOW, strerror(errno));
		printf("DONE\n");
		return 1;
	}
	if (argc > 4 && !strcmp(argv[3], "users")) {
		err = users(dev, gid_index, fd, atoi(argv[4]), 60001, 60002);
		printf("DONE\n");
		return err;
	}
	if (argc > 4 && !strcmp(argv[3], "unplug")) {
		err = unplug(dev, gid_index, fd, atoi(argv[4]));
		printf("DONE\n");
		return err;
	}
	if (argc > 4 && !strcmp(argv[3], "root")) {
		err = users(dev, gid_index, fd, atoi(argv[4]), 0, 0);
		printf("DONE\n");
		return err;
	}
	child = fork();
	if (child == 0) {
		close(up[0]);
		close(down[1]);
		_exit(attacker(dev, gid_index, fd, up[1], down[0]));
	}
	close(up[1]);
	close(down[0]);
	ctx = open_dev_gid(dev, gid_index, &gid);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	buf = aligned_alloc(page, page);
	mr = cq && buf ? ibv_reg_mr(pd, buf, page, IBV_ACCESS_LOCAL_WRITE) : NULL;
	init.send_cq = init.recv_cq = cq;
	v = mr ? ibv_create_qp(pd, &init) : NULL;
	err = !v || get(up[0], &uqpn) || !uqpn || put(down[1], v->qp_num) ? -1 : 0;
	err = err ? err : pair_to_init(v);
	err = err ? err : pair_to_rts(v, &gid, gid_index, uqpn);
	err = err ? err : get(up[0], &word) || word != 1;
	if (err || pair_open(&p2, ctx, &gid, gid_index, pd, pd, 1, "setup")) {
		fail("setup", "the victim's QPs, or the attacker's: %s", strerror(errno));
		kill(child, SIGKILL);
		say(fd, "release");
		waitpid(child, NULL, 0);
		printf("DONE\n");
		return 1;
	}
	pass("setup");
	memset(buf, 0x3c, page);

	s = (struct ibv_sge){ .addr = (uintptr_t)buf, .length = 64, .lkey = mr->lkey };
	wr = (struct ibv_send_wr){ .wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND };
	err = ibv_post_send(v, &wr, &bad);
	st = err ? ST_POST_FAILED : wait_wc(cq, 5);
	check("first-send-completes", st == IBV_WC_SUCCESS, "V's first SEND: %s", st_str(st));
	wr.wr_id = 2;
	t0 = now();
	err = ibv_post_send(v, &wr, &bad);
	t = now() - t0;
	check("post-send-returns", !err && t < 2, "ibv_post_send: %s after %.1f s", strerror(err), t);

	t0 = now();
	while ((n = entered(fd)) < 1 && now() - t0 < 5)
		usleep(10000);
	check("fault-entered", n >= 1, "%d faults entered on the slow file", n);

	/* Any user may have every QP queried (ib_core's netlink restrack dump
	 * calls query_qp): U's too, while its run waits in the fault. */
	t0 = now();
	err = system("rdma res show qp >/dev/null 2>&1");
	t = now() - t0;
	check("query-while-faulting", err == 0 && t < 3, "rdma res show qp: status %d after %.1f s", err, t);

	{
		struct ibv_sge ps = { .addr = (uintptr_t)buf + 1024, .length = 32, .lkey = mr->lkey };
		struct ibv_sge pr = { .addr = (uintptr_t)buf + 2048, .length = 32, .lkey = mr->lkey };
		struct ibv_recv_wr prw = { .wr_id = 4, .sg_list = &pr, .num_sge = 1 };
		struct ibv_send_wr psw = { .wr_id = 3, .sg_list = &ps, .num_sge = 1, .opcode = IBV_WR_SEND };

		err = ibv_post_recv(p2.resp, &prw, &rbad);
		err = err ? err : ibv_post_send(p2.req, &psw, &bad);
		st = err ? ST_POST_FAILED : wait_wc(p2.cq, 3);
		check("others-still-run", st == IBV_WC_SUCCESS, "another pair's SEND: %s", st_str(st));
	}

	t0 = now();
	err = ibv_destroy_qp(v) ? errno : 0;
	t = now() - t0;
	check("victim-destroy-prompt", !err && t < 3, "ibv_destroy_qp(V): %s after %.1f s", strerror(err), t);
	printf("# %d fault(s) entered before the release\n", entered(fd));

	say(fd, "release");
	put(down[1], 2);

	/* Second round: the attacker's U2 SENDs to V2 from pinned memory,
	 * then from slow memory, its own requester faulting with V2 just sent
	 * to (a run parks the QP it sent to in its kick slot, until it ends). */
	{
		struct ibv_sge r2 = { .addr = (uintptr_t)buf + 3072, .length = 64, .lkey = mr->lkey };
		struct ibv_recv_wr rw2 = { .wr_id = 21, .sg_list = &r2, .num_sge = 1 };
		struct ibv_cq *cq2 = ibv_create_cq(ctx, 16, NULL, NULL, 0);
		struct ibv_qp *v2 = NULL;
		uint32_t u2qpn = 0;

		init.send_cq = init.recv_cq = cq2;
		v2 = cq2 ? ibv_create_qp(pd, &init) : NULL;
		err = !v2 || get(up[0], &u2qpn) || !u2qpn || put(down[1], v2->qp_num) ? -1 : 0;
		err = err ? err : pair_to_init(v2);
		err = err ? err : ibv_post_recv(v2, &rw2, &rbad);
		err = err ? err : pair_to_rts(v2, &gid, gid_index, u2qpn);
		err = err ? err : get(up[0], &word) || word != 1;
		err = err ? err : say(fd, "reset") || put(down[1], 5);
		if (err) {
			fail("attacker-send-lands", "the second round's QPs: %s", strerror(errno));
		} else {
			st = wait_wc(cq2, 5);
			check("attacker-send-lands", st == IBV_WC_SUCCESS, "V2's receive: %s", st_str(st));
			t0 = now();
			while ((n = entered(fd)) < 1 && now() - t0 < 5)
				usleep(10000);
			check("attacker-fault-entered", n >= 1, "%d faults entered on the slow file", n);
			t0 = now();
			err = ibv_destroy_qp(v2) ? errno : 0;
			t = now() - t0;
			check("victim-destroy-while-attacker-faults", !err && t < 3,
			      "ibv_destroy_qp(V2): %s after %.1f s", strerror(err), t);
			v2 = NULL;
		}
		say(fd, "release");
		put(down[1], 6);
		if (v2)
			ibv_destroy_qp(v2);
		if (cq2)
			ibv_destroy_cq(cq2);
	}
	waitpid(child, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		failures++;
	pair_close(&p2);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	close(fd);
	printf("DONE\n");
	return failures ? 1 : 0;
}
