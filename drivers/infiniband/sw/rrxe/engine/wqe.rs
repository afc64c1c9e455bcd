// SPDX-License-Identifier: GPL-2.0

//! Work queue entries as the engines use them: copied once out of the
//! ring (user-writable memory for user QPs), validated, and then only the
//! copy is read.
//!
//! The send queue has a kernel-side shadow with one entry per ring slot:
//! the requester copies a WQE into it the first time it reaches the slot,
//! and the requester and completer then share the shadow entry. Receive
//! WQEs are copied when the responder starts the message that consumes
//! them.

use crate::mem::{self, CopyError, Halt, KeyCache, Transfer};
use crate::proto::{MsgOp, Mtu, Psn};
use crate::queue::Queue;
use crate::rdma::attrs::QpType;
use crate::rdma::charge::MemCharge;
pub(crate) use crate::rdma::ib::WrOp;
use crate::rdma::ib::{SendFlags, WcOpcode, WcStatus};
use crate::rdma::objects::Qp;
use crate::rdma::skb::SkBuff;
use crate::rdma::wqe::{self as raw, RecvWr, SendWr, Sge};
use crate::Rrxe;
use kernel::prelude::*;

/// Largest message (IBA: 2^31 bytes).
pub(crate) const MAX_MSG: u32 = 1 << 31;

impl WrOp {
    /// Whether the QP type allows the operation.
    pub(crate) fn allowed(self, t: QpType, kernel: bool) -> bool {
        match self {
            Self::Send | Self::SendImm => true,
            Self::Write | Self::WriteImm => matches!(t, QpType::Rc | QpType::Uc),
            Self::LocalInv | Self::BindMw => matches!(t, QpType::Rc | QpType::Uc),
            // Only kernel consumers can name an MR to fast-register.
            Self::RegMr => kernel && matches!(t, QpType::Rc | QpType::Uc),
            _ => t == QpType::Rc,
        }
    }

    /// Operations done locally, without packets.
    pub(crate) fn is_local(self) -> bool {
        matches!(self, Self::LocalInv | Self::BindMw | Self::RegMr)
    }

    /// Operations whose data may be given inline (in the WQE): those that
    /// send bytes of the WQE's, SENDs and WRITEs. The others' SGEs name
    /// where data goes (READ, atomics) or nothing (FLUSH), and inline
    /// bytes in their place would be read as SGEs.
    pub(crate) fn carries_inline(self) -> bool {
        matches!(
            self,
            Self::Send | Self::SendImm | Self::SendInv | Self::Write | Self::WriteImm
        )
    }

    /// Operations that use a responder resource (and the initiator depth).
    pub(crate) fn is_read_or_atomic(self) -> bool {
        matches!(
            self,
            Self::Read | Self::CmpSwap | Self::FetchAdd | Self::Flush | Self::AtomicWrite
        )
    }

    /// Operations whose local buffers receive data (read, atomics).
    pub(crate) fn writes_local(self) -> bool {
        matches!(self, Self::Read | Self::CmpSwap | Self::FetchAdd)
    }

    /// The message operation on the wire.
    pub(crate) fn msg_op(self) -> Option<MsgOp> {
        Some(match self {
            Self::Write => MsgOp::Write,
            Self::WriteImm => MsgOp::WriteWithImm,
            Self::Send => MsgOp::Send,
            Self::SendImm => MsgOp::SendWithImm,
            Self::SendInv => MsgOp::SendWithInv,
            Self::Read => MsgOp::ReadRequest,
            Self::CmpSwap => MsgOp::CompareSwap,
            Self::FetchAdd => MsgOp::FetchAdd,
            Self::Flush => MsgOp::Flush,
            Self::AtomicWrite => MsgOp::AtomicWrite,
            _ => return None,
        })
    }

    /// The completion opcode.
    pub(crate) fn wc_opcode(self) -> WcOpcode {
        match self {
            Self::Write | Self::WriteImm => WcOpcode::RdmaWrite,
            Self::Send | Self::SendImm | Self::SendInv => WcOpcode::Send,
            Self::Read => WcOpcode::RdmaRead,
            Self::CmpSwap => WcOpcode::CompSwap,
            Self::FetchAdd => WcOpcode::FetchAdd,
            Self::Flush => WcOpcode::Flush,
            Self::AtomicWrite => WcOpcode::AtomicWrite,
            Self::LocalInv => WcOpcode::LocalInv,
            Self::BindMw => WcOpcode::BindMw,
            Self::RegMr => WcOpcode::RegMr,
        }
    }
}

/// Where a send WQE is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WqeState {
    /// Not (fully) sent yet.
    Posted,
    /// Fully sent, waiting for its ACK or response.
    Pending,
    /// Complete; the completer posts its completion.
    Done,
    /// Failed with this completion status.
    Error(WcStatus),
}

/// A send WQE, copied out of the ring and validated.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SendWqe {
    pub(crate) wr: SendWr,
    pub(crate) op: WrOp,
    /// Total data length.
    pub(crate) len: u32,
    pub(crate) inline: bool,
    pub(crate) state: WqeState,
    /// PSNs the message uses (RC/UC).
    pub(crate) first_psn: Psn,
    pub(crate) last_psn: Psn,
    /// Bytes sent so far.
    pub(crate) sent: u32,
    /// Read response bytes received so far.
    pub(crate) read: u32,
    /// A packet of it went out (since it was posted or last retried).
    pub(crate) started: bool,
    /// It holds one of the QP's read/atomic credits (`max_rd_atomic`).
    pub(crate) credit: bool,
    /// All its packets went out at least once: an ACK of `last_psn`
    /// completes it even while a retry is about to resend it.
    pub(crate) sent_once: bool,
    /// The path MTU the message is cut with, fixed by its first packet:
    /// its PSNs, offsets and READ responses all follow from it, whatever
    /// the net device's MTU does meanwhile.
    pub(crate) mtu: Mtu,
}

impl SendWqe {
    /// A WQE just copied out of the ring, before its validation.
    fn posted(wr: SendWr) -> Self {
        Self {
            wr,
            op: WrOp::Send,
            len: 0,
            inline: false,
            state: WqeState::Posted,
            first_psn: Psn::ZERO,
            last_psn: Psn::ZERO,
            sent: 0,
            read: 0,
            started: false,
            credit: false,
            sent_once: false,
            mtu: Mtu::MTU_256,
        }
    }

    pub(crate) fn signaled(&self, sig_all: bool) -> bool {
        sig_all || self.wr.flags.contains(SendFlags::SIGNALED)
    }

    pub(crate) fn fence(&self) -> bool {
        self.wr.flags.contains(SendFlags::FENCE)
    }

    pub(crate) fn solicited(&self) -> bool {
        self.wr.flags.contains(SendFlags::SOLICITED)
    }
}

/// The kernel-side copy of a send queue: one entry and one data area (SGEs
/// or inline data) per ring slot.
pub(crate) struct SqShadow {
    wqes: KVVec<Option<SendWqe>>,
    data: KVVec<u8>,
    /// Bytes of data area per slot.
    room: usize,
    slots: u32,
    /// A user QP's shadow, charged to its process (`MemCharge`).
    _charge: Option<MemCharge>,
}

/// Why a WQE was refused (its completion status).
pub(crate) type WqeError = WcStatus;

impl SqShadow {
    /// A shadow for a ring of `slots` slots with `room` data bytes each;
    /// a `user` QP's is charged to the calling process first.
    pub(crate) fn new(slots: u32, room: usize, user: bool) -> Result<Self> {
        let n = slots as usize;
        let bytes = n.checked_mul(room).ok_or(ENOMEM)?;
        let total = n
            .checked_mul(core::mem::size_of::<Option<SendWqe>>())
            .and_then(|w| w.checked_add(bytes))
            .ok_or(ENOMEM)?;
        let charge = if user { MemCharge::user(total)? } else { None };
        Ok(Self {
            wqes: KVVec::from_elem(None, n, GFP_KERNEL)?,
            data: KVVec::from_elem(0u8, bytes, GFP_KERNEL)?,
            room,
            slots,
            _charge: charge,
        })
    }

    /// The WQE in `slot`, if copied.
    pub(crate) fn get(&self, slot: u32) -> Option<&SendWqe> {
        self.wqes.get(slot as usize).and_then(|w| w.as_ref())
    }

    /// The WQE in `slot`, if copied, for updates.
    pub(crate) fn get_mut(&mut self, slot: u32) -> Option<&mut SendWqe> {
        self.wqes.get_mut(slot as usize).and_then(|w| w.as_mut())
    }

    /// Forgets the WQE of `slot` (after its completion).
    pub(crate) fn clear(&mut self, slot: u32) {
        if let Some(w) = self.wqes.get_mut(slot as usize) {
            *w = None;
        }
    }

    /// Forgets every WQE.
    pub(crate) fn clear_all(&mut self) {
        for w in self.wqes.iter_mut() {
            *w = None;
        }
    }

    /// The number of slots (that of the ring).
    pub(crate) fn slots(&self) -> u32 {
        self.slots
    }

    /// The data area of `slot`.
    pub(crate) fn data(&self, slot: u32) -> &[u8] {
        let off = slot as usize * self.room;
        self.data.get(off..off + self.room).unwrap_or(&[])
    }

    /// SGE `i` of the WQE in `slot`.
    pub(crate) fn sge(&self, slot: u32, i: usize) -> Option<Sge> {
        raw::decode_sge(self.data(slot), i)
    }

    /// Copies between `data` and the SGE list of the WQE at `slot`, from
    /// byte `offset` of its message: send data out of it, read responses
    /// and atomic results into it. The error is the completion status, or
    /// memory paged on demand that is not in ([`Halt::WouldFault`]).
    pub(crate) fn copy(
        &self,
        qp: &Qp<Rrxe>,
        keys: Option<&KeyCache>,
        slot: u32,
        offset: u32,
        data: Transfer<'_>,
    ) -> Result<(), Halt> {
        let num_sge = self.get(slot).map_or(0, |w| w.wr.num_sge as usize);
        mem::copy_data(qp, keys, |i| self.sge(slot, i), num_sge, offset, data).map_err(halt_of)
    }

    /// Attaches `n` bytes of the SGE list of the WQE at `slot`, from byte
    /// `offset` of its message, to `skb` as page fragments (send data of a
    /// looped-back packet, `net::tx`). `Ok(false)`: its memory cannot be
    /// (the caller copies it instead).
    pub(crate) fn attach(
        &self,
        qp: &Qp<Rrxe>,
        keys: Option<&KeyCache>,
        slot: u32,
        offset: u32,
        skb: &mut SkBuff,
        n: usize,
    ) -> Result<bool, Halt> {
        let num_sge = self.get(slot).map_or(0, |w| w.wr.num_sge as usize);
        let data = Transfer::Attach(skb, n);
        match mem::copy_data(qp, keys, |i| self.sge(slot, i), num_sge, offset, data) {
            Ok(()) => Ok(true),
            Err(CopyError::NotAttached) => Ok(false),
            Err(e) => Err(halt_of(e)),
        }
    }

    /// Copies the WQE at ring index `slot` into the shadow and validates
    /// it. A bad WQE is still recorded, in state `Error` with the status
    /// its completion reports.
    pub(crate) fn load(
        &mut self,
        ring: &Queue,
        slot: u32,
        qp_type: QpType,
        kernel: bool,
        max_sge: u32,
        max_inline: u32,
    ) -> Result<&SendWqe> {
        if slot >= self.slots {
            return Err(EINVAL);
        }
        let mut hdr = [0u8; raw::SEND_WQE_HDR];
        ring.read_at(slot, 0, &mut hdr)?;
        let wr = raw::decode_send(&hdr).ok_or(EINVAL)?;
        let sq = SqRules {
            qp_type,
            kernel,
            max_sge,
            max_inline,
        };
        let mut w = SendWqe::posted(wr);
        if let Err(status) = self.validate(&mut w, ring, slot, &sq) {
            w.state = WqeState::Error(status);
        }
        let e = self.wqes.get_mut(slot as usize).ok_or(EINVAL)?;
        *e = Some(w);
        e.as_ref().ok_or(EINVAL)
    }

    /// Validates `w`, the WQE at ring index `slot`, and copies its data
    /// (inline data or SGE list) into the slot's data area; the status of
    /// a refused WQE. `w` keeps what was found of it until then.
    fn validate(
        &mut self,
        w: &mut SendWqe,
        ring: &Queue,
        slot: u32,
        sq: &SqRules,
    ) -> core::result::Result<(), WqeError> {
        let wr = w.wr;
        let op = wr.op.ok_or(WcStatus::LocQpOpErr)?;
        w.op = op;
        if !op.allowed(sq.qp_type, sq.kernel) {
            return Err(WcStatus::LocQpOpErr);
        }
        let off = slot as usize * self.room;
        let area = self
            .data
            .get_mut(off..off + self.room)
            .ok_or(WcStatus::LocQpOpErr)?;
        if op == WrOp::AtomicWrite && !sq.kernel {
            // librxe's `wr_atomic_write` carries the 8-byte value in the
            // WQE (`dma.atomic_wr`, where inline data would be), with no
            // SGE and `dma.length` 8; C rxe sends it from there.
            if wr.dma_length != 8 {
                return Err(WcStatus::LocLenErr);
            }
            load_inline(w, ring, slot, area)?;
        } else if wr.flags.contains(SendFlags::INLINE) && !op.is_local() {
            // Inline data: `dma_length` bytes where the SGEs would be.
            // Only for an operation that sends them: librxe copies inline
            // data for any opcode, and a READ's would be taken as the
            // SGEs its response lands in (and its `num_sge` unchecked).
            if !op.carries_inline() {
                return Err(WcStatus::LocQpOpErr);
            }
            if wr.dma_length > sq.max_inline {
                return Err(WcStatus::LocLenErr);
            }
            load_inline(w, ring, slot, area)?;
        } else if !op.is_local() {
            w.len = load_sges(&wr, ring, slot, area, sq.max_sge)?;
        }
        check_op_rules(w, sq.qp_type)
    }
}

/// What a send queue allows its WQEs.
struct SqRules {
    qp_type: QpType,
    /// A kernel consumer's QP.
    kernel: bool,
    max_sge: u32,
    max_inline: u32,
}

/// Copies the inline data of `w` (`dma_length` bytes where the SGEs would
/// be) from ring index `slot` into the slot's data `area`.
fn load_inline(
    w: &mut SendWqe,
    ring: &Queue,
    slot: u32,
    area: &mut [u8],
) -> core::result::Result<(), WqeError> {
    let dst = area
        .get_mut(..w.wr.dma_length as usize)
        .ok_or(WcStatus::LocLenErr)?;
    if ring.read_at(slot, raw::SEND_SGE_OFF, dst).is_err() {
        return Err(WcStatus::LocQpOpErr);
    }
    w.inline = true;
    w.len = w.wr.dma_length;
    Ok(())
}

/// Copies the SGE list of `wr` from ring index `slot` into the slot's data
/// `area`; the message length, the sum of its SGEs' lengths.
fn load_sges(
    wr: &SendWr,
    ring: &Queue,
    slot: u32,
    area: &mut [u8],
    max_sge: u32,
) -> core::result::Result<u32, WqeError> {
    if wr.num_sge > max_sge {
        return Err(WcStatus::LocLenErr);
    }
    let n = wr.num_sge as usize * raw::SGE_LEN;
    let dst = area.get_mut(..n).ok_or(WcStatus::LocLenErr)?;
    if ring.read_at(slot, raw::SEND_SGE_OFF, dst).is_err() {
        return Err(WcStatus::LocLenErr);
    }
    let mut len: u64 = 0;
    for i in 0..wr.num_sge as usize {
        let s = raw::decode_sge(area, i).ok_or(WcStatus::LocLenErr)?;
        len += u64::from(s.length);
    }
    if len > u64::from(MAX_MSG) {
        return Err(WcStatus::LocLenErr);
    }
    Ok(len as u32)
}

/// The rules of single operations, on a WQE whose length is known.
fn check_op_rules(w: &SendWqe, qp_type: QpType) -> core::result::Result<(), WqeError> {
    let aligned = w.wr.remote_addr % 8 == 0;
    let ok = match w.op {
        WrOp::CmpSwap | WrOp::FetchAdd => w.len >= 8 && aligned,
        WrOp::AtomicWrite => w.len == 8 && aligned,
        // One packet: the path MTU check is the requester's.
        WrOp::Send | WrOp::SendImm if matches!(qp_type, QpType::Ud | QpType::Gsi) => w.len <= 4096,
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(WcStatus::LocLenErr)
    }
}

/// A receive WQE, copied out of its ring (and never copied again: see
/// `CurrentRecv`).
#[derive(Debug)]
pub(crate) struct RecvWqe {
    pub(crate) wr_id: u64,
    pub(crate) num_sge: u32,
    pub(crate) sges: [Sge; crate::param::MAX_SGE as usize],
    /// Total buffer length.
    pub(crate) len: u32,
}

impl RecvWqe {
    /// Reads the WQE at the consumer index of `ring` (which holds
    /// `max_sge` SGEs per slot) into `self`; `None` if it is malformed
    /// (`self` is then partly written).
    ///
    /// In place, and only the SGEs the WQE has: a message uses one or two
    /// of the 32 slots, and the whole is over 500 bytes.
    fn read(&mut self, ring: &Queue, max_sge: u32) -> Option<()> {
        let mut hdr = [0u8; raw::RECV_WQE_HDR];
        ring.read_at(ring.consumer(), 0, &mut hdr).ok()?;
        let RecvWr { wr_id, num_sge } = raw::decode_recv(&hdr)?;
        // Kept even if the rest is refused: its error completion is the
        // WQE's own.
        self.wr_id = wr_id;
        if num_sge > max_sge || num_sge > crate::param::MAX_SGE {
            return None;
        }
        let mut len: u64 = 0;
        let mut bytes = [0u8; raw::SGE_LEN];
        for i in 0..num_sge as usize {
            ring.read_at(
                ring.consumer(),
                raw::RECV_SGE_OFF + i * raw::SGE_LEN,
                &mut bytes,
            )
            .ok()?;
            let s = raw::decode_sge(&bytes, 0)?;
            len += u64::from(s.length);
            *self.sges.get_mut(i)? = s;
        }
        if len > u64::from(MAX_MSG) {
            return None;
        }
        self.num_sge = num_sge;
        self.len = len as u32;
        Some(())
    }
}

/// The receive WQE the responder is filling, if it holds one. Its storage
/// stays in the engine: a WQE is read into it, never moved in or out.
pub(crate) struct CurrentRecv {
    w: RecvWqe,
    held: bool,
    /// The WQE held was refused when read.
    malformed: bool,
}

impl CurrentRecv {
    pub(crate) fn new() -> Self {
        Self {
            w: RecvWqe {
                wr_id: 0,
                num_sge: 0,
                sges: [Sge::default(); crate::param::MAX_SGE as usize],
                len: 0,
            },
            held: false,
            malformed: false,
        }
    }

    /// Whether the WQE held was refused when read: whatever uses it
    /// completes it in error (C rxe's `RESPST_ERR_MALFORMED_WQE`).
    pub(crate) fn malformed(&self) -> bool {
        self.held && self.malformed
    }

    /// The WQE held.
    pub(crate) fn get(&self) -> Option<&RecvWqe> {
        self.held.then_some(&self.w)
    }

    /// Whether a WQE is held (the current SEND has its buffer).
    pub(crate) fn is_held(&self) -> bool {
        self.held
    }

    /// Takes the WQE at the consumer index of `ring` (the caller then
    /// advances the ring). A malformed WQE is held with no buffer (and its
    /// `wr_id` if its header could be read): it still consumed its slot,
    /// and it completes in error.
    pub(crate) fn load(&mut self, ring: &Queue, max_sge: u32) {
        self.w.wr_id = 0;
        self.malformed = self.w.read(ring, max_sge).is_none();
        if self.malformed {
            self.w.num_sge = 0;
            self.w.len = 0;
        }
        self.held = true;
    }

    /// Lets the WQE go (it completes); its `wr_id`, if one was held.
    pub(crate) fn finish(&mut self) -> Option<u64> {
        core::mem::take(&mut self.held).then_some(self.w.wr_id)
    }
}

/// Why a copy of a send WQE's data failed (see [`Halt`]).
fn halt_of(e: CopyError) -> Halt {
    match e {
        CopyError::Length => Halt::Status(WcStatus::LocLenErr),
        CopyError::Protection | CopyError::NotAttached | CopyError::Revoked => {
            Halt::Status(WcStatus::LocProtErr)
        }
        CopyError::WouldFault => Halt::WouldFault,
    }
}
