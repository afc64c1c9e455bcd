// SPDX-License-Identifier: GPL-2.0

//! Parse and validate a received RoCEv2 packet.
//!
//! One function, [`parse_headers`], does every check. It reads only a
//! linear prefix holding the BTH and extended headers, so the kernel never
//! has to linearise an skb: it pulls [`Opcode::header_len`] bytes (known
//! from the first byte), calls [`parse_headers`], feeds the payload and pad
//! to the returned [`Icrc`] from wherever they lie, and checks the trailer
//! with [`Headers::icrc_matches`]. [`parse`] does exactly that for a
//! contiguous UDP payload, and [`parse_frame`] for a whole IP datagram.
//!
//! Checks, in order:
//! - at least a BTH, and a known opcode (rxe's table);
//! - at least BTH + the opcode's extended headers + ICRC;
//! - transport header version 0; destination QP not 0 (rxe drops QP0
//!   traffic: RoCE has no SMI);
//! - reserved bits zero, if [`ReservedPolicy::Reject`] (IBA lets receivers
//!   ignore them, as rxe does, so the default is to ignore);
//! - the bytes between headers and ICRC are a multiple of 4 and at least
//!   the pad count;
//! - the payload length against the opcode's [`PayloadRule`] and the path
//!   MTU: none for ACKs/read requests/atomics/FLUSH, 8 for ATOMIC WRITE,
//!   exactly one MTU for first and middle packets, 1..=MTU for last ones,
//!   0..=MTU for only ones;
//! - the ICRC (in [`parse`]; by the caller after [`parse_headers`]).
//!
//! Never panics and never reads out of bounds, whatever the input: the
//! crate denies indexing, unchecked arithmetic and unwrap outside tests,
//! and the fuzz target hammers this path.

use super::crc32::Crc32;
use super::hdr::{
    Aeth, AtomicAckEth, AtomicEth, AtomicWritePayload, Bth, Deth, Feth, Ieth, ImmDt, Rdeth, Reth,
    BTH_TVER,
};
use super::icrc::{Icrc, IcrcFlavor, ICRC_LEN};
use super::net::{IpUdp, NetError};
use super::opcode::{Hdr, Opcode, PayloadRule, Position, BTH_LEN};
use super::psn::Psn;

/// An IBA path MTU: 256, 512, 1024, 2048 or 4096 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Mtu(u16);

impl Mtu {
    /// 256 bytes.
    pub const MTU_256: Mtu = Mtu(256);
    /// 512 bytes.
    pub const MTU_512: Mtu = Mtu(512);
    /// 1024 bytes.
    pub const MTU_1024: Mtu = Mtu(1024);
    /// 2048 bytes.
    pub const MTU_2048: Mtu = Mtu(2048);
    /// 4096 bytes.
    pub const MTU_4096: Mtu = Mtu(4096);

    /// The MTU of `bytes`, if it is one of the five IBA MTUs.
    pub const fn new(bytes: u32) -> Option<Self> {
        match bytes {
            256 | 512 | 1024 | 2048 | 4096 => Some(Mtu(bytes as u16)),
            _ => None,
        }
    }

    /// The MTU of an `enum ib_mtu` value (1 = 256 ... 5 = 4096).
    pub const fn from_ib_enum(v: u32) -> Option<Self> {
        match v {
            1 => Some(Self::MTU_256),
            2 => Some(Self::MTU_512),
            3 => Some(Self::MTU_1024),
            4 => Some(Self::MTU_2048),
            5 => Some(Self::MTU_4096),
            _ => None,
        }
    }

    /// The MTU in bytes.
    pub const fn bytes(self) -> usize {
        self.0 as usize
    }
}

/// What to do with reserved header bits that are not zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ReservedPolicy {
    /// Ignore them, as IBA asks of receivers and as rxe does.
    #[default]
    Ignore,
    /// Reject the packet ([`ParseError::ReservedBits`]); for strict
    /// conformance testing. Covers BTH resv6a and resv7, the reserved byte
    /// of RDETH and DETH, and the reserved bits of FETH.
    Reject,
}

/// The limits a packet is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Limits {
    /// The path MTU (RC/UC: the QP's; UD: the port's).
    pub mtu: Mtu,
    /// ICRC flavour (see [`IcrcFlavor`]).
    pub icrc: IcrcFlavor,
    /// Reserved-bits policy.
    pub reserved: ReservedPolicy,
}

impl Limits {
    /// Limits for `mtu`, rxe-compatible ICRC, reserved bits ignored.
    pub const fn new(mtu: Mtu) -> Self {
        Self {
            mtu,
            icrc: IcrcFlavor::Rxe,
            reserved: ReservedPolicy::Ignore,
        }
    }
}

/// Why a packet was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// The outer IP/UDP headers were refused.
    Net(NetError),
    /// Fewer bytes than a BTH.
    NoBth {
        /// UDP payload length.
        len: usize,
    },
    /// The opcode is not in rxe's table.
    UnknownOpcode(u8),
    /// Shorter than BTH + extended headers + ICRC.
    Truncated {
        /// Bytes the opcode needs at least.
        need: usize,
        /// UDP payload length.
        len: usize,
    },
    /// The linear prefix given to [`parse_headers`] does not hold all the
    /// headers: pull `need` bytes and call again.
    PrefixTooShort {
        /// Bytes the prefix must hold.
        need: usize,
    },
    /// Transport header version not 0.
    BadTver(u8),
    /// Destination QP 0.
    Qp0,
    /// A reserved field is not zero (only with [`ReservedPolicy::Reject`]).
    ReservedBits,
    /// The bytes between the headers and the ICRC are not a multiple of 4.
    Misaligned,
    /// The pad count exceeds the bytes between headers and ICRC.
    PadTooLarge,
    /// A payload where the opcode allows none.
    UnexpectedPayload,
    /// A first or middle packet whose payload is not exactly one MTU.
    NotFullMtu,
    /// A payload longer than the MTU.
    PayloadTooLong,
    /// A last packet without payload.
    EmptyLast,
    /// An ATOMIC WRITE whose payload is not 8 bytes.
    BadAtomicWriteLen,
    /// The ICRC does not match.
    BadIcrc,
}

impl From<NetError> for ParseError {
    fn from(e: NetError) -> Self {
        ParseError::Net(e)
    }
}

/// What [`parse_headers`] found of an accepted packet, in one word that
/// travels with the packet through its queues: with the packet's first
/// bytes, its headers again ([`Headers::at`]) without a second parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    opcode: Opcode,
    pad: u8,
    payload_len: u16,
}

impl Found {
    /// Set in every word a `Found` packs to, so that a zeroed word (a
    /// buffer no parse went over) is none.
    const VALID: u32 = 1 << 31;

    /// The opcode.
    pub fn opcode(self) -> Opcode {
        self.opcode
    }

    /// Packs into a word: opcode, pad, payload length and a valid bit.
    pub fn to_word(self) -> u32 {
        u32::from(self.opcode.as_u8())
            | u32::from(self.pad & 3) << 8
            | u32::from(self.payload_len) << 10
            | Self::VALID
    }

    /// Unpacks a word of [`Found::to_word`]; `None` for any other word
    /// (no valid bit, a reserved bit set, an opcode rxe does not know or
    /// a payload over one MTU).
    pub fn from_word(w: u32) -> Option<Self> {
        if w & Self::VALID == 0 || w & !(Self::VALID | 0x7f_ffff) != 0 {
            return None;
        }
        let opcode = Opcode::from_u8(w.to_le_bytes()[0])?;
        let payload_len = u16::try_from(w >> 10 & 0x1fff).ok()?;
        if usize::from(payload_len) > Mtu::MTU_4096.bytes() {
            return None;
        }
        Some(Self {
            opcode,
            pad: (w >> 8 & 3) as u8,
            payload_len,
        })
    }
}

/// The validated headers of a packet, and where its payload lies.
///
/// Offsets are from the start of the UDP payload (the BTH).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Headers<'a> {
    opcode: Opcode,
    /// BTH through the last extended header.
    hdr: &'a [u8],
    pad: u8,
    payload_len: usize,
    icrc_offset: usize,
}

impl<'a> Headers<'a> {
    /// What the checks found of this packet, to keep with it
    /// ([`Found`]).
    pub fn found(&self) -> Found {
        Found {
            opcode: self.opcode,
            pad: self.pad,
            // At most one MTU (4096; `measure_payload`): it fits.
            payload_len: u16::try_from(self.payload_len).unwrap_or(u16::MAX),
        }
    }

    /// The headers of a packet that [`parse_headers`] (or [`parse`])
    /// accepted, seen again from its UDP payload's first bytes, `prefix`
    /// (at least the headers; the payload may be elsewhere), and what the
    /// checks found, `f` ([`Headers::found`]): no parse, no check and no
    /// ICRC. `None` if `prefix` does not hold the headers. The same
    /// headers as the parse gave (tests/parse.rs).
    pub fn at(prefix: &'a [u8], f: Found) -> Option<Self> {
        let hdr = prefix.get(..f.opcode.header_len())?;
        let payload_len = usize::from(f.payload_len);
        let icrc_offset = hdr
            .len()
            .checked_add(payload_len)?
            .checked_add(usize::from(f.pad))?;
        Some(Headers {
            opcode: f.opcode,
            hdr,
            pad: f.pad,
            payload_len,
            icrc_offset,
        })
    }

    /// The opcode.
    pub fn opcode(&self) -> Opcode {
        self.opcode
    }

    /// The BTH and extended headers' bytes.
    pub fn header_bytes(&self) -> &'a [u8] {
        self.hdr
    }

    /// The BTH.
    pub fn bth(&self) -> Bth<&'a [u8]> {
        Bth::wrap(self.hdr)
    }

    /// The PSN.
    pub fn psn(&self) -> Psn {
        self.bth().psn()
    }

    /// The destination QP.
    pub fn dest_qpn(&self) -> u32 {
        self.bth().dest_qpn()
    }

    /// The AckReq bit.
    pub fn ack_req(&self) -> bool {
        self.bth().ack_req()
    }

    /// The Solicited Event bit.
    pub fn se(&self) -> bool {
        self.bth().se()
    }

    /// The partition key.
    pub fn pkey(&self) -> u16 {
        self.bth().pkey()
    }

    /// First, middle, last or only.
    pub fn position(&self) -> Position {
        self.opcode.position()
    }

    fn ext(&self, h: Hdr) -> Option<&'a [u8]> {
        let off = self.opcode.offset(h)?;
        self.hdr.get(off..off.checked_add(h.size())?)
    }

    /// The RDETH, if the opcode has one.
    pub fn rdeth(&self) -> Option<Rdeth<&'a [u8]>> {
        self.ext(Hdr::Rdeth).map(Rdeth::wrap)
    }

    /// The DETH, if the opcode has one.
    pub fn deth(&self) -> Option<Deth<&'a [u8]>> {
        self.ext(Hdr::Deth).map(Deth::wrap)
    }

    /// The FETH, if the opcode has one.
    pub fn feth(&self) -> Option<Feth<&'a [u8]>> {
        self.ext(Hdr::Feth).map(Feth::wrap)
    }

    /// The RETH, if the opcode has one.
    pub fn reth(&self) -> Option<Reth<&'a [u8]>> {
        self.ext(Hdr::Reth).map(Reth::wrap)
    }

    /// The AtomicETH, if the opcode has one.
    pub fn atomic_eth(&self) -> Option<AtomicEth<&'a [u8]>> {
        self.ext(Hdr::AtomicEth).map(AtomicEth::wrap)
    }

    /// The AETH, if the opcode has one.
    pub fn aeth(&self) -> Option<Aeth<&'a [u8]>> {
        self.ext(Hdr::Aeth).map(Aeth::wrap)
    }

    /// The AtomicAckETH, if the opcode has one.
    pub fn atomic_ack_eth(&self) -> Option<AtomicAckEth<&'a [u8]>> {
        self.ext(Hdr::AtomicAckEth).map(AtomicAckEth::wrap)
    }

    /// The immediate data header, if the opcode has one.
    pub fn immdt(&self) -> Option<ImmDt<&'a [u8]>> {
        self.ext(Hdr::ImmDt).map(ImmDt::wrap)
    }

    /// The IETH, if the opcode has one.
    pub fn ieth(&self) -> Option<Ieth<&'a [u8]>> {
        self.ext(Hdr::Ieth).map(Ieth::wrap)
    }

    /// Offset of the payload (= the header length).
    pub fn payload_offset(&self) -> usize {
        self.hdr.len()
    }

    /// Payload bytes, without pad.
    pub fn payload_len(&self) -> usize {
        self.payload_len
    }

    /// The pad count (0..=3).
    pub fn pad(&self) -> u8 {
        self.pad
    }

    /// Offset of the ICRC trailer (= UDP payload length - 4).
    pub fn icrc_offset(&self) -> usize {
        self.icrc_offset
    }

    /// The UDP payload length (BTH through ICRC; rxe's `paylen`).
    pub fn udp_payload_len(&self) -> usize {
        self.icrc_offset.saturating_add(ICRC_LEN)
    }

    /// The bytes the caller still has to feed to the ICRC returned by
    /// [`parse_headers`]: from [`Headers::payload_offset`] up to
    /// [`Headers::icrc_offset`] (payload and pad).
    pub fn icrc_remaining(&self) -> core::ops::Range<usize> {
        self.payload_offset()..self.icrc_offset
    }

    /// Completes an ICRC check: `icrc` has been fed the payload and pad,
    /// `trailer` holds the 4 bytes at [`Headers::icrc_offset`].
    pub fn icrc_matches<C: Crc32 + ?Sized>(&self, icrc: &Icrc<'_, C>, trailer: &[u8]) -> bool {
        icrc.matches(trailer)
    }
}

/// A validated packet with a contiguous payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    headers: Headers<'a>,
    payload: &'a [u8],
}

impl<'a> Packet<'a> {
    /// The headers.
    pub fn headers(&self) -> &Headers<'a> {
        &self.headers
    }

    /// The opcode.
    pub fn opcode(&self) -> Opcode {
        self.headers.opcode
    }

    /// The PSN.
    pub fn psn(&self) -> Psn {
        self.headers.psn()
    }

    /// The destination QP.
    pub fn dest_qpn(&self) -> u32 {
        self.headers.dest_qpn()
    }

    /// The payload, without pad.
    pub fn payload(&self) -> &'a [u8] {
        self.payload
    }

    /// The 8-byte value of an ATOMIC WRITE, if this is one.
    pub fn atomic_write_value(&self) -> Option<AtomicWritePayload<&'a [u8]>> {
        if self.opcode().is_atomic_write() {
            AtomicWritePayload::new(self.payload).ok()
        } else {
            None
        }
    }
}

/// A validated IP datagram: outer headers and packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<'a> {
    /// The IP and UDP headers.
    pub net: IpUdp<'a>,
    /// The RoCE packet.
    pub packet: Packet<'a>,
}

fn reserved_clear(op: Opcode, hdr: &[u8]) -> bool {
    let h = Headers {
        opcode: op,
        hdr,
        pad: 0,
        payload_len: 0,
        icrc_offset: 0,
    };
    let bth = h.bth();
    bth.resv6a() == 0
        && bth.resv7() == 0
        && h.rdeth().is_none_or(|r| r.resv8() == 0)
        && h.deth().is_none_or(|d| d.resv8() == 0)
        && h.feth().is_none_or(|f| f.resv() == 0)
}

/// Validates a packet's headers from a linear prefix and starts its ICRC.
///
/// `net` are the packet's IP and UDP headers, `prefix` the first bytes of
/// its UDP payload (at least [`Opcode::header_len`] of its opcode; all of it
/// is fine; bytes past `udp_payload_len` are ignored), `udp_payload_len`
/// the length of the whole UDP payload (BTH through ICRC). On success the
/// returned [`Icrc`] has covered IP, UDP and all headers; feed it the
/// bytes [`Headers::icrc_remaining`] (payload and pad), then check the
/// trailer at [`Headers::icrc_offset`] with [`Headers::icrc_matches`].
/// Every other check has been done.
pub fn parse_headers<'a, 'c, C: Crc32 + ?Sized>(
    net: &IpUdp<'_>,
    prefix: &'a [u8],
    udp_payload_len: usize,
    limits: &Limits,
    crc: &'c C,
) -> Result<(Headers<'a>, Icrc<'c, C>), ParseError> {
    let (opcode, hdr) = split_headers(prefix, udp_payload_len)?;
    check_bth(opcode, hdr, limits.reserved)?;
    let headers = measure_payload(opcode, hdr, udp_payload_len, limits.mtu)?;
    let icrc = start_icrc(&headers, net, limits.icrc, crc)?;
    Ok((headers, icrc))
}

/// The opcode and the headers (BTH through the last extended header) of
/// a UDP payload of `udp_payload_len` bytes that starts with `prefix`, if
/// it is long enough for them and an ICRC.
fn split_headers(prefix: &[u8], udp_payload_len: usize) -> Result<(Opcode, &[u8]), ParseError> {
    // Bytes past the UDP payload (e.g. untrimmed padding) are not ours.
    let prefix = prefix.get(..udp_payload_len).unwrap_or(prefix);
    if udp_payload_len < BTH_LEN {
        return Err(ParseError::NoBth {
            len: udp_payload_len,
        });
    }
    let first = *prefix
        .first()
        .ok_or(ParseError::PrefixTooShort { need: BTH_LEN })?;
    let opcode = Opcode::from_u8(first).ok_or(ParseError::UnknownOpcode(first))?;
    let hdr_len = opcode.header_len();
    let need = hdr_len.saturating_add(ICRC_LEN);
    if udp_payload_len < need {
        return Err(ParseError::Truncated {
            need,
            len: udp_payload_len,
        });
    }
    let hdr = prefix
        .get(..hdr_len)
        .ok_or(ParseError::PrefixTooShort { need: hdr_len })?;
    Ok((opcode, hdr))
}

/// Checks the BTH's version and destination QP, and with
/// [`ReservedPolicy::Reject`] the reserved fields of `hdr`.
fn check_bth(opcode: Opcode, hdr: &[u8], reserved: ReservedPolicy) -> Result<(), ParseError> {
    let bth = Bth::wrap(hdr);
    if bth.tver() != BTH_TVER {
        return Err(ParseError::BadTver(bth.tver()));
    }
    if bth.dest_qpn() == 0 {
        return Err(ParseError::Qp0);
    }
    if reserved == ReservedPolicy::Reject && !reserved_clear(opcode, hdr) {
        return Err(ParseError::ReservedBits);
    }
    Ok(())
}

/// The headers with the payload that follows them in a UDP payload of
/// `udp_payload_len` bytes, if its length, pad and size fit the opcode's
/// [`PayloadRule`] and `mtu`.
fn measure_payload(
    opcode: Opcode,
    hdr: &[u8],
    udp_payload_len: usize,
    mtu: Mtu,
) -> Result<Headers<'_>, ParseError> {
    // Bytes between the headers and the ICRC: payload and pad.
    let icrc_offset = udp_payload_len.saturating_sub(ICRC_LEN);
    let region = icrc_offset.saturating_sub(hdr.len());
    if region % 4 != 0 {
        return Err(ParseError::Misaligned);
    }
    let pad = Bth::wrap(hdr).pad();
    let payload_len = region
        .checked_sub(usize::from(pad))
        .ok_or(ParseError::PadTooLarge)?;
    let mtu = mtu.bytes();
    match opcode.payload_rule() {
        PayloadRule::None if region != 0 => return Err(ParseError::UnexpectedPayload),
        PayloadRule::Exactly(n) if region != n || payload_len != n => {
            return Err(ParseError::BadAtomicWriteLen)
        }
        PayloadRule::FullMtu if payload_len != mtu => return Err(ParseError::NotFullMtu),
        PayloadRule::OneToMtu if payload_len == 0 => return Err(ParseError::EmptyLast),
        PayloadRule::OneToMtu | PayloadRule::UpToMtu if payload_len > mtu => {
            return Err(ParseError::PayloadTooLong)
        }
        _ => {}
    }
    Ok(Headers {
        opcode,
        hdr,
        pad,
        payload_len,
        icrc_offset,
    })
}

/// An ICRC over the IP and UDP headers `net` and the packet's headers, in
/// `flavor`.
fn start_icrc<'c, C: Crc32 + ?Sized>(
    h: &Headers<'_>,
    net: &IpUdp<'_>,
    flavor: IcrcFlavor,
    crc: &'c C,
) -> Result<Icrc<'c, C>, ParseError> {
    let bth_bytes: &[u8; BTH_LEN] = h
        .hdr
        .first_chunk()
        .ok_or(ParseError::PrefixTooShort { need: BTH_LEN })?;
    let mut icrc = Icrc::new(crc, net, bth_bytes);
    icrc.update(h.hdr.get(BTH_LEN..).unwrap_or(&[]));
    if flavor.repeats_headers(h.opcode) {
        // rxe: the region is empty for these opcodes (no payload allowed),
        // so its "payload" is exactly the headers again.
        icrc.update(h.hdr);
    }
    Ok(icrc)
}

/// Validates a packet whose UDP payload (BTH through ICRC) is contiguous,
/// including its ICRC. `net` are its IP and UDP headers.
pub fn parse<'a, C: Crc32 + ?Sized>(
    net: &IpUdp<'_>,
    udp_payload: &'a [u8],
    limits: &Limits,
    crc: &C,
) -> Result<Packet<'a>, ParseError> {
    let (headers, mut icrc) = parse_headers(net, udp_payload, udp_payload.len(), limits, crc)?;
    let rest = udp_payload
        .get(headers.icrc_remaining())
        .ok_or(ParseError::BadIcrc)?;
    let trailer = udp_payload
        .get(headers.icrc_offset()..)
        .ok_or(ParseError::BadIcrc)?;
    icrc.update(rest);
    if !headers.icrc_matches(&icrc, trailer) {
        return Err(ParseError::BadIcrc);
    }
    let payload = rest
        .get(..headers.payload_len())
        .ok_or(ParseError::BadIcrc)?;
    Ok(Packet { headers, payload })
}

/// Validates a whole IP datagram carrying RoCEv2: the outer headers (see
/// [`IpUdp::split_frame`]), then the packet as [`parse`] does.
pub fn parse_frame<'a, C: Crc32 + ?Sized>(
    frame: &'a [u8],
    limits: &Limits,
    crc: &C,
) -> Result<Frame<'a>, ParseError> {
    let (net, udp_payload) = IpUdp::split_frame(frame)?;
    let packet = parse(&net, udp_payload, limits, crc)?;
    Ok(Frame { net, packet })
}
