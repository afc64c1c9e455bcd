// SPDX-License-Identifier: GPL-2.0

//! Constants of the verbs API (IBA and ib_core), re-exported from the
//! generated bindings under their C names.

use super::bindings as b;

/// `enum rdma_driver_id`: Soft-RoCE.
pub(crate) const RDMA_DRIVER_RXE: u32 = b::rdma_driver_id_RDMA_DRIVER_RXE;

// enum ib_device_cap_flags
pub(crate) const IB_DEVICE_BAD_PKEY_CNTR: u64 =
    b::ib_device_cap_flags_IB_DEVICE_BAD_PKEY_CNTR as u64;
pub(crate) const IB_DEVICE_BAD_QKEY_CNTR: u64 =
    b::ib_device_cap_flags_IB_DEVICE_BAD_QKEY_CNTR as u64;
pub(crate) const IB_DEVICE_AUTO_PATH_MIG: u64 =
    b::ib_device_cap_flags_IB_DEVICE_AUTO_PATH_MIG as u64;
pub(crate) const IB_DEVICE_CHANGE_PHY_PORT: u64 =
    b::ib_device_cap_flags_IB_DEVICE_CHANGE_PHY_PORT as u64;
pub(crate) const IB_DEVICE_UD_AV_PORT_ENFORCE: u64 =
    b::ib_device_cap_flags_IB_DEVICE_UD_AV_PORT_ENFORCE as u64;
pub(crate) const IB_DEVICE_PORT_ACTIVE_EVENT: u64 =
    b::ib_device_cap_flags_IB_DEVICE_PORT_ACTIVE_EVENT as u64;
pub(crate) const IB_DEVICE_SYS_IMAGE_GUID: u64 =
    b::ib_device_cap_flags_IB_DEVICE_SYS_IMAGE_GUID as u64;
pub(crate) const IB_DEVICE_RC_RNR_NAK_GEN: u64 =
    b::ib_device_cap_flags_IB_DEVICE_RC_RNR_NAK_GEN as u64;
pub(crate) const IB_DEVICE_SRQ_RESIZE: u64 = b::ib_device_cap_flags_IB_DEVICE_SRQ_RESIZE as u64;
pub(crate) const IB_DEVICE_MEM_MGT_EXTENSIONS: u64 =
    b::ib_device_cap_flags_IB_DEVICE_MEM_MGT_EXTENSIONS as u64;
pub(crate) const IB_DEVICE_MEM_WINDOW: u64 = b::ib_device_cap_flags_IB_DEVICE_MEM_WINDOW as u64;
pub(crate) const IB_DEVICE_FLUSH_GLOBAL: u64 = b::ib_device_cap_flags_IB_DEVICE_FLUSH_GLOBAL as u64;
pub(crate) const IB_DEVICE_FLUSH_PERSISTENT: u64 =
    b::ib_device_cap_flags_IB_DEVICE_FLUSH_PERSISTENT as u64;
pub(crate) const IB_DEVICE_MEM_WINDOW_TYPE_2B: u64 =
    b::ib_device_cap_flags_IB_DEVICE_MEM_WINDOW_TYPE_2B as u64;
pub(crate) const IB_DEVICE_ATOMIC_WRITE: u64 = b::ib_device_cap_flags_IB_DEVICE_ATOMIC_WRITE as u64;

/// `enum ib_kernel_cap_flags`: `rdma link delete` may unregister.
pub(crate) const IBK_ALLOW_USER_UNREG: u64 = b::ib_kernel_cap_flags_IBK_ALLOW_USER_UNREG as u64;
/// `enum ib_kernel_cap_flags`: kernel PDs use the device's `local_dma_lkey`.
pub(crate) const IBK_LOCAL_DMA_LKEY: u64 = b::ib_kernel_cap_flags_IBK_LOCAL_DMA_LKEY as u64;
/// `enum ib_kernel_cap_flags`: `IB_MR_TYPE_SG_GAPS` fast registration.
pub(crate) const IBK_SG_GAPS_REG: u64 = b::ib_kernel_cap_flags_IBK_SG_GAPS_REG as u64;
/// `enum ib_kernel_cap_flags`: `IB_ACCESS_ON_DEMAND` in `reg_user_mr`.
pub(crate) const IBK_ON_DEMAND_PAGING: u64 = b::ib_kernel_cap_flags_IBK_ON_DEMAND_PAGING as u64;

/// `enum ib_odp_general_cap_bits`: on-demand paging MRs (explicit).
pub(crate) const IB_ODP_SUPPORT: u64 = b::ib_odp_general_cap_bits_IB_ODP_SUPPORT as u64;
pub(crate) const IB_ODP_SUPPORT_IMPLICIT: u64 =
    b::ib_odp_general_cap_bits_IB_ODP_SUPPORT_IMPLICIT as u64;
// enum ib_odp_transport_cap_bits: what a transport does with ODP MRs
pub(crate) const IB_ODP_SUPPORT_SEND: u32 = b::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_SEND;
pub(crate) const IB_ODP_SUPPORT_RECV: u32 = b::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_RECV;
pub(crate) const IB_ODP_SUPPORT_WRITE: u32 = b::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_WRITE;
pub(crate) const IB_ODP_SUPPORT_READ: u32 = b::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_READ;
pub(crate) const IB_ODP_SUPPORT_ATOMIC: u32 = b::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_ATOMIC;
pub(crate) const IB_ODP_SUPPORT_SRQ_RECV: u32 =
    b::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_SRQ_RECV;
// FLUSH and ATOMIC WRITE on ODP MRs: the values newer kernels (6.16) give
// `IB_ODP_SUPPORT_FLUSH` and `IB_ODP_SUPPORT_ATOMIC_WRITE`, which 6.12 does
// not name yet. uverbs copies the transport caps to user space as they
// are, where they are `IBV_ODP_SUPPORT_FLUSH` and `_ATOMIC_WRITE`.
pub(crate) const IB_ODP_SUPPORT_FLUSH: u32 = 1 << 6;
pub(crate) const IB_ODP_SUPPORT_ATOMIC_WRITE: u32 = 1 << 7;

/// `enum ib_atomic_cap`: atomics are atomic within this HCA.
pub(crate) const IB_ATOMIC_HCA: u32 = b::ib_atomic_cap_IB_ATOMIC_HCA;

// enum ib_port_state
pub(crate) const IB_PORT_DOWN: u32 = b::ib_port_state_IB_PORT_DOWN;
pub(crate) const IB_PORT_ACTIVE: u32 = b::ib_port_state_IB_PORT_ACTIVE;

// enum ib_port_phys_state
pub(crate) const IB_PORT_PHYS_STATE_POLLING: u8 =
    b::ib_port_phys_state_IB_PORT_PHYS_STATE_POLLING as u8;
pub(crate) const IB_PORT_PHYS_STATE_DISABLED: u8 =
    b::ib_port_phys_state_IB_PORT_PHYS_STATE_DISABLED as u8;
pub(crate) const IB_PORT_PHYS_STATE_LINK_UP: u8 =
    b::ib_port_phys_state_IB_PORT_PHYS_STATE_LINK_UP as u8;

// enum ib_mtu
pub(crate) const IB_MTU_256: u32 = b::ib_mtu_IB_MTU_256;
pub(crate) const IB_MTU_512: u32 = b::ib_mtu_IB_MTU_512;
pub(crate) const IB_MTU_1024: u32 = b::ib_mtu_IB_MTU_1024;
pub(crate) const IB_MTU_2048: u32 = b::ib_mtu_IB_MTU_2048;
pub(crate) const IB_MTU_4096: u32 = b::ib_mtu_IB_MTU_4096;

/// `enum ib_port_width`: 1X.
pub(crate) const IB_WIDTH_1X: u8 = b::ib_port_width_IB_WIDTH_1X as u8;

/// Port capability: supports connection management.
pub(crate) const IB_PORT_CM_SUP: u32 = b::ib_port_capability_mask_bits_IB_PORT_CM_SUP;
/// `RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP`: a RoCEv2 port.
pub(crate) const RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP: u32 = b::RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
/// Size of a management datagram.
pub(crate) const IB_MGMT_MAD_SIZE: u32 = b::IB_MGMT_MAD_SIZE;
/// The default (full member) P_Key.
pub(crate) const IB_DEFAULT_PKEY_FULL: u16 = 0xffff;

// enum ib_uverbs_write_cmds
pub(crate) const IB_USER_VERBS_CMD_POST_SEND: u32 =
    b::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_POST_SEND;
pub(crate) const IB_USER_VERBS_CMD_REQ_NOTIFY_CQ: u32 =
    b::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_REQ_NOTIFY_CQ;

// --- verbs enums (all u32) ---

// enum ib_qp_state

// enum ib_qp_attr_mask

// enum ib_access_flags

// enum rdma_network_type
pub(crate) const RDMA_NETWORK_IPV4: u32 = b::rdma_network_type_RDMA_NETWORK_IPV4;
pub(crate) const RDMA_NETWORK_IPV6: u32 = b::rdma_network_type_RDMA_NETWORK_IPV6;

/// `RXE_NETWORK_TYPE_IPV4` of an AV embedded in a user WQE.
pub(crate) const RXE_NETWORK_TYPE_IPV4: u8 = b::RXE_NETWORK_TYPE_IPV4 as u8;
/// `RXE_NETWORK_TYPE_IPV6`.
pub(crate) const RXE_NETWORK_TYPE_IPV6: u8 = b::RXE_NETWORK_TYPE_IPV6 as u8;
