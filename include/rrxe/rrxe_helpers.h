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
#include <linux/spinlock_types.h>

struct net_device;
struct net;
struct ib_device;
struct device;
struct notifier_block;
struct xarray;
struct dentry;
struct completion;
struct ib_udata;
struct ib_ucontext;
struct uverbs_attr_bundle;
struct ib_umem;
struct ib_gid_attr;
struct page;

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
struct ib_device *rrxe_helper_device_to_ibdev(struct device *dev);
bool rrxe_helper_netdev_registered(const struct net_device *ndev);
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
bool rrxe_helper_page_is_pmem(struct page *page);
struct scatterlist;
struct scatterlist *rrxe_helper_sg_next(struct scatterlist *sg);
u64 rrxe_helper_sg_dma_address(struct scatterlist *sg);
unsigned int rrxe_helper_sg_dma_len(struct scatterlist *sg);
void rrxe_helper_qp_task_lock_init(spinlock_t *lock);
void rrxe_helper_zc_lock_init(spinlock_t *lock);
unsigned long rrxe_helper_spin_lock_irqsave(spinlock_t *lock);
void rrxe_helper_spin_unlock_irqrestore(spinlock_t *lock, unsigned long flags);
u32 rrxe_helper_get_random_u32(void);
struct rdma_user_mmap_entry;
u64 rrxe_helper_mmap_get_offset(const struct rdma_user_mmap_entry *entry);
struct vm_area_struct;
int rrxe_helper_mmap_vmalloc(struct vm_area_struct *vma, void *buf,
			     struct rdma_user_mmap_entry *entry);
/* Exported by ib_core (ib_uverbs calls it), declared in its core_priv.h. */
struct rdma_umap_priv;
void rdma_umap_priv_init(struct rdma_umap_priv *priv,
			 struct vm_area_struct *vma,
			 struct rdma_user_mmap_entry *entry);

/* sk_buff accessors */
struct sk_buff;
struct sk_buff_head;
struct sock;
struct socket;
struct dst_entry;
struct work_struct;
struct workqueue_struct;
struct timer_list;

struct sk_buff *rrxe_helper_alloc_skb(unsigned int size, unsigned int headroom);
unsigned int rrxe_helper_skb_len(const struct sk_buff *skb);
void rrxe_helper_kfree_skb(struct sk_buff *skb);
void rrxe_helper_consume_skb(struct sk_buff *skb);
int rrxe_helper_skb_linearize(struct sk_buff *skb);
unsigned int rrxe_helper_skb_headlen(const struct sk_buff *skb);
unsigned char *rrxe_helper_skb_data(const struct sk_buff *skb);
unsigned int rrxe_helper_skb_headroom(const struct sk_buff *skb);
int rrxe_helper_skb_tailroom(const struct sk_buff *skb);
unsigned char *rrxe_helper_skb_put(struct sk_buff *skb, unsigned int len);
unsigned char *rrxe_helper_skb_push(struct sk_buff *skb, unsigned int len);
unsigned char *rrxe_helper_skb_pull(struct sk_buff *skb, unsigned int len);
bool rrxe_helper_pskb_may_pull(struct sk_buff *skb, unsigned int len);
void *rrxe_helper_skb_add_chunk(struct sk_buff *skb, unsigned int len);
bool rrxe_helper_dst_can_train(const struct dst_entry *dst, bool ipv6);
void rrxe_helper_skb_set_udp_gso(struct sk_buff *skb, unsigned int iplen,
				 unsigned int mss, unsigned int segs, bool ipv6);
bool rrxe_helper_skb_add_page(struct sk_buff *skb, struct page *page,
			      unsigned int off, unsigned int len);
unsigned char *rrxe_helper_skb_cb(struct sk_buff *skb);
unsigned int rrxe_helper_skb_nr_frags(const struct sk_buff *skb);
int rrxe_helper_skb_copy_bits(const struct sk_buff *skb, unsigned int off,
			      void *to, unsigned int len);
struct page *rrxe_helper_alloc_zeroed_page(void);
void rrxe_helper_put_page(struct page *page);
int rrxe_helper_skb_network_offset(const struct sk_buff *skb);
struct net_device *rrxe_helper_skb_intake_dev(struct sk_buff *skb);
bool rrxe_helper_skb_dst_is_own(const struct sk_buff *skb);
int rrxe_helper_skb_vlan_id(const struct sk_buff *skb);
void rrxe_helper_skb_set_vlan_id(struct sk_buff *skb, u16 vid);
int rrxe_helper_gid_attr_vlan(const struct ib_gid_attr *attr, u16 *vid, u8 *mac);
bool rrxe_helper_dst_is_vlan(const struct dst_entry *dst,
			     const struct net_device *ndev, int ifindex, u16 vid);
void rrxe_helper_skb_set_dev(struct sk_buff *skb, struct net_device *ndev);
u16 rrxe_helper_skb_protocol(const struct sk_buff *skb);
void rrxe_helper_skb_set_protocol(struct sk_buff *skb, u16 proto);
void rrxe_helper_skb_reset_network_header(struct sk_buff *skb);
void rrxe_helper_skb_reset_transport_header(struct sk_buff *skb);
void rrxe_helper_skb_set_owner(struct sk_buff *skb, struct sock *sk,
			       void (*destructor)(struct sk_buff *), void *arg);
void *rrxe_helper_skb_destructor_arg(const struct sk_buff *skb);
struct sock *rrxe_helper_skb_sk(const struct sk_buff *skb);
void rrxe_helper_sock_put(struct sock *sk);
void rrxe_helper_skb_prepare_ipv4(struct sk_buff *skb, struct dst_entry *dst,
				  unsigned int segs);
void rrxe_helper_skb_prepare_local(struct sk_buff *skb, struct net_device *ndev, bool ipv6);
void rrxe_helper_skb_prepare_ipv6(struct sk_buff *skb, struct dst_entry *dst);
int rrxe_helper_ip_local_out(struct sk_buff *skb, struct sock *sk);
int rrxe_helper_ip6_local_out(struct sk_buff *skb, struct sock *sk);
void rrxe_helper_skb_queue_head_init(struct sk_buff_head *q);
void rrxe_helper_skb_queue_purge(struct sk_buff_head *q);
u32 rrxe_helper_skb_queue_len(const struct sk_buff_head *q);
void *rrxe_helper_nl_driver_start(struct sk_buff *msg);
void rrxe_helper_nl_driver_end(struct sk_buff *msg, void *nest, bool ok);
int rrxe_helper_counter_id_alloc(void);
void rrxe_helper_counter_id_free(u32 id);
bool rrxe_helper_trace_send_on(void);
bool rrxe_helper_trace_recv_on(void);
bool rrxe_helper_trace_drop_on(void);
void rrxe_helper_trace_send(const char *dev, u32 qpn, u32 psn,
			    u8 opcode, u32 pkts, u32 len);
void rrxe_helper_trace_recv(const char *dev, u32 qpn, u32 psn,
			    u8 opcode, u32 len);
void rrxe_helper_trace_drop(const char *dev, u32 qpn, u32 psn,
			    u8 opcode, const char *reason);
/* rrxe_helper_skb_queue_add's answers. */
#define RRXE_QUEUED 0
#define RRXE_OWNED 1
#define RRXE_REFUSED 2
#define RRXE_FULL 3
int rrxe_helper_skb_queue_add(struct sk_buff_head *q, bool *closed, bool *detached,
			      struct sk_buff *skb, u32 max, bool head);
void rrxe_helper_skb_queue_detach(struct sk_buff_head *q, bool *detached,
				  bool (*detach)(struct sk_buff *skb));
void rrxe_helper_skb_orphan(struct sk_buff *skb);
void rrxe_helper_skb_queue_close(struct sk_buff_head *q, bool *closed);

/* routing */
struct dst_entry *rrxe_helper_route4(struct net *net, int oif, __be32 saddr,
				     __be32 daddr);
struct dst_entry *rrxe_helper_route6(struct sock *sk, int oif,
				     const void *saddr, const void *daddr, u32 *cookie);
void rrxe_helper_dst_release(struct dst_entry *dst);
bool rrxe_helper_dst_valid(struct dst_entry *dst, u32 cookie);
unsigned int rrxe_helper_ll_reserved(const struct net_device *ndev);
int rrxe_helper_netdev_ifindex(const struct net_device *ndev);

/* UDP tunnel sockets */
int rrxe_helper_udp_tunnel_open(struct net *net, bool ipv6, u16 port,
				int (*encap_rcv)(struct sock *, struct sk_buff *),
				void *user_data, struct socket **sockp);
void *rrxe_helper_sk_user_data(const struct sock *sk);
struct sock *rrxe_helper_socket_sk(const struct socket *sock);

/* work items and timers */
struct workqueue_struct *rrxe_helper_alloc_user_workqueue(u32 uid, bool faults);
struct workqueue_struct *rrxe_helper_alloc_fault_workqueue(void);
struct workqueue_struct *rrxe_helper_alloc_reap_workqueue(void);
void rrxe_helper_queue_reap(struct workqueue_struct *wq, struct work_struct *work);
bool rrxe_helper_module_tryget(void);
void rrxe_helper_module_put(void);
struct workqueue_struct *rrxe_helper_alloc_workqueue(const char *name);
void rrxe_helper_init_work(struct work_struct *work,
			   void (*fn)(struct work_struct *));
void rrxe_helper_init_reap_work(struct work_struct *work,
				void (*fn)(struct work_struct *));
bool rrxe_helper_queue_qp_work(struct workqueue_struct *wq,
			       struct work_struct *work, bool away);
void rrxe_helper_timer_setup(struct timer_list *t,
			     void (*fn)(struct timer_list *));
unsigned long rrxe_helper_jiffies(void);
unsigned long rrxe_helper_usecs_to_jiffies(unsigned int us);
unsigned int rrxe_helper_param_qpn_max(void);
bool rrxe_helper_param_zcopy(void);
unsigned int rrxe_helper_param_train(void);
u32 rrxe_helper_crc32(u32 crc, const u8 *p, size_t len);
/* rrxe_crc.c's fold, called only inside a kernel FPU section. */
u32 rrxe_crc32_clmul_fpu(u32 crc, const u8 *p, size_t len);
u32 rrxe_crc32_clmul_copy_fpu(u32 crc, u8 *dst, const u8 *src, size_t len);
u32 rrxe_helper_crc32_copy(u32 crc, u8 *dst, const u8 *src, size_t len);
u32 rrxe_helper_crc32_shift(u32 crc, size_t len);
bool rrxe_helper_param_icrc_fused(void);
bool rrxe_helper_param_rx_frags(void);
int rrxe_helper_skb_crc32(const struct sk_buff *skb, unsigned int off, unsigned int len, u32 *crc);
int rrxe_helper_crc_select(void);
void rrxe_helper_dbg_dev(struct ib_device *dev, const char *what, int err);
void rrxe_helper_dbg_uc(struct ib_device *dev, u32 index, const char *what, int err);
void rrxe_helper_dbg_pd(struct ib_device *dev, u32 index, const char *what, int err);
void rrxe_helper_dbg_ah(struct ib_device *dev, u32 index, const char *what, int err);
void rrxe_helper_dbg_cq(struct ib_device *dev, u32 index, const char *what, int err);
void rrxe_helper_dbg_qp(struct ib_device *dev, u32 index, const char *what, int err);
void rrxe_helper_dbg_srq(struct ib_device *dev, u32 index, const char *what, int err);
void rrxe_helper_dbg_mw(struct ib_device *dev, u32 index, const char *what, int err);
void rrxe_helper_dbg_mr(struct ib_device *dev, u32 index, const char *what, int err);
struct dentry *rrxe_helper_debugfs_create(void);
void rrxe_helper_debugfs_remove(struct dentry *dir);
struct mm_struct *rrxe_helper_charge_pinned(unsigned long pages);
struct mm_struct *rrxe_helper_budget_get(unsigned long *limit);
int rrxe_helper_charge_pinned_to(struct mm_struct *mm, unsigned long pages,
				 unsigned long limit);
void rrxe_helper_mmdrop(struct mm_struct *mm);
void rrxe_helper_uncharge_pinned(struct mm_struct *mm, unsigned long pages);
bool rrxe_helper_may_exceed_limits(void);
u32 rrxe_helper_current_uid(void);

/* on-demand paging (ODP) user memory */
struct ib_umem_odp;
bool rrxe_helper_odp_enabled(void);
u64 rrxe_helper_user_end(void);
bool rrxe_helper_user_range_ok(u64 addr, u64 len);
struct ib_umem_odp *rrxe_helper_odp_get(struct ib_device *dev, u64 addr,
					u64 len, int access);
void rrxe_helper_odp_release(struct ib_umem_odp *odp);
struct ib_umem_odp *rrxe_helper_odp_get_implicit(struct ib_device *dev,
						 int access);
struct ib_umem_odp *rrxe_helper_odp_alloc_child(struct ib_umem_odp *root,
						u64 addr, u64 len);
int rrxe_helper_odp_map_and_lock(struct ib_umem_odp *odp, u64 addr, u64 len,
				 bool write, bool fault);
void rrxe_helper_odp_lock(struct ib_umem_odp *odp);
void rrxe_helper_odp_unlock(struct ib_umem_odp *odp);
struct page *rrxe_helper_odp_page(struct ib_umem_odp *odp, u64 addr,
				  bool write);
unsigned int rrxe_helper_odp_page_shift(const struct ib_umem_odp *odp);
unsigned int rrxe_helper_hpage_shift(void);
void *rrxe_helper_kmap_local_page(struct page *page);
void rrxe_helper_kunmap_local(void *addr);

#endif /* RRXE_HELPERS_H */
