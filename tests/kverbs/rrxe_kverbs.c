// SPDX-License-Identifier: GPL-2.0
/*
 * rrxe_kverbs: kernel-verbs conformance checks for one RoCE device.
 *
 *   insmod rrxe_kverbs.ko dev=rrxe0 [only=PREFIX] [sweep=N] [seed=S] [qp_timeout=T]
 *   cat /sys/kernel/debug/rrxe_kverbs/results
 *
 * Loading the module runs every check on the named device (all of it in
 * module init, then the module idles until it is removed) and leaves one
 * line per check in the debugfs file above, "PASS name", "FAIL name: why"
 * or "SKIP name: why", then "END passed failed skipped". The kernel log
 * gets the same lines.
 *
 * Everything happens on the one device in loopback: two RC QPs of the
 * device connected to each other through its own IPv4 RoCEv2 GID (the
 * address vector carries the device's own MAC, as a kernel consumer must
 * resolve it itself). The checks use the paths that kernel consumers
 * (nvme-rdma and nvmet-rdma, iSER, SRP, NFS over RDMA) use and user space
 * never touches: fast-registration MRs (ib_alloc_mr, ib_map_mr_sg,
 * IB_WR_REG_MR, LOCAL_INV, SEND_WITH_INV, page lists and SG lists with
 * gaps), the PD's local_dma_lkey and DMA MR, rdma_rw contexts, ib_drain_qp,
 * the four CQ polling contexts and SRQs. Data is checked byte for byte,
 * with guard bytes around every target; every completion's status, opcode,
 * byte_len and flags are asserted. See Documentation/testing.md ("Kernel
 * verbs: `kverbs.sh`").
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/completion.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/etherdevice.h>
#include <linux/gfp.h>
#include <linux/interrupt.h>
#include <linux/ipv6.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_pma.h>
#include <rdma/ib_verbs.h>
#include <rdma/rw.h>

static char *dev = "";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "name of the ib device to test (e.g. rrxe0)");
static char *only = "";
module_param(only, charp, 0444);
MODULE_PARM_DESC(only, "run only the groups whose name starts with this (e.g. frwr/)");
static unsigned int sweep;
module_param(sweep, uint, 0444);
MODULE_PARM_DESC(sweep, "extra FRWR WRITE/READ rounds at pseudo-random offsets and lengths");
static unsigned int seed = 1;
module_param(seed, uint, 0444);
MODULE_PARM_DESC(seed, "seed of the sweep's offsets and lengths");
/*
 * 17 (4.096 us << 17, about 0.5 s) is what rdma_cm gives an RC QP on RoCE
 * (CMA_IBOE_PACKET_LIFETIME 16, plus one), so what nvme-rdma, iSER, SRP
 * and NFS over RDMA run with.
 */
static unsigned int qp_timeout = 17;
module_param(qp_timeout, uint, 0444);
MODULE_PARM_DESC(qp_timeout, "the QPs' local ACK timeout exponent (default 17, as rdma_cm on RoCE)");

#define WAIT_MS 20000 /* one completion, under TCG with a debug kernel */
#define GUARD 64      /* guard bytes around a local buffer's data */

/* ------------------------------------------------------------------ */
/* Results                                                             */

#define RES_CAP (256 * 1024)
static char *res_buf;
static size_t res_len;
static unsigned int n_pass, n_fail, n_skip;
static struct dentry *dbg_dir;

static void res_line(const char *kind, const char *name, const char *why)
{
	if (why && *why)
		pr_info("%s %s: %s\n", kind, name, why);
	else
		pr_info("%s %s\n", kind, name);
	if (!res_buf)
		return;
	res_len += scnprintf(res_buf + res_len, RES_CAP - res_len, "%s %s%s%s\n",
			     kind, name, why && *why ? ": " : "", why ? why : "");
}

/* One check: the first failed expectation says why. */
struct ck {
	bool failed;
	bool skipped;
	char why[200];
};

static __printf(3, 4) bool ck_expect(struct ck *c, bool ok, const char *fmt, ...)
{
	va_list ap;

	if (ok || c->failed || c->skipped)
		return ok;
	c->failed = true;
	va_start(ap, fmt);
	vscnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
	return ok;
}

#define EXPECT(c, cond, ...) ck_expect((c), !!(cond), __VA_ARGS__)

static __printf(2, 3) void ck_skip(struct ck *c, const char *fmt, ...)
{
	va_list ap;

	if (c->failed || c->skipped)
		return;
	c->skipped = true;
	va_start(ap, fmt);
	vscnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
}

/* Records the check under NAME (a format) and resets it for reuse. */
static __printf(2, 3) void report(struct ck *c, const char *fmt, ...)
{
	char name[128];
	va_list ap;

	va_start(ap, fmt);
	vscnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	if (c->skipped) {
		n_skip++;
		res_line("SKIP", name, c->why);
	} else if (c->failed) {
		n_fail++;
		res_line("FAIL", name, c->why);
	} else {
		n_pass++;
		res_line("PASS", name, NULL);
	}
	memset(c, 0, sizeof(*c));
}

/* Whether the group PREFIX runs (the `only` parameter). */
static bool group_on(const char *prefix)
{
	size_t a = strlen(only), b = strlen(prefix);

	return !a || !strncmp(only, prefix, min(a, b));
}

/* ------------------------------------------------------------------ */
/* Patterns: a byte that depends on every bit of its index, so that     */
/* data shifted by any distance (a page offset lost, a page swapped)   */
/* never matches.                                                      */

static u8 pat(u32 s, u64 i)
{
	u64 h = (i + 1) * 0x9E3779B97F4A7C15ull ^ ((u64)s << 32 | s);

	h ^= h >> 29;
	h *= 0xBF58476D1CE4E5B9ull;
	h ^= h >> 32;
	return (u8)h;
}

static void fill(u8 *p, size_t n, u32 s, u64 base)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = pat(s, base + i);
}

/* Index of the first byte of P[0..n) that is not pat(s, base + i), or -1. */
static long mismatch(const u8 *p, size_t n, u32 s, u64 base)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != pat(s, base + i))
			return i;
	return -1;
}

static u32 seq_seed = 0x1000;
static u32 next_seed(void)
{
	return ++seq_seed * 2654435761u;
}

/* ------------------------------------------------------------------ */
/* The device                                                          */

static struct {
	struct ib_device *ibdev;
	u32 port;
	const struct ib_gid_attr *sgid;
	u8 mac[ETH_ALEN];
	struct ib_pd *pd;
	struct task_struct *task; /* the thread running the checks */
	bool stuck;               /* a drain never returned: keep the module */
	unsigned int timeouts;    /* completions that never came */
} K;

static u64 dma_of(void *p, size_t n)
{
	return ib_dma_map_single(K.ibdev, p, n, DMA_BIDIRECTIONAL);
}

static void dma_done(u64 a, size_t n)
{
	ib_dma_unmap_single(K.ibdev, a, n, DMA_BIDIRECTIONAL);
}

/* ------------------------------------------------------------------ */
/* Completions: each WR carries its own ib_cqe                         */

enum { CTX_NONE, CTX_DIRECT, CTX_SOFTIRQ, CTX_WORK, CTX_OTHER };
static const char *const ctx_name[] = { "none", "direct (the poller)", "softirq",
					"the CQ's work item", "another context" };

struct xc {
	struct ib_cqe cqe;
	struct completion done;
	atomic_t n;
	struct ib_wc wc;
	int ctx;
};

static int ctx_now(struct ib_cq *cq)
{
	if (in_serving_softirq())
		return CTX_SOFTIRQ;
	if (!in_interrupt() && current_work() == &cq->work)
		return CTX_WORK;
	if (current == K.task)
		return CTX_DIRECT;
	return CTX_OTHER;
}

static void xc_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct xc *x = container_of(wc->wr_cqe, struct xc, cqe);

	if (atomic_inc_return(&x->n) == 1) {
		x->wc = *wc;
		x->ctx = ctx_now(cq);
	}
	complete(&x->done);
}

/*
 * A fresh completion tracker. They live until the module's checks are
 * over (xc_free_all), so that a completion arriving late (after a wait
 * timed out) never finds freed memory.
 */
struct xc_node {
	struct list_head list;
	struct xc x;
};

static LIST_HEAD(xc_all);

static struct xc *xc_get(void)
{
	struct xc_node *n = kzalloc(sizeof(*n), GFP_KERNEL | __GFP_NOFAIL);

	list_add(&n->list, &xc_all);
	n->x.cqe.done = xc_done;
	init_completion(&n->x.done);
	return &n->x;
}

static void xc_free_all(void)
{
	struct xc_node *n, *t;

	list_for_each_entry_safe(n, t, &xc_all, list) {
		list_del(&n->list);
		kfree(n);
	}
}

/* ------------------------------------------------------------------ */
/* A loopback pair of RC QPs                                           */

struct popts {
	enum ib_poll_context poll;      /* both CQs */
	enum ib_poll_context poll_send; /* A's send CQ, if send_cq_own */
	bool send_cq_own;               /* A's sends on a CQ of their own */
	u32 max_send_sge, max_recv_sge, max_inline, max_wr;
	u32 max_rdma_ctxs;
	struct ib_srq *srq_b; /* B receives through this SRQ */
	struct ib_pd *pd;
	struct ib_cq *cq;     /* a CQ from the pool for both QPs */
};

struct pair {
	struct ib_pd *pd;
	struct ib_cq *cq_a, *cq_b, *cq_as; /* cq_as: A's own send CQ or NULL */
	bool pool_cq;
	struct ib_qp *a, *b;
	enum ib_poll_context poll;
	unsigned long events_a, events_b; /* bit per ib_event_type seen */
};

static void qp_event(struct ib_event *e, void *ctx)
{
	struct pair *p = ctx;

	if (e->element.qp == p->b)
		set_bit(e->event, &p->events_b);
	else
		set_bit(e->event, &p->events_a);
}

/* INIT, RTR towards DQPN (the device's own GID and MAC), RTS; both PSNs PSN. */
static int qp_to_rts_psn(struct ib_qp *qp, u32 dqpn, u32 psn, char *why, size_t wlen)
{
	struct ib_qp_attr attr = {};
	union ib_gid dgid;
	int ret;

	attr.qp_state = IB_QPS_INIT;
	attr.pkey_index = 0;
	attr.port_num = K.port;
	attr.qp_access_flags = IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ |
			       IB_ACCESS_REMOTE_ATOMIC;
	ret = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT |
			   IB_QP_ACCESS_FLAGS);
	if (ret) {
		scnprintf(why, wlen, "modify_qp to INIT: %d", ret);
		return ret;
	}
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTR;
	attr.path_mtu = IB_MTU_1024;
	attr.dest_qp_num = dqpn;
	attr.rq_psn = psn;
	attr.max_dest_rd_atomic = 16;
	attr.min_rnr_timer = 12;
	attr.ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(&attr.ah_attr, K.port);
	dgid = K.sgid->gid;
	rdma_ah_set_grh(&attr.ah_attr, &dgid, 0, K.sgid->index, 64, 0);
	/* A kernel consumer resolves the MAC itself: our own. */
	memcpy(attr.ah_attr.roce.dmac, K.mac, ETH_ALEN);
	ret = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
			   IB_QP_DEST_QPN | IB_QP_RQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC |
			   IB_QP_MIN_RNR_TIMER);
	if (ret) {
		scnprintf(why, wlen, "modify_qp to RTR: %d", ret);
		return ret;
	}
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTS;
	attr.sq_psn = psn;
	attr.timeout = min(qp_timeout, 31u);
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;
	attr.max_rd_atomic = 16;
	ret = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_SQ_PSN | IB_QP_TIMEOUT |
			   IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_MAX_QP_RD_ATOMIC);
	if (ret)
		scnprintf(why, wlen, "modify_qp to RTS: %d", ret);
	return ret;
}

static int qp_to_rts(struct ib_qp *qp, u32 dqpn, char *why, size_t wlen)
{
	return qp_to_rts_psn(qp, dqpn, 0x1234, why, wlen);
}

static void pair_free(struct pair *p)
{
	if (!p)
		return;
	if (p->a)
		ib_destroy_qp(p->a);
	if (p->b)
		ib_destroy_qp(p->b);
	if (p->pool_cq) {
		ib_cq_pool_put(p->cq_a, 2 * 256);
	} else {
		if (p->cq_as)
			ib_free_cq(p->cq_as);
		if (p->cq_a)
			ib_free_cq(p->cq_a);
		if (p->cq_b)
			ib_free_cq(p->cq_b);
	}
	kfree(p);
}

static struct ib_qp *make_qp(struct pair *p, const struct popts *o, struct ib_cq *scq,
			     struct ib_cq *rcq, struct ib_srq *srq)
{
	struct ib_qp_init_attr ia = {};

	ia.event_handler = qp_event;
	ia.qp_context = p;
	ia.send_cq = scq;
	ia.recv_cq = rcq;
	ia.srq = srq;
	ia.cap.max_send_wr = o->max_wr;
	ia.cap.max_recv_wr = srq ? 0 : o->max_wr;
	ia.cap.max_send_sge = o->max_send_sge;
	ia.cap.max_recv_sge = srq ? 0 : o->max_recv_sge;
	ia.cap.max_inline_data = o->max_inline;
	ia.cap.max_rdma_ctxs = o->max_rdma_ctxs;
	ia.sq_sig_type = IB_SIGNAL_REQ_WR;
	ia.qp_type = IB_QPT_RC;
	ia.port_num = K.port;
	return ib_create_qp(p->pd, &ia);
}

static void popts_default(struct popts *o)
{
	memset(o, 0, sizeof(*o));
	o->poll = IB_POLL_SOFTIRQ;
	o->max_send_sge = 4;
	o->max_recv_sge = 4;
	o->max_wr = 64;
}

/* A connected pair, or NULL with WHY set. */
static noinline struct pair *pair_new(const struct popts *o, struct ck *c)
{
	struct pair *p;
	char why[128] = "";
	int ret;

	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p) {
		EXPECT(c, 0, "pair: no memory");
		return NULL;
	}
	p->pd = o->pd ? o->pd : K.pd;
	p->poll = o->poll;
	if (o->cq) {
		p->cq_a = o->cq;
		p->cq_b = o->cq;
		p->pool_cq = true;
	} else {
		p->cq_a = ib_alloc_cq(K.ibdev, p, 256, 0, o->poll);
		if (IS_ERR(p->cq_a)) {
			ret = PTR_ERR(p->cq_a);
			p->cq_a = NULL;
			scnprintf(why, sizeof(why), "ib_alloc_cq: %d", ret);
			goto err;
		}
		p->cq_b = ib_alloc_cq(K.ibdev, p, 256, 0, o->poll);
		if (IS_ERR(p->cq_b)) {
			ret = PTR_ERR(p->cq_b);
			p->cq_b = NULL;
			scnprintf(why, sizeof(why), "ib_alloc_cq: %d", ret);
			goto err;
		}
		if (o->send_cq_own) {
			p->cq_as = ib_alloc_cq(K.ibdev, p, 256, 0, o->poll_send);
			if (IS_ERR(p->cq_as)) {
				ret = PTR_ERR(p->cq_as);
				p->cq_as = NULL;
				scnprintf(why, sizeof(why), "ib_alloc_cq (send): %d", ret);
				goto err;
			}
		}
	}
	p->a = make_qp(p, o, p->cq_as ? p->cq_as : p->cq_a, p->cq_a, NULL);
	if (IS_ERR(p->a)) {
		ret = PTR_ERR(p->a);
		p->a = NULL;
		scnprintf(why, sizeof(why), "ib_create_qp: %d", ret);
		goto err;
	}
	p->b = make_qp(p, o, p->cq_b, p->cq_b, o->srq_b);
	if (IS_ERR(p->b)) {
		ret = PTR_ERR(p->b);
		p->b = NULL;
		scnprintf(why, sizeof(why), "ib_create_qp: %d", ret);
		goto err;
	}
	if (qp_to_rts(p->a, p->b->qp_num, why, sizeof(why)) ||
	    qp_to_rts(p->b, p->a->qp_num, why, sizeof(why)))
		goto err;
	return p;
err:
	EXPECT(c, 0, "pair: %s", why);
	pair_free(p);
	return NULL;
}

static int xc_wait_once(struct pair *p, struct xc *x, unsigned int ms);

/* Waits for X; with polling context DIRECT, polls the pair's CQs. */
static int xc_wait_ms(struct pair *p, struct xc *x, unsigned int ms)
{
	int ret;

	/*
	 * After three completions that never came the device is taken for
	 * dead (an oops in its worker, say): later waits are short, so that
	 * the remaining checks fail in seconds rather than minutes.
	 */
	if (K.timeouts >= 3)
		ms = 200;
	ret = xc_wait_once(p, x, ms);
	if (ret)
		K.timeouts++;
	return ret;
}

static int xc_wait_once(struct pair *p, struct xc *x, unsigned int ms)
{
	unsigned long end = jiffies + msecs_to_jiffies(ms);

	if (p->poll != IB_POLL_DIRECT && !p->cq_as)
		return wait_for_completion_timeout(&x->done, msecs_to_jiffies(ms)) ? 0 : -ETIMEDOUT;
	for (;;) {
		if (p->poll == IB_POLL_DIRECT) {
			ib_process_cq_direct(p->cq_a, 16);
			if (p->cq_b != p->cq_a)
				ib_process_cq_direct(p->cq_b, 16);
		}
		if (p->cq_as && p->cq_as->poll_ctx == IB_POLL_DIRECT)
			ib_process_cq_direct(p->cq_as, 16);
		if (try_wait_for_completion(&x->done))
			return 0;
		if (time_after(jiffies, end))
			return -ETIMEDOUT;
		usleep_range(100, 300);
	}
}

static int xc_wait(struct pair *p, struct xc *x)
{
	return xc_wait_ms(p, x, WAIT_MS);
}

/*
 * Expects X to have completed once with STATUS (and, on success, OPCODE;
 * -1 for any). WHAT names the WR in the failure text.
 */
static bool expect_wc(struct ck *c, struct pair *p, struct xc *x, const char *what,
		      enum ib_wc_status status, int opcode)
{
	if (!EXPECT(c, !xc_wait(p, x), "%s: no completion in %d ms", what, WAIT_MS))
		return false;
	if (!EXPECT(c, x->wc.status == status, "%s: status %s (%d), want %s", what,
		    ib_wc_status_msg(x->wc.status), x->wc.status, ib_wc_status_msg(status)))
		return false;
	if (status == IB_WC_SUCCESS && opcode >= 0 &&
	    !EXPECT(c, x->wc.opcode == opcode, "%s: wc opcode %d, want %d", what,
		    x->wc.opcode, opcode))
		return false;
	return true;
}

/* An error completion: any status but success and flush. */
static bool expect_wc_error(struct ck *c, struct pair *p, struct xc *x, const char *what)
{
	if (!EXPECT(c, !xc_wait(p, x), "%s: no completion in %d ms", what, WAIT_MS))
		return false;
	return EXPECT(c, x->wc.status != IB_WC_SUCCESS && x->wc.status != IB_WC_WR_FLUSH_ERR,
		      "%s: status %s, want an error", what, ib_wc_status_msg(x->wc.status));
}

static int post_send1(struct ib_qp *qp, struct ib_send_wr *wr)
{
	return ib_post_send(qp, wr, NULL);
}

static bool post_send_ok(struct ck *c, struct ib_qp *qp, struct ib_send_wr *wr, const char *what)
{
	int ret = post_send1(qp, wr);

	return EXPECT(c, !ret, "%s: %d", what, ret);
}

static int post_recv(struct ib_qp *qp, struct xc *x, struct ib_sge *sge, int nsge)
{
	struct ib_recv_wr wr = {};

	wr.wr_cqe = &x->cqe;
	wr.sg_list = sge;
	wr.num_sge = nsge;
	return ib_post_recv(qp, &wr, NULL);
}

static int post_rdma(struct ib_qp *qp, struct xc *x, enum ib_wr_opcode op,
		     struct ib_sge *sge, int nsge, u64 raddr, u32 rkey)
{
	struct ib_rdma_wr wr = {};

	wr.wr.wr_cqe = &x->cqe;
	wr.wr.opcode = op;
	wr.wr.send_flags = IB_SEND_SIGNALED;
	wr.wr.sg_list = sge;
	wr.wr.num_sge = nsge;
	wr.remote_addr = raddr;
	wr.rkey = rkey;
	return post_send1(qp, &wr.wr);
}

/* ------------------------------------------------------------------ */
/* Local buffers: data at [GUARD, GUARD + n), guards around it          */

struct kb {
	u8 *p;   /* whole allocation */
	u8 *d;   /* the data */
	size_t n;
	u64 dma; /* of the data */
	u32 gseed;
};

static int kb_alloc(struct kb *b, size_t n)
{
	memset(b, 0, sizeof(*b));
	b->p = kmalloc(n + 2 * GUARD, GFP_KERNEL);
	if (!b->p)
		return -ENOMEM;
	b->d = b->p + GUARD;
	b->n = n;
	b->gseed = next_seed();
	fill(b->p, n + 2 * GUARD, b->gseed, 0);
	b->dma = dma_of(b->d, n);
	return 0;
}

static void kb_free(struct kb *b)
{
	if (!b->p)
		return;
	dma_done(b->dma, b->n);
	kfree(b->p);
	b->p = NULL;
}

/* Back to the pattern kb_alloc wrote (guards and data). */
static void kb_reset(struct kb *b)
{
	fill(b->p, b->n + 2 * GUARD, b->gseed, 0);
}

/*
 * The first K data bytes are pat(s, base + i), the rest of the data and
 * the guards as kb_alloc (or kb_reset) left them.
 */
static bool kb_check_part(struct ck *c, struct kb *b, size_t k, u32 s, u64 base,
			  const char *what)
{
	long m;

	m = mismatch(b->p, GUARD, b->gseed, 0);
	if (!EXPECT(c, m < 0, "%s: guard byte %ld before the data changed", what, GUARD - m))
		return false;
	m = mismatch(b->p + GUARD + b->n, GUARD, b->gseed, GUARD + b->n);
	if (!EXPECT(c, m < 0, "%s: guard byte %ld after the data changed", what, m))
		return false;
	m = mismatch(b->d, k, s, base);
	if (!EXPECT(c, m < 0, "%s: byte %ld of %zu is 0x%02x, want 0x%02x", what, m, k,
		    m < 0 ? 0 : b->d[m], m < 0 ? 0 : pat(s, base + m)))
		return false;
	m = mismatch(b->d + k, b->n - k, b->gseed, GUARD + k);
	return EXPECT(c, m < 0, "%s: byte %ld past the %zu expected changed", what, k + m, k);
}

static bool kb_check(struct ck *c, struct kb *b, u32 s, u64 base, const char *what)
{
	return kb_check_part(c, b, b->n, s, base, what);
}

/* The guards and the data are as kb_alloc left them. */
static bool kb_untouched(struct ck *c, struct kb *b, const char *what)
{
	return kb_check_part(c, b, 0, 0, 0, what);
}

/* ------------------------------------------------------------------ */
/* Regions: the memory behind a scatterlist, with the bytes around each  */
/* entry as guards                                                      */

enum { R_CONTIG, R_SPLIT, R_KMALLOC, R_GAPS };

/*
 * R_GAPS: entry i is gap_len[i] bytes from gap_off[i] in a block of its
 * own (whole pages), so the entries are neither page-aligned nor
 * contiguous; entry 1 crosses a page boundary of its block.
 */
static const unsigned int gap_off[] = { 5, 4000, 1027 };
static const size_t gap_len[] = { 333, 1500, 2049 };

struct blk {
	u8 *base;     /* backing memory */
	size_t size;  /* its length */
	size_t start; /* the entry: [start, start + len) */
	size_t len;
	unsigned int order; /* pages: alloc_pages order; -1U: kmalloc */
};

struct region {
	int nb;
	struct blk *b;
	size_t len;
	struct sg_table sgt;
	int mapped; /* ib_dma_map_sg's count, 0 when not mapped */
	u32 gseed, dseed;
};

static void region_free(struct region *r)
{
	int i;

	if (!r)
		return;
	if (r->mapped)
		ib_dma_unmap_sg(K.ibdev, r->sgt.sgl, r->nb, DMA_BIDIRECTIONAL);
	if (r->sgt.sgl)
		sg_free_table(&r->sgt);
	for (i = 0; r->b && i < r->nb; i++) {
		if (!r->b[i].base)
			continue;
		if (r->b[i].order == -1U)
			kfree(r->b[i].base);
		else
			free_pages((unsigned long)r->b[i].base, r->b[i].order);
	}
	kfree(r->b);
	kfree(r);
}

/*
 * A region of kind K:
 *  R_CONTIG:  one entry of LEN bytes from OFF in a block of whole pages;
 *  R_SPLIT:   NP separate pages, one entry each: the first from OFF to its
 *             end, the middle ones whole, the last its first LEN bytes;
 *  R_KMALLOC: one entry, a kmalloc'd object of LEN bytes (OFF ignored);
 *  R_GAPS:    NP (at most 3) entries as gap_off and gap_len say (OFF and
 *             LEN ignored).
 */
static struct region *region_new(int k, unsigned int off, unsigned int np, size_t len)
{
	struct region *r;
	struct scatterlist *sg;
	int i;

	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return NULL;
	r->nb = k == R_SPLIT || k == R_GAPS ? np : 1;
	if (k == R_GAPS && np > ARRAY_SIZE(gap_off))
		goto err;
	r->b = kcalloc(r->nb, sizeof(*r->b), GFP_KERNEL);
	if (!r->b)
		goto err;
	if (k == R_KMALLOC) {
		r->b[0].base = kmalloc(len, GFP_KERNEL);
		r->b[0].order = -1U;
		r->b[0].size = len;
		r->b[0].start = 0;
		r->b[0].len = len;
		if (!r->b[0].base)
			goto err;
	} else if (k == R_CONTIG) {
		unsigned int order = get_order(off + len);

		r->b[0].base = (u8 *)__get_free_pages(GFP_KERNEL, order);
		r->b[0].order = order;
		r->b[0].size = PAGE_SIZE << order;
		r->b[0].start = off;
		r->b[0].len = len;
		if (!r->b[0].base)
			goto err;
	} else if (k == R_GAPS) {
		for (i = 0; i < np; i++) {
			struct blk *b = &r->b[i];

			b->order = get_order(gap_off[i] + gap_len[i]);
			b->base = (u8 *)__get_free_pages(GFP_KERNEL, b->order);
			b->size = PAGE_SIZE << b->order;
			b->start = gap_off[i];
			b->len = gap_len[i];
			if (!b->base)
				goto err;
		}
	} else {
		for (i = 0; i < np; i++) {
			struct blk *b = &r->b[i];

			b->base = (u8 *)__get_free_page(GFP_KERNEL);
			b->order = 0;
			b->size = PAGE_SIZE;
			if (!b->base)
				goto err;
			b->start = i == 0 ? off : 0;
			b->len = i == np - 1 ? len : PAGE_SIZE - b->start;
		}
	}
	for (i = 0; i < r->nb; i++)
		r->len += r->b[i].len;
	if (sg_alloc_table(&r->sgt, r->nb, GFP_KERNEL))
		goto err;
	for_each_sg(r->sgt.sgl, sg, r->nb, i)
		sg_set_buf(sg, r->b[i].base + r->b[i].start, r->b[i].len);
	r->mapped = ib_dma_map_sg(K.ibdev, r->sgt.sgl, r->nb, DMA_BIDIRECTIONAL);
	if (r->mapped <= 0) {
		r->mapped = 0;
		goto err;
	}
	return r;
err:
	region_free(r);
	return NULL;
}

/* Fills guards with a new guard pattern and the region with a new data pattern. */
static void region_fill(struct region *r)
{
	size_t at = 0;
	int i;

	r->gseed = next_seed();
	r->dseed = next_seed();
	for (i = 0; i < r->nb; i++) {
		struct blk *b = &r->b[i];

		fill(b->base, b->start, r->gseed, (u64)i << 32);
		fill(b->base + b->start, b->len, r->dseed, at);
		fill(b->base + b->start + b->len, b->size - b->start - b->len, r->gseed,
		     ((u64)i << 32) + b->start + b->len);
		at += b->len;
	}
}

/*
 * Checks the region byte for byte: its bytes [x, x + n) are pat(ws, i - x),
 * the others pat(dseed), every guard as filled. N = 0: nothing written.
 */
static bool region_check_b(struct ck *c, struct region *r, size_t x, size_t n, u32 ws,
			   u64 wbase, const char *what)
{
	size_t at = 0, j;
	int i;

	for (i = 0; i < r->nb; i++) {
		struct blk *b = &r->b[i];

		for (j = 0; j < b->size; j++) {
			u8 got = b->base[j], want;
			size_t ri;

			if (j < b->start || j >= b->start + b->len) {
				want = pat(r->gseed, ((u64)i << 32) + j);
				if (got != want) {
					EXPECT(c, 0,
					       "%s: guard byte %zd of entry %d (page offset %zu) is 0x%02x, want 0x%02x",
					       what, (ssize_t)j - (ssize_t)b->start, i,
					       j % PAGE_SIZE, got, want);
					return false;
				}
				continue;
			}
			ri = at + j - b->start;
			want = ri >= x && ri < x + n ? pat(ws, wbase + ri - x) : pat(r->dseed, ri);
			if (got != want) {
				EXPECT(c, 0,
				       "%s: region byte %zu (entry %d, page offset %zu) is 0x%02x, want 0x%02x%s",
				       what, ri, i, j % PAGE_SIZE, got, want,
				       ri >= x && ri < x + n ? "" : " (outside the target)");
				return false;
			}
		}
		at += b->len;
	}
	return true;
}

static bool region_check(struct ck *c, struct region *r, size_t x, size_t n, u32 ws,
			 const char *what)
{
	return region_check_b(c, r, x, n, ws, 0, what);
}

/* Pages an MR needs for R with PAGE_SIZE pages. */
static u32 region_pages(struct region *r)
{
	u32 n = 0;
	int i;

	for (i = 0; i < r->nb; i++) {
		unsigned long s = (unsigned long)(r->b[i].base + r->b[i].start);

		n += DIV_ROUND_UP(s % PAGE_SIZE + r->b[i].len, PAGE_SIZE);
	}
	return n;
}

/* ------------------------------------------------------------------ */
/* Fast registration                                                   */

enum { MAP_VA, MAP_TAG, MAP_ZBVA };
static const char *const map_name[] = { "iova = first byte's address",
					"iova tagged in its high 32 bits",
					"zero-based iova" };
#define IOVA_TAG 0x5eed1e55ull

/* Maps R into MR as MODE says, checking what ib_map_mr_sg reports. */
static bool fr_map(struct ck *c, struct ib_mr *mr, struct region *r, int mode)
{
	int n;

	if (mode == MAP_ZBVA)
		n = ib_map_mr_sg_zbva(mr, r->sgt.sgl, r->mapped, NULL, PAGE_SIZE);
	else
		n = ib_map_mr_sg(mr, r->sgt.sgl, r->mapped, NULL, PAGE_SIZE);
	if (!EXPECT(c, n == r->mapped, "ib_map_mr_sg mapped %d of %d entries", n, r->mapped))
		return false;
	if (!EXPECT(c, mr->length == r->len, "mr->length %llu after mapping, want %zu",
		    mr->length, r->len))
		return false;
	if (mode == MAP_VA &&
	    !EXPECT(c, mr->iova == sg_dma_address(r->sgt.sgl), "mr->iova 0x%llx, want 0x%llx",
		    mr->iova, (u64)sg_dma_address(r->sgt.sgl)))
		return false;
	if (mode == MAP_TAG) {
		/* As xprtrdma does: a tag in the high 32 bits after mapping. */
		mr->iova &= 0x00000000ffffffffull;
		mr->iova |= IOVA_TAG << 32;
	}
	return true;
}

/* Posts IB_WR_REG_MR of MR on QP with a new key and ACCESS; waits. */
static noinline bool fr_reg(struct ck *c, struct pair *p, struct ib_qp *qp,
			    struct ib_mr *mr, int access)
{
	struct ib_reg_wr wr = {};
	struct xc *x;
	int ret;

	x = xc_get();
	ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));
	wr.wr.opcode = IB_WR_REG_MR;
	wr.wr.wr_cqe = &x->cqe;
	wr.wr.send_flags = IB_SEND_SIGNALED;
	wr.mr = mr;
	wr.key = mr->rkey;
	wr.access = access;
	ret = post_send1(qp, &wr.wr);
	if (!EXPECT(c, !ret, "post REG_MR: %d", ret))
		return false;
	return expect_wc(c, p, x, "REG_MR", IB_WC_SUCCESS, IB_WC_REG_MR);
}

static noinline bool local_inv(struct ck *c, struct pair *p, struct ib_qp *qp, u32 key)
{
	struct ib_send_wr wr = {};
	struct xc *x;
	int ret;

	x = xc_get();
	wr.opcode = IB_WR_LOCAL_INV;
	wr.wr_cqe = &x->cqe;
	wr.send_flags = IB_SEND_SIGNALED;
	wr.ex.invalidate_rkey = key;
	ret = post_send1(qp, &wr);
	if (!EXPECT(c, !ret, "post LOCAL_INV: %d", ret))
		return false;
	return expect_wc(c, p, x, "LOCAL_INV", IB_WC_SUCCESS, IB_WC_LOCAL_INV);
}

#define ACC_ALL (IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_WRITE)

/* A WRITE of SRC (local_dma_lkey) to RADDR/RKEY from A; waits; status. */
static noinline bool write_plain(struct ck *c, struct pair *p, struct kb *src, size_t n, u64 raddr,
				 u32 rkey, enum ib_wc_status want, const char *what)
{
	struct ib_sge sge = { .addr = src->dma, .length = n, .lkey = p->pd->local_dma_lkey };
	struct xc *x;
	int ret;

	x = xc_get();
	ret = post_rdma(p->a, x, IB_WR_RDMA_WRITE, &sge, 1, raddr, rkey);
	if (!EXPECT(c, !ret, "%s: post: %d", what, ret))
		return false;
	return expect_wc(c, p, x, what, want, IB_WC_RDMA_WRITE);
}

static noinline bool read_plain(struct ck *c, struct pair *p, struct kb *dst, size_t n, u64 raddr,
				u32 rkey, enum ib_wc_status want, const char *what)
{
	struct ib_sge sge = { .addr = dst->dma, .length = n, .lkey = p->pd->local_dma_lkey };
	struct xc *x;
	int ret;

	x = xc_get();
	ret = post_rdma(p->a, x, IB_WR_RDMA_READ, &sge, 1, raddr, rkey);
	if (!EXPECT(c, !ret, "%s: post: %d", what, ret))
		return false;
	return expect_wc(c, p, x, what, want, IB_WC_RDMA_READ);
}

struct frcase {
	const char *name;
	int kind;
	unsigned int off, np;
	size_t len;
	int map;
	bool lkey;
	enum ib_mr_type type; /* IB_MR_TYPE_MEM_REG unless set */
};

/* An MR of FC's type for R: its pages, or its entries for SG_GAPS. */
static struct ib_mr *fr_alloc(struct ck *c, struct ib_pd *pd, const struct frcase *fc,
			      struct region *r)
{
	u32 n = fc->type == IB_MR_TYPE_SG_GAPS ? r->nb : region_pages(r);
	struct ib_mr *mr = ib_alloc_mr(pd, fc->type, n);

	if (IS_ERR(mr)) {
		EXPECT(c, 0, "ib_alloc_mr(type %d, %u): %ld", fc->type, n, PTR_ERR(mr));
		return NULL;
	}
	return mr;
}

/* Whether the device registers SG lists with gaps (IB_MR_TYPE_SG_GAPS). */
static bool sg_gaps_cap(struct ck *c)
{
	return EXPECT(c, K.ibdev->attrs.kernel_cap_flags & IBK_SG_GAPS_REG,
		      "the device does not advertise IBK_SG_GAPS_REG");
}

/* WRITEs and READs at [x, x + n) of B's region through its rkey. */
static noinline void fr_sub(struct ck *c, struct pair *p, struct region *rb, struct ib_mr *mr,
			    size_t x, size_t n, bool do_write)
{
	struct kb b;
	char what[64];

	if (!n || x + n > rb->len)
		return;
	if (kb_alloc(&b, n)) {
		EXPECT(c, 0, "no memory");
		return;
	}
	region_fill(rb);
	if (do_write) {
		u32 ws = next_seed();

		scnprintf(what, sizeof(what), "WRITE of %zu bytes at iova+%zu", n, x);
		fill(b.d, n, ws, 0);
		if (write_plain(c, p, &b, n, mr->iova + x, mr->rkey, IB_WC_SUCCESS, what))
			region_check(c, rb, x, n, ws, what);
	} else {
		scnprintf(what, sizeof(what), "READ of %zu bytes at iova+%zu", n, x);
		if (read_plain(c, p, &b, n, mr->iova + x, mr->rkey, IB_WC_SUCCESS, what)) {
			kb_check(c, &b, rb->dseed, x, what);
			region_check(c, rb, 0, 0, 0, what);
		}
	}
	kb_free(&b);
}

/*
 * An SG_GAPS region's pieces: across each boundary between entries, the
 * whole middle entry with two bytes either side, across the page boundary
 * inside entry 1.
 */
static void fr_gaps_subs(struct ck *c, struct pair *p, struct region *rb, struct ib_mr *mr,
			 bool do_write)
{
	size_t at = 0;
	int i;

	for (i = 0; i + 1 < rb->nb; i++) {
		at += rb->b[i].len;
		fr_sub(c, p, rb, mr, at - 5, 10, do_write);
	}
	if (rb->nb >= 3) {
		fr_sub(c, p, rb, mr, rb->b[0].len - 2, rb->b[1].len + 4, do_write);
		fr_sub(c, p, rb, mr, rb->b[0].len + PAGE_SIZE - rb->b[1].start - 3, 7, do_write);
	}
}

/* Reports every NAME of the list (after PREFIX) as skipped, for WHY. */
static void skip_all(const char *prefix, const char *const *names, int n, const char *why)
{
	struct ck c = {};
	int i;

	for (i = 0; i < n; i++) {
		ck_skip(&c, "%s", why);
		report(&c, "%s%s", prefix, names[i]);
	}
}

static noinline void frwr_case(const struct frcase *fc)
{
	static const char *const later[] = { "write-rkey", "read-rkey", "write-rkey-at",
					     "read-rkey-at", "write-lkey", "read-lkey" };
	struct ck c = {};
	struct popts o;
	struct pair *p = NULL;
	struct region *rb = NULL, *ra = NULL;
	struct ib_mr *mrb = NULL, *mra = NULL;
	struct kb b = {};
	char prefix[48];
	bool ok;
	size_t x1;

	scnprintf(prefix, sizeof(prefix), "frwr/%s/", fc->name);
	popts_default(&o);
	if (fc->type != IB_MR_TYPE_SG_GAPS || sg_gaps_cap(&c))
		p = pair_new(&o, &c);
	if (p) {
		rb = region_new(fc->kind, fc->off, fc->np, fc->len);
		EXPECT(&c, rb, "region: no memory");
	}
	if (rb)
		mrb = fr_alloc(&c, p->pd, fc, rb);
	ok = mrb && fr_map(&c, mrb, rb, fc->map) && fr_reg(&c, p, p->b, mrb, ACC_ALL);
	if (ok && fc->kind != R_KMALLOC) {
		/* The first entry's page offset is what the case says. */
		ok = EXPECT(&c, (sg_dma_address(rb->sgt.sgl) & ~PAGE_MASK) == fc->off,
			    "first entry at page offset %llu, want %u",
			    (u64)(sg_dma_address(rb->sgt.sgl) & ~PAGE_MASK), fc->off);
	}
	ok = ok && EXPECT(&c, !kb_alloc(&b, rb->len), "no memory for %zu bytes", rb->len);
	report(&c, "%sreg", prefix);
	if (!ok) {
		skip_all(prefix, later, fc->lkey ? 6 : 4, "registration failed");
		goto out;
	}

	/* The whole region through the rkey (a large one's time is logged). */
	{
		u32 ws = next_seed();
		unsigned long t0;
		bool w_ok, r_ok;

		region_fill(rb);
		fill(b.d, rb->len, ws, 0);
		t0 = jiffies;
		w_ok = write_plain(&c, p, &b, rb->len, mrb->iova, mrb->rkey, IB_WC_SUCCESS,
				   "WRITE of the whole region");
		if (rb->len >= SZ_1M)
			pr_info("%s: WRITE of %zu bytes: %u ms\n", fc->name, rb->len,
				jiffies_to_msecs(jiffies - t0));
		if (w_ok)
			region_check(&c, rb, 0, rb->len, ws, "WRITE of the whole region");
		report(&c, "%swrite-rkey", prefix);

		region_fill(rb);
		kb_reset(&b);
		t0 = jiffies;
		r_ok = read_plain(&c, p, &b, rb->len, mrb->iova, mrb->rkey, IB_WC_SUCCESS,
				  "READ of the whole region");
		if (rb->len >= SZ_1M)
			pr_info("%s: READ of %zu bytes: %u ms\n", fc->name, rb->len,
				jiffies_to_msecs(jiffies - t0));
		if (r_ok) {
			kb_check(&c, &b, rb->dseed, 0, "READ of the whole region");
			region_check(&c, rb, 0, 0, 0, "READ of the whole region");
		}
		report(&c, "%sread-rkey", prefix);
	}

	/* Pieces: from the second byte, across the first page boundary, the end. */
	x1 = (PAGE_SIZE - fc->off % PAGE_SIZE) % PAGE_SIZE;
	fr_sub(&c, p, rb, mrb, 1, min_t(size_t, 64, rb->len - 1), true);
	if (x1 > 5 && x1 + 5 <= rb->len)
		fr_sub(&c, p, rb, mrb, x1 - 5, 10, true);
	fr_sub(&c, p, rb, mrb, rb->len - 3, 3, true);
	if (fc->kind == R_GAPS)
		fr_gaps_subs(&c, p, rb, mrb, true);
	report(&c, "%swrite-rkey-at", prefix);
	fr_sub(&c, p, rb, mrb, 1, min_t(size_t, 64, rb->len - 1), false);
	if (x1 > 5 && x1 + 5 <= rb->len)
		fr_sub(&c, p, rb, mrb, x1 - 5, 10, false);
	fr_sub(&c, p, rb, mrb, rb->len - 3, 3, false);
	if (fc->kind == R_GAPS)
		fr_gaps_subs(&c, p, rb, mrb, false);
	report(&c, "%sread-rkey-at", prefix);

	if (!fc->lkey)
		goto out;
	/* The local side through an FRWR lkey of the same shape. */
	ra = region_new(fc->kind, fc->off, fc->np, fc->len);
	ok = EXPECT(&c, ra, "region: no memory");
	if (ok)
		mra = fr_alloc(&c, p->pd, fc, ra);
	ok = mra && fr_map(&c, mra, ra, fc->map) &&
	     fr_reg(&c, p, p->a, mra, IB_ACCESS_LOCAL_WRITE);
	if (ok) {
		struct ib_sge sge = { .addr = mra->iova, .length = ra->len, .lkey = mra->lkey };
		struct xc *x;
		int ret;

		region_fill(ra);
		region_fill(rb);
		x = xc_get();
		ret = post_rdma(p->a, x, IB_WR_RDMA_WRITE, &sge, 1, mrb->iova, mrb->rkey);
		if (EXPECT(&c, !ret, "post: %d", ret) &&
		    expect_wc(&c, p, x, "WRITE from the lkey", IB_WC_SUCCESS, IB_WC_RDMA_WRITE) &&
		    region_check(&c, rb, 0, rb->len, ra->dseed, "WRITE from the lkey"))
			region_check(&c, ra, 0, 0, 0, "the source region");
		report(&c, "%swrite-lkey", prefix);

		region_fill(ra);
		region_fill(rb);
		x = xc_get();
		ret = post_rdma(p->a, x, IB_WR_RDMA_READ, &sge, 1, mrb->iova, mrb->rkey);
		if (EXPECT(&c, !ret, "post: %d", ret) &&
		    expect_wc(&c, p, x, "READ into the lkey", IB_WC_SUCCESS, IB_WC_RDMA_READ))
			region_check(&c, ra, 0, ra->len, rb->dseed, "READ into the lkey");
		report(&c, "%sread-lkey", prefix);
	} else {
		report(&c, "%swrite-lkey", prefix);
		skip_all(prefix, later + 5, 1, "the local registration failed");
	}
out:
	if (c.failed)
		report(&c, "%ssetup", prefix);
	kb_free(&b);
	if (mra)
		ib_dereg_mr(mra);
	if (mrb)
		ib_dereg_mr(mrb);
	pair_free(p);
	region_free(ra);
	region_free(rb);
}

/*
 * Accesses outside the registration are refused and change nothing:
 * a WRITE through the last 4 bytes and 4 past the end, one starting a byte
 * before the start, a WRITE into a registration without remote write.
 */
static noinline void frwr_refusals(void)
{
	static const struct {
		const char *name;
		int access;
		long x; /* from the start; negative: before it */
		size_t n;
		bool from_end;
	} cases[] = {
		{ "past-end-refused", ACC_ALL, -4, 8, true },
		{ "before-start-refused", ACC_ALL, -1, 8, false },
		{ "read-only-write-refused", IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ,
		  100, 8, false },
	};
	int i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct ck c = {};
		struct popts o;
		struct pair *p;
		struct region *r = NULL;
		struct ib_mr *mr = NULL;
		struct kb b = {};
		u64 at;

		popts_default(&o);
		p = pair_new(&o, &c);
		if (!p)
			goto next;
		r = region_new(R_SPLIT, 512, 2, 1000);
		if (!EXPECT(&c, r && !kb_alloc(&b, 8), "no memory"))
			goto next;
		mr = ib_alloc_mr(p->pd, IB_MR_TYPE_MEM_REG, region_pages(r));
		if (IS_ERR(mr)) {
			EXPECT(&c, 0, "ib_alloc_mr: %ld", PTR_ERR(mr));
			mr = NULL;
			goto next;
		}
		if (!fr_map(&c, mr, r, MAP_VA) || !fr_reg(&c, p, p->b, mr, cases[i].access))
			goto next;
		region_fill(r);
		at = mr->iova + cases[i].x;
		if (cases[i].from_end)
			at += r->len;
		if (write_plain(&c, p, &b, cases[i].n, at, mr->rkey, IB_WC_REM_ACCESS_ERR,
				"the WRITE"))
			region_check(&c, r, 0, 0, 0, "after the refused WRITE");
		if (!(cases[i].access & IB_ACCESS_REMOTE_WRITE) && !c.failed) {
			/* Reads are still served (a fresh pair: A errored). */
			struct pair *q = pair_new(&o, &c);

			if (q) {
				kb_reset(&b);
				if (read_plain(&c, q, &b, 8, mr->iova + cases[i].x, mr->rkey,
					       IB_WC_SUCCESS, "READ through the read-only rkey"))
					kb_check(&c, &b, r->dseed, cases[i].x, "the READ");
				pair_free(q);
			}
		}
next:
		report(&c, "frwr/%s", cases[i].name);
		if (mr)
			ib_dereg_mr(mr);
		pair_free(p);
		region_free(r);
		kb_free(&b);
	}
}

/*
 * An SG_GAPS MR for 2 entries takes 2 of 3 (ib_map_mr_sg answers 2, the
 * length is theirs) and a WRITE running past them is refused.
 */
static noinline void frwr_gaps_over_max(void)
{
	struct ck c = {};
	struct popts o;
	struct pair *p = NULL;
	struct region *r = NULL;
	struct ib_mr *mr = NULL;
	struct kb b = {};
	size_t two = gap_len[0] + gap_len[1];
	int n;

	popts_default(&o);
	if (sg_gaps_cap(&c))
		p = pair_new(&o, &c);
	if (p) {
		r = region_new(R_GAPS, 0, 3, 0);
		if (EXPECT(&c, r && !kb_alloc(&b, 8), "no memory")) {
			mr = ib_alloc_mr(p->pd, IB_MR_TYPE_SG_GAPS, 2);
			if (IS_ERR(mr)) {
				EXPECT(&c, 0, "ib_alloc_mr(SG_GAPS, 2): %ld", PTR_ERR(mr));
				mr = NULL;
			}
		}
	}
	if (mr) {
		n = ib_map_mr_sg(mr, r->sgt.sgl, r->mapped, NULL, PAGE_SIZE);
		if (EXPECT(&c, n == 2, "ib_map_mr_sg of 3 entries into 2 returned %d", n) &&
		    EXPECT(&c, mr->length == two, "mr->length %llu, want %zu", mr->length, two) &&
		    fr_reg(&c, p, p->b, mr, ACC_ALL)) {
			region_fill(r);
			if (write_plain(&c, p, &b, 8, mr->iova + two - 4, mr->rkey,
					IB_WC_REM_ACCESS_ERR, "a WRITE past the 2 entries"))
				region_check(&c, r, 0, 0, 0, "after the refused WRITE");
		}
	}
	report(&c, "frwr/sg-gaps-over-max");
	if (mr)
		ib_dereg_mr(mr);
	pair_free(p);
	region_free(r);
	kb_free(&b);
}

/* The sweep: SWEEP rounds of a random shape, offset, target and length. */
static u32 rnd_state;
static u32 rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 17;
	rnd_state ^= rnd_state << 5;
	return rnd_state;
}

static noinline void frwr_sweep(void)
{
	struct ck c = {};
	struct popts o;
	struct pair *p;
	unsigned int i, done = 0;

	if (!sweep)
		return;
	rnd_state = seed ? seed : 1;
	popts_default(&o);
	p = pair_new(&o, &c);
	for (i = 0; p && i < sweep && !c.failed; i++) {
		int kind = rnd() % 2 ? R_SPLIT : R_CONTIG, map = rnd() % 3;
		unsigned int off = rnd() % 8 ? rnd() % PAGE_SIZE : (rnd() % 2 ? 0 : PAGE_SIZE - 1);
		unsigned int np = 2 + rnd() % 15;
		size_t len = kind == R_SPLIT ? 1 + rnd() % PAGE_SIZE : 1 + rnd() % (16 * PAGE_SIZE);
		struct region *r = region_new(kind, off, np, len);
		struct ib_mr *mr;
		size_t x, n;

		if (!EXPECT(&c, r, "round %u: no memory", i))
			break;
		mr = ib_alloc_mr(p->pd, IB_MR_TYPE_MEM_REG, region_pages(r));
		if (IS_ERR(mr)) {
			EXPECT(&c, 0, "round %u: ib_alloc_mr: %ld", i, PTR_ERR(mr));
			region_free(r);
			break;
		}
		x = rnd() % r->len;
		n = 1 + rnd() % (r->len - x);
		if (fr_map(&c, mr, r, map) && fr_reg(&c, p, p->b, mr, ACC_ALL)) {
			fr_sub(&c, p, r, mr, x, n, true);
			fr_sub(&c, p, r, mr, x, n, false);
		}
		if (c.failed) {
			char more[96];

			scnprintf(more, sizeof(more),
				  " (round %u: %s, page offset %u, %zu bytes, %s, at %zu+%zu)",
				  i, kind == R_SPLIT ? "split" : "contiguous", off, r->len,
				  map_name[map], x, n);
			strlcat(c.why, more, sizeof(c.why));
		} else {
			done++;
		}
		ib_dereg_mr(mr);
		region_free(r);
	}
	EXPECT(&c, done == sweep, "%u of %u rounds", done, sweep);
	report(&c, "frwr/sweep");
	pair_free(p);
}

static noinline void frwr_checks(void)
{
	u32 maxp = K.ibdev->attrs.max_fast_reg_page_list_len;
	static const unsigned int offs[] = { 0, 1, 512, 4095 };
	struct frcase fc;
	char names[8][32];
	int i;

	if (!group_on("frwr/"))
		return;
	for (i = 0; i < ARRAY_SIZE(offs); i++) {
		/* One entry over four contiguous pages. */
		scnprintf(names[0], sizeof(names[0]), "single-off%u", offs[i]);
		fc = (struct frcase){ names[0], R_CONTIG, offs[i], 1, 3 * PAGE_SIZE + 200 - offs[i],
				      MAP_VA, true };
		frwr_case(&fc);
		/* Three entries in three separate pages. */
		scnprintf(names[1], sizeof(names[1]), "multi-off%u", offs[i]);
		fc = (struct frcase){ names[1], R_SPLIT, offs[i], 3, 1000, MAP_VA, true };
		frwr_case(&fc);
		/* Zero-based (ib_map_mr_sg_zbva): iova 0 is the first byte. */
		scnprintf(names[2], sizeof(names[2]), "zbva-off%u", offs[i]);
		fc = (struct frcase){ names[2], R_SPLIT, offs[i], 3, 1000, MAP_ZBVA, true };
		frwr_case(&fc);
	}
	/* As xprtrdma: a tag in the iova's high 32 bits after mapping. */
	fc = (struct frcase){ "tag-off1", R_SPLIT, 1, 3, 1000, MAP_TAG, true };
	frwr_case(&fc);
	fc = (struct frcase){ "tag-off4095", R_CONTIG, 4095, 1, 2 * PAGE_SIZE, MAP_TAG, true };
	frwr_case(&fc);
	/* nvme-rdma's connect data: a kmalloc'd 1 KiB buffer. */
	fc = (struct frcase){ "kmalloc-1k", R_KMALLOC, 0, 1, 1024, MAP_VA, true };
	frwr_case(&fc);
	/* The device's longest page list, from a page offset to a short last page. */
	fc = (struct frcase){ "max-pages", R_SPLIT, 512, maxp, 100, MAP_VA, false };
	if (maxp >= 2 && maxp <= 4096) {
		frwr_case(&fc);
	} else {
		struct ck c = {};

		ck_skip(&c, "max_fast_reg_page_list_len %u", maxp);
		report(&c, "frwr/max-pages/reg");
	}
	/*
	 * SG lists with gaps (IB_MR_TYPE_SG_GAPS, as nvme-rdma and iSER use
	 * with IBK_SG_GAPS_REG): the MR is the entries' concatenation.
	 */
	fc = (struct frcase){ "sg-gaps", R_GAPS, gap_off[0], 3, 0, MAP_VA, true,
			      IB_MR_TYPE_SG_GAPS };
	frwr_case(&fc);
	fc = (struct frcase){ "sg-gaps-zbva", R_GAPS, gap_off[0], 3, 0, MAP_ZBVA, false,
			      IB_MR_TYPE_SG_GAPS };
	frwr_case(&fc);
	frwr_gaps_over_max();
	frwr_refusals();
	frwr_sweep();
}

/* ------------------------------------------------------------------ */
/* Invalidation                                                        */

/* A pair and an MR of B over a 3-page region, registered with ACC_ALL. */
struct invset {
	struct pair *p;
	struct region *r;
	struct ib_mr *mr;
	struct kb b;
};

static bool inv_setup(struct ck *c, struct invset *s)
{
	struct popts o;

	memset(s, 0, sizeof(*s));
	popts_default(&o);
	s->p = pair_new(&o, c);
	if (!s->p)
		return false;
	s->r = region_new(R_SPLIT, 100, 3, 700);
	if (!EXPECT(c, s->r && !kb_alloc(&s->b, s->r ? s->r->len : 1), "no memory"))
		return false;
	s->mr = ib_alloc_mr(s->p->pd, IB_MR_TYPE_MEM_REG, region_pages(s->r));
	if (IS_ERR(s->mr)) {
		EXPECT(c, 0, "ib_alloc_mr: %ld", PTR_ERR(s->mr));
		s->mr = NULL;
		return false;
	}
	return fr_map(c, s->mr, s->r, MAP_VA) && fr_reg(c, s->p, s->p->b, s->mr, ACC_ALL);
}

static void inv_teardown(struct invset *s)
{
	if (s->mr)
		ib_dereg_mr(s->mr);
	pair_free(s->p);
	region_free(s->r);
	kb_free(&s->b);
}

/* A control WRITE through the key before it is invalidated: it lands. */
static bool inv_control(struct ck *c, struct invset *s)
{
	u32 ws = next_seed();

	region_fill(s->r);
	fill(s->b.d, 16, ws, 0);
	return write_plain(c, s->p, &s->b, 16, s->mr->iova + 8, s->mr->rkey, IB_WC_SUCCESS,
			   "the WRITE before invalidation") &&
	       region_check(c, s->r, 8, 16, ws, "the WRITE before invalidation");
}

/* After invalidation: a WRITE (or READ) through the old key is refused. */
static void inv_refused(struct ck *c, struct invset *s, u32 key, bool read)
{
	region_fill(s->r);
	if (read) {
		fill(s->b.d, s->b.n, s->b.gseed, GUARD);
		if (read_plain(c, s->p, &s->b, 64, s->mr->iova, key, IB_WC_REM_ACCESS_ERR,
			       "READ through the invalidated rkey"))
			kb_untouched(c, &s->b, "the READ's buffer");
	} else {
		fill(s->b.d, 64, next_seed(), 0);
		write_plain(c, s->p, &s->b, 64, s->mr->iova, key, IB_WC_REM_ACCESS_ERR,
			    "WRITE through the invalidated rkey");
	}
	region_check(c, s->r, 0, 0, 0, "the region after the refused access");
}

static noinline void inv_checks(void)
{
	struct ck c = {};
	struct invset s;
	bool ok;
	u32 key = 0;

	if (!group_on("inv/"))
		return;

	/* LOCAL_INV on the owner's QP, then a WRITE through the key refused. */
	ok = inv_setup(&c, &s) && inv_control(&c, &s);
	if (ok) {
		key = s.mr->rkey;
		ok = local_inv(&c, s.p, s.p->b, key);
	}
	report(&c, "inv/local-inv/complete");
	if (ok)
		inv_refused(&c, &s, key, false);
	else
		ck_skip(&c, "no LOCAL_INV");
	report(&c, "inv/local-inv/write-refused");
	inv_teardown(&s);

	/* The same with a READ. */
	ok = inv_setup(&c, &s) && inv_control(&c, &s);
	if (ok) {
		key = s.mr->rkey;
		ok = local_inv(&c, s.p, s.p->b, key);
	}
	if (ok)
		inv_refused(&c, &s, key, true);
	report(&c, "inv/local-inv/read-refused");
	inv_teardown(&s);

	/* SEND_WITH_INV from A: B's receive says so, and the key is dead. */
	ok = inv_setup(&c, &s) && inv_control(&c, &s);
	if (ok) {
		struct kb rx;
		struct ib_sge rsge, ssge;
		struct ib_send_wr wr = {};
		struct xc *xr, *xs;
		u32 ws = next_seed();
		int ret;

		key = s.mr->rkey;
		ok = EXPECT(&c, !kb_alloc(&rx, 256), "no memory");
		if (ok) {
			rsge = (struct ib_sge){ .addr = rx.dma, .length = 256,
						.lkey = s.p->pd->local_dma_lkey };
			ssge = (struct ib_sge){ .addr = s.b.dma, .length = 100,
						.lkey = s.p->pd->local_dma_lkey };
			fill(s.b.d, 100, ws, 0);
			xr = xc_get();
			xs = xc_get();
			ret = post_recv(s.p->b, xr, &rsge, 1);
			wr.opcode = IB_WR_SEND_WITH_INV;
			wr.wr_cqe = &xs->cqe;
			wr.send_flags = IB_SEND_SIGNALED;
			wr.sg_list = &ssge;
			wr.num_sge = 1;
			wr.ex.invalidate_rkey = key;
			ok = EXPECT(&c, !ret, "post_recv: %d", ret) &&
			     post_send_ok(&c, s.p->a, &wr, "post SEND_WITH_INV") &&
			     expect_wc(&c, s.p, xs, "SEND_WITH_INV", IB_WC_SUCCESS, IB_WC_SEND) &&
			     expect_wc(&c, s.p, xr, "the receive", IB_WC_SUCCESS, IB_WC_RECV);
			if (ok) {
				EXPECT(&c, xr->wc.wc_flags & IB_WC_WITH_INVALIDATE,
				       "receive wc_flags 0x%x lack IB_WC_WITH_INVALIDATE",
				       xr->wc.wc_flags);
				EXPECT(&c, !(xr->wc.wc_flags & IB_WC_WITH_IMM),
				       "receive wc_flags 0x%x claim an immediate", xr->wc.wc_flags);
				EXPECT(&c, xr->wc.ex.invalidate_rkey == key,
				       "receive ex.invalidate_rkey 0x%x, want 0x%x",
				       xr->wc.ex.invalidate_rkey, key);
				EXPECT(&c, xr->wc.byte_len == 100, "byte_len %u, want 100",
				       xr->wc.byte_len);
				EXPECT(&c, xr->wc.qp == s.p->b, "receive wc.qp is not B");
				kb_check_part(&c, &rx, 100, ws, 0, "the received data");
			}
			kb_free(&rx);
		}
	}
	report(&c, "inv/send-with-inv/recv-wc");
	if (ok)
		inv_refused(&c, &s, key, false);
	else
		ck_skip(&c, "no SEND_WITH_INV");
	report(&c, "inv/send-with-inv/write-refused");
	inv_teardown(&s);

	/* LOCAL_INV of A's own MR: its lkey is refused locally. */
	if (inv_setup(&c, &s)) {
		struct region *ra = region_new(R_SPLIT, 1, 2, 300);
		struct ib_mr *mra = NULL;

		if (EXPECT(&c, ra, "no memory")) {
			mra = ib_alloc_mr(s.p->pd, IB_MR_TYPE_MEM_REG, region_pages(ra));
			if (IS_ERR(mra)) {
				EXPECT(&c, 0, "ib_alloc_mr: %ld", PTR_ERR(mra));
				mra = NULL;
			}
		}
		if (mra && fr_map(&c, mra, ra, MAP_VA) &&
		    fr_reg(&c, s.p, s.p->a, mra, IB_ACCESS_LOCAL_WRITE) &&
		    local_inv(&c, s.p, s.p->a, mra->lkey)) {
			struct ib_sge sge = { .addr = mra->iova, .length = 64, .lkey = mra->lkey };
			struct xc *x;
			int ret;

			region_fill(s.r);
			region_fill(ra);
			x = xc_get();
			ret = post_rdma(s.p->a, x, IB_WR_RDMA_WRITE, &sge, 1, s.mr->iova,
					s.mr->rkey);
			if (EXPECT(&c, !ret, "post: %d", ret) &&
			    expect_wc(&c, s.p, x, "WRITE from the invalidated lkey",
				      IB_WC_LOC_PROT_ERR, -1))
				region_check(&c, s.r, 0, 0, 0, "the target");
		}
		if (mra)
			ib_dereg_mr(mra);
		region_free(ra);
	}
	report(&c, "inv/local-inv-lkey/loc-prot-err");
	inv_teardown(&s);

	/*
	 * Re-registration as nvme-rdma and iSER do it: LOCAL_INV, then
	 * ib_update_fast_reg_key and a new map (another region, another page
	 * offset) and REG_MR. The new key reaches the new memory, the old key
	 * nothing.
	 */
	ok = inv_setup(&c, &s) && inv_control(&c, &s);
	{
		struct region *r2 = ok ? region_new(R_SPLIT, 3000, 2, 2000) : NULL;
		u32 old = ok ? s.mr->rkey : 0;

		ok = ok && EXPECT(&c, r2, "no memory") && local_inv(&c, s.p, s.p->b, old) &&
		     fr_map(&c, s.mr, r2, MAP_VA) && fr_reg(&c, s.p, s.p->b, s.mr, ACC_ALL);
		if (ok) {
			u32 ws = next_seed();

			EXPECT(&c, s.mr->rkey != old, "the new rkey 0x%x is the old one", old);
			region_fill(s.r);
			region_fill(r2);
			fill(s.b.d, 200, ws, 0);
			if (write_plain(&c, s.p, &s.b, 200, s.mr->iova + r2->len - 200, s.mr->rkey,
					IB_WC_SUCCESS, "WRITE through the new key")) {
				region_check(&c, r2, r2->len - 200, 200, ws, "the new region");
				region_check(&c, s.r, 0, 0, 0, "the old region");
			}
		}
		report(&c, "inv/rereg/new-key-works");
		if (ok) {
			region_fill(s.r);
			region_fill(r2);
			write_plain(&c, s.p, &s.b, 16, s.mr->iova, old, IB_WC_REM_ACCESS_ERR,
				    "WRITE through the old key");
			region_check(&c, r2, 0, 0, 0, "the new region after the old key");
			region_check(&c, s.r, 0, 0, 0, "the old region after the old key");
		} else {
			ck_skip(&c, "no re-registration");
		}
		report(&c, "inv/rereg/old-key-refused");
		/* The MR goes before the regions it maps. */
		if (s.mr) {
			ib_dereg_mr(s.mr);
			s.mr = NULL;
		}
		region_free(r2);
	}
	inv_teardown(&s);
}

/* ------------------------------------------------------------------ */
/* SEND and RECV                                                       */

/* One SEND of SSGE (NS entries) into a receive of RSGE (NR); waits both. */
static noinline bool send_recv(struct ck *c, struct pair *p, struct ib_sge *ssge, int ns,
			       struct ib_sge *rsge, int nr, enum ib_wr_opcode op, u32 flags,
			       __be32 imm, struct xc **xrp)
{
	struct ib_send_wr wr = {};
	struct xc *xs, *xr;
	int ret;

	*xrp = xr = xc_get();
	xs = xc_get();
	ret = post_recv(p->b, xr, rsge, nr);
	if (!EXPECT(c, !ret, "post_recv: %d", ret))
		return false;
	wr.opcode = op;
	wr.wr_cqe = &xs->cqe;
	wr.send_flags = IB_SEND_SIGNALED | flags;
	wr.sg_list = ssge;
	wr.num_sge = ns;
	wr.ex.imm_data = imm;
	ret = post_send1(p->a, &wr);
	if (!EXPECT(c, !ret, "post_send: %d", ret))
		return false;
	return expect_wc(c, p, xs, "the SEND", IB_WC_SUCCESS, IB_WC_SEND) &&
	       expect_wc(c, p, xr, "the receive", IB_WC_SUCCESS, IB_WC_RECV);
}

static noinline void send_checks(void)
{
	/* Gather lengths (crossing the 1024-byte MTU) and scatter lengths. */
	static const size_t sl[3] = { 100, 1500, 7 };
	static const size_t rl[4] = { 50, 1000, 600, 500 };
	struct ck c = {};
	struct popts o;
	struct pair *p;
	struct kb s[3] = {}, r[4] = {};
	struct ib_sge ssge[3], rsge[4];
	struct xc *xr, *xs;
	struct ib_send_wr wr;
	u32 ws[3];
	size_t total = 0, at;
	int i, ret;

	if (!group_on("send/"))
		return;
	popts_default(&o);
	o.max_inline = 64;
	p = pair_new(&o, &c);
	if (!p)
		goto out;
	for (i = 0; i < 3; i++) {
		if (!EXPECT(&c, !kb_alloc(&s[i], sl[i]), "no memory"))
			goto out;
		ws[i] = next_seed();
		fill(s[i].d, sl[i], ws[i], 0);
		ssge[i] = (struct ib_sge){ .addr = s[i].dma, .length = sl[i],
					   .lkey = p->pd->local_dma_lkey };
		total += sl[i];
	}
	for (i = 0; i < 4; i++) {
		if (!EXPECT(&c, !kb_alloc(&r[i], rl[i]), "no memory"))
			goto out;
		rsge[i] = (struct ib_sge){ .addr = r[i].dma, .length = rl[i],
					   .lkey = p->pd->local_dma_lkey };
	}

	/* Three gather entries (1607 bytes) into four scatter entries (2150). */
	if (send_recv(&c, p, ssge, 3, rsge, 4, IB_WR_SEND, 0, 0, &xr)) {
		u8 *want = kmalloc(total, GFP_KERNEL);

		EXPECT(&c, xr->wc.byte_len == total, "byte_len %u, want %zu",
		       xr->wc.byte_len, total);
		EXPECT(&c, !(xr->wc.wc_flags & (IB_WC_WITH_IMM | IB_WC_WITH_INVALIDATE)),
		       "wc_flags 0x%x", xr->wc.wc_flags);
		EXPECT(&c, xr->wc.qp == p->b, "wc.qp is not B");
		if (EXPECT(&c, want, "no memory")) {
			/* The stream the SEND carries, then where it must land. */
			for (i = 0, at = 0; i < 3; at += sl[i], i++)
				fill(want + at, sl[i], ws[i], 0);
			for (i = 0, at = 0; i < 4 && !c.failed; at += rl[i], i++) {
				size_t k = at < total ? min(rl[i], total - at) : 0, j;
				u32 gs = r[i].gseed;

				for (j = 0; j < k; j++)
					if (r[i].d[j] != want[at + j])
						break;
				EXPECT(&c, j == k,
				       "receive SGE %d byte %zu (message byte %zu) is 0x%02x, want 0x%02x",
				       i, j, at + j, j < k ? r[i].d[j] : 0,
				       j < k ? want[at + j] : 0);
				/* Past the message the SGE is as it was, and the guards. */
				EXPECT(&c, mismatch(r[i].d + k, rl[i] - k, gs, GUARD + k) < 0 &&
				       mismatch(r[i].p, GUARD, gs, 0) < 0 &&
				       mismatch(r[i].d + rl[i], GUARD, gs, GUARD + rl[i]) < 0,
				       "receive SGE %d: bytes past the message or its guards changed",
				       i);
			}
			kfree(want);
		}
	}
	report(&c, "send/multi-sge");

	/* SEND with immediate: 1500 bytes into 1000 + 600 + 500. */
	for (i = 0; i < 4; i++)
		kb_reset(&r[i]);
	if (send_recv(&c, p, &ssge[1], 1, &rsge[1], 3, IB_WR_SEND_WITH_IMM, 0,
		      cpu_to_be32(0x12345678), &xr)) {
		EXPECT(&c, xr->wc.wc_flags & IB_WC_WITH_IMM, "wc_flags 0x%x lack IB_WC_WITH_IMM",
		       xr->wc.wc_flags);
		EXPECT(&c, !(xr->wc.wc_flags & IB_WC_WITH_INVALIDATE), "wc_flags 0x%x",
		       xr->wc.wc_flags);
		EXPECT(&c, xr->wc.ex.imm_data == cpu_to_be32(0x12345678), "imm_data 0x%x",
		       be32_to_cpu(xr->wc.ex.imm_data));
		EXPECT(&c, xr->wc.byte_len == sl[1], "byte_len %u, want %zu",
		       xr->wc.byte_len, sl[1]);
		kb_check(&c, &r[1], ws[1], 0, "first receive SGE");
		kb_check_part(&c, &r[2], sl[1] - rl[1], ws[1], rl[1], "second receive SGE");
		kb_untouched(&c, &r[3], "third receive SGE");
	}
	report(&c, "send/imm");

	/* Inline data: copied at post time, so the buffer may change at once. */
	for (i = 0; i < 4; i++)
		kb_reset(&r[i]);
	fill(s[0].d, sl[0], ws[0], 0);
	xr = xc_get();
	xs = xc_get();
	ret = post_recv(p->b, xr, &rsge[3], 1);
	if (EXPECT(&c, !ret, "post_recv: %d", ret)) {
		struct ib_sge one = ssge[0];

		one.length = 64;
		memset(&wr, 0, sizeof(wr));
		wr.opcode = IB_WR_SEND;
		wr.wr_cqe = &xs->cqe;
		wr.send_flags = IB_SEND_SIGNALED | IB_SEND_INLINE;
		wr.sg_list = &one;
		wr.num_sge = 1;
		ret = post_send1(p->a, &wr);
		memset(s[0].d, 0xee, 64);
		if (EXPECT(&c, !ret, "post_send inline: %d", ret) &&
		    expect_wc(&c, p, xs, "the SEND", IB_WC_SUCCESS, IB_WC_SEND) &&
		    expect_wc(&c, p, xr, "the receive", IB_WC_SUCCESS, IB_WC_RECV)) {
			EXPECT(&c, xr->wc.byte_len == 64, "byte_len %u", xr->wc.byte_len);
			kb_check_part(&c, &r[3], 64, ws[0], 0, "the received data");
		}
		fill(s[0].d, sl[0], ws[0], 0);
	}
	report(&c, "send/inline");

	/* A zero-length SEND. */
	kb_reset(&r[0]);
	if (send_recv(&c, p, NULL, 0, &rsge[0], 1, IB_WR_SEND, 0, 0, &xr)) {
		EXPECT(&c, xr->wc.byte_len == 0, "byte_len %u, want 0", xr->wc.byte_len);
		kb_untouched(&c, &r[0], "the receive buffer");
	}
	report(&c, "send/zero-length");

	/* RDMA WRITE with immediate: consumes a receive, data at the rkey. */
	{
		struct region *rg = region_new(R_SPLIT, 4000, 2, 1500);
		struct ib_mr *mr = NULL;

		if (EXPECT(&c, rg, "no memory")) {
			mr = ib_alloc_mr(p->pd, IB_MR_TYPE_MEM_REG, region_pages(rg));
			if (IS_ERR(mr)) {
				EXPECT(&c, 0, "ib_alloc_mr: %ld", PTR_ERR(mr));
				mr = NULL;
			}
		}
		if (mr && fr_map(&c, mr, rg, MAP_VA) && fr_reg(&c, p, p->b, mr, ACC_ALL)) {
			struct ib_rdma_wr rwr = {};

			region_fill(rg);
			kb_reset(&r[0]);
			xr = xc_get();
			xs = xc_get();
			ret = post_recv(p->b, xr, &rsge[0], 1);
			rwr.wr.opcode = IB_WR_RDMA_WRITE_WITH_IMM;
			rwr.wr.wr_cqe = &xs->cqe;
			rwr.wr.send_flags = IB_SEND_SIGNALED;
			rwr.wr.sg_list = &ssge[1];
			rwr.wr.num_sge = 1;
			rwr.wr.ex.imm_data = cpu_to_be32(0xabcdef01);
			rwr.remote_addr = mr->iova + 10;
			rwr.rkey = mr->rkey;
			if (EXPECT(&c, !ret, "post_recv: %d", ret) &&
			    post_send_ok(&c, p->a, &rwr.wr, "post WRITE_WITH_IMM") &&
			    expect_wc(&c, p, xs, "the WRITE_WITH_IMM", IB_WC_SUCCESS,
				      IB_WC_RDMA_WRITE) &&
			    expect_wc(&c, p, xr, "the receive", IB_WC_SUCCESS,
				      IB_WC_RECV_RDMA_WITH_IMM)) {
				EXPECT(&c, xr->wc.wc_flags & IB_WC_WITH_IMM, "wc_flags 0x%x",
				       xr->wc.wc_flags);
				EXPECT(&c, xr->wc.ex.imm_data == cpu_to_be32(0xabcdef01),
				       "imm_data 0x%x", be32_to_cpu(xr->wc.ex.imm_data));
				EXPECT(&c, xr->wc.byte_len == sl[1], "byte_len %u, want %zu",
				       xr->wc.byte_len, sl[1]);
				region_check(&c, rg, 10, sl[1], ws[1], "the WRITE's data");
				kb_untouched(&c, &r[0], "the receive's buffer");
			}
		}
		if (mr)
			ib_dereg_mr(mr);
		region_free(rg);
	}
	report(&c, "send/write-imm");

	/*
	 * Longer than the receive: the receive completes with a length
	 * error, the SEND with a remote invalid request (last: the QPs error).
	 */
	xr = xc_get();
	xs = xc_get();
	ret = post_recv(p->b, xr, &rsge[1], 1);
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IB_WR_SEND;
	wr.wr_cqe = &xs->cqe;
	wr.send_flags = IB_SEND_SIGNALED;
	wr.sg_list = &ssge[1];
	wr.num_sge = 1;
	if (EXPECT(&c, !ret, "post_recv: %d", ret) &&
	    post_send_ok(&c, p->a, &wr, "post SEND")) {
		expect_wc(&c, p, xr, "the receive", IB_WC_LOC_LEN_ERR, -1);
		expect_wc(&c, p, xs, "the SEND", IB_WC_REM_INV_REQ_ERR, -1);
	}
	report(&c, "send/too-long");
out:
	if (c.failed)
		report(&c, "send/setup");
	pair_free(p);
	for (i = 0; i < 3; i++)
		kb_free(&s[i]);
	for (i = 0; i < 4; i++)
		kb_free(&r[i]);
}

/* ------------------------------------------------------------------ */
/* An NVMe-oF-like exchange                                            */

/*
 * What nvme-rdma and nvmet-rdma do for one command: the host (A) posts an
 * unsignaled REG_MR of its data buffer chained with the SEND of the
 * command, which carries the buffer's iova and rkey; the target (B) WRITEs
 * the data through that key as soon as the command arrives, then answers
 * with a SEND_WITH_INV of the key; the host's receive says the key is
 * invalidated, and a WRITE through it is refused.
 */
struct nvme_cmd {
	__le64 iova;
	__le32 rkey;
	__le32 len;
};

static noinline void flow_checks(void)
{
	struct ck c = {};
	struct popts o;
	struct pair *p;
	struct region *ra = NULL;
	struct ib_mr *mr = NULL;
	struct kb cmd = {}, rcv = {}, data = {}, rsp = {};
	struct xc *xreg, *xcmd, *xrcv, *xw, *xrsp, *xrr;
	struct ib_reg_wr reg = {};
	struct ib_send_wr snd = {};
	struct ib_sge sge, rsge;
	struct nvme_cmd *nc;
	u32 ws = next_seed(), rkey = 0;
	u64 iova = 0;
	size_t len = 0;
	bool ok;
	int ret;

	if (!group_on("flow/"))
		return;
	popts_default(&o);
	p = pair_new(&o, &c);
	ok = p && EXPECT(&c, !kb_alloc(&cmd, 64) && !kb_alloc(&rcv, 64) &&
			     !kb_alloc(&rsp, 64) && !kb_alloc(&data, 4 * PAGE_SIZE), "no memory");
	if (ok) {
		/* The host's data buffer: a page offset of 1000, three pages. */
		ra = region_new(R_SPLIT, 1000, 3, 2000);
		ok = EXPECT(&c, ra, "no memory");
	}
	if (ok) {
		mr = ib_alloc_mr(p->pd, IB_MR_TYPE_MEM_REG, region_pages(ra));
		if (IS_ERR(mr)) {
			EXPECT(&c, 0, "ib_alloc_mr: %ld", PTR_ERR(mr));
			mr = NULL;
		}
		ok = mr && fr_map(&c, mr, ra, MAP_VA);
	}
	if (ok) {
		region_fill(ra);
		/* The target's receive for the command, the host's for the response. */
		xcmd = xc_get();
		xrsp = xc_get();
		xreg = xc_get();
		xrcv = xc_get();
		rsge = (struct ib_sge){ .addr = rcv.dma, .length = 64,
					.lkey = p->pd->local_dma_lkey };
		ret = post_recv(p->b, xrcv, &rsge, 1);
		ok = EXPECT(&c, !ret, "post_recv (target): %d", ret);
		rsge = (struct ib_sge){ .addr = rsp.dma, .length = 64,
					.lkey = p->pd->local_dma_lkey };
		ret = post_recv(p->a, xrsp, &rsge, 1);
		ok = ok && EXPECT(&c, !ret, "post_recv (host): %d", ret);
	}
	if (ok) {
		ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));
		reg.wr.opcode = IB_WR_REG_MR;
		reg.wr.wr_cqe = &xreg->cqe; /* unsignaled: completes only on error */
		reg.wr.next = &snd;
		reg.mr = mr;
		reg.key = mr->rkey;
		reg.access = ACC_ALL;
		nc = (struct nvme_cmd *)cmd.d;
		nc->iova = cpu_to_le64(mr->iova);
		nc->rkey = cpu_to_le32(mr->rkey);
		nc->len = cpu_to_le32(ra->len);
		sge = (struct ib_sge){ .addr = cmd.dma, .length = sizeof(*nc),
				       .lkey = p->pd->local_dma_lkey };
		snd.opcode = IB_WR_SEND;
		snd.wr_cqe = &xcmd->cqe;
		snd.send_flags = IB_SEND_SIGNALED;
		snd.sg_list = &sge;
		snd.num_sge = 1;
		ok = post_send_ok(&c, p->a, &reg.wr, "post REG_MR + SEND") &&
		     expect_wc(&c, p, xcmd, "the command's SEND", IB_WC_SUCCESS, IB_WC_SEND) &&
		     expect_wc(&c, p, xrcv, "the command's receive", IB_WC_SUCCESS, IB_WC_RECV) &&
		     EXPECT(&c, xrcv->wc.byte_len == sizeof(*nc), "command byte_len %u",
			    xrcv->wc.byte_len);
		msleep(20);
		EXPECT(&c, !atomic_read(&xreg->n), "the unsignaled REG_MR completed (%s)",
		       ib_wc_status_msg(xreg->wc.status));
	}
	report(&c, "flow/reg-mr-chained-with-send");

	if (ok) {
		/* The target reads the command it received and WRITEs the data. */
		nc = (struct nvme_cmd *)rcv.d;
		iova = le64_to_cpu(nc->iova);
		rkey = le32_to_cpu(nc->rkey);
		len = le32_to_cpu(nc->len);
		ok = EXPECT(&c, len == ra->len && rkey == mr->rkey && len <= data.n,
			    "the command arrived as 0x%llx/0x%x/%zu", iova, rkey, len);
	}
	if (ok) {
		sge = (struct ib_sge){ .addr = data.dma, .length = len,
				       .lkey = p->pd->local_dma_lkey };
		fill(data.d, len, ws, 0);
		xw = xc_get();
		ret = post_rdma(p->b, xw, IB_WR_RDMA_WRITE, &sge, 1, iova, rkey);
		ok = EXPECT(&c, !ret, "post WRITE (target): %d", ret) &&
		     expect_wc(&c, p, xw, "the target's WRITE", IB_WC_SUCCESS, IB_WC_RDMA_WRITE) &&
		     region_check(&c, ra, 0, len, ws, "the host's buffer");
	} else {
		ck_skip(&c, "no command");
	}
	report(&c, "flow/target-write-through-sent-key");

	if (ok) {
		/* The response: SEND_WITH_INV of the host's key. */
		sge = (struct ib_sge){ .addr = data.dma, .length = 16,
				       .lkey = p->pd->local_dma_lkey };
		memset(&snd, 0, sizeof(snd));
		xrr = xc_get();
		snd.opcode = IB_WR_SEND_WITH_INV;
		snd.wr_cqe = &xrr->cqe;
		snd.send_flags = IB_SEND_SIGNALED;
		snd.sg_list = &sge;
		snd.num_sge = 1;
		snd.ex.invalidate_rkey = rkey;
		ok = post_send_ok(&c, p->b, &snd, "post SEND_WITH_INV (target)") &&
		     expect_wc(&c, p, xrr, "the response's SEND", IB_WC_SUCCESS, IB_WC_SEND) &&
		     expect_wc(&c, p, xrsp, "the response's receive", IB_WC_SUCCESS, IB_WC_RECV);
		if (ok) {
			EXPECT(&c, xrsp->wc.wc_flags & IB_WC_WITH_INVALIDATE &&
			       xrsp->wc.ex.invalidate_rkey == mr->rkey,
			       "response wc_flags 0x%x, invalidate_rkey 0x%x (want 0x%x)",
			       xrsp->wc.wc_flags, xrsp->wc.ex.invalidate_rkey, mr->rkey);
			EXPECT(&c, xrsp->wc.byte_len == 16, "response byte_len %u",
			       xrsp->wc.byte_len);
		}
	} else {
		ck_skip(&c, "no data");
	}
	report(&c, "flow/response-send-with-inv");

	if (ok) {
		/* A late WRITE through the invalidated key: refused, nothing lands. */
		region_fill(ra);
		sge = (struct ib_sge){ .addr = data.dma, .length = 100,
				       .lkey = p->pd->local_dma_lkey };
		xw = xc_get();
		ret = post_rdma(p->b, xw, IB_WR_RDMA_WRITE, &sge, 1, iova, rkey);
		if (EXPECT(&c, !ret, "post WRITE: %d", ret) &&
		    expect_wc(&c, p, xw, "the late WRITE", IB_WC_REM_ACCESS_ERR, -1))
			region_check(&c, ra, 0, 0, 0, "the host's buffer after the late WRITE");
	} else {
		ck_skip(&c, "no response");
	}
	report(&c, "flow/key-dead-after-response");

	if (mr)
		ib_dereg_mr(mr);
	pair_free(p);
	region_free(ra);
	kb_free(&cmd);
	kb_free(&rcv);
	kb_free(&rsp);
	kb_free(&data);
}

/* ------------------------------------------------------------------ */
/* DMA MR: local_dma_lkey and the unsafe global rkey                   */

static noinline void dma_checks(void)
{
	struct ck c = {};
	struct popts o;
	struct pair *p = NULL;
	struct ib_pd *gpd;
	struct kb s = {}, r = {}, t = {};
	struct ib_sge ss, rs;
	struct xc *xr;
	u32 ws = next_seed();

	if (!group_on("dma/"))
		return;
	/* The PD's local_dma_lkey (a DMA MR of the device) for SEND and RECV. */
	popts_default(&o);
	p = pair_new(&o, &c);
	if (p && EXPECT(&c, !kb_alloc(&s, 3000) && !kb_alloc(&r, 3000), "no memory")) {
		fill(s.d, 3000, ws, 0);
		ss = (struct ib_sge){ .addr = s.dma, .length = 3000,
				      .lkey = p->pd->local_dma_lkey };
		rs = (struct ib_sge){ .addr = r.dma, .length = 3000,
				      .lkey = p->pd->local_dma_lkey };
		if (send_recv(&c, p, &ss, 1, &rs, 1, IB_WR_SEND, 0, 0, &xr)) {
			EXPECT(&c, xr->wc.byte_len == 3000, "byte_len %u", xr->wc.byte_len);
			kb_check(&c, &r, ws, 0, "the received data");
		}
	}
	report(&c, "dma/local-dma-lkey-send-recv");
	/* The key is local only: a peer naming it as an rkey is refused. */
	if (p && r.p) {
		kb_reset(&r);
		if (write_plain(&c, p, &s, 64, r.dma, p->pd->local_dma_lkey, IB_WC_REM_ACCESS_ERR,
				"a WRITE with local_dma_lkey as the rkey"))
			kb_untouched(&c, &r, "after the refused WRITE");
	} else {
		EXPECT(&c, 0, "no pair");
	}
	report(&c, "dma/local-dma-lkey-as-rkey-refused");
	pair_free(p);
	p = NULL;

	/*
	 * The device's own local_dma_lkey (IBK_LOCAL_DMA_LKEY): every kernel
	 * PD gets it, with no DMA MR of its own.
	 */
	if (EXPECT(&c, K.ibdev->attrs.kernel_cap_flags & IBK_LOCAL_DMA_LKEY,
		   "the device does not advertise IBK_LOCAL_DMA_LKEY"))
		EXPECT(&c, K.pd->local_dma_lkey == K.ibdev->local_dma_lkey && !K.pd->__internal_mr,
		       "the PD's local_dma_lkey is 0x%x, the device's 0x%x; internal MR %p",
		       K.pd->local_dma_lkey, K.ibdev->local_dma_lkey, K.pd->__internal_mr);
	report(&c, "dma/local-dma-lkey-device");

	/*
	 * A PD with IB_PD_UNSAFE_GLOBAL_RKEY (as ib_srp and ib_iser without
	 * register_always): its DMA MR reaches any kernel address remotely.
	 */
	gpd = ib_alloc_pd(K.ibdev, IB_PD_UNSAFE_GLOBAL_RKEY);
	if (IS_ERR(gpd)) {
		EXPECT(&c, 0, "ib_alloc_pd(IB_PD_UNSAFE_GLOBAL_RKEY): %ld", PTR_ERR(gpd));
		gpd = NULL;
	} else {
		EXPECT(&c, gpd->unsafe_global_rkey, "no unsafe_global_rkey");
		o.pd = gpd;
		p = pair_new(&o, &c);
	}
	if (p && s.p && r.p && EXPECT(&c, !kb_alloc(&t, 5000), "no memory")) {
		ws = next_seed();
		fill(s.d, 3000, ws, 0);
		if (write_plain(&c, p, &s, 3000, t.dma + 1000, gpd->unsafe_global_rkey,
				IB_WC_SUCCESS, "WRITE through the global rkey")) {
			u8 *copy = t.d + 1000;

			EXPECT(&c, mismatch(copy, 3000, ws, 0) < 0, "the written data differs");
			EXPECT(&c, mismatch(t.d, 1000, t.gseed, GUARD) < 0 &&
			       mismatch(t.d + 4000, 1000, t.gseed, GUARD + 4000) < 0,
			       "bytes around the written ones changed");
		}
		report(&c, "dma/global-rkey-write");
		fill(t.p, t.n + 2 * GUARD, t.gseed, 0);
		fill(r.p, r.n + 2 * GUARD, r.gseed, 0);
		if (read_plain(&c, p, &r, 3000, t.dma + 7, gpd->unsafe_global_rkey, IB_WC_SUCCESS,
			       "READ through the global rkey"))
			kb_check(&c, &r, t.gseed, GUARD + 7, "the READ's data");
	} else {
		report(&c, "dma/global-rkey-write");
	}
	report(&c, "dma/global-rkey-read");
	pair_free(p);
	if (gpd)
		ib_dealloc_pd(gpd);
	kb_free(&s);
	kb_free(&r);
	kb_free(&t);
}

/* ------------------------------------------------------------------ */
/* rdma_rw contexts, as nvmet and isert use them                        */

/* An sg list of N kmalloc'd chunks of LEN[i] bytes (not DMA-mapped). */
struct chunks {
	int n;
	struct scatterlist sg[12];
	u8 *buf[12];
	size_t len[12];
	size_t total;
};

static void chunks_free(struct chunks *k)
{
	int i;

	for (i = 0; i < k->n; i++)
		kfree(k->buf[i]);
	k->n = 0;
}

static bool chunks_new(struct chunks *k, int n, const size_t *len)
{
	int i;

	memset(k, 0, sizeof(*k));
	sg_init_table(k->sg, n);
	for (i = 0; i < n; i++) {
		k->buf[i] = kmalloc(len[i], GFP_KERNEL);
		if (!k->buf[i]) {
			k->n = i;
			chunks_free(k);
			return false;
		}
		k->len[i] = len[i];
		k->total += len[i];
		sg_set_buf(&k->sg[i], k->buf[i], len[i]);
	}
	k->n = n;
	return true;
}

/* Fills the stream of the chunks from byte 0 with pat(s, i). */
static void chunks_fill(struct chunks *k, u32 s)
{
	size_t at = 0;
	int i;

	for (i = 0; i < k->n; at += k->len[i], i++)
		fill(k->buf[i], k->len[i], s, at);
}

/* Chunk stream byte I (0-based over the whole list). */
static u8 *chunks_at(struct chunks *k, size_t i)
{
	int j;

	for (j = 0; j < k->n; i -= k->len[j], j++)
		if (i < k->len[j])
			return k->buf[j] + i;
	return NULL;
}

static noinline void rw_case(const char *name, int n, const size_t *len, u32 sg_off, int want_wrs)
{
	struct ck c = {};
	struct popts o;
	struct pair *p;
	struct region *r = NULL;
	struct ib_mr *mr = NULL;
	struct chunks *kp = kzalloc(sizeof(*kp), GFP_KERNEL);
	struct rdma_rw_ctx ctx;
	struct xc *x;
	int ret, dir;
	bool ok;

	popts_default(&o);
	o.max_rdma_ctxs = 4;
	p = pair_new(&o, &c);
	ok = p && EXPECT(&c, kp && chunks_new(kp, n, len), "no memory");
	/* The remote buffer: an FRWR of B at page offset 2048, as a host registers it. */
	if (ok) {
		r = region_new(R_SPLIT, 2048, DIV_ROUND_UP(kp->total + 2048, PAGE_SIZE) + 1, 333);
		ok = EXPECT(&c, r, "no memory");
	}
	if (ok) {
		mr = ib_alloc_mr(p->pd, IB_MR_TYPE_MEM_REG, region_pages(r));
		if (IS_ERR(mr)) {
			EXPECT(&c, 0, "ib_alloc_mr: %ld", PTR_ERR(mr));
			mr = NULL;
		}
	}
	ok = mr && fr_map(&c, mr, r, MAP_VA) && fr_reg(&c, p, p->b, mr, ACC_ALL);
	for (dir = 0; dir < 2; dir++) {
		enum dma_data_direction dd = dir ? DMA_FROM_DEVICE : DMA_TO_DEVICE;
		const char *what = dir ? "read" : "write";
		size_t nb = kp->total - sg_off, i;
		u32 ws = next_seed();
		long m = -1;

		if (!ok) {
			if (!c.failed)
				ck_skip(&c, "no pair or registration");
			report(&c, "rw/%s-%s", what, name);
			continue;
		}
		region_fill(r);
		chunks_fill(kp, ws);
		ret = rdma_rw_ctx_init(&ctx, p->a, K.port, kp->sg, kp->n, sg_off, mr->iova + 5,
				       mr->rkey, dd);
		if (!EXPECT(&c, ret > 0, "rdma_rw_ctx_init: %d", ret)) {
			report(&c, "rw/%s-%s", what, name);
			continue;
		}
		EXPECT(&c, ret == want_wrs, "rdma_rw_ctx_init: %d WRs, want %d", ret, want_wrs);
		x = xc_get();
		ret = rdma_rw_ctx_post(&ctx, p->a, K.port, &x->cqe, NULL);
		if (EXPECT(&c, !ret, "rdma_rw_ctx_post: %d", ret) &&
		    expect_wc(&c, p, x, "the last WR", IB_WC_SUCCESS,
			      dir ? IB_WC_RDMA_READ : IB_WC_RDMA_WRITE)) {
			/* Only the last WR is signaled: one completion. */
			msleep(20);
			EXPECT(&c, atomic_read(&x->n) == 1, "%d completions", atomic_read(&x->n));
			if (dir) {
				/* Stream bytes from sg_off on hold region bytes 5 on. */
				for (i = 0; i < kp->total && m < 0; i++) {
					u8 want = i < sg_off ? pat(ws, i) :
						  pat(r->dseed, 5 + i - sg_off);

					if (*chunks_at(kp, i) != want)
						m = i;
				}
				EXPECT(&c, m < 0,
				       "READ: byte %ld of the sg list (sg_offset %u) is 0x%02x",
				       m, sg_off, m < 0 ? 0 : *chunks_at(kp, m));
				region_check(&c, r, 0, 0, 0, "the remote region");
			} else {
				/*
				 * Region bytes 5.. hold the stream from sg_off;
				 * nothing else changed.
				 */
				region_check_b(&c, r, 5, nb, ws, sg_off, "the remote region");
			}
		}
		rdma_rw_ctx_destroy(&ctx, p->a, K.port, kp->sg, kp->n, dd);
		report(&c, "rw/%s-%s", what, name);
	}
	if (mr)
		ib_dereg_mr(mr);
	pair_free(p);
	region_free(r);
	if (kp)
		chunks_free(kp);
	kfree(kp);
}

static noinline void rw_checks(void)
{
	static const size_t one[1] = { 3000 };
	static const size_t three[3] = { 1000, 4096, 77 };
	static const size_t ten[10] = { 512, 4096, 100, 1, 2048, 4096, 300, 999, 4096, 17 };

	if (!group_on("rw/"))
		return;
	rw_case("single", 1, one, 0, 1);
	rw_case("multi-sge", 3, three, 0, 1);
	/* The QPs take 4 SGEs: ten entries make three WRs. */
	rw_case("multi-wr", 10, ten, 0, 3);
	/* From byte 1100 of the list (isert and nvmet pass offsets). */
	rw_case("sg-offset", 3, three, 1100, 1);
}

/* ------------------------------------------------------------------ */
/* ib_drain_qp                                                         */

struct drain_job {
	struct ib_qp *qp;
	struct completion done;
	unsigned long t0, t1;
};

static int drain_fn(void *d)
{
	struct drain_job *j = d;

	ib_drain_qp(j->qp);
	j->t1 = jiffies;
	complete(&j->done);
	return 0;
}

/* Runs ib_drain_qp(QP) in a thread; false if it has not returned in MS. */
static bool drain_timed(struct ck *c, struct ib_qp *qp, unsigned int ms, unsigned long *took)
{
	struct drain_job *j = kzalloc(sizeof(*j), GFP_KERNEL);
	struct task_struct *t;

	if (!EXPECT(c, j, "no memory"))
		return false;
	j->qp = qp;
	init_completion(&j->done);
	j->t0 = jiffies;
	t = kthread_run(drain_fn, j, "kverbs-drain");
	if (IS_ERR(t)) {
		EXPECT(c, 0, "kthread_run: %ld", PTR_ERR(t));
		kfree(j);
		return false;
	}
	if (!wait_for_completion_timeout(&j->done, msecs_to_jiffies(ms))) {
		/* The thread still uses the QP: keep everything, and the module. */
		EXPECT(c, 0, "ib_drain_qp has not returned after %u ms", ms);
		K.stuck = true;
		return false;
	}
	*took = jiffies_to_msecs(j->t1 - j->t0);
	kfree(j);
	return true;
}

static noinline void drain_case(const char *name, enum ib_poll_context poll, bool direct_send)
{
	struct ck c = {};
	struct popts o;
	struct pair *p;
	struct kb b = {};
	struct xc *xr[4], *xs[2];
	struct ib_sge sge;
	unsigned long took;
	int i, ret;

	popts_default(&o);
	o.poll = poll;
	if (direct_send) {
		o.send_cq_own = true;
		o.poll_send = IB_POLL_DIRECT;
	}
	p = pair_new(&o, &c);
	if (!p || !EXPECT(&c, !kb_alloc(&b, 4096), "no memory"))
		goto out;
	sge = (struct ib_sge){ .addr = b.dma, .length = 512, .lkey = p->pd->local_dma_lkey };
	/* Receives on A that nothing will match. */
	for (i = 0; i < 4; i++) {
		xr[i] = xc_get();
		ret = post_recv(p->a, xr[i], &sge, 1);
		if (!EXPECT(&c, !ret, "post_recv: %d", ret))
			goto out;
	}
	/* SENDs from A to B, which has no receive: they wait (RNR, retried forever). */
	for (i = 0; i < 2; i++) {
		struct ib_send_wr wr = {};

		xs[i] = xc_get();
		wr.opcode = IB_WR_SEND;
		wr.wr_cqe = &xs[i]->cqe;
		wr.send_flags = IB_SEND_SIGNALED;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		ret = post_send1(p->a, &wr);
		if (!EXPECT(&c, !ret, "post_send: %d", ret))
			goto out;
	}
	msleep(50);
	EXPECT(&c, !atomic_read(&xs[0]->n), "a SEND completed (%s) although B has no receive",
	       ib_wc_status_msg(xs[0]->wc.status));
	if (!drain_timed(&c, p->a, 60000, &took)) {
		report(&c, "drain/%s", name);
		/* Leave the pair and the WRs: the drain thread still uses them. */
		return;
	}
	for (i = 0; i < 4; i++) {
		EXPECT(&c, atomic_read(&xr[i]->n) == 1, "receive %d completed %d times", i,
		       atomic_read(&xr[i]->n));
		EXPECT(&c, xr[i]->wc.status == IB_WC_WR_FLUSH_ERR, "receive %d: %s", i,
		       ib_wc_status_msg(xr[i]->wc.status));
	}
	for (i = 0; i < 2; i++) {
		EXPECT(&c, atomic_read(&xs[i]->n) == 1, "SEND %d completed %d times", i,
		       atomic_read(&xs[i]->n));
		EXPECT(&c, xs[i]->wc.status == IB_WC_WR_FLUSH_ERR, "SEND %d: %s", i,
		       ib_wc_status_msg(xs[i]->wc.status));
	}
	EXPECT(&c, took < 10000, "ib_drain_qp took %lu ms", took);
out:
	report(&c, "drain/%s", name);
	pair_free(p);
	kb_free(&b);
}

/* A QP on an SRQ: ib_drain_qp waits for IB_EVENT_QP_LAST_WQE_REACHED (60 s at most). */
static noinline void drain_srq(void)
{
	struct ck c = {};
	struct popts o;
	struct pair *p = NULL;
	struct ib_srq *srq;
	struct ib_srq_init_attr sa = {};
	unsigned long took;

	popts_default(&o);
	o.poll = IB_POLL_WORKQUEUE;
	sa.attr.max_wr = 16;
	sa.attr.max_sge = 1;
	sa.srq_type = IB_SRQT_BASIC;
	srq = ib_create_srq(K.pd, &sa);
	if (IS_ERR(srq)) {
		EXPECT(&c, 0, "ib_create_srq: %ld", PTR_ERR(srq));
		srq = NULL;
		goto out;
	}
	o.srq_b = srq;
	p = pair_new(&o, &c);
	if (!p)
		goto out;
	if (!drain_timed(&c, p->b, 90000, &took)) {
		report(&c, "drain/srq-last-wqe-reached");
		return;
	}
	EXPECT(&c, test_bit(IB_EVENT_QP_LAST_WQE_REACHED, &p->events_b),
	       "no IB_EVENT_QP_LAST_WQE_REACHED (ib_drain_qp took %lu ms)", took);
	EXPECT(&c, took < 10000, "ib_drain_qp took %lu ms", took);
out:
	report(&c, "drain/srq-last-wqe-reached");
	pair_free(p);
	if (srq)
		ib_destroy_srq(srq);
}

static noinline void drain_checks(void)
{
	if (!group_on("drain/"))
		return;
	drain_case("flush-softirq", IB_POLL_SOFTIRQ, false);
	drain_case("flush-workqueue", IB_POLL_WORKQUEUE, false);
	/* ib_srp: sends on an IB_POLL_DIRECT CQ, drained by polling. */
	drain_case("flush-direct-send-cq", IB_POLL_SOFTIRQ, true);
	drain_srq();
}

/* ------------------------------------------------------------------ */
/* CQ polling contexts                                                 */

static noinline void cq_case(const char *name, enum ib_poll_context poll, int want_ctx, bool pool)
{
	struct ck c = {};
	struct popts o;
	struct pair *p = NULL;
	struct ib_cq *pcq = NULL;
	struct kb s = {}, r = {};
	int i;

	popts_default(&o);
	o.poll = poll;
	if (pool) {
		pcq = ib_cq_pool_get(K.ibdev, 2 * 256, 0, poll);
		if (IS_ERR(pcq)) {
			EXPECT(&c, 0, "ib_cq_pool_get: %ld", PTR_ERR(pcq));
			goto out;
		}
		o.cq = pcq;
	}
	/* The pair gives the pool's CQ back when it goes (or fails). */
	p = pair_new(&o, &c);
	if (!p)
		goto out;
	if (!EXPECT(&c, !kb_alloc(&s, 300) && !kb_alloc(&r, 300), "no memory"))
		goto out;
	for (i = 0; i < 8 && !c.failed; i++) {
		struct ib_sge ss = { .addr = s.dma, .length = 300, .lkey = p->pd->local_dma_lkey };
		struct ib_sge rs = { .addr = r.dma, .length = 300, .lkey = p->pd->local_dma_lkey };
		struct xc *xr;
		u32 ws = next_seed();

		fill(s.d, 300, ws, 0);
		if (!send_recv(&c, p, &ss, 1, &rs, 1, IB_WR_SEND, 0, 0, &xr))
			break;
		kb_check(&c, &r, ws, 0, "the received data");
		EXPECT(&c, xr->ctx == want_ctx, "the receive's done callback ran in %s, want %s",
		       ctx_name[xr->ctx], ctx_name[want_ctx]);
		EXPECT(&c, xr->wc.byte_len == 300, "byte_len %u", xr->wc.byte_len);
	}
out:
	report(&c, "cq/%s", name);
	pair_free(p);
	kb_free(&s);
	kb_free(&r);
}

/* ib_process_cq_direct honours its budget and finds every completion. */
static noinline void cq_direct_budget(void)
{
	struct ck c = {};
	struct popts o;
	struct pair *p;
	struct kb s = {}, r = {};
	struct xc *xr[5], *xs[5];
	unsigned long end;
	int i, got = 0, ret;

	popts_default(&o);
	o.poll = IB_POLL_DIRECT;
	p = pair_new(&o, &c);
	if (!p || !EXPECT(&c, !kb_alloc(&s, 64) && !kb_alloc(&r, 5 * 64), "no memory"))
		goto out;
	for (i = 0; i < 5; i++) {
		struct ib_sge rs = { .addr = r.dma + 64 * i, .length = 64,
				     .lkey = p->pd->local_dma_lkey };

		xr[i] = xc_get();
		ret = post_recv(p->b, xr[i], &rs, 1);
		if (!EXPECT(&c, !ret, "post_recv: %d", ret))
			goto out;
	}
	for (i = 0; i < 5; i++) {
		struct ib_sge ss = { .addr = s.dma, .length = 64, .lkey = p->pd->local_dma_lkey };
		struct ib_send_wr wr = {};

		xs[i] = xc_get();
		wr.opcode = IB_WR_SEND;
		wr.wr_cqe = &xs[i]->cqe;
		wr.send_flags = IB_SEND_SIGNALED;
		wr.sg_list = &ss;
		wr.num_sge = 1;
		ret = post_send1(p->a, &wr);
		if (!EXPECT(&c, !ret, "post_send: %d", ret))
			goto out;
	}
	/* A's completions, then B's five in calls of at most two. */
	end = jiffies + msecs_to_jiffies(WAIT_MS);
	for (i = 0; i < 5 && time_before(jiffies, end); ) {
		ib_process_cq_direct(p->cq_a, 16);
		if (atomic_read(&xs[i]->n))
			i++;
		else
			usleep_range(100, 300);
	}
	EXPECT(&c, i == 5, "%d of 5 SENDs completed", i);
	while (got < 5 && time_before(jiffies, end) && !c.failed) {
		int n = ib_process_cq_direct(p->cq_b, 2);

		EXPECT(&c, n >= 0 && n <= 2, "ib_process_cq_direct(budget 2) returned %d", n);
		got += max(n, 0);
		if (!n)
			usleep_range(100, 300);
	}
	EXPECT(&c, got == 5, "%d of 5 receive completions polled", got);
	for (i = 0; i < 5; i++) {
		EXPECT(&c, atomic_read(&xr[i]->n) == 1, "receive %d completed %d times", i,
		       atomic_read(&xr[i]->n));
		EXPECT(&c, xr[i]->wc.status == IB_WC_SUCCESS, "receive %d: %s", i,
		       ib_wc_status_msg(xr[i]->wc.status));
		EXPECT(&c, xr[i]->ctx == CTX_DIRECT, "receive %d done in %s", i,
		       ctx_name[xr[i]->ctx]);
	}
	EXPECT(&c, ib_process_cq_direct(p->cq_b, 2) == 0, "a sixth completion");
out:
	report(&c, "cq/direct-budget");
	pair_free(p);
	kb_free(&s);
	kb_free(&r);
}

static noinline void cq_checks(void)
{
	if (!group_on("cq/"))
		return;
	cq_case("direct", IB_POLL_DIRECT, CTX_DIRECT, false);
	cq_case("softirq", IB_POLL_SOFTIRQ, CTX_SOFTIRQ, false);
	cq_case("workqueue", IB_POLL_WORKQUEUE, CTX_WORK, false);
	cq_case("unbound-workqueue", IB_POLL_UNBOUND_WORKQUEUE, CTX_WORK, false);
	/* nvme-rdma and nvmet-rdma take their CQs from the pool. */
	cq_case("pool-softirq", IB_POLL_SOFTIRQ, CTX_SOFTIRQ, true);
	cq_direct_budget();
}

/* ------------------------------------------------------------------ */
/* SRQ                                                                 */

static noinline void srq_checks(void)
{
	struct ck c = {};
	struct popts o;
	struct pair *p1 = NULL, *p2 = NULL;
	struct ib_srq *srq;
	struct ib_srq_init_attr sa = {};
	struct kb s = {}, r = {};
	struct xc *xr[8], *xs[8];
	int i, ret, from1 = 0, from2 = 0;
	u32 ws[8];

	if (!group_on("srq/"))
		return;
	popts_default(&o);
	o.poll = IB_POLL_WORKQUEUE;
	sa.attr.max_wr = 32;
	sa.attr.max_sge = 2;
	sa.srq_type = IB_SRQT_BASIC;
	srq = ib_create_srq(K.pd, &sa);
	if (IS_ERR(srq)) {
		EXPECT(&c, 0, "ib_create_srq: %ld", PTR_ERR(srq));
		srq = NULL;
		goto out;
	}
	o.srq_b = srq;
	p1 = pair_new(&o, &c);
	p2 = p1 ? pair_new(&o, &c) : NULL;
	if (!p2 || !EXPECT(&c, !kb_alloc(&s, 8 * 600) && !kb_alloc(&r, 8 * 600), "no memory"))
		goto out;
	/* Eight receives of two SGEs each (100 + 500 bytes). */
	for (i = 0; i < 8; i++) {
		struct ib_sge rs[2] = {
			{ .addr = r.dma + 600 * i, .length = 100,
			  .lkey = K.pd->local_dma_lkey },
			{ .addr = r.dma + 600 * i + 100, .length = 500,
			  .lkey = K.pd->local_dma_lkey },
		};
		struct ib_recv_wr wr = {};

		xr[i] = xc_get();
		wr.wr_cqe = &xr[i]->cqe;
		wr.sg_list = rs;
		wr.num_sge = 2;
		ret = ib_post_srq_recv(srq, &wr, NULL);
		if (!EXPECT(&c, !ret, "ib_post_srq_recv: %d", ret))
			goto out;
	}
	/* Four SENDs from each pair's A, of 200 + i bytes. */
	for (i = 0; i < 8; i++) {
		struct pair *p = i % 2 ? p2 : p1;
		struct ib_sge ss = { .addr = s.dma + 600 * i, .length = 200 + i,
				     .lkey = K.pd->local_dma_lkey };
		struct ib_send_wr wr = {};

		ws[i] = next_seed();
		fill(s.d + 600 * i, 200 + i, ws[i], 0);
		xs[i] = xc_get();
		wr.opcode = IB_WR_SEND;
		wr.wr_cqe = &xs[i]->cqe;
		wr.send_flags = IB_SEND_SIGNALED;
		wr.sg_list = &ss;
		wr.num_sge = 1;
		ret = post_send1(p->a, &wr);
		if (!EXPECT(&c, !ret, "post_send: %d", ret))
			goto out;
	}
	for (i = 0; i < 8 && !c.failed; i++)
		expect_wc(&c, i % 2 ? p2 : p1, xs[i], "a SEND", IB_WC_SUCCESS, IB_WC_SEND);
	for (i = 0; i < 8 && !c.failed; i++) {
		int k, who;
		u8 *d = r.d + 600 * i;

		if (!expect_wc(&c, p1, xr[i], "an SRQ receive", IB_WC_SUCCESS, IB_WC_RECV))
			break;
		who = xr[i]->wc.qp == p1->b ? 1 : xr[i]->wc.qp == p2->b ? 2 : 0;
		if (!EXPECT(&c, who, "receive %d: wc.qp is neither B", i))
			break;
		/* Which SEND it carries: its length says (200 + k). */
		k = xr[i]->wc.byte_len - 200;
		if (!EXPECT(&c, k >= 0 && k < 8 && (k % 2 ? 2 : 1) == who,
			    "receive %d: byte_len %u on QP %d", i, xr[i]->wc.byte_len, who))
			break;
		EXPECT(&c, mismatch(d, 200 + k, ws[k], 0) < 0,
		       "receive %d: the data of SEND %d differs (across its two SGEs)", i, k);
		EXPECT(&c, mismatch(d + 200 + k, 600 - 200 - k, r.gseed,
				    GUARD + 600 * i + 200 + k) < 0,
		       "receive %d: bytes past the message changed", i);
		if (who == 1)
			from1++;
		else
			from2++;
	}
	EXPECT(&c, from1 == 4 && from2 == 4, "%d receives on the first QP, %d on the second",
	       from1, from2);
out:
	report(&c, "srq/two-qps-two-sges");
	pair_free(p1);
	pair_free(p2);
	if (srq)
		ib_destroy_srq(srq);
	kb_free(&s);
	kb_free(&r);
}

/* ------------------------------------------------------------------ */
/* Address handles without sleeping                                    */

/*
 * rdma_create_ah and rdma_destroy_ah without the SLEEPABLE flag, as ib_cm
 * calls them for every MAD it sends, under its cm_id's spinlock with
 * interrupts off: the driver may not turn interrupts on inside the
 * caller's section (a lock that an interrupt takes could then deadlock).
 * Called here with interrupts off; they must still be off after each call.
 */
static noinline void ah_checks(void)
{
	struct rdma_ah_attr aa = {};
	struct ck c = {};
	unsigned long flags;
	struct ib_ah *ah;
	bool off;

	if (!group_on("ah/"))
		return;
	aa.type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(&aa, K.port);
	rdma_ah_set_grh(&aa, (union ib_gid *)&K.sgid->gid, 0, K.sgid->index, 64, 0);
	memcpy(aa.roce.dmac, K.mac, ETH_ALEN);
	local_irq_save(flags);
	ah = rdma_create_ah(K.pd, &aa, 0);
	off = irqs_disabled();
	local_irq_restore(flags);
	if (!EXPECT(&c, !IS_ERR(ah), "rdma_create_ah(0): %ld", PTR_ERR(ah))) {
		report(&c, "ah/atomic-create-keeps-irqs-off");
		report(&c, "ah/atomic-destroy-keeps-irqs-off");
		return;
	}
	EXPECT(&c, off, "interrupts were on after rdma_create_ah (called with them off)");
	report(&c, "ah/atomic-create-keeps-irqs-off");
	local_irq_save(flags);
	rdma_destroy_ah(ah, 0);
	off = irqs_disabled();
	local_irq_restore(flags);
	EXPECT(&c, off, "interrupts were on after rdma_destroy_ah (called with them off)");
	report(&c, "ah/atomic-destroy-keeps-irqs-off");
}

/* ------------------------------------------------------------------ */
/* Bad input from a kernel consumer: an error, never a splat           */

static noinline void bad_checks(void)
{
	struct ck c = {};
	struct popts o;
	struct pair *p;
	struct ib_mr *mr;
	struct region *r;
	struct ib_pd *pd2;
	struct kb b = {};
	int n;

	if (!group_on("bad/"))
		return;
	popts_default(&o);

	/* ib_map_mr_sg with more pages than the MR's max_num_sg. */
	p = NULL;
	r = region_new(R_SPLIT, 0, 6, PAGE_SIZE);
	mr = ib_alloc_mr(K.pd, IB_MR_TYPE_MEM_REG, 4);
	if (IS_ERR(mr)) {
		EXPECT(&c, 0, "ib_alloc_mr(4): %ld", PTR_ERR(mr));
		mr = NULL;
	}
	if (mr && EXPECT(&c, r, "no memory")) {
		n = ib_map_mr_sg(mr, r->sgt.sgl, r->mapped, NULL, PAGE_SIZE);
		EXPECT(&c, n < 6 && n <= 4, "ib_map_mr_sg of 6 pages into 4 returned %d", n);
		/* And the MR still maps what fits. */
		n = ib_map_mr_sg(mr, r->sgt.sgl, 4, NULL, PAGE_SIZE);
		EXPECT(&c, n == 4, "then 4 pages: %d", n);
		/* A REG_MR registers those 4: a WRITE past them is refused. */
		p = c.failed ? NULL : pair_new(&o, &c);
		if (p && fr_reg(&c, p, p->b, mr, ACC_ALL) &&
		    EXPECT(&c, !kb_alloc(&b, 8), "no memory")) {
			region_fill(r);
			if (write_plain(&c, p, &b, 8, mr->iova + 4 * PAGE_SIZE - 4, mr->rkey,
					IB_WC_REM_ACCESS_ERR, "a WRITE past the 4 pages"))
				region_check(&c, r, 0, 0, 0, "after the refused WRITE");
		}
		kb_free(&b);
		pair_free(p);
	}
	report(&c, "bad/map-over-max-num-sg");
	if (mr)
		ib_dereg_mr(mr);
	region_free(r);

	/*
	 * ib_alloc_mr takes any max_num_sg C rxe takes: none, more than
	 * max_fast_reg_page_list_len; one whose table cannot be allocated
	 * fails with ENOMEM (and no warning: the VM's log check).
	 */
	mr = ib_alloc_mr(K.pd, IB_MR_TYPE_MEM_REG, 0);
	if (EXPECT(&c, !IS_ERR(mr), "ib_alloc_mr(0): %ld", PTR_ERR(mr))) {
		r = region_new(R_SPLIT, 0, 1, 100);
		if (EXPECT(&c, r, "no memory")) {
			n = ib_map_mr_sg(mr, r->sgt.sgl, r->mapped, NULL, PAGE_SIZE);
			EXPECT(&c, n <= 0,
			       "ib_map_mr_sg of a page into an MR for none returned %d", n);
		}
		region_free(r);
		ib_dereg_mr(mr);
	}
	mr = ib_alloc_mr(K.pd, IB_MR_TYPE_MEM_REG, 2048);
	if (EXPECT(&c, !IS_ERR(mr), "ib_alloc_mr(2048): %ld", PTR_ERR(mr))) {
		r = region_new(R_SPLIT, 7, 3, 100);
		if (EXPECT(&c, r, "no memory")) {
			n = ib_map_mr_sg(mr, r->sgt.sgl, r->mapped, NULL, PAGE_SIZE);
			EXPECT(&c, n == 3, "ib_map_mr_sg of 3 pages returned %d", n);
		}
		region_free(r);
		ib_dereg_mr(mr);
	}
	mr = ib_alloc_mr(K.pd, IB_MR_TYPE_MEM_REG, U32_MAX);
	EXPECT(&c, PTR_ERR_OR_ZERO(mr) == -ENOMEM, "ib_alloc_mr(U32_MAX): %d", PTR_ERR_OR_ZERO(mr));
	if (!IS_ERR(mr))
		ib_dereg_mr(mr);
	report(&c, "bad/alloc-mr-any-max-num-sg");

	/* REG_MR of an MR of another PD: an error completion. */
	p = pair_new(&o, &c);
	pd2 = ib_alloc_pd(K.ibdev, 0);
	r = region_new(R_SPLIT, 0, 2, 100);
	mr = NULL;
	if (p && EXPECT(&c, !IS_ERR(pd2), "ib_alloc_pd") && EXPECT(&c, r, "no memory")) {
		mr = ib_alloc_mr(pd2, IB_MR_TYPE_MEM_REG, 4);
		if (IS_ERR(mr)) {
			EXPECT(&c, 0, "ib_alloc_mr: %ld", PTR_ERR(mr));
			mr = NULL;
		}
	}
	if (mr && fr_map(&c, mr, r, MAP_VA)) {
		struct ib_reg_wr wr = {};
		struct xc *x;
		int ret;

		x = xc_get();
		ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));
		wr.wr.opcode = IB_WR_REG_MR;
		wr.wr.wr_cqe = &x->cqe;
		wr.wr.send_flags = IB_SEND_SIGNALED;
		wr.mr = mr;
		wr.key = mr->rkey;
		wr.access = ACC_ALL;
		ret = post_send1(p->a, &wr.wr);
		if (ret)
			EXPECT(&c, ret == -EINVAL, "post REG_MR of a foreign MR: %d", ret);
		else
			expect_wc_error(&c, p, x, "REG_MR of another PD's MR");
	}
	report(&c, "bad/reg-mr-foreign-pd");
	if (mr)
		ib_dereg_mr(mr);
	if (!IS_ERR_OR_NULL(pd2))
		ib_dealloc_pd(pd2);
	region_free(r);
	pair_free(p);

	/* LOCAL_INV of a key no MR has. */
	p = pair_new(&o, &c);
	if (p) {
		struct ib_send_wr wr = {};
		struct xc *x;
		int ret;

		x = xc_get();
		wr.opcode = IB_WR_LOCAL_INV;
		wr.wr_cqe = &x->cqe;
		wr.send_flags = IB_SEND_SIGNALED;
		wr.ex.invalidate_rkey = 0x7fff1200;
		ret = post_send1(p->a, &wr);
		if (ret)
			EXPECT(&c, ret == -EINVAL, "post LOCAL_INV: %d", ret);
		else
			expect_wc_error(&c, p, x, "LOCAL_INV of an unknown key");
	}
	report(&c, "bad/local-inv-unknown-key");
	pair_free(p);

	/* Posting more SGEs than the QP takes: refused at once, the QP unharmed. */
	p = pair_new(&o, &c);
	if (p) {
		struct kb b = {};
		struct ib_sge *sge = kcalloc(40, sizeof(*sge), GFP_KERNEL);
		struct ib_send_wr wr = {};
		struct ib_recv_wr rwr = {};
		const struct ib_send_wr *bad = NULL;
		const struct ib_recv_wr *rbad = NULL;
		struct ib_qp_init_attr ia = {};
		struct ib_qp_attr qa;
		struct xc *xr;
		int ret, i;

		ret = ib_query_qp(p->a, &qa, IB_QP_CAP, &ia);
		if (EXPECT(&c, sge && !kb_alloc(&b, 64), "no memory") &&
		    EXPECT(&c, !ret, "ib_query_qp: %d", ret) &&
		    EXPECT(&c, ia.cap.max_send_sge < 40 && ia.cap.max_recv_sge < 40,
			   "the QP took %u send, %u receive SGEs", ia.cap.max_send_sge,
			   ia.cap.max_recv_sge)) {
			for (i = 0; i < 40; i++)
				sge[i] = (struct ib_sge){ .addr = b.dma, .length = 1,
							  .lkey = p->pd->local_dma_lkey };
			wr.opcode = IB_WR_SEND;
			wr.sg_list = sge;
			wr.num_sge = ia.cap.max_send_sge + 1;
			wr.send_flags = IB_SEND_SIGNALED;
			ret = ib_post_send(p->a, &wr, &bad);
			EXPECT(&c, ret && bad == &wr, "post_send with %d SGEs: %d",
			       wr.num_sge, ret);
			report(&c, "bad/post-send-too-many-sge");
			rwr.sg_list = sge;
			rwr.num_sge = ia.cap.max_recv_sge + 1;
			ret = ib_post_recv(p->b, &rwr, &rbad);
			EXPECT(&c, ret && rbad == &rwr, "post_recv with %d SGEs: %d",
			       rwr.num_sge, ret);
			report(&c, "bad/post-recv-too-many-sge");
			/* The pair still carries a SEND. */
			sge[0].length = 8;
			sge[1] = (struct ib_sge){ .addr = b.dma + 32, .length = 32,
						  .lkey = p->pd->local_dma_lkey };
			if (send_recv(&c, p, sge, 1, sge + 1, 1, IB_WR_SEND, 0, 0, &xr))
				EXPECT(&c, xr->wc.byte_len == 8, "byte_len %u", xr->wc.byte_len);
			report(&c, "bad/pair-works-after");
		}
		if (b.p)
			kb_free(&b);
		kfree(sge);
	}
	if (c.failed) {
		report(&c, "bad/post-send-too-many-sge");
		skip_all("bad/",
			 (const char *const[]){ "post-recv-too-many-sge", "pair-works-after" },
			 2, "no pair");
	}
	pair_free(p);

	/* A QP in RESET takes no send. */
	{
		struct ib_cq *cq = ib_alloc_cq(K.ibdev, NULL, 16, 0, IB_POLL_SOFTIRQ);
		struct ib_qp_init_attr ia = {};
		struct ib_qp *qp = NULL;

		if (!IS_ERR(cq)) {
			ia.send_cq = cq;
			ia.recv_cq = cq;
			ia.cap.max_send_wr = 4;
			ia.cap.max_recv_wr = 4;
			ia.cap.max_send_sge = 1;
			ia.cap.max_recv_sge = 1;
			ia.sq_sig_type = IB_SIGNAL_REQ_WR;
			ia.qp_type = IB_QPT_RC;
			qp = ib_create_qp(K.pd, &ia);
			if (IS_ERR(qp)) {
				EXPECT(&c, 0, "ib_create_qp: %ld", PTR_ERR(qp));
				qp = NULL;
			} else {
				struct ib_send_wr wr = { .opcode = IB_WR_SEND };
				struct xc *x;

				x = xc_get();
				wr.wr_cqe = &x->cqe;
				EXPECT(&c, ib_post_send(qp, &wr, NULL),
				       "post_send on a RESET QP succeeded");
				ib_destroy_qp(qp);
				/* Nothing may complete for it. */
				msleep(20);
				EXPECT(&c, !atomic_read(&x->n), "the refused WR completed");
			}
			ib_free_cq(cq);
		} else {
			EXPECT(&c, 0, "ib_alloc_cq: %ld", PTR_ERR(cq));
		}
	}
	report(&c, "bad/post-send-reset-qp");

	/*
	 * A state past IB_QPS_ERR from a kernel consumer (ib_modify_qp checks
	 * none; uverbs does): refused with EINVAL. ib_core's transition table
	 * is indexed with both states unchecked, and from a QP in ERR the
	 * state 7 read one entry past its end (KASAN: global-out-of-bounds).
	 * The same for a current state past ERR. Not run on C rxe, whose
	 * rxe_qp_chk_attr reads the table so (KASAN would stop the run).
	 */
	if (strncmp(dev, "rrxe", 4)) {
		ck_skip(&c, "C rxe passes the states to ib_modify_qp_is_ok unchecked");
	} else {
		struct ib_cq *cq = ib_alloc_cq(K.ibdev, NULL, 16, 0, IB_POLL_SOFTIRQ);
		struct ib_qp_init_attr ia = {};
		struct ib_qp_attr qa = {};
		struct ib_qp *qp = NULL;
		int ret;

		if (!IS_ERR(cq)) {
			ia.send_cq = cq;
			ia.recv_cq = cq;
			ia.cap.max_send_wr = 4;
			ia.cap.max_recv_wr = 4;
			ia.cap.max_send_sge = 1;
			ia.cap.max_recv_sge = 1;
			ia.sq_sig_type = IB_SIGNAL_REQ_WR;
			ia.qp_type = IB_QPT_RC;
			qp = ib_create_qp(K.pd, &ia);
			if (IS_ERR(qp)) {
				EXPECT(&c, 0, "ib_create_qp: %ld", PTR_ERR(qp));
			} else {
				qa.qp_state = IB_QPS_INIT;
				qa.port_num = K.port;
				ret = ib_modify_qp(qp, &qa, IB_QP_STATE | IB_QP_PKEY_INDEX |
						   IB_QP_PORT | IB_QP_ACCESS_FLAGS);
				EXPECT(&c, !ret, "to INIT: %d", ret);
				qa.qp_state = IB_QPS_ERR;
				ret = ib_modify_qp(qp, &qa, IB_QP_STATE);
				EXPECT(&c, !ret, "to ERR: %d", ret);
				qa.qp_state = IB_QPS_ERR + 1;
				ret = ib_modify_qp(qp, &qa, IB_QP_STATE);
				EXPECT(&c, ret == -EINVAL, "to state %d: %d, want -EINVAL",
				       IB_QPS_ERR + 1, ret);
				qa.qp_state = IB_QPS_ERR;
				qa.cur_qp_state = IB_QPS_ERR + 1;
				ret = ib_modify_qp(qp, &qa, IB_QP_STATE | IB_QP_CUR_STATE);
				EXPECT(&c, ret == -EINVAL,
				       "from current state %d: %d, want -EINVAL",
				       IB_QPS_ERR + 1, ret);
				ib_destroy_qp(qp);
			}
			ib_free_cq(cq);
		} else {
			EXPECT(&c, 0, "ib_alloc_cq: %ld", PTR_ERR(cq));
		}
	}
	report(&c, "bad/modify-qp-state-out-of-range");
}

/* ------------------------------------------------------------------ */
/* UD on a VLAN device's GID                                           */

#define VLAN_QKEY 0x11111111
#define VLAN_LEN 64

/*
 * The first RoCEv2 GID of the port that is IPv4-mapped (v4) or not, whose
 * net device is a VLAN device (vlan 1), is not (0), or either (-1), with
 * its VLAN ID (0xffff for none) and MAC; held.
 */
static const struct ib_gid_attr *roce_gid(bool v4, int vlan, u16 *vid, u8 *mac)
{
	int i;

	for (i = 0; i < K.ibdev->port_data[K.port].immutable.gid_tbl_len; i++) {
		const struct ib_gid_attr *a = rdma_get_gid_attr(K.ibdev, K.port, i);

		if (IS_ERR(a))
			continue;
		if (a->gid_type == IB_GID_TYPE_ROCE_UDP_ENCAP &&
		    ipv6_addr_v4mapped((const struct in6_addr *)a->gid.raw) == v4 &&
		    !rdma_read_gid_l2_fields(a, vid, mac) &&
		    (vlan < 0 || (*vid < 0xfff) == vlan))
			return a;
		rdma_put_gid_attr(a);
	}
	return NULL;
}

static const struct ib_gid_attr *v4_gid(int vlan, u16 *vid, u8 *mac)
{
	return roce_gid(true, vlan, vid, mac);
}

/*
 * A UD QP sends one message to itself through GID entry `g` (loopback:
 * the destination MAC is the device's own) and receives it; the receive's
 * completion in *rwc.
 */
static bool ud_self(struct ck *c, const struct ib_gid_attr *g, const u8 *mac, struct ib_wc *rwc)
{
	struct ib_qp_init_attr init = {};
	struct ib_qp_attr qa = {};
	struct rdma_ah_attr aa = {};
	struct ib_sge rsge, ssge;
	struct ib_recv_wr rwr = {};
	struct ib_ud_wr swr = {};
	struct ib_wc wc[2];
	struct ib_qp *qp = NULL;
	struct ib_ah *ah = NULL;
	struct ib_cq *cq;
	u8 *buf = NULL;
	u64 dma = 0;
	size_t len = sizeof(struct ib_grh) + VLAN_LEN;
	int got = 0, sends = 0, n;
	unsigned long end;
	bool ok = false;

	cq = ib_alloc_cq(K.ibdev, NULL, 4, 0, IB_POLL_DIRECT);
	if (!EXPECT(c, !IS_ERR(cq), "ib_alloc_cq: %ld", PTR_ERR(cq)))
		return false;
	init.qp_type = IB_QPT_UD;
	init.send_cq = cq;
	init.recv_cq = cq;
	init.sq_sig_type = IB_SIGNAL_ALL_WR;
	init.cap.max_send_wr = 2;
	init.cap.max_recv_wr = 2;
	init.cap.max_send_sge = 1;
	init.cap.max_recv_sge = 1;
	qp = ib_create_qp(K.pd, &init);
	if (!EXPECT(c, !IS_ERR(qp), "ib_create_qp(UD): %ld", PTR_ERR(qp))) {
		qp = NULL;
		goto out;
	}
	qa.qp_state = IB_QPS_INIT;
	qa.pkey_index = 0;
	qa.port_num = K.port;
	qa.qkey = VLAN_QKEY;
	if (!EXPECT(c, !ib_modify_qp(qp, &qa, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT |
				       IB_QP_QKEY), "UD QP to INIT"))
		goto out;
	qa.qp_state = IB_QPS_RTR;
	if (!EXPECT(c, !ib_modify_qp(qp, &qa, IB_QP_STATE), "UD QP to RTR"))
		goto out;
	qa.qp_state = IB_QPS_RTS;
	qa.sq_psn = 1;
	if (!EXPECT(c, !ib_modify_qp(qp, &qa, IB_QP_STATE | IB_QP_SQ_PSN), "UD QP to RTS"))
		goto out;
	aa.type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(&aa, K.port);
	rdma_ah_set_grh(&aa, (union ib_gid *)&g->gid, 0, g->index, 64, 0);
	memcpy(aa.roce.dmac, mac, ETH_ALEN);
	ah = rdma_create_ah(K.pd, &aa, RDMA_CREATE_AH_SLEEPABLE);
	if (!EXPECT(c, !IS_ERR(ah), "rdma_create_ah: %ld", PTR_ERR(ah))) {
		ah = NULL;
		goto out;
	}
	buf = kzalloc(2 * len, GFP_KERNEL);
	if (!EXPECT(c, buf, "no memory"))
		goto out;
	dma = ib_dma_map_single(K.ibdev, buf, 2 * len, DMA_BIDIRECTIONAL);
	memset(buf + len, 0x5a, VLAN_LEN);
	rsge = (struct ib_sge){ .addr = dma, .length = len, .lkey = K.pd->local_dma_lkey };
	rwr.wr_id = 1;
	rwr.sg_list = &rsge;
	rwr.num_sge = 1;
	if (!EXPECT(c, !ib_post_recv(qp, &rwr, NULL), "ib_post_recv"))
		goto out;
	ssge = (struct ib_sge){ .addr = dma + len, .length = VLAN_LEN,
				.lkey = K.pd->local_dma_lkey };
	swr.wr.wr_id = 2;
	swr.wr.opcode = IB_WR_SEND;
	swr.wr.send_flags = IB_SEND_SIGNALED;
	swr.wr.sg_list = &ssge;
	swr.wr.num_sge = 1;
	swr.ah = ah;
	swr.remote_qpn = qp->qp_num;
	swr.remote_qkey = VLAN_QKEY;
	if (!EXPECT(c, !ib_post_send(qp, &swr.wr, NULL), "ib_post_send"))
		goto out;
	end = jiffies + msecs_to_jiffies(WAIT_MS);
	while (got + sends < 2 && time_before(jiffies, end)) {
		n = ib_poll_cq(cq, 2, wc);
		while (n-- > 0) {
			if (wc[n].wr_id == 1) {
				*rwc = wc[n];
				got++;
			} else {
				EXPECT(c, wc[n].status == IB_WC_SUCCESS,
				       "send completed with status %d", wc[n].status);
				sends++;
			}
		}
		if (got + sends < 2)
			usleep_range(1000, 2000);
	}
	ok = EXPECT(c, got == 1 && sends == 1, "%d receive and %d send completions in %d ms", got,
		    sends, WAIT_MS) &&
	     EXPECT(c, rwc->status == IB_WC_SUCCESS, "receive completed with status %d",
		    rwc->status) &&
	     EXPECT(c, rwc->byte_len == len, "receive byte_len %u, want %zu", rwc->byte_len, len) &&
	     EXPECT(c, buf[sizeof(struct ib_grh)] == 0x5a && buf[len - 1] == 0x5a,
		    "the message did not arrive");
out:
	/* (ib_destroy_qp flushes the posted receive if nothing came.) */
	if (qp)
		ib_destroy_qp(qp);
	if (ah)
		rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
	if (buf) {
		if (dma)
			ib_dma_unmap_single(K.ibdev, dma, 2 * len, DMA_BIDIRECTIONAL);
		kfree(buf);
	}
	ib_free_cq(cq);
	return ok;
}

/* ------------------------------------------------------------------ */
/* The port's Performance Management Agent (process_mad)               */

/* A RoCEv2 GID of the port that is not IPv4-mapped nor VLAN, with its MAC. */
static const struct ib_gid_attr *v6_gid(u8 *mac)
{
	u16 vid;

	return roce_gid(false, 0, &vid, mac);
}

/* One PMA Get under way: its response, and its send's end. */
struct pma_get {
	struct completion recvd, sent;
	u8 resp[IB_MGMT_MAD_SIZE];
	int send_status;
};

static void pma_send_done(struct ib_mad_agent *agent, struct ib_mad_send_wc *wc)
{
	struct pma_get *g = wc->send_buf->context[0];

	g->send_status = wc->status;
	complete(&g->sent);
}

static void pma_recv(struct ib_mad_agent *agent, struct ib_mad_send_buf *send_buf,
		     struct ib_mad_recv_wc *wc)
{
	struct pma_get *g = send_buf ? send_buf->context[0] : NULL;

	if (g) {
		memcpy(g->resp, wc->recv_buf.mad, IB_MGMT_MAD_SIZE);
		complete(&g->recvd);
	}
	ib_free_recv_mad(wc);
}

/*
 * Sends a PMA Get of `attr` (port select 1) through the port's GSI QP to
 * the port itself (its own GID, QP1) and waits for the response, into
 * g->resp. No retry: one Get on the wire (the counters' deltas count it).
 */
static bool pma_get(struct ck *c, struct ib_mad_agent *agent, struct ib_ah *ah, __be16 attr,
		    struct pma_get *g)
{
	static u32 tid;
	struct ib_mad_send_buf *msg;
	struct ib_pma_mad *m;
	bool ok;

	init_completion(&g->recvd);
	init_completion(&g->sent);
	memset(g->resp, 0, sizeof(g->resp));
	msg = ib_create_send_mad(agent, 1, 0, 0, IB_MGMT_MAD_HDR, IB_MGMT_MAD_DATA, GFP_KERNEL,
				 IB_MGMT_BASE_VERSION);
	if (!EXPECT(c, !IS_ERR(msg), "ib_create_send_mad: %ld", PTR_ERR(msg)))
		return false;
	m = msg->mad;
	m->mad_hdr.base_version = IB_MGMT_BASE_VERSION;
	m->mad_hdr.mgmt_class = IB_MGMT_CLASS_PERF_MGMT;
	m->mad_hdr.class_version = 1;
	m->mad_hdr.method = IB_MGMT_METHOD_GET;
	m->mad_hdr.tid = cpu_to_be64(((u64)agent->hi_tid << 32) | ++tid);
	m->mad_hdr.attr_id = attr;
	m->data[1] = K.port; /* port select */
	msg->ah = ah;
	msg->timeout_ms = WAIT_MS;
	msg->retries = 0;
	msg->context[0] = g;
	if (!EXPECT(c, !ib_post_send_mad(msg, NULL), "ib_post_send_mad")) {
		ib_free_send_mad(msg);
		return false;
	}
	ok = EXPECT(c, wait_for_completion_timeout(&g->recvd, msecs_to_jiffies(WAIT_MS)),
		    "no response to the PMA Get of attribute 0x%04x in %d ms", be16_to_cpu(attr),
		    WAIT_MS);
	/* (The send ends with the response, or with its timeout.) */
	wait_for_completion(&g->sent);
	ib_free_send_mad(msg);
	return ok && EXPECT(c, g->send_status == IB_WC_SUCCESS, "the Get's send ended with %d",
			    g->send_status);
}

/* The response in g is a GetResp of `attr` with `status`. */
static bool pma_resp_ok(struct ck *c, struct pma_get *g, __be16 attr, u16 status)
{
	struct ib_mad_hdr *h = (struct ib_mad_hdr *)g->resp;

	return EXPECT(c, h->mgmt_class == IB_MGMT_CLASS_PERF_MGMT &&
		      h->method == IB_MGMT_METHOD_GET_RESP && h->attr_id == attr,
		      "response class 0x%02x method 0x%02x attribute 0x%04x", h->mgmt_class,
		      h->method, be16_to_cpu(h->attr_id)) &&
	       EXPECT(c, be16_to_cpu(h->status) == status, "status 0x%04x, want 0x%04x",
		      be16_to_cpu(h->status), status);
}

static struct ib_pma_portcounters_ext *pma_ext(struct pma_get *g)
{
	return (struct ib_pma_portcounters_ext *)((struct ib_pma_mad *)g->resp)->data;
}

/*
 * PMA Gets to the port itself, answered by the driver's process_mad:
 * ClassPortInfo offers the extended data and packet counters (not the
 * unicast and multicast ones: IB_PMA_CLASS_CAP_EXT_WIDTH_NOIETF); PortCountersExtended moves
 * by exactly what was sent and received between two Gets (three UD
 * SENDs of 64 bytes to itself, the first Get's response and the second
 * Get: five packets each way, 824 bytes: 3 x 88 and 2 x 280, BTH through
 * ICRC); PortCounters answers within the extended counts; an attribute
 * the agent lacks gets the status "unsupported method/attribute".
 */
static noinline void pma_checks(void)
{
	static const char *const names[] = { "pma/class-port-info", "pma/counters-ext-deltas",
					     "pma/counters", "pma/unsupported-attribute" };
	const struct ib_gid_attr *g6 = NULL;
	u8 mac6[ETH_ALEN];
	struct ib_pma_portcounters_ext a = {}, *b;
	struct ib_pma_portcounters *pc;
	bool have_a = false;
	struct ib_mad_agent *agent = NULL;
	struct rdma_ah_attr aa = {};
	struct ib_ah *ah = NULL;
	struct ib_wc rwc = {};
	struct pma_get *g;
	struct ck c = {};
	int i;

	if (!group_on("pma/"))
		return;
	if (!K.ibdev->ops.process_mad) {
		for (i = 0; i < ARRAY_SIZE(names); i++) {
			EXPECT(&c, 0, "the device has no process_mad: nothing answers a PMA Get");
			report(&c, "%s", names[i]);
		}
		return;
	}
	g = kzalloc(sizeof(*g), GFP_KERNEL);
	agent = ib_register_mad_agent(K.ibdev, K.port, IB_QPT_GSI, NULL, 0, pma_send_done, pma_recv,
				      NULL, 0);
	/*
	 * Through an IPv6 GID: ib_mad matches a response to its request by
	 * the GRH's destination GID, which a RoCEv2 packet over IPv4 does not
	 * carry (its receive buffer holds the IPv4 header there).
	 */
	g6 = v6_gid(mac6);
	aa.type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(&aa, K.port);
	if (g6) {
		rdma_ah_set_grh(&aa, (union ib_gid *)&g6->gid, 0, g6->index, 64, 0);
		memcpy(aa.roce.dmac, mac6, ETH_ALEN);
	}
	if (!IS_ERR(agent) && g6)
		ah = rdma_create_ah(agent->qp->pd, &aa, RDMA_CREATE_AH_SLEEPABLE);
	if (!g || IS_ERR(agent) || IS_ERR_OR_NULL(ah)) {
		for (i = 0; i < ARRAY_SIZE(names); i++) {
			EXPECT(&c, 0, "setup: %s%s %ld %ld", g ? "" : "no memory",
			       g6 ? "" : "no IPv6 RoCEv2 GID", IS_ERR(agent) ? PTR_ERR(agent) : 0,
			       IS_ERR(ah) ? PTR_ERR(ah) : 0);
			report(&c, "%s", names[i]);
		}
		goto out;
	}

	if (pma_get(&c, agent, ah, IB_PMA_CLASS_PORT_INFO, g) &&
	    pma_resp_ok(&c, g, IB_PMA_CLASS_PORT_INFO, 0)) {
		struct ib_class_port_info *cpi = (void *)((struct ib_pma_mad *)g->resp)->data;

		EXPECT(&c, cpi->capability_mask == IB_PMA_CLASS_CAP_EXT_WIDTH_NOIETF,
		       "capability mask 0x%04x, want IB_PMA_CLASS_CAP_EXT_WIDTH_NOIETF alone",
		       be16_to_cpu(cpi->capability_mask));
	}
	report(&c, "pma/class-port-info");

	if (pma_get(&c, agent, ah, IB_PMA_PORT_COUNTERS_EXT, g) &&
	    pma_resp_ok(&c, g, IB_PMA_PORT_COUNTERS_EXT, 0)) {
		a = *pma_ext(g);
		for (i = 0; i < 3 && !c.failed; i++)
			ud_self(&c, K.sgid, K.mac, &rwc);
		if (!c.failed && pma_get(&c, agent, ah, IB_PMA_PORT_COUNTERS_EXT, g) &&
		    pma_resp_ok(&c, g, IB_PMA_PORT_COUNTERS_EXT, 0)) {
			u64 xp, rp, xd, rd;

			b = pma_ext(g);
			xp = be64_to_cpu(b->port_xmit_packets) - be64_to_cpu(a.port_xmit_packets);
			rp = be64_to_cpu(b->port_rcv_packets) - be64_to_cpu(a.port_rcv_packets);
			xd = be64_to_cpu(b->port_xmit_data) - be64_to_cpu(a.port_xmit_data);
			rd = be64_to_cpu(b->port_rcv_data) - be64_to_cpu(a.port_rcv_data);
			EXPECT(&c, b->port_select == K.port, "port select %u", b->port_select);
			EXPECT(&c, xp == 5 && rp == 5,
			       "packets sent %llu, received %llu between the Gets, want 5 and 5",
			       xp, rp);
			EXPECT(&c, xd == 824 / 4 && rd == 824 / 4,
			       "4-byte words sent %llu, received %llu between the Gets, want %d",
			       xd, rd, 824 / 4);
			a = *b;
			have_a = true;
		}
	}
	report(&c, "pma/counters-ext-deltas");

	if (EXPECT(&c, have_a, "no extended counts to compare with (see counters-ext-deltas)") &&
	    pma_get(&c, agent, ah, IB_PMA_PORT_COUNTERS, g) &&
	    pma_resp_ok(&c, g, IB_PMA_PORT_COUNTERS, 0)) {
		u32 xp, rp, xd;
		u64 exp, erp, exd;

		pc = (struct ib_pma_portcounters *)((struct ib_pma_mad *)g->resp)->data;
		xp = be32_to_cpu(pc->port_xmit_packets);
		rp = be32_to_cpu(pc->port_rcv_packets);
		xd = be32_to_cpu(pc->port_xmit_data);
		exp = be64_to_cpu(a.port_xmit_packets);
		erp = be64_to_cpu(a.port_rcv_packets);
		exd = be64_to_cpu(a.port_xmit_data);
		/* Since the last extended Get: its response, and this Get. */
		EXPECT(&c, xp == exp + 2 && rp == erp + 2,
		       "PortCounters packets %u/%u, extended %llu/%llu (+2 each expected)",
		       xp, rp, exp, erp);
		EXPECT(&c, xd == exd + 560 / 4,
		       "PortCounters data %u, extended %llu (+140 words expected)", xd, exd);
	}
	report(&c, "pma/counters");

	if (pma_get(&c, agent, ah, IB_PMA_PORT_SAMPLES_CONTROL, g))
		pma_resp_ok(&c, g, IB_PMA_PORT_SAMPLES_CONTROL,
			    IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB);
	report(&c, "pma/unsupported-attribute");
out:
	if (!IS_ERR_OR_NULL(ah))
		rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
	if (!IS_ERR_OR_NULL(agent))
		ib_unregister_mad_agent(agent);
	if (g6)
		rdma_put_gid_attr(g6);
	kfree(g);
}

/*
 * A UD receive through a VLAN device's GID says so (IB_WC_WITH_VLAN and
 * the VLAN ID, as C rxe reports it: what the kernel's UD consumers read),
 * and one through the port's own GID does not. Needs a VLAN device on the
 * port's net device (kverbs.sh makes one); skipped without.
 */
static noinline void vlan_checks(void)
{
	const struct ib_gid_attr *g;
	struct ck c = {};
	struct ib_wc wc = {};
	u8 mac[ETH_ALEN];
	u16 vid = 0xffff;

	if (!group_on("vlan/"))
		return;
	g = v4_gid(1, &vid, mac);
	if (!g) {
		ck_skip(&c, "no GID of a VLAN device on the port");
	} else {
		if (ud_self(&c, g, mac, &wc)) {
			EXPECT(&c, wc.wc_flags & IB_WC_WITH_VLAN,
			       "wc_flags %#x: no IB_WC_WITH_VLAN", wc.wc_flags);
			EXPECT(&c, wc.vlan_id == vid, "vlan_id %u, want %u", wc.vlan_id, vid);
			EXPECT(&c, wc.wc_flags & IB_WC_GRH, "wc_flags %#x: no IB_WC_GRH",
			       wc.wc_flags);
		}
		rdma_put_gid_attr(g);
	}
	report(&c, "vlan/ud-on-vlan-gid-reports-vlan");

	g = v4_gid(0, &vid, mac);
	if (EXPECT(&c, g, "no IPv4 GID of the port's own net device")) {
		if (ud_self(&c, g, mac, &wc))
			EXPECT(&c, !(wc.wc_flags & IB_WC_WITH_VLAN), "wc_flags %#x, vlan_id %u",
			       wc.wc_flags, wc.vlan_id);
		rdma_put_gid_attr(g);
	}
	report(&c, "vlan/ud-on-plain-gid-reports-no-vlan");
}

/* ------------------------------------------------------------------ */
/* A user-space peer (peer=1)                                          */

/*
 * With peer=1 the module runs no check at load. It sets up a kernel RC QP
 * and a fast-registration MR over two pages, open to remote write, and
 * waits for a user QP of the same device (tests/verbs/kpeer_write.c):
 *   peer   read:  "QPN RKEY IOVA LEN SEED" (the kernel QP, the MR, the
 *                 pattern seed the user writes with: pat(SEED, i));
 *          write: "QPN": the kernel QP connects to that user QP (PSN 0);
 *   check  write: anything: checks the MR's bytes, result in "results"
 *                 as peer/user-write-landed;
 * all in /sys/kernel/debug/rrxe_kverbs/. The MR is mapped (ib_map_mr_sg)
 * in softirq context, from a timer, as a kernel consumer may map one in
 * its completion handler: lockdep then knows the driver's MR lock as one
 * taken in softirq. A user QP's WRITE of 1 KiB packets into the MR goes
 * without a copy, and the responder copies it into the MR holding that
 * lock (rrxe's Region::walk) and the sender's zero-copy gate: the gate
 * must be safe to take there (no lockdep report in the kernel log).
 */
static bool peer;
module_param(peer, bool, 0444);
MODULE_PARM_DESC(peer, "set up a kernel QP and MR for a user-space peer instead of the checks");

#define PEER_LEN (2 * PAGE_SIZE)

static struct {
	struct pair *p;
	struct ib_qp *qp;
	struct region *r;
	struct ib_mr *mr;
	u32 seed;
	struct timer_list timer;
	struct completion mapped;
	bool in_softirq;
	int map_n;
	bool connected;
	struct mutex lock; /* connected, the results buffer */
} P;

static void peer_map(struct timer_list *t)
{
	P.in_softirq = in_serving_softirq();
	P.map_n = ib_map_mr_sg(P.mr, P.r->sgt.sgl, P.r->mapped, NULL, PAGE_SIZE);
	complete(&P.mapped);
}

static noinline void peer_setup(void)
{
	struct ck c = {};
	struct popts o;

	mutex_init(&P.lock);
	popts_default(&o);
	P.p = pair_new(&o, &c);
	if (!P.p)
		goto out;
	P.qp = make_qp(P.p, &o, P.p->cq_b, P.p->cq_b, NULL);
	if (!EXPECT(&c, !IS_ERR(P.qp), "ib_create_qp: %ld", PTR_ERR(P.qp))) {
		P.qp = NULL;
		goto out;
	}
	P.r = region_new(R_CONTIG, 0, 2, PEER_LEN);
	if (!EXPECT(&c, P.r, "no memory for the region"))
		goto out;
	region_fill(P.r);
	P.mr = ib_alloc_mr(K.pd, IB_MR_TYPE_MEM_REG, 2);
	if (!EXPECT(&c, !IS_ERR(P.mr), "ib_alloc_mr: %ld", PTR_ERR(P.mr))) {
		P.mr = NULL;
		goto out;
	}
	init_completion(&P.mapped);
	timer_setup(&P.timer, peer_map, 0);
	mod_timer(&P.timer, jiffies + 1);
	wait_for_completion(&P.mapped);
	timer_shutdown_sync(&P.timer);
	if (EXPECT(&c, P.in_softirq, "the timer did not run in softirq") &&
	    EXPECT(&c, P.map_n == P.r->mapped, "ib_map_mr_sg in softirq mapped %d of %d entries",
		   P.map_n, P.r->mapped) &&
	    fr_reg(&c, P.p, P.p->a, P.mr, ACC_ALL))
		P.seed = next_seed();
out:
	report(&c, "peer/setup");
}

static void peer_teardown(void)
{
	if (P.qp)
		ib_destroy_qp(P.qp);
	if (P.mr)
		ib_dereg_mr(P.mr);
	region_free(P.r);
	pair_free(P.p);
}

static ssize_t peer_read(struct file *f, char __user *buf, size_t n, loff_t *pos)
{
	char line[96];
	int len;

	if (!P.seed)
		return -ENODEV;
	len = scnprintf(line, sizeof(line), "%u %u %llu %lu %u\n", P.qp->qp_num, P.mr->rkey,
			P.mr->iova, PEER_LEN, P.seed);
	return simple_read_from_buffer(buf, n, pos, line, len);
}

static ssize_t peer_write(struct file *f, const char __user *buf, size_t n, loff_t *pos)
{
	char why[128] = "";
	u32 qpn;
	int ret;

	if (!P.seed)
		return -ENODEV;
	ret = kstrtou32_from_user(buf, n, 0, &qpn);
	if (ret)
		return ret;
	mutex_lock(&P.lock);
	ret = P.connected ? -EBUSY : qp_to_rts_psn(P.qp, qpn, 0, why, sizeof(why));
	if (!ret)
		P.connected = true;
	else if (*why)
		pr_info("peer: %s\n", why);
	mutex_unlock(&P.lock);
	return ret ? ret : n;
}

static ssize_t check_write(struct file *f, const char __user *buf, size_t n, loff_t *pos)
{
	struct ck c = {};

	if (!P.seed)
		return -ENODEV;
	mutex_lock(&P.lock);
	region_check(&c, P.r, 0, PEER_LEN, P.seed, "the user's WRITE");
	report(&c, "peer/user-write-landed");
	mutex_unlock(&P.lock);
	return n;
}

/*
 * slowfault (peer mode): a file whose shared mapping faults slowly. A
 * fault on it waits until "release" is written to slowfault (or 10 s
 * pass) and then fails (SIGBUS): memory that a user registers for
 * on-demand paging and whose pages never come in time, as a FUSE file
 * whose server does not answer. As a file's fault waiting for I/O, it
 * waits without the mmap lock when the fault may be retried
 * (filemap_fault's lock_folio_maybe_drop_mmap) and then asks for the
 * retry, which fails at once. Reading slowfault gives "ENTERED
 * RELEASED" (faults entered so far, whether released); writing "reset"
 * starts again. tests/verbs/slow_fault.c maps it under an ODP MR.
 */
static struct {
	atomic_t entered;
	bool released;
	wait_queue_head_t wq;
} SF;

static vm_fault_t slowfault_fault(struct vm_fault *vmf)
{
	if (vmf->flags & FAULT_FLAG_TRIED)
		return VM_FAULT_SIGBUS;
	atomic_inc(&SF.entered);
	if (fault_flag_allow_retry_first(vmf->flags) &&
	    !(vmf->flags & FAULT_FLAG_RETRY_NOWAIT)) {
		/* The file (and this module) stay while it waits unlocked. */
		struct file *f = get_file(vmf->vma->vm_file);

		release_fault_lock(vmf);
		wait_event_timeout(SF.wq, READ_ONCE(SF.released), 10 * HZ);
		fput(f);
		return VM_FAULT_RETRY;
	}
	wait_event_timeout(SF.wq, READ_ONCE(SF.released), 10 * HZ);
	return VM_FAULT_SIGBUS;
}

static const struct vm_operations_struct slowfault_vm_ops = {
	.fault = slowfault_fault,
};

static int slowfault_mmap(struct file *f, struct vm_area_struct *vma)
{
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_ops = &slowfault_vm_ops;
	return 0;
}

static ssize_t slowfault_read(struct file *f, char __user *buf, size_t n, loff_t *pos)
{
	char line[32];
	int len = scnprintf(line, sizeof(line), "%d %d\n", atomic_read(&SF.entered),
			    READ_ONCE(SF.released));

	return simple_read_from_buffer(buf, n, pos, line, len);
}

static ssize_t slowfault_write(struct file *f, const char __user *buf, size_t n, loff_t *pos)
{
	char cmd[16] = {};

	if (copy_from_user(cmd, buf, min(n, sizeof(cmd) - 1)))
		return -EFAULT;
	if (!strncmp(cmd, "release", 7)) {
		WRITE_ONCE(SF.released, true);
		wake_up_all(&SF.wq);
	} else if (!strncmp(cmd, "reset", 5)) {
		atomic_set(&SF.entered, 0);
		WRITE_ONCE(SF.released, false);
	} else {
		return -EINVAL;
	}
	return n;
}

static const struct file_operations slowfault_fops = {
	.owner = THIS_MODULE,
	.mmap = slowfault_mmap,
	.read = slowfault_read,
	.write = slowfault_write,
	.llseek = default_llseek,
};

static const struct file_operations peer_fops = {
	.owner = THIS_MODULE,
	.read = peer_read,
	.write = peer_write,
	.llseek = default_llseek,
};

static const struct file_operations check_fops = {
	.owner = THIS_MODULE,
	.write = check_write,
	.llseek = default_llseek,
};

/* ------------------------------------------------------------------ */
/* Set-up and the module                                               */

static bool find_gid(struct ck *c)
{
	u16 vid;

	K.sgid = v4_gid(-1, &vid, K.mac);
	return EXPECT(c, K.sgid, "no IPv4 RoCEv2 GID with a MAC on port %u", K.port);
}

static ssize_t results_read(struct file *f, char __user *buf, size_t n, loff_t *pos)
{
	return simple_read_from_buffer(buf, n, pos, res_buf, res_len);
}

static const struct file_operations results_fops = {
	.owner = THIS_MODULE,
	.read = results_read,
	.llseek = default_llseek,
};

static int __init kverbs_init(void)
{
	struct ck c = {};
	struct ib_port_attr pa;
	char line[64];

	res_buf = kvzalloc(RES_CAP, GFP_KERNEL);
	if (!res_buf)
		return -ENOMEM;
	K.task = current;
	K.port = 1;
	K.ibdev = ib_device_get_by_name(dev, RDMA_DRIVER_UNKNOWN);
	if (!K.ibdev) {
		pr_err("no ib device '%s'\n", dev);
		kvfree(res_buf);
		return -ENODEV;
	}
	if (EXPECT(&c, ib_uses_virt_dma(K.ibdev), "not a virtual-DMA device") &&
	    EXPECT(&c, !ib_query_port(K.ibdev, K.port, &pa), "ib_query_port") &&
	    EXPECT(&c, pa.state == IB_PORT_ACTIVE, "port state %d", pa.state) &&
	    EXPECT(&c, rdma_protocol_roce(K.ibdev, K.port), "not RoCE") && find_gid(&c)) {
		K.pd = ib_alloc_pd(K.ibdev, 0);
		if (IS_ERR(K.pd)) {
			EXPECT(&c, 0, "ib_alloc_pd: %ld", PTR_ERR(K.pd));
			K.pd = NULL;
		}
	}
	report(&c, "setup");
	if (K.pd && peer) {
		/* Torn down at unload. */
		peer_setup();
		dbg_dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
		debugfs_create_file("results", 0444, dbg_dir, NULL, &results_fops);
		debugfs_create_file("peer", 0600, dbg_dir, NULL, &peer_fops);
		debugfs_create_file("check", 0200, dbg_dir, NULL, &check_fops);
		init_waitqueue_head(&SF.wq);
		/* (Unsafe: the full proxy has no mmap; the open file pins the module.) */
		debugfs_create_file_unsafe("slowfault", 0600, dbg_dir, NULL, &slowfault_fops);
		return 0;
	}
	if (K.pd) {
		pr_info("%s: max_fast_reg_page_list_len %u, max_send_sge %d, max_sge_rd %d\n",
			dev, K.ibdev->attrs.max_fast_reg_page_list_len,
			K.ibdev->attrs.max_send_sge, K.ibdev->attrs.max_sge_rd);
		frwr_checks();
		inv_checks();
		flow_checks();
		dma_checks();
		send_checks();
		rw_checks();
		drain_checks();
		cq_checks();
		srq_checks();
		ah_checks();
		bad_checks();
		vlan_checks();
		pma_checks();
		ib_dealloc_pd(K.pd);
	}
	if (K.sgid)
		rdma_put_gid_attr(K.sgid);
	if (K.stuck) {
		/* A drain thread still runs module code: never unload. */
		__module_get(THIS_MODULE);
	} else {
		/* Every QP and CQ is gone: no completion can come any more. */
		xc_free_all();
		ib_device_put(K.ibdev);
	}
	scnprintf(line, sizeof(line), "%u %u %u", n_pass, n_fail, n_skip);
	res_line("END", line, NULL);
	dbg_dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	debugfs_create_file("results", 0444, dbg_dir, NULL, &results_fops);
	return 0;
}

static void __exit kverbs_exit(void)
{
	debugfs_remove_recursive(dbg_dir);
	if (peer) {
		WRITE_ONCE(SF.released, true);
		wake_up_all(&SF.wq);
	}
	if (peer && K.pd) {
		peer_teardown();
		ib_dealloc_pd(K.pd);
		rdma_put_gid_attr(K.sgid);
		xc_free_all();
		ib_device_put(K.ibdev);
	}
	kvfree(res_buf);
}

module_init(kverbs_init);
module_exit(kverbs_exit);
MODULE_DESCRIPTION("Kernel-verbs conformance checks for a soft-RoCE device");
MODULE_LICENSE("GPL");
