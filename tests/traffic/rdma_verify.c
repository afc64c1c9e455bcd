// SPDX-License-Identifier: GPL-2.0
/*
 * rdma_verify: moves a known pattern over one RC QP and checks every byte.
 *
 *   server: rdma_verify [options]
 *   client: rdma_verify [options] SERVER_IPV4
 *
 *   -d DEV     RDMA device (default: the first)
 *   -g IDX     local GID index (default 1)
 *   -s BYTES   chunk size (default 1048576 + 123, not a multiple of any MTU)
 *   -n ROUNDS  rounds (default 32)
 *   -t EXP     local ACK timeout exponent, 4.096 us * 2^EXP (default 14)
 *   -p PORT    TCP port of the exchange (default 18516)
 *   -T SEC     give up after SEC seconds (default 300)
 *
 * The two sides exchange QP number, PSN, GID, rkey and address over TCP,
 * then run ROUNDS rounds; in round k:
 *   1. the client fills its source buffer with pattern 2k, RDMA WRITEs it
 *      into the server's buffer and SENDs an immediate k behind it (RC
 *      executes in order, so the data is in place when the SEND completes);
 *   2. the server checks every byte of its buffer against pattern 2k, fills
 *      it with pattern 2k+1 and SENDs back immediate k, or k | 1 << 31 if
 *      the check failed;
 *   3. the client RDMA READs the server's buffer and checks every byte
 *      against pattern 2k+1.
 * So 2 * BYTES * ROUNDS bytes cross the link and are verified, half in
 * each direction. The pattern of a 64-bit word depends on the round and on
 * its offset, so a lost, duplicated or misplaced packet shows.
 *
 * Output: progress lines, then "verified N bytes in S s" (client) or
 * "checked N bytes in S s" (server). Exit status: 0 if every byte matched,
 * 1 on a mismatch or any error (completion status, verbs call, exchange),
 * 2 on the deadline.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

static double deadline;
static const char *role = "client";

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(int code, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
static void die(int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "rdma_verify %s: ", role);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(code);
}

/* --- the pattern ----------------------------------------------------------- */

static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Word i of pattern p: one multiply per word, depends on p and i. */
static inline uint64_t word(uint64_t base, uint64_t i)
{
	return base ^ (i * 0x9e3779b97f4a7c15ull) ^ (i << 17);
}

static void fill(uint8_t *buf, size_t len, uint64_t p)
{
	uint64_t base = mix(p + 1), w;
	size_t n = len / 8, i;

	for (i = 0; i < n; i++) {
		w = word(base, i);
		memcpy(buf + 8 * i, &w, 8);
	}
	w = word(base, n);
	memcpy(buf + 8 * n, &w, len - 8 * n);
}

/* The offset of the first byte that differs from pattern p, or -1. */
static long check(const uint8_t *buf, size_t len, uint64_t p)
{
	uint64_t base = mix(p + 1), w, got;
	size_t n = len / 8, i;

	for (i = 0; i < n; i++) {
		w = word(base, i);
		memcpy(&got, buf + 8 * i, 8);
		if (got != w)
			for (size_t b = 0; b < 8; b++)
				if (buf[8 * i + b] != ((uint8_t *)&w)[b])
					return 8 * i + b;
	}
	w = word(base, n);
	for (size_t b = 0; b < len - 8 * n; b++)
		if (buf[8 * n + b] != ((uint8_t *)&w)[b])
			return 8 * n + b;
	return -1;
}

/* --- verbs ---------------------------------------------------------------------- */

struct dest {
	uint32_t qpn, psn, rkey;
	uint64_t addr;
	union ibv_gid gid;
};

struct ctx {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf; /* server: the target; client: source then read target */
	size_t len;
	enum ibv_mtu mtu;
};

static void xchg(int fd, const struct dest *mine, struct dest *peer)
{
	char msg[128], got[128], gid[33];
	size_t off = 0;

	for (int i = 0; i < 16; i++)
		sprintf(gid + 2 * i, "%02x", mine->gid.raw[i]);
	memset(msg, 0, sizeof(msg));
	snprintf(msg, sizeof(msg), "%06x %06x %08x %016" PRIx64 " %s", mine->qpn, mine->psn,
		 mine->rkey, mine->addr, gid);
	if (write(fd, msg, sizeof(msg)) != (ssize_t)sizeof(msg))
		die(1, "exchange: write: %s", strerror(errno));
	while (off < sizeof(got)) {
		ssize_t r = read(fd, got + off, sizeof(got) - off);

		if (r <= 0)
			die(1, "exchange: read: %s", r ? strerror(errno) : "peer closed");
		off += r;
	}
	got[sizeof(got) - 1] = 0;
	if (sscanf(got, "%x %x %x %" SCNx64 " %32s", &peer->qpn, &peer->psn, &peer->rkey,
		   &peer->addr, gid) != 5)
		die(1, "exchange: bad message '%s'", got);
	for (int i = 0; i < 16; i++) {
		unsigned v;

		sscanf(gid + 2 * i, "%2x", &v);
		peer->gid.raw[i] = v;
	}
}

static int tcp_server(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int s = socket(AF_INET, SOCK_STREAM, 0), c, one = 1;

	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) || listen(s, 1))
		die(1, "listen on %d: %s", port, strerror(errno));
	c = accept(s, NULL, NULL);
	if (c < 0)
		die(1, "accept: %s", strerror(errno));
	close(s);
	return c;
}

static int tcp_client(const char *host, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };

	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		die(1, "bad server address %s", host);
	while (now() < deadline) {
		int s = socket(AF_INET, SOCK_STREAM, 0);

		if (!connect(s, (struct sockaddr *)&sa, sizeof(sa)))
			return s;
		close(s);
		usleep(200000);
	}
	die(2, "no server at %s:%d", host, port);
}

static void setup(struct ctx *c, const char *devname, size_t len)
{
	struct ibv_device **list = ibv_get_device_list(NULL), *dev = NULL;
	struct ibv_port_attr port;

	if (!list)
		die(1, "ibv_get_device_list: %s", strerror(errno));
	for (int i = 0; list[i]; i++)
		if (!devname || !strcmp(ibv_get_device_name(list[i]), devname)) {
			dev = list[i];
			break;
		}
	if (!dev)
		die(1, "no device %s", devname ? devname : "at all");
	c->ctx = ibv_open_device(dev);
	if (!c->ctx)
		die(1, "ibv_open_device: %s", strerror(errno));
	if (ibv_query_port(c->ctx, 1, &port))
		die(1, "ibv_query_port failed");
	c->mtu = port.active_mtu;
	c->len = len;
	c->buf = aligned_alloc(4096, (len + 4095) & ~4095ul);
	if (!c->buf)
		die(1, "no memory for %zu bytes", len);
	memset(c->buf, 0, len);
	c->pd = ibv_alloc_pd(c->ctx);
	c->cq = ibv_create_cq(c->ctx, 16, NULL, NULL, 0);
	if (!c->pd || !c->cq)
		die(1, "ibv_alloc_pd/ibv_create_cq: %s", strerror(errno));
	c->mr = ibv_reg_mr(c->pd, c->buf, len, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!c->mr)
		die(1, "ibv_reg_mr(%zu): %s", len, strerror(errno));
	struct ibv_qp_init_attr ia = {
		.send_cq = c->cq, .recv_cq = c->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	c->qp = ibv_create_qp(c->pd, &ia);
	if (!c->qp)
		die(1, "ibv_create_qp: %s", strerror(errno));
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	};
	if (ibv_modify_qp(c->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		die(1, "modify QP to INIT: %s", strerror(errno));
}

static void connect_qp(struct ctx *c, const struct dest *mine, const struct dest *peer,
		       int gidx, int timeout)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = c->mtu, .dest_qp_num = peer->qpn,
		.rq_psn = peer->psn, .max_dest_rd_atomic = 4, .min_rnr_timer = 12,
		.ah_attr = {
			.is_global = 1, .port_num = 1,
			.grh = { .dgid = peer->gid, .sgid_index = gidx, .hop_limit = 64 },
		},
	};

	if (ibv_modify_qp(c->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			  IBV_QP_MIN_RNR_TIMER))
		die(1, "modify QP to RTR: %s", strerror(errno));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = timeout;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = mine->psn;
	a.max_rd_atomic = 4;
	if (ibv_modify_qp(c->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		die(1, "modify QP to RTS: %s", strerror(errno));
}

static void post_recv(struct ctx *c)
{
	struct ibv_recv_wr wr = { .wr_id = 1 }, *bad;

	if (ibv_post_recv(c->qp, &wr, &bad))
		die(1, "ibv_post_recv: %s", strerror(errno));
}

static void post(struct ctx *c, enum ibv_wr_opcode op, uint64_t wr_id, uint32_t imm,
		 const struct dest *peer, int signaled)
{
	struct ibv_sge sge = { .addr = (uintptr_t)c->buf, .length = c->len, .lkey = c->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .opcode = op, .send_flags = signaled ? IBV_SEND_SIGNALED : 0,
		.sg_list = &sge, .num_sge = 1,
	}, *bad;

	if (op == IBV_WR_SEND_WITH_IMM) {
		wr.num_sge = 0;
		wr.imm_data = htonl(imm);
	} else {
		wr.wr.rdma.remote_addr = peer->addr;
		wr.wr.rdma.rkey = peer->rkey;
	}
	if (ibv_post_send(c->qp, &wr, &bad))
		die(1, "ibv_post_send(opcode %d): %s", op, strerror(errno));
}

/* Waits for the completion of wr_id (others must be successful too). */
/* Completions polled while waiting for another wr_id: a receive can
 * complete before the send that asked for it (its ACK came later), and
 * must not be lost. */
static struct ibv_wc early[16];
static int nearly;

static struct ibv_wc wait_wc(struct ctx *c, uint64_t wr_id, int round)
{
	struct ibv_wc wc;

	for (int i = 0; i < nearly; i++) {
		if (early[i].wr_id == wr_id) {
			wc = early[i];
			early[i] = early[--nearly];
			return wc;
		}
	}
	for (;;) {
		int n = ibv_poll_cq(c->cq, 1, &wc);

		if (n < 0)
			die(1, "ibv_poll_cq failed");
		if (n == 0) {
			if (now() > deadline)
				die(2, "deadline passed in round %d waiting for wr_id %" PRIu64, round, wr_id);
			continue;
		}
		if (wc.status != IBV_WC_SUCCESS)
			die(1, "round %d: completion of wr_id %" PRIu64 ": %s (%d), vendor_err %#x",
			    round, wc.wr_id, ibv_wc_status_str(wc.status), wc.status, wc.vendor_err);
		if (wc.wr_id == wr_id)
			return wc;
		if (nearly == (int)(sizeof(early) / sizeof(early[0])))
			die(1, "round %d: too many completions while waiting for wr_id %" PRIu64, round, wr_id);
		early[nearly++] = wc;
	}
}

int main(int argc, char **argv)
{
	const char *devname = NULL, *server = NULL; /* server: the address we connect to, so we are the client */
	size_t len = (1 << 20) + 123;
	int gidx = 1, rounds = 32, timeout = 14, port = 18516, opt, fd;
	double limit = 300, t0;
	struct dest mine = { 0 }, peer = { 0 };
	struct ctx c = { 0 };

	while ((opt = getopt(argc, argv, "d:g:s:n:t:p:T:")) != -1) {
		switch (opt) {
		case 'd': devname = optarg; break;
		case 'g': gidx = atoi(optarg); break;
		case 's': len = strtoul(optarg, NULL, 0); break;
		case 'n': rounds = atoi(optarg); break;
		case 't': timeout = atoi(optarg); break;
		case 'p': port = atoi(optarg); break;
		case 'T': limit = atof(optarg); break;
		default:
			fprintf(stderr, "usage: rdma_verify [-d DEV] [-g GIDX] [-s BYTES] [-n ROUNDS] "
				"[-t TIMEOUT_EXP] [-p PORT] [-T SEC] [SERVER]\n");
			return 1;
		}
	}
	if (optind < argc)
		server = argv[optind];
	else
		role = "server";
	if (len < 8 || rounds < 1)
		die(1, "bad size or rounds");
	deadline = now() + limit;
	setvbuf(stdout, NULL, _IOLBF, 0);

	setup(&c, devname, len);
	if (ibv_query_gid(c.ctx, 1, gidx, &mine.gid))
		die(1, "no GID at index %d", gidx);
	mine.qpn = c.qp->qp_num;
	mine.psn = (getpid() * 2654435761u) & 0xffffff;
	mine.rkey = c.mr->rkey;
	mine.addr = (uintptr_t)c.buf;
	fd = server ? tcp_client(server, port) : tcp_server(port);
	xchg(fd, &mine, &peer);
	post_recv(&c);
	post_recv(&c);
	connect_qp(&c, &mine, &peer, gidx, timeout);
	/* Both QPs are ready to receive before either side sends. */
	{
		char b = 'r';

		if (write(fd, &b, 1) != 1 || read(fd, &b, 1) != 1)
			die(1, "exchange: sync failed");
	}
	printf("# %s: QPN %#x -> %#x, path MTU %d, %d rounds of %zu bytes\n", role, mine.qpn,
	       peer.qpn, 128 << c.mtu, rounds, len);
	t0 = now();

	for (int k = 0; k < rounds; k++) {
		struct ibv_wc wc;
		long bad;

		if (server) {
			fill(c.buf, len, 2 * k);
			post(&c, IBV_WR_RDMA_WRITE, 10, 0, &peer, 0);
			post(&c, IBV_WR_SEND_WITH_IMM, 11, k, &peer, 1);
			wait_wc(&c, 11, k);
			wc = wait_wc(&c, 1, k);
			post_recv(&c);
			if (!(wc.wc_flags & IBV_WC_WITH_IMM) || (ntohl(wc.imm_data) & 0x7fffffff) != (uint32_t)k)
				die(1, "round %d: the server answered with imm %#x", k, ntohl(wc.imm_data));
			if (ntohl(wc.imm_data) & 0x80000000u)
				die(1, "round %d: the server found the written data wrong", k);
			memset(c.buf, 0, len);
			post(&c, IBV_WR_RDMA_READ, 12, 0, &peer, 1);
			wait_wc(&c, 12, k);
			bad = check(c.buf, len, 2 * k + 1);
			if (bad >= 0)
				die(1, "round %d: read data differs at byte %ld of %zu", k, bad, len);
		} else {
			uint32_t imm = k;

			wc = wait_wc(&c, 1, k);
			post_recv(&c);
			if (!(wc.wc_flags & IBV_WC_WITH_IMM) || ntohl(wc.imm_data) != (uint32_t)k)
				die(1, "round %d: the client sent imm %#x", k, ntohl(wc.imm_data));
			bad = check(c.buf, len, 2 * k);
			if (bad >= 0) {
				fprintf(stderr, "rdma_verify server: round %d: written data differs at byte %ld of %zu\n",
					k, bad, len);
				imm |= 0x80000000u;
			}
			fill(c.buf, len, 2 * k + 1);
			post(&c, IBV_WR_SEND_WITH_IMM, 11, imm, &peer, 1);
			wait_wc(&c, 11, k);
			if (bad >= 0)
				return 1;
		}
		if ((k + 1) % 8 == 0 || k + 1 == rounds)
			printf("# %s: round %d done, %.1f s\n", role, k + 1, now() - t0);
	}
	/* The client's last READ completed, so the server's last SEND was acked:
	 * a last byte over TCP tells the server it may tear down. */
	{
		char b = 'd';

		if (server ? write(fd, &b, 1) != 1 : read(fd, &b, 1) != 1)
			die(1, "exchange: final sync failed");
	}
	printf("%s %zu bytes in %.2f s\n", server ? "verified" : "checked",
	       (size_t)rounds * len * (server ? 2 : 1), now() - t0);
	ibv_destroy_qp(c.qp);
	ibv_dereg_mr(c.mr);
	ibv_destroy_cq(c.cq);
	ibv_dealloc_pd(c.pd);
	ibv_close_device(c.ctx);
	return 0;
}
