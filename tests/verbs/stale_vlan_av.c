// SPDX-License-Identifier: GPL-2.0
/*
 * An address handle that outlives the VLAN device of its source GID.
 *
 *   stale_vlan_av DEVICE GID_INDEX DGID
 *
 * Creates a UD QP and an address handle from GID_INDEX (a GID of a VLAN
 * device on DEVICE's net device) to DGID (an IPv6 address), prints
 * "ready" and waits for a line on stdin. Meanwhile the caller deletes the
 * VLAN device and makes another (another VLAN ID) with the same interface
 * index. Then it posts one UD SEND through the address handle, waits up to
 * 5 s for its completion and prints "status N" (enum ibv_wc_status),
 * "post-failed ERRNO" or "no-completion", then "done".
 *
 * The address handle is the kernel's (librxe passes its number in the
 * WQE), so the driver sends with what it learnt when the handle was made:
 * a packet must not leave through the device that now has the old
 * interface index (tests/guest/twodev.sh watches the far side's counter).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#define QKEY 0x11111111

static void die(const char *what)
{
	printf("error %s: %s\n", what, strerror(errno));
	exit(1);
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_qp_init_attr init = {};
	struct ibv_qp_attr qa = {};
	struct ibv_ah_attr aa = {};
	struct ibv_sge sge;
	struct ibv_send_wr wr = {}, *bad;
	struct ibv_wc wc;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	struct ibv_mr *mr;
	static char buf[256];
	char line[64];
	int i, n, ms;

	if (argc != 4) {
		fprintf(stderr, "usage: %s DEVICE GID_INDEX DGID\n", argv[0]);
		return 2;
	}
	list = ibv_get_device_list(NULL);
	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			ctx = ibv_open_device(list[i]);
	if (!ctx)
		die("open device");
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 4, NULL, NULL, 0) : NULL;
	mr = cq ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!mr)
		die("pd, cq or mr");
	init.qp_type = IBV_QPT_UD;
	init.send_cq = cq;
	init.recv_cq = cq;
	init.cap.max_send_wr = 2;
	init.cap.max_recv_wr = 2;
	init.cap.max_send_sge = 1;
	init.cap.max_recv_sge = 1;
	init.sq_sig_all = 1;
	qp = ibv_create_qp(pd, &init);
	if (!qp)
		die("create qp");
	qa.qp_state = IBV_QPS_INIT;
	qa.port_num = 1;
	qa.qkey = QKEY;
	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		die("qp to init");
	qa.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE))
		die("qp to rtr");
	qa.qp_state = IBV_QPS_RTS;
	qa.sq_psn = 1;
	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_SQ_PSN))
		die("qp to rts");
	aa.is_global = 1;
	aa.port_num = 1;
	aa.grh.sgid_index = atoi(argv[2]);
	aa.grh.hop_limit = 64;
	if (inet_pton(AF_INET6, argv[3], aa.grh.dgid.raw) != 1) {
		errno = EINVAL;
		die("parse DGID");
	}
	ah = ibv_create_ah(pd, &aa);
	if (!ah)
		die("create ah");
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		die("read go");

	sge.addr = (uintptr_t)buf;
	sge.length = 64;
	sge.lkey = mr->lkey;
	wr.wr_id = 7;
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = 0x123;
	wr.wr.ud.remote_qkey = QKEY;
	if (ibv_post_send(qp, &wr, &bad)) {
		printf("post-failed %d\n", errno);
	} else {
		for (ms = 0; ms < 5000; ms++) {
			n = ibv_poll_cq(cq, 1, &wc);
			if (n > 0)
				break;
			usleep(1000);
		}
		if (n > 0)
			printf("status %d\n", wc.status);
		else
			printf("no-completion\n");
	}
	ibv_destroy_ah(ah);
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	printf("done\n");
	return 0;
}
