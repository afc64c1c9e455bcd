/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The C API that rdma_rrxe's abstraction layer (drivers/.../rrxe/rdma/)
 * reaches. bindgen turns this header into rdma/bindings_generated.rs at
 * build time; rdma/bindgen_allowlist picks what is generated.
 */
#ifndef RRXE_BINDINGS_H
#define RRXE_BINDINGS_H

#include <linux/netdevice.h>
#include <linux/if_arp.h>
#include <linux/if_vlan.h>
#include <linux/etherdevice.h>
#include <linux/inetdevice.h>
#include <linux/vmalloc.h>
#include <linux/xarray.h>
#include <linux/completion.h>
#include <linux/crc32.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/capability.h>
#include <net/addrconf.h>
#include <net/udp_tunnel.h>
#include <net/route.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <net/ipv6_stubs.h>
#include <linux/skbuff.h>
#include <linux/workqueue.h>
#include <linux/timer.h>
#include <net/pkt_sched.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_umem_odp.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>
#include <rdma/rdma_netlink.h>
#include <rdma/uverbs_ioctl.h>
#include <uapi/rdma/rdma_user_rxe.h>
#include <uapi/rdma/ib_user_ioctl_verbs.h>

#include <rrxe/rrxe_helpers.h>

#endif /* RRXE_BINDINGS_H */
