// SPDX-License-Identifier: GPL-2.0
/*
 * Resource limits of an rxe-ABI device.
 *
 *   res_limits [-n CAP] [-r ROUNDS] [-g PCT] [-t TYPES] DEVICE GID_INDEX limits
 *   res_limits [-b MIB] [-c CGROUP] DEVICE GID_INDEX qpmem
 *
 * limits: for each object type (pd, cq, qp, mr, mw, srq, ah; -t picks some,
 * comma-separated), ROUNDS times (default 2): create objects until the
 * device's advertised maximum (ibv_query_device: max_pd, max_cq, max_qp,
 * max_mr, max_mw, max_srq, max_ah), until a create fails, until CAP objects
 * (default 2000 here, 500 in limits.sh; 0: no cap), or until MemAvailable would fall below PCT
 * percent of MemTotal (default 20: the memory guard, so that exhausting the
 * kernel's memory does not end in the OOM killer), then destroy them all.
 * Checks, per type:
 *   T/round-N-stop: the round stopped at the maximum, the cap or the guard,
 *                   or on ENOMEM; any other errno is a failure;
 *   T/beyond-max-refused: at the maximum, one more create fails;
 *   T/rounds-same-count: every round created as many as the first (a
 *                   leaked index or object would lower it), within 2 % when
 *                   the memory guard stopped them;
 *   T/destroyed: every destroy succeeded.
 * Prints how long each round took, objects per second and the kernel memory
 * each object cost (MemAvailable before and after).
 *
 * qpmem: how much kernel memory one unprivileged process can make the
 * driver allocate through QPs. A child drops to uid 65534 with
 * RLIMIT_MEMLOCK 64 KiB and creates QPs on request; the parent (root)
 * reads /proc/meminfo (MemAvailable, Slab) and sums /proc/vmallocinfo
 * around each request:
 *   1. one QP at the advertised maxima (max_qp_wr WRs both ways, max_sge
 *      SGEs both ways, inline data at the device maximum);
 *   2. one QP with max_qp_wr WRs both ways and one SGE;
 *   3. QPs of 65536 WRs (one SGE) until the memory guard (MemAvailable
 *      below 35 % of MemTotal), a failure or 256 QPs.
 * With -c, the child runs in that cgroup v2 directory and its
 * memory.current is printed too: whether the driver's queue memory is
 * charged to the process's memory cgroup (with memory.max below what a
 * step takes, a charged step fails with ENOMEM instead).
 * Check qp-memory/bounded: with -b MIB, the kernel memory the process held
 * (the most of 1 to 3) must stay within MIB MiB; without -b it is a SKIP
 * that states the figures (the driver does not bound it yet).
 *
 * Prints "# ..." comments, "PASS/FAIL/SKIP name..." lines and "DONE" last.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "check.h"

static struct ibv_context *ctx;
static const char *dev_name;
static union ibv_gid gid;
static int gid_index;
static struct ibv_device_attr dattr;

static double now(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return tv.tv_sec + tv.tv_usec / 1e6;
}

/* --- memory ------------------------------------------------------------------ */

struct mem { long total, avail, slab, vmalloc, cg; };	/* KiB */

static long meminfo(const char *key)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	size_t n = strlen(key);
	long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':') {
			v = strtol(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

/* The sum of /proc/vmallocinfo's sizes, in KiB (root only; -1 otherwise). */
static long vmalloc_kib(void)
{
	FILE *f = fopen("/proc/vmallocinfo", "r");
	char line[512];
	unsigned long long sum = 0, sz;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %llu", &sz) == 1 && !strstr(line, "ioremap") && !strstr(line, "unpurged"))
			sum += sz;
	fclose(f);
	return (long)(sum >> 10);
}

static long cg_kib(void);

static struct mem mem_now(void)
{
	struct mem m = { meminfo("MemTotal"), meminfo("MemAvailable"), meminfo("Slab"), vmalloc_kib(), cg_kib() };

	return m;
}

/* --- limits -------------------------------------------------------------------- */

enum { PD, CQ, QP, MR, MW, SRQ, AH, NTYPES };
static const char *const tname[NTYPES] = { "pd", "cq", "qp", "mr", "mw", "srq", "ah" };

static struct ibv_pd *pd;
static struct ibv_cq *cq;
static void *buf;
static struct ibv_mr *bind_mr;

static int dev_max(int t)
{
	switch (t) {
	case PD: return dattr.max_pd;
	case CQ: return dattr.max_cq;
	case QP: return dattr.max_qp;
	case MR: return dattr.max_mr;
	case MW: return dattr.max_mw;
	case SRQ: return dattr.max_srq;
	default: return dattr.max_ah;
	}
}

/* Creates one object of type t: the object, or NULL with errno set. */
static void *create(int t)
{
	switch (t) {
	case PD:
		return ibv_alloc_pd(ctx);
	case CQ:
		return ibv_create_cq(ctx, 1, NULL, NULL, 0);
	case QP: {
		struct ibv_qp_init_attr a = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
		};
		return ibv_create_qp(pd, &a);
	}
	case MR:
		return ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	case MW:
		return ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	case SRQ: {
		struct ibv_srq_init_attr a = { .attr = { .max_wr = 1, .max_sge = 1 } };
		return ibv_create_srq(pd, &a);
	}
	default: {
		struct ibv_ah_attr a = {
			.is_global = 1, .port_num = 1,
			.grh = { .dgid = gid, .sgid_index = (uint8_t)gid_index, .hop_limit = 64 },
		};
		return ibv_create_ah(pd, &a);
	}
	}
}

static int destroy(int t, void *o)
{
	switch (t) {
	case PD: return ibv_dealloc_pd(o);
	case CQ: return ibv_destroy_cq(o);
	case QP: return ibv_destroy_qp(o);
	case MR: return ibv_dereg_mr(o);
	case MW: return ibv_dealloc_mw(o);
	case SRQ: return ibv_destroy_srq(o);
	default: return ibv_destroy_ah(o);
	}
}

enum stop { BY_MAX, BY_CAP, BY_GUARD, BY_ERROR };
static const char *const stop_name[] = { "the device maximum", "the cap", "the memory guard", "an error" };

struct round {
	long n;
	enum stop stop;
	int err;		/* the errno of the failed create (BY_ERROR) */
	int beyond_err;		/* at the maximum: the next create's errno, 0 if it worked */
	int destroy_errs;
	double t_create, t_destroy;
	long bytes_per_obj;
};

static void one_round(int t, long cap, int guard_pct, struct round *r)
{
	long max = dev_max(t), target = cap && cap < max ? cap : max, n = 0, size = 1024;
	void **objs = malloc(size * sizeof(*objs));
	struct mem m0 = mem_now(), m;
	double t0 = now();

	memset(r, 0, sizeof(*r));
	r->stop = BY_MAX;
	for (;;) {
		void *o;

		if (n == target) {
			r->stop = target < max ? BY_CAP : BY_MAX;
			break;
		}
		if ((n & 255) == 0) {
			m = mem_now();
			if (m.avail < m.total / 100 * guard_pct) {
				r->stop = BY_GUARD;
				break;
			}
		}
		o = create(t);
		if (!o) {
			r->stop = BY_ERROR;
			r->err = errno;
			break;
		}
		if (n == size) {
			size *= 2;
			objs = realloc(objs, size * sizeof(*objs));
			if (!objs) {
				perror("realloc");
				exit(1);
			}
		}
		objs[n++] = o;
	}
	r->t_create = now() - t0;
	m = mem_now();
	r->bytes_per_obj = n ? (m0.avail - m.avail) * 1024 / n : 0;
	if (r->stop == BY_MAX) {
		void *o = create(t);

		r->beyond_err = o ? 0 : errno;
		if (o && destroy(t, o))
			r->destroy_errs++;
	}
	r->n = n;
	t0 = now();
	while (n > 0)
		if (destroy(t, objs[--n]))
			r->destroy_errs++;
	r->t_destroy = now() - t0;
	free(objs);
}

static void limits(long cap, int rounds, int guard_pct, const char *types)
{
	char name[128];

	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	buf = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (!pd || !cq || buf == MAP_FAILED) {
		fail("setup", "PD, CQ or buffer: %s", strerror(errno));
		return;
	}
	(void)bind_mr;
	for (int t = 0; t < NTYPES; t++) {
		struct round first = { 0 }, r;
		int same = 1;

		if (types && !strstr(types, tname[t]))
			continue;
		for (int k = 1; k <= rounds; k++) {
			one_round(t, cap, guard_pct, &r);
			printf("# %s round %d: %ld created in %.1f s (%.0f/s), about %ld bytes of kernel memory each, "
			       "stopped by %s%s%s (device maximum %d); destroyed in %.1f s\n",
			       tname[t], k, r.n, r.t_create, r.n / (r.t_create > 0 ? r.t_create : 1), r.bytes_per_obj,
			       stop_name[r.stop], r.stop == BY_ERROR ? ": " : "", r.stop == BY_ERROR ? strerror(r.err) : "",
			       dev_max(t), r.t_destroy);
			fflush(stdout);
			snprintf(name, sizeof(name), "%s/round-%d-stop", tname[t], k);
			check(name, r.stop != BY_ERROR || r.err == ENOMEM, "stopped after %ld by %s", r.n,
			      strerror(r.err));
			if (r.stop == BY_MAX) {
				snprintf(name, sizeof(name), "%s/round-%d-beyond-max-refused", tname[t], k);
				check(name, r.beyond_err != 0, "the %ld-th %s was created beyond the maximum %d", r.n + 1,
				      tname[t], dev_max(t));
				if (r.beyond_err)
					printf("# %s: one beyond the maximum: %s\n", tname[t], strerror(r.beyond_err));
			}
			snprintf(name, sizeof(name), "%s/round-%d-destroyed", tname[t], k);
			check(name, !r.destroy_errs, "%d destroys failed", r.destroy_errs);
			if (k == 1) {
				first = r;
			} else {
				long d = labs(r.n - first.n);

				if (r.stop == BY_GUARD || first.stop == BY_GUARD ? d * 50 > first.n : d != 0)
					same = 0;
			}
		}
		if (rounds > 1) {
			snprintf(name, sizeof(name), "%s/rounds-same-count", tname[t]);
			check(name, same, "the rounds created different numbers (first %ld, last %ld)", first.n, r.n);
		}
	}
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
}

/* --- qpmem ------------------------------------------------------------------------ */

/* The child: uid 65534, RLIMIT_MEMLOCK 64 KiB; creates QPs on request. */
static void qp_child(int in, int out)
{
	struct rlimit rl = { 64 << 10, 64 << 10 };
	struct ibv_qp **qps = calloc(1024, sizeof(*qps));
	int nq = 0;
	FILE *fi = fdopen(in, "r"), *fo = fdopen(out, "w");
	char line[128];

	/* Its own context: a uverbs file refuses commands from credentials
	 * other than its opener's. */
	if (setrlimit(RLIMIT_MEMLOCK, &rl) || setgid(65534) || setuid(65534) || !(ctx = open_dev(dev_name))) {
		fprintf(fo, "err %d\n", errno);
		exit(1);
	}
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	fprintf(fo, "%s %d\n", pd && cq ? "ok" : "err", errno);
	fflush(fo);
	while (fgets(line, sizeof(line), fi)) {
		struct ibv_qp_init_attr a = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC };

		if (line[0] == 'Q' && sscanf(line + 1, "%u %u %u %u %u", &a.cap.max_send_wr, &a.cap.max_recv_wr,
					      &a.cap.max_send_sge, &a.cap.max_recv_sge, &a.cap.max_inline_data) == 5) {
			struct ibv_qp *qp = nq < 1024 ? ibv_create_qp(pd, &a) : NULL;

			if (qp) {
				qps[nq++] = qp;
				fprintf(fo, "ok %u %u %u %u\n", a.cap.max_send_wr, a.cap.max_recv_wr, a.cap.max_send_sge,
					a.cap.max_inline_data);
			} else {
				fprintf(fo, "err %d\n", errno);
			}
		} else if (line[0] == 'D') {
			int bad = 0;

			while (nq)
				bad += ibv_destroy_qp(qps[--nq]) != 0;
			fprintf(fo, "%s %d\n", bad ? "err" : "ok", bad);
		} else {
			break;
		}
		fflush(fo);
	}
	exit(0);
}

static FILE *to_child, *from_child;
static const char *cgroup;

/* memory.current of the child's cgroup in KiB, or -1. */
static long cg_kib(void)
{
	char p[512];
	FILE *f;
	long long v = -1;

	if (!cgroup)
		return -1;
	snprintf(p, sizeof(p), "%s/memory.current", cgroup);
	f = fopen(p, "r");
	if (f) {
		if (fscanf(f, "%lld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v < 0 ? -1 : (long)(v >> 10);
}

/* Sends a request, returns 0 and the reply or the errno. */
static int ask(const char *req, char *reply, size_t n)
{
	int e = 0;

	fprintf(to_child, "%s\n", req);
	fflush(to_child);
	if (!fgets(reply, (int)n, from_child))
		return EPIPE;
	reply[strcspn(reply, "\n")] = 0;
	if (!strncmp(reply, "err ", 4))
		e = atoi(reply + 4);
	return e;
}

static void mem_delta(const char *what, struct mem a, struct mem b)
{
	printf("# %s: MemAvailable -%ld MiB (%ld -> %ld), vmalloc +%ld MiB, slab +%ld MiB", what,
	       (a.avail - b.avail) >> 10, a.avail >> 10, b.avail >> 10, (b.vmalloc - a.vmalloc) >> 10,
	       (b.slab - a.slab) >> 10);
	if (a.cg >= 0 && b.cg >= 0)
		printf(", the process's memory cgroup +%ld MiB", (b.cg - a.cg) >> 10);
	printf("\n");
}

static void qpmem(long bound_mib)
{
	int p2c[2], c2p[2], err;
	pid_t pid;
	char req[128], reply[128];
	struct mem m0, m1;
	long held_mib = 0, one_max_mib = 0, one_mib = 0, n = 0;
	unsigned wr = dattr.max_qp_wr, sge = dattr.max_sge, inl = 0;
	struct ibv_port_attr pa;
	double t0;

	(void)pa;
	/* The advertised inline maximum: rxe reports none in ibv_device_attr;
	 * the driver takes up to max_sge SGEs' room (16 bytes each). */
	inl = sge * 16;
	if (pipe(p2c) || pipe(c2p)) {
		fail("qp-memory/setup", "pipe: %s", strerror(errno));
		return;
	}
	fflush(stdout);
	pid = fork();
	if (!pid) {
		close(p2c[1]);
		close(c2p[0]);
		qp_child(p2c[0], c2p[1]);
	}
	close(p2c[0]);
	close(c2p[1]);
	if (cgroup) {
		char p[512];
		FILE *f;

		snprintf(p, sizeof(p), "%s/cgroup.procs", cgroup);
		f = fopen(p, "w");
		if (!f || fprintf(f, "%d\n", pid) < 0 || fclose(f)) {
			printf("# qpmem: cannot move the child into %s: %s\n", cgroup, strerror(errno));
			cgroup = NULL;
		} else {
			snprintf(p, sizeof(p), "%s/memory.max", cgroup);
			f = fopen(p, "r");
			if (f && fgets(p, sizeof(p), f))
				printf("# qpmem: the child runs in %s, memory.max %s", cgroup, p);
			if (f)
				fclose(f);
		}
	}
	to_child = fdopen(p2c[1], "w");
	from_child = fdopen(c2p[0], "r");
	if (!fgets(reply, sizeof(reply), from_child) || strncmp(reply, "ok", 2)) {
		fail("qp-memory/setup", "the unprivileged child could not open its PD and CQ");
		return;
	}
	printf("# qpmem: a process of uid 65534 with RLIMIT_MEMLOCK 64 KiB; MemTotal %ld MiB\n",
	       meminfo("MemTotal") >> 10);

	/* 1. At the advertised maxima. */
	snprintf(req, sizeof(req), "Q %u %u %u %u %u", wr, wr, sge, sge, inl);
	m0 = mem_now();
	t0 = now();
	err = ask(req, reply, sizeof(reply));
	m1 = mem_now();
	printf("# qpmem 1: one QP of %u WRs each way, %u SGEs, %u bytes inline: %s in %.1f s\n", wr, sge, inl,
	       err ? strerror(err) : "created", now() - t0);
	mem_delta("qpmem 1", m0, m1);
	one_max_mib = (m0.avail - m1.avail) >> 10;
	ask("D", reply, sizeof(reply));

	/* 2. max_qp_wr WRs, one SGE: about 1 GiB on rrxe. In a VM with less
	 * than 1.4 GiB available, a quarter of that (the OOM killer is not
	 * what this measures). */
	if (mem_now().avail < 1400l << 10) {
		wr /= 4;
		printf("# qpmem 2: less than 1400 MiB available, %u WRs instead of max_qp_wr\n", wr);
	}
	snprintf(req, sizeof(req), "Q %u %u 1 1 0", wr, wr);
	m0 = mem_now();
	t0 = now();
	err = ask(req, reply, sizeof(reply));
	m1 = mem_now();
	printf("# qpmem 2: one QP of %u WRs each way, 1 SGE: %s in %.1f s\n", wr, err ? strerror(err) : "created",
	       now() - t0);
	mem_delta("qpmem 2", m0, m1);
	one_mib = (m0.avail - m1.avail) >> 10;
	t0 = now();
	ask("D", reply, sizeof(reply));
	m1 = mem_now();
	printf("# qpmem 2: destroyed in %.1f s; MemAvailable back to %ld MiB (was %ld)\n", now() - t0, m1.avail >> 10,
	       m0.avail >> 10);

	/* 3. Many QPs of 65536 WRs. */
	m0 = mem_now();
	t0 = now();
	err = 0;
	for (n = 0; n < 256; n++) {
		struct mem m = mem_now();

		if (m.avail < m.total / 100 * 35)
			break;
		err = ask("Q 65536 65536 1 1 0", reply, sizeof(reply));
		if (err)
			break;
	}
	m1 = mem_now();
	held_mib = (m0.avail - m1.avail) >> 10;
	printf("# qpmem 3: %ld QPs of 65536 WRs each way in %.1f s, stopped by %s\n", n, now() - t0,
	       err ? strerror(err) : n == 256 ? "the count (256)" : "the memory guard (MemAvailable < 35 %)");
	mem_delta("qpmem 3", m0, m1);
	ask("D", reply, sizeof(reply));
	fprintf(to_child, "X\n");
	fflush(to_child);
	waitpid(pid, NULL, 0);
	m1 = mem_now();
	printf("# qpmem: after the child exited MemAvailable %ld MiB\n", m1.avail >> 10);

	{
		long most = held_mib > one_mib ? held_mib : one_mib;

		most = most > one_max_mib ? most : one_max_mib;
		/* ---- THE BOUND (issue 15, resource limits) ----
		 * Today a SKIP that states the figures; once the driver bounds
		 * or charges a user's queue memory, fuzz.sh passes the bound
		 * (QP_MEM_BOUND_MIB) as -b and this becomes the assertion. */
		if (bound_mib > 0) {
			check("qp-memory/bounded", most <= bound_mib,
			      "an unprivileged process made the kernel hold %ld MiB through QPs (bound %ld MiB): "
			      "one QP at the maxima %ld MiB, one of max_qp_wr WRs %ld MiB, %ld QPs of 65536 WRs %ld MiB",
			      most, bound_mib, one_max_mib, one_mib, n, held_mib);
		} else {
			char why[512];

			snprintf(why, sizeof(why),
				 "no bound yet: an unprivileged process (RLIMIT_MEMLOCK 64 KiB) made the kernel hold %ld MiB "
				 "through QPs: one QP at the maxima %ld MiB, one of %u WRs each way %ld MiB, %ld QPs of "
				 "65536 WRs %ld MiB (stopped by the test's guard)",
				 most, one_max_mib, wr, one_mib, n, held_mib);
			skip("qp-memory/bounded", why);
		}
	}
}

int main(int argc, char **argv)
{
	long cap = 2000, bound = 0;
	int rounds = 2, guard = 20, opt;
	const char *types = NULL, *mode;

	while ((opt = getopt(argc, argv, "n:r:g:t:b:c:")) != -1) {
		switch (opt) {
		case 'n': cap = atol(optarg); break;
		case 'r': rounds = atoi(optarg); break;
		case 'g': guard = atoi(optarg); break;
		case 't': types = optarg; break;
		case 'b': bound = atol(optarg); break;
		case 'c': cgroup = optarg; break;
		default: goto usage;
		}
	}
	if (argc - optind != 3) {
usage:
		fprintf(stderr, "usage: %s [-n CAP] [-r ROUNDS] [-g PCT] [-t TYPES] [-b MIB] [-c CGROUP] DEVICE GID_INDEX limits|qpmem\n",
			argv[0]);
		return 2;
	}
	gid_index = atoi(argv[optind + 1]);
	mode = argv[optind + 2];
	dev_name = argv[optind];
	ctx = open_dev(dev_name);
	if (!ctx || ibv_query_device(ctx, &dattr) || ibv_query_gid(ctx, 1, gid_index, &gid)) {
		fail("setup", "cannot open or query %s", argv[optind]);
		return 1;
	}
	printf("# %s: max_pd %d max_cq %d max_qp %d max_mr %d max_mw %d max_srq %d max_ah %d max_qp_wr %d max_sge %d\n",
	       argv[optind], dattr.max_pd, dattr.max_cq, dattr.max_qp, dattr.max_mr, dattr.max_mw, dattr.max_srq,
	       dattr.max_ah, dattr.max_qp_wr, dattr.max_sge);
	fflush(stdout);
	if (!strcmp(mode, "limits"))
		limits(cap, rounds, guard, types);
	else if (!strcmp(mode, "qpmem"))
		qpmem(bound);
	else
		goto usage;
	ibv_close_device(ctx);
	printf("DONE\n");
	return failures ? 1 : 0;
}
