// SPDX-License-Identifier: GPL-2.0
/*
 * Out-of-line wrappers for kernel `static inline` functions and macros, so
 * that the Rust abstraction layer (rdma/) can call them. Nothing here holds
 * logic: each helper is one call or one field read.
 */
#include <rrxe/rrxe_bindings.h>
#include <rrxe/rrxe_crc_copy.h>
#include <linux/memcontrol.h>
#include <linux/sched/mm.h>
#include <linux/crc32poly.h>
#include <linux/debugfs.h>
#include <linux/random.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#ifdef CONFIG_X86_64
#include <asm/cpufeature.h>
#include <asm/fpu/api.h>
#include <asm/tsc.h>
#endif
#include <linux/timex.h>
#include <net/ip6_checksum.h>
#include <net/udp.h>
#include <net/netlink.h>
#include <linux/idr.h>

#define CREATE_TRACE_POINTS
#include <rrxe/rrxe_trace.h>

/*
 * The release (the module! macro of 6.12 has no version field): dkms.conf's
 * PACKAGE_VERSION, which tests/kbuild/dkms.sh checks it against.
 */
MODULE_VERSION("0.9.0");

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

/*
 * The device's name: ib_device.name, which a rename rewrites in place
 * (never freed while the device lives, unlike dev_name()'s buffer, which
 * kobject_rename frees at once), always NUL-terminated within its array.
 */
const char *rrxe_helper_ib_device_name(const struct ib_device *dev)
{
	return dev->name;
}

struct ib_device *rrxe_helper_device_to_ibdev(struct device *dev)
{
	return rdma_device_to_ibdev(dev);
}

bool rrxe_helper_netdev_registered(const struct net_device *ndev)
{
	return READ_ONCE(ndev->reg_state) == NETREG_REGISTERED;
}

unsigned int rrxe_helper_num_possible_cpus(void)
{
	return num_possible_cpus();
}

void rrxe_helper_xa_init_alloc_irq(struct xarray *xa)
{
	xa_init_flags(xa, XA_FLAGS_ALLOC | XA_FLAGS_LOCK_IRQ);
}

/*
 * @atomic: the caller may hold a spinlock with interrupts off (a
 * non-sleeping create_ah, from ib_cm under its cm_id's lock), so the
 * interrupt state is saved and restored: xa_alloc_cyclic_irq() would turn
 * interrupts on inside the caller's section. A sleeping caller runs with
 * them on, and the allocation may drop the lock to sleep: the _irq form.
 */
int rrxe_helper_xa_alloc_cyclic_irq(struct xarray *xa, u32 *id, void *entry,
				    u32 min, u32 max, u32 *next, bool atomic)
{
	unsigned long flags;
	int ret;

	if (!atomic)
		return xa_alloc_cyclic_irq(xa, id, entry, XA_LIMIT(min, max),
					   next, GFP_KERNEL);
	/* GFP_ATOMIC: __xa_alloc_cyclic() never drops the lock. */
	xa_lock_irqsave(xa, flags);
	ret = __xa_alloc_cyclic(xa, id, entry, XA_LIMIT(min, max), next,
				GFP_ATOMIC);
	xa_unlock_irqrestore(xa, flags);
	return ret;
}

/*
 * Any context, interrupts on or off (a non-sleeping destroy_ah): the
 * interrupt state is restored, not turned on.
 */
void *rrxe_helper_xa_erase_irq(struct xarray *xa, unsigned long index)
{
	unsigned long flags;
	void *old;

	xa_lock_irqsave(xa, flags);
	old = __xa_erase(xa, index);
	xa_unlock_irqrestore(xa, flags);
	return old;
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

/*
 * Whether the page is persistent memory (a FLUSH with the persistent
 * placement type may only be granted over such pages).
 */
bool rrxe_helper_page_is_pmem(struct page *page)
{
	return region_intersects(page_to_phys(page), PAGE_SIZE, IORESOURCE_MEM,
				 IORES_DESC_PERSISTENT_MEMORY) == REGION_INTERSECTS;
}

struct scatterlist *rrxe_helper_sg_next(struct scatterlist *sg)
{
	return sg_next(sg);
}

u64 rrxe_helper_sg_dma_address(struct scatterlist *sg)
{
	return sg_dma_address(sg);
}

unsigned int rrxe_helper_sg_dma_len(struct scatterlist *sg)
{
	return sg_dma_len(sg);
}

/* One lock class for every QP's task lock. */
void rrxe_helper_qp_task_lock_init(spinlock_t *lock)
{
	spin_lock_init(lock);
}

/*
 * The lock of a QP's gate for packets it sent without a copy (rdma/task.rs,
 * QpTask::zc_read): a class of its own. Taken in process context only (the
 * engines and modify_qp), around a copy of at most one packet, always with
 * interrupts off: the copy may run under a lock that softirq and hardirq
 * contexts take (a fast-registration MR's).
 */
void rrxe_helper_zc_lock_init(spinlock_t *lock)
{
	spin_lock_init(lock);
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

/*
 * ib_core's record of one mapping (struct rdma_umap_priv, private to
 * drivers/infiniband/core/core_priv.h): rdma_umap_priv_init() fills it,
 * ib_uverbs' rdma_umap_ops free it. Only its size is ours to know.
 */
struct rrxe_umap_priv {
	struct vm_area_struct *vma;
	struct list_head list;
	struct rdma_user_mmap_entry *entry;
};

/*
 * Maps a ring's vmalloc buffer into @vma and hands the mapping to ib_core,
 * as rdma_user_mmap_io() does for IO memory: ib_uverbs' rdma_umap_ops
 * (set before the mmap op; no rrxe code stays in a VMA) take a reference
 * on @entry per VMA, copies included, and disassociation drops it. The
 * pages are mapped with references of their own (remap_vmalloc_range), so
 * ib_core cannot zap them (zap_vma_ptes is for PFN maps): a ring stays
 * mapped, as the process's own memory, after its device went, and its
 * pages are freed when the last mapping goes. Mapped as PFNs, a copy that
 * fork or mremap makes while the device goes (ib_core's open then leaves
 * it untracked) would map them after they were freed.
 */
int rrxe_helper_mmap_vmalloc(struct vm_area_struct *vma, void *buf,
			     struct rdma_user_mmap_entry *entry)
{
	struct rrxe_umap_priv *priv;
	int ret;

	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	priv = kzalloc(sizeof(*priv), GFP_KERNEL);
	if (!priv)
		return -ENOMEM;
	ret = remap_vmalloc_range(vma, buf, 0);
	if (ret) {
		kfree(priv);
		return ret;
	}
	rdma_umap_priv_init((struct rdma_umap_priv *)priv, vma, entry);
	return 0;
}

/* --- sk_buff --- */

/*
 * A packet's buffer, its data carved from this CPU's page fragment cache
 * (netdev_alloc_frag, as NICs build their receive buffers) instead of
 * kmalloc: a 4 KiB MTU packet's data would otherwise come from kmalloc-8k,
 * whose slabs of four the allocator makes and frees at packet rate. A
 * fragment that large can be refused (the cache fell back to one page
 * under memory pressure): then alloc_skb, as before.
 */
struct sk_buff *rrxe_helper_alloc_skb(unsigned int size, unsigned int headroom)
{
	unsigned int len = SKB_DATA_ALIGN(size + headroom) +
			   SKB_DATA_ALIGN(sizeof(struct skb_shared_info));
	struct sk_buff *skb = NULL;
	void *data;

	if (len <= PAGE_FRAG_CACHE_MAX_SIZE) {
		data = netdev_alloc_frag(len);
		if (data) {
			skb = build_skb(data, len);
			if (!skb)
				skb_free_frag(data);
		}
	}
	if (!skb)
		skb = alloc_skb(size + headroom, GFP_ATOMIC);
	if (skb)
		skb_reserve(skb, headroom);
	return skb;
}

void rrxe_helper_kfree_skb(struct sk_buff *skb)
{
	kfree_skb(skb);
}

void rrxe_helper_consume_skb(struct sk_buff *skb)
{
	consume_skb(skb);
}

int rrxe_helper_skb_linearize(struct sk_buff *skb)
{
	return skb_linearize(skb);
}

unsigned int rrxe_helper_skb_len(const struct sk_buff *skb)
{
	return skb->len;
}

unsigned int rrxe_helper_skb_headlen(const struct sk_buff *skb)
{
	return skb_headlen(skb);
}

unsigned char *rrxe_helper_skb_data(const struct sk_buff *skb)
{
	return skb->data;
}

unsigned int rrxe_helper_skb_headroom(const struct sk_buff *skb)
{
	return skb_headroom(skb);
}

int rrxe_helper_skb_tailroom(const struct sk_buff *skb)
{
	return skb_tailroom(skb);
}

unsigned char *rrxe_helper_skb_put(struct sk_buff *skb, unsigned int len)
{
	return skb_put(skb, len);
}

unsigned char *rrxe_helper_skb_push(struct sk_buff *skb, unsigned int len)
{
	return skb_push(skb, len);
}

unsigned char *rrxe_helper_skb_pull(struct sk_buff *skb, unsigned int len)
{
	return skb_pull(skb, len);
}

bool rrxe_helper_pskb_may_pull(struct sk_buff *skb, unsigned int len)
{
	return pskb_may_pull(skb, len);
}

/*
 * Attaches @len bytes at @off of @page to @skb as its next page fragment,
 * with a page reference of its own (put when the skb is freed). Only a
 * looped-back packet gets one (Documentation/datapath.md, "Transmit
 * without a copy"): its payload from a user MR's pinned pages.
 * SKBFL_SHARED_FRAG: the page is shared with its user, who may write it
 * meanwhile. false if the skb has no fragment slot left.
 */
bool rrxe_helper_skb_add_page(struct sk_buff *skb, struct page *page,
			      unsigned int off, unsigned int len)
{
	struct skb_shared_info *sh = skb_shinfo(skb);

	if (sh->nr_frags >= MAX_SKB_FRAGS || !len || off >= PAGE_SIZE ||
	    len > PAGE_SIZE - off)
		return false;
	/*
	 * A page of a large folio would hold the whole folio (up to a huge
	 * page) for a few bytes, past the MR's deregistration and the
	 * owner's pinning limit: copied instead.
	 */
	if (folio_test_large(page_folio(page)))
		return false;
	get_page(page);
	skb_add_rx_frag(skb, sh->nr_frags, page, off, len, len);
	sh->flags |= SKBFL_SHARED_FRAG;
	return true;
}

/*
 * Appends len bytes of this CPU's page fragment cache to skb as a page
 * fragment (as NICs build receive buffers) and returns them, or NULL.
 * A train's packets are written there: the stack's segmentation then
 * points each segment at them instead of copying.
 */
void *rrxe_helper_skb_add_chunk(struct sk_buff *skb, unsigned int len)
{
	struct skb_shared_info *sh = skb_shinfo(skb);
	struct page *page;
	void *data;

	if (sh->nr_frags >= MAX_SKB_FRAGS || !len)
		return NULL;
	data = netdev_alloc_frag(len);
	if (!data)
		return NULL;
	page = virt_to_head_page(data);
	/* (The cache hands out len rounded up to a cache line.) */
	skb_add_rx_frag(skb, sh->nr_frags, page, data - page_address(page),
			len, SKB_DATA_ALIGN(len));
	return data;
}

/*
 * Makes skb (IP header at data, iplen bytes, then the UDP header) a UDP
 * GSO train of segments of mss bytes of UDP payload each, the last one
 * possibly shorter, as udp_send_skb does for a UDP_SEGMENT socket: the
 * stack, or a NIC that can, cuts it into one datagram per segment with
 * its own IP and UDP headers and UDP checksum.
 */
void rrxe_helper_skb_set_udp_gso(struct sk_buff *skb, unsigned int iplen,
				 unsigned int mss, unsigned int segs, bool ipv6)
{
	struct skb_shared_info *sh = skb_shinfo(skb);
	unsigned int len = skb->len - iplen;
	struct udphdr *uh;

	skb_reset_network_header(skb);
	skb_set_transport_header(skb, iplen);
	uh = udp_hdr(skb);
	sh->gso_size = mss;
	sh->gso_type = SKB_GSO_UDP_L4;
	sh->gso_segs = segs;
	skb->ip_summed = CHECKSUM_PARTIAL;
	skb->csum_start = skb_transport_header(skb) - skb->head;
	skb->csum_offset = offsetof(struct udphdr, check);
	if (ipv6)
		uh->check = ~udp_v6_check(len, &ipv6_hdr(skb)->saddr,
					  &ipv6_hdr(skb)->daddr, 0);
	else
		uh->check = ~udp_v4_check(len, ip_hdr(skb)->saddr,
					  ip_hdr(skb)->daddr, 0);
}

unsigned char *rrxe_helper_skb_cb(struct sk_buff *skb)
{
	BUILD_BUG_ON(sizeof(skb->cb) < 20);
	return skb->cb;
}

unsigned int rrxe_helper_skb_nr_frags(const struct sk_buff *skb)
{
	return skb_shinfo(skb)->nr_frags;
}

int rrxe_helper_skb_copy_bits(const struct sk_buff *skb, unsigned int off,
			      void *to, unsigned int len)
{
	if (off > INT_MAX || len > INT_MAX)
		return -EFAULT;
	return skb_copy_bits(skb, off, to, len);
}

struct page *rrxe_helper_alloc_zeroed_page(void)
{
	return alloc_page(GFP_KERNEL | __GFP_ZERO);
}

void rrxe_helper_put_page(struct page *page)
{
	put_page(page);
}

int rrxe_helper_skb_network_offset(const struct sk_buff *skb)
{
	return skb_network_offset(skb);
}

/*
 * The net device whose RDMA device takes a received packet: a VLAN
 * device's real device (the RDMA device is on that one, and its GID table
 * holds the VLAN device's addresses), else the device it arrived on.
 * Called at intake (the device is alive); a packet from a VLAN device
 * keeps its VLAN ID in its VLAN tag field, which the receive path reads
 * later without going back to the device (rrxe_helper_skb_vlan_id).
 */
struct net_device *rrxe_helper_skb_intake_dev(struct sk_buff *skb)
{
	struct net_device *d = skb->dev;

	if (d && is_vlan_dev(d)) {
		__vlan_hwaccel_put_tag(skb, htons(ETH_P_8021Q), vlan_dev_vlan_id(d));
		return vlan_dev_real_dev(d);
	}
	/* (The stack cleared it already; an untagged packet carries none.) */
	__vlan_hwaccel_clear_tag(skb);
	return d;
}

/*
 * Whether a received packet (network header set) was sent to an address
 * of the device it arrived on (a VLAN device's own), or to a multicast
 * group: the stack hands port 4791's socket datagrams for any address of
 * the host. (C rxe asks its GID table, rxe_chk_dgid; ib_core fills that
 * from the same addresses.) Softirq, under RCU.
 */
bool rrxe_helper_skb_dst_is_own(const struct sk_buff *skb)
{
	const struct net_device *dev = skb->dev;

	if (!dev)
		return false;
	if (skb->protocol == htons(ETH_P_IP)) {
		__be32 daddr = ip_hdr(skb)->daddr;
		const struct in_device *in_dev;
		const struct in_ifaddr *ifa;
		bool own = false;

		if (ipv4_is_multicast(daddr))
			return true;
		rcu_read_lock();
		in_dev = __in_dev_get_rcu(dev);
		if (in_dev) {
			in_dev_for_each_ifa_rcu(ifa, in_dev) {
				if (ifa->ifa_local == daddr) {
					own = true;
					break;
				}
			}
		}
		rcu_read_unlock();
		return own;
	}
	if (skb->protocol == htons(ETH_P_IPV6)) {
		const struct in6_addr *daddr = &ipv6_hdr(skb)->daddr;

		if (ipv6_addr_is_multicast(daddr))
			return true;
		return ipv6_chk_addr(dev_net(dev), daddr, dev, 0);
	}
	return false;
}

/* The VLAN ID a packet carries in its tag field; -1 if none. */
int rrxe_helper_skb_vlan_id(const struct sk_buff *skb)
{
	if (skb_vlan_tag_present(skb))
		return skb_vlan_tag_get_id(skb);
	return -1;
}

/* Marks a packet that never leaves the host with VLAN ID `vid`. */
void rrxe_helper_skb_set_vlan_id(struct sk_buff *skb, u16 vid)
{
	__vlan_hwaccel_put_tag(skb, htons(ETH_P_8021Q), vid);
}

/*
 * The interface index of a GID entry's net device if that is a VLAN
 * device (a GID of a VLAN upper device of the port's net device), with
 * its VLAN ID in *vid; 0 otherwise; -1 for a VLAN device in another
 * network namespace than its real device (its index means nothing in the
 * namespace the port's routes are looked up in: not usable). The transmit
 * path routes out of that interface, and uses the route only if its
 * device is still that VLAN device (rrxe_helper_dst_is_vlan).
 */
int rrxe_helper_gid_attr_vlan(const struct ib_gid_attr *attr, u16 *vid, u8 *mac)
{
	struct net_device *ndev;
	int ifindex = 0;

	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(attr);
	if (!IS_ERR(ndev) && is_vlan_dev(ndev)) {
		if (net_eq(dev_net(ndev), dev_net(vlan_dev_real_dev(ndev)))) {
			ifindex = ndev->ifindex;
			*vid = vlan_dev_vlan_id(ndev);
			ether_addr_copy(mac, ndev->dev_addr);
		} else {
			ifindex = -1;
		}
	}
	rcu_read_unlock();
	return ifindex;
}

/*
 * Whether a route's output device is the VLAN device an address vector
 * was made for: interface index `ifindex`, VLAN `vid`, on `ndev`. (An
 * interface index is reused once its device is gone: the device now
 * behind it may be another VLAN's, or none on this port.)
 */
bool rrxe_helper_dst_is_vlan(const struct dst_entry *dst,
			     const struct net_device *ndev, int ifindex, u16 vid)
{
	const struct net_device *d = dst->dev;

	return d->ifindex == ifindex && is_vlan_dev(d) &&
	       vlan_dev_vlan_id(d) == vid && vlan_dev_real_dev(d) == ndev;
}

void rrxe_helper_skb_set_dev(struct sk_buff *skb, struct net_device *ndev)
{
	skb->dev = ndev;
}

u16 rrxe_helper_skb_protocol(const struct sk_buff *skb)
{
	return ntohs(skb->protocol);
}

void rrxe_helper_skb_set_protocol(struct sk_buff *skb, u16 proto)
{
	skb->protocol = htons(proto);
}

void rrxe_helper_skb_reset_network_header(struct sk_buff *skb)
{
	skb_reset_network_header(skb);
}

void rrxe_helper_skb_reset_transport_header(struct sk_buff *skb)
{
	skb_reset_transport_header(skb);
}

void rrxe_helper_skb_set_owner(struct sk_buff *skb, struct sock *sk,
			       void (*destructor)(struct sk_buff *), void *arg)
{
	sock_hold(sk);
	skb->sk = sk;
	skb->destructor = destructor;
	skb_shinfo(skb)->destructor_arg = arg;
}

void *rrxe_helper_skb_destructor_arg(const struct sk_buff *skb)
{
	return skb_shinfo(skb)->destructor_arg;
}

struct sock *rrxe_helper_skb_sk(const struct sk_buff *skb)
{
	return skb->sk;
}

void rrxe_helper_sock_put(struct sock *sk)
{
	sock_put(sk);
}

/*
 * The IP header is in place at skb->data: set the IP metadata around it.
 * A train (see rrxe_helper_skb_set_udp_gso) takes one identification per
 * segment: the stack gives segment i the first one plus i.
 */
void rrxe_helper_skb_prepare_ipv4(struct sk_buff *skb, struct dst_entry *dst,
				  unsigned int segs)
{
	skb_scrub_packet(skb, false);
	skb_clear_hash(skb);
	skb_dst_set(skb, dst_clone(dst));
	memset(IPCB(skb), 0, sizeof(*IPCB(skb)));
	skb_reset_network_header(skb);
	__ip_select_ident(dev_net(dst->dev), ip_hdr(skb), segs ?: 1);
}

/*
 * The same for a packet this device receives itself (loopback): no route,
 * the packet never reaches the IP stack; IPv4 still gets its identification
 * (the ICRC covers it).
 */
void rrxe_helper_skb_prepare_local(struct sk_buff *skb, struct net_device *ndev, bool ipv6)
{
	skb_reset_network_header(skb);
	if (!ipv6)
		__ip_select_ident(dev_net(ndev), ip_hdr(skb), 1);
}

void rrxe_helper_skb_prepare_ipv6(struct sk_buff *skb, struct dst_entry *dst)
{
	memset(&(IPCB(skb)->opt), 0, sizeof(IPCB(skb)->opt));
	IPCB(skb)->flags &= ~(IPSKB_XFRM_TUNNEL_SIZE | IPSKB_XFRM_TRANSFORMED |
			      IPSKB_REROUTED);
	skb_dst_set(skb, dst_clone(dst));
	skb_reset_network_header(skb);
}

int rrxe_helper_ip_local_out(struct sk_buff *skb, struct sock *sk)
{
	return ip_local_out(dev_net(skb_dst(skb)->dev), sk, skb);
}

int rrxe_helper_ip6_local_out(struct sk_buff *skb, struct sock *sk)
{
	return ip6_local_out(dev_net(skb_dst(skb)->dev), sk, skb);
}

void rrxe_helper_skb_queue_head_init(struct sk_buff_head *q)
{
	skb_queue_head_init(q);
}

void rrxe_helper_skb_queue_purge(struct sk_buff_head *q)
{
	skb_queue_purge(q);
}

u32 rrxe_helper_skb_queue_len(const struct sk_buff_head *q)
{
	return skb_queue_len_lockless(q);
}

/*
 * Adds skb to a queue that may be closed or detached (see
 * SkbQueue::detach_all), at its tail, or at its head if `head` (a buffer
 * its consumer took and gives back: no bound applies): RRXE_QUEUED, or
 * RRXE_OWNED (not queued: the queue is detached and skb still has an
 * owner's destructor: detach it first), RRXE_REFUSED (not queued: closed)
 * or RRXE_FULL (not queued: the queue holds `max` buffers).
 */
int rrxe_helper_skb_queue_add(struct sk_buff_head *q, bool *closed, bool *detached,
			      struct sk_buff *skb, u32 max, bool head)
{
	unsigned long flags;
	int ret = RRXE_QUEUED;

	spin_lock_irqsave(&q->lock, flags);
	if (READ_ONCE(*closed))
		ret = RRXE_REFUSED;
	else if (READ_ONCE(*detached) && skb->destructor)
		ret = RRXE_OWNED;
	else if (head)
		__skb_queue_head(q, skb);
	else if (skb_queue_len(q) >= max)
		ret = RRXE_FULL;
	else
		__skb_queue_tail(q, skb);
	spin_unlock_irqrestore(&q->lock, flags);
	return ret;
}

/*
 * Marks the queue detached (from then on it takes only buffers without
 * an owner) and passes each buffer it held to `detach` outside its lock,
 * in order: those detach keeps (returns true for) go back at the head, in
 * front of what was queued meanwhile; the others are freed.
 */
void rrxe_helper_skb_queue_detach(struct sk_buff_head *q, bool *detached,
				  bool (*detach)(struct sk_buff *skb))
{
	struct sk_buff_head held, kept;
	struct sk_buff *skb;
	unsigned long flags;

	__skb_queue_head_init(&held);
	__skb_queue_head_init(&kept);
	spin_lock_irqsave(&q->lock, flags);
	WRITE_ONCE(*detached, true);
	skb_queue_splice_init(q, &held);
	spin_unlock_irqrestore(&q->lock, flags);
	while ((skb = __skb_dequeue(&held))) {
		if (detach(skb))
			__skb_queue_tail(&kept, skb);
		else
			kfree_skb(skb);
	}
	spin_lock_irqsave(&q->lock, flags);
	skb_queue_splice(&kept, q);
	spin_unlock_irqrestore(&q->lock, flags);
}

void rrxe_helper_skb_orphan(struct sk_buff *skb)
{
	skb_orphan(skb);
}

/*
 * Closes the queue for good and frees what it held (outside its lock:
 * a buffer's destructor may queue elsewhere).
 */
void rrxe_helper_skb_queue_close(struct sk_buff_head *q, bool *closed)
{
	struct sk_buff_head held;
	unsigned long flags;

	__skb_queue_head_init(&held);
	spin_lock_irqsave(&q->lock, flags);
	WRITE_ONCE(*closed, true);
	skb_queue_splice_init(q, &held);
	spin_unlock_irqrestore(&q->lock, flags);
	__skb_queue_purge(&held);
}

/* --- netlink: a QP's driver details (rdma res show qp -dd) --- */

/*
 * Opens the nest of driver attributes in a resource message; NULL when the
 * message is full.
 */
void *rrxe_helper_nl_driver_start(struct sk_buff *msg)
{
	return nla_nest_start_noflag(msg, RDMA_NLDEV_ATTR_DRIVER);
}

/* Closes the nest (ok) or takes it back out of the message. */
void rrxe_helper_nl_driver_end(struct sk_buff *msg, void *nest, bool ok)
{
	if (ok)
		nla_nest_end(msg, nest);
	else
		nla_nest_cancel(msg, nest);
}

/* --- per-QP counters (rdma statistic qp) --- */

/*
 * ib_core files a counter under the id its driver gives it (restrack's
 * xa_insert at counter->id, also the cntn users name): unique per device,
 * not 0. One allocator for the module's devices is enough.
 */
static DEFINE_IDA(rrxe_counter_ida);

/* A counter id, or a negative errno. */
int rrxe_helper_counter_id_alloc(void)
{
	return ida_alloc_min(&rrxe_counter_ida, 1, GFP_KERNEL);
}

void rrxe_helper_counter_id_free(u32 id)
{
	ida_free(&rrxe_counter_ida, id);
}

/* --- tracepoints (include/rrxe/rrxe_trace.h) --- */

/*
 * Whether the send or receive event is on: the caller reads a packet's
 * fields only then.
 */
bool rrxe_helper_trace_send_on(void)
{
	return trace_rrxe_send_enabled();
}

bool rrxe_helper_trace_recv_on(void)
{
	return trace_rrxe_recv_enabled();
}

bool rrxe_helper_trace_drop_on(void)
{
	return trace_rrxe_drop_enabled();
}

void rrxe_helper_trace_send(const char *dev, u32 qpn, u32 psn,
			    u8 opcode, u32 pkts, u32 len)
{
	trace_rrxe_send(dev, qpn, psn, opcode, pkts, len);
}

void rrxe_helper_trace_recv(const char *dev, u32 qpn, u32 psn,
			    u8 opcode, u32 len)
{
	trace_rrxe_recv(dev, qpn, psn, opcode, 1, len);
}

void rrxe_helper_trace_drop(const char *dev, u32 qpn, u32 psn,
			    u8 opcode, const char *reason)
{
	trace_rrxe_drop(dev, qpn, psn, opcode, reason);
}

/* --- routing --- */

struct dst_entry *rrxe_helper_route4(struct net *net, int oif, __be32 saddr,
				     __be32 daddr)
{
	struct flowi4 fl = {};
	struct rtable *rt;

	fl.flowi4_oif = oif;
	fl.saddr = saddr;
	fl.daddr = daddr;
	fl.flowi4_proto = IPPROTO_UDP;
	rt = ip_route_output_key(net, &fl);
	if (IS_ERR(rt))
		return NULL;
	return &rt->dst;
}

struct dst_entry *rrxe_helper_route6(struct sock *sk, int oif,
				     const void *saddr, const void *daddr,
				     u32 *cookie)
{
#if IS_ENABLED(CONFIG_IPV6)
	struct flowi6 fl6 = {};
	struct dst_entry *dst;

	fl6.flowi6_oif = oif;
	memcpy(&fl6.saddr, saddr, sizeof(fl6.saddr));
	memcpy(&fl6.daddr, daddr, sizeof(fl6.daddr));
	fl6.flowi6_proto = IPPROTO_UDP;
	dst = ipv6_stub->ipv6_dst_lookup_flow(sock_net(sk), sk, &fl6, NULL);
	if (IS_ERR(dst))
		return NULL;
	if (dst->error) {
		dst_release(dst);
		return NULL;
	}
	*cookie = rt6_get_cookie(dst_rt6_info(dst));
	return dst;
#else
	return NULL;
#endif
}

void rrxe_helper_dst_release(struct dst_entry *dst)
{
	dst_release(dst);
}

/*
 * Whether a route kept since its lookup still holds: not obsoleted by a
 * route, address or device change (IPv6 compares the tree's serial number
 * with the lookup's cookie).
 */
bool rrxe_helper_dst_valid(struct dst_entry *dst, u32 cookie)
{
	return dst_check(dst, cookie);
}

/*
 * Whether the route's device takes a train without a pass over its bytes:
 * it gathers page fragments and checksums in hardware (or, as veth, needs
 * no checksum), so a train is cut by the device itself (UDP segmentation
 * offload) or by the stack pointing each segment at the train's pages.
 * Without them the stack would copy and checksum every segment, and each
 * packet would cost more than it saves (the checks TCP makes before it
 * builds large segments: sk_can_gso). Not through IPsec, which takes no
 * UDP GSO (udp_send_skb refuses it on an xfrm route).
 */
bool rrxe_helper_dst_can_train(const struct dst_entry *dst, bool ipv6)
{
	netdev_features_t f = READ_ONCE(dst->dev->features);
	netdev_features_t csum = NETIF_F_HW_CSUM |
				 (ipv6 ? NETIF_F_IPV6_CSUM : NETIF_F_IP_CSUM);

	return !dst_xfrm(dst) && (f & NETIF_F_SG) && (f & csum);
}

unsigned int rrxe_helper_ll_reserved(const struct net_device *ndev)
{
	return LL_RESERVED_SPACE(ndev);
}

int rrxe_helper_netdev_ifindex(const struct net_device *ndev)
{
	return ndev->ifindex;
}

/* --- UDP tunnel sockets --- */

int rrxe_helper_udp_tunnel_open(struct net *net, bool ipv6, u16 port,
				int (*encap_rcv)(struct sock *, struct sk_buff *),
				void *user_data, struct socket **sockp)
{
	struct udp_port_cfg udp_cfg = {};
	struct udp_tunnel_sock_cfg tnl_cfg = {};
	int err;

	if (ipv6) {
		udp_cfg.family = AF_INET6;
		udp_cfg.ipv6_v6only = 1;
	} else {
		udp_cfg.family = AF_INET;
	}
	udp_cfg.local_udp_port = htons(port);
	err = udp_sock_create(net, &udp_cfg, sockp);
	if (err < 0)
		return err;
	/*
	 * Multicast is looped back to the device's own group members by the
	 * driver (net/tx.rs), whether or not the stack joined the group: the
	 * stack must not loop it too. (setup_udp_tunnel_sock clears the IPv4
	 * flag; the IPv6 one is ours to clear.)
	 */
	if (ipv6)
		inet6_clear_bit(MC6_LOOP, (*sockp)->sk);
	tnl_cfg.sk_user_data = user_data;
	tnl_cfg.encap_type = 1;
	tnl_cfg.encap_rcv = encap_rcv;
	setup_udp_tunnel_sock(net, *sockp, &tnl_cfg);
	return 0;
}

void *rrxe_helper_sk_user_data(const struct sock *sk)
{
	return rcu_dereference_sk_user_data(sk);
}

struct sock *rrxe_helper_socket_sk(const struct socket *sock)
{
	return sock->sk;
}

/* --- work items and timers --- */

/*
 * One of the module's two QP workqueues (user QPs', kernel consumers'):
 * unbound, tunable in /sys/devices/virtual/workqueue/@name/ (WQ_SYSFS),
 * at most 8 work items per possible CPU (16 at least) at once. Why each:
 * Documentation/datapath.md, "Contexts and serialisation"; what was
 * measured: Documentation/bench.md, "The workqueue's max_active".
 */
static int rrxe_qp_wq_max_active(void)
{
	return clamp_t(int, 8 * num_possible_cpus(), 16, WQ_MAX_ACTIVE);
}

struct workqueue_struct *rrxe_helper_alloc_workqueue(const char *name)
{
	return alloc_workqueue("%s", WQ_UNBOUND | WQ_MEM_RECLAIM | WQ_SYSFS,
			       rrxe_qp_wq_max_active(), name);
}

/*
 * A workqueue for one user's QPs (`rrxe_u<uid>`), or for the faults on that
 * user's memory that its QPs wait for (`rrxe_f<uid>`, if `faults`):
 * unbound, as many work items at once as the module's user workqueue, not
 * for memory reclaim (user QPs' work never is) and not in sysfs (two per
 * user and device).
 */
struct workqueue_struct *rrxe_helper_alloc_user_workqueue(u32 uid, bool faults)
{
	return alloc_workqueue(faults ? "rrxe_f%u" : "rrxe_u%u", WQ_UNBOUND,
			       rrxe_qp_wq_max_active(), uid);
}

/* The module's workqueue for the faults of QPs without a user's own. */
struct workqueue_struct *rrxe_helper_alloc_fault_workqueue(void)
{
	return alloc_workqueue("rrxe_faults", WQ_UNBOUND, rrxe_qp_wq_max_active());
}

/* The module's workqueue for destroying users' workqueues (task.rs). */
struct workqueue_struct *rrxe_helper_alloc_reap_workqueue(void)
{
	return alloc_workqueue("rrxe_reap", WQ_UNBOUND, 0);
}

/*
 * A reap holds the module (rmmod is refused, "in use", while a user's
 * fault it waits for is under way) until rrxe_helper_module_put(), the
 * last call of its work: module exit drains the reap workqueue, so the
 * work's return after the put still runs in loaded code.
 */
void rrxe_helper_queue_reap(struct workqueue_struct *wq, struct work_struct *work)
{
	__module_get(THIS_MODULE);
	queue_work(wq, work);
}

bool rrxe_helper_module_tryget(void)
{
	return try_module_get(THIS_MODULE);
}

void rrxe_helper_module_put(void)
{
	module_put(THIS_MODULE);
}

void rrxe_helper_init_work(struct work_struct *work,
			   void (*fn)(struct work_struct *))
{
	INIT_WORK(work, fn);
}

/*
 * The same for the work that destroys a user's workqueues (task.rs,
 * reap_fn): a lockdep class of its own, since it flushes workqueues whose
 * works are of the class above.
 */
void rrxe_helper_init_reap_work(struct work_struct *work,
				void (*fn)(struct work_struct *))
{
	INIT_WORK(work, fn);
}

/*
 * Queues a QP's work on the unbound @wq, in this CPU's pod as queue_work()
 * does, unless @away (a user QP) and the caller is not a worker (a
 * doorbell system call, a timer, packet intake): then in the pods of the
 * online CPUs in turn (cpumask_any_distribute), as a workqueue of affinity
 * scope "system" spreads its work where each CPU is its own cache domain
 * (bench.md, "Scaling"). Always this CPU, a worker woken here preempts the
 * task running here (a poster about to post again) while another CPU may
 * idle; always the next CPU, the QPs' work piles up there while the poster's
 * CPU only busy-polls (bench.md, "Issue 17: where the four-QP loss was").
 * A kernel consumer's QP stays local: its poster sleeps until the
 * completion, and waking another CPU only adds to the latency.
 */
bool rrxe_helper_queue_qp_work(struct workqueue_struct *wq,
			       struct work_struct *work, bool away)
{
	int cpu;

	if (!away || (in_task() && (current->flags & PF_KTHREAD)))
		return queue_work(wq, work);
	/*
	 * The distribution's cursor is per CPU: QpTask::schedule calls this
	 * under its lock, interrupts off (asserted). This CPU is online, so
	 * the online mask is not empty.
	 */
	lockdep_assert_irqs_disabled();
	cpu = cpumask_any_distribute(cpu_online_mask);
	return queue_work_on(cpu, wq, work);
}

void rrxe_helper_timer_setup(struct timer_list *t,
			     void (*fn)(struct timer_list *))
{
	timer_setup(t, fn, 0);
}

unsigned long rrxe_helper_jiffies(void)
{
	return jiffies;
}

unsigned long rrxe_helper_usecs_to_jiffies(unsigned int us)
{
	return usecs_to_jiffies(us);
}

/* --- module parameters --- */

/*
 * The Rust module! macro of 6.12 has no parameters: they are declared here
 * and read through the accessors below. What only tests set or read is not
 * a parameter but a file of debugfs (rrxe_helper_debugfs_create, below).
 */

/*
 * The highest QP index a device created from now on gives out (0: the
 * default, 1048576): a small value makes QP numbers come back after a few
 * QPs, for tests of what a stale QP number can reach. Set through debugfs
 * (rdma_rrxe/qpn_max), read when a device is added.
 */
static u32 qpn_max;

unsigned int rrxe_helper_param_qpn_max(void)
{
	return READ_ONCE(qpn_max);
}

static bool zcopy = true;
module_param(zcopy, bool, 0644);
MODULE_PARM_DESC(zcopy,
		 "Send a looped-back RC SEND or RDMA WRITE packet's payload from the user MR's pinned pages, without a copy (1, the default), or copy it into the packet (0). Read per packet.");

bool rrxe_helper_param_zcopy(void)
{
	return READ_ONCE(zcopy);
}

static unsigned int train = 64;
module_param(train, uint, 0644);
MODULE_PARM_DESC(train,
		 "Most RoCE packets of a message sent to the network as one UDP GSO train, which the stack or the NIC segments (64, the default; a train also stops at 64 KiB). 0 or 1: every packet on its own. Read per train.");

unsigned int rrxe_helper_param_train(void)
{
	return READ_ONCE(train);
}

/* --- the ICRC's CRC-32: table or carry-less multiply --- */

/*
 * crc32_le (the kernel's table CRC) or, where the CPU has PCLMULQDQ, the
 * carry-less-multiply fold of rrxe_crc.c inside a kernel FPU section. The
 * `icrc` module parameter picks one at load: "auto" (the default) measures
 * both and keeps the faster (under QEMU's TCG, which emulates PCLMULQDQ by
 * helper calls, the table wins), "table" or "clmul" forces one ("clmul"
 * fails the load on a CPU without it). Reading the parameter gives the one
 * in use.
 */
enum { RRXE_CRC_AUTO, RRXE_CRC_TABLE, RRXE_CRC_CLMUL };
static const char *const rrxe_crc_names[] = { "auto", "table", "clmul" };
static int rrxe_crc_mode;	/* what the parameter asked for */
static bool rrxe_crc_clmul_on;	/* what is used, from rrxe_helper_crc_select() */

/* Below this the FPU section costs more than the fold saves. */
#define RRXE_CLMUL_MIN 256

static int rrxe_crc_param_set(const char *val, const struct kernel_param *kp)
{
	int i = sysfs_match_string(rrxe_crc_names, val);

	if (i < 0)
		return -EINVAL;
	rrxe_crc_mode = i;
	return 0;
}

static int rrxe_crc_param_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%s\n", rrxe_crc_clmul_on ? "clmul" : "table");
}

static const struct kernel_param_ops rrxe_crc_param_ops = {
	.set = rrxe_crc_param_set,
	.get = rrxe_crc_param_get,
};
module_param_cb(icrc, &rrxe_crc_param_ops, NULL, 0444);
MODULE_PARM_DESC(icrc,
		 "The ICRC's CRC-32: auto (the default: the faster of the two, measured at load), table (crc32_le) or clmul (carry-less multiply, x86-64 with PCLMULQDQ). Reads back the one in use.");

/*
 * Spans of traffic folded by the carry-less multiply, per CPU (summed in
 * debugfs's rdma_rrxe/icrc_folds: the tests' proof that it ran; the
 * measurement at load is not counted).
 */
static DEFINE_PER_CPU(unsigned long, rrxe_crc_folds);

static int rrxe_crc_folds_get(void *data, u64 *val)
{
	unsigned long n = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		n += per_cpu(rrxe_crc_folds, cpu);
	*val = n;
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(rrxe_crc_folds_fops, rrxe_crc_folds_get, NULL, "%llu\n");

#ifdef CONFIG_X86_64
static bool rrxe_crc_clmul_usable(void)
{
	return boot_cpu_has(X86_FEATURE_PCLMULQDQ) && boot_cpu_has(X86_FEATURE_XMM2);
}

static bool rrxe_crc_fpu_usable(void)
{
	return irq_fpu_usable();
}

/* The fold, not counted in icrc_folds (the measurement at load). */
static u32 rrxe_crc_clmul_uncounted(u32 crc, const u8 *p, size_t len)
{
	kernel_fpu_begin();
	crc = rrxe_crc32_clmul_fpu(crc, p, len);
	kernel_fpu_end();
	return crc;
}

/* The fold's copy, not counted in icrc_folds (the load-time check). */
static u32 rrxe_crc_clmul_copy_uncounted(u32 crc, u8 *dst, const u8 *src, size_t len)
{
	kernel_fpu_begin();
	crc = rrxe_crc32_clmul_copy_fpu(crc, dst, src, len);
	kernel_fpu_end();
	return crc;
}
#else
static bool rrxe_crc_clmul_usable(void)
{
	return false;
}

static bool rrxe_crc_fpu_usable(void)
{
	return false;
}

static u32 rrxe_crc_clmul_uncounted(u32 crc, const u8 *p, size_t len)
{
	return crc32_le(crc, p, len);
}

static u32 rrxe_crc_clmul_copy_uncounted(u32 crc, u8 *dst, const u8 *src, size_t len)
{
	memcpy(dst, src, len);
	return crc32_le(crc, dst, len);	/* the bytes stored */
}
#endif

/* The fold and its copy, counted in icrc_folds (traffic's). */
static u32 rrxe_crc_clmul(u32 crc, const u8 *p, size_t len)
{
	crc = rrxe_crc_clmul_uncounted(crc, p, len);
	this_cpu_inc(rrxe_crc_folds);
	return crc;
}

static u32 rrxe_crc_clmul_copy(u32 crc, u8 *dst, const u8 *src, size_t len)
{
	crc = rrxe_crc_clmul_copy_uncounted(crc, dst, src, len);
	this_cpu_inc(rrxe_crc_folds);
	return crc;
}

/*
 * Copy and CRC in one pass (datapath.md, "Copy and CRC in one pass"): the
 * wire path's transmit folds a payload into its ICRC as it copies it out
 * of the sender's memory, each byte read once, with the CRC chosen at load
 * (the carry-less multiply's fold that also stores what it loads, or the
 * slice-by-8 tables below), when the `icrc_fused` parameter is on. Off by
 * default: under QEMU's TCG it measured no faster than the copy and
 * crc32_le apart (bench.md, "Copy and CRC in one pass, receive in
 * fragments"); a host with the carry-less multiply in hardware should
 * measure it again.
 */
static bool icrc_fused;
module_param(icrc_fused, bool, 0644);
MODULE_PARM_DESC(icrc_fused,
		 "Copy a wire packet's payload and fold it into the ICRC in one pass (default off: measured no faster under TCG); off: copy, then CRC.");

bool rrxe_helper_param_icrc_fused(void)
{
	return READ_ONCE(icrc_fused);
}

/* Slice-by-8 tables of the copy (filled by rrxe_helper_crc_select). */
static u32 rrxe_crc_copy_tab[8][256] __ro_after_init;

u32 rrxe_helper_crc32_copy(u32 crc, u8 *dst, const u8 *src, size_t len)
{
	if (rrxe_crc_clmul_on && len >= RRXE_CLMUL_MIN && rrxe_crc_fpu_usable())
		return rrxe_crc_clmul_copy(crc, dst, src, len);
	return rrxe_crc32_copy(rrxe_crc_copy_tab, crc, dst, src, len);
}

/*
 * Receive without linearising (datapath.md, "Receive in fragments"): a
 * packet from the network that the NIC handed up in page fragments keeps
 * them if it is an RC SEND or WRITE request (its headers pulled into the
 * linear part, its ICRC computed over the fragments, its payload copied
 * out of them where it lands). The `rx_frags` parameter turns it off:
 * every packet from the network is then made linear, as C rxe does.
 */
static bool rx_frags = true;
module_param(rx_frags, bool, 0644);
MODULE_PARM_DESC(rx_frags,
		 "Take RC SEND and WRITE packets from the network in their page fragments, not made linear (default on).");

bool rrxe_helper_param_rx_frags(void)
{
	return READ_ONCE(rx_frags);
}

static __wsum rrxe_skb_crc_update(const void *mem, int len, __wsum sum)
{
	return (__force __wsum)rrxe_helper_crc32((__force u32)sum, mem, len);
}

/* The CRC of later bytes, begun from 0, put after csum (linearity). */
static __wsum rrxe_skb_crc_combine(__wsum csum, __wsum csum2, int offset, int len)
{
	u32 crc = rrxe_helper_crc32_shift((__force u32)csum, len) ^ (__force u32)csum2;

	return (__force __wsum)crc;
}

static const struct skb_checksum_ops rrxe_skb_crc_ops = {
	.update = rrxe_skb_crc_update,
	.combine = rrxe_skb_crc_combine,
};

/*
 * Continues the ICRC's CRC *crc over the len bytes at off (from data) of
 * skb, linear or in fragments; -EFAULT if they are not all in it.
 */
int rrxe_helper_skb_crc32(const struct sk_buff *skb, unsigned int off, unsigned int len, u32 *crc)
{
	if (off > skb->len || len > skb->len - off || skb->len > INT_MAX ||
	    !skb_frags_readable(skb))
		return -EFAULT;
	*crc = (__force u32)__skb_checksum(skb, off, len, (__force __wsum)*crc, &rrxe_skb_crc_ops);
	return 0;
}

/*
 * a times b modulo the CRC's polynomial, both bit-reflected (bit 31 is
 * x^0).
 */
static u32 rrxe_crc_mulmod(u32 a, u32 b)
{
	u32 p = 0, m;

	for (m = 1u << 31; m; m >>= 1) {
		if (a & m)
			p ^= b;
		b = (b >> 1) ^ (b & 1 ? CRC32_POLY_LE : 0);
	}
	return p;
}

/*
 * x^(2^k) mod P, bit-reflected, k = 0..63 (filled by
 * rrxe_helper_crc_select).
 */
static u32 rrxe_crc_x2n[64] __ro_after_init;

static void rrxe_crc_x2n_fill(void)
{
	int k;

	rrxe_crc_x2n[0] = 1u << 30;	/* x^1 */
	for (k = 1; k < 64; k++)
		rrxe_crc_x2n[k] = rrxe_crc_mulmod(rrxe_crc_x2n[k - 1], rrxe_crc_x2n[k - 1]);
}

/*
 * The CRC state crc continued over len zero bytes: crc times x^(8 len) mod
 * P, what puts a CRC of later bytes, begun from 0, after it. One multiply
 * per bit set in 8 len, by the powers above (one for a 4096-byte payload;
 * crc32_le_shift squares its way up each call, 11 multiplies there).
 */
u32 rrxe_helper_crc32_shift(u32 crc, size_t len)
{
	u64 n = (u64)len << 3;
	int k;

	for (k = 0; n; k++, n >>= 1)
		if (n & 1)
			crc = rrxe_crc_mulmod(rrxe_crc_x2n[k & 63], crc);
	return crc;
}

u32 rrxe_helper_crc32(u32 crc, const u8 *p, size_t len)
{
	if (rrxe_crc_clmul_on && len >= RRXE_CLMUL_MIN && rrxe_crc_fpu_usable())
		return rrxe_crc_clmul(crc, p, len);
	return crc32_le(crc, p, len);
}

/*
 * TSC cycles for `rounds` CRCs of len bytes at p by one of the two (the TSC,
 * not the clock: a guest may run on a jiffies clocksource, too coarse for
 * a few microseconds).
 */
static u64 rrxe_crc_time(bool clmul, const u8 *p, size_t len, int rounds, u32 *crc)
{
	u64 t0, t1;
	int i;

	/* On one CPU: TSCs need not agree between CPUs. */
	preempt_disable();
	t0 = get_cycles();
	for (i = 0; i < rounds; i++)
		*crc = clmul ? rrxe_crc_clmul_uncounted(*crc, p, len) : crc32_le(*crc, p, len);
	t1 = get_cycles();
	preempt_enable();
	return t1 - t0;
}

/* MiB/s of `bytes` in `cycles` TSC cycles (0 if the TSC rate is unknown). */
static u64 rrxe_crc_mibs(u64 bytes, u64 cycles)
{
#ifdef CONFIG_X86_TSC
	if (tsc_khz && cycles)
		return div64_u64(bytes * tsc_khz * 1000ull, cycles << 20);
#endif
	return 0;
}

/*
 * The copies that fold, checked once at load against crc32_le and memcmp
 * on random bytes at an odd length and offsets (the host tests check the
 * same code; this checks the kernel's build of it): -EIO if one
 * disagrees, -ENOMEM.
 */
static int rrxe_crc_copy_check(void)
{
	const size_t len = 4093;
	u32 want, got;
	u8 *src, *dst;
	int r = 0;

	src = kmalloc(2 * (len + 16), GFP_KERNEL);
	if (!src)
		return -ENOMEM;
	dst = src + len + 16;
	get_random_bytes(src, len + 16);
	want = crc32_le(0x5a5a5a5a, src + 3, len);
	memset(dst, 0, len + 16);
	got = rrxe_crc32_copy(rrxe_crc_copy_tab, 0x5a5a5a5a, dst + 5, src + 3, len);
	if (got != want || memcmp(dst + 5, src + 3, len))
		r = -EIO;
	if (!r && rrxe_crc_clmul_usable() && rrxe_crc_fpu_usable()) {
		memset(dst, 0, len + 16);
		/* (Not counted: icrc_folds says what traffic folded.) */
		got = rrxe_crc_clmul_copy_uncounted(0x5a5a5a5a, dst + 5, src + 3, len);
		if (got != want || memcmp(dst + 5, src + 3, len))
			r = -EIO;
	}
	kfree(src);
	if (r)
		pr_err("rdma_rrxe: a copy that folds its CRC disagrees with crc32_le or memcpy\n");
	return r;
}

/*
 * Chooses the CRC as the `icrc` parameter says: 0, or -EINVAL if "clmul"
 * was forced on a CPU without it, -EIO if forced and it disagrees with
 * crc32_le, or -ENOMEM. Where the CPU has it, each runs over a 4 KiB
 * packet's worth of bytes, best of three rounds, and both must agree on
 * the same buffer ("auto" keeps the table and logs a disagreement); "auto"
 * then keeps the faster.
 */
int rrxe_helper_crc_select(void)
{
	const size_t len = 4096;
	u64 best[2] = { U64_MAX, U64_MAX };
	u32 crc[2] = { 0, 0 };
	u8 *buf;
	int r, k;

	rrxe_crc_clmul_on = false;
	rrxe_crc_copy_tables(rrxe_crc_copy_tab);
	rrxe_crc_x2n_fill();
	r = rrxe_crc_copy_check();
	if (r)
		return r;
	/*
	 * The shift must be crc32_le_shift's (the ICRC of every folded packet
	 * and every packet received in fragments depends on it).
	 */
	if (rrxe_helper_crc32_shift(0x12345678, 4093) != crc32_le_shift(0x12345678, 4093) ||
	    rrxe_helper_crc32_shift(0xdebb20e3, 4096) != crc32_le_shift(0xdebb20e3, 4096)) {
		pr_err("rdma_rrxe: the CRC shift disagrees with crc32_le_shift\n");
		return -EIO;
	}
	if (rrxe_crc_mode == RRXE_CRC_TABLE)
		return 0;
	if (!rrxe_crc_clmul_usable()) {
		if (rrxe_crc_mode == RRXE_CRC_CLMUL) {
			pr_err("rdma_rrxe: icrc=clmul, but this CPU has no PCLMULQDQ\n");
			return -EINVAL;
		}
		return 0;
	}
	buf = kmalloc(len, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	get_random_bytes(buf, len);
	for (r = 0; r < 3; r++)
		for (k = 0; k < 2; k++)
			best[k] = min(best[k], rrxe_crc_time(k, buf, len, 16, &crc[k]));
	kfree(buf);
	if (crc[0] != crc[1]) {
		pr_err("rdma_rrxe: the carry-less-multiply CRC disagrees with crc32_le (%08x, %08x)%s\n",
		       crc[1], crc[0], rrxe_crc_mode == RRXE_CRC_CLMUL ? "" : ": using the table");
		return rrxe_crc_mode == RRXE_CRC_CLMUL ? -EIO : 0;
	}
	rrxe_crc_clmul_on = rrxe_crc_mode == RRXE_CRC_CLMUL || best[1] < best[0];
	pr_info("rdma_rrxe: ICRC: table %llu MiB/s, clmul %llu MiB/s: using %s\n",
		rrxe_crc_mibs((u64)len * 16, best[0]), rrxe_crc_mibs((u64)len * 16, best[1]),
		rrxe_crc_clmul_on ? "clmul" : "table");
	return 0;
}

/* --- dynamic debug: a call site per kind of object --- */

/*
 * Why a verb failed, as C rxe's rxe_dbg_<kind>() says it: the device's
 * name, the object ("qp#17", or the device for a create), the verb and
 * the error. Each kind is its own call site of dynamic debug, so that
 * `echo 'func rrxe_helper_dbg_qp +p' > .../dynamic_debug/control` turns
 * on the QPs' lines alone ('module rdma_rrxe +p': all of them). Off, a
 * call costs the call and a static branch; with neither
 * CONFIG_DYNAMIC_DEBUG nor DEBUG it prints nothing.
 */
#define RRXE_DBG_KIND(kind)							\
void rrxe_helper_dbg_##kind(struct ib_device *dev, u32 index, const char *what, int err) \
{										\
	ibdev_dbg(dev, #kind "#%u %s: %pe\n", index, what, ERR_PTR(err));	\
}

void rrxe_helper_dbg_dev(struct ib_device *dev, const char *what, int err)
{
	ibdev_dbg(dev, "%s: %pe\n", what, ERR_PTR(err));
}

RRXE_DBG_KIND(uc)
RRXE_DBG_KIND(pd)
RRXE_DBG_KIND(ah)
RRXE_DBG_KIND(cq)
RRXE_DBG_KIND(qp)
RRXE_DBG_KIND(srq)
RRXE_DBG_KIND(mw)
RRXE_DBG_KIND(mr)

/* --- debugfs: what only tests set or read --- */

/*
 * rdma_rrxe/ in debugfs, while the module is loaded: qpn_max (read-write,
 * root only) and icrc_folds (read only). Nothing of it is needed to run:
 * without debugfs the defaults hold. Returns the directory for
 * rrxe_helper_debugfs_remove (an error pointer, which debugfs takes, if it
 * could not be made).
 */
struct dentry *rrxe_helper_debugfs_create(void)
{
	struct dentry *dir = debugfs_create_dir("rdma_rrxe", NULL);

	debugfs_create_u32("qpn_max", 0600, dir, &qpn_max);
	debugfs_create_file_unsafe("icrc_folds", 0400, dir, NULL, &rrxe_crc_folds_fops);
	return dir;
}

void rrxe_helper_debugfs_remove(struct dentry *dir)
{
	debugfs_remove(dir);
}

/* --- memory charged to a user process --- */

/*
 * Charges pages to the calling process's pinned memory, against its
 * RLIMIT_MEMLOCK unless it has CAP_IPC_LOCK, as ib_umem_get charges the
 * pages it pins. Returns the mm, grabbed (give it to
 * rrxe_helper_uncharge_pinned), NULL without a user mm, or
 * ERR_PTR(-ENOMEM) over the limit.
 */
struct mm_struct *rrxe_helper_charge_pinned(unsigned long pages)
{
	struct mm_struct *mm = current->mm;
	unsigned long limit;

	if (!mm || (current->flags & PF_KTHREAD))
		return NULL;
	limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	if (atomic64_add_return(pages, &mm->pinned_vm) > limit && !capable(CAP_IPC_LOCK)) {
		atomic64_sub(pages, &mm->pinned_vm);
		return ERR_PTR(-ENOMEM);
	}
	mmgrab(mm);
	return mm;
}

/*
 * The calling process's mm, grabbed, and in *limit its RLIMIT_MEMLOCK in
 * pages (ULONG_MAX with CAP_IPC_LOCK); NULL for a kernel thread. For
 * charges made later on its behalf (rrxe_helper_charge_pinned_to).
 */
struct mm_struct *rrxe_helper_budget_get(unsigned long *limit)
{
	struct mm_struct *mm = current->mm;

	if (!mm || (current->flags & PF_KTHREAD))
		return NULL;
	/*
	 * (Asked now, not when a charge comes: no audit record for a
	 * process that may never need the capability.)
	 */
	*limit = ns_capable_noaudit(&init_user_ns, CAP_IPC_LOCK) ? ULONG_MAX :
		 rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	mmgrab(mm);
	return mm;
}

/*
 * Charges `pages` to mm's pinned memory unless that would pass `limit`;
 * on success mm is grabbed once more (for rrxe_helper_uncharge_pinned).
 */
int rrxe_helper_charge_pinned_to(struct mm_struct *mm, unsigned long pages,
				 unsigned long limit)
{
	if (atomic64_add_return(pages, &mm->pinned_vm) > limit) {
		atomic64_sub(pages, &mm->pinned_vm);
		return -ENOMEM;
	}
	mmgrab(mm);
	return 0;
}

void rrxe_helper_mmdrop(struct mm_struct *mm)
{
	mmdrop(mm);
}

void rrxe_helper_uncharge_pinned(struct mm_struct *mm, unsigned long pages)
{
	atomic64_sub(pages, &mm->pinned_vm);
	mmdrop(mm);
}

/*
 * Whether the calling task may exceed resource limits: a kernel thread,
 * or a task with CAP_SYS_RESOURCE (no audit record when it has not).
 */
bool rrxe_helper_may_exceed_limits(void)
{
	return (current->flags & PF_KTHREAD) || ns_capable_noaudit(&init_user_ns, CAP_SYS_RESOURCE);
}

/* The calling task's real uid, as the kernel numbers it (kuid). */
u32 rrxe_helper_current_uid(void)
{
	return __kuid_val(current_uid());
}

/* --- on-demand paging (ODP) user memory --- */

bool rrxe_helper_odp_enabled(void)
{
	return IS_ENABLED(CONFIG_INFINIBAND_ON_DEMAND_PAGING);
}

/* The end of user addresses. */
u64 rrxe_helper_user_end(void)
{
	return TASK_SIZE_MAX;
}

/* Whether [addr, addr + len) lies in the user half of the address space. */
bool rrxe_helper_user_range_ok(u64 addr, u64 len)
{
	return access_ok((void __user *)(uintptr_t)addr, len);
}

#ifdef CONFIG_INFINIBAND_ON_DEMAND_PAGING

/*
 * The MMU interval notifier of an ODP umem (the one piece of logic here:
 * the notifier is C's to call). Before the owner's page tables change
 * under [range->start, range->end), the pages in it stop being reachable:
 * their dma_list entries are cleared under umem_mutex, which every access
 * holds from its check of an entry until its last byte, so an access
 * either finished before or sees the page gone and faults it in again
 * (mmu_interval_set_seq makes a fault in progress retry). A caller that
 * cannot sleep (the OOM reaper) is told to come back.
 */
static bool rrxe_odp_invalidate(struct mmu_interval_notifier *mni,
				const struct mmu_notifier_range *range,
				unsigned long cur_seq)
{
	struct ib_umem_odp *odp = container_of(mni, struct ib_umem_odp, notifier);
	u64 start, end;

	if (!mmu_notifier_range_blockable(range))
		return false;
	mutex_lock(&odp->umem_mutex);
	mmu_interval_set_seq(mni, cur_seq);
	start = max_t(u64, ib_umem_start(odp), range->start);
	end = min_t(u64, ib_umem_end(odp), range->end);
	if (start < end)
		ib_umem_odp_unmap_dma_pages(odp, start, end);
	mutex_unlock(&odp->umem_mutex);
	return true;
}

static const struct mmu_interval_notifier_ops rrxe_odp_ops = {
	.invalidate = rrxe_odp_invalidate,
};

/*
 * An ODP umem over [addr, addr + len) of the calling process. Only for a
 * device without a DMA device (virtual DMA): its dma_list entries are
 * then the pages' kernel addresses (rrxe_helper_odp_page).
 */
struct ib_umem_odp *rrxe_helper_odp_get(struct ib_device *dev, u64 addr,
					u64 len, int access)
{
	if (!ib_uses_virt_dma(dev))
		return ERR_PTR(-EOPNOTSUPP);
	return ib_umem_odp_get(dev, addr, len, access, &rrxe_odp_ops);
}

void rrxe_helper_odp_release(struct ib_umem_odp *odp)
{
	ib_umem_odp_release(odp);
}

/*
 * The root of an implicit ODP MR (the calling process's whole address
 * space): no pages and no notifier of its own; its parts are children
 * (rrxe_helper_odp_alloc_child).
 */
struct ib_umem_odp *rrxe_helper_odp_get_implicit(struct ib_device *dev,
						 int access)
{
	int ret;

	if (!ib_uses_virt_dma(dev))
		return ERR_PTR(-EOPNOTSUPP);
	if (!current->mm)
		return ERR_PTR(-EINVAL);
	/*
	 * The mm's interval tree of notifiers, set up here in the owner's
	 * system call: otherwise the first part's notifier would set it up
	 * (mm_take_all_locks, which a pending signal interrupts) wherever
	 * the first access comes, the engine's work item or another
	 * process's post_send.
	 */
	ret = mmu_notifier_register(NULL, current->mm);
	if (ret)
		return ERR_PTR(ret);
	return ib_umem_odp_alloc_implicit(dev, access);
}

/*
 * A part [addr, addr + len) of an implicit root's address space, with the
 * notifier of an explicit umem. Inserting the notifier may register the
 * mm's notifier subscriptions, which needs a live mm: an owner that has
 * exited (the peer's access came late) gets -EFAULT.
 */
struct ib_umem_odp *rrxe_helper_odp_alloc_child(struct ib_umem_odp *root,
						u64 addr, u64 len)
{
	struct mm_struct *mm = root->umem.owning_mm;
	struct ib_umem_odp *child;

	if (!mmget_not_zero(mm))
		return ERR_PTR(-EFAULT);
	child = ib_umem_odp_alloc_child(root, addr, len, &rrxe_odp_ops);
	mmput(mm);
	return child;
}

/*
 * Faults the owner's pages of [addr, addr + len) in as the owner's own
 * fault would, allowed to drop the owner's mmap lock while it waits for
 * I/O (a file's page cache, a FUSE server): hmm_range_fault holds it for
 * the whole wait, and a thread of the owner waiting to map or unmap
 * memory behind it would hold every other reader (ib_core disassociating
 * the owner's context at device removal) until the I/O ends.
 */
static int rrxe_odp_prefault(struct mm_struct *mm, u64 addr, u64 len, bool write)
{
	unsigned long start = ALIGN_DOWN(addr, PAGE_SIZE);
	unsigned long n = (ALIGN(addr + len, PAGE_SIZE) - start) >> PAGE_SHIFT;
	int locked = 1;
	long got;

	if (!mmget_not_zero(mm))
		return -EFAULT;
	mmap_read_lock(mm);
	got = get_user_pages_remote(mm, start, n, write ? FOLL_WRITE : 0, NULL, &locked);
	if (locked)
		mmap_read_unlock(mm);
	mmput(mm);
	return got == n ? 0 : -EFAULT;
}

/*
 * Faults [addr, addr + len) in, for writing if `write`, and maps it;
 * returns with umem_mutex held if it succeeds (>= 0), without if not.
 * Without `fault`, faults nothing: maps the pages the owner's page tables
 * hold now (for writing where they allow it) and skips the rest.
 * Called from a work item or a prefetch, not by the owner's access: what
 * the fault allocates (page cache, page tables) is charged to the owner's
 * memory cgroup, as the owner's own fault would be, not to the worker's
 * (the root). A page the prefault cannot bring in fails the range at once
 * (hmm_range_fault would wait for it again, with the lock held).
 */
int rrxe_helper_odp_map_and_lock(struct ib_umem_odp *odp, u64 addr, u64 len,
				 bool write, bool fault)
{
	u64 access = ODP_READ_ALLOWED_BIT | (write ? ODP_WRITE_ALLOWED_BIT : 0);
	struct mem_cgroup *memcg, *old;
	int ret = 0;

	memcg = get_mem_cgroup_from_mm(odp->umem.owning_mm);
	old = set_active_memcg(memcg);
	if (fault)
		ret = rrxe_odp_prefault(odp->umem.owning_mm, addr, len, write);
	if (!ret)
		ret = ib_umem_odp_map_dma_and_lock(odp, addr, len, access, fault);
	set_active_memcg(old);
	mem_cgroup_put(memcg);
	return ret;
}

/*
 * The (base) page that holds user address `addr` if it is mapped (for
 * writing if `write`), else NULL. The caller holds umem_mutex, under which
 * alone dma_list changes. A umem of huge pages (IB_ACCESS_HUGETLB) has one
 * dma_list entry per huge page, the address of its first base page: the
 * page that holds `addr` is the one `addr`'s offset in the huge page
 * names. (ib_umem_start() is aligned to the umem's page size.)
 */
struct page *rrxe_helper_odp_page(struct ib_umem_odp *odp, u64 addr,
				  bool write)
{
	u64 perm = ODP_READ_ALLOWED_BIT | (write ? ODP_WRITE_ALLOWED_BIT : 0);
	u64 off;
	dma_addr_t dma;

	lockdep_assert_held(&odp->umem_mutex);
	if (addr < ib_umem_start(odp) || addr >= ib_umem_end(odp))
		return NULL;
	off = addr - ib_umem_start(odp);
	dma = odp->dma_list[off >> odp->page_shift];
	if ((dma & perm) != perm)
		return NULL;
	off &= BIT_ULL(odp->page_shift) - 1;
	return nth_page(ib_virt_dma_to_page(dma & ODP_DMA_ADDR_MASK),
			off >> PAGE_SHIFT);
}

#else /* !CONFIG_INFINIBAND_ON_DEMAND_PAGING */

struct ib_umem_odp *rrxe_helper_odp_get(struct ib_device *dev, u64 addr,
					u64 len, int access)
{
	return ERR_PTR(-EOPNOTSUPP);
}

void rrxe_helper_odp_release(struct ib_umem_odp *odp)
{
}

struct ib_umem_odp *rrxe_helper_odp_get_implicit(struct ib_device *dev,
						 int access)
{
	return ERR_PTR(-EOPNOTSUPP);
}

struct ib_umem_odp *rrxe_helper_odp_alloc_child(struct ib_umem_odp *root,
						u64 addr, u64 len)
{
	return ERR_PTR(-EOPNOTSUPP);
}

int rrxe_helper_odp_map_and_lock(struct ib_umem_odp *odp, u64 addr, u64 len,
				 bool write, bool fault)
{
	return -EOPNOTSUPP;
}

struct page *rrxe_helper_odp_page(struct ib_umem_odp *odp, u64 addr,
				  bool write)
{
	return NULL;
}

#endif /* CONFIG_INFINIBAND_ON_DEMAND_PAGING */

void rrxe_helper_odp_lock(struct ib_umem_odp *odp)
{
	mutex_lock(&odp->umem_mutex);
}

void rrxe_helper_odp_unlock(struct ib_umem_odp *odp)
{
	mutex_unlock(&odp->umem_mutex);
}

unsigned int rrxe_helper_odp_page_shift(const struct ib_umem_odp *odp)
{
	return odp->page_shift;
}

/* The page shift of an IB_ACCESS_HUGETLB umem (umem_odp.c's). */
unsigned int rrxe_helper_hpage_shift(void)
{
#ifdef CONFIG_HUGETLB_PAGE
	return HPAGE_SHIFT;
#else
	return PAGE_SHIFT;
#endif
}

void *rrxe_helper_kmap_local_page(struct page *page)
{
	return kmap_local_page(page);
}

void rrxe_helper_kunmap_local(void *addr)
{
	kunmap_local(addr);
}
