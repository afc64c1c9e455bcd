// SPDX-License-Identifier: GPL-2.0

//! Building and transmitting RoCEv2 packets: transport headers from the
//! protocol crate, the payload filled by the caller straight into the
//! socket buffer, UDP and IP headers, the ICRC once the headers are final,
//! then the IP stack; or, when the packet is for this device (loopback),
//! its own receive path, without an ICRC, and (an RC SEND or WRITE) with
//! its payload attached from the sender's pinned pages instead of copied.

use crate::av::{is_multicast_gid, Av, Network};
use crate::counters::Counter;
use crate::mem::Halt;
use crate::net::Intake;
use crate::proto::build::{write_headers, Layout, TxSpec};
use crate::proto::net::{
    write_ipv4_udp, write_ipv6_udp, IpUdp, Ipv4Spec, Ipv6Spec, SegHeaders, IPV4_LEN, IPV6_LEN,
    UDP_LEN,
};
use crate::proto::IcrcFlavor;
use crate::rdma::attrs::{QpType, Vlan};
use crate::rdma::crc::{Fold, KernelCrc};
use crate::rdma::device::param_zcopy;
use crate::rdma::ib::WcStatus;
use crate::rdma::mr::PAGE_SIZE;
use crate::rdma::net::{ll_headroom, Route, UdpTunnel};
use crate::rdma::objects::{Qp, TxKind};
use crate::rdma::skb::{SkBuff, ETH_P_IP, ETH_P_IPV6};
use crate::rdma::trace::{self, PktId};
use crate::NetDevice;
use crate::Rrxe;
use core::sync::atomic::Ordering;
use kernel::prelude::*;

/// Why a packet was not sent.
#[derive(Debug)]
pub(crate) enum TxError {
    /// No memory for the buffer: try again later.
    NoMem,
    /// No route, or the AV is unusable.
    NoRoute,
    /// The payload could not be gathered (local memory error): the status.
    Payload(WcStatus),
    /// The payload is in memory paged on demand that is not in: nothing
    /// was sent, and the engine tries again once its fault is done (see
    /// [`Halt::WouldFault`]).
    WouldFault,
    /// The packets cannot go as one train ([`send_train`]): nothing was
    /// sent, and they may go one by one.
    Unfit,
}

impl From<Halt> for TxError {
    fn from(h: Halt) -> Self {
        match h {
            Halt::Status(s) => TxError::Payload(s),
            Halt::WouldFault => TxError::WouldFault,
        }
    }
}

/// The route of the packets a QP's engines last sent out, kept in the
/// engine (`Engine::route`) so that a connection looks its route up once,
/// not once per packet (Documentation/bench.md has what a lookup per
/// packet costs). As C rxe keeps an RC QP's route in its socket: the route
/// is used while `dst_check` says it holds and the endpoints are the same;
/// a datagram QP keeps its last destination's.
#[derive(Default)]
pub(crate) struct RouteCache(Option<CachedRoute>);

struct CachedRoute {
    v6: bool,
    saddr: [u8; 16],
    daddr: [u8; 16],
    vlan: Option<Vlan>,
    route: Route,
    /// The route's device takes trains ([`Route::can_train`]), read once
    /// at the lookup.
    trains: bool,
}

impl RouteCache {
    /// Whether the kept route is for `av`'s endpoints and takes trains.
    /// No lookup and no validity check: the packets' own send checks the
    /// route (and looks it up again if it no longer holds), and a
    /// connection's first packet, which keeps it, goes alone.
    fn takes_trains(&self, v6: bool, av: &Av) -> bool {
        matches!(&self.0, Some(c)
            if c.trains && c.v6 == v6 && c.saddr == av.sgid && c.daddr == av.dgid
                && c.vlan == av.vlan)
    }

    /// The route from `av.sgid` to `av.dgid` out of `ndev` (or the VLAN
    /// device on it that `av.vlan` names): the kept one
    /// if it is for these endpoints and still valid, otherwise a new
    /// lookup, kept.
    fn get(
        &mut self,
        tunnel: &UdpTunnel<Intake>,
        ndev: &NetDevice,
        v6: bool,
        av: &Av,
    ) -> Result<&Route> {
        let hit = matches!(&self.0, Some(c)
            if c.v6 == v6 && c.saddr == av.sgid && c.daddr == av.dgid
                && c.vlan == av.vlan && c.route.valid());
        if !hit {
            // The old route goes first: no reference kept on a dead one.
            self.0 = None;
            let route = tunnel.route(ndev, av.vlan, &av.sgid, &av.dgid)?;
            let trains = route.can_train(v6);
            self.0 = Some(CachedRoute {
                v6,
                saddr: av.sgid,
                daddr: av.dgid,
                vlan: av.vlan,
                route,
                trains,
            });
        }
        self.0
            .as_ref()
            .map(|c| &c.route)
            .ok_or_else(crate::rdma::error::ehostunreach)
    }
}

/// Where [`send`]'s `fill` puts a packet's payload.
pub(crate) enum Out<'a> {
    /// Into this slice: exactly `spec.payload_len` bytes, copied through
    /// the [`Fold`] (a packet for the wire folds its payload into its ICRC
    /// as it is copied, if every byte goes through it in order).
    Copy(&'a mut [u8], &'a mut Fold),
    /// Attached to this buffer as page fragments, exactly
    /// `spec.payload_len` bytes, if they can be (`Ok(false)`: they cannot,
    /// and `fill` is then asked to copy them).
    Attach(&'a mut SkBuff),
}

/// The smallest payload [`send`] attaches from pinned pages instead of
/// copying it (Documentation/datapath.md, "Transmit without a copy").
pub(crate) const ZCOPY_MIN: usize = 1024;

/// Builds the packet `spec` on `qp` towards `av` and sends it. `fill`
/// writes exactly `spec.payload_len` payload bytes into the slice it gets,
/// through the fold (see [`Out::Copy`]). `routes` is the engine's route
/// cache (the engine's mutex is held).
pub(crate) fn send(
    qp: &Qp<Rrxe>,
    av: &Av,
    spec: &TxSpec,
    routes: &mut RouteCache,
    fill: impl FnOnce(&mut [u8], &mut Fold) -> core::result::Result<(), Halt>,
) -> core::result::Result<(), TxError> {
    let mut fill = Some(fill);
    send_with(qp, av, spec, routes, false, |out| match out {
        Out::Copy(buf, fold) => fill.take().ok_or(WcStatus::LocLenErr)?(buf, fold).map(|()| true),
        Out::Attach(_) => Ok(false),
    })
}

/// [`send`], with `fill` putting the payload where [`Out`] says; it is
/// asked to attach it only if `zcopy` (the caller's packet may go without
/// a copy: see [`may_attach`]) and the packet is for this device.
pub(crate) fn send_with(
    qp: &Qp<Rrxe>,
    av: &Av,
    spec: &TxSpec,
    routes: &mut RouteCache,
    zcopy: bool,
    mut fill: impl FnMut(Out<'_>) -> core::result::Result<bool, Halt>,
) -> core::result::Result<(), TxError> {
    let dev = qp.device();
    let ndev = dev.netdev_ref();
    let v6 = match av.network {
        Network::Ipv4 => false,
        Network::Ipv6 => true,
        Network::None => return Err(TxError::NoRoute),
    };
    let layout = Layout::new(spec.opcode, spec.payload_len).map_err(|_| TxError::NoRoute)?;
    let iplen = ip_len(v6);
    // For this device (loopback) or out through the stack; a multicast
    // also to this device's own members of its group. This device's MAC
    // is that of the source GID's net device (as C rxe's skb->dev): a
    // VLAN device may have its own.
    let dest = if av.leads_here(ndev.mac()) {
        Dest::Local
    } else if is_multicast_gid(&av.dgid) {
        Dest::WireAndLocal
    } else {
        Dest::Wire
    };
    let local = dest == Dest::Local;
    let attached = if zcopy && local && spec.payload_len >= ZCOPY_MIN && param_zcopy() {
        build_attached(ndev, spec, &layout, iplen, &mut fill)?
    } else {
        None
    };
    let zcopied = attached.is_some();
    // A packet for the wire folds its payload into the ICRC as it is
    // copied (one pass), unless the `icrc_fused` knob is off.
    let fused = !local && KernelCrc::fused();
    let (mut skb, part) = match attached {
        Some(skb) => (skb, None),
        None => build_udp_payload(ndev, spec, &layout, iplen, fused, |buf, fold| {
            fill(Out::Copy(buf, fold)).map(|_| ())
        })?,
    };
    // (What `created` stored in the attributes; recomputed without the lock.)
    let sport = src_port_for(qp.qp_num());
    push_ip_udp(&mut skb, av, v6, layout.udp_payload_len(), sport)?;
    skb.set_protocol(if v6 { ETH_P_IPV6 } else { ETH_P_IP });
    skb.set_dev(ndev);
    let net = dev.net();
    let tunnel = net.tunnel(v6).map_err(|_| TxError::NoRoute)?;
    // Sets the IPv4 identification, which the ICRC covers; a looped-back
    // packet needs no route.
    if local {
        tunnel.prepare_local(&mut skb, ndev);
    } else {
        let route = routes
            .get(tunnel, ndev, v6, av)
            .map_err(|_| TxError::NoRoute)?;
        tunnel.prepare(&mut skb, route, 1);
    }
    // A packet for this device never reaches a wire, and its receive path
    // trusts it (`rx::deliver` checks no ICRC on a local packet), so its
    // trailer stays zero: computing it would be a CRC pass over every
    // payload byte that nothing checks (as the stack skips checksums on
    // loopback).
    if !local {
        fill_icrc(&mut skb, &layout, iplen, part).map_err(|_| TxError::NoRoute)?;
    }
    let vlan = av.vlan.map(|v| v.id);
    let request = spec.opcode.is_request();
    transmit(qp, skb, tunnel, Handoff::new(dest, iplen, vlan, request, 1))?;
    if zcopied {
        dev.core().counters.inc(Counter::SentPktsZcopy);
    }
    if part.is_some() {
        dev.core().counters.inc(Counter::SentPktsIcrcFused);
    }
    Ok(())
}

/// Most packets in a train, whatever the `train` parameter says (at most
/// 64: the requester keeps a bit per packet).
pub(crate) const TRAIN_MAX: usize = 64;
const _: () = assert!(TRAIN_MAX <= 64);

/// Most trains of a QP in the stack at a time (`Qp::trains_out`): the
/// in-flight limit counts buffers, and a train is one buffer of up to
/// [`TRAIN_MAX`] packets; past this, packets go one by one.
pub(crate) const TRAINS_OUT: u32 = 4;

/// Most bytes of a train's packets: one datagram of 64 KiB less its IP
/// (IPv6, the longer) and UDP headers.
pub(crate) const TRAIN_BYTES: usize = u16::MAX as usize - IPV6_LEN - UDP_LEN;

/// Most bytes of a train's packets in one page fragment (the page
/// fragment cache's largest piece).
const CHUNK_MAX: usize = 32 * 1024;

/// Sends `n` packets of `qp` to `av` as one train: one buffer with one
/// IP and UDP header that the stack (or a NIC) cuts into one datagram per
/// packet (UDP GSO), so the IP stack, netfilter and the qdisc are crossed
/// once for all of them (Documentation/datapath.md, "Packet trains").
/// `spec(i)` is packet `i`'s headers: every packet's UDP payload has the
/// size of the first's, but the last one's may be smaller. `fill(i, ..)`
/// writes packet `i`'s payload as [`send`]'s `fill` does. Each packet's
/// ICRC covers the headers of its segment (`SegHeaders`).
///
/// [`TxError::Unfit`]: nothing was sent and the packets may go one by one
/// (a destination on this device or a multicast group, too long for one
/// datagram, sizes that do not fit, no page fragment for them); the
/// other errors are [`send`]'s, for any of the packets.
pub(crate) fn send_train(
    qp: &Qp<Rrxe>,
    av: &Av,
    n: usize,
    spec: impl Fn(usize) -> TxSpec,
    routes: &mut RouteCache,
    mut fill: impl FnMut(usize, &mut [u8], &mut Fold) -> core::result::Result<(), Halt>,
) -> core::result::Result<(), TxError> {
    if !(2..=TRAIN_MAX).contains(&n) || !train_fits(qp, av, routes) {
        return Err(TxError::Unfit);
    }
    let dev = qp.device();
    let ndev = dev.netdev_ref();
    let v6 = av.network == Network::Ipv6;
    let ulen = |i: usize| {
        let s = spec(i);
        Layout::new(s.opcode, s.payload_len).map(|l| l.udp_payload_len())
    };
    let unit = ulen(0).map_err(|_| TxError::Unfit)?;
    let last = ulen(n - 1).map_err(|_| TxError::Unfit)?;
    let iplen = ip_len(v6);
    let total = unit * (n - 1) + last;
    if last > unit || unit > CHUNK_MAX || total > TRAIN_BYTES {
        return Err(TxError::Unfit);
    }
    let tunnel = dev.net().tunnel(v6).map_err(|_| TxError::NoRoute)?;
    let route = routes
        .get(tunnel, ndev, v6, av)
        .map_err(|_| TxError::NoRoute)?;
    let mut skb =
        SkBuff::alloc(0, ll_headroom(ndev) + iplen + UDP_LEN).map_err(|_| TxError::NoMem)?;
    push_ip_udp(&mut skb, av, v6, total, src_port_for(qp.qp_num()))?;
    skb.set_protocol(if v6 { ETH_P_IPV6 } else { ETH_P_IP });
    skb.set_dev(ndev);
    // Takes an IPv4 identification per segment: segment i gets the
    // train's plus i, which its ICRC covers.
    tunnel.prepare(&mut skb, route, n as u32);
    let segs = SegHeaders::new(skb.data()).map_err(|_| TxError::NoRoute)?;
    let shape = Shape { n, unit, last };
    let folded = write_train(&mut skb, &shape, segs, &spec, &mut fill)?;
    skb.set_udp_gso(iplen, unit, n, v6)
        .map_err(|_| TxError::Unfit)?;
    let vlan = av.vlan.map(|v| v.id);
    let request = spec(0).opcode.is_request();
    transmit(
        qp,
        skb,
        tunnel,
        Handoff::new(Dest::Wire, iplen, vlan, request, n),
    )?;
    let counters = &dev.core().counters;
    counters.inc(Counter::SentTrains);
    counters.add(Counter::SentTrainPkts, n as u64);
    counters.add(Counter::SentPktsIcrcFused, folded as u64);
    Ok(())
}

/// A train's packets: `n` of them, each `unit` bytes of UDP payload but
/// the last, `last` bytes.
struct Shape {
    n: usize,
    unit: usize,
    last: usize,
}

/// Writes the packets of a train shaped `shape` into page fragments
/// appended to `skb` (its IP and UDP headers in place, their copy in
/// `segs`): packet `i` as `spec(i)` says, its payload from `fill(i, ..)`,
/// its ICRC over the headers of its segment. Returns how many payloads
/// were folded into their ICRC as copied.
fn write_train(
    skb: &mut SkBuff,
    shape: &Shape,
    mut segs: SegHeaders,
    spec: &impl Fn(usize) -> TxSpec,
    fill: &mut impl FnMut(usize, &mut [u8], &mut Fold) -> core::result::Result<(), Halt>,
) -> core::result::Result<usize, TxError> {
    let Shape { n, unit, last } = *shape;
    let fused = KernelCrc::fused();
    let per_chunk = CHUNK_MAX / unit;
    let mut folded = 0;
    let mut i = 0;
    while i < n {
        let k = per_chunk.min(n - i);
        let len = if i + k == n {
            unit * (k - 1) + last
        } else {
            unit * k
        };
        let mut rest = skb.add_chunk(len).map_err(|_| TxError::Unfit)?;
        for j in i..i + k {
            let s = spec(j);
            let layout = Layout::new(s.opcode, s.payload_len).map_err(|_| TxError::Unfit)?;
            let size = layout.udp_payload_len();
            // Every segment but the last is `unit` bytes: a packet of
            // another size would be cut wrong (and leave bytes unwritten).
            let want = if j + 1 == n { last } else { unit };
            if size != want {
                return Err(TxError::Unfit);
            }
            let (buf, r) = rest.split_at_mut_checked(size).ok_or(TxError::Unfit)?;
            rest = r;
            let part = write_packet(buf, &s, &layout, fused, |p, f| fill(j, p, f))?;
            let net = segs.segment(j as u16, size).map_err(|_| TxError::NoRoute)?;
            icrc_into(&net, buf, &layout, part).map_err(|_| TxError::NoRoute)?;
            folded += usize::from(part.is_some());
        }
        if !rest.is_empty() {
            return Err(TxError::Unfit);
        }
        i += k;
    }
    Ok(folded)
}

/// Whether packets of `qp` to `av` may go as a train: to another host
/// (not this device, not a multicast group), over IP, on a route whose
/// device takes a train without a pass over its bytes
/// ([`Route::can_train`], as kept in `routes` by the last send). The
/// requester asks before it gathers a train's packets, for every packet
/// of a multi-packet message: no lookup here.
pub(crate) fn train_fits(qp: &Qp<Rrxe>, av: &Av, routes: &RouteCache) -> bool {
    let v6 = match av.network {
        Network::Ipv4 => false,
        Network::Ipv6 => true,
        Network::None => return false,
    };
    routes.takes_trains(v6, av)
        && !av.leads_here(qp.device().netdev_ref().mac())
        && !is_multicast_gid(&av.dgid)
}

/// Whether a packet of `opcode` on a QP of type `t` may carry its payload
/// in page fragments of the sender's memory. Only RC SENDs and RDMA
/// WRITEs: the requester's WQE completes when their ACK comes, which the
/// responder sends after it copied the payload out, so the sender cannot
/// be told its buffer is free while a packet still reads it (a UD or UC
/// send completes when sent). A duplicate or a refused packet is dropped
/// without a read. (READ responses, ATOMIC WRITE's 8 bytes and inline
/// data are copied.)
pub(crate) fn may_attach(t: QpType, opcode: crate::proto::Opcode) -> bool {
    t == QpType::Rc && opcode.is_request() && (opcode.is_send() || opcode.is_write())
}

/// A packet for this device with its payload attached by `fill`
/// ([`Out::Attach`]) after headers in the linear part, and its pad and
/// zero trailer from the module's zero page; `None` if `fill` cannot
/// attach it (nothing was sent: the caller copies).
fn build_attached(
    ndev: &NetDevice,
    spec: &TxSpec,
    layout: &Layout,
    iplen: usize,
    fill: &mut impl FnMut(Out<'_>) -> core::result::Result<bool, Halt>,
) -> core::result::Result<Option<SkBuff>, TxError> {
    let hlen = layout.header_len();
    let mut skb =
        SkBuff::alloc(hlen, ll_headroom(ndev) + iplen + UDP_LEN).map_err(|_| TxError::NoMem)?;
    let buf = skb.put(hlen).map_err(|_| TxError::NoMem)?;
    write_headers(buf, spec).map_err(|_| TxError::NoRoute)?;
    let attached = fill(Out::Attach(&mut skb));
    // What `fill` attached is the payload, no more, no less, in no more
    // pages than a contiguous payload spans (many small SGEs would hold a
    // page each for a few bytes: copied); then the pad and the trailer.
    let tail = layout.udp_payload_len() - hlen - layout.payload_len();
    let pages = layout.payload_len().div_ceil(PAGE_SIZE as usize) + 1;
    let whole = matches!(attached, Ok(true))
        && skb.len() == hlen + layout.payload_len()
        && skb.nr_frags() <= pages
        && skb.add_zeros(tail).is_ok();
    if whole {
        return Ok(Some(skb));
    }
    // Not a packet refused: one not made (`consume`, no drop counted).
    skb.consume();
    attached.map_err(TxError::from).map(|_| None)
}

/// Where [`transmit`] hands a packet.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dest {
    /// This device's own receive path only (loopback).
    Local,
    /// The network.
    Wire,
    /// The network, and a copy to this device's own receive path (a
    /// multicast: the device's own members of the group get it, as the
    /// QPs of a hardware port do).
    WireAndLocal,
}

/// A new buffer for a packet out of `ndev` with `layout`, holding its UDP
/// payload: the transport headers of `spec`, the payload `fill` writes,
/// and zeroed pad and trailer; with room in front for IP and UDP headers
/// (`iplen` and `UDP_LEN` bytes) and the link layer. With `fused`, `fill`
/// copies through a fold begun at the payload: the payload's CRC (from 0)
/// comes back if every byte of it went through the fold, in order.
fn build_udp_payload(
    ndev: &NetDevice,
    spec: &TxSpec,
    layout: &Layout,
    iplen: usize,
    fused: bool,
    fill: impl FnOnce(&mut [u8], &mut Fold) -> core::result::Result<(), Halt>,
) -> core::result::Result<(SkBuff, Option<u32>), TxError> {
    let ulen = layout.udp_payload_len();
    let mut skb =
        SkBuff::alloc(ulen, ll_headroom(ndev) + iplen + UDP_LEN).map_err(|_| TxError::NoMem)?;
    let buf = skb.put(ulen).map_err(|_| TxError::NoMem)?;
    let part = write_packet(buf, spec, layout, fused, fill)?;
    Ok((skb, part))
}

/// Writes the packet `spec`, laid out as `layout`, into `buf` (its UDP
/// payload, exactly): the transport headers, the payload `fill` writes,
/// and zeroed pad and trailer. With `fused`, `fill` copies through a fold
/// begun at the payload: the payload's CRC (from 0) comes back if every
/// byte of it went through the fold, in order.
fn write_packet(
    buf: &mut [u8],
    spec: &TxSpec,
    layout: &Layout,
    fused: bool,
    fill: impl FnOnce(&mut [u8], &mut Fold) -> core::result::Result<(), Halt>,
) -> core::result::Result<Option<u32>, TxError> {
    write_headers(buf, spec).map_err(|_| TxError::NoRoute)?;
    let (pstart, pend) = (
        layout.payload_offset(),
        layout.payload_offset() + layout.payload_len(),
    );
    let payload = buf.get_mut(pstart..pend).ok_or(TxError::NoRoute)?;
    let mut fold = Fold::at(fused && !payload.is_empty(), payload);
    fill(payload, &mut fold).map_err(TxError::from)?;
    // Pad and trailer start zeroed.
    for b in buf.get_mut(pend..).unwrap_or(&mut []) {
        *b = 0;
    }
    Ok(fold.crc_of(pend - pstart))
}

/// The length of an IP header without options: IPv6 if `v6`, else IPv4.
fn ip_len(v6: bool) -> usize {
    if v6 {
        IPV6_LEN
    } else {
        IPV4_LEN
    }
}

/// Puts the IP (IPv6 if `v6`, else IPv4) and UDP headers from `av` in
/// front of the UDP payload of `ulen` bytes in `skb`.
fn push_ip_udp(
    skb: &mut SkBuff,
    av: &Av,
    v6: bool,
    ulen: usize,
    sport: u16,
) -> core::result::Result<(), TxError> {
    let hdrs = skb.push(ip_len(v6) + UDP_LEN).map_err(|_| TxError::NoMem)?;
    let r = if v6 {
        write_ipv6_udp(
            hdrs,
            &Ipv6Spec {
                src: av.sgid,
                dst: av.dgid,
                traffic_class: av.traffic_class,
                flow_label: av.flow_label,
                hop_limit: av.hop_limit,
                sport,
            },
            ulen,
        )
    } else {
        write_ipv4_udp(
            hdrs,
            &Ipv4Spec {
                src: ipv4_of(&av.sgid),
                dst: ipv4_of(&av.dgid),
                tos: av.traffic_class,
                ttl: av.hop_limit,
                id: 0,
                sport,
            },
            ulen,
        )
    };
    r.map_err(|_| TxError::NoRoute)?;
    Ok(())
}

/// How [`transmit`] hands a buffer on (its fields are described there).
struct Handoff {
    dest: Dest,
    iplen: usize,
    vlan: Option<u16>,
    request: bool,
    pkts: u64,
}

impl Handoff {
    fn new(dest: Dest, iplen: usize, vlan: Option<u16>, request: bool, pkts: usize) -> Self {
        Self {
            dest,
            iplen,
            vlan,
            request,
            pkts: pkts as u64,
        }
    }
}

/// Hands a prepared packet of `qp` on as `dest` says: to this device's
/// own receive path (its IP header, `iplen` bytes, pulled), to `tunnel`,
/// or both; counts it sent (with its UDP payload's bytes) or failed.
/// `vlan`: the VLAN ID of the VLAN device it is sent on, which a packet
/// for this device's receive path carries (the stack tags the others).
/// `request`: a packet of the QP's requester (also counted in `req_out`).
/// `pkts`: the packets it holds (a train's: more than one).
fn transmit(
    qp: &Qp<Rrxe>,
    mut skb: SkBuff,
    tunnel: &UdpTunnel<Intake>,
    h: Handoff,
) -> core::result::Result<(), TxError> {
    let Handoff {
        dest,
        iplen,
        vlan,
        request,
        pkts,
    } = h;
    let core = qp.device().core();
    let bytes = skb.len().saturating_sub(iplen + UDP_LEN) as u64;
    let id = trace::send_on().then(|| sent_id(qp, &skb, iplen));
    // The packet counts against the QP until it is freed (`qp::tx_done`).
    let kind = match (request, pkts > 1) {
        (true, true) => TxKind::Train,
        (true, false) => TxKind::Request,
        (false, _) => TxKind::Other,
    };
    if !qp.own_skb(&mut skb, tunnel, kind) {
        return Err(TxError::NoRoute);
    }
    qp.skb_out.fetch_add(1, Ordering::AcqRel);
    if request {
        qp.req_out.fetch_add(1, Ordering::AcqRel);
    }
    if kind == TxKind::Train {
        qp.trains_out.fetch_add(1, Ordering::AcqRel);
    }
    // The copy for this device's members of a multicast group. A copy,
    // not a clone: the stack may still write the sent packet's IP header
    // (a qdisc's ECN mark) while receive reads the copy's. The tunnel
    // sockets do not loop multicast back themselves (`IP_MULTICAST_LOOP`
    // and `IPV6_MULTICAST_LOOP` off), so each member gets it once.
    let own = match dest {
        Dest::Local => {
            receive_own(qp, skb, iplen, vlan).map_err(|_| TxError::NoRoute)?;
            qp.counts.inc(&core.counters, Counter::SentPkts);
            qp.counts.add(&core.counters, Counter::SentBytes, bytes);
            trace_sent(qp, id, 1, bytes);
            return Ok(());
        }
        Dest::Wire => None,
        Dest::WireAndLocal => skb.copy_atomic(),
    };
    match tunnel.send_prepared(skb) {
        Ok(()) => {
            qp.counts.add(&core.counters, Counter::SentPkts, pkts);
            qp.counts.add(&core.counters, Counter::SentBytes, bytes);
            trace_sent(qp, id, pkts, bytes);
            if let Some(c) = own {
                let _ = receive_own(qp, c, iplen, vlan);
            }
            Ok(())
        }
        Err(_) => {
            qp.counts.inc(&core.counters, Counter::SendErr);
            Err(TxError::NoRoute)
        }
    }
}

/// What `rrxe:rrxe_send` shows of a packet (or train) of `qp` about to be
/// sent (its IP header, `iplen` bytes, at `data`): its BTH's PSN and
/// opcode (the first packet's, of a train).
fn sent_id(qp: &Qp<Rrxe>, skb: &SkBuff, iplen: usize) -> PktId {
    let bth = skb.data().get(iplen + UDP_LEN..iplen + UDP_LEN + 12);
    PktId {
        qpn: qp.qp_num(),
        psn: bth.map_or(0, |b| u32::from_be_bytes([0, b[9], b[10], b[11]])),
        bth_code: bth.map_or(0xff, |b| b[0]),
    }
}

/// Fires `rrxe:rrxe_send` for a buffer of `pkts` packets and `bytes` sent,
/// if it was on when the buffer was prepared (`id`).
fn trace_sent(qp: &Qp<Rrxe>, id: Option<PktId>, pkts: u64, bytes: u64) {
    if let Some(id) = id {
        trace::send(qp.device().name(), id, pkts as u32, bytes as u32);
    }
}

/// Hands a packet `qp` sent (its IP header, `iplen` bytes, at `data`) to
/// this device's own receive path, as the stack would deliver it (data at
/// the UDP header), marked with `vlan` if it was sent on a VLAN device.
fn receive_own(qp: &Qp<Rrxe>, mut skb: SkBuff, iplen: usize, vlan: Option<u16>) -> Result {
    skb.pull(iplen)?;
    if let Some(v) = vlan {
        skb.set_vlan_id(v);
    }
    let core = qp.device().core();
    super::rx::rcv_local(core, skb, qp);
    Ok(())
}

/// Computes the ICRC over the final IP and UDP headers and the packet,
/// and writes the trailer; `part`, if given, is the CRC (from 0) of the
/// payload, folded as it was copied: the payload is then not read again.
fn fill_icrc(skb: &mut SkBuff, layout: &Layout, iplen: usize, part: Option<u32>) -> Result {
    let data = skb.data_mut();
    let (hdrs, udp_payload) = data.split_at_mut_checked(iplen + UDP_LEN).ok_or(EINVAL)?;
    let (ip, udp) = hdrs.split_at(iplen);
    let net = IpUdp::new(ip, udp).map_err(|_| EINVAL)?;
    icrc_into(&net, udp_payload, layout, part)
}

/// Computes the ICRC of the packet `udp_payload` (BTH through trailer,
/// laid out as `layout`) sent under the IP and UDP headers `net`, and
/// writes its trailer; `part` as for [`fill_icrc`].
fn icrc_into(
    net: &IpUdp<'_>,
    udp_payload: &mut [u8],
    layout: &Layout,
    part: Option<u32>,
) -> Result {
    let crc = KernelCrc;
    let (body, trailer) = udp_payload
        .split_at_mut_checked(layout.icrc_offset())
        .ok_or(EINVAL)?;
    let mut icrc = layout
        .start_icrc(&crc, net, body, IcrcFlavor::Rxe)
        .ok_or(EINVAL)?;
    let rest = body.get(layout.header_len()..).ok_or(EINVAL)?;
    match part {
        Some(part) => {
            let n = layout.payload_len();
            icrc.append(part, n);
            icrc.update(rest.get(n..).ok_or(EINVAL)?);
        }
        None => {
            icrc.update(rest);
        }
    }
    for (d, s) in trailer.iter_mut().zip(icrc.trailer()) {
        *d = s;
    }
    Ok(())
}

/// The IPv4 address of an IPv4-mapped GID.
pub(crate) fn ipv4_of(gid: &[u8; 16]) -> [u8; 4] {
    [gid[12], gid[13], gid[14], gid[15]]
}

/// RoCEv2 UDP source port for a QP: rxe's hash of the QPN into the
/// dynamic range.
fn src_port_for(qpn: u32) -> u16 {
    const GOLDEN_RATIO_32: u32 = 0x61C8_8647;
    0xc000 + (qpn.wrapping_mul(GOLDEN_RATIO_32) >> (32 - 14)) as u16
}
