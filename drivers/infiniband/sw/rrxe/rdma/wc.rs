// SPDX-License-Identifier: GPL-2.0

//! Work completions as they sit in a CQ ring: `struct ib_wc` for kernel
//! consumers, `struct ib_uverbs_wc` for user space.

// Parts of this API serve the data path, which is being built on it.

use super::bindings;
use super::objects::Qp;
use super::ops::DeviceOps;

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
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Completion {
    pub(crate) wr_id: u64,
    pub(crate) status: u32,
    pub(crate) opcode: u32,
    pub(crate) byte_len: u32,
    /// Immediate data (network-order bytes as a u32) or invalidated rkey.
    pub(crate) ex: u32,
    pub(crate) qp_num: u32,
    pub(crate) src_qp: u32,
    pub(crate) wc_flags: u32,
    pub(crate) pkey_index: u16,
    pub(crate) sl: u8,
    pub(crate) port_num: u8,
    pub(crate) network_hdr_type: u8,
    pub(crate) smac: [u8; 6],
}

impl Completion {
    /// Encodes the completion for a user CQ ring slot.
    pub(crate) fn encode_user(&self, out: &mut [u8]) -> bool {
        let mut w = UWc {
            wr_id: self.wr_id,
            status: self.status,
            opcode: self.opcode,
            byte_len: self.byte_len,
            qp_num: self.qp_num,
            src_qp: self.src_qp,
            wc_flags: self.wc_flags,
            pkey_index: self.pkey_index,
            sl: self.sl,
            port_num: self.port_num,
            ..Default::default()
        };
        w.ex.invalidate_rkey = self.ex;
        put(&w, out)
    }

    /// Encodes the completion for a kernel CQ ring slot; `qp` is the QP it
    /// belongs to (kernel consumers read `wc->qp`).
    pub(crate) fn encode_kernel<T: DeviceOps>(&self, qp: &Qp<T>, out: &mut [u8]) -> bool {
        let mut w = Wc::default();
        w.__bindgen_anon_1.wr_id = self.wr_id;
        w.status = self.status;
        w.opcode = self.opcode;
        w.byte_len = self.byte_len;
        w.qp = qp.raw();
        w.ex.invalidate_rkey = self.ex;
        w.src_qp = self.src_qp;
        w.wc_flags = self.wc_flags as i32;
        w.pkey_index = self.pkey_index;
        w.sl = self.sl;
        w.port_num = u32::from(self.port_num);
        w.smac = self.smac;
        w.network_hdr_type = self.network_hdr_type;
        put(&w, out)
    }
}

fn put<W>(w: &W, out: &mut [u8]) -> bool {
    if out.len() < core::mem::size_of::<W>() {
        return false;
    }
    // SAFETY: `out` has room for the bytes of `*w`, a plain C struct built
    // from its zeroed `Default` (so its padding holds zeros).
    unsafe {
        core::ptr::copy_nonoverlapping(
            (w as *const W).cast::<u8>(),
            out.as_mut_ptr(),
            core::mem::size_of::<W>(),
        )
    };
    true
}
