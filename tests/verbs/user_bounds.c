// SPDX-License-Identifier: GPL-2.0
/*
 * Per-user bounds on a device's objects, tested as attackers would: users
 * of other uids take what they can of one kind of object, and others
 * still get theirs.
 *
 *   user_bounds DEVICE GID_INDEX ah|qp CAPACITY USERS [NAME=COMMAND...]   (as root)
 *   user_bounds DEVICE GID_INDEX odp                         (as root)
 *
 * ah|qp: CAPACITY is the size of the device's pool of that kind (32767
 * AHs; the QP indices rdma_rrxe's debugfs qpn_max leaves). One user may
 * hold a quarter of it (SHARE), users together all but a sixteenth
 * (USERS).
 * Each user is a child process that drops to its own uid (no
 * capabilities, RLIMIT_MEMLOCK unlimited so that only the bound stops it)
 * and creates objects on the parent's request, holding them until told
 * to exit.
 *   K/first-user-stops-at-share: the first user (uid 60001) creates until
 *       refused: exactly SHARE, and then ENOMEM;
 *   K/second-context-gains-nothing: that user's second context gets none;
 *   K/other-user-creates: a user of another uid (60100) creates one;
 *   K/users-stop-at-reserve: USERS - 1 more attackers (60002...) take
 *       what they can: together the users hold exactly what all users may
 *       (checked when USERS attackers can reach it);
 *   K/privileged-uses-reserve: root (CAP_SYS_RESOURCE, charged nothing)
 *       still creates one;
 *   K/while-full/NAME: each COMMAND (sh -c), run while the users hold
 *       all that, exits 0 (rping between two fresh processes, an NVMe-oF
 *       host and target: kernel consumers' AHs, QPs and MRs);
 *   K/released: once the users exit, the first user, in a new process,
 *       gets its share again (SHARE, or its first 64 if it is larger);
 *
 * odp: a user (uid 60001) without CAP_IPC_LOCK: an implicit MR paged on
 * demand (ODP, the whole address space) charges a page to RLIMIT_MEMLOCK,
 * as the kernel memory behind it pins nothing (an explicit one charges
 * its page table, at least a page).
 *   odp/implicit-refused-at-memlock-0, odp/explicit-refused-at-memlock-0:
 *       under a limit of 0, ENOMEM;
 *   odp/bounded-by-memlock: under 64 KiB, implicit ODP MRs until refused:
 *       ENOMEM after (64 KiB - VmPin) / 4 KiB of them;
 *   odp/charge-returned: VmPin after they are deregistered is what it was.
 *
 * Prints "# ..." comments, "PASS/FAIL/SKIP name..." lines and "DONE" last.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "users.h"

enum kind { AH, QP };

struct user {
	pid_t pid;
	int req, rep; /* pipes: requests to the child, replies from it */
};

struct reply {
	int n;   /* objects created */
	int err; /* errno of the create that failed, or 0 */
};

static const char *dev_name;
static int gid_index;
static enum kind kind;

/* One user's objects: a context and a PD (and a CQ for QPs). */
struct objs {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	union ibv_gid gid;
};

static int objs_open(struct objs *o)
{
	o->ctx = open_dev(dev_name);
	if (!o->ctx || ibv_query_gid(o->ctx, 1, gid_index, &o->gid))
		return errno ? errno : ENODEV;
	o->pd = ibv_alloc_pd(o->ctx);
	if (!o->pd)
		return errno;
	if (kind == QP) {
		o->cq = ibv_create_cq(o->ctx, 4, NULL, NULL, 0);
		if (!o->cq)
			return errno;
	}
	return 0;
}

/* Creates one object in o (kept until the process exits); 0 or errno. */
static int create_one(struct objs *o)
{
	errno = 0;
	if (kind == AH) {
		struct ibv_ah_attr a = {
			.is_global = 1,
			.port_num = 1,
			.grh = { .dgid = o->gid, .sgid_index = gid_index, .hop_limit = 64 },
		};

		if (ibv_create_ah(o->pd, &a))
			return 0;
	} else {
		struct ibv_qp_init_attr a = {
			.send_cq = o->cq,
			.recv_cq = o->cq,
			.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
			.qp_type = IBV_QPT_UD,
		};

		if (ibv_create_qp(o->pd, &a))
			return 0;
	}
	return errno ? errno : EIO;
}

/*
 * The child: as uid, answers requests until told to exit: 'f' N creates
 * until refused or N made, 'c' opens a second context and creates one
 * there, 'q' exits.
 */
static void child(int uid, int req, int rep)
{
	struct objs o = {}, o2 = {};
	struct reply r = {};
	char cmd;
	int max;

	r.err = objs_open(&o);
	if (write(rep, &r, sizeof(r)) != sizeof(r) || r.err)
		_exit(1);
	(void)uid;
	while (read(req, &cmd, 1) == 1) {
		r = (struct reply){};
		if (cmd == 'f') {
			if (read(req, &max, sizeof(max)) != sizeof(max))
				_exit(1);
			while (r.n < max && !(r.err = create_one(&o)))
				r.n++;
		} else if (cmd == 'c') {
			r.err = o2.ctx ? 0 : objs_open(&o2);
			if (!r.err && !(r.err = create_one(&o2)))
				r.n = 1;
		} else {
			_exit(0);
		}
		if (write(rep, &r, sizeof(r)) != sizeof(r))
			_exit(1);
	}
	_exit(0);
}

/* Starts a user of uid; 0, or -1 after a FAIL line. */
static int user_start(struct user *u, int uid, rlim_t memlock_soft, rlim_t memlock_hard)
{
	int req[2], rep[2];
	struct reply r;

	if (pipe(req) || pipe(rep)) {
		fail("setup", "pipe: %s", strerror(errno));
		return -1;
	}
	u->pid = fork();
	if (u->pid == 0) {
		close(req[1]);
		close(rep[0]);
		if (become_user(uid, memlock_soft, memlock_hard))
			_exit(2);
		child(uid, req[0], rep[1]);
	}
	close(req[0]);
	close(rep[1]);
	u->req = req[1];
	u->rep = rep[0];
	if (u->pid < 0 || read(u->rep, &r, sizeof(r)) != sizeof(r) || r.err) {
		fail("setup", "user %d could not open %s: %s", uid, dev_name, err_str(u->pid < 0 ? errno : r.err));
		return -1;
	}
	return 0;
}

static struct reply user_ask(struct user *u, char cmd, int max)
{
	struct reply r = { -1, EIO };

	if (write(u->req, &cmd, 1) != 1 || (cmd == 'f' && write(u->req, &max, sizeof(max)) != sizeof(max)) ||
	    read(u->rep, &r, sizeof(r)) != sizeof(r))
		return (struct reply){ -1, EIO };
	return r;
}

static void user_stop(struct user *u)
{
	char q = 'q';

	if (u->pid <= 0)
		return;
	if (write(u->req, &q, 1) != 1)
		kill(u->pid, SIGKILL);
	waitpid(u->pid, NULL, 0);
	close(u->req);
	close(u->rep);
	u->pid = 0;
}

static int bounds(const char *k, int capacity, int nusers, char **commands, int ncommands)
{
	int share = capacity / 4 ? capacity / 4 : 1, users = capacity - capacity / 16;
	struct user a[8] = {}, v = {}, again = {};
	int held = 0, code, want;
	struct reply r;
	struct objs root = {};

	printf("# %s: capacity %d, one user's share %d, all users' %d\n", k, capacity, share, users);
	/* The first user: its share, then ENOMEM. */
	if (user_start(&a[0], 60001, RLIM_INFINITY, RLIM_INFINITY))
		return -1;
	r = user_ask(&a[0], 'f', capacity + 16);
	check("first-user-stops-at-share", r.n == share && r.err == ENOMEM,
	      "uid 60001 created %d, then %s; want %d, then ENOMEM", r.n, err_str(r.err), share);
	held += r.n > 0 ? r.n : 0;
	r = user_ask(&a[0], 'c', 0);
	check("second-context-gains-nothing", r.n == 0 && r.err == ENOMEM,
	      "a second context of uid 60001 created %d (%s); want ENOMEM", r.n, err_str(r.err));
	/* Another user still gets one. */
	if (user_start(&v, 60100, RLIM_INFINITY, RLIM_INFINITY))
		return -1;
	r = user_ask(&v, 'f', 1);
	check("other-user-creates", r.n == 1, "uid 60100 was refused: %s", err_str(r.err));
	held += r.n > 0 ? r.n : 0;
	/* More users take what is left to users. */
	nusers = nusers < 1 ? 1 : nusers > 8 ? 8 : nusers;
	for (int i = 1; i < nusers; i++) {
		if (user_start(&a[i], 60001 + i, RLIM_INFINITY, RLIM_INFINITY))
			return -1;
		r = user_ask(&a[i], 'f', capacity + 16);
		printf("# uid %d: %d, then %s\n", 60001 + i, r.n, err_str(r.err));
		held += r.n > 0 ? r.n : 0;
	}
	if (nusers * share + 1 >= users)
		check("users-stop-at-reserve", held == users, "users hold %d together; want %d", held, users);
	/* Root is charged nothing: the reserve is there. */
	code = objs_open(&root);
	if (!code)
		code = create_one(&root);
	check("privileged-uses-reserve", !code, "root was refused: %s", err_str(code));
	for (int i = 0; i < ncommands; i++) {
		char name[64], *eq = strchr(commands[i], '=');

		if (!eq)
			continue;
		snprintf(name, sizeof(name), "while-full/%.*s", (int)(eq - commands[i]), commands[i]);
		code = system(eq + 1);
		check(name, code == 0, "'%s' exited with status 0x%x", eq + 1, code);
	}
	for (int i = 0; i < nusers; i++)
		user_stop(&a[i]);
	user_stop(&v);
	/* All given back: the first user, in a new process, gets its share
	 * again (the first 64 of it: a charge not given back would leave it
	 * none; at most 64 keeps an AH share's 8191 creates out of the run). */
	if (user_start(&again, 60001, RLIM_INFINITY, RLIM_INFINITY))
		return -1;
	want = share < 64 ? share : 64;
	r = user_ask(&again, 'f', want == share ? capacity + 16 : want);
	check("released", r.n == want && (want < share ? !r.err : r.err == ENOMEM),
	      "uid 60001 again created %d, then %s; want %d%s", r.n, err_str(r.err), want,
	      want < share ? "" : ", then ENOMEM");
	user_stop(&again);
	return 0;
}

/* Check `name`: an ODP MR over [addr, addr + len) is refused with ENOMEM. */
static void refused_at_memlock_0(const char *name, const char *what, struct ibv_pd *pd, void *addr, size_t len)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, addr, len, IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE);
	int err = mr ? 0 : errno;

	check(name, !mr && err == ENOMEM, "%s under RLIMIT_MEMLOCK 0: %s; want ENOMEM", what,
	      mr ? "registered" : err_str(err));
	if (mr)
		ibv_dereg_mr(mr);
}

/* The odp child: RLIMIT_MEMLOCK soft 0, hard 64 KiB. */
static void odp_child(void)
{
	size_t page = sysconf(_SC_PAGESIZE);
	struct ibv_mr *mrs[64];
	struct objs o = {};
	struct rlimit rl;
	long pin0, pin1, pin2;
	void *buf = aligned_alloc(page, page);
	int n = 0, err = 0, want;

	if (!buf || objs_open(&o)) {
		fail("setup", "open %s as uid 60001: %s", dev_name, strerror(errno));
		return;
	}
	refused_at_memlock_0("implicit-refused-at-memlock-0", "an implicit ODP MR", o.pd, NULL, SIZE_MAX);
	refused_at_memlock_0("explicit-refused-at-memlock-0", "an ODP MR of one page", o.pd, buf, page);
	getrlimit(RLIMIT_MEMLOCK, &rl);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_MEMLOCK, &rl);
	pin0 = vm_pin_kib(getpid());
	want = (int)((64 - pin0) / (long)(page / 1024));
	err = 0;
	while (n < 64) {
		mrs[n] = ibv_reg_mr(o.pd, NULL, SIZE_MAX, IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE);
		if (!mrs[n]) {
			err = errno;
			break;
		}
		n++;
	}
	pin1 = vm_pin_kib(getpid());
	printf("# odp: VmPin %ld KiB, %d implicit ODP MRs under 64 KiB, then %s; VmPin %ld KiB\n", pin0, n,
	       err_str(err), pin1);
	check("bounded-by-memlock", n == want && err == ENOMEM && pin1 <= 64,
	      "%d implicit ODP MRs, then %s, VmPin %ld KiB; want %d, then ENOMEM, VmPin at most 64 KiB", n, err_str(err), pin1,
	      want);
	while (n > 0)
		ibv_dereg_mr(mrs[--n]);
	pin2 = vm_pin_kib(getpid());
	check("charge-returned", pin2 == pin0, "VmPin %ld KiB after the deregistrations; want %ld", pin2, pin0);
}

static int odp(void)
{
	struct ibv_context *ctx = open_dev(dev_name);
	struct ibv_device_attr_ex a = {};
	int status;
	pid_t pid;

	if (!ctx || ibv_query_device_ex(ctx, NULL, &a)) {
		fail("setup", "open or query %s: %s", dev_name, strerror(errno));
		return -1;
	}
	ibv_close_device(ctx);
	if (!(a.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT)) {
		skip("implicit-refused-at-memlock-0", "the device has no implicit ODP");
		return 0;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		if (become_user(60001, 0, 64 * 1024))
			_exit(2);
		odp_child();
		fflush(stdout);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fail("child", "the user's process ended with status 0x%x", pid < 0 ? -1 : status);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 4) {
		fprintf(stderr, "usage: %s DEVICE GID_INDEX ah|qp CAPACITY USERS [NAME=COMMAND...] | odp\n", argv[0]);
		return 2;
	}
	dev_name = argv[1];
	gid_index = atoi(argv[2]);
	if (!strcmp(argv[3], "odp")) {
		ret = odp();
	} else if (argc >= 6 && (!strcmp(argv[3], "ah") || !strcmp(argv[3], "qp"))) {
		kind = strcmp(argv[3], "ah") ? QP : AH;
		ret = bounds(argv[3], atoi(argv[4]), atoi(argv[5]), argv + 6, argc - 6);
	} else {
		fprintf(stderr, "unknown test %s\n", argv[3]);
		return 2;
	}
	if (ret)
		return 1;
	printf("DONE\n");
	return 0;
}
