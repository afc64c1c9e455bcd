/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Out-of-line wrappers for the `static inline` functions and macros that
 * rdma_rrxe's Rust abstraction layer calls. Defined in
 * drivers/infiniband/sw/rrxe/rrxe_helpers.c; every name has the
 * `rrxe_helper_` prefix so it can never clash with a kernel symbol.
 */
#ifndef RRXE_HELPERS_H
#define RRXE_HELPERS_H

#include <linux/types.h>

struct net_device;
struct net;
struct ib_device;
struct notifier_block;

void rrxe_helper_dev_hold(struct net_device *ndev);
void rrxe_helper_dev_put(struct net_device *ndev);
bool rrxe_helper_netif_carrier_ok(const struct net_device *ndev);
bool rrxe_helper_netif_running(const struct net_device *ndev);
bool rrxe_helper_is_vlan_dev(const struct net_device *ndev);
unsigned int rrxe_helper_netdev_mtu(const struct net_device *ndev);
struct net *rrxe_helper_dev_net(const struct net_device *ndev);
struct net_device *rrxe_helper_notifier_info_to_dev(void *info);
bool rrxe_helper_ib_device_try_get(struct ib_device *dev);
const char *rrxe_helper_ib_device_name(const struct ib_device *dev);
unsigned int rrxe_helper_num_possible_cpus(void);

#endif /* RRXE_HELPERS_H */
