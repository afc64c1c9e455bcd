// SPDX-License-Identifier: GPL-2.0

//! Work completions as they sit in a CQ ring: `struct ib_wc` for kernel
//! consumers, `struct ib_uverbs_wc` for user space.

use super::bindings;
use super::ib::{WcFlags, WcOpcode, WcStatus};
use super::objects::Qp;
use super::ops::DeviceOps;
use super::udata::put_bytes;
use kernel::types::AsBytes;

/// A kernel work completion.
pub(crate) type Wc = bindings::ib_wc;
/// A user work completion.
pub(crate) type UWc = bindings::ib_uverbs_wc;

/// The bytes of a kernel work completion, to copy it out of a ring.
pub(crate) fn wc_bytes_mut(w: &mut Wc) -> &mut [u8] {
    // SAFETY: `ib_wc` holds only integers, C enums (integers in the
    // bindings), raw pointers and unions of those, so any byte pattern is a
    // valid value; the slice covers exactly `*w`.
    unsafe {
        core::slice::from_raw_parts_mut((w as *mut Wc).cast::<u8>(), core::mem::size_of::<Wc>())
    }
}

/// A completion to post.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Completion {
    pub(crate) wr_id: u64,
    pub(crate) status: WcStatus,
    pub(crate) opcode: WcOpcode,
    pub(crate) byte_len: u32,
    /// Immediate data (network-order bytes as a u32) or invalidated rkey.
    pub(crate) ex: u32,
    pub(crate) qp_num: u32,
    pub(crate) src_qp: u32,
    pub(crate) wc_flags: WcFlags,
    pub(crate) pkey_index: u16,
    pub(crate) sl: u8,
    pub(crate) port_num: u8,
    pub(crate) network_hdr_type: u8,
    pub(crate) smac: [u8; 6],
    /// The VLAN ID (with `WcFlags::WITH_VLAN`; kernel completions only,
    /// as the rxe user ABI's completion has no field for it).
    pub(crate) vlan_id: u16,
}

impl Completion {
    /// A completion of work request `wr_id` of QP `qp_num` on port 1, with
    /// no length, immediate data, source or flags.
    pub(crate) fn new(wr_id: u64, status: WcStatus, opcode: WcOpcode, qp_num: u32) -> Self {
        Self {
            wr_id,
            status,
            opcode,
            byte_len: 0,
            ex: 0,
            qp_num,
            src_qp: 0,
            wc_flags: WcFlags::NONE,
            pkey_index: 0,
            sl: 0,
            port_num: 1,
            network_hdr_type: 0,
            smac: [0; 6],
            vlan_id: 0,
        }
    }

    /// Encodes the completion for a user CQ ring slot.
    pub(crate) fn encode_user(&self, out: &mut [u8]) -> bool {
        let mut w = UWc {
            wr_id: self.wr_id,
            status: self.status.raw(),
            opcode: self.opcode.raw(),
            byte_len: self.byte_len,
            qp_num: self.qp_num,
            src_qp: self.src_qp,
            // The flags `ibv_wc` has at the same bits, as C rxe gives a
            // user CQ: no VLAN and no network header type, which are the
            // kernel's only (their bits mean tag-matching flags in
            // `ibv_wc`; bit 6 is `IBV_WC_TM_DATA_VALID`).
            wc_flags: self
                .wc_flags
                .without(WcFlags::WITH_VLAN.or(WcFlags::WITH_NETWORK_HDR_TYPE))
                .raw(),
            pkey_index: self.pkey_index,
            sl: self.sl,
            port_num: self.port_num,
            ..Default::default()
        };
        w.ex.invalidate_rkey = self.ex;
        // A slot user space reads: `AsBytes`, so no uninitialised byte.
        put_bytes(&w, out).is_ok()
    }

    /// Encodes the completion for a kernel CQ ring slot; `qp` is the QP it
    /// belongs to (kernel consumers read `wc->qp`).
    pub(crate) fn encode_kernel<T: DeviceOps>(&self, qp: &Qp<T>, out: &mut [u8]) -> bool {
        let mut w = Wc::default();
        w.__bindgen_anon_1.wr_id = self.wr_id;
        w.status = self.status.raw();
        w.opcode = self.opcode.raw();
        w.byte_len = self.byte_len;
        w.qp = qp.raw();
        w.ex.invalidate_rkey = self.ex;
        w.src_qp = self.src_qp;
        w.wc_flags = self.wc_flags.raw() as i32;
        w.pkey_index = self.pkey_index;
        w.sl = self.sl;
        w.port_num = u32::from(self.port_num);
        w.smac = self.smac;
        w.network_hdr_type = self.network_hdr_type;
        w.vlan_id = self.vlan_id;
        put_kernel(&w, out)
    }
}

// SAFETY: Integers and a union of two 32-bit ones, each at the end of the one
// before, the struct ending at the last one's end (asserted below): no
// padding, so no byte of a value is uninitialised.
unsafe impl AsBytes for UWc {}

const _: () = assert!(
    core::mem::size_of::<UWc>() == 8 + 8 * 4 + 2 * 2 + 4
        && core::mem::offset_of!(UWc, reserved) == core::mem::size_of::<UWc>() - 1
);

/// Copies a kernel completion into a kernel CQ's ring slot, from which
/// `poll_cq` copies it out into the consumer's `ib_wc` as it is.
fn put_kernel(w: &Wc, out: &mut [u8]) -> bool {
    if out.len() < core::mem::size_of::<Wc>() {
        return false;
    }
    // SAFETY: `out` has room for the bytes of `*w`, which is live and does
    // not overlap it. `ib_wc` has padding, whose bytes go along as they
    // are (the slot is kernel memory that `poll_cq` copies into the
    // consumer's `ib_wc`, never to user space).
    unsafe {
        core::ptr::copy_nonoverlapping(
            (w as *const Wc).cast::<u8>(),
            out.as_mut_ptr(),
            core::mem::size_of::<Wc>(),
        )
    };
    true
}
