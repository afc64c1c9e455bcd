// SPDX-License-Identifier: GPL-2.0

//! Build outgoing packets: headers for any opcode, pad, and the ICRC.
//!
//! A [`TxSpec`] says what goes into the BTH and which extended header
//! fields ([`Ext`]) the opcode needs; [`write_headers`] checks it against
//! the opcode table and writes BTH and extended headers into the caller's
//! buffer, returning the packet's [`Layout`]. The payload may then be put
//! anywhere (the same buffer, skb fragments, pages): [`Layout::start_icrc`]
//! starts the ICRC over the headers and the caller feeds the payload and
//! pad before writing [`super::icrc::Icrc::trailer`]. [`build`] does all of
//! it into one contiguous buffer.

use super::aeth::Syndrome;
use super::crc32::Crc32;
use super::hdr::{
    Aeth, AtomicAckEth, AtomicEth, Bth, Deth, Feth, Ieth, ImmDt, Rdeth, Reth, DEFAULT_PKEY,
};
use super::icrc::{Icrc, IcrcFlavor, ICRC_LEN};
use super::net::{IpUdp, UDP_LEN};
use super::opcode::{Hdr, Opcode, PayloadRule, BTH_LEN};
use super::psn::{Msn, Psn};

/// Why a packet could not be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuildError {
    /// The buffer is too small.
    BufferTooSmall {
        /// Bytes needed.
        need: usize,
        /// Bytes available.
        have: usize,
    },
    /// The opcode needs this header and the spec does not give it.
    MissingHeader(Hdr),
    /// The spec gives this header and the opcode has none.
    UnexpectedHeader(Hdr),
    /// The opcode carries no payload but a length was given.
    PayloadNotAllowed,
    /// ATOMIC WRITE needs exactly 8 payload bytes.
    BadAtomicWriteLen,
    /// The packet would not fit in a UDP datagram.
    TooLong,
    /// The payload slice is not `payload_len` bytes long.
    PayloadLenMismatch,
}

/// RETH fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RethFields {
    /// Virtual address.
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// DMA length.
    pub len: u32,
}

/// DETH fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DethFields {
    /// Queue key.
    pub qkey: u32,
    /// Source QP number.
    pub src_qpn: u32,
}

/// FETH fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FethFields {
    /// Placement type (4 bits).
    pub plt: u8,
    /// Selectivity level (2 bits).
    pub sel: u8,
}

/// AtomicETH fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AtomicEthFields {
    /// Virtual address.
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// Swap or add data.
    pub swap_add: u64,
    /// Compare data.
    pub comp: u64,
}

/// AETH fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AethFields {
    /// Syndrome.
    pub syndrome: Syndrome,
    /// Message sequence number.
    pub msn: Msn,
}

/// The extended header fields of a packet: exactly the headers its opcode
/// has must be `Some`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Ext {
    /// RDETH: the EE context.
    pub rdeth: Option<u32>,
    /// DETH.
    pub deth: Option<DethFields>,
    /// FETH.
    pub feth: Option<FethFields>,
    /// RETH.
    pub reth: Option<RethFields>,
    /// AtomicETH.
    pub atomic_eth: Option<AtomicEthFields>,
    /// AETH.
    pub aeth: Option<AethFields>,
    /// AtomicAckETH: the original value.
    pub atomic_ack: Option<u64>,
    /// Immediate data, in wire order.
    pub imm: Option<[u8; 4]>,
    /// IETH: the R_Key to invalidate.
    pub ieth: Option<u32>,
}

impl Ext {
    /// The header `h` is given.
    pub const fn has(&self, h: Hdr) -> bool {
        match h {
            Hdr::Rdeth => self.rdeth.is_some(),
            Hdr::Deth => self.deth.is_some(),
            Hdr::Feth => self.feth.is_some(),
            Hdr::Reth => self.reth.is_some(),
            Hdr::AtomicEth => self.atomic_eth.is_some(),
            Hdr::Aeth => self.aeth.is_some(),
            Hdr::AtomicAckEth => self.atomic_ack.is_some(),
            Hdr::ImmDt => self.imm.is_some(),
            Hdr::Ieth => self.ieth.is_some(),
        }
    }
}

/// What to put in a packet's headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxSpec {
    /// The opcode.
    pub opcode: Opcode,
    /// Solicited Event.
    pub se: bool,
    /// MigReq.
    pub mig: bool,
    /// Partition key.
    pub pkey: u16,
    /// Destination QP.
    pub dest_qpn: u32,
    /// AckReq.
    pub ack_req: bool,
    /// PSN.
    pub psn: Psn,
    /// Payload bytes (without pad).
    pub payload_len: usize,
    /// Extended header fields.
    pub ext: Ext,
}

impl TxSpec {
    /// A spec with the default P_Key, SE and MigReq clear, AckReq as
    /// [`Opcode::requires_ack`], and no extended headers yet.
    pub const fn new(opcode: Opcode, dest_qpn: u32, psn: Psn, payload_len: usize) -> Self {
        Self {
            opcode,
            se: false,
            mig: false,
            pkey: DEFAULT_PKEY,
            dest_qpn,
            ack_req: opcode.requires_ack(),
            psn,
            payload_len,
            ext: Ext {
                rdeth: None,
                deth: None,
                feth: None,
                reth: None,
                atomic_eth: None,
                aeth: None,
                atomic_ack: None,
                imm: None,
                ieth: None,
            },
        }
    }
}

/// The byte layout of a packet's UDP payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    opcode: Opcode,
    payload_len: usize,
    pad: u8,
}

/// The largest UDP payload: what a 16-bit UDP length allows.
pub const MAX_UDP_PAYLOAD: usize = 65535 - UDP_LEN;

impl Layout {
    /// The layout of an `opcode` packet with `payload_len` payload bytes.
    /// Checks the opcode's payload rule as far as it does not depend on the
    /// MTU (none, or exactly 8 for ATOMIC WRITE) and the UDP size limit.
    pub fn new(opcode: Opcode, payload_len: usize) -> Result<Self, BuildError> {
        match opcode.payload_rule() {
            PayloadRule::None if payload_len != 0 => return Err(BuildError::PayloadNotAllowed),
            PayloadRule::Exactly(n) if payload_len != n => {
                return Err(BuildError::BadAtomicWriteLen)
            }
            _ => {}
        }
        let pad = (payload_len.wrapping_neg() & 3) as u8;
        let total = opcode
            .header_len()
            .checked_add(payload_len)
            .and_then(|n| n.checked_add(usize::from(pad)))
            .and_then(|n| n.checked_add(ICRC_LEN))
            .ok_or(BuildError::TooLong)?;
        if total > MAX_UDP_PAYLOAD {
            return Err(BuildError::TooLong);
        }
        Ok(Self {
            opcode,
            payload_len,
            pad,
        })
    }

    /// The opcode.
    pub fn opcode(&self) -> Opcode {
        self.opcode
    }

    /// BTH plus extended headers.
    pub fn header_len(&self) -> usize {
        self.opcode.header_len()
    }

    /// Where the payload starts (= [`Layout::header_len`]).
    pub fn payload_offset(&self) -> usize {
        self.header_len()
    }

    /// Payload bytes.
    pub fn payload_len(&self) -> usize {
        self.payload_len
    }

    /// Pad bytes (0..=3), zeros after the payload.
    pub fn pad(&self) -> u8 {
        self.pad
    }

    /// Where the ICRC goes.
    pub fn icrc_offset(&self) -> usize {
        // Cannot overflow: `new` checked the total against 64 KiB.
        self.header_len()
            .saturating_add(self.payload_len)
            .saturating_add(usize::from(self.pad))
    }

    /// The whole UDP payload: headers, payload, pad, ICRC (rxe's `paylen`).
    pub fn udp_payload_len(&self) -> usize {
        self.icrc_offset().saturating_add(ICRC_LEN)
    }

    /// Starts the ICRC over IP, UDP and the headers in `hdr` (at least
    /// [`Layout::header_len`] bytes, as written by [`write_headers`]). Feed
    /// it the payload, then [`Icrc::update_zeros`] with the pad, then send
    /// [`Icrc::trailer`]. `None` if `hdr` is too short.
    pub fn start_icrc<'c, C: Crc32 + ?Sized>(
        &self,
        crc: &'c C,
        net: &IpUdp<'_>,
        hdr: &[u8],
        flavor: IcrcFlavor,
    ) -> Option<Icrc<'c, C>> {
        let hdr = hdr.get(..self.header_len())?;
        let mut icrc = Icrc::new(crc, net, hdr.first_chunk()?);
        icrc.update(hdr.get(BTH_LEN..)?);
        if flavor.repeats_headers(self.opcode) {
            icrc.update(hdr);
        }
        Some(icrc)
    }
}

/// The bytes of header `h` of `op` within `hdr` (empty if absent).
fn slot(hdr: &mut [u8], op: Opcode, h: Hdr) -> &mut [u8] {
    let off = op.offset(h).unwrap_or(0);
    match hdr.get_mut(off..off.saturating_add(h.size())) {
        Some(s) => s,
        None => &mut [],
    }
}

/// Writes BTH and extended headers for `spec` into the start of `buf`
/// (which must hold at least the header length) and returns the layout.
/// Reserved fields are written as zero; the transport version is 0.
pub fn write_headers(buf: &mut [u8], spec: &TxSpec) -> Result<Layout, BuildError> {
    let op = spec.opcode;
    for h in Hdr::ALL {
        match (op.has(h), spec.ext.has(h)) {
            (true, false) => return Err(BuildError::MissingHeader(h)),
            (false, true) => return Err(BuildError::UnexpectedHeader(h)),
            _ => {}
        }
    }
    let layout = Layout::new(op, spec.payload_len)?;
    let have = buf.len();
    let hdr = buf
        .get_mut(..layout.header_len())
        .ok_or(BuildError::BufferTooSmall {
            need: layout.header_len(),
            have,
        })?;
    hdr.fill(0);

    let mut bth = Bth::wrap(&mut *hdr);
    bth.set_opcode(op.as_u8());
    bth.set_se(spec.se);
    bth.set_mig(spec.mig);
    bth.set_pad(layout.pad);
    bth.set_pkey(spec.pkey);
    bth.set_dest_qpn(spec.dest_qpn);
    bth.set_ack_req(spec.ack_req);
    bth.set_psn(spec.psn);

    let e = &spec.ext;
    if let Some(een) = e.rdeth {
        Rdeth::wrap(slot(hdr, op, Hdr::Rdeth)).set_een(een);
    }
    if let Some(d) = e.deth {
        let mut v = Deth::wrap(slot(hdr, op, Hdr::Deth));
        v.set_qkey(d.qkey);
        v.set_src_qpn(d.src_qpn);
    }
    if let Some(f) = e.feth {
        let mut v = Feth::wrap(slot(hdr, op, Hdr::Feth));
        v.set_plt(f.plt);
        v.set_sel(f.sel);
    }
    if let Some(r) = e.reth {
        let mut v = Reth::wrap(slot(hdr, op, Hdr::Reth));
        v.set_va(r.va);
        v.set_rkey(r.rkey);
        v.set_dma_len(r.len);
    }
    if let Some(a) = e.atomic_eth {
        let mut v = AtomicEth::wrap(slot(hdr, op, Hdr::AtomicEth));
        v.set_va(a.va);
        v.set_rkey(a.rkey);
        v.set_swap_add(a.swap_add);
        v.set_comp(a.comp);
    }
    if let Some(a) = e.aeth {
        let mut v = Aeth::wrap(slot(hdr, op, Hdr::Aeth));
        v.set_syndrome(a.syndrome);
        v.set_msn(a.msn);
    }
    if let Some(o) = e.atomic_ack {
        AtomicAckEth::wrap(slot(hdr, op, Hdr::AtomicAckEth)).set_orig(o);
    }
    if let Some(i) = e.imm {
        ImmDt::wrap(slot(hdr, op, Hdr::ImmDt)).set_imm_bytes(i);
    }
    if let Some(k) = e.ieth {
        Ieth::wrap(slot(hdr, op, Hdr::Ieth)).set_rkey(k);
    }
    Ok(layout)
}

/// Builds a whole UDP payload into `buf`: headers, `payload` (which must be
/// `spec.payload_len` bytes), zero pad, and the ICRC computed over `net`
/// (the packet's IP and UDP headers, already final). Returns the number of
/// bytes written (the UDP payload length).
pub fn build<C: Crc32 + ?Sized>(
    buf: &mut [u8],
    spec: &TxSpec,
    payload: &[u8],
    net: &IpUdp<'_>,
    crc: &C,
    flavor: IcrcFlavor,
) -> Result<usize, BuildError> {
    if payload.len() != spec.payload_len {
        return Err(BuildError::PayloadLenMismatch);
    }
    let layout = Layout::new(spec.opcode, spec.payload_len)?;
    let need = layout.udp_payload_len();
    let have = buf.len();
    let out = buf
        .get_mut(..need)
        .ok_or(BuildError::BufferTooSmall { need, have })?;
    write_headers(out, spec)?;
    let (hdr, rest) = out
        .split_at_mut_checked(layout.header_len())
        .ok_or(BuildError::BufferTooSmall { need, have })?;
    let (body, trailer) = rest
        .split_at_mut_checked(rest.len().saturating_sub(ICRC_LEN))
        .ok_or(BuildError::BufferTooSmall { need, have })?;
    let (pl, pad) = body
        .split_at_mut_checked(payload.len())
        .ok_or(BuildError::BufferTooSmall { need, have })?;
    // Equal lengths by construction; a zip keeps even the impossible
    // length-mismatch panic of copy_from_slice out (LLVM emits a memcpy).
    for (d, s) in pl.iter_mut().zip(payload) {
        *d = *s;
    }
    pad.fill(0);
    let mut icrc = layout
        .start_icrc(crc, net, hdr, flavor)
        .ok_or(BuildError::BufferTooSmall { need, have })?;
    icrc.update(body);
    for (d, s) in trailer.iter_mut().zip(icrc.trailer()) {
        *d = s;
    }
    Ok(need)
}
