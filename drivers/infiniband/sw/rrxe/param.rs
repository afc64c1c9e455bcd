// SPDX-License-Identifier: GPL-2.0

//! Device and port limits: the values C `rdma_rxe` reports (its
//! `rxe_param.h`), so that an rxe user sees the same device. Where rrxe
//! differs on purpose, the constant says why.

use crate::quota::Kind;
use crate::rdma::consts::{
    IB_DEVICE_ATOMIC_WRITE, IB_DEVICE_AUTO_PATH_MIG, IB_DEVICE_BAD_PKEY_CNTR,
    IB_DEVICE_BAD_QKEY_CNTR, IB_DEVICE_CHANGE_PHY_PORT, IB_DEVICE_FLUSH_GLOBAL,
    IB_DEVICE_FLUSH_PERSISTENT, IB_DEVICE_MEM_MGT_EXTENSIONS, IB_DEVICE_MEM_WINDOW,
    IB_DEVICE_MEM_WINDOW_TYPE_2B, IB_DEVICE_PORT_ACTIVE_EVENT, IB_DEVICE_RC_RNR_NAK_GEN,
    IB_DEVICE_SRQ_RESIZE, IB_DEVICE_SYS_IMAGE_GUID, IB_DEVICE_UD_AV_PORT_ENFORCE, IB_MTU_1024,
    IB_MTU_2048, IB_MTU_256, IB_MTU_4096, IB_MTU_512, IB_ODP_SUPPORT, IB_ODP_SUPPORT_ATOMIC,
    IB_ODP_SUPPORT_ATOMIC_WRITE, IB_ODP_SUPPORT_FLUSH, IB_ODP_SUPPORT_IMPLICIT,
    IB_ODP_SUPPORT_READ, IB_ODP_SUPPORT_RECV, IB_ODP_SUPPORT_SEND, IB_ODP_SUPPORT_SRQ_RECV,
    IB_ODP_SUPPORT_WRITE,
};
use crate::rdma::pool::{Pool, PoolObject};
use kernel::prelude::*;

/// `DEFAULT_MAX_VALUE` of rxe: 2^20 objects of a kind.
const DEFAULT_MAX_VALUE: u32 = 1 << 20;

/// IBTA vendor ID: none (rxe's 0xffffff).
pub(crate) const VENDOR_ID: u32 = 0xff_ffff;
/// Largest MR: the whole address space.
pub(crate) const MAX_MR_SIZE: u64 = u64::MAX;
/// Page sizes supported for MRs: 4 KiB up to 2 GiB.
pub(crate) const PAGE_SIZE_CAP: u64 = 0xffff_f000;
/// Largest work queue.
pub(crate) const MAX_QP_WR: u32 = DEFAULT_MAX_VALUE;
/// Capabilities, as rxe on a 64-bit kernel.
pub(crate) const DEVICE_CAP_FLAGS: u64 = IB_DEVICE_BAD_PKEY_CNTR
    | IB_DEVICE_BAD_QKEY_CNTR
    | IB_DEVICE_AUTO_PATH_MIG
    | IB_DEVICE_CHANGE_PHY_PORT
    | IB_DEVICE_UD_AV_PORT_ENFORCE
    | IB_DEVICE_PORT_ACTIVE_EVENT
    | IB_DEVICE_SYS_IMAGE_GUID
    | IB_DEVICE_RC_RNR_NAK_GEN
    | IB_DEVICE_SRQ_RESIZE
    | IB_DEVICE_MEM_MGT_EXTENSIONS
    | IB_DEVICE_MEM_WINDOW
    | IB_DEVICE_FLUSH_GLOBAL
    | IB_DEVICE_FLUSH_PERSISTENT
    | IB_DEVICE_MEM_WINDOW_TYPE_2B
    | IB_DEVICE_ATOMIC_WRITE;
/// On-demand paging (C rxe has explicit MRs since 6.13): explicit MRs,
/// and implicit ones (the whole address space, which no other soft driver
/// has).
pub(crate) const ODP_GENERAL_CAPS: u64 = IB_ODP_SUPPORT | IB_ODP_SUPPORT_IMPLICIT;
/// What an RC QP does with ODP MRs: each of these moves data through
/// `mem.rs`, which faults the pages in (upstream rxe offers FLUSH and
/// ATOMIC WRITE on ODP MRs since 6.16).
pub(crate) const ODP_RC_CAPS: u32 = IB_ODP_SUPPORT_SEND
    | IB_ODP_SUPPORT_RECV
    | IB_ODP_SUPPORT_WRITE
    | IB_ODP_SUPPORT_READ
    | IB_ODP_SUPPORT_ATOMIC
    | IB_ODP_SUPPORT_SRQ_RECV
    | IB_ODP_SUPPORT_FLUSH
    | IB_ODP_SUPPORT_ATOMIC_WRITE;
/// What a UD QP does with ODP MRs.
pub(crate) const ODP_UD_CAPS: u32 = IB_ODP_SUPPORT_SEND | IB_ODP_SUPPORT_RECV;
/// Scatter/gather entries per send or receive WQE.
pub(crate) const MAX_SGE: u32 = 32;
/// Inline data a send WQE can carry: the room of `MAX_SGE` SGEs.
pub(crate) const MAX_INLINE_DATA: u32 = MAX_SGE * crate::rdma::uapi::SGE_SIZE as u32;
/// Scatter/gather entries per RDMA read.
pub(crate) const MAX_SGE_RD: u32 = 32;
/// Completion queues.
pub(crate) const MAX_CQ: u32 = DEFAULT_MAX_VALUE;
/// log2 of the largest CQ.
pub(crate) const MAX_LOG_CQE: u32 = 15;
/// Largest CQ.
pub(crate) const MAX_CQE: u32 = (1 << MAX_LOG_CQE) - 1;
/// Protection domains.
pub(crate) const MAX_PD: u32 = DEFAULT_MAX_VALUE;
/// Outstanding RDMA reads/atomics per QP, as responder and as requester.
pub(crate) const MAX_QP_RD_ATOM: u32 = 128;
/// Outstanding RDMA reads/atomics for the whole device.
pub(crate) const MAX_RES_RD_ATOM: u32 = 0x3f000;
/// Outstanding RDMA reads/atomics a QP may initiate.
pub(crate) const MAX_QP_INIT_RD_ATOM: u32 = 128;
/// Multicast groups.
pub(crate) const MAX_MCAST_GRP: u32 = 8192;
/// QPs per multicast group.
pub(crate) const MAX_MCAST_QP_ATTACH: u32 = 56;
/// Multicast attachments in all.
pub(crate) const MAX_TOT_MCAST_QP_ATTACH: u32 = 0x70000;
/// Address handles (32Ki - 1).
pub(crate) const MAX_AH: u32 = (1 << 15) - 1;
/// Largest SRQ.
pub(crate) const MAX_SRQ_WR: u32 = DEFAULT_MAX_VALUE;
/// Smallest SRQ (smaller requests are raised to it).
pub(crate) const MIN_SRQ_WR: u32 = 1;
/// Fewest SGEs per SRQ WQE (fewer are raised to it).
pub(crate) const MIN_SRQ_SGE: u32 = 1;
/// Scatter/gather entries per SRQ WQE.
pub(crate) const MAX_SRQ_SGE: u32 = 27;
/// Pages in a fast-registration page list.
pub(crate) const MAX_FMR_PAGE_LIST_LEN: u32 = 512;
/// P_Keys.
pub(crate) const MAX_PKEYS: u16 = 64;
/// Local CA ACK delay (IBA encoding).
pub(crate) const LOCAL_CA_ACK_DELAY: u8 = 15;

/// First QP index of ordinary QPs (QP0/QP1 and a reserved range below).
pub(crate) const MIN_QP_INDEX: u32 = 16;
/// QPs.
pub(crate) const MAX_QP: u32 = DEFAULT_MAX_VALUE - MIN_QP_INDEX;
/// User contexts.
pub(crate) const MAX_UCONTEXT: u32 = DEFAULT_MAX_VALUE;
/// Last QP index.
pub(crate) const MAX_QP_INDEX: u32 = DEFAULT_MAX_VALUE;

/// The last QP index a new device gives out: [`MAX_QP_INDEX`], or less
/// with debugfs's `rdma_rrxe/qpn_max` (tests of QP number reuse).
pub(crate) fn max_qp_index() -> u32 {
    match crate::rdma::device::param_qpn_max() {
        0 => MAX_QP_INDEX,
        n => n.clamp(MIN_QP_INDEX + 1, MAX_QP_INDEX),
    }
}
/// A pool's index range `min..=max` and the most objects it holds.
#[derive(Clone, Copy)]
pub(crate) struct PoolSize {
    pub(crate) min: u32,
    pub(crate) max: u32,
    pub(crate) limit: u32,
}

impl PoolSize {
    /// How many objects the pool can hold: its limit, or its indices if
    /// they are fewer.
    pub(crate) const fn capacity(self) -> u32 {
        let n = self.max - self.min + 1;
        if n < self.limit {
            n
        } else {
            self.limit
        }
    }
}

/// The pool of each kind of object (rxe's index ranges and limits; QPs'
/// up to [`max_qp_index`]).
pub(crate) fn pool_size(kind: Kind) -> PoolSize {
    let (min, max, limit) = match kind {
        Kind::Pd => (1, MAX_PD, MAX_PD),
        Kind::Ah => (MIN_AH_INDEX, MAX_AH, MAX_AH),
        Kind::Cq => (1, MAX_CQ, MAX_CQ),
        Kind::Srq => (MIN_SRQ_INDEX, MAX_SRQ_INDEX, MAX_SRQ),
        Kind::Qp => (MIN_QP_INDEX, max_qp_index(), MAX_QP),
        Kind::Mr => (MIN_MR_INDEX, MAX_MR_INDEX, MAX_MR),
        Kind::Mw => (MIN_MW_INDEX, MAX_MW_INDEX, MAX_MW),
    };
    PoolSize { min, max, limit }
}

/// An empty pool for objects of `kind`.
pub(crate) fn pool<O: PoolObject>(kind: Kind) -> impl PinInit<Pool<O>> {
    let s = pool_size(kind);
    Pool::new(s.min, s.max, s.limit)
}

/// First AH number.
pub(crate) const MIN_AH_INDEX: u32 = 1;
/// Last SRQ number.
pub(crate) const MAX_SRQ_INDEX: u32 = DEFAULT_MAX_VALUE;
/// First MR index.
pub(crate) const MIN_MR_INDEX: u32 = 1;
/// First MW index.
pub(crate) const MIN_MW_INDEX: u32 = MAX_MR_INDEX + 1;
/// Last MW index.
pub(crate) const MAX_MW_INDEX: u32 = DEFAULT_MAX_VALUE;
/// First SRQ number.
pub(crate) const MIN_SRQ_INDEX: u32 = 0x0002_0001;
/// SRQs.
pub(crate) const MAX_SRQ: u32 = DEFAULT_MAX_VALUE - MIN_SRQ_INDEX;
/// Last MR index.
pub(crate) const MAX_MR_INDEX: u32 = DEFAULT_MAX_VALUE >> 1;
/// MRs.
pub(crate) const MAX_MR: u32 = MAX_MR_INDEX - 1;
/// The device's `local_dma_lkey`: all kernel memory, for the SGEs of
/// kernel QPs only. Its index (the key shifted right by 8) lies above every
/// MR's and window's, so no pool ever gives it out, and an rkey or a user's
/// lkey naming it finds nothing.
pub(crate) const LOCAL_DMA_LKEY: u32 = 0xffff_ff00;
const _: () = assert!(LOCAL_DMA_LKEY >> 8 > MAX_MR_INDEX && LOCAL_DMA_LKEY >> 8 > MAX_MW_INDEX);
/// MWs (their indices follow the MRs').
pub(crate) const MAX_MW: u32 = DEFAULT_MAX_VALUE - (MAX_MR_INDEX + 1);

/// GID table entries.
pub(crate) const PORT_GID_TBL_LEN: i32 = 1024;
/// Largest message.
pub(crate) const PORT_MAX_MSG_SZ: u32 = 1 << 31;
/// P_Key table entries (rxe uses one, the default).
pub(crate) const PORT_PKEY_TBL_LEN: u16 = 1;

/// Headers around a RoCEv2 payload that the netdev MTU must also carry
/// (rxe's `RXE_MAX_HDR_LENGTH`).
pub(crate) const MAX_HDR_LENGTH: u32 = 80;

/// The IB MTU (`enum ib_mtu`) a netdev MTU carries, as rxe computes it:
/// the largest IB MTU that fits after the headers, at least 256, at most
/// 4096.
pub(crate) fn ib_mtu_for_netdev(ndev_mtu: u32) -> u32 {
    match ndev_mtu.saturating_sub(MAX_HDR_LENGTH) {
        0..=511 => IB_MTU_256,
        512..=1023 => IB_MTU_512,
        1024..=2047 => IB_MTU_1024,
        2048..=4095 => IB_MTU_2048,
        _ => IB_MTU_4096,
    }
}

/// Modified EUI-64 from a MAC (`addrconf_addr_eui48`): GUIDs of rxe.
pub(crate) fn eui64_from_mac(mac: &[u8; 6]) -> [u8; 8] {
    [
        mac[0] ^ 2,
        mac[1],
        mac[2],
        0xff,
        0xfe,
        mac[3],
        mac[4],
        mac[5],
    ]
}
