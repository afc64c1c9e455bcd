// SPDX-License-Identifier: GPL-2.0
/*
 * Resource limits of an rxe-ABI device.
 *
 *   res_limits [-n CAP] [-r ROUNDS] [-g PCT] [-t TYPES] DEVICE GID_INDEX limits
 *   res_limits DEVICE GID_INDEX memlock        (as root: it forks a user)
 *
 * limits: for each object type (pd, cq, qp, mr, mw, srq, ah; -t picks some,
 * comma-separated), ROUNDS times (default 2): create objects until the
 * device's advertised maximum (ibv_query_device: max_pd, max_cq, max_qp,
 * max_mr, max_mw, max_srq, max_ah), until a create fails, until CAP objects
 * (default 2000; 0: no cap), or until MemAvailable
 * would fall below PCT percent of MemTotal (default 20: the memory guard,
 * so that exhausting the kernel's memory does not end in the OOM killer),
 * then destroy them all.
 * Run by a user without CAP_IPC_LOCK under a finite RLIMIT_MEMLOCK, the
 * kinds whose memory is charged to it (cq, qp and srq rings, mr pinned
 * pages) are not capped: each object charges at least a page, so the
 * limit must stop them with ENOMEM within limit/page objects.
 * Checks, per type:
 *   T/round-N-stop: the round stopped at the maximum, the cap or the guard,
 *                   or on ENOMEM; any other errno is a failure;
 *   T/round-N-beyond-max-refused: at the maximum, one more create fails;
 *   T/round-N-destroyed: every destroy succeeded;
 *   T/round-N-memlock-bound (charged kinds under a limit): the round ended
 *                   on ENOMEM with at most limit/page objects and VmPin
 *                   within the limit;
 *   T/round-N-charge-returned (the same): VmPin after the destroys is what
 *                   it was before the round;
 *   T/rounds-same-count: every round created as many as the first (a
 *                   leaked index, object or charge would lower it), within
 *                   2 % when the memory guard stopped them.
 * Prints how long each round took, objects per second and the kernel memory
 * each object cost (MemAvailable before and after).
 *
 * memlock: the memory one unprivileged process can make the driver
 * allocate for queues is charged to its RLIMIT_MEMLOCK (VmPin). A child
 * drops to uid 65534 (hard limit unlimited, so that it may raise the
 * soft one) and creates objects on request; the parent (root) reads the
 * child's VmPin and the sum of /proc/vmallocinfo around each request.
 * (tests/verbs/object_safety.c memlock checks a 65535-WR QP refused and a
 * 4000-WR one charged and released; these are the rest.)
 * Under a 1 MiB limit:
 *   maxima-qp-refused: a QP at the advertised maxima (max_qp_wr
 *       WRs both ways, max_sge SGEs, inline data) fails with ENOMEM, and
 *       the kernel allocated nothing for it (vmalloc within 1 MiB, VmPin
 *       unchanged): the charge comes before the allocation;
 *   max-wr-qp-refused: the same for max_qp_wr WRs of one SGE;
 *   max-cqe-cq-refused, max-wr-srq-refused: a CQ of max_cqe entries (4 MiB
 *       of ring), an SRQ of max_srq_wr WRs: ENOMEM, nothing kept;
 *   cq-resize-refused: a CQ of 16 resized to max_cqe: ENOMEM, and
 *       VmPin is again what the CQ of 16 holds;
 * Unlimited:
 *   raised-max-wr-qp-charged: the max_qp_wr QP (a quarter of it with less
 *       than 1400 MiB available) is created, and the kernel's vmalloc grew
 *       by no more than VmPin plus 1/128 of it (the page arrays vmalloc
 *       keeps for its areas) plus 1 MiB: its rings and send queue copy are
 *       all charged;
 *   raised-charge-returned: destroyed, VmPin is back where it was;
 * Under 64 MiB:
 *   bounded: QPs of 16384 WRs (about 16 MiB each) until a create fails:
 *       it fails with ENOMEM, VmPin never exceeded 64 MiB and the kernel's
 *       vmalloc grew by no more than 64 MiB, 1/128 of that and 1 MiB;
 *   released: after the destroys VmPin is back to the start.
 * Under 8 MiB:
 *   mapped-ring-stays-charged: CQs of 16383 entries, each created, its
 *       ring mapped a second time (the offset librxe mapped, found in
 *       /proc/self/maps) and destroyed, until one fails: it fails with
 *       ENOMEM and VmPin is within 8 MiB, above the start (the mappings
 *       keep the rings, so their charge stays);
 *   unmapped-ring-uncharged: the second mappings unmapped, VmPin is back
 *       to the start.
 *
 * Prints "# ..." comments, "PASS/FAIL/SKIP name..." lines and "DONE" last.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
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

struct mem { long total, avail, slab, vmalloc; };	/* KiB */

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

static struct mem mem_now(void)
{
	struct mem m = { meminfo("MemTotal"), meminfo("MemAvailable"), meminfo("Slab"), vmalloc_kib() };

	return m;
}

/* --- limits -------------------------------------------------------------------- */

enum { PD, CQ, QP, MR, MW, SRQ, AH, NTYPES };
static const char *const tname[NTYPES] = { "pd", "cq", "qp", "mr", "mw", "srq", "ah" };

static struct ibv_pd *pd;
static struct ibv_cq *cq;
static void *buf;
static struct ibv_mr *bind_mr;
/* RLIMIT_MEMLOCK in KiB when it binds this process (no CAP_IPC_LOCK:
 * not root), else 0; and whether a type's objects are charged to it. */
static long memlock_kib;
static int charged(int t) { return t == CQ || t == QP || t == MR || t == SRQ; }

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
	long pin0, pin_most, pin_after;	/* VmPin (KiB) before, at the most, after the destroys */
	int destroy_errs;
	double t_create, t_destroy;
	long bytes_per_obj;
};

static void one_round(int t, long cap, int guard_pct, struct round *r)
{
	long max = dev_max(t), target = cap && cap < max ? cap : max, n = 0, size = 1024;
	long pin = vm_pin_kib(getpid());
	void **objs = malloc(size * sizeof(*objs));
	struct mem m0 = mem_now(), m;
	double t0 = now();

	memset(r, 0, sizeof(*r));
	r->stop = BY_MAX;
	r->pin0 = pin;
	/* Under a memlock limit, a charged kind is not capped: each object
	 * charges at least a page, so the limit must stop it by then. */
	if (memlock_kib && charged(t))
		target = memlock_kib / 4 + 1 < max ? memlock_kib / 4 + 1 : max;
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
	r->pin_most = vm_pin_kib(getpid());
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
	r->pin_after = vm_pin_kib(getpid());
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
	{
		struct rlimit rl;

		if (geteuid() && !getrlimit(RLIMIT_MEMLOCK, &rl) && rl.rlim_cur != RLIM_INFINITY)
			memlock_kib = (long)(rl.rlim_cur >> 10);
		if (memlock_kib)
			printf("# uid %d, RLIMIT_MEMLOCK %ld KiB, VmPin %ld KiB: cq, qp, mr and srq run until it stops them\n",
			       (int)geteuid(), memlock_kib, vm_pin_kib(getpid()));
	}
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
			if (memlock_kib && charged(t)) {
				printf("# %s round %d: VmPin %ld KiB before, %ld at the stop, %ld after the destroys\n",
				       tname[t], k, r.pin0, r.pin_most, r.pin_after);
				snprintf(name, sizeof(name), "%s/round-%d-memlock-bound", tname[t], k);
				check(name, r.stop == BY_ERROR && r.err == ENOMEM && r.pin_most <= memlock_kib,
				      "%ld created, stopped by %s%s%s, VmPin %ld KiB (limit %ld KiB)", r.n,
				      stop_name[r.stop], r.stop == BY_ERROR ? ": " : "",
				      r.stop == BY_ERROR ? strerror(r.err) : "", r.pin_most, memlock_kib);
				snprintf(name, sizeof(name), "%s/round-%d-charge-returned", tname[t], k);
				check(name, r.pin_after == r.pin0, "VmPin %ld KiB after the destroys, %ld before the round",
				      r.pin_after, r.pin0);
			}
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

/* --- memlock ---------------------------------------------------------------------- */

/*
 * The child: uid 65534, RLIMIT_MEMLOCK hard unlimited (soft 8 MiB until
 * told otherwise);
 * requests, one a line, each answered "ok ..." or "err ERRNO":
 *   L KIB                      set the soft limit (0: unlimited)
 *   Q SWR RWR SSGE RSGE INL    create a QP
 *   C CQE                      create a CQ
 *   S WR                       create an SRQ
 *   Z CQE                      resize the last CQ created by C
 *   K CQE                      create a CQ, map its ring a second time,
 *                              destroy the CQ (the second mapping stays)
 *   U                          unmap every ring K mapped
 *   D                          destroy every object created by requests
 */

/* The uverbs mappings of this process, as (start, offset) pairs; n. */
static int uverbs_maps(unsigned long (*m)[3], int max)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	while (f && n < max && fgets(line, sizeof(line), f)) {
		unsigned long a, b, off;

		if (strstr(line, "/dev/infiniband/uverbs") && sscanf(line, "%lx-%lx %*s %lx", &a, &b, &off) == 3) {
			m[n][0] = a;
			m[n][1] = b - a;
			m[n][2] = off;
			n++;
		}
	}
	if (f)
		fclose(f);
	return n;
}

/* Creates a CQ of cqe entries, maps its ring again (the mapping librxe
 * made is the one that is new), destroys the CQ: the second mapping
 * into *dup (address, length); 0 or an errno. */
static int cq_mapped_twice(int cqe, void **dup, size_t *len)
{
	unsigned long before[64][3], after[64][3];
	int nb = uverbs_maps(before, 64), na, e = 0;
	struct ibv_cq *c = ibv_create_cq(ctx, cqe, NULL, NULL, 0);

	if (!c)
		return errno ? errno : EIO;
	na = uverbs_maps(after, 64);
	*dup = NULL;
	for (int i = 0; i < na && !*dup; i++) {
		int seen = 0;

		for (int j = 0; j < nb; j++)
			seen |= before[j][0] == after[i][0];
		if (!seen) {
			void *p = mmap(NULL, after[i][1], PROT_READ | PROT_WRITE, MAP_SHARED, ctx->cmd_fd,
				       (off_t)after[i][2]);

			if (p == MAP_FAILED)
				e = errno;
			else
				*dup = p, *len = after[i][1];
		}
	}
	if (!*dup && !e)
		e = ENOENT;
	if (ibv_destroy_cq(c) && !e)
		e = errno ? errno : EIO;
	return e;
}
static void mem_child(int in, int out)
{
	struct rlimit rl = { 8 << 20, RLIM_INFINITY };
	enum { N = 256 };
	struct ibv_qp *qps[N];
	struct ibv_cq *cqs[N];
	struct ibv_srq *srqs[N];
	void *dups[N];
	size_t dlen[N];
	int nq = 0, nc = 0, ns = 0, nd = 0;
	FILE *fi = fdopen(in, "r"), *fo = fdopen(out, "w");
	char line[128];

	/* Its own context: a uverbs file refuses commands from credentials
	 * other than its opener's. */
	if (setrlimit(RLIMIT_MEMLOCK, &rl) || setgroups(0, NULL) || setgid(65534) || setuid(65534) ||
	    !(ctx = open_dev(dev_name))) {
		fprintf(fo, "err %d\n", errno);
		exit(1);
	}
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	fprintf(fo, "%s %d\n", pd && cq ? "ok" : "err", errno);
	fflush(fo);
	while (fgets(line, sizeof(line), fi)) {
		struct ibv_qp_init_attr a = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC };
		unsigned v;
		int e = 0;

		errno = 0;
		if (line[0] == 'L' && sscanf(line + 1, "%u", &v) == 1) {
			rl.rlim_cur = v ? (rlim_t)v << 10 : RLIM_INFINITY;
			e = setrlimit(RLIMIT_MEMLOCK, &rl) ? errno : 0;
		} else if (line[0] == 'Q' && nq < N &&
			   sscanf(line + 1, "%u %u %u %u %u", &a.cap.max_send_wr, &a.cap.max_recv_wr,
				  &a.cap.max_send_sge, &a.cap.max_recv_sge, &a.cap.max_inline_data) == 5) {
			if ((qps[nq] = ibv_create_qp(pd, &a)))
				nq++;
			else
				e = errno ? errno : EIO;
		} else if (line[0] == 'C' && nc < N && sscanf(line + 1, "%u", &v) == 1) {
			if ((cqs[nc] = ibv_create_cq(ctx, (int)v, NULL, NULL, 0)))
				nc++;
			else
				e = errno ? errno : EIO;
		} else if (line[0] == 'S' && ns < N && sscanf(line + 1, "%u", &v) == 1) {
			struct ibv_srq_init_attr sa = { .attr = { .max_wr = v, .max_sge = 1 } };

			if ((srqs[ns] = ibv_create_srq(pd, &sa)))
				ns++;
			else
				e = errno ? errno : EIO;
		} else if (line[0] == 'Z' && nc && sscanf(line + 1, "%u", &v) == 1) {
			e = ibv_resize_cq(cqs[nc - 1], (int)v);
		} else if (line[0] == 'K' && nd < N && sscanf(line + 1, "%u", &v) == 1) {
			e = cq_mapped_twice((int)v, &dups[nd], &dlen[nd]);
			if (!e)
				nd++;
		} else if (line[0] == 'U') {
			while (nd) {
				nd--;
				e |= munmap(dups[nd], dlen[nd]) ? errno : 0;
			}
		} else if (line[0] == 'D') {
			while (nq)
				e |= ibv_destroy_qp(qps[--nq]);
			while (ns)
				e |= ibv_destroy_srq(srqs[--ns]);
			while (nc)
				e |= ibv_destroy_cq(cqs[--nc]);
		} else {
			break;
		}
		if (e)
			fprintf(fo, "err %d\n", e);
		else
			fprintf(fo, "ok\n");
		fflush(fo);
	}
	exit(0);
}

static FILE *to_child, *from_child;
static pid_t child;

/* Sends a request: 0, or the errno the child answered (EPIPE: it died). */
static int ask(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int ask(const char *fmt, ...)
{
	char reply[128];
	va_list ap;

	va_start(ap, fmt);
	vfprintf(to_child, fmt, ap);
	va_end(ap);
	fprintf(to_child, "\n");
	fflush(to_child);
	if (!fgets(reply, sizeof(reply), from_child))
		return EPIPE;
	return strncmp(reply, "err ", 4) ? 0 : atoi(reply + 4);
}

/* One request measured: its errno, the child's VmPin and the kernel's
 * vmalloc growth in KiB. */
struct step { int err; long pin0, pin1, vm; double s; };

static struct step measure(const char *what, const char *req)
{
	struct step st;
	long v0 = vmalloc_kib();
	double t0 = now();

	st.pin0 = vm_pin_kib(child);
	st.err = ask("%s", req);
	st.s = now() - t0;
	st.pin1 = vm_pin_kib(child);
	st.vm = vmalloc_kib() - v0;
	printf("# memlock: %s (%s): %s in %.1f s; VmPin %ld -> %ld KiB, vmalloc %+ld KiB\n", what, req,
	       err_str(st.err), st.s, st.pin0, st.pin1, st.vm);
	fflush(stdout);
	return st;
}

/* A refused create: ENOMEM, nothing charged or allocated. */
static void refused(const char *name, const char *what, const char *req)
{
	struct step st = measure(what, req);

	check(name, st.err == ENOMEM && st.pin1 == st.pin0 && st.vm < 1024,
	      "%s under a 1 MiB RLIMIT_MEMLOCK: %s (want ENOMEM), VmPin %ld -> %ld KiB, vmalloc %+ld KiB", what,
	      err_str(st.err), st.pin0, st.pin1, st.vm);
	if (!st.err)
		ask("D");
}

static void memlock(void)
{
	int p2c[2], c2p[2], n, err = 0;
	unsigned wr = dattr.max_qp_wr, sge = dattr.max_sge, inl = dattr.max_sge * 16;
	long base, v0, pin_most, vm_most;
	char req[128], reply[128];
	struct step st;

	if (pipe(p2c) || pipe(c2p)) {
		fail("setup", "pipe: %s", strerror(errno));
		return;
	}
	fflush(stdout);
	child = fork();
	if (!child) {
		close(p2c[1]);
		close(c2p[0]);
		mem_child(p2c[0], c2p[1]);
	}
	close(p2c[0]);
	close(c2p[1]);
	to_child = fdopen(p2c[1], "w");
	from_child = fdopen(c2p[0], "r");
	if (!fgets(reply, sizeof(reply), from_child) || strncmp(reply, "ok", 2)) {
		fail("setup", "the unprivileged child could not open its PD and CQ");
		return;
	}
	ask("L 1024");
	base = vm_pin_kib(child);
	printf("# memlock: a process of uid 65534, RLIMIT_MEMLOCK 1 MiB (hard unlimited), VmPin %ld KiB; "
	       "MemTotal %ld MiB; max_qp_wr %d max_sge %d max_cqe %d max_srq_wr %d\n", base,
	       meminfo("MemTotal") >> 10, dattr.max_qp_wr, dattr.max_sge, dattr.max_cqe, dattr.max_srq_wr);

	snprintf(req, sizeof(req), "Q %u %u %u %u %u", wr, wr, sge, sge, inl);
	refused("maxima-qp-refused", "a QP at the advertised maxima", req);
	snprintf(req, sizeof(req), "Q %u %u 1 1 0", wr, wr);
	refused("max-wr-qp-refused", "a QP of max_qp_wr WRs, 1 SGE", req);
	snprintf(req, sizeof(req), "C %d", dattr.max_cqe);
	refused("max-cqe-cq-refused", "a CQ of max_cqe entries", req);
	snprintf(req, sizeof(req), "S %d", dattr.max_srq_wr);
	refused("max-wr-srq-refused", "an SRQ of max_srq_wr WRs", req);

	/* A resize over the limit. */
	st = measure("a CQ of 16", "C 16");
	snprintf(req, sizeof(req), "Z %d", dattr.max_cqe);
	{
		struct step z = measure("resized to max_cqe", req);

		check("cq-resize-refused", !st.err && z.err == ENOMEM && z.pin1 == st.pin1 && z.vm < 1024,
		      "CQ of 16: %s; resized to %d: %s (want ENOMEM), VmPin %ld -> %ld KiB, vmalloc %+ld KiB",
		      err_str(st.err), dattr.max_cqe, err_str(z.err), z.pin0, z.pin1, z.vm);
	}
	ask("D");

	/* The limit raised: the big QP is created, and charged. */
	if (meminfo("MemAvailable") < 1400l << 10) {
		wr /= 4;
		printf("# memlock: less than 1400 MiB available: %u WRs instead of max_qp_wr\n", wr);
	}
	ask("L 0");
	snprintf(req, sizeof(req), "Q %u %u 1 1 0", wr, wr);
	st = measure("RLIMIT_MEMLOCK unlimited, a QP of max_qp_wr WRs, 1 SGE", req);
	check("raised-max-wr-qp-charged",
	      !st.err && st.pin1 - st.pin0 >= (long)wr / 1024 * 64 &&
		      st.vm <= (st.pin1 - st.pin0) + (st.pin1 - st.pin0) / 128 + 1024,
	      "%s; VmPin +%ld KiB, the kernel's vmalloc %+ld KiB: what it allocated is not all charged",
	      err_str(st.err), st.pin1 - st.pin0, st.vm);
	st = measure("destroyed", "D");
	check("raised-charge-returned", !st.err && st.pin1 == base,
	      "destroy: %s; VmPin %ld KiB, %ld before the QP", err_str(st.err), st.pin1, base);

	/* Many QPs under 64 MiB. */
	ask("L %d", 64 << 10);
	v0 = vmalloc_kib();
	pin_most = vm_most = 0;
	for (n = 0; n < 64; n++) {
		err = ask("Q 16384 16384 1 1 0");
		pin_most = vm_pin_kib(child) > pin_most ? vm_pin_kib(child) : pin_most;
		vm_most = vmalloc_kib() - v0 > vm_most ? vmalloc_kib() - v0 : vm_most;
		if (err)
			break;
	}
	printf("# memlock: RLIMIT_MEMLOCK 64 MiB: %d QPs of 16384 WRs, then %s; VmPin at most %ld KiB, vmalloc at "
	       "most %+ld KiB\n", n, err_str(err), pin_most, vm_most);
	check("bounded", err == ENOMEM && n >= 1 && pin_most <= 64 << 10 &&
		      vm_most <= (64 << 10) + (64 << 10) / 128 + 1024,
	      "%d QPs of 16384 WRs, then %s (want ENOMEM); VmPin at most %ld KiB, the kernel's vmalloc at most %+ld "
	      "KiB (limit 65536 KiB)", n, err_str(err), pin_most, vm_most);
	err = ask("D");
	check("released", !err && vm_pin_kib(child) == base, "destroy: %s; VmPin %ld KiB, %ld at the start",
	      err_str(err), vm_pin_kib(child), base);

	/* A ring mapped a second time is still the process's after its CQ is
	 * destroyed: it stays charged until that mapping goes. */
	ask("L 8192");
	for (n = 0; n < 16; n++) {
		err = ask("K 16383");
		if (err)
			break;
	}
	pin_most = vm_pin_kib(child);
	printf("# memlock: RLIMIT_MEMLOCK 8 MiB: %d CQs of 16383 created, their rings mapped again, destroyed, then "
	       "%s; VmPin %ld KiB\n", n, err_str(err), pin_most);
	check("mapped-ring-stays-charged", err == ENOMEM && n >= 1 && pin_most <= 8192 && pin_most > base,
	      "%d CQs of 16383 mapped twice and destroyed, then %s (want ENOMEM); VmPin %ld KiB (limit 8192, %ld "
	      "at the start)", n, err_str(err), pin_most, base);
	err = ask("U");
	check("unmapped-ring-uncharged", !err && vm_pin_kib(child) == base,
	      "munmap: %s; VmPin %ld KiB, %ld at the start", err_str(err), vm_pin_kib(child), base);
	fprintf(to_child, "X\n");
	fflush(to_child);
	waitpid(child, NULL, 0);
}

int main(int argc, char **argv)
{
	long cap = 2000;
	int rounds = 2, guard = 20, opt;
	const char *types = NULL, *mode;

	while ((opt = getopt(argc, argv, "n:r:g:t:")) != -1) {
		switch (opt) {
		case 'n': cap = atol(optarg); break;
		case 'r': rounds = atoi(optarg); break;
		case 'g': guard = atoi(optarg); break;
		case 't': types = optarg; break;
		default: goto usage;
		}
	}
	if (argc - optind != 3) {
usage:
		fprintf(stderr, "usage: %s [-n CAP] [-r ROUNDS] [-g PCT] [-t TYPES] DEVICE GID_INDEX limits|memlock\n",
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
	else if (!strcmp(mode, "memlock"))
		memlock();
	else
		goto usage;
	ibv_close_device(ctx);
	printf("DONE\n");
	return failures ? 1 : 0;
}
