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

void rrxe_helper_xa_init_alloc_irq(struct xarray *xa)
{
	xa_init_flags(xa, XA_FLAGS_ALLOC | XA_FLAGS_LOCK_IRQ);
}

int rrxe_helper_xa_alloc_cyclic_irq(struct xarray *xa, u32 *id, void *entry,
				    u32 min, u32 max, u32 *next, bool atomic)
{
	return xa_alloc_cyclic_irq(xa, id, entry, XA_LIMIT(min, max), next,
				   atomic ? GFP_ATOMIC : GFP_KERNEL);
}

void *rrxe_helper_xa_erase_irq(struct xarray *xa, unsigned long index)
{
	return xa_erase_irq(xa, index);
}

unsigned long rrxe_helper_xa_lock_irqsave(struct xarray *xa)
{
	unsigned long flags;

	xa_lock_irqsave(xa, flags);
	return flags;
}

void rrxe_helper_xa_unlock_irqrestore(struct xarray *xa, unsigned long flags)
{
	xa_unlock_irqrestore(xa, flags);
}

void rrxe_helper_init_completion(struct completion *c)
{
	init_completion(c);
}

void *rrxe_helper_vmalloc_user(unsigned long size)
{
	return vmalloc_user(size);
}

struct ib_ucontext *rrxe_helper_udata_to_ucontext(struct ib_udata *udata)
{
	return rdma_udata_to_uverbs_attr_bundle(udata)->context;
}

struct ib_udata *rrxe_helper_attrs_to_udata(struct uverbs_attr_bundle *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}

/* for_each_sgtable_page() is a macro: fill `out` with the umem's pages. */
unsigned long rrxe_helper_umem_page_array(struct ib_umem *umem,
					  struct page **out, unsigned long n)
{
	struct sg_page_iter iter;
	unsigned long i = 0;

	for_each_sgtable_page(&umem->sgt_append.sgt, &iter, 0) {
		if (i == n)
			break;
		out[i++] = sg_page_iter_page(&iter);
	}
	return i;
}

void *rrxe_helper_page_address(struct page *page)
{
	return page_address(page);
}

unsigned long rrxe_helper_spin_lock_irqsave(spinlock_t *lock)
{
	unsigned long flags;

	spin_lock_irqsave(lock, flags);
	return flags;
}

void rrxe_helper_spin_unlock_irqrestore(spinlock_t *lock, unsigned long flags)
{
	spin_unlock_irqrestore(lock, flags);
}

u32 rrxe_helper_get_random_u32(void)
{
	return get_random_u32();
}

u64 rrxe_helper_mmap_get_offset(const struct rdma_user_mmap_entry *entry)
{
	return rdma_user_mmap_get_offset(entry);
}
