// SPDX-License-Identifier: GPL-2.0

//! The outer headers of RoCEv2: IPv4 or IPv6, then UDP to port 4791.
//!
//! Only as much as the ICRC and packet validation need: views with the
//! fields (IPv4 without options, IPv6 without extension headers, which is
//! what rxe sends), [`IpUdp`] — the pair of headers an ICRC covers — and
//! [`IpUdp::split_frame`], which checks a whole IP datagram and returns its
//! UDP payload. Small writers build the headers for tests, seeds and the
//! benchmark; the kernel builds its outer headers with its own IP stack.
//!
//! Checksums: the IPv4 header checksum and the UDP checksum are the IP and
//! UDP layers' business (and both are masked out of the ICRC), so
//! [`IpUdp::split_frame`] does not verify them; helpers to compute them are
//! provided.

use super::be;
use super::hdr::TooShort;

/// The RoCEv2 UDP destination port.
pub const ROCE_V2_UDP_DPORT: u16 = 4791;
/// The IP protocol number of UDP.
pub const IPPROTO_UDP: u8 = 17;
/// Length of an IPv4 header without options.
pub const IPV4_LEN: usize = 20;
/// Length of the IPv6 fixed header.
pub const IPV6_LEN: usize = 40;
/// Length of the UDP header.
pub const UDP_LEN: usize = 8;

/// Why outer headers were refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetError {
    /// Fewer bytes than the headers need.
    TooShort,
    /// The IP version nibble is neither 4 nor 6.
    BadVersion(u8),
    /// IPv4 with options (IHL other than 5): rxe never sends them, and its
    /// ICRC would not cover them as IBA says.
    Ipv4Options,
    /// An IPv4 fragment (MF set or a fragment offset).
    Fragmented,
    /// The next protocol is not UDP (IPv6 extension headers land here too).
    NotUdp(u8),
    /// IP total/payload length or UDP length inconsistent with the bytes.
    BadLength,
    /// The UDP destination port is not 4791.
    WrongPort(u16),
}

impl From<TooShort> for NetError {
    fn from(_: TooShort) -> Self {
        NetError::TooShort
    }
}

header_view!(
    /// IPv4 header without options (20 bytes).
    Ipv4Hdr,
    20
);

impl<T: AsRef<[u8]>> Ipv4Hdr<T> {
    /// Version (4).
    pub fn version(&self) -> u8 {
        be::u8_at(self.b(), 0) >> 4
    }
    /// Header length in 32-bit words (5 without options).
    pub fn ihl(&self) -> u8 {
        be::u8_at(self.b(), 0) & 0x0f
    }
    /// Type of service: DSCP and ECN (masked in the ICRC).
    pub fn tos(&self) -> u8 {
        be::u8_at(self.b(), 1)
    }
    /// Total length of the datagram.
    pub fn total_len(&self) -> u16 {
        be::u16_at(self.b(), 2)
    }
    /// Identification.
    pub fn id(&self) -> u16 {
        be::u16_at(self.b(), 4)
    }
    /// Don't Fragment.
    pub fn df(&self) -> bool {
        be::u16_at(self.b(), 6) & 0x4000 != 0
    }
    /// More Fragments.
    pub fn mf(&self) -> bool {
        be::u16_at(self.b(), 6) & 0x2000 != 0
    }
    /// Fragment offset in 8-byte units.
    pub fn frag_offset(&self) -> u16 {
        be::u16_at(self.b(), 6) & 0x1fff
    }
    /// Time to live (masked in the ICRC).
    pub fn ttl(&self) -> u8 {
        be::u8_at(self.b(), 8)
    }
    /// Protocol (17 for UDP).
    pub fn protocol(&self) -> u8 {
        be::u8_at(self.b(), 9)
    }
    /// Header checksum (masked in the ICRC).
    pub fn checksum(&self) -> u16 {
        be::u16_at(self.b(), 10)
    }
    /// Source address.
    pub fn src(&self) -> [u8; 4] {
        be::bytes4_at(self.b(), 12)
    }
    /// Destination address.
    pub fn dst(&self) -> [u8; 4] {
        be::bytes4_at(self.b(), 16)
    }
    /// The header checksum the header should carry (computed with the
    /// checksum field taken as zero).
    pub fn compute_checksum(&self) -> u16 {
        let b = self.b();
        let mut sum = 0u32;
        for i in (0..IPV4_LEN).step_by(2) {
            if i != 10 {
                sum = sum.wrapping_add(u32::from(be::u16_at(b, i)));
            }
        }
        fold(sum)
    }
    /// The header checksum is correct.
    pub fn checksum_ok(&self) -> bool {
        self.compute_checksum() == self.checksum()
    }
}

impl<T: AsMut<[u8]> + AsRef<[u8]>> Ipv4Hdr<T> {
    /// Sets version 4 and IHL 5.
    pub fn set_version_ihl(&mut self) {
        be::set_u8(self.bm(), 0, 0x45);
    }
    /// Sets the type of service.
    pub fn set_tos(&mut self, v: u8) {
        be::set_u8(self.bm(), 1, v);
    }
    /// Sets the total length.
    pub fn set_total_len(&mut self, v: u16) {
        be::set_u16(self.bm(), 2, v);
    }
    /// Sets the identification.
    pub fn set_id(&mut self, v: u16) {
        be::set_u16(self.bm(), 4, v);
    }
    /// Sets the flags and fragment offset word (0x4000 is DF alone).
    pub fn set_flags_frag(&mut self, v: u16) {
        be::set_u16(self.bm(), 6, v);
    }
    /// Sets the time to live.
    pub fn set_ttl(&mut self, v: u8) {
        be::set_u8(self.bm(), 8, v);
    }
    /// Sets the protocol.
    pub fn set_protocol(&mut self, v: u8) {
        be::set_u8(self.bm(), 9, v);
    }
    /// Sets the checksum field.
    pub fn set_checksum(&mut self, v: u16) {
        be::set_u16(self.bm(), 10, v);
    }
    /// Sets the source address.
    pub fn set_src(&mut self, v: [u8; 4]) {
        be::set_bytes4(self.bm(), 12, v);
    }
    /// Sets the destination address.
    pub fn set_dst(&mut self, v: [u8; 4]) {
        be::set_bytes4(self.bm(), 16, v);
    }
    /// Computes and stores the header checksum.
    pub fn fill_checksum(&mut self) {
        let c = self.compute_checksum();
        self.set_checksum(c);
    }
}

header_view!(
    /// IPv6 fixed header (40 bytes).
    Ipv6Hdr,
    40
);

impl<T: AsRef<[u8]>> Ipv6Hdr<T> {
    /// Version (6).
    pub fn version(&self) -> u8 {
        be::u8_at(self.b(), 0) >> 4
    }
    /// Traffic class: DSCP and ECN (masked in the ICRC).
    pub fn traffic_class(&self) -> u8 {
        be::bits32_at(self.b(), 0, 0x0ff0_0000) as u8
    }
    /// Flow label (masked in the ICRC).
    pub fn flow_label(&self) -> u32 {
        be::u32_at(self.b(), 0) & 0x000f_ffff
    }
    /// Payload length (bytes after this header).
    pub fn payload_len(&self) -> u16 {
        be::u16_at(self.b(), 4)
    }
    /// Next header (17 for UDP).
    pub fn next_header(&self) -> u8 {
        be::u8_at(self.b(), 6)
    }
    /// Hop limit (masked in the ICRC).
    pub fn hop_limit(&self) -> u8 {
        be::u8_at(self.b(), 7)
    }
    /// Source address.
    pub fn src(&self) -> [u8; 16] {
        addr16(self.b(), 8)
    }
    /// Destination address.
    pub fn dst(&self) -> [u8; 16] {
        addr16(self.b(), 24)
    }
}

impl<T: AsMut<[u8]> + AsRef<[u8]>> Ipv6Hdr<T> {
    /// Sets version 6, keeping traffic class and flow label.
    pub fn set_version(&mut self) {
        be::set_bits32(self.bm(), 0, 0xf000_0000, 6);
    }
    /// Sets the traffic class.
    pub fn set_traffic_class(&mut self, v: u8) {
        be::set_bits32(self.bm(), 0, 0x0ff0_0000, u32::from(v));
    }
    /// Sets the flow label (low 20 bits).
    pub fn set_flow_label(&mut self, v: u32) {
        be::set_bits32(self.bm(), 0, 0x000f_ffff, v);
    }
    /// Sets the payload length.
    pub fn set_payload_len(&mut self, v: u16) {
        be::set_u16(self.bm(), 4, v);
    }
    /// Sets the next header.
    pub fn set_next_header(&mut self, v: u8) {
        be::set_u8(self.bm(), 6, v);
    }
    /// Sets the hop limit.
    pub fn set_hop_limit(&mut self, v: u8) {
        be::set_u8(self.bm(), 7, v);
    }
    /// Sets the source address.
    pub fn set_src(&mut self, v: [u8; 16]) {
        set_addr16(self.bm(), 8, v);
    }
    /// Sets the destination address.
    pub fn set_dst(&mut self, v: [u8; 16]) {
        set_addr16(self.bm(), 24, v);
    }
}

fn addr16(b: &[u8], off: usize) -> [u8; 16] {
    let hi = be::u64_at(b, off).to_be_bytes();
    let lo = be::u64_at(b, off.saturating_add(8)).to_be_bytes();
    let mut out = [0u8; 16];
    for (o, v) in out.iter_mut().zip(hi.iter().chain(lo.iter())) {
        *o = *v;
    }
    out
}

fn set_addr16(b: &mut [u8], off: usize, v: [u8; 16]) {
    let (hi, lo) = v.split_at(8);
    let word = |s: &[u8]| s.iter().fold(0u64, |acc, &x| (acc << 8) | u64::from(x));
    be::set_u64(b, off, word(hi));
    be::set_u64(b, off.saturating_add(8), word(lo));
}

header_view!(
    /// UDP header (8 bytes).
    UdpHdr,
    8
);

impl<T: AsRef<[u8]>> UdpHdr<T> {
    /// Source port (rxe: 0xC000 plus a per-QP hash, for ECMP entropy).
    pub fn sport(&self) -> u16 {
        be::u16_at(self.b(), 0)
    }
    /// Destination port (4791).
    pub fn dport(&self) -> u16 {
        be::u16_at(self.b(), 2)
    }
    /// Length of UDP header plus payload.
    pub fn length(&self) -> u16 {
        be::u16_at(self.b(), 4)
    }
    /// Checksum (masked in the ICRC; rxe sends 0).
    pub fn checksum(&self) -> u16 {
        be::u16_at(self.b(), 6)
    }
}

impl<T: AsMut<[u8]> + AsRef<[u8]>> UdpHdr<T> {
    /// Sets the source port.
    pub fn set_sport(&mut self, v: u16) {
        be::set_u16(self.bm(), 0, v);
    }
    /// Sets the destination port.
    pub fn set_dport(&mut self, v: u16) {
        be::set_u16(self.bm(), 2, v);
    }
    /// Sets the length.
    pub fn set_length(&mut self, v: u16) {
        be::set_u16(self.bm(), 4, v);
    }
    /// Sets the checksum.
    pub fn set_checksum(&mut self, v: u16) {
        be::set_u16(self.bm(), 6, v);
    }
}

/// Folds a 32-bit one's complement sum to 16 bits and complements it.
fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff).wrapping_add(sum >> 16);
    }
    !(sum as u16)
}

/// The IP header of a RoCEv2 packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpHdr<'a> {
    /// IPv4 (RoCEv2 over IPv4; the GID is IPv4-mapped).
    V4(Ipv4Hdr<&'a [u8]>),
    /// IPv6.
    V6(Ipv6Hdr<&'a [u8]>),
}

/// The IP and UDP headers in front of a BTH: what the ICRC covers besides
/// the transport headers and payload.
///
/// The two may come from separate buffers (the kernel's `ip_hdr(skb)` and
/// `udp_hdr(skb)`), so they are held as two slices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpUdp<'a> {
    ip: IpHdr<'a>,
    udp: UdpHdr<&'a [u8]>,
}

impl<'a> IpUdp<'a> {
    /// Takes the IP header (at least 20 bytes for IPv4, 40 for IPv6; more
    /// are ignored) and the UDP header (at least 8 bytes). Checks only what
    /// the ICRC needs: the version, and no IPv4 options.
    pub fn new(ip: &'a [u8], udp: &'a [u8]) -> Result<Self, NetError> {
        let udp = UdpHdr::new(udp.get(..UDP_LEN).ok_or(NetError::TooShort)?)?;
        let version = be::u8_at(ip, 0) >> 4;
        let ip = match version {
            4 => {
                let h = Ipv4Hdr::new(ip.get(..IPV4_LEN).ok_or(NetError::TooShort)?)?;
                if h.ihl() != 5 {
                    return Err(NetError::Ipv4Options);
                }
                IpHdr::V4(h)
            }
            6 => IpHdr::V6(Ipv6Hdr::new(ip.get(..IPV6_LEN).ok_or(NetError::TooShort)?)?),
            v => return Err(NetError::BadVersion(v)),
        };
        Ok(Self { ip, udp })
    }

    /// Checks a whole IP datagram carrying RoCEv2 (IP header, UDP header,
    /// UDP payload) and splits it into its headers and its UDP payload (BTH
    /// through ICRC).
    ///
    /// Checks: IP version, IPv4 without options and unfragmented, protocol
    /// UDP, IP and UDP lengths consistent with the bytes, destination port
    /// 4791. Bytes past the IP datagram (Ethernet padding) are ignored, as
    /// are bytes past the UDP length. Checksums are not verified.
    pub fn split_frame(frame: &'a [u8]) -> Result<(Self, &'a [u8]), NetError> {
        let version = be::u8_at(frame, 0) >> 4;
        let (ip_len, datagram) = match version {
            4 => {
                let h = Ipv4Hdr::new(frame)?;
                if h.ihl() != 5 {
                    return Err(NetError::Ipv4Options);
                }
                if h.mf() || h.frag_offset() != 0 {
                    return Err(NetError::Fragmented);
                }
                if h.protocol() != IPPROTO_UDP {
                    return Err(NetError::NotUdp(h.protocol()));
                }
                let total = usize::from(h.total_len());
                (IPV4_LEN, frame.get(..total).ok_or(NetError::BadLength)?)
            }
            6 => {
                let h = Ipv6Hdr::new(frame)?;
                if h.next_header() != IPPROTO_UDP {
                    return Err(NetError::NotUdp(h.next_header()));
                }
                let total = IPV6_LEN
                    .checked_add(usize::from(h.payload_len()))
                    .ok_or(NetError::BadLength)?;
                (IPV6_LEN, frame.get(..total).ok_or(NetError::BadLength)?)
            }
            v => return Err(NetError::BadVersion(v)),
        };
        let ip = datagram.get(..ip_len).ok_or(NetError::BadLength)?;
        let rest = datagram.get(ip_len..).ok_or(NetError::BadLength)?;
        let udp = rest.get(..UDP_LEN).ok_or(NetError::BadLength)?;
        let net = Self::new(ip, udp)?;
        let udp_len = usize::from(net.udp.length());
        if udp_len < UDP_LEN {
            return Err(NetError::BadLength);
        }
        let payload = rest.get(UDP_LEN..udp_len).ok_or(NetError::BadLength)?;
        if net.udp.dport() != ROCE_V2_UDP_DPORT {
            return Err(NetError::WrongPort(net.udp.dport()));
        }
        Ok((net, payload))
    }

    /// The IP header.
    pub fn ip(&self) -> IpHdr<'a> {
        self.ip
    }

    /// The UDP header.
    pub fn udp(&self) -> UdpHdr<&'a [u8]> {
        self.udp
    }

    /// The IP header bytes (20 or 40).
    pub fn ip_bytes(&self) -> &'a [u8] {
        match self.ip {
            IpHdr::V4(h) => h.into_inner(),
            IpHdr::V6(h) => h.into_inner(),
        }
    }

    /// The UDP header bytes (8).
    pub fn udp_bytes(&self) -> &'a [u8] {
        self.udp.into_inner()
    }

    /// The UDP payload length the headers announce (UDP length minus 8;
    /// rxe's `paylen`), or `None` if the UDP length is below 8.
    pub fn udp_payload_len(&self) -> Option<usize> {
        usize::from(self.udp.length()).checked_sub(UDP_LEN)
    }
}

/// Outer-header fields of an IPv4 RoCEv2 packet to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Spec {
    /// Source address.
    pub src: [u8; 4],
    /// Destination address.
    pub dst: [u8; 4],
    /// Type of service (rxe: the AV's traffic class).
    pub tos: u8,
    /// Time to live (rxe: the AV's hop limit).
    pub ttl: u8,
    /// Identification.
    pub id: u16,
    /// UDP source port.
    pub sport: u16,
}

/// Outer-header fields of an IPv6 RoCEv2 packet to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6Spec {
    /// Source address.
    pub src: [u8; 16],
    /// Destination address.
    pub dst: [u8; 16],
    /// Traffic class.
    pub traffic_class: u8,
    /// Flow label (20 bits).
    pub flow_label: u32,
    /// Hop limit.
    pub hop_limit: u8,
    /// UDP source port.
    pub sport: u16,
}

fn write_udp(buf: &mut [u8], sport: u16, udp_payload_len: usize) -> Result<(), NetError> {
    let len = udp_payload_len
        .checked_add(UDP_LEN)
        .and_then(|l| u16::try_from(l).ok())
        .ok_or(NetError::BadLength)?;
    let mut u = UdpHdr::new(buf)?;
    u.set_sport(sport);
    u.set_dport(ROCE_V2_UDP_DPORT);
    u.set_length(len);
    u.set_checksum(0);
    Ok(())
}

/// Writes an IPv4 header (DF set, checksum filled) and a UDP header to
/// port 4791 with checksum 0, as rxe does, for a UDP payload of
/// `udp_payload_len` bytes. Returns the 28 bytes written.
pub fn write_ipv4_udp(
    buf: &mut [u8],
    spec: &Ipv4Spec,
    udp_payload_len: usize,
) -> Result<usize, NetError> {
    const HDRS: usize = IPV4_LEN + UDP_LEN;
    let total = udp_payload_len
        .checked_add(HDRS)
        .and_then(|l| u16::try_from(l).ok())
        .ok_or(NetError::BadLength)?;
    let (ip, rest) = buf
        .split_at_mut_checked(IPV4_LEN)
        .ok_or(NetError::TooShort)?;
    write_udp(rest, spec.sport, udp_payload_len)?;
    let mut h = Ipv4Hdr::new(ip)?;
    h.set_version_ihl();
    h.set_tos(spec.tos);
    h.set_total_len(total);
    h.set_id(spec.id);
    h.set_flags_frag(0x4000);
    h.set_ttl(spec.ttl);
    h.set_protocol(IPPROTO_UDP);
    h.set_src(spec.src);
    h.set_dst(spec.dst);
    h.fill_checksum();
    Ok(HDRS)
}

/// Writes an IPv6 header and a UDP header to port 4791 with checksum 0 (as
/// rxe does; see [`fill_udp_checksum`]) for a UDP payload of
/// `udp_payload_len` bytes. Returns the 48 bytes written.
pub fn write_ipv6_udp(
    buf: &mut [u8],
    spec: &Ipv6Spec,
    udp_payload_len: usize,
) -> Result<usize, NetError> {
    const HDRS: usize = IPV6_LEN + UDP_LEN;
    let plen = udp_payload_len
        .checked_add(UDP_LEN)
        .and_then(|l| u16::try_from(l).ok())
        .ok_or(NetError::BadLength)?;
    let (ip, rest) = buf
        .split_at_mut_checked(IPV6_LEN)
        .ok_or(NetError::TooShort)?;
    write_udp(rest, spec.sport, udp_payload_len)?;
    let mut h = Ipv6Hdr::new(ip)?;
    h.clear();
    h.set_version();
    h.set_traffic_class(spec.traffic_class);
    h.set_flow_label(spec.flow_label);
    h.set_payload_len(plen);
    h.set_next_header(IPPROTO_UDP);
    h.set_hop_limit(spec.hop_limit);
    h.set_src(spec.src);
    h.set_dst(spec.dst);
    Ok(HDRS)
}

/// A UDP datagram as the stack hands it up, in parts: `data` is its part
/// in one buffer from the UDP header on, `len` its whole length (more
/// than `data` holds when the rest is in page fragments). Returns the UDP
/// header, the payload's part in `data` (all of it when `data` holds the
/// datagram) and the payload's length, which the UDP header gives and
/// `len` must hold (bytes past it are not the datagram's). `None` if
/// `data` is shorter than the UDP header or the UDP length is below it
/// or beyond `len`.
pub fn udp_parts(data: &[u8], len: usize) -> Option<(&[u8], &[u8], usize)> {
    let udp = data.get(..UDP_LEN)?;
    let ulen = usize::from(UdpHdr::new(udp).ok()?.length()).checked_sub(UDP_LEN)?;
    let end = UDP_LEN.checked_add(ulen)?;
    if end > len {
        return None;
    }
    let body = data.get(UDP_LEN..end.min(data.len()))?;
    Some((udp, body, ulen))
}

/// Computes the UDP checksum of a whole datagram (IP header, UDP header,
/// payload, as [`IpUdp::split_frame`] accepts it) and stores it in the UDP
/// header (0 is sent as 0xffff).
pub fn fill_udp_checksum(frame: &mut [u8]) -> Result<(), NetError> {
    let (net, payload) = IpUdp::split_frame(frame)?;
    let mut sum = 0u32;
    let mut add = |s: &[u8]| {
        for pair in s.chunks(2) {
            let w = match *pair {
                [a, b] => u16::from_be_bytes([a, b]),
                [a] => u16::from_be_bytes([a, 0]),
                _ => 0,
            };
            sum = sum.wrapping_add(u32::from(w));
        }
    };
    let udp_len = net.udp.length();
    match net.ip {
        IpHdr::V4(h) => {
            add(&h.src());
            add(&h.dst());
            add(&[0, IPPROTO_UDP]);
        }
        IpHdr::V6(h) => {
            add(&h.src());
            add(&h.dst());
            add(&[0, IPPROTO_UDP]);
        }
    }
    add(&udp_len.to_be_bytes());
    let udp = net.udp;
    add(udp.as_bytes().get(..6).unwrap_or(&[]));
    add(payload);
    let mut c = fold(sum);
    if c == 0 {
        c = 0xffff;
    }
    let ip_len = net.ip_bytes().len();
    let mut u = UdpHdr::new(frame.get_mut(ip_len..).ok_or(NetError::TooShort)?)?;
    u.set_checksum(c);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A UDP header of length `ulen` and `n` bytes after it (0, 1, 2...).
    fn datagram(ulen: u16, n: usize) -> Vec<u8> {
        let mut d = vec![0x12, 0x34, 0x12, 0xb7];
        d.extend_from_slice(&ulen.to_be_bytes());
        d.extend_from_slice(&[0, 0]);
        d.extend((0..n).map(|i| i as u8));
        d
    }

    #[test]
    fn udp_parts_linear() {
        let d = datagram(8 + 20, 20);
        let (udp, body, ulen) = udp_parts(&d, d.len()).unwrap();
        assert_eq!((udp, body, ulen), (&d[..8], &d[8..], 20));
        // Bytes past the UDP length (a trailer the stack left) are not
        // the payload's.
        let d = datagram(8 + 12, 20);
        let (_, body, ulen) = udp_parts(&d, d.len()).unwrap();
        assert_eq!((body, ulen), (&d[8..20], 12));
        // An empty payload.
        let d = datagram(8, 0);
        assert_eq!(udp_parts(&d, 8).map(|p| (p.1.len(), p.2)), Some((0, 0)));
    }

    #[test]
    fn udp_parts_in_fragments() {
        // 20 payload bytes, 6 of them in this buffer, the rest elsewhere.
        let d = datagram(8 + 20, 6);
        let (_, body, ulen) = udp_parts(&d, 8 + 20).unwrap();
        assert_eq!((body, ulen), (&d[8..], 20));
        // The UDP header itself is not in the buffer.
        assert_eq!(udp_parts(&d[..7], 8 + 20), None);
    }

    #[test]
    fn udp_parts_refuses_bad_lengths() {
        // Shorter than its header.
        for l in 0..8u16 {
            let d = datagram(l, 20);
            assert_eq!(udp_parts(&d, d.len()), None, "UDP length {l}");
        }
        // Longer than the datagram holds.
        let d = datagram(8 + 21, 20);
        assert_eq!(udp_parts(&d, d.len()), None);
        assert_eq!(udp_parts(&d, d.len() + 1).map(|p| p.2), Some(21));
        assert_eq!(udp_parts(&d, usize::MAX).map(|p| p.2), Some(21));
        let d = datagram(u16::MAX, 20);
        assert_eq!(udp_parts(&d, d.len()), None);
    }

    /// The IPv4 and UDP headers of tests/golden/synthetic.txt, written out
    /// by hand: 192.0.2.1 -> 192.0.2.2, TOS 2, id 0x1234, DF, TTL 64, UDP
    /// 0xc0de -> 4791, length 40, checksum 0; IP checksum 0xa477.
    const V4: [u8; 28] = [
        0x45, 0x02, 0x00, 0x3c, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0xa4, 0x77, 192, 0, 2, 1, 192,
        0, 2, 2, 0xc0, 0xde, 0x12, 0xb7, 0x00, 0x28, 0x00, 0x00,
    ];

    #[test]
    fn ipv4_fields_at_their_bytes() {
        let h = Ipv4Hdr::new(&V4[..20]).unwrap();
        assert_eq!(
            (h.version(), h.ihl(), h.tos(), h.total_len()),
            (4, 5, 2, 60)
        );
        assert_eq!(
            (h.id(), h.df(), h.mf(), h.frag_offset()),
            (0x1234, true, false, 0)
        );
        assert_eq!((h.ttl(), h.protocol(), h.checksum()), (64, 17, 0xa477));
        assert_eq!((h.src(), h.dst()), ([192, 0, 2, 1], [192, 0, 2, 2]));
        assert!(h.checksum_ok());
        let mut m = Ipv4Hdr::new([0u8; 20]).unwrap();
        m.set_version_ihl();
        m.set_tos(2);
        m.set_total_len(60);
        m.set_id(0x1234);
        m.set_flags_frag(0x4000);
        m.set_ttl(64);
        m.set_protocol(17);
        m.set_src([192, 0, 2, 1]);
        m.set_dst([192, 0, 2, 2]);
        m.fill_checksum();
        assert_eq!(m.as_bytes(), &V4[..20]);
        m.set_checksum(0xbeef);
        assert!(!m.checksum_ok());
        let mut f = Ipv4Hdr::new([0u8; 20]).unwrap();
        f.set_flags_frag(0x3fff);
        assert!(f.mf() && !f.df());
        assert_eq!(f.frag_offset(), 0x1fff);
    }

    #[test]
    fn udp_fields_at_their_bytes() {
        let u = UdpHdr::new(&V4[20..]).unwrap();
        assert_eq!(
            (u.sport(), u.dport(), u.length(), u.checksum()),
            (0xc0de, 4791, 40, 0)
        );
        let mut m = UdpHdr::new([0u8; 8]).unwrap();
        m.set_sport(0xc0de);
        m.set_dport(ROCE_V2_UDP_DPORT);
        m.set_length(40);
        m.set_checksum(0);
        assert_eq!(m.as_bytes(), &V4[20..]);
    }

    #[test]
    fn ipv6_fields_at_their_bytes() {
        // Version 6, traffic class 0xab, flow label 0xcdef1, payload 0x0123,
        // next header UDP, hop limit 0x40, src 2001:db8::1, dst 2001:db8::2.
        let mut wire = [0u8; 40];
        wire[..8].copy_from_slice(&[0x6a, 0xbc, 0xde, 0xf1, 0x01, 0x23, 0x11, 0x40]);
        wire[8..10].copy_from_slice(&[0x20, 0x01]);
        wire[10..12].copy_from_slice(&[0x0d, 0xb8]);
        wire[23] = 1;
        wire[24..26].copy_from_slice(&[0x20, 0x01]);
        wire[26..28].copy_from_slice(&[0x0d, 0xb8]);
        wire[39] = 2;
        let h = Ipv6Hdr::new(&wire[..]).unwrap();
        assert_eq!(
            (h.version(), h.traffic_class(), h.flow_label()),
            (6, 0xab, 0xcdef1)
        );
        assert_eq!(
            (h.payload_len(), h.next_header(), h.hop_limit()),
            (0x0123, 17, 0x40)
        );
        assert_eq!(h.src()[..4], [0x20, 0x01, 0x0d, 0xb8]);
        assert_eq!((h.src()[15], h.dst()[15]), (1, 2));
        let mut m = Ipv6Hdr::new([0u8; 40]).unwrap();
        m.set_version();
        m.set_traffic_class(0xab);
        m.set_flow_label(0xcdef1);
        m.set_payload_len(0x0123);
        m.set_next_header(17);
        m.set_hop_limit(0x40);
        m.set_src(h.src());
        m.set_dst(h.dst());
        assert_eq!(m.as_bytes(), &wire[..]);
    }

    #[test]
    fn ip_udp_new_checks_what_icrc_needs() {
        assert!(IpUdp::new(&V4[..20], &V4[20..]).is_ok());
        assert_eq!(IpUdp::new(&V4[..19], &V4[20..]), Err(NetError::TooShort));
        assert_eq!(IpUdp::new(&V4[..20], &V4[20..27]), Err(NetError::TooShort));
        let mut o = V4;
        o[0] = 0x46;
        assert_eq!(IpUdp::new(&o[..20], &o[20..]), Err(NetError::Ipv4Options));
        o[0] = 0x75;
        assert_eq!(IpUdp::new(&o[..20], &o[20..]), Err(NetError::BadVersion(7)));
        let n = IpUdp::new(&V4[..20], &V4[20..]).unwrap();
        assert_eq!(n.udp_payload_len(), Some(32));
        assert_eq!(n.ip_bytes(), &V4[..20]);
        assert_eq!(n.udp_bytes(), &V4[20..]);
        assert!(matches!(n.ip(), IpHdr::V4(_)));
    }

    #[test]
    fn writers_and_udp_checksum() {
        let spec = Ipv4Spec {
            src: [192, 0, 2, 1],
            dst: [192, 0, 2, 2],
            tos: 2,
            ttl: 64,
            id: 0x1234,
            sport: 0xc0de,
        };
        let mut f = [0u8; 60];
        assert_eq!(write_ipv4_udp(&mut f, &spec, 32), Ok(28));
        assert_eq!(f[..28], V4);
        assert_eq!(
            write_ipv4_udp(&mut f[..27], &spec, 32),
            Err(NetError::TooShort)
        );
        assert_eq!(
            write_ipv4_udp(&mut f, &spec, 65_508),
            Err(NetError::BadLength)
        );
        // RFC 768 checksum, checked by summing the whole pseudo-header
        // and datagram: the one's complement sum must come out as 0xffff.
        f[28..]
            .iter_mut()
            .enumerate()
            .for_each(|(i, b)| *b = i as u8);
        fill_udp_checksum(&mut f).unwrap();
        let mut sum: u32 = 0;
        let words = |s: &[u8]| {
            s.chunks(2)
                .map(|c| u32::from(c[0]) << 8 | u32::from(*c.get(1).unwrap_or(&0)))
                .sum::<u32>()
        };
        sum += words(&f[12..20]) + 17 + 40 + words(&f[20..]);
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        assert_eq!(sum, 0xffff);
    }
}

/// The IP and UDP headers of the segments of a train: RoCEv2 packets sent
/// back to back as one UDP datagram that the IP stack, or a NIC, cuts into
/// one datagram per packet (Linux's UDP segmentation, `SKB_GSO_UDP_L4`).
/// Segment `i` gets a copy of the train's headers with its own lengths
/// and, over IPv4, the identification of the train plus `i` (wrapping);
/// IPv6 has no identification. A packet's ICRC covers these headers, so
/// it is computed over the segment's, not the train's.
#[derive(Debug, Clone)]
pub struct SegHeaders {
    buf: [u8; IPV6_LEN + UDP_LEN],
    ip_len: usize,
    /// The train's IPv4 identification (0 for IPv6).
    id: u16,
}

impl SegHeaders {
    /// Takes the train's headers: an IP header without options (20 bytes
    /// for IPv4, 40 for IPv6) followed by the UDP header; more bytes are
    /// ignored.
    pub fn new(ip_udp: &[u8]) -> Result<Self, NetError> {
        let (ip_len, hdrs) = match be::u8_at(ip_udp, 0) >> 4 {
            4 => (IPV4_LEN, IPV4_LEN + UDP_LEN),
            6 => (IPV6_LEN, IPV6_LEN + UDP_LEN),
            v => return Err(NetError::BadVersion(v)),
        };
        let src = ip_udp.get(..hdrs).ok_or(NetError::TooShort)?;
        let (ip, udp) = src.split_at_checked(ip_len).ok_or(NetError::TooShort)?;
        let id = match IpUdp::new(ip, udp)?.ip() {
            IpHdr::V4(h) => h.id(),
            IpHdr::V6(_) => 0,
        };
        let mut buf = [0u8; IPV6_LEN + UDP_LEN];
        for (d, s) in buf.iter_mut().zip(src) {
            *d = *s;
        }
        Ok(Self { buf, ip_len, id })
    }

    /// The headers of segment `index`, which carries `udp_payload_len`
    /// bytes of UDP payload (one RoCEv2 packet).
    pub fn segment(&mut self, index: u16, udp_payload_len: usize) -> Result<IpUdp<'_>, NetError> {
        let ulen = udp_payload_len
            .checked_add(UDP_LEN)
            .and_then(|l| u16::try_from(l).ok())
            .ok_or(NetError::BadLength)?;
        let (ip, rest) = self
            .buf
            .split_at_mut_checked(self.ip_len)
            .ok_or(NetError::TooShort)?;
        let udp = rest.get_mut(..UDP_LEN).ok_or(NetError::TooShort)?;
        UdpHdr::new(&mut *udp)?.set_length(ulen);
        if self.ip_len == IPV4_LEN {
            let total = ulen
                .checked_add(IPV4_LEN as u16)
                .ok_or(NetError::BadLength)?;
            let mut h = Ipv4Hdr::new(&mut *ip)?;
            h.set_total_len(total);
            h.set_id(self.id.wrapping_add(index));
            h.fill_checksum();
            return IpUdp::new(ip, udp);
        }
        Ipv6Hdr::new(&mut *ip)?.set_payload_len(ulen);
        IpUdp::new(ip, udp)
    }
}
