// SPDX-License-Identifier: GPL-2.0

//! Packet trains: RoCEv2 packets sent back to back as one UDP datagram
//! that the IP stack (or a NIC) segments, one datagram per packet. Each
//! packet's ICRC is computed over the headers its segment will carry
//! ([`SegHeaders`]); here an independent model of Linux's UDP
//! segmentation (`__udp_gso_segment` under `inet_gso_segment`: the
//! train's headers copied, the lengths set per segment, the IPv4
//! identification counting up from the train's) cuts the train, and
//! every segment must pass the parser with its ICRC.

mod common;

use common::{bytes, ext_for, v4, v6, NetKind};
use rrxe_proto::build::{build, Layout};
use rrxe_proto::net::{
    write_ipv4_udp, write_ipv6_udp, Ipv4Hdr, SegHeaders, IPV4_LEN, IPV6_LEN, UDP_LEN,
};
use rrxe_proto::parse::parse_frame;
use rrxe_proto::seg::segments;
use rrxe_proto::{
    IcrcFlavor, IpUdp, Limits, MsgOp, Mtu, ParseError, Psn, TableCrc32, Transport, TxSpec,
};

/// A train of the message `op` of `len` bytes at `mtu`, from its
/// `skip`-th packet on: (the datagram, each packet's UDP payload length,
/// the payload). `per_segment`: ICRCs over each segment's headers (as
/// the driver does); otherwise over the train's own (wrong).
fn train(
    net: &NetKind,
    op: MsgOp,
    len: u32,
    mtu: Mtu,
    skip: usize,
    per_segment: bool,
) -> (Vec<u8>, Vec<usize>, Vec<u8>) {
    let data = bytes(len as usize, u64::from(len));
    let segs: Vec<_> = segments(Transport::Rc, op, len, mtu, Psn::new(0xff_fff0))
        .expect("segments")
        .skip(skip)
        .collect();
    let specs: Vec<TxSpec> = segs
        .iter()
        .map(|s| {
            let mut t = TxSpec::new(s.opcode, 0x12, s.psn, s.len as usize);
            t.ext = ext_for(s.opcode, u64::from(s.psn.get()));
            t
        })
        .collect();
    let lens: Vec<usize> = specs
        .iter()
        .map(|t| {
            Layout::new(t.opcode, t.payload_len)
                .unwrap()
                .udp_payload_len()
        })
        .collect();
    let total: usize = lens.iter().sum();
    let hdrs = net.ip_len() + UDP_LEN;
    let mut f = vec![0u8; hdrs + total];
    match net {
        NetKind::V4(s) => write_ipv4_udp(&mut f, s, total).expect("ipv4"),
        NetKind::V6(s) => write_ipv6_udp(&mut f, s, total).expect("ipv6"),
    };
    let (h, mut rest) = f.split_at_mut(hdrs);
    let mut sh = SegHeaders::new(h).expect("train headers");
    let own = IpUdp::new(&h[..net.ip_len()], &h[net.ip_len()..]).unwrap();
    for (i, (t, s)) in specs.iter().zip(&segs).enumerate() {
        let (p, r) = rest.split_at_mut(lens[i]);
        let payload = &data[s.offset as usize..(s.offset + s.len) as usize];
        let hdr = if per_segment {
            sh.segment(i as u16, lens[i]).expect("segment headers")
        } else {
            own
        };
        let n = build(p, t, payload, &hdr, &TableCrc32, IcrcFlavor::Rxe).expect("build");
        assert_eq!(n, lens[i]);
        rest = r;
    }
    (f, lens, data)
}

/// Linux's UDP segmentation of `train`, modelled: a datagram per packet.
fn segment(train: &[u8], ip_len: usize, lens: &[usize]) -> Vec<Vec<u8>> {
    let hdrs = ip_len + UDP_LEN;
    let mut off = hdrs;
    let mut out = Vec::new();
    for (i, &l) in lens.iter().enumerate() {
        let mut s = train[..hdrs].to_vec();
        s.extend_from_slice(&train[off..off + l]);
        off += l;
        let ulen = (UDP_LEN + l) as u16;
        s[ip_len + 4..ip_len + 6].copy_from_slice(&ulen.to_be_bytes());
        if ip_len == IPV4_LEN {
            let id = u16::from_be_bytes([train[4], train[5]]).wrapping_add(i as u16);
            s[2..4].copy_from_slice(&(ulen + IPV4_LEN as u16).to_be_bytes());
            s[4..6].copy_from_slice(&id.to_be_bytes());
            Ipv4Hdr::new(&mut s[..IPV4_LEN]).unwrap().fill_checksum();
        } else {
            s[4..6].copy_from_slice(&ulen.to_be_bytes());
        }
        out.push(s);
    }
    assert_eq!(off, train.len());
    out
}

fn check(net: NetKind, op: MsgOp, len: u32, mtu: u32, skip: usize) {
    let mtu = Mtu::new(mtu).unwrap();
    let (t, lens, data) = train(&net, op, len, mtu, skip, true);
    let segs = segment(&t, net.ip_len(), &lens);
    let mut got = Vec::new();
    for (i, s) in segs.iter().enumerate() {
        let f = parse_frame(s, &Limits::new(mtu), &TableCrc32)
            .unwrap_or_else(|e| panic!("segment {i} of {}: {e:?}", segs.len()));
        if i + 1 < lens.len() {
            assert_eq!(lens[i], lens[0], "only the last may differ");
        }
        got.extend_from_slice(f.packet.payload());
    }
    let start = skip * mtu.bytes();
    assert_eq!(got, data[start..], "the segments carry the message");
}

#[test]
fn segments_of_a_train_pass_with_their_icrc() {
    for net in [v4(), v6()] {
        // SEND: FIRST, MIDDLEs, LAST all of one size but the last.
        check(net, MsgOp::Send, 15 * 4096, 4096, 0);
        check(net, MsgOp::Send, 10 * 1024 + 100, 1024, 0);
        // WRITE: the FIRST carries a RETH, so a train starts after it.
        check(net, MsgOp::Write, 64 * 1024 - 3, 4096, 1);
        check(net, MsgOp::Write, 62 * 1024, 1024, 1);
        check(net, MsgOp::ReadResponse, 8 * 256 + 2, 256, 1);
    }
}

#[test]
fn ipv4_identification_wraps_within_a_train() {
    let NetKind::V4(mut s) = v4() else {
        unreachable!()
    };
    s.id = 0xfffe;
    check(NetKind::V4(s), MsgOp::Send, 6 * 1024, 1024, 0);
}

#[test]
fn icrc_over_the_trains_own_headers_is_refused() {
    // The ICRC covers IP and UDP lengths (and the IPv4 identification):
    // over the train's headers it is wrong for every segment.
    for net in [v4(), v6()] {
        let mtu = Mtu::new(1024).unwrap();
        let (t, lens, _) = train(&net, MsgOp::Send, 4 * 1024, mtu, 0, false);
        for s in segment(&t, net.ip_len(), &lens) {
            let r = parse_frame(&s, &Limits::new(mtu), &TableCrc32);
            assert!(matches!(r, Err(ParseError::BadIcrc)), "{r:?}");
        }
    }
}

#[test]
fn segment_headers_refuse_what_no_segment_carries() {
    let mut h = vec![0u8; IPV6_LEN + UDP_LEN];
    h[0] = 0x50;
    assert!(SegHeaders::new(&h).is_err(), "IP version 5");
    let (t, _, _) = train(&v4(), MsgOp::Send, 2048, Mtu::new(1024).unwrap(), 0, true);
    let mut sh = SegHeaders::new(&t).unwrap();
    assert!(sh.segment(0, 65535).is_err(), "longer than UDP allows");
    assert!(
        SegHeaders::new(&t[..IPV4_LEN + 4]).is_err(),
        "no whole UDP header"
    );
}
