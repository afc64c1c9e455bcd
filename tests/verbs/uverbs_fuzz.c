// SPDX-License-Identifier: GPL-2.0
/*
 * uverbs command fuzzer: hostile system calls on an rxe-ABI device.
 *
 *   uverbs_fuzz [options] DEVICE GID_INDEX
 *     -t SECONDS  how long to fuzz (default 60)
 *     -p PROCS    worker processes (default 4, at most 16)
 *     -s SEED     the seed (default: from the clock); printed first
 *     -k MS       mean interval between SIGKILLs of a random worker (default
 *                 1500; 0: no kills)
 *     -W N        the largest WR or CQE count a well-formed create asks for
 *                 (default 4096); larger values up to the device's maxima
 *                 are only sent with -B (see below)
 *     -B          also ask for the device's maximum queue depths (2^20 WRs:
 *                 up to gigabytes of kernel memory per QP, which fills a
 *                 small VM; the resource-limit test measures it instead)
 *     -G          also send UVERBS_METHOD_GET_CONTEXT ioctls (on a context
 *                 that exists, so they fail): ib_core 6.12 then frees the
 *                 new ucontext without rdma_restrack_put(), leaking the
 *                 caller's task_struct (kmemleak: task_struct, signal_struct
 *                 and cred of the worker), whatever the driver
 *     -R          well-formed rings only: no scribbling, no mutated WQEs
 *                 (C rxe 6.12 loops forever or oopses on hostile rings;
 *                 this isolates the command paths)
 *     -U          all workers as root (default: odd workers drop to the
 *                 unprivileged uid 65534 before opening the device)
 *     -v DIR      one log file per worker generation in DIR, a line per
 *                 command (for finding the command that hurt)
 *
 * Opens /dev/infiniband/uverbsN of DEVICE itself (no libibverbs) and, from
 * PROCS forked workers, sends legacy write() commands (struct
 * ib_uverbs_cmd_hdr, and the extended form with struct
 * ib_uverbs_ex_cmd_hdr) and RDMA_VERBS_IOCTL method calls. Each worker has
 * its own context (uverbs file) and also uses one context shared by all
 * workers (opened by the parent before forking), so objects are created,
 * used and destroyed from several processes at once.
 *
 * Commands come from templates of every verb (PD, CQ, QP, SRQ, MR, MW, AH,
 * multicast, post_send/post_recv, queries...), filled from a table of live
 * handles built from successful creates, so most of them reach the driver;
 * about a third are then mutated: sizes (in_words/out_words, the write()
 * length, driver udata lengths), stale handles (destroyed), foreign
 * handles (another context's numbers), handles of the wrong type, extreme
 * counts (0, 1, 2^31, 2^32-1, the device maximum + 1), random access flags
 * and attribute masks, addresses that are unmapped, read-only, PROT_NONE,
 * kernel or non-canonical, as buffers and as response pointers, random
 * bytes. QPs are walked through INIT, RTR and RTS towards other QPs of the
 * device (loopback), and the rings the create responses offer are mmap'd:
 * well-formed send and receive WQEs are written into them (SEND, WRITE,
 * READ, atomics, memory window binds, invalidates, UD through an AH or a
 * raw address vector) and completions are polled from the CQ rings, and
 * then the rings are scribbled on (indices, headers, slots) while
 * doorbells are rung (post_send with no WRs). Workers close and reopen
 * their context with everything alive, exit holding everything, and are
 * killed with SIGKILL at random and replaced, so the cleanup paths run
 * too.
 *
 * The same seed gives every worker generation the same command stream and
 * the parent the same kill schedule; what the kernel answers also depends
 * on timing, so a run with several workers does not repeat exactly, but
 * "-p 1 -k 0 -s SEED" does.
 *
 * Prints "# ..." comment lines, a table of commands sent and succeeded per
 * kind with the errnos seen, "PASS name" / "FAIL name: why" lines for what
 * the run must have reached, and "DONE" last.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/ib_user_verbs.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>
#include <rdma/rdma_user_rxe.h>

#include "check.h"

#define MAXP 16		/* workers */
#define MAXOBJ 12	/* live objects of one type per context */
#define NSTALE 8	/* destroyed handles remembered per type */
#define NGRAVE 12	/* ring mappings kept after their object went */
#define RESP_BYTES (1u << 20)	/* the response area: larger than any out_words */

/* enum ib_qp_attr_mask, ib_qp_state, ib_srq_attr_mask, ib_mr_rereg_flags
 * (include/rdma/ib_verbs.h): not in the uapi headers. */
enum {
	QP_STATE = 1, QP_CUR_STATE = 1 << 1, QP_EN_SQD_ASYNC_NOTIFY = 1 << 2, QP_ACCESS_FLAGS = 1 << 3,
	QP_PKEY_INDEX = 1 << 4, QP_PORT = 1 << 5, QP_QKEY = 1 << 6, QP_AV = 1 << 7, QP_PATH_MTU = 1 << 8,
	QP_TIMEOUT = 1 << 9, QP_RETRY_CNT = 1 << 10, QP_RNR_RETRY = 1 << 11, QP_RQ_PSN = 1 << 12,
	QP_MAX_QP_RD_ATOMIC = 1 << 13, QP_ALT_PATH = 1 << 14, QP_MIN_RNR_TIMER = 1 << 15, QP_SQ_PSN = 1 << 16,
	QP_MAX_DEST_RD_ATOMIC = 1 << 17, QP_PATH_MIG_STATE = 1 << 18, QP_CAP = 1 << 19, QP_DEST_QPN = 1 << 20,
	QP_RATE_LIMIT = 1 << 25,
};
enum { S_RESET, S_INIT, S_RTR, S_RTS, S_SQD, S_SQE, S_ERR };
enum { SRQ_MAX_WR = 1, SRQ_LIMIT = 2 };
enum { REREG_TRANS = 1, REREG_PD = 2, REREG_ACCESS = 4 };
enum { QPT_RC = 2, QPT_UC = 3, QPT_UD = 4 };
#define QKEY 0x11111111u
/* enum ib_send_flags */
#define SEND_SIGNALED 2u
#define SEND_INLINE 8u

/* --- what is counted ------------------------------------------------------- */

#define OPS(X) \
	X(get_context) X(query_device) X(query_port) X(alloc_pd) X(dealloc_pd) \
	X(create_ah) X(destroy_ah) X(reg_mr) X(rereg_mr) X(dereg_mr) X(alloc_mw) \
	X(dealloc_mw) X(create_comp_channel) X(create_cq) X(resize_cq) X(destroy_cq) \
	X(poll_cq) X(req_notify_cq) X(create_qp) X(query_qp) X(modify_qp) X(destroy_qp) \
	X(post_send) X(post_recv) X(post_srq_recv) X(attach_mcast) X(detach_mcast) \
	X(create_srq) X(create_xsrq) X(modify_srq) X(query_srq) X(destroy_srq) \
	X(xrcd_open_qp) X(write_random) \
	X(ex_query_device) X(ex_create_cq) X(ex_create_qp) X(ex_modify_qp) X(ex_other) \
	X(io_query_port) X(io_query_context) X(io_info_handles) X(io_gid_table) \
	X(io_gid_entry) X(io_invoke_write) X(io_create_cq) X(io_destroy_cq) \
	X(io_create_qp) X(io_destroy_qp) X(io_create_srq) X(io_destroy_srq) \
	X(io_query_mr) X(io_destroy) X(io_async_alloc) X(io_random) \
	X(mmap) X(mmap_bad) X(post_wqe) X(post_recv_wqe) X(poll_ring) X(scribble) \
	X(doorbell) X(read_events) X(reopen)

#define X_ENUM(n) OP_##n,
#define X_NAME(n) #n,
enum op { OPS(X_ENUM) NOPS };
static const char *const op_name[NOPS] = { OPS(X_NAME) };

struct stat_ { uint64_t sent, ok, errs[3]; };	/* errs: a bit per errno below 192 */

enum { T_PD, T_CQ, T_QP, T_SRQ, T_MR, T_MW, T_AH, NT };
static const char *const type_name[NT] = { "pd", "cq", "qp", "srq", "mr", "mw", "ah" };

struct ring {
	uint8_t *p;		/* the mapping, or NULL */
	size_t len;
	uint64_t off;		/* mminfo from the create response */
	uint32_t size;
	uint32_t mask, log2;	/* read from the header when first mapped */
	int geom;		/* mask and log2 are known */
};

struct obj {
	uint32_t h;
	uint8_t used, qpt, state, mw_type;
	uint32_t num;		/* QPN, SRQN, ah_num, MW rkey */
	uint32_t lkey, rkey;	/* MR */
	uint64_t addr, len;	/* MR iova range */
	uint32_t pd, scq, rcq, srq;
	struct ring r[2];	/* QP: SQ, RQ; CQ and SRQ: [0] */
};

struct ctx {
	int fd, async_fd, owner;	/* owner: the worker's pid (shared: 0) */
	struct obj o[NT][MAXOBJ];
	uint32_t stale[NT][NSTALE];
	uint32_t nstale[NT];
};

/* Everything the workers and the parent share (MAP_SHARED). */
struct shm {
	volatile int stop;
	struct stat_ st[NOPS];
	uint64_t qp_rts, wqes, rwqes, cqes, cqes_ok, scribbles, kills, respawns, exits, reopens;
	uint64_t compl_fd_events;
	/* from QUERY_DEVICE */
	uint32_t max_qp_wr, max_sge, max_cqe, max_srq_wr, max_srq_sge, max_qp_rd_atom, max_mw;
	uint8_t gid[16];
	int gid_index;
	/* Every GID of the port (IPv4, IPv6, link-local): index, address. */
	int ngids, gidx[16];
	uint8_t gids[16][16];
	struct ctx ctx[MAXP + 1];	/* [MAXP] is the shared context */
};

static struct shm *S;
static const uint64_t zeros[8];
static int dev_fd_path_n;	/* N of uverbsN */
static char dev_path[64];
static int slot = -1;		/* this worker's slot, -1 in the parent */
static int allow_big, cap_wr = 4096, allow_getctx, clean_rings;
static FILE *logf_;
static int mutating;		/* the current command is being mutated */

/* --- randomness --------------------------------------------------------------- */

static uint64_t rs;

static uint64_t splitmix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t rnd64(void)
{
	rs ^= rs >> 12;
	rs ^= rs << 25;
	rs ^= rs >> 27;
	return rs * 2685821657736338717ull;
}

static uint32_t rnd(uint32_t n) { return n ? (uint32_t)(rnd64() % n) : 0; }
static int chance(unsigned pct) { return rnd(100) < pct; }
static uint32_t rnd32(void) { return (uint32_t)rnd64(); }

static void rnd_bytes(void *p, size_t n)
{
	uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)rnd64();
}

/* Flips a few random bytes of [p, p + n). */
static void flip_bytes(void *p, size_t n)
{
	uint8_t *b = p;
	int k = 1 + rnd(4);

	if (!n)
		return;
	while (k--) {
		size_t i = rnd(n);

		switch (rnd(4)) {
		case 0: b[i] = 0; break;
		case 1: b[i] = 0xff; break;
		case 2: b[i] ^= 1u << rnd(8); break;
		default: b[i] = (uint8_t)rnd64(); break;
		}
	}
}

/* --- logging and counting ------------------------------------------------------ */

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
	va_list ap;

	if (!logf_)
		return;
	va_start(ap, fmt);
	vfprintf(logf_, fmt, ap);
	va_end(ap);
	fputc('\n', logf_);
	fflush(logf_);
}

static void count(enum op op, int err)
{
	__atomic_fetch_add(&S->st[op].sent, 1, __ATOMIC_RELAXED);
	if (!err)
		__atomic_fetch_add(&S->st[op].ok, 1, __ATOMIC_RELAXED);
	else if (err > 0 && err < 192)
		__atomic_fetch_or(&S->st[op].errs[err / 64], 1ull << (err % 64), __ATOMIC_RELAXED);
}

#define INC(f) __atomic_fetch_add(&S->f, 1, __ATOMIC_RELAXED)

/* --- memory the commands point at ------------------------------------------------ */

static long page;
static uint8_t *arena;		/* RW, ARENA_PAGES pages: MR buffers and SGEs */
#define ARENA_PAGES 64
static uint8_t *big;		/* RW, BIG_BYTES, touched only by the kernel */
#define BIG_BYTES (8u << 20)
static uint8_t *ro;		/* a read-only shared mapping of a file */
static uint8_t *none;		/* PROT_NONE */
static uint8_t *hole;		/* unmapped */
static uint8_t *resp;		/* RESP_BYTES of RW: every response goes here */
static uint8_t *cmdbuf;		/* where commands are built */
#define CMDBUF_BYTES (64u << 10)

/* The last ring mapping seen (for pointing commands into it). */
static struct ring grave[NGRAVE];
static int ngrave;

static uint8_t *any_ring(void);

static uint64_t kernel_addr(void)
{
	static const uint64_t k[] = {
		0xffff888000000000ull, 0xffffffff81000000ull, 0xffffc90000000000ull, 0x8000000000000000ull,
		0x0000800000000000ull, 0xfffffffffffff000ull, 0, 1, 0x1000, 0x00007ffffffff000ull,
	};

	return k[rnd(sizeof(k) / sizeof(k[0]))];
}

/* An address that is bad to read from or write to. */
static uint64_t bad_addr(void)
{
	uint8_t *r;

	switch (rnd(6)) {
	case 0: return (uintptr_t)hole + rnd(4 * page);
	case 1: return (uintptr_t)none + rnd(4 * page);
	case 2: return (uintptr_t)ro + rnd(4 * page);
	case 3: return (uintptr_t)resp + RESP_BYTES - rnd(16);	/* runs off the end */
	case 4: r = any_ring(); if (r) return (uintptr_t)r + rnd(64); /* fallthrough */
	default: return kernel_addr();
	}
}

/* A buffer of n bytes for the kernel to write a response into. */
static void *resp_buf(void)
{
	memset(resp, 0xa5, 512);
	return resp;
}

/* A user buffer [addr, addr + len) for an MR: mostly good. */
static void pick_range(__u64 *addr, __u64 *len)
{
	uint64_t a, l;

	switch (rnd(20)) {
	case 0: a = (uintptr_t)big; l = BIG_BYTES; break;
	case 1: a = (uintptr_t)big + rnd(BIG_BYTES / 2); l = 1 + rnd(BIG_BYTES / 2); break;
	case 2: a = (uintptr_t)ro + rnd(page); l = 1 + rnd(3 * page); break;
	case 3: a = (uintptr_t)none; l = 1 + rnd(4 * page); break;
	case 4: a = (uintptr_t)hole + rnd(page); l = 1 + rnd(page); break;
	case 5: a = (uintptr_t)arena + (ARENA_PAGES - 1) * page; l = 2 * page; break;	/* runs off the end */
	case 6: a = kernel_addr(); l = page; break;
	case 7: a = (uintptr_t)arena + rnd(page); l = chance(50) ? 0 : ~0ull - rnd(page); break;
	case 8: a = (uintptr_t)arena; l = 1ull << (32 + rnd(20)); break;
	case 9: if (any_ring()) { a = (uintptr_t)any_ring(); l = page; break; } /* fallthrough */
	default:
		a = (uintptr_t)arena + rnd((ARENA_PAGES / 2) * page);
		l = 1 + rnd((ARENA_PAGES / 2) * page);
		break;
	}
	*addr = a;
	*len = l;
}

/* Access flags: mostly a valid combination, sometimes anything. */
static uint32_t pick_access(void)
{
	uint32_t a;

	switch (rnd(10)) {
	case 0: return rnd32();
	case 1: return 1u << rnd(32);
	case 2: return rnd32() & 0x3ff;
	default:
		a = rnd(32) & 0x1f;	/* LOCAL_WRITE .. MW_BIND */
		if (a & (IB_UVERBS_ACCESS_REMOTE_WRITE | IB_UVERBS_ACCESS_REMOTE_ATOMIC))
			a |= IB_UVERBS_ACCESS_LOCAL_WRITE;
		if (chance(10))
			a |= IB_UVERBS_ACCESS_RELAXED_ORDERING;
		return a;
	}
}

/* A count such as max_send_wr or cqe: mostly small, sometimes extreme. */
static uint32_t pick_count(uint32_t dev_max, uint32_t small)
{
	uint32_t v;

	switch (rnd(25)) {
	case 0: v = 0; break;
	case 1: v = 1; break;
	case 2: v = dev_max; break;
	case 3: v = dev_max + 1; break;
	case 4: v = 1u << 31; break;
	case 5: v = 0xffffffffu; break;
	case 6: v = rnd32(); break;
	case 7: v = 1 + rnd(cap_wr); break;
	default: v = 1 + rnd(small); break;
	}
	/* Within the device's limits but deep: only with -B (see the header). */
	if (!allow_big && v > (uint32_t)cap_wr && v <= dev_max)
		v = cap_wr;
	return v;
}

/* --- the tables of handles --------------------------------------------------------- */

static struct ctx *mine(void) { return slot < 0 ? NULL : &S->ctx[slot]; }
static struct ctx *shared(void) { return &S->ctx[MAXP]; }

static int nlive(struct ctx *c, int t)
{
	int n = 0;

	for (int i = 0; i < MAXOBJ; i++)
		n += c->o[t][i].used;
	return n;
}

static struct obj *live(struct ctx *c, int t)
{
	int n = nlive(c, t), k;

	if (!n)
		return NULL;
	k = rnd(n);
	for (int i = 0; i < MAXOBJ; i++)
		if (c->o[t][i].used && !k--)
			return &c->o[t][i];
	return NULL;
}

/* A live object of type t that satisfies f, if any (a few tries). */
static struct obj *live_if(struct ctx *c, int t, int (*f)(struct obj *))
{
	for (int i = 0; i < 6; i++) {
		struct obj *o = live(c, t);

		if (o && f(o))
			return o;
	}
	return NULL;
}

static struct obj *slot_for(struct ctx *c, int t)
{
	for (int i = 0; i < MAXOBJ; i++)
		if (!c->o[t][i].used)
			return &c->o[t][i];
	return NULL;
}

static void remember_stale(struct ctx *c, int t, uint32_t h)
{
	c->stale[t][c->nstale[t]++ % NSTALE] = h;
}

static void bury(struct ring *r);

/* The object is gone: forget it, keep its number as stale, its rings mapped. */
static void forget(struct ctx *c, int t, struct obj *o)
{
	if (!o->used)
		return;
	remember_stale(c, t, o->h);
	bury(&o->r[0]);
	bury(&o->r[1]);
	memset(o, 0, sizeof(*o));
}

static struct obj *find(struct ctx *c, int t, uint32_t h)
{
	for (int i = 0; i < MAXOBJ; i++)
		if (c->o[t][i].used && c->o[t][i].h == h)
			return &c->o[t][i];
	return NULL;
}

/*
 * The handle of an object of type t for a command on c: mostly a live one,
 * sometimes a stale one, one of another type, another context's, or junk.
 */
static uint32_t pick_handle(struct ctx *c, int t)
{
	struct obj *o;
	int k = mutating ? rnd(100) : 0;

	if (k < 70 || !mutating) {
		o = live(c, t);
		if (o)
			return o->h;
	}
	if (k < 80 && c->nstale[t])
		return c->stale[t][rnd(c->nstale[t] < NSTALE ? c->nstale[t] : NSTALE)];
	if (k < 88) {
		o = live(c, rnd(NT));
		if (o)
			return o->h;
	}
	if (k < 94) {
		struct ctx *f = &S->ctx[rnd(MAXP + 1)];

		o = live(f, t);
		if (o)
			return o->h;
	}
	switch (rnd(4)) {
	case 0: return rnd(16);
	case 1: return 0xffffffffu;
	case 2: return 0x80000000u;
	default: return rnd32();
	}
}

/* --- rings ---------------------------------------------------------------------------- */

static void bury(struct ring *r)
{
	if (!r->p) {
		memset(r, 0, sizeof(*r));
		return;
	}
	if (ngrave == NGRAVE) {
		munmap(grave[0].p, grave[0].len);
		memmove(grave, grave + 1, sizeof(grave[0]) * (NGRAVE - 1));
		ngrave--;
	}
	grave[ngrave++] = *r;
	memset(r, 0, sizeof(*r));
}

static uint8_t *any_ring(void)
{
	struct ctx *c;
	struct obj *o;

	if (slot < 0)
		return NULL;
	c = mine();
	for (int i = 0; i < 4; i++) {
		o = live(c, rnd(3) == 0 ? T_CQ : rnd(2) ? T_QP : T_SRQ);
		if (o && o->r[0].p)
			return o->r[0].p;
	}
	return ngrave ? grave[rnd(ngrave)].p : NULL;
}

static int map_ring(struct ctx *c, struct ring *r)
{
	void *p;
	int err = 0;

	if (r->p || !r->size || c != mine())
		return EINVAL;
	p = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, (off_t)r->off);
	if (p == MAP_FAILED) {
		err = errno;
	} else {
		r->p = p;
		r->len = r->size;
		if (!r->geom) {
			r->log2 = ((uint32_t *)p)[0];
			r->mask = ((uint32_t *)p)[1];
			r->geom = 1;
		}
		/* A header that does not fit the mapping is the kernel's bug;
		 * never index with it. */
		if (r->log2 > 16 || r->mask & (r->mask + 1) ||
		    384 + ((uint64_t)r->mask + 1) * (1ull << r->log2) > r->len) {
			fprintf(stderr, "# worker %d: ring header log2 %u mask %#x does not fit %zu bytes\n", slot,
				r->log2, r->mask, r->len);
			r->mask = 0;
			r->log2 = 0;
		}
	}
	count(OP_mmap, err);
	note("mmap off %#" PRIx64 " size %u -> %d", r->off, r->size, err);
	return err;
}

/* mmap with a wrong offset, size or protection. */
static void mmap_bad(struct ctx *c)
{
	struct obj *o = live(c, rnd(2) ? T_QP : T_CQ);
	off_t off = o ? (off_t)o->r[rnd(2) && o->r[1].size ? 1 : 0].off : 0;
	size_t len = page;
	int prot = PROT_READ | PROT_WRITE, flags = MAP_SHARED, err = 0;
	void *p;

	switch (rnd(7)) {
	case 0: off = (off_t)rnd32() * page; break;
	case 1: len = (o ? o->r[0].size : page) + page; break;	/* longer than the ring */
	case 2: flags = MAP_PRIVATE; break;
	case 3: prot |= PROT_EXEC; break;
	case 4: off += page; break;
	case 5: len = 64ull << 20; break;
	default: break;	/* the same ring again */
	}
	p = mmap(NULL, len, prot, flags, c->fd, off);
	if (p == MAP_FAILED) {
		err = errno;
	} else {
		/* Keep it as a ring of its own: scribbled on later. */
		struct ring r = { .p = p, .len = len, .size = (uint32_t)len };

		bury(&r);
	}
	count(OP_mmap_bad, err);
	note("mmap_bad off %#llx len %zu prot %d flags %d -> %d", (unsigned long long)off, len, prot, flags, err);
}

static volatile uint32_t *ring_prod(struct ring *r) { return (volatile uint32_t *)(r->p + 128); }
static volatile uint32_t *ring_cons(struct ring *r) { return (volatile uint32_t *)(r->p + 256); }
static uint8_t *ring_slot(struct ring *r, uint32_t i) { return r->p + 384 + ((size_t)(i & r->mask) << r->log2); }

/* --- ioctl -------------------------------------------------------------------------------- */

struct ioc {
	struct ib_uverbs_ioctl_hdr h;
	struct ib_uverbs_attr a[24];
};

static void ioc_init(struct ioc *q, uint16_t obj, uint16_t method)
{
	memset(q, 0, sizeof(*q));
	q->h.object_id = obj;
	q->h.method_id = method;
	q->h.driver_id = RDMA_DRIVER_RXE;
}

static struct ib_uverbs_attr *ioc_add(struct ioc *q, uint16_t id)
{
	struct ib_uverbs_attr *a = &q->a[q->h.num_attrs++];

	a->attr_id = id;
	a->flags = UVERBS_ATTR_F_MANDATORY;
	return a;
}

/* PTR_IN: up to 8 bytes inline, longer ones by pointer (into cmdbuf). */
static void ioc_in(struct ioc *q, uint16_t id, const void *p, size_t len)
{
	struct ib_uverbs_attr *a = ioc_add(q, id);
	static size_t used;

	a->len = (uint16_t)len;
	if (len <= 8) {
		memcpy(&a->data, p, len);
	} else {
		if (q->h.num_attrs == 1)
			used = 0;
		if (used + len > CMDBUF_BYTES)
			used = 0;
		memcpy(cmdbuf + used, p, len);
		a->data = (uintptr_t)(cmdbuf + used);
		used += (len + 7) & ~7ul;
	}
}

static void ioc_u32(struct ioc *q, uint16_t id, uint32_t v) { ioc_in(q, id, &v, 4); }
static void ioc_u64(struct ioc *q, uint16_t id, uint64_t v) { ioc_in(q, id, &v, 8); }

/* PTR_OUT into the response area, at offset off. */
static void ioc_out(struct ioc *q, uint16_t id, size_t off, size_t len)
{
	struct ib_uverbs_attr *a = ioc_add(q, id);

	a->len = (uint16_t)len;
	a->data = (uintptr_t)(resp + off);
}

static void ioc_out_ptr(struct ioc *q, uint16_t id, uint64_t p, size_t len)
{
	struct ib_uverbs_attr *a = ioc_add(q, id);

	a->len = (uint16_t)len;
	a->data = p;
}

static void ioc_idr(struct ioc *q, uint16_t id, uint32_t h)
{
	ioc_add(q, id)->data = h;
}

static void ioc_fd(struct ioc *q, uint16_t id, int fd)
{
	ioc_add(q, id)->data_s64 = fd;
}

/* Mutates an ioctl and sends it. Returns 0 or the errno. */
static int ioc_send(int fd, struct ioc *q)
{
	unsigned n = q->h.num_attrs;
	void *arg = q;

	if (mutating && n) {
		struct ib_uverbs_attr *a = &q->a[rnd(n)];

		switch (rnd(14)) {
		case 0: a->len = (uint16_t)rnd32(); break;
		case 1: a->data = bad_addr(); a->len = 16 + rnd(64); break;
		case 2: a->attr_id = (uint16_t)rnd(32); break;
		case 3: a->flags = (uint16_t)rnd32(); break;
		case 4: a->attr_data.reserved = (uint16_t)rnd32(); break;
		case 5: if (n < 24) { q->a[n] = *a; q->h.num_attrs++; } break;	/* the same attribute twice */
		case 6: q->h.num_attrs = (uint16_t)(n - 1 - rnd(n)); break;
		case 7: q->h.num_attrs = (uint16_t)(n + 1 + rnd(4)); break;
		case 8: q->h.reserved1 = rnd64(); break;
		case 9: q->h.length = (uint16_t)rnd32(); break;
		case 10: a->data = rnd64(); break;
		case 11: arg = (void *)(uintptr_t)bad_addr(); break;
		case 12: a->attr_id = UVERBS_ATTR_UHW_IN + rnd(3); break;
		default: q->h.driver_id = rnd32(); break;
		}
	}
	if (!q->h.length)
		q->h.length = (uint16_t)(sizeof(q->h) + q->h.num_attrs * sizeof(q->a[0]));
	return ioctl(fd, RDMA_VERBS_IOCTL, arg) ? errno : 0;
}

/* --- the commands ----------------------------------------------------------------------- */

/*
 * The core response length of a legacy command whose response is followed
 * by the driver's (the method's resp_size in uverbs_cmd.c).
 */
static size_t core_resp(uint32_t cmd, size_t out_len)
{
	size_t n;

	switch (cmd) {
	case IB_USER_VERBS_CMD_CREATE_CQ: case IB_USER_VERBS_CMD_RESIZE_CQ: n = 8; break;
	case IB_USER_VERBS_CMD_CREATE_QP: case IB_USER_VERBS_CMD_OPEN_QP: n = sizeof(struct ib_uverbs_create_qp_resp); break;
	case IB_USER_VERBS_CMD_CREATE_SRQ: case IB_USER_VERBS_CMD_CREATE_XSRQ: n = sizeof(struct ib_uverbs_create_srq_resp); break;
	case IB_USER_VERBS_CMD_CREATE_AH: case IB_USER_VERBS_CMD_ALLOC_PD: n = 4; break;
	default: n = out_len; break;
	}
	return n < out_len ? n : out_len;
}

/*
 * A write() command through UVERBS_METHOD_INVOKE_WRITE: the core as
 * UVERBS_ATTR_CORE_IN, the response as CORE_OUT (at the command's response
 * pointer), the driver's data as UHW_IN and UHW_OUT after the core
 * response. A forked worker cannot write() to the context its parent
 * opened (ib_safe_file_access: the credentials differ), but it can ioctl().
 */
static int via_ioctl(struct ctx *c, uint32_t cmd, const void *core, size_t core_len, const void *uin,
		     size_t uin_len, uint64_t rptr, size_t out_core, size_t out_drv)
{
	struct ioc q;

	ioc_init(&q, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE);
	ioc_u64(&q, UVERBS_ATTR_WRITE_CMD, cmd);
	if (core_len)
		ioc_in(&q, UVERBS_ATTR_CORE_IN, core, core_len);
	if (out_core)
		ioc_out_ptr(&q, UVERBS_ATTR_CORE_OUT, rptr, out_core);
	if (uin_len)
		ioc_in(&q, UVERBS_ATTR_UHW_IN, uin, uin_len);
	if (out_drv)
		ioc_out_ptr(&q, UVERBS_ATTR_UHW_OUT, rptr + out_core, out_drv);
	return ioc_send(c->fd, &q);
}

/* Legacy commands on an own context go through the ioctl this often (%). */
#define VIA_IOCTL_PCT 15

/*
 * Sends a legacy write() command: header, core (core_len bytes, starting
 * with the response pointer if has_resp) and driver data (uin_len bytes);
 * out_len is the response's length (core and driver). Mutates sizes,
 * the command number and the response pointer when mutating. Returns 0 or
 * the errno.
 */
static int xwrite(struct ctx *c, uint32_t cmd, void *core, size_t core_len, const void *uin, size_t uin_len,
		  size_t out_len, int has_resp)
{
	struct ib_uverbs_cmd_hdr *h = (void *)cmdbuf;
	size_t len, extra = 0;
	const void *wbuf = cmdbuf;
	ssize_t r;

	if (mutating) {
		if (has_resp && chance(15))
			*(uint64_t *)core = bad_addr();
		if (chance(15))
			flip_bytes(core, core_len);
		if (chance(10))
			extra = 8 * (1 + rnd(8));	/* driver data nobody asked for */
	}
	if (c == shared() || chance(VIA_IOCTL_PCT)) {
		uint64_t rptr = has_resp ? *(uint64_t *)core : (uintptr_t)resp;
		size_t oc = core_resp(cmd, out_len);

		return via_ioctl(c, cmd, core, core_len, uin, uin_len, rptr, oc, out_len - oc);
	}
	memcpy(cmdbuf + sizeof(*h), core, core_len);
	if (uin_len)
		memcpy(cmdbuf + sizeof(*h) + core_len, uin, uin_len);
	if (extra)
		rnd_bytes(cmdbuf + sizeof(*h) + core_len + uin_len, extra);
	len = sizeof(*h) + core_len + uin_len + extra;
	h->command = cmd;
	h->in_words = (uint16_t)(len / 4);
	h->out_words = (uint16_t)(out_len / 4);
	if (mutating) {
		switch (rnd(12)) {
		case 0: h->in_words += 1 + rnd(3); break;
		case 1: h->in_words -= 1 + rnd(h->in_words); break;
		case 2: h->out_words = rnd(2) ? 0 : (uint16_t)(h->out_words - 1); break;
		case 3: h->out_words = rnd(2) ? 0xffff : (uint16_t)(h->out_words + 1 + rnd(64)); break;
		case 4: len -= 4 * (1 + rnd(len / 4 - 1)); break;
		case 5: len += 4 * (1 + rnd(4)); break;
		case 6: h->command |= IB_USER_VERBS_CMD_FLAG_EXTENDED; break;
		case 7: h->command = rnd(2) ? rnd(64) : rnd32(); break;
		case 8: wbuf = (const void *)(uintptr_t)bad_addr(); break;
		default: break;
		}
	}
	r = write(c->fd, wbuf, len);
	return r == (ssize_t)len ? 0 : r < 0 ? errno : EMSGSIZE;
}

/* An extended command: header, ex header, core, driver data. */
static int xwrite_ex(struct ctx *c, uint32_t cmd, void *core, size_t core_len, const void *uin, size_t uin_len,
		     size_t core_out, size_t drv_out)
{
	struct ib_uverbs_cmd_hdr *h = (void *)cmdbuf;
	struct ib_uverbs_ex_cmd_hdr *x = (void *)(cmdbuf + sizeof(*h));
	size_t off = sizeof(*h) + sizeof(*x), len;
	ssize_t r;

	if (mutating && chance(15))
		flip_bytes(core, core_len);
	if (c == shared() || chance(VIA_IOCTL_PCT))
		return via_ioctl(c, IB_USER_VERBS_CMD_FLAG_EXTENDED | cmd, core, core_len, uin, uin_len,
				 (uintptr_t)resp_buf(), core_out, drv_out);
	memcpy(cmdbuf + off, core, core_len);
	if (uin_len)
		memcpy(cmdbuf + off + core_len, uin, uin_len);
	len = off + core_len + uin_len;
	h->command = IB_USER_VERBS_CMD_FLAG_EXTENDED | cmd;
	h->in_words = (uint16_t)(core_len / 8);
	h->out_words = (uint16_t)(core_out / 8);
	x->response = core_out + drv_out ? (uintptr_t)resp_buf() : 0;
	x->provider_in_words = (uint16_t)(uin_len / 8);
	x->provider_out_words = (uint16_t)(drv_out / 8);
	x->cmd_hdr_reserved = 0;
	if (mutating) {
		switch (rnd(10)) {
		case 0: h->in_words += 1; break;
		case 1: x->provider_in_words += 1 + rnd(3); break;
		case 2: x->response = bad_addr(); break;
		case 3: h->out_words = rnd(2) ? 0 : 0xffff; break;
		case 4: x->provider_out_words = (uint16_t)rnd(0x10000); break;
		case 5: x->cmd_hdr_reserved = rnd32(); break;
		case 6: len += 8; break;
		case 7: h->command &= ~IB_USER_VERBS_CMD_FLAG_EXTENDED; break;
		default: break;
		}
	}
	r = write(c->fd, cmdbuf, len);
	return r == (ssize_t)len ? 0 : r < 0 ? errno : EMSGSIZE;
}

/* The response area is only trusted when the command was not mutated. */
#define RESP_OK(err) (!(err) && !mutating)

static void cmd_query_device(struct ctx *c)
{
	struct ib_uverbs_query_device q = { .response = (uintptr_t)resp_buf() };
	int err = xwrite(c, IB_USER_VERBS_CMD_QUERY_DEVICE, &q, sizeof(q), NULL, 0,
			 sizeof(struct ib_uverbs_query_device_resp), 1);

	count(OP_query_device, err);
	note("query_device -> %d", err);
}

static void cmd_query_port(struct ctx *c)
{
	struct ib_uverbs_query_port q = { .response = (uintptr_t)resp_buf(), .port_num = 1 };
	int err;

	if (mutating)
		q.port_num = (uint8_t)rnd(4) * (rnd(2) ? 1 : 85);
	err = xwrite(c, IB_USER_VERBS_CMD_QUERY_PORT, &q, sizeof(q), NULL, 0, sizeof(struct ib_uverbs_query_port_resp), 1);
	count(OP_query_port, err);
	note("query_port %u -> %d", q.port_num, err);
}

static void cmd_get_context(struct ctx *c)
{
	struct ib_uverbs_get_context q = { .response = (uintptr_t)resp_buf() };
	int err = xwrite(c, IB_USER_VERBS_CMD_GET_CONTEXT, &q, sizeof(q), NULL, 0,
			 sizeof(struct ib_uverbs_get_context_resp), 1);

	/* A second GET_CONTEXT on a file must fail. */
	count(OP_get_context, err);
	note("get_context (again) -> %d", err);
	if (RESP_OK(err))
		close(((struct ib_uverbs_get_context_resp *)resp)->async_fd);
}

static void cmd_alloc_pd(struct ctx *c)
{
	struct ib_uverbs_alloc_pd q = { .response = (uintptr_t)resp_buf() };
	struct obj *o = slot_for(c, T_PD);
	int err;

	if (!o)
		return;
	err = xwrite(c, IB_USER_VERBS_CMD_ALLOC_PD, &q, sizeof(q), NULL, 0, sizeof(struct ib_uverbs_alloc_pd_resp), 1);
	count(OP_alloc_pd, err);
	if (RESP_OK(err)) {
		o->h = ((struct ib_uverbs_alloc_pd_resp *)resp)->pd_handle;
		o->used = 1;
	}
	note("alloc_pd -> %d h %u", err, o->h);
}

/* A destroy of type t through the legacy command. */
static void cmd_destroy(struct ctx *c, int t)
{
	uint32_t h = pick_handle(c, t);
	struct obj *o;
	int err = 0;
	enum op op;
	union {
		struct ib_uverbs_dealloc_pd pd;
		struct ib_uverbs_destroy_cq cq;
		struct ib_uverbs_destroy_qp qp;
		struct ib_uverbs_destroy_srq srq;
		struct ib_uverbs_dereg_mr mr;
		struct ib_uverbs_dealloc_mw mw;
		struct ib_uverbs_destroy_ah ah;
	} q;

	memset(&q, 0, sizeof(q));
	switch (t) {
	case T_PD:
		q.pd.pd_handle = h;
		op = OP_dealloc_pd;
		err = xwrite(c, IB_USER_VERBS_CMD_DEALLOC_PD, &q, sizeof(q.pd), NULL, 0, 0, 0);
		break;
	case T_CQ:
		q.cq.response = (uintptr_t)resp_buf();
		q.cq.cq_handle = h;
		op = OP_destroy_cq;
		err = xwrite(c, IB_USER_VERBS_CMD_DESTROY_CQ, &q, sizeof(q.cq), NULL, 0,
			     sizeof(struct ib_uverbs_destroy_cq_resp), 1);
		break;
	case T_QP:
		q.qp.response = (uintptr_t)resp_buf();
		q.qp.qp_handle = h;
		op = OP_destroy_qp;
		err = xwrite(c, IB_USER_VERBS_CMD_DESTROY_QP, &q, sizeof(q.qp), NULL, 0,
			     sizeof(struct ib_uverbs_destroy_qp_resp), 1);
		break;
	case T_SRQ:
		q.srq.response = (uintptr_t)resp_buf();
		q.srq.srq_handle = h;
		op = OP_destroy_srq;
		err = xwrite(c, IB_USER_VERBS_CMD_DESTROY_SRQ, &q, sizeof(q.srq), NULL, 0,
			     sizeof(struct ib_uverbs_destroy_srq_resp), 1);
		break;
	case T_MR:
		q.mr.mr_handle = h;
		op = OP_dereg_mr;
		err = xwrite(c, IB_USER_VERBS_CMD_DEREG_MR, &q, sizeof(q.mr), NULL, 0, 0, 0);
		break;
	case T_MW:
		q.mw.mw_handle = h;
		op = OP_dealloc_mw;
		err = xwrite(c, IB_USER_VERBS_CMD_DEALLOC_MW, &q, sizeof(q.mw), NULL, 0, 0, 0);
		break;
	default:
		q.ah.ah_handle = h;
		op = OP_destroy_ah;
		err = xwrite(c, IB_USER_VERBS_CMD_DESTROY_AH, &q, sizeof(q.ah), NULL, 0, 0, 0);
		break;
	}
	count(op, err);
	note("%s h %u -> %d", op_name[op], h, err);
	/* A destroy that did not say so may still have destroyed (a bad
	 * response pointer): then the handle is stale, which is fine too. */
	o = find(c, t, h);
	if (o && (!err || (mutating && err == EFAULT)))
		forget(c, t, o);
}

/*
 * A source GID index and a destination: mostly the IPv4 GID given on the
 * command line, sometimes another GID of the port (IPv6, link-local);
 * the destination is that GID itself (loopback) or its veth peer (the
 * last byte 1 <-> 2: 10.0.0.2, fd00::2).
 */
static void pick_gids(uint8_t *sgid_index, uint8_t *dgid)
{
	int i = -1;

	if (S->ngids && chance(40))
		i = rnd(S->ngids);
	*sgid_index = (uint8_t)(i < 0 ? S->gid_index : S->gidx[i]);
	memcpy(dgid, i < 0 ? S->gid : S->gids[i], 16);
	if (rnd(2) && dgid[0] != 0xfe)
		dgid[15] = dgid[15] == 2 ? 1 : 2;
}

static void fill_gid_attr(struct ib_uverbs_global_route *g, uint8_t *is_global)
{
	pick_gids(&g->sgid_index, g->dgid);
	g->hop_limit = 64;
	*is_global = 1;
	if (!mutating)
		return;
	switch (rnd(8)) {
	case 0: rnd_bytes(g->dgid, 16); break;
	case 1: g->dgid[0] = 0xff; g->dgid[1] = 0x0e; break;	/* multicast */
	case 2: g->sgid_index = (uint8_t)rnd(256); break;
	case 3: *is_global = 0; break;
	case 4: g->dgid[15] = (uint8_t)rnd(256); break;		/* 10.0.0.x: unresolved */
	case 5: memset(g->dgid, 0, 16); break;
	default: break;
	}
}

static void cmd_create_ah(struct ctx *c)
{
	struct ib_uverbs_create_ah q = { .response = (uintptr_t)resp_buf(), .user_handle = rnd64() };
	struct { struct ib_uverbs_create_ah_resp c; struct rxe_create_ah_resp d; } *r = (void *)resp;
	struct obj *o = slot_for(c, T_AH);
	int err;

	if (!o)
		return;
	q.pd_handle = pick_handle(c, T_PD);
	fill_gid_attr((struct ib_uverbs_global_route *)&q.attr.grh, &q.attr.is_global);
	q.attr.port_num = 1;
	q.attr.sl = (uint8_t)rnd(2);
	if (mutating) {
		if (chance(20))
			q.attr.port_num = (uint8_t)rnd(256);
		if (chance(10))
			q.attr.static_rate = (uint8_t)rnd(256);
		if (chance(10))
			q.attr.sl = (uint8_t)rnd(256);
	}
	err = xwrite(c, IB_USER_VERBS_CMD_CREATE_AH, &q, sizeof(q), NULL, 0,
		     mutating && chance(20) ? 4 : sizeof(*r), 1);
	count(OP_create_ah, err);
	if (RESP_OK(err)) {
		o->h = r->c.ah_handle;
		o->num = r->d.ah_num;
		o->used = 1;
	}
	note("create_ah pd %u -> %d h %u", q.pd_handle, err, o->h);
}

static void cmd_reg_mr(struct ctx *c)
{
	struct ib_uverbs_reg_mr q = { .response = (uintptr_t)resp_buf() };
	struct ib_uverbs_reg_mr_resp *r = (void *)resp;
	struct obj *o = slot_for(c, T_MR);
	int err;

	if (!o)
		return;
	if (mutating) {
		pick_range(&q.start, &q.length);
		q.access_flags = pick_access();
	} else {
		q.start = (uintptr_t)arena + rnd((ARENA_PAGES / 2) * page);
		q.length = 1 + rnd((ARENA_PAGES / 2) * page);
		q.access_flags = IB_UVERBS_ACCESS_LOCAL_WRITE | IB_UVERBS_ACCESS_REMOTE_WRITE |
				 IB_UVERBS_ACCESS_REMOTE_READ | IB_UVERBS_ACCESS_REMOTE_ATOMIC |
				 (rnd(2) ? IB_UVERBS_ACCESS_MW_BIND : 0);
		if (chance(20))
			q.access_flags = pick_access();
	}
	q.hca_va = chance(70) ? q.start : (rnd64() & ~0xfffull) | (q.start & 0xfff);
	q.pd_handle = pick_handle(c, T_PD);
	err = xwrite(c, IB_USER_VERBS_CMD_REG_MR, &q, sizeof(q), NULL, 0, sizeof(*r), 1);
	count(OP_reg_mr, err);
	if (RESP_OK(err)) {
		o->h = r->mr_handle;
		o->lkey = r->lkey;
		o->rkey = r->rkey;
		o->addr = q.hca_va;
		o->len = q.length;
		o->pd = q.pd_handle;
		o->used = 1;
	}
	note("reg_mr start %#llx len %#llx va %#llx pd %u access %#x -> %d h %u", (unsigned long long)q.start,
	     (unsigned long long)q.length, (unsigned long long)q.hca_va, q.pd_handle, q.access_flags, err, o->h);
}

static void cmd_rereg_mr(struct ctx *c)
{
	struct ib_uverbs_rereg_mr q = { .response = (uintptr_t)resp_buf() };
	struct ib_uverbs_rereg_mr_resp *r = (void *)resp;
	struct obj *o;
	int err;

	q.mr_handle = pick_handle(c, T_MR);
	q.flags = rnd(8);
	if (mutating && chance(30))
		q.flags = rnd32();
	pick_range(&q.start, &q.length);
	if (!mutating) {
		q.start = (uintptr_t)arena + rnd((ARENA_PAGES / 2) * page);
		q.length = 1 + rnd((ARENA_PAGES / 2) * page);
	}
	q.hca_va = chance(70) ? q.start : (rnd64() & ~0xfffull) | (q.start & 0xfff);
	q.pd_handle = pick_handle(c, T_PD);
	q.access_flags = pick_access();
	err = xwrite(c, IB_USER_VERBS_CMD_REREG_MR, &q, sizeof(q), NULL, 0, sizeof(*r), 1);
	count(OP_rereg_mr, err);
	o = find(c, T_MR, q.mr_handle);
	if (RESP_OK(err) && o) {
		o->lkey = r->lkey;
		o->rkey = r->rkey;
		if (q.flags & REREG_TRANS) {
			o->addr = q.hca_va;
			o->len = q.length;
		}
	}
	note("rereg_mr h %u flags %#x start %#llx len %#llx va %#llx pd %u access %#x -> %d", q.mr_handle, q.flags,
	     (unsigned long long)q.start, (unsigned long long)q.length, (unsigned long long)q.hca_va, q.pd_handle,
	     q.access_flags, err);
}

static void cmd_alloc_mw(struct ctx *c)
{
	struct ib_uverbs_alloc_mw q = { .response = (uintptr_t)resp_buf() };
	struct ib_uverbs_alloc_mw_resp *r = (void *)resp;
	struct obj *o = slot_for(c, T_MW);
	int err;

	if (!o)
		return;
	q.pd_handle = pick_handle(c, T_PD);
	q.mw_type = (uint8_t)(1 + rnd(2));
	if (mutating && chance(30))
		q.mw_type = (uint8_t)rnd(256);
	err = xwrite(c, IB_USER_VERBS_CMD_ALLOC_MW, &q, sizeof(q), NULL, 0, sizeof(*r), 1);
	count(OP_alloc_mw, err);
	if (RESP_OK(err)) {
		o->h = r->mw_handle;
		o->num = r->rkey;
		o->mw_type = q.mw_type;
		o->used = 1;
	}
	note("alloc_mw pd %u type %u -> %d h %u", q.pd_handle, q.mw_type, err, o->h);
}

/* COMP_CHANNEL: an fd, kept in a small list for create_cq. */
static int chans[4], nchans;

static void cmd_create_comp_channel(struct ctx *c)
{
	struct ib_uverbs_create_comp_channel q = { .response = (uintptr_t)resp_buf() };
	int err = xwrite(c, IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL, &q, sizeof(q), NULL, 0,
			 sizeof(struct ib_uverbs_create_comp_channel_resp), 1);

	count(OP_create_comp_channel, err);
	if (RESP_OK(err)) {
		int fd = (int)((struct ib_uverbs_create_comp_channel_resp *)resp)->fd;

		fcntl(fd, F_SETFL, O_NONBLOCK);
		if (nchans == 4) {
			close(chans[0]);
			memmove(chans, chans + 1, sizeof(chans[0]) * 3);
			nchans--;
		}
		chans[nchans++] = fd;
	}
	note("create_comp_channel -> %d", err);
}

static int pick_chan(void)
{
	if (!nchans || chance(50))
		return mutating && chance(20) ? (int)rnd(64) : -1;
	return chans[rnd(nchans)];
}

static void got_ring(struct ctx *c, struct ring *r, const struct mminfo *mi)
{
	r->off = mi->offset;
	r->size = mi->size;
	if (c == mine() && chance(80))
		map_ring(c, r);
}

static void cmd_create_cq(struct ctx *c, int ex)
{
	struct obj *o = slot_for(c, T_CQ);
	int err;
	uint32_t cqe = pick_count(S->max_cqe, 64), drv = sizeof(struct rxe_create_cq_resp);

	if (!o)
		return;
	if (mutating && chance(20))
		drv = rnd(2) ? 0 : 8;
	if (!ex) {
		struct ib_uverbs_create_cq q = { .response = (uintptr_t)resp_buf(), .user_handle = rnd64(), .cqe = cqe };
		struct { struct ib_uverbs_create_cq_resp c; struct rxe_create_cq_resp d; } *r = (void *)resp;

		q.comp_channel = pick_chan();
		q.comp_vector = mutating && chance(20) ? rnd32() : 0;
		err = xwrite(c, IB_USER_VERBS_CMD_CREATE_CQ, &q, sizeof(q), NULL, 0, sizeof(r->c) + drv, 1);
		count(OP_create_cq, err);
		if (RESP_OK(err)) {
			o->h = r->c.cq_handle;
			o->used = 1;
			if (drv)
				got_ring(c, &o->r[0], &r->d.mi);
		}
	} else {
		struct ib_uverbs_ex_create_cq q = { .user_handle = rnd64(), .cqe = cqe };
		struct { struct ib_uverbs_ex_create_cq_resp c; struct rxe_create_cq_resp d; } *r = (void *)resp;

		q.comp_channel = pick_chan();
		if (mutating) {
			q.flags = rnd(4);
			q.comp_mask = chance(20) ? rnd32() : 0;
		}
		err = xwrite_ex(c, IB_USER_VERBS_EX_CMD_CREATE_CQ, &q, sizeof(q), NULL, 0, sizeof(r->c), drv);
		count(OP_ex_create_cq, err);
		if (RESP_OK(err)) {
			o->h = r->c.base.cq_handle;
			o->used = 1;
			if (drv)
				got_ring(c, &o->r[0], &r->d.mi);
		}
	}
	note("create_cq%s cqe %u drv %u -> %d h %u", ex ? "(ex)" : "", cqe, drv, err, o->h);
}

static void cmd_resize_cq(struct ctx *c)
{
	struct ib_uverbs_resize_cq q = { .response = (uintptr_t)resp_buf() };
	struct { struct ib_uverbs_resize_cq_resp c; struct rxe_resize_cq_resp d; } *r = (void *)resp;
	struct obj *o;
	int err;

	q.cq_handle = pick_handle(c, T_CQ);
	q.cqe = pick_count(S->max_cqe, 128);
	err = xwrite(c, IB_USER_VERBS_CMD_RESIZE_CQ, &q, sizeof(q), NULL, 0,
		     sizeof(*r) - (mutating && chance(20) ? sizeof(r->d) : 0), 1);
	count(OP_resize_cq, err);
	o = find(c, T_CQ, q.cq_handle);
	if (RESP_OK(err) && o) {
		bury(&o->r[0]);
		got_ring(c, &o->r[0], &r->d.mi);
	}
	note("resize_cq h %u cqe %u -> %d", q.cq_handle, q.cqe, err);
}

static void cmd_poll_cq(struct ctx *c)
{
	struct ib_uverbs_poll_cq q = { .response = (uintptr_t)resp_buf() };
	int err;

	q.cq_handle = pick_handle(c, T_CQ);
	q.ne = 1 + rnd(16);
	if (mutating && chance(30))
		q.ne = rnd(2) ? 0 : rnd(16384);
	err = xwrite(c, IB_USER_VERBS_CMD_POLL_CQ, &q, sizeof(q), NULL, 0,
		     sizeof(struct ib_uverbs_poll_cq_resp) + q.ne * sizeof(struct ib_uverbs_wc), 1);
	count(OP_poll_cq, err);
	note("poll_cq h %u ne %u -> %d", q.cq_handle, q.ne, err);
}

static void cmd_req_notify_cq(struct ctx *c)
{
	struct ib_uverbs_req_notify_cq q = { .cq_handle = pick_handle(c, T_CQ), .solicited_only = rnd(2) };
	int err;

	if (mutating && chance(20))
		q.solicited_only = rnd32();
	err = xwrite(c, IB_USER_VERBS_CMD_REQ_NOTIFY_CQ, &q, sizeof(q), NULL, 0, 0, 0);
	count(OP_req_notify_cq, err);
	note("req_notify_cq h %u -> %d", q.cq_handle, err);
}

static uint8_t pick_qpt(void)
{
	static const uint8_t t[] = { QPT_RC, QPT_RC, QPT_RC, QPT_UC, QPT_UD, QPT_UD };

	if (mutating && chance(15))
		return rnd(3) ? (uint8_t)rnd(12) : (uint8_t)rnd(256);
	return t[rnd(sizeof(t))];
}

static void cmd_create_qp(struct ctx *c, int ex)
{
	struct obj *o = slot_for(c, T_QP);
	struct { struct ib_uverbs_ex_create_qp_resp c; struct rxe_create_qp_resp d; } *rx = (void *)resp;
	struct { struct ib_uverbs_create_qp_resp c; struct rxe_create_qp_resp d; } *r = (void *)resp;
	uint32_t pd, scq, rcq, srq = 0, swr, rwr, ssge, rsge, inl, drv = sizeof(struct rxe_create_qp_resp);
	uint8_t qpt = pick_qpt(), is_srq = chance(20);
	struct ib_uverbs_create_qp_resp *cr;
	struct rxe_create_qp_resp *dr;
	int err;

	if (!o)
		return;
	pd = pick_handle(c, T_PD);
	scq = pick_handle(c, T_CQ);
	rcq = chance(70) ? scq : pick_handle(c, T_CQ);
	if (is_srq)
		srq = pick_handle(c, T_SRQ);
	swr = pick_count(S->max_qp_wr, 32);
	rwr = pick_count(S->max_qp_wr, 32);
	ssge = chance(80) ? 1 + rnd(4) : pick_count(S->max_sge, S->max_sge);
	rsge = chance(80) ? 1 + rnd(4) : pick_count(S->max_sge, S->max_sge);
	inl = chance(70) ? rnd(128) : pick_count(S->max_sge * 16, 512);
	if (mutating && chance(15))
		drv = rnd(2) ? 0 : 16;
	if (!ex) {
		struct ib_uverbs_create_qp q = {
			.response = (uintptr_t)resp_buf(), .user_handle = rnd64(), .pd_handle = pd,
			.send_cq_handle = scq, .recv_cq_handle = rcq, .srq_handle = srq, .max_send_wr = swr,
			.max_recv_wr = rwr, .max_send_sge = ssge, .max_recv_sge = rsge, .max_inline_data = inl,
			.sq_sig_all = (uint8_t)rnd(2), .qp_type = qpt, .is_srq = is_srq,
		};
		/* rxe takes no driver data in: 8 bytes of it must be refused. */
		err = xwrite(c, IB_USER_VERBS_CMD_CREATE_QP, &q, sizeof(q), zeros,
			     mutating && chance(10) ? 8 : 0, sizeof(r->c) + drv, 1);
		count(OP_create_qp, err);
		cr = &r->c;
		dr = &r->d;
	} else {
		struct ib_uverbs_ex_create_qp q = {
			.user_handle = rnd64(), .pd_handle = pd, .send_cq_handle = scq, .recv_cq_handle = rcq,
			.srq_handle = srq, .max_send_wr = swr, .max_recv_wr = rwr, .max_send_sge = ssge,
			.max_recv_sge = rsge, .max_inline_data = inl, .sq_sig_all = (uint8_t)rnd(2), .qp_type = qpt,
			.is_srq = is_srq,
		};
		if (mutating) {
			q.create_flags = chance(50) ? 1u << rnd(16) : 0;
			q.comp_mask = chance(20) ? rnd32() : 0;
			q.source_qpn = chance(20) ? rnd32() : 0;
		}
		err = xwrite_ex(c, IB_USER_VERBS_EX_CMD_CREATE_QP, &q, sizeof(q), NULL, 0, sizeof(rx->c), drv);
		count(OP_ex_create_qp, err);
		cr = &rx->c.base;
		dr = &rx->d;
	}
	if (RESP_OK(err)) {
		o->h = cr->qp_handle;
		o->num = cr->qpn;
		o->qpt = qpt;
		o->state = S_RESET;
		o->pd = pd;
		o->scq = scq;
		o->rcq = rcq;
		o->srq = srq;
		o->used = 1;
		if (drv) {
			struct mminfo rq = dr->rq_mi, sq = dr->sq_mi;

			got_ring(c, &o->r[0], &sq);
			if (!is_srq)
				got_ring(c, &o->r[1], &rq);
		}
	}
	note("create_qp%s type %u pd %u cq %u/%u srq %u wr %u/%u sge %u/%u inline %u -> %d h %u qpn %#x", ex ? "(ex)" : "",
	     qpt, pd, scq, rcq, srq, swr, rwr, ssge, rsge, inl, err, o->h, o->num);
}

static void cmd_query_qp(struct ctx *c)
{
	struct ib_uverbs_query_qp q = { .response = (uintptr_t)resp_buf(), .qp_handle = pick_handle(c, T_QP) };
	int err;

	q.attr_mask = chance(50) ? 0xffffffffu : rnd32();
	err = xwrite(c, IB_USER_VERBS_CMD_QUERY_QP, &q, sizeof(q), NULL, 0, sizeof(struct ib_uverbs_query_qp_resp), 1);
	count(OP_query_qp, err);
	note("query_qp h %u mask %#x -> %d", q.qp_handle, q.attr_mask, err);
}

static int is_rc_uc(struct obj *o) { return o->qpt == QPT_RC || o->qpt == QPT_UC; }

static void fill_dest(struct ib_uverbs_qp_dest *d)
{
	pick_gids(&d->sgid_index, d->dgid);
	d->hop_limit = 64;
	d->is_global = 1;
	d->port_num = 1;
	if (mutating) {
		switch (rnd(8)) {
		case 0: rnd_bytes(d->dgid, 16); break;
		case 1: d->sgid_index = (uint8_t)rnd(256); break;
		case 2: d->is_global = 0; break;
		case 3: d->port_num = (uint8_t)rnd(256); break;
		case 4: d->dgid[0] = 0xff; break;
		case 5: d->static_rate = (uint8_t)rnd(256); break;
		case 6: d->dgid[15] = (uint8_t)rnd(256); break;	/* 10.0.0.x: unresolved */
		default: break;
		}
	}
}

/*
 * MODIFY_QP: mostly the next step of RESET -> INIT -> RTR -> RTS with the
 * attributes that step needs (RTR towards another QP of ours), sometimes
 * SQD, ERR or RESET, and random masks and values when mutating.
 */
static void cmd_modify_qp(struct ctx *c, int ex)
{
	struct ib_uverbs_ex_modify_qp x;
	struct ib_uverbs_modify_qp *m = &x.base;
	struct obj *o = chance(90) ? live(c, T_QP) : NULL, *peer;
	uint32_t mask;
	int err, to;

	memset(&x, 0, sizeof(x));
	m->qp_handle = o ? o->h : pick_handle(c, T_QP);
	to = o ? o->state + 1 : rnd(7);
	if (o && (o->state >= S_RTS || chance(5)))
		to = (int[]){ S_RESET, S_ERR, S_SQD, S_RTS, S_INIT }[rnd(5)];
	m->qp_state = (uint8_t)to;
	mask = QP_STATE;
	switch (to) {
	case S_INIT:
		mask |= QP_PKEY_INDEX | QP_PORT;
		m->port_num = 1;
		if (!o || is_rc_uc(o)) {
			mask |= QP_ACCESS_FLAGS;
			m->qp_access_flags = IB_UVERBS_ACCESS_REMOTE_WRITE | IB_UVERBS_ACCESS_REMOTE_READ |
					     IB_UVERBS_ACCESS_REMOTE_ATOMIC;
		} else {
			mask |= QP_QKEY;
			m->qkey = QKEY;
		}
		break;
	case S_RTR:
		if (!o || is_rc_uc(o)) {
			mask |= QP_AV | QP_PATH_MTU | QP_DEST_QPN | QP_RQ_PSN;
			fill_dest(&m->dest);
			m->path_mtu = (uint8_t)(1 + rnd(5));
			peer = live(c, T_QP);
			m->dest_qp_num = peer ? peer->num : rnd(1 << 24);
			m->rq_psn = rnd(1 << 24);
			if (!o || o->qpt == QPT_RC) {
				mask |= QP_MAX_DEST_RD_ATOMIC | QP_MIN_RNR_TIMER;
				m->max_dest_rd_atomic = (uint8_t)rnd(16);
				m->min_rnr_timer = (uint8_t)rnd(32);
			}
		}
		break;
	case S_RTS:
		mask |= QP_SQ_PSN;
		m->sq_psn = rnd(1 << 24);
		if (!o || o->qpt == QPT_RC) {
			mask |= QP_TIMEOUT | QP_RETRY_CNT | QP_RNR_RETRY | QP_MAX_QP_RD_ATOMIC;
			m->timeout = (uint8_t)(8 + rnd(8));
			m->retry_cnt = (uint8_t)rnd(8);
			m->rnr_retry = (uint8_t)rnd(8);
			m->max_rd_atomic = (uint8_t)rnd(16);
		}
		break;
	case S_SQD:
		if (chance(50)) {
			mask |= QP_EN_SQD_ASYNC_NOTIFY;
			m->en_sqd_async_notify = 1;
		}
		break;
	default:
		break;
	}
	if (mutating) {
		switch (rnd(8)) {
		case 0: mask = rnd32(); break;
		case 1: mask |= 1u << rnd(26); break;
		case 2: mask &= ~(1u << rnd(21)); break;
		case 3: m->qp_state = (uint8_t)rnd(256); break;
		case 4: mask |= QP_CUR_STATE; m->cur_qp_state = (uint8_t)rnd(8); break;
		case 5: mask |= QP_CAP; break;
		case 6: mask |= QP_ALT_PATH; fill_dest(&m->alt_dest); m->alt_port_num = (uint8_t)rnd(3); break;
		default: break;
		}
		if (chance(30)) {
			m->path_mtu = (uint8_t)rnd(8);
			m->timeout = (uint8_t)rnd(256);
			m->max_rd_atomic = (uint8_t)rnd(256);
			m->max_dest_rd_atomic = (uint8_t)rnd(256);
			m->pkey_index = (uint16_t)rnd(128);
			m->qp_access_flags = pick_access();
			m->port_num = (uint8_t)rnd(4);
		}
		if (chance(20))
			rnd_bytes(&m->dest, sizeof(m->dest));
	}
	m->attr_mask = mask;
	if (!ex) {
		err = xwrite(c, IB_USER_VERBS_CMD_MODIFY_QP, m, sizeof(*m), NULL, 0, 0, 0);
		count(OP_modify_qp, err);
	} else {
		x.rate_limit = mutating && chance(30) ? rnd32() : 0;
		if (x.rate_limit)
			m->attr_mask |= QP_RATE_LIMIT;
		err = xwrite_ex(c, IB_USER_VERBS_EX_CMD_MODIFY_QP, &x, sizeof(x), NULL, 0,
				sizeof(struct ib_uverbs_ex_modify_qp_resp), 0);
		count(OP_ex_modify_qp, err);
	}
	if (!err && o && find(c, T_QP, m->qp_handle) == o && (m->attr_mask & QP_STATE)) {
		o->state = m->qp_state <= S_ERR ? m->qp_state : o->state;
		if (m->qp_state == S_RTS)
			INC(qp_rts);
	}
	note("modify_qp%s h %u mask %#x state %u dest_qpn %#x -> %d", ex ? "(ex)" : "", m->qp_handle, m->attr_mask,
	     m->qp_state, m->dest_qp_num, err);
}

/* POST_SEND through the command (uverbs parses the WRs; rxe rings the doorbell). */
static void cmd_post_send(struct ctx *c, int doorbell_only)
{
	uint8_t buf[1024];
	struct ib_uverbs_post_send *q = (void *)buf;
	struct ib_uverbs_send_wr *wr;
	struct ib_uverbs_sge *sge;
	uint32_t n = doorbell_only ? 0 : rnd(4), nsge = 0, wqe = sizeof(*wr);
	int err;

	memset(buf, 0, sizeof(buf));
	q->response = (uintptr_t)resp_buf();
	q->qp_handle = pick_handle(c, T_QP);
	if (!n && !mutating)
		wqe = 128;	/* what librxe's doorbell says: sizeof(struct ibv_send_wr) */
	wr = (void *)(q + 1);
	for (uint32_t i = 0; i < n; i++) {
		struct obj *mr = live(c, T_MR), *ah = live(c, T_AH);

		wr[i].wr_id = rnd64();
		wr[i].opcode = rnd(2) ? IB_UVERBS_WR_SEND : rnd(14);
		wr[i].num_sge = rnd(3);
		wr[i].send_flags = rnd(16);
		wr[i].wr.rdma.remote_addr = mr ? mr->addr : rnd64();
		wr[i].wr.rdma.rkey = mr ? mr->rkey : rnd32();
		if (rnd(2)) {
			wr[i].wr.ud.ah = ah ? ah->h : rnd(8);
			wr[i].wr.ud.remote_qpn = rnd(1 << 24);
			wr[i].wr.ud.remote_qkey = QKEY;
		}
		nsge += wr[i].num_sge;
	}
	sge = (void *)(wr + n);
	for (uint32_t i = 0; i < nsge; i++) {
		struct obj *mr = live(c, T_MR);

		sge[i].addr = mr ? mr->addr : (uintptr_t)arena;
		sge[i].length = mr ? (uint32_t)(mr->len < 256 ? mr->len : 256) : 64;
		sge[i].lkey = mr ? mr->lkey : rnd32();
	}
	q->wr_count = n;
	q->sge_count = nsge;
	q->wqe_size = wqe;
	if (mutating) {
		switch (rnd(6)) {
		case 0: q->wr_count = rnd(2) ? n + 1 + rnd(4) : rnd32(); break;
		case 1: q->sge_count = rnd(2) ? nsge + 1 : rnd32(); break;
		case 2: q->wqe_size = rnd(2) ? rnd(sizeof(*wr)) : rnd32(); break;
		case 3: if (n) wr[rnd(n)].num_sge = rnd(2) ? 1000 : rnd32(); break;
		default: break;
		}
	}
	err = xwrite(c, IB_USER_VERBS_CMD_POST_SEND, q,
		     sizeof(*q) + n * sizeof(*wr) + nsge * sizeof(*sge), NULL, 0,
		     sizeof(struct ib_uverbs_post_send_resp), 1);
	count(doorbell_only ? OP_doorbell : OP_post_send, err);
	note("%s qp %u wrs %u sges %u -> %d", doorbell_only ? "doorbell" : "post_send", q->qp_handle, n, nsge, err);
}

static void cmd_post_recv(struct ctx *c, int srq)
{
	uint8_t buf[512];
	struct ib_uverbs_post_recv *q = (void *)buf;
	struct ib_uverbs_recv_wr *wr = (void *)(q + 1);
	struct ib_uverbs_sge *sge;
	uint32_t n = rnd(4), nsge = 0;
	int err;

	memset(buf, 0, sizeof(buf));
	q->response = (uintptr_t)resp_buf();
	q->qp_handle = pick_handle(c, srq ? T_SRQ : T_QP);	/* same layout as post_srq_recv */
	for (uint32_t i = 0; i < n; i++) {
		wr[i].wr_id = rnd64();
		wr[i].num_sge = rnd(3);
		nsge += wr[i].num_sge;
	}
	sge = (void *)(wr + n);
	for (uint32_t i = 0; i < nsge; i++) {
		struct obj *mr = live(c, T_MR);

		sge[i].addr = mr ? mr->addr : (uintptr_t)arena;
		sge[i].length = 64;
		sge[i].lkey = mr ? mr->lkey : rnd32();
	}
	q->wr_count = n;
	q->sge_count = nsge;
	q->wqe_size = sizeof(*wr);
	if (mutating) {
		switch (rnd(4)) {
		case 0: q->wr_count = rnd32(); break;
		case 1: q->sge_count = nsge + 1 + rnd(3); break;
		case 2: q->wqe_size = rnd32(); break;
		default: break;
		}
	}
	err = xwrite(c, srq ? IB_USER_VERBS_CMD_POST_SRQ_RECV : IB_USER_VERBS_CMD_POST_RECV, q,
		     sizeof(*q) + n * sizeof(*wr) + nsge * sizeof(*sge), NULL, 0,
		     sizeof(struct ib_uverbs_post_recv_resp), 1);
	count(srq ? OP_post_srq_recv : OP_post_recv, err);
	note("post_%srecv h %u wrs %u -> %d", srq ? "srq_" : "", q->qp_handle, n, err);
}

static int is_ud(struct obj *o) { return o->qpt == QPT_UD; }

static void cmd_mcast(struct ctx *c, int attach)
{
	struct ib_uverbs_attach_mcast q = { .mlid = 0 };
	struct obj *o = live_if(c, T_QP, is_ud);
	int err;

	q.qp_handle = o && !mutating ? o->h : pick_handle(c, T_QP);
	if (rnd(2)) {	/* an IPv4-mapped 239.x.y.z */
		q.gid[10] = q.gid[11] = 0xff;
		q.gid[12] = 239;
		q.gid[13] = 1;
		q.gid[14] = (uint8_t)rnd(4);
		q.gid[15] = (uint8_t)rnd(4);
	} else {
		q.gid[0] = 0xff;
		q.gid[1] = 0x0e;
		q.gid[15] = (uint8_t)rnd(4);
	}
	if (mutating && chance(40))
		rnd_bytes(q.gid, 16);
	if (mutating && chance(20))
		q.mlid = (uint16_t)rnd32();
	err = xwrite(c, attach ? IB_USER_VERBS_CMD_ATTACH_MCAST : IB_USER_VERBS_CMD_DETACH_MCAST, &q, sizeof(q),
		     NULL, 0, 0, 0);
	count(attach ? OP_attach_mcast : OP_detach_mcast, err);
	note("%s_mcast qp %u -> %d", attach ? "attach" : "detach", q.qp_handle, err);
}

static void cmd_create_srq(struct ctx *c, int xsrq)
{
	struct { struct ib_uverbs_create_srq_resp c; struct rxe_create_srq_resp d; } *r = (void *)resp;
	struct obj *o = slot_for(c, T_SRQ);
	uint32_t wr = pick_count(S->max_srq_wr, 32), sge = chance(80) ? 1 + rnd(4) : pick_count(S->max_srq_sge, 27);
	uint32_t limit = chance(80) ? 0 : pick_count(wr, 16), drv = sizeof(r->d);
	int err;

	if (!o)
		return;
	if (mutating && chance(20))
		drv = rnd(2) ? 0 : 8;
	if (!xsrq) {
		struct ib_uverbs_create_srq q = {
			.response = (uintptr_t)resp_buf(), .user_handle = rnd64(), .pd_handle = pick_handle(c, T_PD),
			.max_wr = wr, .max_sge = sge, .srq_limit = limit,
		};
		err = xwrite(c, IB_USER_VERBS_CMD_CREATE_SRQ, &q, sizeof(q), NULL, 0, sizeof(r->c) + drv, 1);
		count(OP_create_srq, err);
	} else {
		struct ib_uverbs_create_xsrq q = {
			.response = (uintptr_t)resp_buf(), .user_handle = rnd64(), .srq_type = rnd(3),
			.pd_handle = pick_handle(c, T_PD), .max_wr = wr, .max_sge = sge, .srq_limit = limit,
			.max_num_tags = rnd(2) ? 0 : rnd32(), .xrcd_handle = rnd(4), .cq_handle = pick_handle(c, T_CQ),
		};
		err = xwrite(c, IB_USER_VERBS_CMD_CREATE_XSRQ, &q, sizeof(q), NULL, 0, sizeof(r->c) + drv, 1);
		count(OP_create_xsrq, err);
	}
	if (RESP_OK(err)) {
		o->h = r->c.srq_handle;
		o->num = r->d.srq_num;
		o->used = 1;
		if (drv)
			got_ring(c, &o->r[0], &r->d.mi);
	}
	note("create_%s wr %u sge %u limit %u drv %u -> %d h %u", xsrq ? "xsrq" : "srq", wr, sge, limit, drv, err, o->h);
}

static void cmd_modify_srq(struct ctx *c)
{
	struct ib_uverbs_modify_srq q = { .srq_handle = pick_handle(c, T_SRQ) };
	struct rxe_modify_srq_cmd d;
	struct mminfo *mi = (void *)(resp + 4096);
	struct obj *o;
	size_t dlen = sizeof(d);
	int err;

	memset(mi, 0, sizeof(*mi));
	q.attr_mask = rnd(4);
	q.max_wr = pick_count(S->max_srq_wr, 64);
	q.srq_limit = rnd(2) ? rnd(q.max_wr + 1) : pick_count(S->max_srq_wr, 16);
	d.mmap_info_addr = (uintptr_t)mi;
	if (mutating) {
		if (chance(30))
			d.mmap_info_addr = bad_addr();
		if (chance(15))
			dlen = 0;
		if (chance(10))
			q.attr_mask = rnd32();
	}
	err = xwrite(c, IB_USER_VERBS_CMD_MODIFY_SRQ, &q, sizeof(q), &d, dlen, 0, 0);
	count(OP_modify_srq, err);
	o = find(c, T_SRQ, q.srq_handle);
	if (!err && o && (q.attr_mask & SRQ_MAX_WR) && d.mmap_info_addr == (uintptr_t)mi && mi->size) {
		bury(&o->r[0]);
		got_ring(c, &o->r[0], mi);
	}
	note("modify_srq h %u mask %#x max_wr %u limit %u -> %d", q.srq_handle, q.attr_mask, q.max_wr, q.srq_limit, err);
}

static void cmd_query_srq(struct ctx *c)
{
	struct ib_uverbs_query_srq q = { .response = (uintptr_t)resp_buf(), .srq_handle = pick_handle(c, T_SRQ) };
	int err = xwrite(c, IB_USER_VERBS_CMD_QUERY_SRQ, &q, sizeof(q), NULL, 0,
			 sizeof(struct ib_uverbs_query_srq_resp), 1);

	count(OP_query_srq, err);
	note("query_srq h %u -> %d", q.srq_handle, err);
}

/* XRC: rxe has none; OPEN_XRCD, CLOSE_XRCD and OPEN_QP must fail cleanly. */
static void cmd_xrcd_open_qp(struct ctx *c)
{
	int err;

	switch (rnd(3)) {
	case 0: {
		struct ib_uverbs_open_xrcd q = { .response = (uintptr_t)resp_buf(), .fd = rnd(2) ? -1u : (uint32_t)c->fd,
						 .oflags = rnd(2) ? O_CREAT : rnd32() };
		err = xwrite(c, IB_USER_VERBS_CMD_OPEN_XRCD, &q, sizeof(q), NULL, 0,
			     sizeof(struct ib_uverbs_open_xrcd_resp), 1);
		break;
	}
	case 1: {
		struct ib_uverbs_close_xrcd q = { .xrcd_handle = rnd(8) };
		err = xwrite(c, IB_USER_VERBS_CMD_CLOSE_XRCD, &q, sizeof(q), NULL, 0, 0, 0);
		break;
	}
	default: {
		struct obj *qp = live(c, T_QP);
		struct ib_uverbs_open_qp q = { .response = (uintptr_t)resp_buf(), .user_handle = rnd64(),
					       .pd_handle = pick_handle(c, T_PD), .qpn = qp ? qp->num : rnd32(),
					       .qp_type = pick_qpt() };
		err = xwrite(c, IB_USER_VERBS_CMD_OPEN_QP, &q, sizeof(q), NULL, 0,
			     sizeof(struct ib_uverbs_create_qp_resp), 1);
		break;
	}
	}
	count(OP_xrcd_open_qp, err);
	note("xrcd/open_qp -> %d", err);
}

/* A command number and payload from nowhere. */
static void cmd_write_random(struct ctx *c)
{
	uint8_t core[256];
	uint32_t cmd = rnd(2) ? rnd(45) : rnd(2) ? IB_USER_VERBS_CMD_FLAG_EXTENDED | rnd(64) : rnd32();
	size_t len = 8 * rnd(sizeof(core) / 8);
	int err, save = mutating;

	rnd_bytes(core, sizeof(core));
	*(uint64_t *)core = rnd(2) ? (uintptr_t)resp_buf() : bad_addr();
	/* GET_CONTEXT on an open context is refused; anything may follow from it
	 * otherwise (a new async fd), which is fine. */
	mutating = 1;
	if (cmd & IB_USER_VERBS_CMD_FLAG_EXTENDED)
		err = xwrite_ex(c, cmd & 0xff, core, len, core + 128, 8 * rnd(4), 8 * rnd(8), 8 * rnd(4));
	else
		err = xwrite(c, cmd, core, len, NULL, 0, 4 * rnd(64), 1);
	mutating = save;
	count(OP_write_random, err);
	note("write_random cmd %#x len %zu -> %d", cmd, len, err);
}

static void cmd_ex_query_device(struct ctx *c)
{
	struct ib_uverbs_ex_query_device q = { .comp_mask = 0 };
	int err;

	if (mutating)
		q.comp_mask = rnd32(), q.reserved = rnd(2) ? 0 : rnd32();
	err = xwrite_ex(c, IB_USER_VERBS_EX_CMD_QUERY_DEVICE, &q, sizeof(q), NULL, 0,
			rnd(2) ? sizeof(struct ib_uverbs_ex_query_device_resp) : 8 * (1 + rnd(40)), 0);
	count(OP_ex_query_device, err);
	note("ex_query_device -> %d", err);
}

/* The extended commands rxe does not implement: WQs, indirection tables,
 * flows, modify CQ. */
static void cmd_ex_other(struct ctx *c)
{
	uint8_t core[128];
	static const uint32_t cmds[] = {
		IB_USER_VERBS_EX_CMD_CREATE_FLOW, IB_USER_VERBS_EX_CMD_DESTROY_FLOW, IB_USER_VERBS_EX_CMD_CREATE_WQ,
		IB_USER_VERBS_EX_CMD_MODIFY_WQ, IB_USER_VERBS_EX_CMD_DESTROY_WQ, IB_USER_VERBS_EX_CMD_CREATE_RWQ_IND_TBL,
		IB_USER_VERBS_EX_CMD_DESTROY_RWQ_IND_TBL, IB_USER_VERBS_EX_CMD_MODIFY_CQ,
	};
	uint32_t cmd = cmds[rnd(sizeof(cmds) / sizeof(cmds[0]))];
	int err;

	memset(core, 0, sizeof(core));
	if (cmd == IB_USER_VERBS_EX_CMD_MODIFY_CQ) {
		struct ib_uverbs_ex_modify_cq *m = (void *)core;

		m->cq_handle = pick_handle(c, T_CQ);
		m->attr_mask = 1;
		m->attr.cq_count = (uint16_t)rnd32();
		m->attr.cq_period = (uint16_t)rnd32();
	} else if (cmd == IB_USER_VERBS_EX_CMD_CREATE_WQ) {
		struct ib_uverbs_ex_create_wq *w = (void *)core;

		w->pd_handle = pick_handle(c, T_PD);
		w->cq_handle = pick_handle(c, T_CQ);
		w->max_wr = rnd(64);
		w->max_sge = rnd(4);
	} else {
		rnd_bytes(core, sizeof(core));
		((uint32_t *)core)[1] = pick_handle(c, T_QP);
	}
	err = xwrite_ex(c, cmd, core, 8 * (1 + rnd(8)), NULL, 0, 8 * rnd(3), 0);
	count(OP_ex_other, err);
	note("ex_other cmd %u -> %d", cmd, err);
}

static void io_device(struct ctx *c)
{
	struct ioc q;
	int err, which = rnd(5);
	enum op op;

	switch (which) {
	case 0:
		ioc_init(&q, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT);
		ioc_u64(&q, UVERBS_ATTR_QUERY_PORT_PORT_NUM, mutating ? rnd(4) : 1);
		ioc_out(&q, UVERBS_ATTR_QUERY_PORT_RESP, 0, sizeof(struct ib_uverbs_query_port_resp_ex));
		op = OP_io_query_port;
		break;
	case 1:
		ioc_init(&q, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_CONTEXT);
		ioc_out(&q, UVERBS_ATTR_QUERY_CONTEXT_NUM_COMP_VECTORS, 0, 4);
		ioc_out(&q, UVERBS_ATTR_QUERY_CONTEXT_CORE_SUPPORT, 8, 8);
		op = OP_io_query_context;
		break;
	case 2:
		ioc_init(&q, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INFO_HANDLES);
		ioc_u64(&q, UVERBS_ATTR_INFO_OBJECT_ID, rnd(2) ? rnd(17) : rnd32());
		ioc_out(&q, UVERBS_ATTR_INFO_TOTAL_HANDLES, 0, 4);
		ioc_out(&q, UVERBS_ATTR_INFO_HANDLES_LIST, 8, 4 * (1 + rnd(64)));
		op = OP_io_info_handles;
		break;
	case 3:
		ioc_init(&q, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_GID_TABLE);
		ioc_u64(&q, UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE,
			mutating ? rnd(64) : sizeof(struct ib_uverbs_gid_entry));
		ioc_u32(&q, UVERBS_ATTR_QUERY_GID_TABLE_FLAGS, 0);
		ioc_out(&q, UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES, 64,
			sizeof(struct ib_uverbs_gid_entry) * (mutating ? rnd(64) : 16));
		ioc_out(&q, UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES, 0, 8);
		op = OP_io_gid_table;
		break;
	default:
		ioc_init(&q, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_GID_ENTRY);
		ioc_u64(&q, UVERBS_ATTR_QUERY_GID_ENTRY_PORT, mutating ? rnd(4) : 1);
		ioc_u64(&q, UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX, mutating ? rnd32() : rnd(4));
		ioc_u32(&q, UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS, 0);
		ioc_out(&q, UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY, 0, sizeof(struct ib_uverbs_gid_entry));
		op = OP_io_gid_entry;
		break;
	}
	err = ioc_send(c->fd, &q);
	count(op, err);
	note("%s -> %d", op_name[op], err);
}

/* A legacy command through UVERBS_METHOD_INVOKE_WRITE. */
static void io_invoke_write(struct ctx *c)
{
	struct ioc q;
	uint8_t core[128];
	uint32_t cmd;
	size_t len = 0, out = 0;
	int err;

	memset(core, 0, sizeof(core));
	switch (rnd(6)) {
	case 0: {
		struct ib_uverbs_alloc_pd *p = (void *)core;

		cmd = IB_USER_VERBS_CMD_ALLOC_PD;
		p->response = (uintptr_t)resp;
		len = sizeof(*p);
		out = sizeof(struct ib_uverbs_alloc_pd_resp);
		break;
	}
	case 1: {
		struct ib_uverbs_post_send *p = (void *)core;

		cmd = IB_USER_VERBS_CMD_POST_SEND;	/* a doorbell */
		p->qp_handle = pick_handle(c, T_QP);
		p->wqe_size = 128;
		len = sizeof(*p);
		out = 4;
		break;
	}
	case 2: {
		struct ib_uverbs_query_qp *p = (void *)core;

		cmd = IB_USER_VERBS_CMD_QUERY_QP;
		p->qp_handle = pick_handle(c, T_QP);
		p->attr_mask = rnd32();
		len = sizeof(*p);
		out = sizeof(struct ib_uverbs_query_qp_resp);
		break;
	}
	case 3: {
		struct ib_uverbs_req_notify_cq *p = (void *)core;

		cmd = IB_USER_VERBS_CMD_REQ_NOTIFY_CQ;
		p->cq_handle = pick_handle(c, T_CQ);
		len = sizeof(*p);
		break;
	}
	case 4: {
		struct ib_uverbs_dereg_mr *p = (void *)core;

		cmd = IB_USER_VERBS_CMD_DEREG_MR;
		p->mr_handle = pick_handle(c, T_MR);
		len = sizeof(*p);
		break;
	}
	default:
		cmd = rnd(48);
		rnd_bytes(core, sizeof(core));
		len = 8 * rnd(16);
		out = 8 * rnd(16);
		break;
	}
	ioc_init(&q, UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE);
	ioc_u64(&q, UVERBS_ATTR_WRITE_CMD, cmd);
	if (len)
		ioc_in(&q, UVERBS_ATTR_CORE_IN, core, len);
	if (out)
		ioc_out(&q, UVERBS_ATTR_CORE_OUT, 0, out);
	err = ioc_send(c->fd, &q);
	count(OP_io_invoke_write, err);
	/* An ALLOC_PD that worked leaves a PD this table does not know: the
	 * context's close frees it. */
	note("io_invoke_write cmd %u -> %d", cmd, err);
}

static void io_create_cq(struct ctx *c)
{
	struct obj *o = slot_for(c, T_CQ);
	struct ioc q;
	uint32_t cqe = pick_count(S->max_cqe, 64);
	int err, ch = pick_chan();

	if (!o)
		return;
	ioc_init(&q, UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_CREATE);
	ioc_idr(&q, UVERBS_ATTR_CREATE_CQ_HANDLE, 0);
	ioc_u32(&q, UVERBS_ATTR_CREATE_CQ_CQE, cqe);
	ioc_u64(&q, UVERBS_ATTR_CREATE_CQ_USER_HANDLE, rnd64());
	ioc_u32(&q, UVERBS_ATTR_CREATE_CQ_COMP_VECTOR, mutating && chance(20) ? rnd32() : 0);
	if (ch >= 0)
		ioc_fd(&q, UVERBS_ATTR_CREATE_CQ_COMP_CHANNEL, ch);
	if (chance(30))
		ioc_fd(&q, UVERBS_ATTR_CREATE_CQ_EVENT_FD, c->async_fd);
	if (mutating && chance(30))
		ioc_u32(&q, UVERBS_ATTR_CREATE_CQ_FLAGS, rnd(4));
	ioc_out(&q, UVERBS_ATTR_CREATE_CQ_RESP_CQE, 0, 4);
	ioc_out(&q, UVERBS_ATTR_UHW_OUT, 64, mutating && chance(20) ? rnd(16) : sizeof(struct rxe_create_cq_resp));
	q.a[q.h.num_attrs - 1].flags = 0;
	err = ioc_send(c->fd, &q);
	count(OP_io_create_cq, err);
	if (RESP_OK(err)) {
		o->h = (uint32_t)q.a[0].data;	/* the kernel wrote the new handle back */
		o->used = 1;
		got_ring(c, &o->r[0], &((struct rxe_create_cq_resp *)(resp + 64))->mi);
	}
	note("io_create_cq cqe %u -> %d h %u", cqe, err, o->h);
}

static void io_create_qp(struct ctx *c)
{
	struct obj *o = slot_for(c, T_QP);
	struct ib_uverbs_qp_cap cap = {
		.max_send_wr = pick_count(S->max_qp_wr, 32), .max_recv_wr = pick_count(S->max_qp_wr, 32),
		.max_send_sge = 1 + rnd(4), .max_recv_sge = 1 + rnd(4), .max_inline_data = rnd(128),
	};
	struct ioc q;
	uint32_t qpt = pick_qpt(), srq = 0;
	int err;

	if (!o)
		return;
	ioc_init(&q, UVERBS_OBJECT_QP, UVERBS_METHOD_QP_CREATE);
	ioc_idr(&q, UVERBS_ATTR_CREATE_QP_HANDLE, 0);
	ioc_idr(&q, UVERBS_ATTR_CREATE_QP_PD_HANDLE, pick_handle(c, T_PD));
	ioc_idr(&q, UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE, pick_handle(c, T_CQ));
	ioc_idr(&q, UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE, pick_handle(c, T_CQ));
	if (chance(20)) {
		srq = pick_handle(c, T_SRQ);
		ioc_idr(&q, UVERBS_ATTR_CREATE_QP_SRQ_HANDLE, srq);
	}
	ioc_u64(&q, UVERBS_ATTR_CREATE_QP_USER_HANDLE, rnd64());
	ioc_in(&q, UVERBS_ATTR_CREATE_QP_CAP, &cap, sizeof(cap));
	ioc_u64(&q, UVERBS_ATTR_CREATE_QP_TYPE, qpt);
	if (chance(30))
		ioc_u32(&q, UVERBS_ATTR_CREATE_QP_FLAGS, mutating ? rnd32() : IB_UVERBS_QP_CREATE_SQ_SIG_ALL);
	if (chance(30))
		ioc_fd(&q, UVERBS_ATTR_CREATE_QP_EVENT_FD, c->async_fd);
	if (mutating && chance(20))
		ioc_u32(&q, UVERBS_ATTR_CREATE_QP_SOURCE_QPN, rnd32());
	ioc_out(&q, UVERBS_ATTR_CREATE_QP_RESP_CAP, 0, sizeof(cap));
	ioc_out(&q, UVERBS_ATTR_CREATE_QP_RESP_QP_NUM, 32, 4);
	ioc_out(&q, UVERBS_ATTR_UHW_OUT, 64, sizeof(struct rxe_create_qp_resp));
	q.a[q.h.num_attrs - 1].flags = 0;
	err = ioc_send(c->fd, &q);
	count(OP_io_create_qp, err);
	if (RESP_OK(err)) {
		struct rxe_create_qp_resp *d = (void *)(resp + 64);
		struct mminfo rq = d->rq_mi, sq = d->sq_mi;

		o->h = (uint32_t)q.a[0].data;
		o->num = *(uint32_t *)(resp + 32);
		o->qpt = (uint8_t)qpt;
		o->state = S_RESET;
		o->used = 1;
		got_ring(c, &o->r[0], &sq);
		if (!srq)
			got_ring(c, &o->r[1], &rq);
	}
	note("io_create_qp type %u wr %u/%u -> %d h %u", qpt, cap.max_send_wr, cap.max_recv_wr, err, o->h);
}

static void io_create_srq(struct ctx *c)
{
	struct obj *o = slot_for(c, T_SRQ);
	struct ioc q;
	int err;

	if (!o)
		return;
	ioc_init(&q, UVERBS_OBJECT_SRQ, UVERBS_METHOD_SRQ_CREATE);
	ioc_idr(&q, UVERBS_ATTR_CREATE_SRQ_HANDLE, 0);
	ioc_idr(&q, UVERBS_ATTR_CREATE_SRQ_PD_HANDLE, pick_handle(c, T_PD));
	ioc_u64(&q, UVERBS_ATTR_CREATE_SRQ_TYPE, mutating ? rnd(4) : IB_UVERBS_SRQT_BASIC);
	ioc_u64(&q, UVERBS_ATTR_CREATE_SRQ_USER_HANDLE, rnd64());
	ioc_u32(&q, UVERBS_ATTR_CREATE_SRQ_MAX_WR, pick_count(S->max_srq_wr, 32));
	ioc_u32(&q, UVERBS_ATTR_CREATE_SRQ_MAX_SGE, 1 + rnd(4));
	ioc_u32(&q, UVERBS_ATTR_CREATE_SRQ_LIMIT, 0);
	ioc_out(&q, UVERBS_ATTR_CREATE_SRQ_RESP_MAX_WR, 0, 4);
	ioc_out(&q, UVERBS_ATTR_CREATE_SRQ_RESP_MAX_SGE, 8, 4);
	ioc_out(&q, UVERBS_ATTR_CREATE_SRQ_RESP_SRQ_NUM, 16, 4);
	ioc_out(&q, UVERBS_ATTR_UHW_OUT, 64, sizeof(struct rxe_create_srq_resp));
	q.a[q.h.num_attrs - 1].flags = 0;
	err = ioc_send(c->fd, &q);
	count(OP_io_create_srq, err);
	if (RESP_OK(err)) {
		struct rxe_create_srq_resp *d = (void *)(resp + 64);

		o->h = (uint32_t)q.a[0].data;
		o->num = d->srq_num;
		o->used = 1;
		got_ring(c, &o->r[0], &d->mi);
	}
	note("io_create_srq -> %d h %u", err, o->h);
}

/* A destroy method of any type, or QUERY_MR. */
static void io_destroy(struct ctx *c)
{
	static const struct { uint16_t obj, method, attr; int t; enum op op; size_t resp; } m[] = {
		{ UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_DESTROY, UVERBS_ATTR_DESTROY_CQ_HANDLE, T_CQ, OP_io_destroy_cq,
		  sizeof(struct ib_uverbs_destroy_cq_resp) },
		{ UVERBS_OBJECT_QP, UVERBS_METHOD_QP_DESTROY, UVERBS_ATTR_DESTROY_QP_HANDLE, T_QP, OP_io_destroy_qp,
		  sizeof(struct ib_uverbs_destroy_qp_resp) },
		{ UVERBS_OBJECT_SRQ, UVERBS_METHOD_SRQ_DESTROY, UVERBS_ATTR_DESTROY_SRQ_HANDLE, T_SRQ, OP_io_destroy_srq,
		  sizeof(struct ib_uverbs_destroy_srq_resp) },
		{ UVERBS_OBJECT_MR, UVERBS_METHOD_MR_DESTROY, UVERBS_ATTR_DESTROY_MR_HANDLE, T_MR, OP_io_destroy, 0 },
		{ UVERBS_OBJECT_PD, UVERBS_METHOD_PD_DESTROY, UVERBS_ATTR_DESTROY_PD_HANDLE, T_PD, OP_io_destroy, 0 },
		{ UVERBS_OBJECT_MW, UVERBS_METHOD_MW_DESTROY, UVERBS_ATTR_DESTROY_MW_HANDLE, T_MW, OP_io_destroy, 0 },
		{ UVERBS_OBJECT_AH, UVERBS_METHOD_AH_DESTROY, UVERBS_ATTR_DESTROY_AH_HANDLE, T_AH, OP_io_destroy, 0 },
		{ UVERBS_OBJECT_MR, UVERBS_METHOD_QUERY_MR, UVERBS_ATTR_QUERY_MR_HANDLE, T_MR, OP_io_query_mr, 0 },
	};
	int i = rnd(sizeof(m) / sizeof(m[0])), err;
	uint32_t h = pick_handle(c, m[i].t);
	struct ioc q;
	struct obj *o;

	ioc_init(&q, m[i].obj, m[i].method);
	ioc_idr(&q, m[i].attr, h);
	if (m[i].resp)
		ioc_out(&q, 1, 0, m[i].resp);
	if (m[i].op == OP_io_query_mr) {
		ioc_out(&q, UVERBS_ATTR_QUERY_MR_RESP_LKEY, 0, 4);
		ioc_out(&q, UVERBS_ATTR_QUERY_MR_RESP_RKEY, 8, 4);
		ioc_out(&q, UVERBS_ATTR_QUERY_MR_RESP_LENGTH, 16, 8);
		ioc_out(&q, UVERBS_ATTR_QUERY_MR_RESP_IOVA, 24, 8);
	}
	err = ioc_send(c->fd, &q);
	count(m[i].op, err);
	o = find(c, m[i].t, h);
	if (m[i].op != OP_io_query_mr && o && !err)
		forget(c, m[i].t, o);
	note("%s %s h %u -> %d", op_name[m[i].op], type_name[m[i].t], h, err);
}

static void io_async_alloc(struct ctx *c)
{
	struct ioc q;
	int err;

	ioc_init(&q, UVERBS_OBJECT_ASYNC_EVENT, UVERBS_METHOD_ASYNC_EVENT_ALLOC);
	ioc_idr(&q, UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE, 0);
	err = ioc_send(c->fd, &q);
	count(OP_io_async_alloc, err);
	if (!err && (int)q.a[0].data > 2)
		close((int)q.a[0].data);
	note("io_async_alloc -> %d", err);
}

/* Any object, any method, random attributes (DM, counters, flow actions...). */
static void io_random(struct ctx *c)
{
	struct ioc q;
	int n = rnd(8), err;

	ioc_init(&q, rnd(4) ? (uint16_t)rnd(20) : (uint16_t)(0x1000 | rnd(8)), (uint16_t)rnd(8));
	/* ib_core 6.12 leaks the caller's task_struct when this method fails
	 * (see -G): kmemleak would blame every run for it. */
	if (q.h.object_id == UVERBS_OBJECT_DEVICE && q.h.method_id == UVERBS_METHOD_GET_CONTEXT && !allow_getctx)
		q.h.method_id = UVERBS_METHOD_QUERY_CONTEXT;
	for (int i = 0; i < n; i++) {
		struct ib_uverbs_attr *a = ioc_add(&q, rnd(3) ? (uint16_t)rnd(16) : (uint16_t)(0x1000 | rnd(3)));

		a->flags = (uint16_t)rnd(2);
		switch (rnd(4)) {
		case 0: a->data = pick_handle(c, rnd(NT)); break;
		case 1: a->len = (uint16_t)(1 + rnd(64)); a->data = (uintptr_t)resp; break;
		case 2: a->len = (uint16_t)rnd(9); a->data = rnd64(); break;
		default: a->len = (uint16_t)rnd(256); a->data = bad_addr(); break;
		}
	}
	err = ioc_send(c->fd, &q);
	count(OP_io_random, err);
	note("io_random obj %u method %u attrs %d -> %d", q.h.object_id, q.h.method_id, n, err);
}

/* --- the rings themselves ------------------------------------------------------------------ */

static int has_sq(struct obj *o) { return o->r[0].p && o->r[0].mask; }
static int rts_sq(struct obj *o) { return has_sq(o) && o->state == S_RTS; }

static void fill_sge(struct ctx *c, struct rxe_sge *s, uint32_t *total)
{
	struct obj *mr = live(c, T_MR);
	uint32_t len = 1 + rnd(2048);

	if (mr && mr->len) {
		uint64_t off = mr->len > len ? rnd((uint32_t)(mr->len - len < 1u << 30 ? mr->len - len : 1u << 30)) : 0;

		s->addr = mr->addr + off;
		s->length = mr->len < len ? (uint32_t)mr->len : len;
		s->lkey = mr->lkey;
	} else {
		s->addr = (uintptr_t)arena;
		s->length = 64;
		s->lkey = rnd32();
	}
	if (mutating && !clean_rings && chance(20)) {
		switch (rnd(3)) {
		case 0: s->length = rnd32(); break;
		case 1: s->addr = rnd64(); break;
		default: s->lkey = rnd32(); break;
		}
	}
	*total += s->length;
}

/*
 * One send WQE written into a mapped SQ the way librxe writes it (mostly
 * well formed: SEND, WRITE, READ, atomics, BIND_MW, LOCAL_INV towards our
 * own MRs and QPs), the producer index advanced, and the doorbell rung.
 */
static void ring_post_send(struct ctx *c)
{
	/* Mostly a QP in RTS (the doorbell of one in another state is refused). */
	struct obj *qp = chance(75) ? live_if(c, T_QP, rts_sq) : NULL, *mr, *mw, *peer;
	struct ring *r;
	struct rxe_send_wqe *w;
	uint32_t prod, cons, total = 0, nsge, maxsge, opcode = ~0u;
	static const uint32_t opc[] = {
		IB_UVERBS_WR_SEND, IB_UVERBS_WR_SEND, IB_UVERBS_WR_SEND_WITH_IMM, IB_UVERBS_WR_RDMA_WRITE,
		IB_UVERBS_WR_RDMA_WRITE, IB_UVERBS_WR_RDMA_WRITE_WITH_IMM, IB_UVERBS_WR_RDMA_READ,
		IB_UVERBS_WR_ATOMIC_CMP_AND_SWP, IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD, IB_UVERBS_WR_BIND_MW,
		IB_UVERBS_WR_LOCAL_INV, IB_UVERBS_WR_SEND_WITH_INV,
	};

	if (!qp)
		qp = live_if(c, T_QP, has_sq);
	if (!qp)
		return;
	r = &qp->r[0];
	if ((1u << r->log2) < sizeof(*w) + sizeof(struct rxe_sge))
		return;	/* not a send queue's geometry */
	prod = *ring_prod(r) & r->mask;
	cons = __atomic_load_n(ring_cons(r), __ATOMIC_ACQUIRE) & r->mask;
	if (((prod + 1) & r->mask) != cons) {
		w = (void *)ring_slot(r, prod);
		memset(w, 0, sizeof(*w));
		w->wr.wr_id = rnd64();
		w->wr.opcode = opc[rnd(sizeof(opc) / sizeof(opc[0]))];
		if (qp->qpt == QPT_UD)
			w->wr.opcode = rnd(4) ? IB_UVERBS_WR_SEND : IB_UVERBS_WR_SEND_WITH_IMM;
		w->wr.send_flags = SEND_SIGNALED;
		mr = live(c, T_MR);
		switch (w->wr.opcode) {
		case IB_UVERBS_WR_RDMA_WRITE: case IB_UVERBS_WR_RDMA_WRITE_WITH_IMM: case IB_UVERBS_WR_RDMA_READ:
			w->wr.wr.rdma.remote_addr = mr ? mr->addr + rnd((uint32_t)(mr->len > 4096 ? 4096 : mr->len + 1)) : rnd64();
			w->wr.wr.rdma.rkey = mr ? mr->rkey : rnd32();
			w->iova = w->wr.wr.rdma.remote_addr;
			break;
		case IB_UVERBS_WR_ATOMIC_CMP_AND_SWP: case IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD:
			w->wr.wr.atomic.remote_addr = mr ? (mr->addr + 7) & ~7ull : rnd64();
			w->wr.wr.atomic.rkey = mr ? mr->rkey : rnd32();
			w->wr.wr.atomic.compare_add = rnd64();
			w->wr.wr.atomic.swap = rnd64();
			w->iova = w->wr.wr.atomic.remote_addr;
			break;
		case IB_UVERBS_WR_BIND_MW:
			mw = live(c, T_MW);
			w->wr.wr.mw.addr = mr ? mr->addr : rnd64();
			w->wr.wr.mw.length = mr ? (rnd(4) ? mr->len : rnd64()) : rnd(4096);
			w->wr.wr.mw.mr_lkey = mr ? mr->lkey : rnd32();
			w->wr.wr.mw.mw_rkey = mw ? mw->num : rnd32();
			w->wr.wr.mw.rkey = mw ? (mw->num & ~0xffu) | rnd(256) : rnd32();
			w->wr.wr.mw.access = pick_access();
			break;
		case IB_UVERBS_WR_LOCAL_INV: case IB_UVERBS_WR_SEND_WITH_INV:
			mw = live(c, T_MW);
			w->wr.ex.invalidate_rkey = mw ? mw->num : mr ? mr->rkey : rnd32();
			break;
		default:
			break;
		}
		if (qp->qpt == QPT_UD) {
			struct obj *ah = live(c, T_AH);

			peer = live_if(c, T_QP, is_ud);
			w->wr.wr.ud.remote_qpn = peer ? peer->num : rnd(1 << 24);
			w->wr.wr.ud.remote_qkey = QKEY;
			if (ah && ah->num && chance(80)) {
				w->wr.wr.ud.ah_num = ah->num;
			} else {
				/* A raw address vector, as librxe writes one without ah_num. */
				struct rxe_av *av = &w->wr.wr.ud.av;

				av->port_num = 1;
				pick_gids(&av->grh.sgid_index, av->grh.dgid.raw);
				av->grh.hop_limit = 64;
				if (!memcmp(av->grh.dgid.raw, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12)) {
					av->network_type = RXE_NETWORK_TYPE_IPV4;
					av->dgid_addr._sockaddr_in.sin_family = AF_INET;
					memcpy(&av->dgid_addr._sockaddr_in.sin_addr, av->grh.dgid.raw + 12, 4);
					av->sgid_addr._sockaddr_in.sin_family = AF_INET;
					memcpy(&av->sgid_addr._sockaddr_in.sin_addr, S->gid + 12, 4);
				} else {
					av->network_type = RXE_NETWORK_TYPE_IPV6;
					av->dgid_addr._sockaddr_in6.sin6_family = AF_INET6;
					memcpy(&av->dgid_addr._sockaddr_in6.sin6_addr, av->grh.dgid.raw, 16);
					av->sgid_addr._sockaddr_in6.sin6_family = AF_INET6;
					memcpy(&av->sgid_addr._sockaddr_in6.sin6_addr, av->grh.dgid.raw, 16);
				}
				if (!clean_rings && (mutating || chance(20)))
					rnd_bytes(av, sizeof(*av) / (1 + rnd(4)));
			}
		}
		maxsge = (uint32_t)(((1u << r->log2) - sizeof(*w)) / sizeof(struct rxe_sge));
		nsge = rnd(maxsge < 3 ? maxsge + 1 : 4);
		if (w->wr.opcode >= IB_UVERBS_WR_ATOMIC_CMP_AND_SWP && w->wr.opcode <= IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD)
			nsge = 1;
		for (uint32_t i = 0; i < nsge && i < maxsge; i++)
			fill_sge(c, &w->dma.sge[i], &total);
		if (w->wr.opcode == IB_UVERBS_WR_ATOMIC_CMP_AND_SWP || w->wr.opcode == IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD)
			total = w->dma.sge[0].length = 8;
		if (chance(10) && qp->qpt != QPT_UD) {	/* inline */
			w->wr.send_flags |= SEND_INLINE;
			total = rnd((1u << r->log2) - sizeof(*w));
			rnd_bytes(w->dma.inline_data, total);
			nsge = 0;
		}
		w->dma.length = w->dma.resid = total;
		w->dma.num_sge = nsge;
		if (mutating && !clean_rings) {
			switch (rnd(6)) {
			case 0: w->wr.opcode = rnd(2) ? rnd(32) : rnd32(); break;
			case 1: w->dma.num_sge = rnd32(); break;
			case 2: w->dma.length = rnd32(); break;
			case 3: w->dma.cur_sge = rnd32(); w->dma.sge_offset = rnd32(); break;
			case 4: rnd_bytes(w, 1u << r->log2); break;
			default: flip_bytes(w, 1u << r->log2); break;
			}
		}
		opcode = w->wr.opcode;
		__atomic_store_n(ring_prod(r), (prod + 1) & r->mask, __ATOMIC_RELEASE);
		INC(wqes);
	}
	count(OP_post_wqe, 0);
	note("post_wqe qp %u (type %u state %u) opcode %u", qp->h, qp->qpt, qp->state, opcode);
	{	/* the doorbell: post_send without WRs */
		struct ib_uverbs_post_send q = { .response = (uintptr_t)resp_buf(), .qp_handle = qp->h, .wqe_size = 128 };
		int save = mutating, err;

		mutating = 0;
		err = xwrite(c, IB_USER_VERBS_CMD_POST_SEND, &q, sizeof(q), NULL, 0, 4, 1);
		mutating = save;
		count(OP_doorbell, err);
	}
}

static int has_rq(struct obj *o) { return o->r[1].p && o->r[1].mask; }
static int srq_mapped(struct obj *o) { return o->r[0].p && o->r[0].mask; }

static void ring_post_recv(struct ctx *c)
{
	struct obj *o;
	struct ring *r;
	struct rxe_recv_wqe *w;
	uint32_t prod, cons, total = 0, nsge, maxsge;

	if (rnd(3)) {
		o = live_if(c, T_QP, has_rq);
		r = o ? &o->r[1] : NULL;
	} else {
		o = live_if(c, T_SRQ, srq_mapped);
		r = o ? &o->r[0] : NULL;
	}
	if (!r || (1u << r->log2) < sizeof(*w) + sizeof(struct rxe_sge))
		return;
	for (int n = 1 + rnd(4); n--;) {
		prod = *ring_prod(r) & r->mask;
		cons = __atomic_load_n(ring_cons(r), __ATOMIC_ACQUIRE) & r->mask;
		if (((prod + 1) & r->mask) == cons)
			break;
		w = (void *)ring_slot(r, prod);
		memset(w, 0, sizeof(*w));
		w->wr_id = rnd64();
		maxsge = (uint32_t)(((1u << r->log2) - sizeof(*w)) / sizeof(struct rxe_sge));
		nsge = 1 + rnd(maxsge < 2 ? 1 : 2);
		for (uint32_t i = 0; i < nsge && i < maxsge; i++)
			fill_sge(c, &w->dma.sge[i], &total);
		w->dma.length = w->dma.resid = total;
		w->dma.num_sge = nsge;
		if (mutating && !clean_rings)
			flip_bytes(w, 1u << r->log2);
		__atomic_store_n(ring_prod(r), (prod + 1) & r->mask, __ATOMIC_RELEASE);
		INC(rwqes);
	}
	count(OP_post_recv_wqe, 0);
	note("post_recv_wqe h %u", o->h);
}

static int cq_mapped(struct obj *o) { return o->r[0].p && o->r[0].mask; }

static void ring_poll(struct ctx *c)
{
	struct obj *cq = live_if(c, T_CQ, cq_mapped);
	struct ring *r;
	uint32_t prod, cons;
	int n = 0;

	if (!cq)
		return;
	r = &cq->r[0];
	if ((1u << r->log2) < sizeof(struct ib_uverbs_wc))
		return;
	prod = __atomic_load_n(ring_prod(r), __ATOMIC_ACQUIRE) & r->mask;
	cons = *ring_cons(r) & r->mask;
	while (cons != prod && n < 64) {
		struct ib_uverbs_wc *wc = (void *)ring_slot(r, cons);

		INC(cqes);
		if (wc->status == 0)
			INC(cqes_ok);
		cons = (cons + 1) & r->mask;
		n++;
	}
	__atomic_store_n(ring_cons(r), cons, __ATOMIC_RELEASE);
	count(OP_poll_ring, 0);
	note("poll_ring cq %u: %d", cq->h, n);
}

/* Random bytes into a ring: indices, header, slots; then a doorbell. */
static void ring_scribble(struct ctx *c)
{
	struct ring *r = NULL;
	struct obj *o;
	int k;

	for (int i = 0; i < 4 && !r; i++) {
		o = live(c, rnd(2) ? T_QP : rnd(2) ? T_CQ : T_SRQ);
		if (o && o->r[k = rnd(2)].p)
			r = &o->r[k];
	}
	if (!r && ngrave)
		r = &grave[rnd(ngrave)];
	if (!r)
		return;
	switch (rnd(6)) {
	case 0: *ring_prod(r) = rnd(2) ? rnd32() : *ring_prod(r) + 1 + rnd(8); break;
	case 1: *ring_cons(r) = rnd(2) ? rnd32() : *ring_cons(r) + 1 + rnd(8); break;
	case 2: ((uint32_t *)r->p)[rnd(2)] = rnd(2) ? rnd32() : rnd(32); break;	/* log2_elem_size, index_mask */
	case 3:	/* the next slot, then publish it */
		if (r->mask && r->len > 384) {
			uint32_t p = *ring_prod(r);

			rnd_bytes(ring_slot(r, p), (size_t)1 << r->log2);
			*ring_prod(r) = (p + 1) & r->mask;
			break;
		}
		/* fallthrough */
	default: {
		size_t off = rnd((uint32_t)r->len), n = 1 + rnd(256);

		rnd_bytes(r->p + off, off + n > r->len ? r->len - off : n);
		break;
	}
	}
	INC(scribbles);
	count(OP_scribble, 0);
	note("scribble ring %p", (void *)r->p);
	if (chance(70))
		cmd_post_send(c, 1);
}

static void read_events(struct ctx *c)
{
	uint8_t buf[256];
	ssize_t n;
	int got = 0;

	while ((n = read(c->async_fd, buf, sizeof(buf))) > 0)
		got++;
	for (int i = 0; i < nchans; i++)
		while ((n = read(chans[i], buf, sizeof(buf))) > 0) {
			got++;
			INC(compl_fd_events);
		}
	count(OP_read_events, 0);
	note("read_events: %d", got);
}

/* --- contexts ------------------------------------------------------------------------------ */

/* Opens the device and sends GET_CONTEXT: 0 or the errno. */
static int ctx_open(struct ctx *c, pid_t owner)
{
	struct ib_uverbs_get_context q;
	struct ib_uverbs_get_context_resp r;
	struct {
		struct ib_uverbs_cmd_hdr h;
		struct ib_uverbs_get_context q;
	} cmd;

	memset(c, 0, sizeof(*c));
	c->fd = open(dev_path, O_RDWR | O_CLOEXEC);
	if (c->fd < 0)
		return errno;
	memset(&q, 0, sizeof(q));
	cmd.h.command = IB_USER_VERBS_CMD_GET_CONTEXT;
	cmd.h.in_words = sizeof(cmd) / 4;
	cmd.h.out_words = sizeof(r) / 4;
	cmd.q.response = (uintptr_t)&r;
	if (write(c->fd, &cmd, sizeof(cmd)) != sizeof(cmd)) {
		int err = errno;

		close(c->fd);
		c->fd = -1;
		return err;
	}
	c->async_fd = (int)r.async_fd;
	fcntl(c->async_fd, F_SETFL, O_NONBLOCK);
	c->owner = owner;
	return 0;
}

/* Closes the context with whatever it holds (rings stay mapped). */
static void ctx_close(struct ctx *c)
{
	for (int t = 0; t < NT; t++)
		for (int i = 0; i < MAXOBJ; i++) {
			bury(&c->o[t][i].r[0]);
			bury(&c->o[t][i].r[1]);
		}
	close(c->fd);
	close(c->async_fd);
	memset(c, 0, sizeof(*c));
	c->fd = c->async_fd = -1;
}

/* --- a worker ---------------------------------------------------------------------------------- */

struct w { enum op op; unsigned weight; };

static void one_command(struct ctx *c)
{
	static const struct w w[] = {
		{ OP_alloc_pd, 3 }, { OP_dealloc_pd, 1 }, { OP_create_cq, 4 }, { OP_ex_create_cq, 1 },
		{ OP_io_create_cq, 1 }, { OP_destroy_cq, 1 }, { OP_resize_cq, 2 }, { OP_create_qp, 6 },
		{ OP_ex_create_qp, 1 }, { OP_io_create_qp, 2 }, { OP_destroy_qp, 2 }, { OP_modify_qp, 14 },
		{ OP_ex_modify_qp, 2 }, { OP_query_qp, 2 }, { OP_create_srq, 2 }, { OP_create_xsrq, 1 },
		{ OP_io_create_srq, 1 }, { OP_modify_srq, 2 }, { OP_query_srq, 1 }, { OP_destroy_srq, 1 },
		{ OP_reg_mr, 5 }, { OP_rereg_mr, 2 }, { OP_dereg_mr, 2 }, { OP_alloc_mw, 2 }, { OP_dealloc_mw, 1 },
		{ OP_create_ah, 2 }, { OP_destroy_ah, 1 }, { OP_attach_mcast, 2 }, { OP_detach_mcast, 1 },
		{ OP_post_send, 2 }, { OP_post_recv, 1 }, { OP_post_srq_recv, 1 }, { OP_poll_cq, 2 },
		{ OP_req_notify_cq, 2 }, { OP_query_device, 1 }, { OP_query_port, 1 }, { OP_get_context, 1 },
		{ OP_create_comp_channel, 1 }, { OP_xrcd_open_qp, 1 }, { OP_write_random, 2 },
		{ OP_ex_query_device, 1 }, { OP_ex_other, 1 }, { OP_io_query_port, 3 }, { OP_io_invoke_write, 2 },
		{ OP_io_destroy, 3 }, { OP_io_async_alloc, 1 }, { OP_io_random, 2 }, { OP_mmap, 2 },
		{ OP_mmap_bad, 1 }, { OP_post_wqe, 14 }, { OP_post_recv_wqe, 6 }, { OP_poll_ring, 8 },
		{ OP_scribble, 3 }, { OP_doorbell, 2 }, { OP_read_events, 1 },
	};
	static unsigned total;
	unsigned k;
	size_t i;

	if (!total)
		for (i = 0; i < sizeof(w) / sizeof(w[0]); i++)
			total += w[i].weight;
	k = rnd(total);
	for (i = 0; k >= w[i].weight; i++)
		k -= w[i].weight;
	mutating = chance(30);
	switch (w[i].op) {
	case OP_alloc_pd: cmd_alloc_pd(c); break;
	case OP_dealloc_pd: cmd_destroy(c, T_PD); break;
	case OP_create_cq: cmd_create_cq(c, 0); break;
	case OP_ex_create_cq: cmd_create_cq(c, 1); break;
	case OP_io_create_cq: io_create_cq(c); break;
	case OP_destroy_cq: cmd_destroy(c, T_CQ); break;
	case OP_resize_cq: cmd_resize_cq(c); break;
	case OP_create_qp: cmd_create_qp(c, 0); break;
	case OP_ex_create_qp: cmd_create_qp(c, 1); break;
	case OP_io_create_qp: io_create_qp(c); break;
	case OP_destroy_qp: cmd_destroy(c, T_QP); break;
	case OP_modify_qp: cmd_modify_qp(c, 0); break;
	case OP_ex_modify_qp: cmd_modify_qp(c, 1); break;
	case OP_query_qp: cmd_query_qp(c); break;
	case OP_create_srq: cmd_create_srq(c, 0); break;
	case OP_create_xsrq: cmd_create_srq(c, 1); break;
	case OP_io_create_srq: io_create_srq(c); break;
	case OP_modify_srq: cmd_modify_srq(c); break;
	case OP_query_srq: cmd_query_srq(c); break;
	case OP_destroy_srq: cmd_destroy(c, T_SRQ); break;
	case OP_reg_mr: cmd_reg_mr(c); break;
	case OP_rereg_mr: cmd_rereg_mr(c); break;
	case OP_dereg_mr: cmd_destroy(c, T_MR); break;
	case OP_alloc_mw: cmd_alloc_mw(c); break;
	case OP_dealloc_mw: cmd_destroy(c, T_MW); break;
	case OP_create_ah: cmd_create_ah(c); break;
	case OP_destroy_ah: cmd_destroy(c, T_AH); break;
	case OP_attach_mcast: cmd_mcast(c, 1); break;
	case OP_detach_mcast: cmd_mcast(c, 0); break;
	case OP_post_send: cmd_post_send(c, 0); break;
	case OP_post_recv: cmd_post_recv(c, 0); break;
	case OP_post_srq_recv: cmd_post_recv(c, 1); break;
	case OP_poll_cq: cmd_poll_cq(c); break;
	case OP_req_notify_cq: cmd_req_notify_cq(c); break;
	case OP_query_device: cmd_query_device(c); break;
	case OP_query_port: cmd_query_port(c); break;
	case OP_get_context: cmd_get_context(c); break;
	case OP_create_comp_channel: cmd_create_comp_channel(c); break;
	case OP_xrcd_open_qp: cmd_xrcd_open_qp(c); break;
	case OP_write_random: cmd_write_random(c); break;
	case OP_ex_query_device: cmd_ex_query_device(c); break;
	case OP_ex_other: cmd_ex_other(c); break;
	case OP_io_query_port: io_device(c); break;
	case OP_io_invoke_write: io_invoke_write(c); break;
	case OP_io_destroy: io_destroy(c); break;
	case OP_io_async_alloc: io_async_alloc(c); break;
	case OP_io_random: io_random(c); break;
	case OP_mmap:
		if (c == mine()) {
			struct obj *o = live(c, rnd(3) == 0 ? T_CQ : rnd(2) ? T_QP : T_SRQ);
			struct ring *r = o ? &o->r[rnd(2) && o->r[1].size ? 1 : 0] : NULL;

			if (r && r->size) {
				if (r->p) {	/* the same ring mapped a second time */
					struct ring keep = *r;

					bury(r);
					*r = keep;
					r->p = NULL;
				}
				map_ring(c, r);
			}
		}
		break;
	case OP_mmap_bad: if (c == mine()) mmap_bad(c); break;
	case OP_post_wqe: if (c == mine()) ring_post_send(c); else cmd_post_send(c, 1); break;
	case OP_post_recv_wqe: if (c == mine()) ring_post_recv(c); break;
	case OP_poll_ring: if (c == mine()) ring_poll(c); break;
	case OP_scribble: if (c == mine() && !clean_rings) ring_scribble(c); break;
	case OP_doorbell: cmd_post_send(c, 1); break;
	case OP_read_events: read_events(c); break;
	default: break;
	}
}

static const char *log_dir;

static void worker(int s, unsigned gen, uint64_t seed, double end, int unpriv)
{
	struct ctx *c;
	int err, fd;
	char path[256];
	uint64_t ops = 0, life;

	slot = s;
	rs = splitmix(seed ^ ((uint64_t)s << 40) ^ ((uint64_t)gen << 20)) | 1;
	signal(SIGPIPE, SIG_IGN);
	if (log_dir) {
		snprintf(path, sizeof(path), "%s/w%02d.g%03u.log", log_dir, s, gen);
		logf_ = fopen(path, "w");
	}

	page = sysconf(_SC_PAGESIZE);
	arena = mmap(NULL, ARENA_PAGES * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	big = mmap(NULL, BIG_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	none = mmap(NULL, 4 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	hole = mmap(NULL, 4 * page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	resp = mmap(NULL, RESP_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cmdbuf = mmap(NULL, CMDBUF_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(hole, 4 * page);
	/* A read-only shared mapping of a file (as in the window exploit of
	 * issue 15): an MR with write access must not pin it. */
	snprintf(path, sizeof(path), "/tmp/uverbs_fuzz.ro.%d", getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0444);
	if (fd >= 0) {
		memset(arena, 0x5a, 4 * page);
		if (write(fd, arena, 4 * page) != 4 * page)
			perror("write");
		close(fd);
		fd = open(path, O_RDONLY);
		unlink(path);
	}
	ro = fd >= 0 ? mmap(NULL, 4 * page, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
	if (fd >= 0)
		close(fd);
	if (arena == MAP_FAILED || big == MAP_FAILED || none == MAP_FAILED || resp == MAP_FAILED ||
	    cmdbuf == MAP_FAILED || ro == MAP_FAILED) {
		fprintf(stderr, "worker %d: mmap: %s\n", s, strerror(errno));
		_exit(3);
	}
	rnd_bytes(arena, ARENA_PAGES * page);

	if (unpriv) {
		struct rlimit rl = { 64 << 20, 64 << 20 };

		setrlimit(RLIMIT_MEMLOCK, &rl);
		if (setgid(65534) || setuid(65534)) {
			fprintf(stderr, "worker %d: setuid: %s\n", s, strerror(errno));
			_exit(3);
		}
	}
	c = mine();
	err = ctx_open(c, getpid());
	if (err) {
		fprintf(stderr, "worker %d: open %s: %s\n", s, dev_path, strerror(err));
		_exit(3);
	}
	/* A lifetime: most workers run until stopped or killed, some exit on
	 * their own holding everything. */
	life = chance(25) ? 200 + rnd(3000) : ~0ull;
	while (!S->stop) {
		struct timeval tv;

		if ((ops & 63) == 0) {
			gettimeofday(&tv, NULL);
			if (tv.tv_sec + tv.tv_usec / 1e6 > end)
				break;
		}
		if (++ops > life) {
			INC(exits);
			note("exit holding everything");
			_exit(0);
		}
		if (chance(1) && chance(20)) {	/* close and reopen the context, everything alive */
			ctx_close(c);
			err = ctx_open(c, getpid());
			count(OP_reopen, err);
			INC(reopens);
			note("reopen -> %d", err);
			if (err)
				_exit(3);
			continue;
		}
		/* The shared context: ioctl only (see via_ioctl), and an
		 * unprivileged worker may not use it at all (EACCES for
		 * objects of another user is not what is tested here). */
		one_command(!unpriv && chance(15) && shared()->fd > 0 ? shared() : c);
	}
	_exit(0);
}

/* --- the parent --------------------------------------------------------------------------------- */

static double now(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return tv.tv_sec + tv.tv_usec / 1e6;
}

static int find_uverbs(const char *dev)
{
	DIR *d = opendir("/sys/class/infiniband_verbs");
	struct dirent *e;
	char p[512], name[128];
	int n = -1;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		FILE *f;

		if (strncmp(e->d_name, "uverbs", 6))
			continue;
		snprintf(p, sizeof(p), "/sys/class/infiniband_verbs/%s/ibdev", e->d_name);
		f = fopen(p, "r");
		if (!f)
			continue;
		if (fgets(name, sizeof(name), f)) {
			name[strcspn(name, "\n")] = 0;
			if (!strcmp(name, dev))
				n = atoi(e->d_name + 6);
		}
		fclose(f);
	}
	closedir(d);
	return n;
}

static int read_gid(const char *dev, int idx, uint8_t *gid)
{
	char p[256], s[64];
	FILE *f;
	unsigned v[8];

	snprintf(p, sizeof(p), "/sys/class/infiniband/%s/ports/1/gids/%d", dev, idx);
	f = fopen(p, "r");
	if (!f)
		return -1;
	if (!fgets(s, sizeof(s), f) || sscanf(s, "%x:%x:%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
					     &v[6], &v[7]) != 8) {
		fclose(f);
		return -1;
	}
	fclose(f);
	for (int i = 0; i < 8; i++) {
		gid[2 * i] = (uint8_t)(v[i] >> 8);
		gid[2 * i + 1] = (uint8_t)v[i];
	}
	return 0;
}

static void print_errs(const uint64_t *m, char *out, size_t n)
{
	size_t k = 0;

	out[0] = 0;
	for (int e = 1; e < 192 && k + 20 < n; e++)
		if (m[e / 64] & (1ull << (e % 64))) {
			const char *name = e == EMSGSIZE ? "short-write" : strerrorname_np(e);

			k += snprintf(out + k, n - k, "%s%s", k ? "," : "", name ? name : "?");
		}
}

int main(int argc, char **argv)
{
	int procs = 4, kill_ms = 1500, all_root = 0, opt, gid_index, err;
	double seconds = 60, end, t0, next_kill;
	uint64_t seed = 0;
	pid_t pids[MAXP];
	unsigned gen[MAXP];
	int bad_deaths = 0, hung = 0;
	char why[512] = "";

	while ((opt = getopt(argc, argv, "t:p:s:k:W:BGRUv:")) != -1) {
		switch (opt) {
		case 't': seconds = atof(optarg); break;
		case 'p': procs = atoi(optarg); break;
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'k': kill_ms = atoi(optarg); break;
		case 'W': cap_wr = atoi(optarg); break;
		case 'B': allow_big = 1; break;
		case 'G': allow_getctx = 1; break;
		case 'R': clean_rings = 1; break;
		case 'U': all_root = 1; break;
		case 'v': log_dir = optarg; break;
		default: goto usage;
		}
	}
	if (argc - optind != 2 || procs < 1 || procs > MAXP) {
usage:
		fprintf(stderr, "usage: %s [-t SECONDS] [-p PROCS] [-s SEED] [-k MS] [-W N] [-B] [-G] [-R] [-U] [-v DIR] DEVICE GID_INDEX\n",
			argv[0]);
		return 2;
	}
	gid_index = atoi(argv[optind + 1]);
	if (!seed) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		seed = splitmix((uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec + ((uint64_t)getpid() << 48)) >> 16;
	}
	printf("# seed %" PRIu64 " (uverbs_fuzz -s %" PRIu64 " -t %g -p %d -k %d%s%s%s%s %s %d repeats the command streams)\n",
	       seed, seed, seconds, procs, kill_ms, allow_big ? " -B" : "", allow_getctx ? " -G" : "",
	       clean_rings ? " -R" : "", all_root ? " -U" : "", argv[optind], gid_index);
	fflush(stdout);
	rs = splitmix(seed) | 1;
	page = sysconf(_SC_PAGESIZE);

	dev_fd_path_n = find_uverbs(argv[optind]);
	if (dev_fd_path_n < 0) {
		printf("FAIL fuzz/setup: no uverbs device for %s in /sys/class/infiniband_verbs\n", argv[optind]);
		return 1;
	}
	snprintf(dev_path, sizeof(dev_path), "/dev/infiniband/uverbs%d", dev_fd_path_n);
	S = mmap(NULL, sizeof(*S), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (S == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	S->gid_index = gid_index;
	if (read_gid(argv[optind], gid_index, S->gid)) {
		printf("FAIL fuzz/setup: cannot read GID %d of %s\n", gid_index, argv[optind]);
		return 1;
	}
	for (int i = 0; i < 16; i++) {
		static const uint8_t zero[16];

		if (!read_gid(argv[optind], i, S->gids[S->ngids]) && memcmp(S->gids[S->ngids], zero, 16))
			S->gidx[S->ngids++] = i;
	}
	printf("# %d GIDs on port 1 (the IPv4 one at %d)\n", S->ngids, gid_index);

	/* The shared context, and the device's limits. */
	err = ctx_open(shared(), 0);
	if (err) {
		printf("FAIL fuzz/setup: open %s: %s\n", dev_path, strerror(err));
		return 1;
	}
	{
		struct ib_uverbs_query_device_resp r;
		struct {
			struct ib_uverbs_cmd_hdr h;
			struct ib_uverbs_query_device q;
		} cmd = { { IB_USER_VERBS_CMD_QUERY_DEVICE, sizeof(cmd) / 4, sizeof(r) / 4 }, { (uintptr_t)&r } };

		if (write(shared()->fd, &cmd, sizeof(cmd)) != sizeof(cmd)) {
			printf("FAIL fuzz/setup: QUERY_DEVICE: %s\n", strerror(errno));
			return 1;
		}
		S->max_qp_wr = r.max_qp_wr;
		S->max_sge = r.max_sge;
		S->max_cqe = r.max_cqe;
		S->max_srq_wr = r.max_srq_wr;
		S->max_srq_sge = r.max_srq_sge;
		S->max_qp_rd_atom = r.max_qp_rd_atom;
		S->max_mw = r.max_mw;
		printf("# %s: %s; max_qp_wr %u max_sge %u max_cqe %u max_srq_wr %u max_srq_sge %u; WR/CQE counts up to %s\n",
		       argv[optind], dev_path, r.max_qp_wr, r.max_sge, r.max_cqe, r.max_srq_wr, r.max_srq_sge,
		       allow_big ? "the device maxima (-B)" : "-W (the maxima + 1 and beyond are still sent)");
	}
	printf("# %d workers for %g s, a SIGKILL every %d ms on average%s\n", procs, seconds, kill_ms,
	       all_root ? "" : "; odd workers run as uid 65534");
	fflush(stdout);

	t0 = now();
	end = t0 + seconds;
	for (int i = 0; i < procs; i++) {
		gen[i] = 0;
		pids[i] = fork();
		if (!pids[i])
			worker(i, 0, seed, end, !all_root && (i & 1));
	}
	next_kill = kill_ms ? now() + (1 + rnd(2 * kill_ms)) / 1000.0 : 1e300;
	while (now() < end) {
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);

		if (p > 0) {
			for (int i = 0; i < procs; i++) {
				if (pids[i] != p)
					continue;
				if (WIFSIGNALED(st) && WTERMSIG(st) != SIGKILL) {
					bad_deaths++;
					snprintf(why + strlen(why), sizeof(why) - strlen(why), " worker %d gen %u: signal %d;",
						 i, gen[i], WTERMSIG(st));
				} else if (WIFEXITED(st) && WEXITSTATUS(st) != 0) {
					bad_deaths++;
					snprintf(why + strlen(why), sizeof(why) - strlen(why), " worker %d gen %u: exit %d;", i,
						 gen[i], WEXITSTATUS(st));
				}
				S->ctx[i].fd = -1;
				gen[i]++;
				INC(respawns);
				pids[i] = fork();
				if (!pids[i])
					worker(i, gen[i], seed, end, !all_root && (i & 1));
			}
			continue;
		}
		if (now() >= next_kill) {
			int i = rnd(procs);

			kill(pids[i], SIGKILL);
			INC(kills);
			next_kill = now() + (1 + rnd(2 * kill_ms)) / 1000.0;
		}
		usleep(20000);
	}
	/* Stop: every worker must come back from the kernel. */
	S->stop = 1;
	{
		double deadline = now() + 60;
		int left = procs;

		while (left && now() < deadline) {
			int st;
			pid_t p = waitpid(-1, &st, WNOHANG);

			if (p > 0) {
				for (int i = 0; i < procs; i++)
					if (pids[i] == p) {
						if (WIFSIGNALED(st) && WTERMSIG(st) != SIGKILL) {
							bad_deaths++;
							snprintf(why + strlen(why), sizeof(why) - strlen(why),
								 " worker %d gen %u: signal %d;", i, gen[i], WTERMSIG(st));
						}
						pids[i] = 0;
						left--;
					}
				continue;
			}
			usleep(50000);
		}
		for (int i = 0; i < procs; i++)
			if (pids[i]) {
				char p[64], buf[4096] = "";
				FILE *f;
				size_t n;

				hung++;
				snprintf(p, sizeof(p), "/proc/%d/stack", pids[i]);
				f = fopen(p, "r");
				if (f) {
					n = fread(buf, 1, sizeof(buf) - 1, f);
					buf[n] = 0;
					fclose(f);
				}
				printf("# worker %d (pid %d) still in the kernel 60 s after the stop:\n%s\n", i, pids[i], buf);
				kill(pids[i], SIGKILL);
				waitpid(pids[i], NULL, 0);
			}
	}
	/* The shared context goes last, with whatever the workers left in it. */
	ctx_close(shared());

	printf("# %.1f s; commands per kind (sent, succeeded, errnos seen):\n", now() - t0);
	{
		uint64_t sent = 0, ok = 0;
		char errs[512];

		for (int i = 0; i < NOPS; i++) {
			print_errs(S->st[i].errs, errs, sizeof(errs));
			printf("#   %-20s %8" PRIu64 " %8" PRIu64 "  %s\n", op_name[i], S->st[i].sent, S->st[i].ok, errs);
			sent += S->st[i].sent;
			ok += S->st[i].ok;
		}
		printf("# total %" PRIu64 " commands, %" PRIu64 " succeeded; %" PRIu64 " QP moves to RTS; %" PRIu64
		       " send WQEs and %" PRIu64 " receive WQEs written, %" PRIu64 " completions polled (%" PRIu64
		       " successful); %" PRIu64 " scribbles; %" PRIu64 " kills, %" PRIu64 " own exits, %" PRIu64
		       " reopens, %" PRIu64 " workers started after the first\n",
		       sent, ok, S->qp_rts, S->wqes, S->rwqes, S->cqes, S->cqes_ok, S->scribbles, S->kills, S->exits,
		       S->reopens, S->respawns);
		check("fuzz/commands-sent", sent > 1000, "only %" PRIu64 " commands", sent);
	}
#define REACHED(name, cond) check("fuzz/reached/" name, (cond), "never: the fuzzer did not reach the driver there")
	REACHED("alloc-pd", S->st[OP_alloc_pd].ok);
	REACHED("create-cq", S->st[OP_create_cq].ok + S->st[OP_ex_create_cq].ok);
	REACHED("create-cq-ioctl", S->st[OP_io_create_cq].ok);
	REACHED("create-qp", S->st[OP_create_qp].ok + S->st[OP_ex_create_qp].ok);
	REACHED("create-qp-ioctl", S->st[OP_io_create_qp].ok);
	REACHED("create-srq", S->st[OP_create_srq].ok + S->st[OP_io_create_srq].ok);
	REACHED("reg-mr", S->st[OP_reg_mr].ok);
	REACHED("rereg-mr", S->st[OP_rereg_mr].ok);
	REACHED("alloc-mw", S->st[OP_alloc_mw].ok);
	REACHED("create-ah", S->st[OP_create_ah].ok);
	REACHED("modify-srq", S->st[OP_modify_srq].ok);
	REACHED("resize-cq", S->st[OP_resize_cq].ok);
	REACHED("attach-mcast", S->st[OP_attach_mcast].ok);
	REACHED("qp-rts", S->qp_rts);
	REACHED("mmap", S->st[OP_mmap].ok);
	REACHED("ring-wqes", S->wqes);
	REACHED("successful-completions", S->cqes_ok);
	REACHED("destroys", S->st[OP_destroy_qp].ok + S->st[OP_io_destroy_qp].ok);
	check("fuzz/workers-stopped", !hung, "%d workers did not return from the kernel within 60 s of the stop", hung);
	check("fuzz/no-unexpected-worker-death", !bad_deaths, "%d:%s", bad_deaths, why);
	printf("DONE\n");
	return failures ? 1 : 0;
}
