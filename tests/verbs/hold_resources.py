#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""
Creates one of each control-path object on a device and holds them until it
is killed: PD, CQ, RC QP (own RQ), RC QP on an SRQ, UD QP in RTS, SRQ, MR,
MW (type 1 and type 2), AH. Prints "READY <pid>" once everything exists,
then sleeps. tests/guest/verbs.sh kills it with SIGKILL and checks that the
kernel released every object (rdma resource show, kmemleak).

  hold_resources.py [DEV [GID_INDEX]]
"""
import os
import sys
import time

from pyverbs.addr import AH, AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR, MW
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.srq import SRQ, SrqAttr, SrqInitAttr
import pyverbs.enums as e

import common


def main():
    dev, gid = common.dev_and_gid(sys.argv)
    ctx = Context(name=dev)
    pd = PD(ctx)
    cq = CQ(ctx, 64)
    srq = SRQ(pd, SrqInitAttr(SrqAttr(max_wr=16, max_sge=1)))
    mr = MR(pd, 1 << 16, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE |
            e.IBV_ACCESS_REMOTE_READ | e.IBV_ACCESS_MW_BIND)
    rc = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq,
                           cap=QPCap(max_send_wr=16, max_recv_wr=16)),
            QPAttr(port_num=1))  # left in INIT
    rc_srq = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, srq=srq,
                               cap=QPCap(max_send_wr=16, max_recv_wr=0, max_recv_sge=0)))
    attr = QPAttr(port_num=1)
    attr.qkey = 0x11111111
    ud = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_UD, scq=cq, rcq=cq,
                           cap=QPCap(max_send_wr=16, max_recv_wr=16)), attr)  # RTS
    mw1 = MW(pd, e.IBV_MW_TYPE_1)
    mw2 = MW(pd, e.IBV_MW_TYPE_2)
    gr = GlobalRoute(dgid=ctx.query_gid(1, gid), sgid_index=gid)
    ah = AH(pd, attr=AHAttr(gr=gr, is_global=1, port_num=1))
    held = [ctx, pd, cq, srq, mr, rc, rc_srq, ud, mw1, mw2, ah]
    print(f'READY {os.getpid()} qpns {rc.qp_num} {rc_srq.qp_num} {ud.qp_num} '
          f'mr lkey {mr.lkey:#x} objects {len(held)}', flush=True)
    while True:
        time.sleep(60)


if __name__ == '__main__':
    main()
