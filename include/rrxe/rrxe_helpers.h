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
struct xarray;
struct completion;
struct ib_udata;
struct ib_ucontext;
struct uverbs_attr_bundle;
struct ib_umem;
struct page;
typedef struct spinlock spinlock_t;

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

void rrxe_helper_xa_init_alloc_irq(struct xarray *xa);
int rrxe_helper_xa_alloc_cyclic_irq(struct xarray *xa, u32 *id, void *entry,
				    u32 min, u32 max, u32 *next, bool atomic);
void *rrxe_helper_xa_erase_irq(struct xarray *xa, unsigned long index);
unsigned long rrxe_helper_xa_lock_irqsave(struct xarray *xa);
void rrxe_helper_xa_unlock_irqrestore(struct xarray *xa, unsigned long flags);
void rrxe_helper_init_completion(struct completion *c);
void *rrxe_helper_vmalloc_user(unsigned long size);
struct ib_ucontext *rrxe_helper_udata_to_ucontext(struct ib_udata *udata);
struct ib_udata *rrxe_helper_attrs_to_udata(struct uverbs_attr_bundle *attrs);
unsigned long rrxe_helper_umem_page_array(struct ib_umem *umem,
					  struct page **out, unsigned long n);
void *rrxe_helper_page_address(struct page *page);
unsigned long rrxe_helper_spin_lock_irqsave(spinlock_t *lock);
void rrxe_helper_spin_unlock_irqrestore(spinlock_t *lock, unsigned long flags);
u32 rrxe_helper_get_random_u32(void);
struct rdma_user_mmap_entry;
u64 rrxe_helper_mmap_get_offset(const struct rdma_user_mmap_entry *entry);

#endif /* RRXE_HELPERS_H */
