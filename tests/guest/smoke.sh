#!/bin/bash
uname -a
cat /proc/cmdline
ls /run/rrxe
ip -br link
which rdma ibv_devinfo rping ib_write_bw python3
