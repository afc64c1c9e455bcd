// SPDX-License-Identifier: GPL-2.0

//! Work requests: the rxe ring layouts of send and receive WQEs
//! (`rdma_user_rxe.h`), decoded from and encoded to bytes through the
//! generated structs so the layout cannot drift, and the kernel consumers'
//! work request lists (`struct ib_send_wr`, `struct ib_recv_wr`).
//!
//! Decoding takes a byte copy of a ring slot (never the ring itself) and
//! returns plain values: what a user wrote is untrusted and the driver
//! validates the decoded copy.

use super::bindings as b;
use super::ib::{Access, SendFlags, WrOp};
use super::objects::{Ah, Mr};
use super::ops::DeviceOps;
use super::udata::put_bytes;
use core::mem::{offset_of, size_of};
use kernel::prelude::*;
use kernel::types::{AsBytes, FromBytes};

/// Bytes of a send WQE before its SGEs or inline data.
pub(crate) const SEND_WQE_HDR: usize = size_of::<b::rxe_send_wqe>();
/// Offset of the SGE array (or inline data) in a send WQE.
pub(crate) const SEND_SGE_OFF: usize =
    offset_of!(b::rxe_send_wqe, dma) + offset_of!(b::rxe_dma_info, __bindgen_anon_1);
/// Bytes of a receive WQE before its SGEs.
pub(crate) const RECV_WQE_HDR: usize = size_of::<b::rxe_recv_wqe>();
/// Offset of the SGE array in a receive WQE.
pub(crate) const RECV_SGE_OFF: usize =
    offset_of!(b::rxe_recv_wqe, dma) + offset_of!(b::rxe_dma_info, __bindgen_anon_1);
/// Bytes of an SGE.
pub(crate) const SGE_LEN: usize = size_of::<b::rxe_sge>();

const _: () =
    assert!(SEND_SGE_OFF == SEND_WQE_HDR && RECV_SGE_OFF == RECV_WQE_HDR && SGE_LEN == 16);

/// An address vector as old librxe embeds it in a UD WQE.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RawAv {
    pub(crate) network_type: u8,
    pub(crate) dmac: [u8; 6],
    pub(crate) dgid: [u8; 16],
    pub(crate) flow_label: u32,
    pub(crate) sgid_index: u8,
    pub(crate) hop_limit: u8,
    pub(crate) traffic_class: u8,
}

/// The fields of a send WQE. Which of them mean something depends on
/// `op` (a union in C).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SendWr {
    pub(crate) wr_id: u64,
    /// The operation; `None` for an opcode this driver does not carry out
    /// (the WQE completes in error).
    pub(crate) op: Option<WrOp>,
    pub(crate) flags: SendFlags,
    /// Immediate data (as the 4 bytes in network order) or the rkey to
    /// invalidate.
    pub(crate) ex: u32,
    /// RDMA, atomic and flush: the remote address; bind: the window's
    /// address.
    pub(crate) remote_addr: u64,
    /// RDMA, atomic and flush: the remote key; bind: the window's new
    /// rkey; fast registration: the MR's new key.
    pub(crate) rkey: u32,
    pub(crate) compare_add: u64,
    pub(crate) swap: u64,
    /// Bind: the length. (A FLUSH's is `dma_length`, where librxe puts it
    /// and C rxe takes it from.)
    pub(crate) length: u64,
    pub(crate) flush_type: u8,
    pub(crate) flush_level: u8,
    pub(crate) remote_qpn: u32,
    pub(crate) remote_qkey: u32,
    pub(crate) ah_num: u32,
    pub(crate) av: RawAv,
    /// Bind: the lkey of the MR the window binds to; fast registration:
    /// the current lkey of the MR.
    pub(crate) mr_lkey: u32,
    /// Bind: the window's current rkey.
    pub(crate) mw_rkey: u32,
    /// Bind and fast registration: access flags (as given: unknown bits
    /// are the validator's to refuse).
    pub(crate) access: Access,
    /// The SGE count (or 0 with inline data).
    pub(crate) num_sge: u32,
    /// Total length as the client computed it (informational).
    pub(crate) dma_length: u32,
}

// SAFETY: The ring layouts are C structs of integers, arrays of them and
// unions of those (`rdma_user_rxe.h`; the send WQE's `reg` member also
// holds a raw pointer, which is never dereferenced and for which any bits
// are valid too): every bit pattern is a valid value.
unsafe impl FromBytes for b::rxe_send_wqe {}
// SAFETY: As `rxe_send_wqe`.
unsafe impl FromBytes for b::rxe_recv_wqe {}
// SAFETY: As `rxe_send_wqe`.
unsafe impl FromBytes for b::rxe_sge {}
// SAFETY: Integers only, each at the end of the one before and the struct
// ending at the last one's end (asserted below): no padding.
unsafe impl AsBytes for b::rxe_sge {}
// SAFETY: As `rxe_sge`; the SGE array after the header has no size here.
unsafe impl AsBytes for b::rxe_recv_wqe {}

// The padding-free layouts `AsBytes` relies on.
const _: () = {
    assert!(size_of::<b::rxe_sge>() == 8 + 4 + 4);
    assert!(offset_of!(b::rxe_recv_wqe, dma) == 8 + 4 + 4);
    assert!(size_of::<b::rxe_dma_info>() == 6 * 4);
    assert!(size_of::<b::rxe_recv_wqe>() == 8 + 4 + 4 + 6 * 4);
};

fn read<T: FromBytes>(bytes: &[u8]) -> Option<T> {
    if bytes.len() < size_of::<T>() {
        return None;
    }
    // SAFETY: `bytes` holds `size_of::<T>()` bytes, and any bytes are a
    // valid `T` (`FromBytes`).
    Some(unsafe { core::ptr::read_unaligned(bytes.as_ptr().cast::<T>()) })
}

/// Decodes the header of a send WQE from a byte copy of its slot.
pub(crate) fn decode_send(hdr: &[u8]) -> Option<SendWr> {
    let w: b::rxe_send_wqe = read(hdr)?;
    let r = &w.wr;
    // SAFETY: The union members are plain data (see `read`); reading any
    // of them is reading bytes the client wrote, which the driver
    // validates according to the opcode.
    unsafe {
        let rdma = r.wr.rdma;
        let atomic = r.wr.atomic;
        let flush = r.wr.flush;
        let ud = r.wr.ud;
        let mw = r.wr.mw;
        let reg = r.wr.reg;
        let op = r.opcode;
        let (remote_addr, rkey) = match op {
            b::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP
            | b::ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD => (atomic.remote_addr, atomic.rkey),
            b::ib_wr_opcode_IB_WR_FLUSH => (flush.remote_addr, flush.rkey),
            b::ib_wr_opcode_IB_WR_BIND_MW => (mw.addr, mw.rkey),
            b::ib_wr_opcode_IB_WR_REG_MR => (0, reg.key),
            _ => (rdma.remote_addr, rdma.rkey),
        };
        let length = match op {
            b::ib_wr_opcode_IB_WR_BIND_MW => mw.length,
            _ => 0,
        };
        let (mr_lkey, access) = match op {
            b::ib_wr_opcode_IB_WR_BIND_MW => (mw.mr_lkey, mw.access),
            b::ib_wr_opcode_IB_WR_REG_MR => (reg.__bindgen_anon_1.reserved as u32, reg.access),
            _ => (0, 0),
        };
        let av = ud.av;
        Some(SendWr {
            wr_id: r.wr_id,
            op: WrOp::from_raw(op),
            flags: SendFlags::from_raw(r.send_flags),
            ex: r.ex.invalidate_rkey,
            remote_addr,
            rkey,
            compare_add: atomic.compare_add,
            swap: atomic.swap,
            length,
            flush_type: flush.type_,
            flush_level: flush.level,
            remote_qpn: ud.remote_qpn,
            remote_qkey: ud.remote_qkey,
            ah_num: ud.ah_num,
            av: RawAv {
                network_type: av.network_type,
                dmac: av.dmac,
                dgid: av.grh.dgid.raw,
                flow_label: av.grh.flow_label,
                sgid_index: av.grh.sgid_index,
                hop_limit: av.grh.hop_limit,
                traffic_class: av.grh.traffic_class,
            },
            mr_lkey,
            mw_rkey: mw.mw_rkey,
            access: Access::from_raw(access),
            num_sge: w.dma.num_sge,
            dma_length: w.dma.length,
        })
    }
}

/// Encodes a send WQE header (for kernel consumers, whose requests the
/// driver puts in the ring itself).
///
/// Field by field at the layout's offsets, over zeroed bytes: the
/// header's unions have padding inside their members, which a copy of the
/// whole struct would leave undefined.
pub(crate) fn encode_send(w: &SendWr, out: &mut [u8]) -> Result {
    let hdr = out.get_mut(..SEND_WQE_HDR).ok_or(EINVAL)?;
    hdr.fill(0);
    // Writes `$v` at field `$f`; the closure, never called, makes the
    // compiler check that `$v` has the field's type (so its width).
    macro_rules! put {
        ($($f:ident).+ = $v:expr) => {{
            let _ = |q: &b::rxe_send_wqe| {
                // (Union fields need `unsafe`, the others do not.)
                #[allow(unused_unsafe)]
                // SAFETY: Never runs (it is only type-checked).
                let field = unsafe { &q.$($f).+ };
                *field == $v
            };
            put_at(hdr, offset_of!(b::rxe_send_wqe, $($f).+), $v)?
        }};
    }
    put!(wr.wr_id = w.wr_id);
    let op = w.op.ok_or(EINVAL)?;
    put!(wr.opcode = op.raw());
    put!(wr.send_flags = w.flags.raw());
    put!(wr.ex.invalidate_rkey = w.ex);
    match op {
        WrOp::CmpSwap | WrOp::FetchAdd => {
            put!(wr.wr.atomic.remote_addr = w.remote_addr);
            put!(wr.wr.atomic.compare_add = w.compare_add);
            put!(wr.wr.atomic.swap = w.swap);
            put!(wr.wr.atomic.rkey = w.rkey);
        }
        WrOp::Send | WrOp::SendImm if w.ah_num != 0 => {
            put!(wr.wr.ud.remote_qpn = w.remote_qpn);
            put!(wr.wr.ud.remote_qkey = w.remote_qkey);
            put!(wr.wr.ud.ah_num = w.ah_num);
        }
        WrOp::Flush => {
            put!(wr.wr.flush.remote_addr = w.remote_addr);
            put!(wr.wr.flush.rkey = w.rkey);
            put!(wr.wr.flush.type_ = w.flush_type);
            put!(wr.wr.flush.level = w.flush_level);
        }
        WrOp::RegMr => {
            put!(wr.wr.reg.__bindgen_anon_1.reserved = u64::from(w.mr_lkey));
            put!(wr.wr.reg.key = w.rkey);
            put!(wr.wr.reg.access = w.access.raw());
        }
        _ => {
            put!(wr.wr.rdma.remote_addr = w.remote_addr);
            put!(wr.wr.rdma.rkey = w.rkey);
        }
    }
    put!(dma.num_sge = w.num_sge);
    put!(dma.length = w.dma_length);
    Ok(())
}

/// Writes `v` at byte `off` of `out`.
fn put_at<V: AsBytes>(out: &mut [u8], off: usize, v: V) -> Result {
    put_bytes(&v, out.get_mut(off..).ok_or(EINVAL)?)
}

/// A scatter/gather element.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Sge {
    pub(crate) addr: u64,
    pub(crate) length: u32,
    pub(crate) lkey: u32,
}

/// Decodes SGE `i` of the SGE array in `bytes`.
pub(crate) fn decode_sge(bytes: &[u8], i: usize) -> Option<Sge> {
    let off = i.checked_mul(SGE_LEN)?;
    let s: b::rxe_sge = read(bytes.get(off..)?)?;
    Some(Sge {
        addr: s.addr,
        length: s.length,
        lkey: s.lkey,
    })
}

/// Encodes `s` as SGE `i` of the array in `out`.
pub(crate) fn encode_sge(s: &Sge, out: &mut [u8], i: usize) -> Result {
    let off = i.checked_mul(SGE_LEN).ok_or(EINVAL)?;
    let raw = b::rxe_sge {
        addr: s.addr,
        length: s.length,
        lkey: s.lkey,
    };
    put_bytes(&raw, out.get_mut(off..).ok_or(EINVAL)?)
}

/// The fields of a receive WQE header.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RecvWr {
    pub(crate) wr_id: u64,
    pub(crate) num_sge: u32,
}

/// Decodes a receive WQE header.
pub(crate) fn decode_recv(hdr: &[u8]) -> Option<RecvWr> {
    let w: b::rxe_recv_wqe = read(hdr)?;
    Some(RecvWr {
        wr_id: w.wr_id,
        num_sge: w.dma.num_sge,
    })
}

/// Encodes a receive WQE header.
pub(crate) fn encode_recv(w: &RecvWr, length: u32, out: &mut [u8]) -> Result {
    let mut q = b::rxe_recv_wqe {
        wr_id: w.wr_id,
        ..Default::default()
    };
    q.dma.num_sge = w.num_sge;
    q.dma.length = length;
    q.dma.resid = length;
    put_bytes(&q, out)
}

/// A kernel consumer's send request list (`post_send`).
pub(crate) struct KernelSendWrs<'a> {
    cur: *const b::ib_send_wr,
    /// The request last taken (the head before any).
    last: *const b::ib_send_wr,
    _p: core::marker::PhantomData<&'a b::ib_send_wr>,
}

/// A kernel consumer's SGE list, read entry by entry without assuming
/// its alignment: a consumer may embed it in a packed struct (iSER's
/// `iser_rx_desc` puts it 4 bytes off `ib_sge`'s alignment), where a
/// slice over it would be undefined behaviour (and a BUG with Rust's
/// debug assertions).
///
/// # Invariants
///
/// `ptr` is null with `len` 0, or points at `len` readable `ib_sge`s, for
/// `'a`.
#[derive(Clone, Copy)]
pub(crate) struct SgeList<'a> {
    ptr: *const b::ib_sge,
    len: usize,
    _p: core::marker::PhantomData<&'a b::ib_sge>,
}

impl<'a> SgeList<'a> {
    /// # Safety
    ///
    /// `ptr` must be null, or point at `len` readable `ib_sge`s (at any
    /// alignment) for `'a`.
    pub(super) unsafe fn new(ptr: *const b::ib_sge, len: usize) -> Self {
        let len = if ptr.is_null() { 0 } else { len };
        // INVARIANT: Per the caller; a null list is empty.
        Self {
            ptr,
            len,
            _p: core::marker::PhantomData,
        }
    }

    /// The number of entries.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Entry `i`.
    pub(crate) fn get(&self, i: usize) -> Option<Sge> {
        if i >= self.len {
            return None;
        }
        // SAFETY: By the type invariant entry `i < len` is readable; it
        // is read without assuming alignment.
        let s = unsafe { self.ptr.add(i).read_unaligned() };
        Some(Sge {
            addr: s.addr,
            length: s.length,
            lkey: s.lkey,
        })
    }

    /// The entries in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = Sge> + '_ {
        (0..self.len).filter_map(move |i| self.get(i))
    }
}

/// One kernel send request, decoded, with its SGE list.
pub(crate) struct KernelSendWr<'a> {
    pub(crate) wr: SendWr,
    pub(crate) sges: SgeList<'a>,
}

impl KernelSendWr<'_> {
    /// SGE `i`.
    pub(crate) fn sge(&self, i: usize) -> Option<Sge> {
        self.sges.get(i)
    }

    /// Copies the data its SGEs point at (inline data: kernel virtual
    /// addresses) into `out`, in order; the bytes copied. `EINVAL` if they
    /// do not fit.
    pub(crate) fn copy_inline(&self, out: &mut [u8]) -> Result<usize> {
        let mut at = 0usize;
        for s in self.sges.iter() {
            let n = s.length as usize;
            let dst = out.get_mut(at..at + n).ok_or(EINVAL)?;
            if n != 0 {
                if s.addr == 0 {
                    return Err(EFAULT);
                }
                // SAFETY: For inline sends a kernel consumer passes kernel
                // virtual addresses of `length` readable bytes, valid for
                // the call (`ib_virt_dma_to_ptr`).
                unsafe {
                    core::ptr::copy_nonoverlapping(
                        s.addr as usize as *const u8,
                        dst.as_mut_ptr(),
                        n,
                    )
                };
            }
            at += n;
        }
        Ok(at)
    }
}

impl<'a> KernelSendWrs<'a> {
    /// Wraps the list ib_core passed.
    ///
    /// # Safety
    ///
    /// `first` must be null or a valid list of send requests, each of the
    /// extended type its opcode implies, valid for `'a`.
    pub(crate) unsafe fn new(first: *const b::ib_send_wr) -> Self {
        Self {
            cur: first,
            last: first,
            _p: core::marker::PhantomData,
        }
    }

    /// The request to report as failed: the last one taken, or the first.
    pub(crate) fn failed(&self) -> *const b::ib_send_wr {
        self.last
    }

    /// The next request. `T` is the driver of the AHs and MRs it names;
    /// `ud` says the QP is a datagram QP (its sends are `ib_ud_wr`s).
    pub(crate) fn next<T: DeviceOps>(&mut self, ud: bool) -> Option<KernelSendWr<'a>> {
        if self.cur.is_null() {
            return None;
        }
        let raw = self.cur;
        self.last = raw;
        // Requests and their containers are read without assuming their
        // alignment: a consumer may embed them in a packed struct (isert's
        // `iser_tx_desc` holds its `ib_send_wr` at a 4-byte offset).
        // SAFETY: Per `new`, `raw` is a valid request whose extended
        // container matches its opcode; the AH and MR it names are objects
        // of this device (ib_core checks the device), live for the call.
        unsafe {
            let w: b::ib_send_wr = raw.read_unaligned();
            self.cur = w.next;
            let n = usize::try_from(w.num_sge).unwrap_or(0);
            let sges = SgeList::new(w.sg_list, n);
            let mut s = SendWr {
                wr_id: w.__bindgen_anon_1.wr_id,
                op: WrOp::from_raw(w.opcode),
                flags: SendFlags::from_raw(w.send_flags as u32),
                ex: w.ex.invalidate_rkey,
                num_sge: n as u32,
                ..Default::default()
            };
            match w.opcode {
                b::ib_wr_opcode_IB_WR_RDMA_WRITE
                | b::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM
                | b::ib_wr_opcode_IB_WR_RDMA_READ
                | b::ib_wr_opcode_IB_WR_FLUSH
                | b::ib_wr_opcode_IB_WR_ATOMIC_WRITE => {
                    let r: b::ib_rdma_wr =
                        kernel::container_of!(raw, b::ib_rdma_wr, wr).read_unaligned();
                    s.remote_addr = r.remote_addr;
                    s.rkey = r.rkey;
                }
                b::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP
                | b::ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD => {
                    let a: b::ib_atomic_wr =
                        kernel::container_of!(raw, b::ib_atomic_wr, wr).read_unaligned();
                    s.remote_addr = a.remote_addr;
                    s.compare_add = a.compare_add;
                    s.swap = a.swap;
                    s.rkey = a.rkey;
                }
                b::ib_wr_opcode_IB_WR_REG_MR => {
                    let r: b::ib_reg_wr =
                        kernel::container_of!(raw, b::ib_reg_wr, wr).read_unaligned();
                    if !r.mr.is_null() {
                        s.mr_lkey = Mr::<T>::from_raw(r.mr).keys().0;
                    }
                    s.rkey = r.key;
                    s.access = Access::from_raw(r.access as u32);
                }
                _ => {}
            }
            if ud
                && matches!(
                    w.opcode,
                    b::ib_wr_opcode_IB_WR_SEND | b::ib_wr_opcode_IB_WR_SEND_WITH_IMM
                )
            {
                let u: b::ib_ud_wr = kernel::container_of!(raw, b::ib_ud_wr, wr).read_unaligned();
                if !u.ah.is_null() {
                    // A datagram QP's request: the AH's number finds it
                    // again when the packet is built.
                    s.ah_num = Ah::<T>::from_raw(u.ah).index().unwrap_or(0);
                    s.remote_qpn = u.remote_qpn;
                    s.remote_qkey = u.remote_qkey;
                }
            }
            Some(KernelSendWr { wr: s, sges })
        }
    }
}

/// A kernel consumer's receive request list (`post_recv`).
pub(crate) struct KernelRecvWrs<'a> {
    cur: *const b::ib_recv_wr,
    /// The request last taken (the head before any).
    last: *const b::ib_recv_wr,
    _p: core::marker::PhantomData<&'a b::ib_recv_wr>,
}

/// One kernel receive request.
pub(crate) struct KernelRecvWr<'a> {
    pub(crate) wr_id: u64,
    pub(crate) sges: SgeList<'a>,
}

impl KernelRecvWr<'_> {
    /// SGE `i`.
    pub(crate) fn sge(&self, i: usize) -> Option<Sge> {
        self.sges.get(i)
    }
}

impl<'a> KernelRecvWrs<'a> {
    /// Wraps the list ib_core passed.
    ///
    /// # Safety
    ///
    /// `first` must be null or a valid list of receive requests, valid
    /// for `'a`.
    pub(crate) unsafe fn new(first: *const b::ib_recv_wr) -> Self {
        Self {
            cur: first,
            last: first,
            _p: core::marker::PhantomData,
        }
    }

    /// The request to report as failed: the last one taken, or the first.
    pub(crate) fn failed(&self) -> *const b::ib_recv_wr {
        self.last
    }
}

impl<'a> Iterator for KernelRecvWrs<'a> {
    type Item = KernelRecvWr<'a>;

    fn next(&mut self) -> Option<KernelRecvWr<'a>> {
        if self.cur.is_null() {
            return None;
        }
        let raw = self.cur;
        self.last = raw;
        // SAFETY: Per `new`; read without assuming its alignment (see
        // `KernelSendWrs::next`).
        unsafe {
            let w: b::ib_recv_wr = raw.read_unaligned();
            self.cur = w.next;
            let n = usize::try_from(w.num_sge).unwrap_or(0);
            let sges = SgeList::new(w.sg_list, n);
            Some(KernelRecvWr {
                wr_id: w.__bindgen_anon_1.wr_id,
                sges,
            })
        }
    }
}
