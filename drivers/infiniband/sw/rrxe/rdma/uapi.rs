// SPDX-License-Identifier: GPL-2.0

//! The rxe user ABI (`include/uapi/rdma/rdma_user_rxe.h`): the structs
//! librxe and the driver exchange through udata, taken from the generated
//! bindings so their layout cannot drift.

use super::bindings;
use kernel::types::{AsBytes, FromBytes};

/// Where and how large a mappable queue is (`struct mminfo`).
pub(crate) type MmInfo = bindings::mminfo;
/// Response of create CQ.
pub(crate) type CreateCqResp = bindings::rxe_create_cq_resp;
/// Response of resize CQ.
pub(crate) type ResizeCqResp = bindings::rxe_resize_cq_resp;
/// Response of create QP: RQ then SQ.
pub(crate) type CreateQpResp = bindings::rxe_create_qp_resp;
/// Response of create SRQ.
pub(crate) type CreateSrqResp = bindings::rxe_create_srq_resp;
/// Response of create AH.
pub(crate) type CreateAhResp = bindings::rxe_create_ah_resp;
/// Request of modify SRQ: where to write the new ring's `mminfo`.
pub(crate) type ModifySrqCmd = bindings::rxe_modify_srq_cmd;

// SAFETY: Each is a `#[repr(C)]` struct of `u32`/`u64` fields laid out
// without padding (checked below), so every byte is initialised and any
// byte pattern is valid.
unsafe impl AsBytes for MmInfo {}
// SAFETY: See above.
unsafe impl AsBytes for CreateCqResp {}
// SAFETY: See above.
unsafe impl AsBytes for ResizeCqResp {}
// SAFETY: See above.
unsafe impl AsBytes for CreateQpResp {}
// SAFETY: See above.
unsafe impl AsBytes for CreateSrqResp {}
// SAFETY: See above.
unsafe impl AsBytes for CreateAhResp {}
// SAFETY: See above.
unsafe impl FromBytes for ModifySrqCmd {}

const _: () = {
    assert!(core::mem::size_of::<MmInfo>() == 16);
    assert!(core::mem::size_of::<CreateCqResp>() == 16);
    assert!(core::mem::size_of::<ResizeCqResp>() == 16);
    assert!(core::mem::size_of::<CreateQpResp>() == 32);
    assert!(core::mem::size_of::<CreateSrqResp>() == 24);
    assert!(core::mem::size_of::<CreateAhResp>() == 8);
    assert!(core::mem::size_of::<ModifySrqCmd>() == 8);
};

/// An `mminfo`.
pub(crate) fn mminfo(offset: u64, size: u32) -> MmInfo {
    MmInfo {
        offset,
        size,
        pad: 0,
    }
}

/// Size of a send WQE header (`struct rxe_send_wqe`).
pub(crate) const SEND_WQE_SIZE: usize = core::mem::size_of::<bindings::rxe_send_wqe>();
/// Size of a receive WQE header (`struct rxe_recv_wqe`).
pub(crate) const RECV_WQE_SIZE: usize = core::mem::size_of::<bindings::rxe_recv_wqe>();
/// Size of a scatter/gather element (`struct ib_sge`, `struct rxe_sge`).
pub(crate) const SGE_SIZE: usize = core::mem::size_of::<bindings::ib_sge>();
/// Size of a CQ slot's content: a kernel `ib_wc` or a user
/// `ib_uverbs_wc`, whichever is larger (rxe's `struct rxe_cqe`).
pub(crate) const CQE_SIZE: usize = {
    let k = core::mem::size_of::<bindings::ib_wc>();
    let u = core::mem::size_of::<bindings::ib_uverbs_wc>();
    if k > u {
        k
    } else {
        u
    }
};
