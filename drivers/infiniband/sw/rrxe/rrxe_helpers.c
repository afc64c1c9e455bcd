// SPDX-License-Identifier: GPL-2.0
/*
 * Out-of-line wrappers for kernel `static inline` functions and macros, so
 * that the Rust abstraction layer (rdma/) can call them. Nothing here holds
 * logic: each helper is one call or one field read.
 */
#include <rrxe/rrxe_bindings.h>

void rrxe_helper_dev_hold(struct net_device *ndev)
{
	dev_hold(ndev);
}

void rrxe_helper_dev_put(struct net_device *ndev)
{
	dev_put(ndev);
}

bool rrxe_helper_netif_carrier_ok(const struct net_device *ndev)
{
	return netif_carrier_ok(ndev);
}

bool rrxe_helper_netif_running(const struct net_device *ndev)
{
	return netif_running(ndev);
}

bool rrxe_helper_is_vlan_dev(const struct net_device *ndev)
{
	return is_vlan_dev(ndev);
}

unsigned int rrxe_helper_netdev_mtu(const struct net_device *ndev)
{
	return READ_ONCE(ndev->mtu);
}

struct net *rrxe_helper_dev_net(const struct net_device *ndev)
{
	return dev_net(ndev);
}

struct net_device *rrxe_helper_notifier_info_to_dev(void *info)
{
	return netdev_notifier_info_to_dev(info);
}

bool rrxe_helper_ib_device_try_get(struct ib_device *dev)
{
	return ib_device_try_get(dev);
}

const char *rrxe_helper_ib_device_name(const struct ib_device *dev)
{
	return dev_name(&dev->dev);
}

unsigned int rrxe_helper_num_possible_cpus(void)
{
	return num_possible_cpus();
}
