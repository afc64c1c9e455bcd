// SPDX-License-Identifier: GPL-2.0

//! Address vectors: where a QP (connected) or an AH (datagram) sends to.
//! Built from a verbs `rdma_ah_attr`, checked as rxe checks it, and kept
//! in the form the transmit path needs (addresses derived once).

use crate::rdma::attrs::{AhAttr, AhAttrOut, AhFields, GidNetdev, GidType, Vlan};
use kernel::prelude::*;

/// The network an address vector uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Network {
    /// Not set (a QP before its path is configured).
    #[default]
    None,
    /// RoCEv2 over IPv4 (IPv4-mapped GIDs).
    Ipv4,
    /// RoCEv2 over IPv6.
    Ipv6,
}

/// An address vector.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Av {
    pub(crate) port_num: u32,
    pub(crate) network: Network,
    pub(crate) dgid: [u8; 16],
    pub(crate) sgid: [u8; 16],
    pub(crate) sgid_index: u8,
    pub(crate) flow_label: u32,
    pub(crate) hop_limit: u8,
    pub(crate) traffic_class: u8,
    pub(crate) dmac: [u8; 6],
    /// The VLAN device the source GID belongs to, if not the port's own
    /// net device: packets go out of it (a looped-back one carries its
    /// VLAN ID).
    pub(crate) vlan: Option<Vlan>,
}

/// Whether a GID is an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`).
pub(crate) fn is_v4_mapped(gid: &[u8; 16]) -> bool {
    gid[..10].iter().all(|&b| b == 0) && gid[10] == 0xff && gid[11] == 0xff
}

/// Whether a GID is a multicast address: an IPv4-mapped one in
/// 224.0.0.0/4, or IPv6 `ff00::/8`.
pub(crate) fn is_multicast_gid(gid: &[u8; 16]) -> bool {
    if is_v4_mapped(gid) {
        gid[12] & 0xf0 == 0xe0
    } else {
        gid[0] == 0xff
    }
}

impl Av {
    /// Checks `attr` as rxe does (a GRH must name a valid source GID of a
    /// RoCEv2 type with an IPv4 or IPv6 address) and builds the vector.
    pub(crate) fn from_attr(attr: &AhAttr<'_>, gid_tbl_len: u32) -> Result<Self> {
        let mut av = Av {
            port_num: attr.port_num(),
            ..Default::default()
        };
        if !attr.has_grh() {
            return Ok(av);
        }
        if u32::from(attr.sgid_index()) >= gid_tbl_len {
            return Err(EINVAL);
        }
        let sgid = attr.sgid().ok_or(EINVAL)?;
        if sgid.gid_type != GidType::RoceV2 {
            return Err(EINVAL);
        }
        av.network = if is_v4_mapped(&sgid.gid) {
            Network::Ipv4
        } else {
            Network::Ipv6
        };
        av.sgid = sgid.gid;
        av.dgid = attr.dgid();
        av.sgid_index = attr.sgid_index();
        av.flow_label = attr.flow_label();
        av.hop_limit = attr.hop_limit();
        av.traffic_class = attr.traffic_class();
        av.dmac = attr.dmac();
        av.vlan = match sgid.netdev {
            GidNetdev::Port => None,
            GidNetdev::Vlan(v) => Some(v),
            GidNetdev::Unusable => return Err(EINVAL),
        };
        Ok(av)
    }

    /// Whether the vector leads to this device (loopback): its
    /// destination MAC is that of the source GID's net device, `port_mac`
    /// (the port's net device's) or a VLAN device's own. Packets on such
    /// a path never leave the host: the transmit path hands them to this
    /// device's receive path directly (`net::tx`), and the receive path
    /// takes none from the network for a connected QP whose path this is
    /// (`net::rx`).
    pub(crate) fn leads_here(&self, port_mac: [u8; 6]) -> bool {
        self.dmac == self.vlan.map_or(port_mac, |v| v.mac)
    }

    /// Reports the vector as a RoCE address with a GRH (as rxe does).
    pub(crate) fn fill_attr(&self, out: &mut AhAttrOut<'_>) {
        out.set(&AhFields {
            port_num: self.port_num,
            dgid: self.dgid,
            flow_label: self.flow_label,
            sgid_index: self.sgid_index,
            hop_limit: self.hop_limit,
            traffic_class: self.traffic_class,
            dmac: self.dmac,
        });
    }
}
