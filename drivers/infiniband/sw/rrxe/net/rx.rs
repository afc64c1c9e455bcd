// SPDX-License-Identifier: GPL-2.0

//! Packet intake: every received RoCEv2 datagram of a device comes here
//! (softirq, or the sender's context for loopback), with `data` at the UDP
//! header and the IP header before it.
//!
//! A packet is validated completely before anything is done with it: the
//! protocol crate checks lengths, pad, opcode, payload rules and the ICRC;
//! here the QP, its state and transport, the P_Key, and the addresses
//! (connected QPs) or the Q_Key (datagram QPs) are checked. A valid packet
//! is queued on its QP for the responder (requests) or the completer
//! (responses), and the QP's work is scheduled. Anything else is dropped.

use crate::counters::{count, Counter, KeyViolation};
use crate::mcast::{GROUP_MAX, MULTICAST_QPN};
use crate::net::dev::Core;
use crate::proto::net::{udp_parts, IpUdp, UDP_LEN};
use crate::proto::opcode::{Transport, BTH_LEN, MAX_HDR_LEN};
use crate::proto::parse::{parse_headers, Headers, Limits, Mtu};
use crate::proto::Opcode;
use crate::proto::{Icrc, ICRC_LEN};
use crate::qp_attr::State;
use crate::qp_attr::{mtu_of, GSI_QKEY};
use crate::rdma::attrs::QpType;
use crate::rdma::crc::KernelCrc;
use crate::rdma::device::param_rx_frags;
use crate::rdma::objects::Qp;
use crate::rdma::pool::Handle;
use crate::rdma::skb::{Refused as NotQueued, SkBuff};
use crate::rdma::trace::{self, PktId};
use crate::sched;
use crate::Rrxe;
use kernel::c_str;
use kernel::str::CStr;

/// Whether `op` belongs to a QP of type `t`.
fn transport_ok(op: Opcode, t: QpType) -> bool {
    matches!(
        (op.transport(), t),
        (Transport::Rc, QpType::Rc)
            | (Transport::Uc, QpType::Uc)
            | (Transport::Ud, QpType::Ud)
            | (Transport::Ud, QpType::Gsi)
    )
}

/// Takes one received datagram (see the module documentation).
pub(crate) fn rcv(core: &Core, skb: SkBuff) {
    rcv_from(core, skb, None)
}

/// Takes a datagram that `from` sent to its own device (loopback), in
/// `from`'s engine run: as [`rcv`], except that a unicast packet's QP is
/// not woken but left to `from`'s run, which runs it next (see
/// `engine::run`).
pub(crate) fn rcv_local(core: &Core, skb: SkBuff, from: &Qp<Rrxe>) {
    rcv_from(core, skb, Some(from))
}

fn rcv_from(core: &Core, mut skb: SkBuff, from: Option<&Qp<Rrxe>>) {
    // Every datagram, valid or not; its bytes from the UDP header's end
    // (the stack has cut the buffer to the UDP length). On the device,
    // or on the QP that took it while that QP is bound to a counter of
    // `rdma statistic qp`.
    let bytes = skb.len().saturating_sub(UDP_LEN) as u64;
    // A packet from the network may come in page fragments (the NIC's
    // receive buffers). Its headers are made linear; `deliver` keeps the
    // fragments only for the requests that can be placed from them (RC
    // SENDs and WRITEs), unless the `rx_frags` knob is off: then it is
    // made linear here, as before. One this device looped back may carry
    // its payload in page fragments too (its headers are linear:
    // `net::tx`).
    if from.is_none() {
        skb.mark_from_wire();
        if skb.headlen() != skb.len() {
            let headers = UDP_LEN + MAX_HDR_LEN;
            let kept = param_rx_frags() && skb.pull_linear(headers);
            if !kept && !skb.linearize() {
                count_rcvd(core, None, bytes);
                return;
            }
        }
    }
    let qpn = skb
        .data()
        .get(UDP_LEN + 5..UDP_LEN + 8)
        .map(|b| u32::from_be_bytes([0, b[0], b[1], b[2]]));
    match qpn {
        Some(MULTICAST_QPN) => {
            count_rcvd(core, None, bytes);
            if skb.headlen() == skb.len() || skb.linearize() {
                rcv_mcast(core, skb, from.map(|f| f.handle()));
            }
        }
        Some(n) => rcv_unicast(core, skb, n, from, bytes),
        None => count_rcvd(core, None, bytes),
    }
}

/// A packet for QP `qpn` (of `bytes`, for the counters): delivered to it,
/// which is then woken (or run by `from`'s run, for loopback).
fn rcv_unicast(core: &Core, skb: SkBuff, qpn: u32, from: Option<&Qp<Rrxe>>, bytes: u64) {
    let Some(qp) = core.qp(qpn) else {
        count_rcvd(core, None, bytes);
        if trace::drop_on() {
            let id = PktId {
                qpn,
                psn: bth_psn(&skb),
                bth_code: skb.data().get(UDP_LEN).copied().unwrap_or(0xff),
            };
            trace::drop(core.ndev.name().as_cstr(), id, Dropped::NoQp.reason());
        }
        return;
    };
    let trust = match from {
        Some(f) => Trust::Local(f.handle()),
        None => Trust::Network,
    };
    let taken = deliver(&qp, skb, trust);
    // Counted on the QP only once it took the packet: a forged or
    // corrupt packet for a QP's number is the device's.
    count_rcvd(core, taken.is_some().then_some(&*qp), bytes);
    if let Some(op) = taken {
        // READ responses wake their QP at once: a READ's responses come
        // in a long run, whose end the requester must not wait for.
        match from {
            Some(f) if !(core::ptr::eq(f, &*qp) || op.is_read() && op.is_response()) => {
                sched::kick(f, qp)
            }
            _ => qp.schedule(),
        }
    }
}

/// The PSN of a received packet's BTH (`data` at the UDP header), 0 if it
/// is too short.
fn bth_psn(skb: &SkBuff) -> u32 {
    skb.data()
        .get(UDP_LEN + 9..UDP_LEN + 12)
        .map_or(0, |b| u32::from_be_bytes([0, b[0], b[1], b[2]]))
}

/// Counts a received datagram of `bytes` (from the UDP header's end): on
/// the QP it is for while that QP is bound to a counter of `rdma
/// statistic qp`, else on the device.
fn count_rcvd(core: &Core, qp: Option<&Qp<Rrxe>>, bytes: u64) {
    match qp {
        Some(qp) => {
            qp.counts.inc(&core.counters, Counter::RcvdPkts);
            qp.counts.add(&core.counters, Counter::RcvdBytes, bytes);
        }
        None => {
            core.counters.inc(Counter::RcvdPkts);
            core.counters.add(Counter::RcvdBytes, bytes);
        }
    }
}

/// A multicast packet: one clone to each QP attached to its group;
/// `from` is the sending QP's handle if this device sent it.
fn rcv_mcast(core: &Core, skb: SkBuff, from: Option<Option<Handle>>) {
    let Some(mgid) = skb
        .network_header()
        .ok()
        .and_then(|ip| match ip.first().map(|b| b >> 4) {
            Some(4) => ip.get(16..20).map(|d| v4_mapped([d[0], d[1], d[2], d[3]])),
            Some(6) => ip.get(24..40).and_then(|d| d.try_into().ok()),
            _ => None,
        })
    else {
        return;
    };
    // The ICRC covers the packet, not the member: it is checked once
    // here, and each member's clone is then trusted on that point.
    if from.is_none() && !icrc_ok(core, &skb) {
        return;
    }
    let trust = from.map_or(Trust::IcrcChecked, Trust::Local);
    let mut members = [None; GROUP_MAX];
    let n = core.mcast.lock().members_of(&mgid, &mut members);
    let mut taken = false;
    for h in members.iter().take(n).flatten() {
        let Some(qp) = core.qp_by_handle(*h) else {
            continue;
        };
        if let Some(c) = skb.clone_atomic() {
            if deliver(&qp, c, trust).is_some() {
                taken = true;
                qp.schedule();
            }
        }
    }
    // Used if a member took a clone; dropped if none did.
    if taken {
        skb.consume();
    }
}

/// What a packet's ICRC is taken for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Trust {
    /// From the network: checked here.
    Network,
    /// From the network, already checked ([`icrc_ok`], a multicast
    /// packet's one check for all its members).
    IcrcChecked,
    /// From this device's own transmit path, sent by the QP of this
    /// handle: it carries no ICRC (see `deliver`).
    Local(Option<Handle>),
}

impl Trust {
    fn is_local(self) -> bool {
        matches!(self, Trust::Local(_))
    }
}

/// The UDP header of a received packet of `len` bytes (`data` at the UDP
/// header, `data` its linear part), the UDP payload's part in `data` (all
/// of it in a linear packet) and the UDP payload's length, which the
/// packet holds; `None` if the payload cannot hold a BTH.
fn udp_body(data: &[u8], len: usize) -> Option<(&[u8], &[u8], usize)> {
    udp_parts(data, len).filter(|(_, body, _)| body.len() >= BTH_LEN)
}

/// A received packet's IP and UDP headers, its UDP payload's linear part
/// (all of it unless the packet was looped back with page fragments) and
/// that payload's length (`data` at the UDP header).
fn packet_parts(skb: &SkBuff) -> Option<(IpUdp<'_>, &[u8], usize)> {
    let (udp, body, ulen) = udp_body(skb.data(), skb.len())?;
    let ip = skb.network_header().ok()?;
    let net = IpUdp::new(ip, udp).ok()?;
    Some((net, body, ulen))
}

/// Why a packet from the network was refused by [`parse_network`].
enum Refused {
    /// Its headers or lengths.
    Malformed,
    /// Its ICRC.
    BadIcrc,
}

/// Validates a packet from the network within `mtu`, ICRC included;
/// `body` is the linear part of `skb`'s UDP payload of `ulen` bytes.
fn parse_network<'a>(
    skb: &SkBuff,
    net: &IpUdp<'_>,
    body: &'a [u8],
    ulen: usize,
    mtu: Mtu,
) -> Result<Headers<'a>, Refused> {
    let (h, icrc) = parse_headers(net, body, ulen, &Limits::new(mtu), &KernelCrc)
        .map_err(|_| Refused::Malformed)?;
    let ok = if body.len() >= ulen {
        icrc_matches(&h, icrc, body)
    } else {
        icrc_matches_frags(&h, icrc, skb)
    };
    if !ok {
        return Err(Refused::BadIcrc);
    }
    Ok(h)
}

/// Whether the packet's ICRC is right (the headers parse within the
/// largest MTU; each member's delivery applies its own limits after).
/// Counts a bad one.
fn icrc_ok(core: &Core, skb: &SkBuff) -> bool {
    let Some((net, body, ulen)) = packet_parts(skb) else {
        return false;
    };
    match parse_network(skb, &net, body, ulen, Mtu::MTU_4096) {
        Ok(_) => true,
        Err(Refused::BadIcrc) => {
            core.counters.inc(Counter::RcvdIcrcErr);
            false
        }
        Err(Refused::Malformed) => false,
    }
}

/// Finishes the ICRC that `parse_headers` began over the headers.
fn icrc_matches(h: &Headers<'_>, mut icrc: Icrc<'_, KernelCrc>, body: &[u8]) -> bool {
    icrc.update(body.get(h.icrc_remaining()).unwrap_or(&[]));
    let trailer = body.get(h.icrc_offset()..).unwrap_or(&[]);
    h.icrc_matches(&icrc, trailer)
}

/// [`icrc_matches`] for a packet from the network whose payload is in
/// page fragments (its headers are linear): the CRC walks the fragments,
/// and the trailer is copied out of them.
fn icrc_matches_frags(h: &Headers<'_>, icrc: Icrc<'_, KernelCrc>, skb: &SkBuff) -> bool {
    let r = h.icrc_remaining();
    let Ok(state) = skb.crc32_wire(UDP_LEN + r.start, r.end - r.start, icrc.state()) else {
        return false;
    };
    let mut trailer = [0u8; ICRC_LEN];
    if skb
        .copy_wire(UDP_LEN + h.icrc_offset(), &mut trailer)
        .is_err()
    {
        return false;
    }
    h.icrc_matches(&Icrc::resume(&KernelCrc, state), &trailer)
}

/// No CRC: for a looped-back packet, which carries no ICRC and never left
/// this driver's memory (see `deliver`).
struct Unchecked;

impl crate::proto::Crc32 for Unchecked {
    fn update(&self, crc: u32, _data: &[u8]) -> u32 {
        crc
    }

    fn computes(&self) -> bool {
        false
    }
}

/// What the checks of a packet need of its QP's attributes, read at once
/// (not the whole attribute set).
struct RxAttrs {
    state: State,
    mtu: u32,
    qkey: u32,
    /// The path's destination and source GIDs (connected QPs).
    peer: ([u8; 16], [u8; 16]),
    /// Whether the path leads to this device (connected QPs): the peer
    /// is a QP of this device, whose packets come only by loopback.
    peer_here: bool,
    /// The peer QP (connected QPs whose peer was a QP of this device
    /// when the path was set).
    dest: Option<Handle>,
}

impl RxAttrs {
    fn of(qp: &Qp<Rrxe>) -> Self {
        // (Only a connected QP's checks ask where its path leads.)
        let port_mac =
            matches!(qp.qp_type, QpType::Rc | QpType::Uc).then(|| qp.device().netdev_ref().mac());
        let a = qp.attr.lock();
        Self {
            state: a.state,
            mtu: a.mtu,
            qkey: a.qkey,
            peer: (a.pri_av.dgid, a.pri_av.sgid),
            peer_here: port_mac.is_some_and(|m| a.pri_av.leads_here(m)),
            dest: a.dest,
        }
    }
}

/// Why a received packet was dropped: the reason `rrxe:rrxe_drop` shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dropped {
    /// Its headers or lengths.
    Malformed,
    /// Its ICRC.
    Icrc,
    /// No QP has the number it is addressed to.
    NoQp,
    /// Its opcode is not of the QP's transport.
    Transport,
    /// The QP's state takes no such packet.
    State,
    /// A datagram sent to an address not the device's.
    NotOurAddress,
    /// A P_Key other than the default one.
    Pkey,
    /// A connected QP's packet from another than the peer of its path.
    NotThePeer,
    /// A datagram without the QP's Q_Key.
    Qkey,
    /// No memory to make it linear.
    NoMemory,
    /// The QP's queue holds its maximum.
    QueueFull,
    /// The QP is being destroyed.
    Closed,
}

impl Dropped {
    fn reason(self) -> &'static CStr {
        match self {
            Self::Malformed => c_str!("malformed"),
            Self::Icrc => c_str!("icrc"),
            Self::NoQp => c_str!("no_qp"),
            Self::Transport => c_str!("transport"),
            Self::State => c_str!("qp_state"),
            Self::NotOurAddress => c_str!("not_our_address"),
            Self::Pkey => c_str!("pkey"),
            Self::NotThePeer => c_str!("not_the_peer"),
            Self::Qkey => c_str!("qkey"),
            Self::NoMemory => c_str!("no_memory"),
            Self::QueueFull => c_str!("queue_full"),
            Self::Closed => c_str!("qp_closed"),
        }
    }
}

/// Validates a packet for `qp` and queues it there; its opcode if queued
/// (the caller wakes the QP), else it is dropped (`rrxe:rrxe_drop`). `trust`
/// says whether its ICRC is checked: a packet from this device's own
/// transmit path (loopback) has none; it never left this driver's memory,
/// so no ICRC is checked and its masked headers are not built (every other
/// check still applies). A packet from the network always has its ICRC
/// checked, here or before ([`Trust::IcrcChecked`]).
fn deliver(qp: &Qp<Rrxe>, skb: SkBuff, trust: Trust) -> Option<Opcode> {
    let len = skb.len() as u32;
    match take(qp, skb, trust) {
        Ok((op, psn)) => {
            if trace::recv_on() {
                let id = PktId {
                    qpn: qp.qp_num(),
                    psn,
                    bth_code: op.into(),
                };
                trace::recv(qp.device().name(), id, len);
            }
            Some(op)
        }
        Err((why, id)) => {
            if trace::drop_on() {
                trace::drop(qp.device().name(), id, why.reason());
            }
            None
        }
    }
}

/// [`deliver`]'s checks and queueing: the packet's opcode and PSN if
/// queued, else why not and what of the packet was read.
fn take(qp: &Qp<Rrxe>, mut skb: SkBuff, trust: Trust) -> Result<(Opcode, u32), (Dropped, PktId)> {
    let attrs = RxAttrs::of(qp);
    let mut id = PktId {
        qpn: qp.qp_num(),
        ..PktId::UNKNOWN
    };
    let found = {
        let (net, body, ulen) = packet_parts(&skb).ok_or((Dropped::Malformed, id))?;
        // A multicast member's clone is linear (`rcv_from`), its ICRC
        // checked once over those bytes.
        if trust == Trust::IcrcChecked && body.len() != ulen {
            return Err((Dropped::Malformed, id));
        }
        let mtu = mtu_of(qp, attrs.mtu);
        let h = parse_for(qp, &skb, &net, body, ulen, mtu, trust).map_err(|why| (why, id))?;
        let op = h.opcode();
        id.psn = h.psn().get();
        id.bth_code = op.into();
        let why = checks(qp, &skb, &net, &h, &attrs, trust);
        if let Some(why) = why {
            return Err((why, id));
        }
        h.found()
    };
    // The packet's one parse: what it found goes with the packet, and the
    // engines see its headers again from it (`engine::parsed`).
    skb.set_found(found);
    let op = found.opcode();
    // Only SEND and WRITE requests are placed from page fragments (the
    // engines read every other packet's bytes from its linear part); from
    // the network, only an RC QP's (a looped-back packet in fragments is
    // always an RC one's: `net::tx`).
    let mut frags = skb.headlen() != skb.len();
    if frags && !(op.is_request() && (op.is_send() || op.is_write()) && qp.qp_type == QpType::Rc) {
        if !skb.linearize() {
            return Err((Dropped::NoMemory, id));
        }
        frags = false;
    }
    // A QP being destroyed closed its queues: the packet is dropped, so
    // it cannot keep its sender (which it holds) from being destroyed.
    // A full queue drops it (counted): its consumer does not keep up, and
    // RC's sender retransmits.
    let queued = if op.is_request() {
        qp.req_pkts.push(skb)
    } else {
        qp.resp_pkts.push(skb)
    };
    match queued {
        Ok(()) => {
            if frags && !trust.is_local() {
                count(qp, Counter::RcvdPktsFrags);
            }
            Ok((op, id.psn))
        }
        Err(NotQueued::Full) => {
            count(qp, Counter::RcvdQueueFull);
            Err((Dropped::QueueFull, id))
        }
        Err(NotQueued::Lost) => Err((Dropped::NoMemory, id)),
        Err(NotQueued::Closed) => Err((Dropped::Closed, id)),
    }
}

/// The checks of a parsed packet against its QP: its transport and state,
/// its address (datagrams), P_Key, and sender; why it is refused, if it is.
fn checks(
    qp: &Qp<Rrxe>,
    skb: &SkBuff,
    net: &IpUdp<'_>,
    h: &Headers<'_>,
    attrs: &RxAttrs,
    trust: Trust,
) -> Option<Dropped> {
    let op = h.opcode();
    if !transport_ok(op, qp.qp_type) {
        return Some(Dropped::Transport);
    }
    if !ready_for(op, attrs.state) {
        return Some(Dropped::State);
    }
    // A datagram QP takes what was sent to one of its device's
    // addresses (C rxe's rxe_chk_dgid): the stack hands the port's
    // socket datagrams for any address of the host. (A connected QP
    // checks both addresses against its path, in `sender_ok`.)
    if matches!(qp.qp_type, QpType::Ud | QpType::Gsi) && !trust.is_local() && !skb.dst_is_own() {
        return Some(Dropped::NotOurAddress);
    }
    // The only P_Key is the default one (full or limited member).
    if h.pkey() & 0x7fff != 0x7fff {
        qp.device().core().key_violations.inc(KeyViolation::Pkey);
        return Some(Dropped::Pkey);
    }
    match sender_ok(qp.qp_type, net, h, attrs, trust) {
        Sender::Ok => None,
        Sender::NotThePeer => Some(Dropped::NotThePeer),
        Sender::BadQkey => {
            qp.device().core().key_violations.inc(KeyViolation::Qkey);
            Some(Dropped::Qkey)
        }
    }
}

/// The validated headers of a packet for `qp`, within `mtu`; its ICRC
/// checked if `trust` is [`Trust::Network`] (a bad one counted).
fn parse_for<'a>(
    qp: &Qp<Rrxe>,
    skb: &SkBuff,
    net: &IpUdp<'_>,
    body: &'a [u8],
    ulen: usize,
    mtu: Mtu,
    trust: Trust,
) -> Result<Headers<'a>, Dropped> {
    if trust != Trust::Network {
        return parse_headers(net, body, ulen, &Limits::new(mtu), &Unchecked)
            .map(|(h, _)| h)
            .map_err(|_| Dropped::Malformed);
    }
    match parse_network(skb, net, body, ulen, mtu) {
        Ok(h) => Ok(h),
        Err(Refused::BadIcrc) => {
            count(qp, Counter::RcvdIcrcErr);
            Err(Dropped::Icrc)
        }
        Err(Refused::Malformed) => Err(Dropped::Malformed),
    }
}

/// Whether a QP in `state` takes `op`: requests need RTR or later,
/// responses RTS or later.
fn ready_for(op: Opcode, state: State) -> bool {
    if op.is_request() {
        matches!(state, State::Rtr | State::Rts | State::Sqd | State::Sqe)
    } else {
        matches!(state, State::Rts | State::Sqd | State::Sqe)
    }
}

/// What [`sender_ok`] found.
enum Sender {
    Ok,
    /// A connected QP's packet from another than the peer of its path.
    NotThePeer,
    /// A datagram without the QP's Q_Key.
    BadQkey,
}

/// Whether a QP of type `t` takes the packet from its sender: a connected
/// QP only from the peer of its path, a datagram QP only with its Q_Key
/// (the GSI QP's is the well-known one).
///
/// A connected QP knows its peer by more than the addresses when either
/// end is on this device, since the addresses are then all this host's
/// and any QP of the device can send with them:
/// - a looped-back packet comes from the QP that sent it, which must be
///   the peer (the QP that had the path's destination QP number when the
///   path was set, not one made since with the number of a dead peer):
///   another QP of the device, connected to this one by a user who owns
///   neither, would otherwise feed it requests, or ACKs for its sends;
/// - a QP whose peer is on this device takes only looped-back packets:
///   one from the network with the pair's addresses was forged (by a
///   process that can inject frames, or from the wire where the stack
///   lets a packet from one of the host's own addresses in).
///
/// Taken, a forged ACK would complete a send whose packets the peer has
/// yet to read, and hand its buffer back while a packet sent without a
/// copy still reads it (`net::tx`).
fn sender_ok(t: QpType, net: &IpUdp<'_>, h: &Headers<'_>, attrs: &RxAttrs, trust: Trust) -> Sender {
    match t {
        QpType::Rc | QpType::Uc => {
            let from_peer = match trust {
                Trust::Local(from) => from.is_some() && from == attrs.dest,
                Trust::Network | Trust::IcrcChecked => !attrs.peer_here,
            };
            if !from_peer {
                return Sender::NotThePeer;
            }
            let (src, dst) = match net.ip() {
                crate::proto::net::IpHdr::V4(v) => (v4_mapped(v.src()), v4_mapped(v.dst())),
                crate::proto::net::IpHdr::V6(v) => (v.src(), v.dst()),
            };
            if (src, dst) == attrs.peer {
                Sender::Ok
            } else {
                Sender::NotThePeer
            }
        }
        _ => {
            let want = if t == QpType::Gsi {
                GSI_QKEY
            } else {
                attrs.qkey
            };
            if h.deth().map(|d| d.qkey()) == Some(want) {
                Sender::Ok
            } else {
                Sender::BadQkey
            }
        }
    }
}

fn v4_mapped(a: [u8; 4]) -> [u8; 16] {
    [
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a[0], a[1], a[2], a[3],
    ]
}
