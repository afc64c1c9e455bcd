// SPDX-License-Identifier: GPL-2.0

//! A QP's IBA state and attributes: what the QP object (`qp`), its
//! engines (`engine`) and packet intake (`net::rx`) share. The QP holds
//! them under its attribute lock; the engines keep a copy
//! (`Engine::follow`).

use crate::av::Av;
use crate::proto::Mtu;
use crate::rdma::attrs::QpType;
use crate::rdma::ib::Access;
use crate::rdma::objects::Qp;
use crate::rdma::pool::Handle;
use crate::Rrxe;

/// QP state (`enum ib_qp_state`).
pub(crate) use crate::rdma::ib::QpState as State;

/// The IBA attributes of a QP.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Attrs {
    pub(crate) state: State,
    pub(crate) path_mtu: u32,
    /// The MTU a connected QP's packets are cut with and checked against
    /// (IB enum): its path MTU, capped by the port's MTU when the path MTU
    /// was set, and fixed from then on (as C rxe's `qp->mtu`): both ends
    /// keep cutting messages alike whatever a net device's MTU does.
    pub(crate) mtu: u32,
    pub(crate) path_mig_state: u32,
    pub(crate) qkey: u32,
    pub(crate) rq_psn: u32,
    pub(crate) sq_psn: u32,
    pub(crate) dest_qp_num: u32,
    /// The QP of this device numbered `dest_qp_num` when it was set, if
    /// any: a connected QP's peer when both are here. Its number alone
    /// would also name a QP made later with the number of a dead peer.
    pub(crate) dest: Option<Handle>,
    pub(crate) access: Access,
    pub(crate) pkey_index: u16,
    pub(crate) alt_pkey_index: u16,
    pub(crate) en_sqd_async_notify: u8,
    pub(crate) sq_draining: bool,
    pub(crate) max_rd_atomic: u8,
    pub(crate) max_dest_rd_atomic: u8,
    pub(crate) min_rnr_timer: u8,
    pub(crate) port_num: u32,
    pub(crate) timeout: u8,
    pub(crate) retry_cnt: u8,
    pub(crate) rnr_retry: u8,
    pub(crate) alt_port_num: u32,
    pub(crate) alt_timeout: u8,
    pub(crate) pri_av: Av,
    pub(crate) alt_av: Av,
}

/// The Q_Key of the GSI QP (QP1), IBA's well-known one.
pub(crate) const GSI_QKEY: u32 = 0x8001_0000;

/// The MTU a QP's packets are cut with, from its `Attrs::mtu` (an `enum
/// ib_mtu` value): UD and GSI QPs take the port's, each datagram being
/// one packet.
pub(crate) fn mtu_of(qp: &Qp<Rrxe>, qp_mtu: u32) -> Mtu {
    let ib = match qp.qp_type {
        QpType::Rc | QpType::Uc => qp_mtu,
        _ => qp.device().port_mtu(),
    };
    Mtu::from_ib_enum(ib).unwrap_or(Mtu::MTU_256)
}
