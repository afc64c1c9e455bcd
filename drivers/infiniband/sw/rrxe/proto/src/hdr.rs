// SPDX-License-Identifier: GPL-2.0

//! Zero-copy views over the IBA transport headers RoCEv2 carries after UDP.
//!
//! Layouts follow IBA vol. 1 ch. 9 and the C driver's `rxe_hdr.h`; all
//! multi-byte fields are big-endian (see [`super::be`]). Sizes: BTH 12,
//! RDETH 4, DETH 8, RETH 16, AtomicETH 28, AETH 4, AtomicAckETH 8, ImmDt 4,
//! IETH 4, FETH 4. An ATOMIC WRITE request carries a RETH and an 8-byte
//! payload (the value to write; see [`AtomicWritePayload`]); it has no
//! extended header of its own.
//!
//! Every view is `View<T>` over a buffer `T`; getters need
//! `T: AsRef<[u8]>`, setters `T: AsMut<[u8]>`. Which headers a packet has,
//! and where, is the business of [`super::opcode`].

use super::aeth::Syndrome;
use super::be;
use super::psn::{Msn, Psn};

/// A buffer was shorter than the header it should hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooShort {
    /// Bytes the header needs.
    pub need: usize,
    /// Bytes the buffer has.
    pub have: usize,
}

/// Mask of the 24-bit QP number fields (BTH DestQP, DETH SrcQP).
pub const QPN_MASK: u32 = 0x00ff_ffff;
/// The multicast QPN (IBA: 0xFFFFFF).
pub const MULTICAST_QPN: u32 = 0x00ff_ffff;
/// The default (full member) partition key, the only one rxe uses.
pub const DEFAULT_PKEY: u16 = 0xffff;
/// The Q_Key of the GSI QP (QP1).
pub const GSI_QKEY: u32 = 0x8001_0000;
/// The one transport header version IBA defines.
pub const BTH_TVER: u8 = 0;

header_view!(
    /// Base Transport Header (12 bytes).
    ///
    /// ```text
    /// byte 0     OpCode
    /// byte 1     SE(7) M(6) PadCnt(5:4) TVer(3:0)
    /// bytes 2-3  P_Key
    /// byte 4     FECN(7) BECN(6) Resv6a(5:0)   (the byte ICRC masks: resv8a)
    /// bytes 5-7  DestQP
    /// byte 8     AckReq(7) Resv7(6:0)
    /// bytes 9-11 PSN
    /// ```
    Bth,
    12
);

const BTH_SE: u8 = 0x80;
const BTH_MIG: u8 = 0x40;
const BTH_PAD: u8 = 0x30;
const BTH_TVER_MASK: u8 = 0x0f;
const BTH_FECN: u32 = 0x8000_0000;
const BTH_BECN: u32 = 0x4000_0000;
const BTH_RESV6A: u32 = 0x3f00_0000;
const BTH_ACK: u32 = 0x8000_0000;
const BTH_RESV7: u32 = 0x7f00_0000;
const BTH_PSN: u32 = 0x00ff_ffff;

impl<T: AsRef<[u8]>> Bth<T> {
    /// The raw opcode byte (see [`super::opcode::Opcode::from_u8`]).
    pub fn opcode(&self) -> u8 {
        be::u8_at(self.b(), 0)
    }
    /// Solicited Event.
    pub fn se(&self) -> bool {
        be::u8_at(self.b(), 1) & BTH_SE != 0
    }
    /// MigReq.
    pub fn mig(&self) -> bool {
        be::u8_at(self.b(), 1) & BTH_MIG != 0
    }
    /// Pad count: bytes (0..=3) after the payload that round it to 4.
    pub fn pad(&self) -> u8 {
        be::bits8_at(self.b(), 1, BTH_PAD)
    }
    /// Transport header version (must be 0).
    pub fn tver(&self) -> u8 {
        be::bits8_at(self.b(), 1, BTH_TVER_MASK)
    }
    /// Partition key.
    pub fn pkey(&self) -> u16 {
        be::u16_at(self.b(), 2)
    }
    /// Forward ECN bit (RoCEv2 uses the IP ECN field instead; kept for IB).
    pub fn fecn(&self) -> bool {
        be::u32_at(self.b(), 4) & BTH_FECN != 0
    }
    /// Backward ECN bit.
    pub fn becn(&self) -> bool {
        be::u32_at(self.b(), 4) & BTH_BECN != 0
    }
    /// The 6 reserved bits next to FECN/BECN.
    pub fn resv6a(&self) -> u8 {
        be::bits32_at(self.b(), 4, BTH_RESV6A) as u8
    }
    /// Destination QP number (24 bits).
    pub fn dest_qpn(&self) -> u32 {
        be::u32_at(self.b(), 4) & QPN_MASK
    }
    /// AckReq: the requester asks for an acknowledge.
    pub fn ack_req(&self) -> bool {
        be::u32_at(self.b(), 8) & BTH_ACK != 0
    }
    /// The 7 reserved bits after AckReq.
    pub fn resv7(&self) -> u8 {
        be::bits32_at(self.b(), 8, BTH_RESV7) as u8
    }
    /// Packet sequence number.
    pub fn psn(&self) -> Psn {
        Psn::new(be::u32_at(self.b(), 8) & BTH_PSN)
    }
}

impl<T: AsMut<[u8]> + AsRef<[u8]>> Bth<T> {
    /// Sets the opcode byte.
    pub fn set_opcode(&mut self, op: u8) {
        be::set_u8(self.bm(), 0, op);
    }
    /// Sets Solicited Event.
    pub fn set_se(&mut self, v: bool) {
        be::set_bits8(self.bm(), 1, BTH_SE, u8::from(v));
    }
    /// Sets MigReq.
    pub fn set_mig(&mut self, v: bool) {
        be::set_bits8(self.bm(), 1, BTH_MIG, u8::from(v));
    }
    /// Sets the pad count (only the low 2 bits of `pad` are kept).
    pub fn set_pad(&mut self, pad: u8) {
        be::set_bits8(self.bm(), 1, BTH_PAD, pad);
    }
    /// Sets the transport header version (low 4 bits).
    pub fn set_tver(&mut self, v: u8) {
        be::set_bits8(self.bm(), 1, BTH_TVER_MASK, v);
    }
    /// Sets the partition key.
    pub fn set_pkey(&mut self, v: u16) {
        be::set_u16(self.bm(), 2, v);
    }
    /// Sets FECN.
    pub fn set_fecn(&mut self, v: bool) {
        be::set_bits32(self.bm(), 4, BTH_FECN, u32::from(v));
    }
    /// Sets BECN.
    pub fn set_becn(&mut self, v: bool) {
        be::set_bits32(self.bm(), 4, BTH_BECN, u32::from(v));
    }
    /// Sets the 6 reserved bits of byte 4 (low 6 bits of `v`).
    pub fn set_resv6a(&mut self, v: u8) {
        be::set_bits32(self.bm(), 4, BTH_RESV6A, u32::from(v));
    }
    /// Sets the destination QP (low 24 bits of `qpn`).
    pub fn set_dest_qpn(&mut self, qpn: u32) {
        be::set_bits32(self.bm(), 4, QPN_MASK, qpn);
    }
    /// Sets AckReq.
    pub fn set_ack_req(&mut self, v: bool) {
        be::set_bits32(self.bm(), 8, BTH_ACK, u32::from(v));
    }
    /// Sets the 7 reserved bits after AckReq (low 7 bits of `v`).
    pub fn set_resv7(&mut self, v: u8) {
        be::set_bits32(self.bm(), 8, BTH_RESV7, u32::from(v));
    }
    /// Sets the PSN.
    pub fn set_psn(&mut self, psn: Psn) {
        be::set_bits32(self.bm(), 8, BTH_PSN, psn.get());
    }
}

header_view!(
    /// Reliable Datagram Extended Transport Header (4 bytes): 8 reserved
    /// bits, then the 24-bit EE-context number. Only RD opcodes carry it;
    /// rxe lists them but has no RD QPs.
    Rdeth,
    4
);

impl<T: AsRef<[u8]>> Rdeth<T> {
    /// EE context number.
    pub fn een(&self) -> u32 {
        be::u32_at(self.b(), 0) & 0x00ff_ffff
    }
    /// The reserved byte.
    pub fn resv8(&self) -> u8 {
        be::u8_at(self.b(), 0)
    }
}

impl<T: AsMut<[u8]> + AsRef<[u8]>> Rdeth<T> {
    /// Sets the EE context number (low 24 bits).
    pub fn set_een(&mut self, v: u32) {
        be::set_bits32(self.bm(), 0, 0x00ff_ffff, v);
    }
    /// Sets the reserved byte.
    pub fn set_resv8(&mut self, v: u8) {
        be::set_u8(self.bm(), 0, v);
    }
}

header_view!(
    /// Datagram Extended Transport Header (8 bytes): Q_Key, 8 reserved bits,
    /// source QP.
    Deth,
    8
);

impl<T: AsRef<[u8]>> Deth<T> {
    /// Queue key.
    pub fn qkey(&self) -> u32 {
        be::u32_at(self.b(), 0)
    }
    /// The reserved byte before SrcQP.
    pub fn resv8(&self) -> u8 {
        be::u8_at(self.b(), 4)
    }
    /// Source QP number (24 bits).
    pub fn src_qpn(&self) -> u32 {
        be::u32_at(self.b(), 4) & QPN_MASK
    }
}

impl<T: AsMut<[u8]> + AsRef<[u8]>> Deth<T> {
    /// Sets the queue key.
    pub fn set_qkey(&mut self, v: u32) {
        be::set_u32(self.bm(), 0, v);
    }
    /// Sets the reserved byte.
    pub fn set_resv8(&mut self, v: u8) {
        be::set_u8(self.bm(), 4, v);
    }
    /// Sets the source QP (low 24 bits).
    pub fn set_src_qpn(&mut self, v: u32) {
        be::set_bits32(self.bm(), 4, QPN_MASK, v);
    }
}

header_view!(
    /// RDMA Extended Transport Header (16 bytes): virtual address, R_Key,
    /// DMA length.
    Reth,
    16
);

impl<T: AsRef<[u8]>> Reth<T> {
    /// Virtual address.
    pub fn va(&self) -> u64 {
        be::u64_at(self.b(), 0)
    }
    /// Remote key.
    pub fn rkey(&self) -> u32 {
        be::u32_at(self.b(), 8)
    }
    /// DMA length in bytes of the whole RDMA operation.
    pub fn dma_len(&self) -> u32 {
        be::u32_at(self.b(), 12)
    }
}

impl<T: AsMut<[u8]> + AsRef<[u8]>> Reth<T> {
    /// Sets the virtual address.
    pub fn set_va(&mut self, v: u64) {
        be::set_u64(self.bm(), 0, v);
    }
    /// Sets the remote key.
    pub fn set_rkey(&mut self, v: u32) {
        be::set_u32(self.bm(), 8, v);
    }
    /// Sets the DMA length.
    pub fn set_dma_len(&mut self, v: u32) {
        be::set_u32(self.bm(), 12, v);
    }
}

header_view!(
    /// FLUSH Extended Transport Header (4 bytes, IBA FLUSH annex): bits 3:0
    /// placement type, bits 5:4 selectivity level, bits 31:6 reserved.
    Feth,
    4
);

const FETH_PLT: u32 = 0x0000_000f;
const FETH_SEL: u32 = 0x0000_0030;
const FETH_RESV: u32 = 0xffff_ffc0;

impl<T: AsRef<[u8]>> Feth<T> {
    /// Placement type (4 bits).
    pub fn plt(&self) -> u8 {
        be::bits32_at(self.b(), 0, FETH_PLT) as u8
    }
    /// Selectivity level (2 bits).
    pub fn sel(&self) -> u8 {
        be::bits32_at(self.b(), 0, FETH_SEL) as u8
    }
    /// The 26 reserved bits.
    pub fn resv(&self) -> u32 {
        be::bits32_at(self.b(), 0, FETH_RESV)
    }
}

impl<T: AsMut<[u8]> + AsRef<[u8]>> Feth<T> {
    /// Sets the placement type (low 4 bits).
    pub fn set_plt(&mut self, v: u8) {
        be::set_bits32(self.bm(), 0, FETH_PLT, u32::from(v));
    }
    /// Sets the selectivity level (low 2 bits).
    pub fn set_sel(&mut self, v: u8) {
        be::set_bits32(self.bm(), 0, FETH_SEL, u32::from(v));
    }
    /// Sets the reserved bits (low 26 bits of `v`).
    pub fn set_resv(&mut self, v: u32) {
        be::set_bits32(self.bm(), 0, FETH_RESV, v);
    }
}

header_view!(
    /// Atomic Extended Transport Header (28 bytes, packed): virtual address,
    /// R_Key, swap (or add) data, compare data.
    AtomicEth,
    28
);

impl<T: AsRef<[u8]>> AtomicEth<T> {
    /// Virtual address.
    pub fn va(&self) -> u64 {
        be::u64_at(self.b(), 0)
    }
    /// Remote key.
    pub fn rkey(&self) -> u32 {
        be::u32_at(self.b(), 8)
    }
    /// Swap data (CmpSwap) or add data (FetchAdd).
    pub fn swap_add(&self) -> u64 {
        be::u64_at(self.b(), 12)
    }
    /// Compare data (CmpSwap).
    pub fn comp(&self) -> u64 {
        be::u64_at(self.b(), 20)
    }
}

impl<T: AsMut<[u8]> + AsRef<[u8]>> AtomicEth<T> {
    /// Sets the virtual address.
    pub fn set_va(&mut self, v: u64) {
        be::set_u64(self.bm(), 0, v);
    }
    /// Sets the remote key.
    pub fn set_rkey(&mut self, v: u32) {
        be::set_u32(self.bm(), 8, v);
    }
    /// Sets the swap/add data.
    pub fn set_swap_add(&mut self, v: u64) {
        be::set_u64(self.bm(), 12, v);
    }
    /// Sets the compare data.
    pub fn set_comp(&mut self, v: u64) {
        be::set_u64(self.bm(), 20, v);
    }
}

header_view!(
    /// ACK Extended Transport Header (4 bytes): syndrome, 24-bit MSN.
    Aeth,
    4
);

impl<T: AsRef<[u8]>> Aeth<T> {
    /// The raw syndrome byte.
    pub fn syndrome_byte(&self) -> u8 {
        be::u8_at(self.b(), 0)
    }
    /// The decoded syndrome.
    pub fn syndrome(&self) -> Syndrome {
        Syndrome::decode(self.syndrome_byte())
    }
    /// Message sequence number.
    pub fn msn(&self) -> Msn {
        Msn::new(be::u32_at(self.b(), 0) & 0x00ff_ffff)
    }
}

impl<T: AsMut<[u8]> + AsRef<[u8]>> Aeth<T> {
    /// Sets the raw syndrome byte.
    pub fn set_syndrome_byte(&mut self, v: u8) {
        be::set_u8(self.bm(), 0, v);
    }
    /// Sets the syndrome.
    pub fn set_syndrome(&mut self, s: Syndrome) {
        self.set_syndrome_byte(s.encode());
    }
    /// Sets the MSN.
    pub fn set_msn(&mut self, msn: Msn) {
        be::set_bits32(self.bm(), 0, 0x00ff_ffff, msn.get());
    }
}

header_view!(
    /// Atomic ACK Extended Transport Header (8 bytes): the original value.
    AtomicAckEth,
    8
);

impl<T: AsRef<[u8]>> AtomicAckEth<T> {
    /// The value at the target before the atomic operation.
    pub fn orig(&self) -> u64 {
        be::u64_at(self.b(), 0)
    }
}

impl<T: AsMut<[u8]> + AsRef<[u8]>> AtomicAckEth<T> {
    /// Sets the original value.
    pub fn set_orig(&mut self, v: u64) {
        be::set_u64(self.bm(), 0, v);
    }
}

header_view!(
    /// Immediate Data Extended Transport Header (4 bytes).
    ///
    /// Verbs hand immediate data around in network order (`__be32
    /// imm_data`), so [`ImmDt::imm_bytes`] is what the kernel copies to and
    /// from work requests and completions; [`ImmDt::imm`] decodes it.
    ImmDt,
    4
);

impl<T: AsRef<[u8]>> ImmDt<T> {
    /// The immediate data as the 4 wire bytes.
    pub fn imm_bytes(&self) -> [u8; 4] {
        be::bytes4_at(self.b(), 0)
    }
    /// The immediate data as a big-endian number.
    pub fn imm(&self) -> u32 {
        be::u32_at(self.b(), 0)
    }
}

impl<T: AsMut<[u8]> + AsRef<[u8]>> ImmDt<T> {
    /// Sets the immediate data from its 4 wire bytes.
    pub fn set_imm_bytes(&mut self, v: [u8; 4]) {
        be::set_bytes4(self.bm(), 0, v);
    }
    /// Sets the immediate data from a number (stored big-endian).
    pub fn set_imm(&mut self, v: u32) {
        be::set_u32(self.bm(), 0, v);
    }
}

header_view!(
    /// Invalidate Extended Transport Header (4 bytes): the R_Key to
    /// invalidate (SEND with invalidate).
    Ieth,
    4
);

impl<T: AsRef<[u8]>> Ieth<T> {
    /// The R_Key to invalidate.
    pub fn rkey(&self) -> u32 {
        be::u32_at(self.b(), 0)
    }
}

impl<T: AsMut<[u8]> + AsRef<[u8]>> Ieth<T> {
    /// Sets the R_Key to invalidate.
    pub fn set_rkey(&mut self, v: u32) {
        be::set_u32(self.bm(), 0, v);
    }
}

header_view!(
    /// The 8-byte payload of an ATOMIC WRITE request: the value to store at
    /// the RETH address, in network order.
    AtomicWritePayload,
    8
);

impl<T: AsRef<[u8]>> AtomicWritePayload<T> {
    /// The value to write, as its 8 wire bytes (rxe copies them verbatim).
    pub fn value_bytes(&self) -> [u8; 8] {
        be::u64_at(self.b(), 0).to_be_bytes()
    }
}

impl<T: AsMut<[u8]> + AsRef<[u8]>> AtomicWritePayload<T> {
    /// Sets the value from its 8 wire bytes.
    pub fn set_value_bytes(&mut self, v: [u8; 8]) {
        be::set_u64(self.bm(), 0, u64::from_be_bytes(v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_short_is_an_error() {
        assert_eq!(
            Bth::new(&[0u8; 11][..]),
            Err(TooShort { need: 12, have: 11 })
        );
        assert!(Bth::new(&[0u8; 12][..]).is_ok());
        assert!(Bth::new(&[0u8; 40][..]).is_ok());
        assert_eq!(
            AtomicEth::new([0u8; 27]).err(),
            Some(TooShort { need: 28, have: 27 })
        );
        assert_eq!(
            Reth::new(&[][..]).err(),
            Some(TooShort { need: 16, have: 0 })
        );
        assert_eq!(Deth::<&[u8]>::LEN, 8);
        assert_eq!(Rdeth::<&[u8]>::LEN, 4);
        assert_eq!(Feth::<&[u8]>::LEN, 4);
        assert_eq!(Aeth::<&[u8]>::LEN, 4);
        assert_eq!(AtomicAckEth::<&[u8]>::LEN, 8);
        assert_eq!(ImmDt::<&[u8]>::LEN, 4);
        assert_eq!(Ieth::<&[u8]>::LEN, 4);
    }

    #[test]
    fn bth_fields_at_their_bytes() {
        // opcode 0x04, SE, M, pad 3, tver 0xA, pkey 0xBEEF, FECN, BECN,
        // resv6a 0x15, qpn 0x123456, AckReq, resv7 0x55, psn 0xABCDEF.
        let wire = [
            0x04, 0xfa, 0xbe, 0xef, 0xd5, 0x12, 0x34, 0x56, 0xd5, 0xab, 0xcd, 0xef,
        ];
        let b = Bth::new(&wire[..]).unwrap();
        assert_eq!(b.opcode(), 0x04);
        assert!(b.se() && b.mig());
        assert_eq!(b.pad(), 3);
        assert_eq!(b.tver(), 0xa);
        assert_eq!(b.pkey(), 0xbeef);
        assert!(b.fecn() && b.becn());
        assert_eq!(b.resv6a(), 0x15);
        assert_eq!(b.dest_qpn(), 0x12_3456);
        assert!(b.ack_req());
        assert_eq!(b.resv7(), 0x55);
        assert_eq!(b.psn().get(), 0xab_cdef);

        let mut m = Bth::new([0u8; 12]).unwrap();
        m.set_opcode(0x04);
        m.set_se(true);
        m.set_mig(true);
        m.set_pad(3);
        m.set_tver(0xa);
        m.set_pkey(0xbeef);
        m.set_fecn(true);
        m.set_becn(true);
        m.set_resv6a(0x15);
        m.set_dest_qpn(0x12_3456);
        m.set_ack_req(true);
        m.set_resv7(0x55);
        m.set_psn(Psn::new(0xab_cdef));
        assert_eq!(m.into_inner(), wire);
    }

    #[test]
    fn bth_setters_touch_only_their_bits() {
        let mut m = Bth::new([0xffu8; 12]).unwrap();
        m.set_se(false);
        assert_eq!(m.as_bytes()[1], 0x7f);
        m.set_mig(false);
        assert_eq!(m.as_bytes()[1], 0x3f);
        m.set_pad(0);
        assert_eq!(m.as_bytes()[1], 0x0f);
        m.set_tver(0);
        assert_eq!(m.as_bytes()[1], 0x00);
        m.set_fecn(false);
        assert_eq!(m.as_bytes()[4], 0x7f);
        m.set_becn(false);
        assert_eq!(m.as_bytes()[4], 0x3f);
        m.set_resv6a(0);
        assert_eq!(m.as_bytes()[4..8], [0, 0xff, 0xff, 0xff]);
        m.set_dest_qpn(0);
        assert_eq!(m.as_bytes()[4..8], [0; 4]);
        m.set_ack_req(false);
        assert_eq!(m.as_bytes()[8], 0x7f);
        m.set_resv7(0);
        assert_eq!(m.as_bytes()[8..12], [0, 0xff, 0xff, 0xff]);
        m.set_psn(Psn::new(0));
        assert_eq!(m.as_bytes()[8..12], [0; 4]);
        // Out-of-field bits of the arguments are dropped.
        m.set_pad(0xff);
        assert_eq!(m.as_bytes()[1], 0x30);
        m.set_dest_qpn(0xffff_ffff);
        assert_eq!(m.as_bytes()[4], 0);
        m.clear();
        assert_eq!(m.into_inner(), [0; 12]);
    }

    #[test]
    fn rdeth_deth_fields() {
        let mut r = Rdeth::new([0u8; 4]).unwrap();
        r.set_een(0xabcdef12);
        assert_eq!(r.as_bytes(), [0, 0xcd, 0xef, 0x12]);
        r.set_resv8(0x77);
        assert_eq!(r.een(), 0xcd_ef12);
        assert_eq!(r.resv8(), 0x77);

        let wire = [0x80, 0x01, 0x00, 0x00, 0x5a, 0x00, 0x00, 0x01];
        let d = Deth::new(&wire[..]).unwrap();
        assert_eq!(d.qkey(), GSI_QKEY);
        assert_eq!(d.resv8(), 0x5a);
        assert_eq!(d.src_qpn(), 1);
        let mut m = Deth::new([0u8; 8]).unwrap();
        m.set_qkey(GSI_QKEY);
        m.set_resv8(0x5a);
        m.set_src_qpn(1);
        assert_eq!(m.into_inner(), wire);
    }

    #[test]
    fn reth_fields() {
        let wire = [
            1, 2, 3, 4, 5, 6, 7, 8, 0xaa, 0xbb, 0xcc, 0xdd, 0x80, 0, 0, 0x10,
        ];
        let r = Reth::new(&wire[..]).unwrap();
        assert_eq!(r.va(), 0x0102_0304_0506_0708);
        assert_eq!(r.rkey(), 0xaabb_ccdd);
        assert_eq!(r.dma_len(), 0x8000_0010);
        let mut m = Reth::new([0u8; 16]).unwrap();
        m.set_va(0x0102_0304_0506_0708);
        m.set_rkey(0xaabb_ccdd);
        m.set_dma_len(0x8000_0010);
        assert_eq!(m.into_inner(), wire);
    }

    #[test]
    fn feth_fields() {
        // plt 0xA, sel 2: 0b10_1010 = 0x2a; reserved bits all set.
        let wire = [0xff, 0xff, 0xff, 0xea];
        let f = Feth::new(&wire[..]).unwrap();
        assert_eq!(f.plt(), 0xa);
        assert_eq!(f.sel(), 2);
        assert_eq!(f.resv(), 0x03ff_ffff);
        let mut m = Feth::new([0u8; 4]).unwrap();
        m.set_plt(0xa);
        m.set_sel(2);
        assert_eq!(m.as_bytes(), [0, 0, 0, 0x2a]);
        m.set_resv(0x03ff_ffff);
        assert_eq!(m.into_inner(), wire);
    }

    #[test]
    fn atomic_eth_fields() {
        let mut wire = [0u8; 28];
        wire[..8].copy_from_slice(&0x1111_2222_3333_4444u64.to_be_bytes());
        wire[8..12].copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
        wire[12..20].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        wire[20..28].copy_from_slice(&[9, 10, 11, 12, 13, 14, 15, 16]);
        let a = AtomicEth::new(&wire[..]).unwrap();
        assert_eq!(a.va(), 0x1111_2222_3333_4444);
        assert_eq!(a.rkey(), 0xdead_beef);
        assert_eq!(a.swap_add(), 0x0102_0304_0506_0708);
        assert_eq!(a.comp(), 0x090a_0b0c_0d0e_0f10);
        let mut m = AtomicEth::new([0u8; 28]).unwrap();
        m.set_va(0x1111_2222_3333_4444);
        m.set_rkey(0xdead_beef);
        m.set_swap_add(0x0102_0304_0506_0708);
        m.set_comp(0x090a_0b0c_0d0e_0f10);
        assert_eq!(m.into_inner(), wire);
    }

    #[test]
    fn aeth_fields() {
        let wire = [0x62, 0x01, 0x02, 0x03];
        let a = Aeth::new(&wire[..]).unwrap();
        assert_eq!(a.syndrome_byte(), 0x62);
        assert_eq!(
            a.syndrome(),
            Syndrome::Nak(super::super::aeth::NakCode::RemoteAccessError)
        );
        assert_eq!(a.msn().get(), 0x01_0203);
        let mut m = Aeth::new([0u8; 4]).unwrap();
        m.set_msn(Msn::new(0x01_0203));
        m.set_syndrome(Syndrome::Nak(
            super::super::aeth::NakCode::RemoteAccessError,
        ));
        assert_eq!(m.into_inner(), wire);
        let mut m = Aeth::new([0u8; 4]).unwrap();
        m.set_syndrome_byte(0x1f);
        m.set_msn(Msn::new(0xffff_ffff));
        assert_eq!(m.into_inner(), [0x1f, 0xff, 0xff, 0xff]);
    }

    #[test]
    fn atomic_ack_imm_ieth_fields() {
        let wire = [0xf0, 0xe1, 0xd2, 0xc3, 0xb4, 0xa5, 0x96, 0x87];
        assert_eq!(
            AtomicAckEth::new(&wire[..]).unwrap().orig(),
            0xf0e1_d2c3_b4a5_9687
        );
        let mut m = AtomicAckEth::new([0u8; 8]).unwrap();
        m.set_orig(0xf0e1_d2c3_b4a5_9687);
        assert_eq!(m.into_inner(), wire);

        let i = ImmDt::new(&[0x12, 0x34, 0x56, 0x78][..]).unwrap();
        assert_eq!(i.imm(), 0x1234_5678);
        assert_eq!(i.imm_bytes(), [0x12, 0x34, 0x56, 0x78]);
        let mut m = ImmDt::new([0u8; 4]).unwrap();
        m.set_imm_bytes([9, 8, 7, 6]);
        assert_eq!(m.as_bytes(), [9, 8, 7, 6]);
        m.set_imm(0x0102_0304);
        assert_eq!(m.into_inner(), [1, 2, 3, 4]);

        let e = Ieth::new(&[0xca, 0xfe, 0xba, 0xbe][..]).unwrap();
        assert_eq!(e.rkey(), 0xcafe_babe);
        let mut m = Ieth::new([0u8; 4]).unwrap();
        m.set_rkey(0xcafe_babe);
        assert_eq!(m.into_inner(), [0xca, 0xfe, 0xba, 0xbe]);

        let mut w = AtomicWritePayload::new([0u8; 8]).unwrap();
        w.set_value_bytes([1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(w.value_bytes(), [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(w.into_inner(), [1, 2, 3, 4, 5, 6, 7, 8]);
    }

    #[test]
    fn views_over_longer_buffers_use_only_their_bytes() {
        let mut buf = [0u8; 20];
        let mut b = Bth::new(&mut buf[..]).unwrap();
        b.set_psn(Psn::new(0xffffff));
        assert_eq!(b.as_bytes().len(), 12);
        b.clear();
        buf[12] = 0x99;
        let b = Bth::new(&buf[..]).unwrap();
        assert_eq!(b.as_bytes(), [0u8; 12]);
    }
}
