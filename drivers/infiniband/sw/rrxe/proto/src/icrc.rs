// SPDX-License-Identifier: GPL-2.0

//! The RoCEv2 invariant CRC (IBA vol. 1 Annex A17), streaming.
//!
//! The ICRC is a CRC-32 over the packet with every field a router may
//! change replaced by ones:
//!
//! 1. eight 0xff bytes standing for the LRH RoCE does not have — folded into
//!    the start value [`LRH_SEED`], the CRC state after those bytes;
//! 2. the IP header: for IPv4, TOS (DSCP+ECN), TTL and header checksum are
//!    masked; for IPv6, traffic class, flow label and hop limit;
//! 3. the UDP header with its checksum masked;
//! 4. the BTH with its byte 4 (FECN, BECN, resv6a: "resv8a") masked;
//! 5. everything after the BTH up to the ICRC: extended headers, payload,
//!    pad bytes;
//!
//! and the result inverted. It is sent as the 4 bytes following the pad, in
//! little-endian order of the CRC value (what rxe stores on x86).
//!
//! This is exactly what `rxe_icrc.c` computes: its `rxe_icrc_hdr()` copies
//! IP+UDP+BTH into a scratch buffer, overwrites the masked fields with
//! ones, starts from 0xdebb20e3 and continues over the rest.
//!
//! [`Icrc`] is a running state: start it from the IP, UDP and BTH headers,
//! feed it the remaining bytes in as many chunks as they come (extended
//! headers, payload spread over pages or skb fragments, pad), then take the
//! trailer or compare with the received one. The CRC step itself is the
//! [`Crc32`] parameter, and [`Icrc::state`] / [`Icrc::resume`] let a caller
//! run the CRC itself (e.g. fused with a copy) between two calls.

use super::crc32::Crc32;
use super::net::{IpHdr, IpUdp, IPV6_LEN, UDP_LEN};
use super::opcode::{Opcode, BTH_LEN};

/// Length of the ICRC trailer.
pub const ICRC_LEN: usize = 4;

/// The CRC-32 state after eight 0xff bytes (the masked LRH), from the
/// initial value `!0`; rxe's seed 0xdebb20e3.
pub const LRH_SEED: u32 = 0xdebb_20e3;

/// Size of the scratch buffer for the masked IP+UDP+BTH headers (IPv6).
pub const PSEUDO_MAX: usize = IPV6_LEN + UDP_LEN + BTH_LEN;

/// Which bytes the ICRC covers for the three opcodes whose rxe table entry
/// lacks a payload offset (see [`Opcode::rxe_icrc_repeats_headers`]). For
/// every other opcode both flavours are the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum IcrcFlavor {
    /// As IBA says: the headers once.
    Iba,
    /// As Linux 6.12's rdma_rxe computes it: for RC FLUSH (and RD
    /// ACKNOWLEDGE / RD ATOMIC ACKNOWLEDGE) the BTH and extended headers
    /// are covered again, unmasked, after themselves. Needed to talk FLUSH
    /// with C rxe; the default.
    #[default]
    Rxe,
}

impl IcrcFlavor {
    /// The ICRC of `op` repeats the headers under this flavour.
    pub const fn repeats_headers(self, op: Opcode) -> bool {
        matches!(self, IcrcFlavor::Rxe) && op.rxe_icrc_repeats_headers()
    }
}

/// Writes IP+UDP+BTH with the variant fields masked into `out`; returns
/// the number of bytes (40 for IPv4, 60 for IPv6).
pub fn masked_headers(net: &IpUdp<'_>, bth: &[u8; BTH_LEN], out: &mut [u8; PSEUDO_MAX]) -> usize {
    let ip = net.ip_bytes();
    let udp = net.udp_bytes();
    let ip_len = ip.len();
    let mut n = 0usize;
    // Three slice copies (IP, UDP, BTH), each clamped to the room left
    // (a zip of two slices compiles to a plain copy, with no panic path).
    for part in [ip, udp, &bth[..]] {
        let rest = out.get_mut(n..).unwrap_or(&mut []);
        let k = part.len().min(rest.len());
        for (d, s) in rest.iter_mut().zip(part) {
            *d = *s;
        }
        n = n.wrapping_add(k);
    }
    // (offset, bits to set) of every masked field.
    let udp_at = ip_len;
    let bth_at = ip_len.wrapping_add(UDP_LEN);
    let v4 = [(1, 0xff), (8, 0xff), (10, 0xff), (11, 0xff)]; // TOS, TTL, checksum
    let v6 = [(0, 0x0f), (1, 0xff), (2, 0xff), (3, 0xff), (7, 0xff)]; // TC+FL, hop limit
    let ip_masks: &[(usize, u8)] = match net.ip() {
        IpHdr::V4(_) => &v4,
        IpHdr::V6(_) => &v6,
    };
    let common = [
        (udp_at.wrapping_add(6), 0xff), // UDP checksum
        (udp_at.wrapping_add(7), 0xff),
        (bth_at.wrapping_add(4), 0xff), // BTH resv8a (FECN, BECN, resv6a)
    ];
    for &(i, m) in ip_masks.iter().chain(common.iter()) {
        if let Some(b) = out.get_mut(i) {
            *b |= m;
        }
    }
    n
}

/// A running ICRC computation over one packet.
pub struct Icrc<'c, C: Crc32 + ?Sized> {
    crc: &'c C,
    state: u32,
}

impl<C: Crc32 + ?Sized> Clone for Icrc<'_, C> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C: Crc32 + ?Sized> Copy for Icrc<'_, C> {}

impl<C: Crc32 + ?Sized> core::fmt::Debug for Icrc<'_, C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Icrc").field("state", &self.state).finish()
    }
}

impl<'c, C: Crc32 + ?Sized> Icrc<'c, C> {
    /// Starts the ICRC of a packet from its IP and UDP headers and its BTH
    /// (the 12 bytes; the rest follows through [`Icrc::update`]).
    pub fn new(crc: &'c C, net: &IpUdp<'_>, bth: &[u8; BTH_LEN]) -> Self {
        if !crc.computes() {
            return Self {
                crc,
                state: LRH_SEED,
            };
        }
        let mut buf = [0u8; PSEUDO_MAX];
        let n = masked_headers(net, bth, &mut buf);
        let state = crc.update(LRH_SEED, buf.get(..n).unwrap_or(&[]));
        Self { crc, state }
    }

    /// Continues from a state saved with [`Icrc::state`] (or advanced by the
    /// caller's own CRC-32 over the next bytes).
    pub fn resume(crc: &'c C, state: u32) -> Self {
        Self { crc, state }
    }

    /// The raw CRC-32 state (not inverted).
    pub fn state(&self) -> u32 {
        self.state
    }

    /// Feeds the next bytes of the packet.
    pub fn update(&mut self, data: &[u8]) -> &mut Self {
        self.state = self.crc.update(self.state, data);
        self
    }

    /// Puts after the bytes fed so far `n` bytes whose CRC, begun from 0,
    /// is `part` (bytes folded elsewhere: the transmit path's copy and CRC
    /// in one pass). The same as feeding the bytes.
    pub fn append(&mut self, part: u32, n: usize) -> &mut Self {
        self.state = self.crc.shift(self.state, n) ^ part;
        self
    }

    /// Feeds `n` zero bytes (pad), without a buffer.
    pub fn update_zeros(&mut self, n: usize) -> &mut Self {
        const Z: [u8; 64] = [0; 64];
        let mut left = n;
        while left > 0 {
            let k = left.min(Z.len());
            self.update(Z.get(..k).unwrap_or(&[]));
            left = left.saturating_sub(k);
        }
        self
    }

    /// The ICRC value: the inverted state.
    pub fn value(&self) -> u32 {
        !self.state
    }

    /// The 4 trailer bytes to send.
    pub fn trailer(&self) -> [u8; ICRC_LEN] {
        self.value().to_le_bytes()
    }

    /// The received trailer bytes match.
    pub fn matches(&self, trailer: &[u8]) -> bool {
        trailer == self.trailer()
    }
}

/// Computes the ICRC of a whole packet: `udp_payload` is BTH through the
/// trailer (whose 4 bytes are not read). `None` if `udp_payload` cannot
/// hold a BTH and an ICRC, or, for an opcode whose rxe ICRC repeats the
/// headers, is shorter than those headers.
pub fn packet_icrc<C: Crc32 + ?Sized>(
    crc: &C,
    net: &IpUdp<'_>,
    udp_payload: &[u8],
    flavor: IcrcFlavor,
) -> Option<u32> {
    let end = udp_payload.len().checked_sub(ICRC_LEN)?;
    let covered = udp_payload.get(..end)?;
    let bth: &[u8; BTH_LEN] = covered.first_chunk()?;
    let rest = covered.get(BTH_LEN..)?;
    let mut icrc = Icrc::new(crc, net, bth);
    match Opcode::from_u8(bth[0]) {
        Some(op) if flavor.repeats_headers(op) => {
            // rxe: headers after the BTH, then BTH..ICRC from the start.
            let ext = covered.get(BTH_LEN..op.header_len())?;
            icrc.update(ext).update(covered);
        }
        _ => {
            icrc.update(rest);
        }
    }
    Some(icrc.value())
}

/// Verifies the trailer of a whole packet (`udp_payload`: BTH through
/// ICRC).
pub fn verify_packet<C: Crc32 + ?Sized>(
    crc: &C,
    net: &IpUdp<'_>,
    udp_payload: &[u8],
    flavor: IcrcFlavor,
) -> bool {
    let Some(v) = packet_icrc(crc, net, udp_payload, flavor) else {
        return false;
    };
    let at = udp_payload.len().saturating_sub(ICRC_LEN);
    udp_payload.get(at..) == Some(&v.to_le_bytes()[..])
}

/// Computes the ICRC of a whole packet and writes it into its last 4
/// bytes. Returns false (writing nothing) where [`packet_icrc`] is `None`.
pub fn fill_packet<C: Crc32 + ?Sized>(
    crc: &C,
    net: &IpUdp<'_>,
    udp_payload: &mut [u8],
    flavor: IcrcFlavor,
) -> bool {
    let Some(v) = packet_icrc(crc, net, udp_payload, flavor) else {
        return false;
    };
    let at = udp_payload.len().saturating_sub(ICRC_LEN);
    match udp_payload.get_mut(at..) {
        Some(t) => {
            for (d, s) in t.iter_mut().zip(v.to_le_bytes()) {
                *d = s;
            }
            true
        }
        None => false,
    }
}
