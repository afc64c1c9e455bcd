// SPDX-License-Identifier: GPL-2.0

//! The Performance Management Agent's answers (`pma::answer`): each
//! attribute's fields at their IBA offsets, saturation of the narrow
//! counters, what is not the agent's, and any 256 bytes answered without a
//! panic.

use proptest::prelude::*;
use rrxe_proto::pma::{self, Answer, PortCounts, MAD_SIZE};

/// A PMA MAD: class, method and attribute, a transaction id, and a port
/// select / counter select in the attribute's data.
fn mad(class: u8, method: u8, attr: u16) -> [u8; MAD_SIZE] {
    let mut m = [0u8; MAD_SIZE];
    m[0] = 1; // base version
    m[1] = class;
    m[2] = 1; // class version
    m[3] = method;
    m[8..16].copy_from_slice(&0x1122_3344_5566_7788u64.to_be_bytes());
    m[16..18].copy_from_slice(&attr.to_be_bytes());
    m[20..24].copy_from_slice(&0x0000_00ffu32.to_be_bytes());
    m[65] = 1; // port select
    m[66..68].copy_from_slice(&0xf00fu16.to_be_bytes());
    m
}

fn get(attr: u16) -> [u8; MAD_SIZE] {
    mad(pma::CLASS_PERF_MGMT, pma::METHOD_GET, attr)
}

fn be16(m: &[u8], at: usize) -> u16 {
    u16::from_be_bytes(m[at..at + 2].try_into().unwrap())
}
fn be32(m: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(m[at..at + 4].try_into().unwrap())
}
fn be64(m: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(m[at..at + 8].try_into().unwrap())
}

const COUNTS: PortCounts = PortCounts {
    xmit_bytes: 4 * 1000 + 3,
    rcv_bytes: 4 * 2000,
    xmit_pkts: 30,
    rcv_pkts: 40,
    rcv_errors: 5,
    link_downed: 2,
};

/// The response's header is the request's, as a GetResp with status 0.
fn check_header(req: &[u8], out: &[u8], status: u16) {
    assert_eq!(out[..3], req[..3]);
    assert_eq!(out[3], pma::METHOD_GET_RESP);
    assert_eq!(be16(out, 4), status);
    assert_eq!(
        out[6..24],
        req[6..24],
        "class specific, tid, attribute, modifier"
    );
    assert!(out[24..64].iter().all(|&b| b == 0), "reserved");
}

#[test]
fn port_counters_ext() {
    let req = get(pma::ATTR_PORT_COUNTERS_EXT);
    let mut out = [0xaau8; MAD_SIZE];
    assert_eq!(pma::answer(&req, &COUNTS, &mut out), Answer::Reply);
    check_header(&req, &out, 0);
    assert_eq!(out[65], 1, "port select");
    assert_eq!(be16(&out, 66), 0xf00f, "counter select");
    assert_eq!(be64(&out, 72), 1000, "PortXmitData, in 4-byte words");
    assert_eq!(be64(&out, 80), 2000, "PortRcvData");
    assert_eq!(be64(&out, 88), 30, "PortXmitPkts");
    assert_eq!(be64(&out, 96), 40, "PortRcvPkts");
    assert!(
        out[104..].iter().all(|&b| b == 0),
        "what is not counted is 0"
    );
}

#[test]
fn port_counters() {
    let req = get(pma::ATTR_PORT_COUNTERS);
    let mut out = [0xaau8; MAD_SIZE];
    assert_eq!(pma::answer(&req, &COUNTS, &mut out), Answer::Reply);
    check_header(&req, &out, 0);
    assert_eq!(out[65], 1);
    assert_eq!(out[71], 2, "LinkDownedCounter");
    assert_eq!(be16(&out, 72), 5, "PortRcvErrors");
    assert_eq!(be32(&out, 88), 1000, "PortXmitData");
    assert_eq!(be32(&out, 92), 2000, "PortRcvData");
    assert_eq!(be32(&out, 96), 30, "PortXmitPkts");
    assert_eq!(be32(&out, 100), 40, "PortRcvPkts");
    assert_eq!(be32(&out, 104), 0, "PortXmitWait");
}

#[test]
fn narrow_counters_stop_at_all_ones() {
    let big = PortCounts {
        xmit_bytes: 4 * (u64::from(u32::MAX) + 7),
        rcv_bytes: u64::MAX,
        xmit_pkts: u64::from(u32::MAX) + 1,
        rcv_pkts: u64::from(u32::MAX),
        rcv_errors: 70_000,
        link_downed: 300,
    };
    let mut out = [0u8; MAD_SIZE];
    pma::answer(&get(pma::ATTR_PORT_COUNTERS), &big, &mut out);
    assert_eq!(out[71], 0xff);
    assert_eq!(be16(&out, 72), 0xffff);
    assert_eq!(be32(&out, 88), u32::MAX);
    assert_eq!(be32(&out, 92), u32::MAX);
    assert_eq!(be32(&out, 96), u32::MAX);
    assert_eq!(be32(&out, 100), u32::MAX, "exactly all ones stays");
    // The extended ones do not stop.
    pma::answer(&get(pma::ATTR_PORT_COUNTERS_EXT), &big, &mut out);
    assert_eq!(be64(&out, 72), u64::from(u32::MAX) + 7);
    assert_eq!(be64(&out, 80), u64::MAX / 4);
    assert_eq!(be64(&out, 88), u64::from(u32::MAX) + 1);
}

#[test]
fn class_port_info_offers_the_extended_counters() {
    let req = get(pma::ATTR_CLASS_PORT_INFO);
    let mut out = [0xaau8; MAD_SIZE];
    assert_eq!(pma::answer(&req, &COUNTS, &mut out), Answer::Reply);
    check_header(&req, &out, 0);
    assert_eq!(be16(&out, 66), pma::CAP_EXT_WIDTH_NOIETF);
    assert!(out[68..].iter().all(|&b| b == 0));
}

#[test]
fn an_unknown_attribute_is_refused_in_the_status() {
    for attr in [0x0000, 0x0002, 0x0011, 0x0013, 0x001e, 0xff00] {
        let req = get(attr);
        let mut out = [0xaau8; MAD_SIZE];
        assert_eq!(pma::answer(&req, &COUNTS, &mut out), Answer::Reply);
        check_header(&req, &out, pma::STATUS_UNSUPPORTED_ATTR);
        assert!(out[64..].iter().all(|&b| b == 0), "no data for {attr:#x}");
    }
}

#[test]
fn another_class_version_is_refused_in_the_status() {
    for v in [0u8, 2, 0xff] {
        let mut req = get(pma::ATTR_PORT_COUNTERS_EXT);
        req[2] = v;
        let mut out = [0xaau8; MAD_SIZE];
        assert_eq!(pma::answer(&req, &COUNTS, &mut out), Answer::Reply);
        check_header(&req, &out, pma::STATUS_BAD_VERSION);
        assert!(out[64..].iter().all(|&b| b == 0), "no data for version {v}");
    }
}

#[test]
fn what_is_not_a_pma_get_is_left_alone() {
    let cases = [
        mad(0x07, pma::METHOD_GET, pma::ATTR_PORT_COUNTERS), // CM
        mad(
            pma::CLASS_PERF_MGMT,
            pma::METHOD_GET_RESP,
            pma::ATTR_PORT_COUNTERS,
        ),
        mad(pma::CLASS_PERF_MGMT, 0x02, pma::ATTR_PORT_COUNTERS), // Set
        mad(pma::CLASS_PERF_MGMT, 0x06, pma::ATTR_PORT_COUNTERS), // Trap
    ];
    for req in cases {
        let mut out = [0xaau8; MAD_SIZE];
        assert_eq!(pma::answer(&req, &COUNTS, &mut out), Answer::NotMine);
        assert!(out.iter().all(|&b| b == 0xaa), "output untouched");
    }
    let req = get(pma::ATTR_PORT_COUNTERS);
    let mut out = [0u8; MAD_SIZE];
    assert_eq!(
        pma::answer(&req[..MAD_SIZE - 1], &COUNTS, &mut out),
        Answer::NotMine
    );
    assert_eq!(
        pma::answer(&req, &COUNTS, &mut out[..MAD_SIZE - 1]),
        Answer::NotMine
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Any MAD: a reply exactly for a PMA Get, whose header echoes the
    /// request's; never a panic.
    #[test]
    fn any_mad(req in proptest::collection::vec(any::<u8>(), MAD_SIZE), class_is_pma in any::<bool>(),
               get in any::<bool>()) {
        let mut req = req;
        if class_is_pma { req[1] = pma::CLASS_PERF_MGMT; }
        if get { req[3] = pma::METHOD_GET; }
        let mut out = [0u8; MAD_SIZE];
        let a = pma::answer(&req, &COUNTS, &mut out);
        let mine = req[1] == pma::CLASS_PERF_MGMT && req[3] == pma::METHOD_GET;
        prop_assert_eq!(a == Answer::Reply, mine);
        if mine {
            prop_assert_eq!(out[3], pma::METHOD_GET_RESP);
            prop_assert_eq!(&out[8..20], &req[8..20]);
        }
    }
}
