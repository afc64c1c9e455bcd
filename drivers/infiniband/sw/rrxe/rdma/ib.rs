// SPDX-License-Identifier: GPL-2.0

//! The verbs API's enums and flag sets as Rust types: a completion's
//! status, opcode and flags, a QP's state, access rights, and the
//! attribute mask of `modify_qp`. Each enum carries its C value (`#[repr(u32)]`, the
//! discriminant taken from the generated bindings), so it converts to the
//! C side without a table; C values come in through `from_raw`, which
//! refuses what is not a member.

use super::bindings as b;

/// Defines a `#[repr(u32)]` enum whose variants are C values, with
/// `raw()` and `from_raw()`.
macro_rules! c_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $v:ident = $c:expr,)+ }) => {
        $(#[$m])*
        #[repr(u32)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(crate) enum $name {
            $($(#[$vm])* $v = $c,)+
        }

        impl $name {
            /// The C value.
            #[allow(dead_code)]
            pub(crate) const fn raw(self) -> u32 {
                self as u32
            }

            /// The member with C value `v`, if there is one.
            #[allow(dead_code)]
            pub(crate) fn from_raw(v: u32) -> Option<Self> {
                match v {
                    $(x if x == $c => Some(Self::$v),)+
                    _ => None,
                }
            }
        }
    };
}

c_enum! {
    /// The operation of a send work request (`enum ib_wr_opcode`), the
    /// ones this driver carries out.
    WrOp {
        Write = b::ib_wr_opcode_IB_WR_RDMA_WRITE,
        WriteImm = b::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM,
        Send = b::ib_wr_opcode_IB_WR_SEND,
        SendImm = b::ib_wr_opcode_IB_WR_SEND_WITH_IMM,
        SendInv = b::ib_wr_opcode_IB_WR_SEND_WITH_INV,
        Read = b::ib_wr_opcode_IB_WR_RDMA_READ,
        CmpSwap = b::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP,
        FetchAdd = b::ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD,
        Flush = b::ib_wr_opcode_IB_WR_FLUSH,
        AtomicWrite = b::ib_wr_opcode_IB_WR_ATOMIC_WRITE,
        LocalInv = b::ib_wr_opcode_IB_WR_LOCAL_INV,
        BindMw = b::ib_wr_opcode_IB_WR_BIND_MW,
        RegMr = b::ib_wr_opcode_IB_WR_REG_MR,
    }
}

c_enum! {
    /// What `advise_mr` advises on memory paged on demand (`enum
    /// ib_uverbs_advise_mr_advice`).
    Advice {
        Prefetch = b::ib_uverbs_advise_mr_advice_IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH,
        PrefetchWrite =
            b::ib_uverbs_advise_mr_advice_IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE,
        PrefetchNoFault =
            b::ib_uverbs_advise_mr_advice_IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT,
    }
}

c_enum! {
    /// A work completion's status (`enum ib_wc_status`), the ones this
    /// driver reports.
    WcStatus {
        Success = b::ib_wc_status_IB_WC_SUCCESS,
        LocLenErr = b::ib_wc_status_IB_WC_LOC_LEN_ERR,
        LocQpOpErr = b::ib_wc_status_IB_WC_LOC_QP_OP_ERR,
        LocProtErr = b::ib_wc_status_IB_WC_LOC_PROT_ERR,
        WrFlushErr = b::ib_wc_status_IB_WC_WR_FLUSH_ERR,
        MwBindErr = b::ib_wc_status_IB_WC_MW_BIND_ERR,
        BadRespErr = b::ib_wc_status_IB_WC_BAD_RESP_ERR,
        RemInvReqErr = b::ib_wc_status_IB_WC_REM_INV_REQ_ERR,
        RemAccessErr = b::ib_wc_status_IB_WC_REM_ACCESS_ERR,
        RemOpErr = b::ib_wc_status_IB_WC_REM_OP_ERR,
        RetryExcErr = b::ib_wc_status_IB_WC_RETRY_EXC_ERR,
        RnrRetryExcErr = b::ib_wc_status_IB_WC_RNR_RETRY_EXC_ERR,
    }
}

c_enum! {
    /// A work completion's opcode (`enum ib_wc_opcode`).
    WcOpcode {
        Send = b::ib_wc_opcode_IB_WC_SEND,
        RdmaWrite = b::ib_wc_opcode_IB_WC_RDMA_WRITE,
        RdmaRead = b::ib_wc_opcode_IB_WC_RDMA_READ,
        CompSwap = b::ib_wc_opcode_IB_WC_COMP_SWAP,
        FetchAdd = b::ib_wc_opcode_IB_WC_FETCH_ADD,
        BindMw = b::ib_wc_opcode_IB_WC_BIND_MW,
        LocalInv = b::ib_wc_opcode_IB_WC_LOCAL_INV,
        AtomicWrite = b::ib_wc_opcode_IB_WC_ATOMIC_WRITE,
        RegMr = b::ib_wc_opcode_IB_WC_REG_MR,
        Flush = b::ib_wc_opcode_IB_WC_FLUSH,
        Recv = b::ib_wc_opcode_IB_WC_RECV,
        RecvRdmaWithImm = b::ib_wc_opcode_IB_WC_RECV_RDMA_WITH_IMM,
    }
}

c_enum! {
    /// A QP's state (`enum ib_qp_state`).
    QpState {
        Reset = b::ib_qp_state_IB_QPS_RESET,
        Init = b::ib_qp_state_IB_QPS_INIT,
        Rtr = b::ib_qp_state_IB_QPS_RTR,
        Rts = b::ib_qp_state_IB_QPS_RTS,
        Sqd = b::ib_qp_state_IB_QPS_SQD,
        Sqe = b::ib_qp_state_IB_QPS_SQE,
        Err = b::ib_qp_state_IB_QPS_ERR,
    }
}

/// Defines a set of C flag bits as a newtype over `u32`.
macro_rules! c_flags {
    ($(#[$m:meta])* $name:ident { $($(#[$fm:meta])* $f:ident = $c:expr,)+ }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub(crate) struct $name(u32);

        #[allow(dead_code)]
        impl $name {
            $($(#[$fm])* pub(crate) const $f: Self = Self($c);)+
            /// No bit.
            pub(crate) const NONE: Self = Self(0);

            /// The set with the C bits `v` (unknown bits kept: the caller
            /// refuses them with [`Self::without`]).
            pub(crate) const fn from_raw(v: u32) -> Self {
                Self(v)
            }

            /// The C bits.
            pub(crate) const fn raw(self) -> u32 {
                self.0
            }

            /// The bits of both (for constants: `|` is not `const`).
            pub(crate) const fn or(self, other: Self) -> Self {
                Self(self.0 | other.0)
            }

            /// Whether every bit of `other` is set.
            pub(crate) const fn contains(self, other: Self) -> bool {
                self.0 & other.0 == other.0
            }

            /// Whether any bit of `other` is set.
            pub(crate) const fn intersects(self, other: Self) -> bool {
                self.0 & other.0 != 0
            }

            /// The bits of `self` not in `known`.
            pub(crate) const fn without(self, known: Self) -> Self {
                Self(self.0 & !known.0)
            }
        }

        impl core::ops::BitOr for $name {
            type Output = Self;
            fn bitor(self, o: Self) -> Self {
                Self(self.0 | o.0)
            }
        }

        impl core::ops::BitOrAssign for $name {
            fn bitor_assign(&mut self, o: Self) {
                self.0 |= o.0;
            }
        }
    };
}

c_flags! {
    /// Access rights of an MR, MW or QP (`enum ib_access_flags`).
    Access {
        LOCAL_WRITE = b::ib_access_flags_IB_ACCESS_LOCAL_WRITE,
        REMOTE_WRITE = b::ib_access_flags_IB_ACCESS_REMOTE_WRITE,
        REMOTE_READ = b::ib_access_flags_IB_ACCESS_REMOTE_READ,
        REMOTE_ATOMIC = b::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC,
        MW_BIND = b::ib_access_flags_IB_ACCESS_MW_BIND,
        ZERO_BASED = b::ib_access_flags_IB_ZERO_BASED,
        ON_DEMAND = b::ib_access_flags_IB_ACCESS_ON_DEMAND,
        HUGETLB = b::ib_access_flags_IB_ACCESS_HUGETLB,
        FLUSH_GLOBAL = b::ib_access_flags_IB_ACCESS_FLUSH_GLOBAL,
        FLUSH_PERSISTENT = b::ib_access_flags_IB_ACCESS_FLUSH_PERSISTENT,
        OPTIONAL = b::ib_access_flags_IB_ACCESS_OPTIONAL,
    }
}

c_flags! {
    /// A send work request's flags (`enum ib_send_flags`), the ones this
    /// driver reads.
    SendFlags {
        FENCE = b::ib_send_flags_IB_SEND_FENCE as u32,
        SIGNALED = b::ib_send_flags_IB_SEND_SIGNALED as u32,
        SOLICITED = b::ib_send_flags_IB_SEND_SOLICITED as u32,
        INLINE = b::ib_send_flags_IB_SEND_INLINE as u32,
    }
}

c_flags! {
    /// How `req_notify_cq` arms a CQ (`enum ib_cq_notify_flags`).
    CqNotify {
        SOLICITED = b::ib_cq_notify_flags_IB_CQ_SOLICITED,
        NEXT_COMP = b::ib_cq_notify_flags_IB_CQ_NEXT_COMP,
        REPORT_MISSED_EVENTS = b::ib_cq_notify_flags_IB_CQ_REPORT_MISSED_EVENTS,
    }
}

impl CqNotify {
    /// Whether only a solicited completion is to raise the event (the
    /// two-valued field `IB_CQ_SOLICITED_MASK` says solicited).
    pub(crate) const fn solicited_only(self) -> bool {
        self.0 & b::ib_cq_notify_flags_IB_CQ_SOLICITED_MASK == b::ib_cq_notify_flags_IB_CQ_SOLICITED
    }
}

c_flags! {
    /// What a `rereg_user_mr` changes (`enum ib_mr_rereg_flags`).
    ReregFlags {
        TRANS = b::ib_mr_rereg_flags_IB_MR_REREG_TRANS,
        PD = b::ib_mr_rereg_flags_IB_MR_REREG_PD,
        ACCESS = b::ib_mr_rereg_flags_IB_MR_REREG_ACCESS,
        /// Every flag ib_core knows.
        SUPPORTED = b::ib_mr_rereg_flags_IB_MR_REREG_SUPPORTED,
    }
}

c_flags! {
    /// What a `modify_device` changes (`enum ib_device_modify_flags`).
    DeviceModifyFlags {
        SYS_IMAGE_GUID = b::ib_device_modify_flags_IB_DEVICE_MODIFY_SYS_IMAGE_GUID,
        NODE_DESC = b::ib_device_modify_flags_IB_DEVICE_MODIFY_NODE_DESC,
    }
}

c_flags! {
    /// What a `modify_port` changes (`enum ib_port_modify_flags`).
    PortModifyFlags {
        RESET_QKEY_CNTR = b::ib_port_modify_flags_IB_PORT_RESET_QKEY_CNTR,
    }
}

c_flags! {
    /// What a `modify_srq` changes (`enum ib_srq_attr_mask`).
    SrqAttrMask {
        MAX_WR = b::ib_srq_attr_mask_IB_SRQ_MAX_WR,
        LIMIT = b::ib_srq_attr_mask_IB_SRQ_LIMIT,
    }
}

c_flags! {
    /// The attributes a `modify_qp` changes (`enum ib_qp_attr_mask`).
    QpAttrMask {
        STATE = b::ib_qp_attr_mask_IB_QP_STATE,
        CUR_STATE = b::ib_qp_attr_mask_IB_QP_CUR_STATE,
        EN_SQD_ASYNC_NOTIFY = b::ib_qp_attr_mask_IB_QP_EN_SQD_ASYNC_NOTIFY,
        ACCESS_FLAGS = b::ib_qp_attr_mask_IB_QP_ACCESS_FLAGS,
        PKEY_INDEX = b::ib_qp_attr_mask_IB_QP_PKEY_INDEX,
        PORT = b::ib_qp_attr_mask_IB_QP_PORT,
        QKEY = b::ib_qp_attr_mask_IB_QP_QKEY,
        AV = b::ib_qp_attr_mask_IB_QP_AV,
        PATH_MTU = b::ib_qp_attr_mask_IB_QP_PATH_MTU,
        TIMEOUT = b::ib_qp_attr_mask_IB_QP_TIMEOUT,
        RETRY_CNT = b::ib_qp_attr_mask_IB_QP_RETRY_CNT,
        RNR_RETRY = b::ib_qp_attr_mask_IB_QP_RNR_RETRY,
        RQ_PSN = b::ib_qp_attr_mask_IB_QP_RQ_PSN,
        MAX_QP_RD_ATOMIC = b::ib_qp_attr_mask_IB_QP_MAX_QP_RD_ATOMIC,
        ALT_PATH = b::ib_qp_attr_mask_IB_QP_ALT_PATH,
        MIN_RNR_TIMER = b::ib_qp_attr_mask_IB_QP_MIN_RNR_TIMER,
        SQ_PSN = b::ib_qp_attr_mask_IB_QP_SQ_PSN,
        MAX_DEST_RD_ATOMIC = b::ib_qp_attr_mask_IB_QP_MAX_DEST_RD_ATOMIC,
        PATH_MIG_STATE = b::ib_qp_attr_mask_IB_QP_PATH_MIG_STATE,
        CAP = b::ib_qp_attr_mask_IB_QP_CAP,
        DEST_QPN = b::ib_qp_attr_mask_IB_QP_DEST_QPN,
        /// Every attribute above.
        STANDARD = b::ib_qp_attr_mask_IB_QP_ATTR_STANDARD_BITS,
    }
}

c_flags! {
    /// A work completion's flags (`enum ib_wc_flags`).
    WcFlags {
        GRH = b::ib_wc_flags_IB_WC_GRH,
        WITH_IMM = b::ib_wc_flags_IB_WC_WITH_IMM,
        WITH_INVALIDATE = b::ib_wc_flags_IB_WC_WITH_INVALIDATE,
        WITH_NETWORK_HDR_TYPE = b::ib_wc_flags_IB_WC_WITH_NETWORK_HDR_TYPE,
        WITH_VLAN = b::ib_wc_flags_IB_WC_WITH_VLAN,
    }
}
