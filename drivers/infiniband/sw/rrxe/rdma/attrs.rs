// SPDX-License-Identifier: GPL-2.0

//! Attribute structs of the verbs calls: plain data re-exported under
//! short names, and safe views of the ones holding pointers.

use super::bindings;
use super::ib::QpAttrMask;

/// QP capabilities (`struct ib_qp_cap`).
pub(crate) type QpCap = bindings::ib_qp_cap;
/// QP attributes (`struct ib_qp_attr`); its `ah_attr`s are read through
/// [`AhAttr`].
pub(crate) type QpAttr = bindings::ib_qp_attr;
/// SRQ attributes (`struct ib_srq_attr`).
pub(crate) type SrqAttr = bindings::ib_srq_attr;
/// CQ creation attributes (`struct ib_cq_init_attr`).
pub(crate) type CqInitAttr = bindings::ib_cq_init_attr;

/// A GID's type in the GID table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GidType {
    /// InfiniBand.
    Ib,
    /// RoCE v1.
    RoceV1,
    /// RoCE v2 (UDP encapsulation).
    RoceV2,
}

/// The source GID entry an address vector refers to.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SgidEntry {
    /// The GID.
    pub(crate) gid: [u8; 16],
    /// Its type.
    pub(crate) gid_type: GidType,
    /// Its net device.
    pub(crate) netdev: GidNetdev,
}

/// A VLAN device on the port's net device: its interface index, VLAN ID
/// and MAC (which may differ from the port's), as they were when a GID
/// entry was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Vlan {
    pub(crate) ifindex: i32,
    pub(crate) id: u16,
    pub(crate) mac: [u8; 6],
}

/// What a GID entry's net device is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GidNetdev {
    /// The port's net device (or one that is not a VLAN device).
    Port,
    /// A VLAN device on it.
    Vlan(Vlan),
    /// A VLAN device in another network namespace than its real device:
    /// not usable (its interface index means nothing where the port's
    /// routes are looked up).
    Unusable,
}

impl GidNetdev {
    /// Reads the net device of GID entry `attr`.
    ///
    /// # Safety
    ///
    /// `attr` is a valid GID entry the caller holds for the call.
    pub(crate) unsafe fn of(attr: *const bindings::ib_gid_attr) -> Self {
        let mut id = 0u16;
        let mut mac = [0u8; 6];
        // SAFETY: Per the contract `attr` is valid; the helper reads its
        // net device under RCU; `id` and `mac` (6 bytes) are locals.
        let ifindex =
            unsafe { bindings::rrxe_helper_gid_attr_vlan(attr, &mut id, mac.as_mut_ptr()) };
        match ifindex {
            0 => Self::Port,
            i if i > 0 => Self::Vlan(Vlan {
                ifindex: i,
                id,
                mac,
            }),
            _ => Self::Unusable,
        }
    }
}

/// A read-only view of an `rdma_ah_attr` that ib_core passes to a verb,
/// valid for the call (ib_core holds the GID entry it points to).
pub(crate) struct AhAttr<'a> {
    raw: &'a bindings::rdma_ah_attr,
}

impl<'a> AhAttr<'a> {
    /// Wraps an attribute.
    ///
    /// # Safety
    ///
    /// `raw.grh.sgid_attr` must be null or point at a GID entry that stays
    /// valid for `'a`.
    pub(crate) unsafe fn new(raw: &'a bindings::rdma_ah_attr) -> Self {
        Self { raw }
    }

    /// Whether the GRH fields are valid (`IB_AH_GRH`).
    pub(crate) fn has_grh(&self) -> bool {
        u32::from(self.raw.ah_flags) & bindings::ib_ah_flags_IB_AH_GRH != 0
    }

    /// The port number.
    pub(crate) fn port_num(&self) -> u32 {
        self.raw.port_num
    }

    /// The destination GID.
    pub(crate) fn dgid(&self) -> [u8; 16] {
        // SAFETY: `ib_gid` is a union of plain byte arrays and integers;
        // every bit pattern is a valid `raw`.
        unsafe { self.raw.grh.dgid.raw }
    }

    /// The flow label.
    pub(crate) fn flow_label(&self) -> u32 {
        self.raw.grh.flow_label
    }

    /// The source GID index.
    pub(crate) fn sgid_index(&self) -> u8 {
        self.raw.grh.sgid_index
    }

    /// The hop limit.
    pub(crate) fn hop_limit(&self) -> u8 {
        self.raw.grh.hop_limit
    }

    /// The traffic class.
    pub(crate) fn traffic_class(&self) -> u8 {
        self.raw.grh.traffic_class
    }

    /// The destination MAC (RoCE).
    pub(crate) fn dmac(&self) -> [u8; 6] {
        // SAFETY: The union's members are plain data; `roce` is the one
        // RoCE attributes use, and any bytes are a valid MAC.
        unsafe { self.raw.__bindgen_anon_1.roce.dmac }
    }

    /// The source GID entry, if ib_core resolved one.
    pub(crate) fn sgid(&self) -> Option<SgidEntry> {
        let p = self.raw.grh.sgid_attr;
        if p.is_null() {
            return None;
        }
        // SAFETY: Per `new`'s contract the entry is valid for `'a`.
        let a = unsafe { &*p };
        let gid_type = match a.gid_type {
            bindings::ib_gid_type_IB_GID_TYPE_IB => GidType::Ib,
            bindings::ib_gid_type_IB_GID_TYPE_ROCE => GidType::RoceV1,
            _ => GidType::RoceV2,
        };
        // SAFETY: As `dgid`.
        let gid = unsafe { a.gid.raw };
        // SAFETY: The entry is valid for `'a` (see above).
        let netdev = unsafe { GidNetdev::of(p) };
        Some(SgidEntry {
            gid,
            gid_type,
            netdev,
        })
    }
}

/// Fills an `rdma_ah_attr` for a query, as a RoCE address with a GRH.
pub(crate) struct AhAttrOut<'a> {
    raw: &'a mut bindings::rdma_ah_attr,
}

/// What a query reports of an address vector.
pub(crate) struct AhFields {
    /// Port number.
    pub(crate) port_num: u32,
    /// Destination GID.
    pub(crate) dgid: [u8; 16],
    /// Flow label.
    pub(crate) flow_label: u32,
    /// Source GID index.
    pub(crate) sgid_index: u8,
    /// Hop limit.
    pub(crate) hop_limit: u8,
    /// Traffic class.
    pub(crate) traffic_class: u8,
    /// Destination MAC.
    pub(crate) dmac: [u8; 6],
}

impl<'a> AhAttrOut<'a> {
    /// Wraps an attribute to fill. Any previous content is discarded
    /// without dereferencing its pointers.
    pub(crate) fn new(raw: &'a mut bindings::rdma_ah_attr) -> Self {
        Self { raw }
    }

    /// Writes `f` (a zeroed attribute first; the GID entry pointer stays
    /// null: ib_core resolves it for queries from `sgid_index`).
    pub(crate) fn set(&mut self, f: &AhFields) {
        *self.raw = bindings::rdma_ah_attr::default();
        self.raw.type_ = bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_ROCE;
        self.raw.port_num = f.port_num;
        self.raw.ah_flags = bindings::ib_ah_flags_IB_AH_GRH as u8;
        self.raw.grh.dgid.raw = f.dgid;
        self.raw.grh.flow_label = f.flow_label;
        self.raw.grh.sgid_index = f.sgid_index;
        self.raw.grh.hop_limit = f.hop_limit;
        self.raw.grh.traffic_class = f.traffic_class;
        self.raw.__bindgen_anon_1.roce = bindings::roce_ah_attr { dmac: f.dmac };
    }
}

/// QP types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum QpType {
    /// Reliable connected.
    Rc,
    /// Unreliable connected.
    Uc,
    /// Unreliable datagram.
    Ud,
    /// General services interface (QP1).
    Gsi,
    /// Subnet management interface (QP0; never on RoCE).
    Smi,
    /// Anything else (XRC, raw packet, driver types).
    Other(u32),
}

impl QpType {
    /// From `enum ib_qp_type`.
    pub(crate) fn from_raw(t: u32) -> Self {
        match t {
            bindings::ib_qp_type_IB_QPT_RC => Self::Rc,
            bindings::ib_qp_type_IB_QPT_UC => Self::Uc,
            bindings::ib_qp_type_IB_QPT_UD => Self::Ud,
            bindings::ib_qp_type_IB_QPT_GSI => Self::Gsi,
            bindings::ib_qp_type_IB_QPT_SMI => Self::Smi,
            x => Self::Other(x),
        }
    }

    /// To `enum ib_qp_type`.
    pub(crate) fn raw(self) -> u32 {
        match self {
            Self::Rc => bindings::ib_qp_type_IB_QPT_RC,
            Self::Uc => bindings::ib_qp_type_IB_QPT_UC,
            Self::Ud => bindings::ib_qp_type_IB_QPT_UD,
            Self::Gsi => bindings::ib_qp_type_IB_QPT_GSI,
            Self::Smi => bindings::ib_qp_type_IB_QPT_SMI,
            Self::Other(x) => x,
        }
    }
}

/// A view of the QP creation attributes (`struct ib_qp_init_attr`):
/// the driver reads the request and writes back the capabilities granted.
pub(crate) struct QpInitAttr<'a> {
    raw: &'a mut bindings::ib_qp_init_attr,
}

impl<'a> QpInitAttr<'a> {
    /// Wraps ib_core's attributes for a create or query call.
    pub(crate) fn new(raw: &'a mut bindings::ib_qp_init_attr) -> Self {
        Self { raw }
    }

    /// The QP type.
    pub(crate) fn qp_type(&self) -> QpType {
        QpType::from_raw(self.raw.qp_type)
    }

    /// The requested capabilities.
    pub(crate) fn cap(&self) -> QpCap {
        self.raw.cap
    }

    /// Writes back the granted capabilities.
    pub(crate) fn set_cap(&mut self, cap: QpCap) {
        self.raw.cap = cap;
    }

    /// Whether every send WR generates a completion.
    pub(crate) fn sq_sig_all(&self) -> bool {
        self.raw.sq_sig_type == bindings::ib_sig_type_IB_SIGNAL_ALL_WR
    }

    /// `IB_QP_CREATE_*` flags.
    pub(crate) fn create_flags(&self) -> u32 {
        self.raw.create_flags
    }

    /// The port (GSI/SMI).
    pub(crate) fn port_num(&self) -> u32 {
        self.raw.port_num
    }

    /// Whether the QP receives from an SRQ.
    pub(crate) fn has_srq(&self) -> bool {
        !self.raw.srq.is_null()
    }

    /// Whether both CQs were given.
    pub(crate) fn has_cqs(&self) -> bool {
        !self.raw.send_cq.is_null() && !self.raw.recv_cq.is_null()
    }

    /// Fills the fields a query reports (type, signalling, capabilities).
    pub(crate) fn set_for_query(&mut self, qp_type: QpType, sq_sig_all: bool, cap: QpCap) {
        self.raw.qp_type = qp_type.raw();
        self.raw.sq_sig_type = if sq_sig_all {
            bindings::ib_sig_type_IB_SIGNAL_ALL_WR
        } else {
            bindings::ib_sig_type_IB_SIGNAL_REQ_WR
        };
        self.raw.cap = cap;
    }
}

/// The SRQ creation attributes.
pub(crate) struct SrqInitAttr<'a> {
    raw: &'a mut bindings::ib_srq_init_attr,
}

impl<'a> SrqInitAttr<'a> {
    /// Wraps ib_core's attributes.
    pub(crate) fn new(raw: &'a mut bindings::ib_srq_init_attr) -> Self {
        Self { raw }
    }

    /// Whether this is a basic SRQ (not XRC or tag matching).
    pub(crate) fn is_basic(&self) -> bool {
        self.raw.srq_type == bindings::ib_srq_type_IB_SRQT_BASIC
    }

    /// The requested sizes.
    pub(crate) fn attr(&self) -> SrqAttr {
        self.raw.attr
    }

    /// Writes back the granted sizes.
    pub(crate) fn set_attr(&mut self, a: SrqAttr) {
        self.raw.attr = a;
    }
}

/// ib_core's table of legal QP state transitions and the attributes each
/// requires or allows (`ib_modify_qp_is_ok`).
pub(crate) fn modify_qp_is_ok(cur: u32, next: u32, qp_type: QpType, mask: QpAttrMask) -> bool {
    // ib_core indexes its table with both states unchecked (uverbs checks
    // them, a kernel consumer's `ib_modify_qp` does not): out of range is
    // refused here.
    let last = bindings::ib_qp_state_IB_QPS_ERR;
    if cur > last || next > last {
        return false;
    }
    // SAFETY: A pure lookup in ib_core's static tables, with both states
    // within them (checked above).
    unsafe { bindings::ib_modify_qp_is_ok(cur, next, qp_type.raw(), mask.raw()) }
}

/// The attributes of a `modify_qp` call: plain fields through [`Self::get`],
/// the address vectors through views whose GID entries ib_core holds for
/// the call.
pub(crate) struct QpAttrIn<'a> {
    raw: &'a bindings::ib_qp_attr,
}

impl<'a> QpAttrIn<'a> {
    /// Wraps ib_core's attributes.
    ///
    /// # Safety
    ///
    /// The GID entry pointers of `raw`'s AVs must be null or valid for
    /// `'a`.
    pub(crate) unsafe fn new(raw: &'a bindings::ib_qp_attr) -> Self {
        Self { raw }
    }

    /// The plain fields.
    pub(crate) fn get(&self) -> &QpAttr {
        self.raw
    }

    /// The primary path.
    pub(crate) fn ah_attr(&self) -> AhAttr<'a> {
        // SAFETY: Per `new`.
        unsafe { AhAttr::new(&self.raw.ah_attr) }
    }

    /// The alternate path.
    pub(crate) fn alt_ah_attr(&self) -> AhAttr<'a> {
        // SAFETY: Per `new`.
        unsafe { AhAttr::new(&self.raw.alt_ah_attr) }
    }
}
