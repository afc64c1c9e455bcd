// SPDX-License-Identifier: GPL-2.0

//! The rrxe device: one `ib_device` per `rdma link add`, bound to one
//! Ethernet net device, with one RoCEv2 port.
//!
//! Port state and active MTU are derived from the net device whenever they
//! are queried, so they can never be stale; the netdev notifier only turns
//! changes into IB port events.
//!
//! Locking: `Rrxe::inner` (a spinlock) guards the few attributes that
//! `modify_device`/`modify_port` change. The device lives from
//! registration until ib_core's `dealloc_driver`; see `rdma::device`.

use crate::counters::{Counter, KeyViolation};
use crate::net::dev::Core;
use crate::net::{NetSock, NetUse};
use crate::param::{self, *};
use crate::quota::{self, Charge, Kind, Member, Quota, UserShare, KINDS};
use crate::rdma::consts::{
    IBK_ALLOW_USER_UNREG, IBK_LOCAL_DMA_LKEY, IBK_ON_DEMAND_PAGING, IBK_SG_GAPS_REG, IB_ATOMIC_HCA,
    IB_DEFAULT_PKEY_FULL, IB_MGMT_MAD_SIZE, IB_MTU_4096, IB_PORT_ACTIVE, IB_PORT_CM_SUP,
    IB_PORT_DOWN, IB_PORT_PHYS_STATE_DISABLED, IB_PORT_PHYS_STATE_LINK_UP,
    IB_PORT_PHYS_STATE_POLLING, IB_WIDTH_1X, RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP,
};
use crate::rdma::device::{
    Device, DeviceAttr, DeviceModify, PortAttr, PortEvent, PortImmutable, PortModify,
};
use crate::rdma::ib::{DeviceModifyFlags, PortModifyFlags};
use crate::rdma::netdev::NetDevice;
use crate::rdma::objects::{Ah, Cq, Mr, Mw, Pd, Qp, Srq, UContext};
use crate::rdma::odp;
use crate::rdma::pool::{Handle, Pool};
use crate::rdma::sync::OneWayGate;
use crate::rdma::udata::UData;
use kernel::new_spinlock;
use kernel::prelude::*;
use kernel::sync::{Arc, SpinLock};
use kernel::types::ARef;

/// Driver state of one rrxe device.
#[pin_data(PinnedDrop)]
pub(crate) struct Rrxe {
    /// The net device carrying the port; held for the device's lifetime.
    ndev: ARef<NetDevice>,
    /// What `modify_device`/`modify_port` change.
    #[pin]
    inner: SpinLock<RrxeInner>,
    /// Objects by index, with rxe's index ranges and limits.
    #[pin]
    pub(crate) uc_pool: Pool<UContext<Rrxe>>,
    #[pin]
    pub(crate) pd_pool: Pool<Pd<Rrxe>>,
    #[pin]
    pub(crate) ah_pool: Pool<Ah<Rrxe>>,
    #[pin]
    pub(crate) cq_pool: Pool<Cq<Rrxe>>,
    #[pin]
    pub(crate) srq_pool: Pool<Srq<Rrxe>>,
    #[pin]
    pub(crate) mr_pool: Pool<Mr<Rrxe>>,
    #[pin]
    pub(crate) mw_pool: Pool<Mw<Rrxe>>,
    /// What receive needs: QPs by number, counters (shared with `net`).
    core: Arc<Core>,
    /// The per-user bounds on the pools.
    #[pin]
    quota: Quota,
    /// The sockets of the net device's namespace.
    net: NetUse,
}

struct RrxeInner {
    sys_image_guid: [u8; 8],
    port_cap_flags: u32,
    /// The port state last announced with an IB event.
    port_active: bool,
}

/// Per-user-context state: the user its objects are charged to (none
/// for a privileged caller; see `quota`).
pub(crate) struct UContextState {
    member: Option<Member>,
}

impl UContextState {
    /// The share the objects of the context `udata` was called in are
    /// charged to (`None` for a kernel consumer or a privileged context).
    pub(crate) fn share_of<'a>(udata: &UData<'a>) -> Option<&'a Arc<UserShare>> {
        udata.ucontext::<Rrxe>()?.member.as_ref().map(Member::share)
    }
}

/// Per-PD state.
pub(crate) struct PdState {
    /// Open while no memory of the PD faults: no MR of it ever was on
    /// demand (ODP). Another QP's run may then run a QP of the PD in its
    /// own context (a loopback chain, `engine::chain`), holding a pass;
    /// the first ODP registration closes it, and waits for those runs,
    /// before the MR exists. A fault waits on the user's memory (a FUSE
    /// file whose server never answers), and must do so in its own QP's
    /// work only, never in the system call or work of another user's QP,
    /// or in a kernel consumer's.
    pub(crate) no_faults: OneWayGate,
    /// The user a user PD's objects are charged to (`None`: a kernel
    /// consumer's or a privileged user's PD).
    share: Option<Arc<UserShare>>,
    /// The PD's own charge.
    _charge: Option<Charge>,
}

impl PdState {
    /// The state of a PD of the context `udata` was called in.
    pub(crate) fn new(udata: &UData<'_>) -> Result<Self> {
        let share = UContextState::share_of(udata).cloned();
        Ok(Self {
            no_faults: OneWayGate::new(),
            _charge: quota::charge(share.as_ref(), Kind::Pd)?,
            share,
        })
    }

    /// Charges one object of `kind` made in the PD to its user.
    pub(crate) fn charge(&self, kind: Kind) -> Result<Option<Charge>> {
        quota::charge(self.share.as_ref(), kind)
    }

    /// The user a user PD's objects are charged to (`None`: a kernel
    /// consumer's or a privileged user's PD).
    pub(crate) fn share(&self) -> Option<&Arc<UserShare>> {
        self.share.as_ref()
    }
}

/// The capacity of each pool, indexed by `quota::Kind`.
fn capacities() -> [u32; KINDS] {
    quota::ALL.map(|k| param::pool_size(k).capacity())
}

impl Rrxe {
    /// State for a new device on `ndev`.
    pub(crate) fn new(ndev: &NetDevice, net: NetUse) -> Result<impl PinInit<Self, Error>> {
        let guid = node_guid(ndev);
        let ndev = ARef::from(ndev);
        let core = Arc::pin_init(Core::new(ndev.clone()), GFP_KERNEL)?;
        let quota = Quota::new(capacities())?;
        Ok(try_pin_init!(Self {
            ndev,
            inner <- new_spinlock!(
                RrxeInner {
                    sys_image_guid: guid,
                    port_cap_flags: IB_PORT_CM_SUP,
                    port_active: false,
                },
                "Rrxe::inner"
            ),
            uc_pool <- Pool::new(1, MAX_UCONTEXT, MAX_UCONTEXT),
            pd_pool <- param::pool(Kind::Pd),
            ah_pool <- param::pool(Kind::Ah),
            cq_pool <- param::pool(Kind::Cq),
            srq_pool <- param::pool(Kind::Srq),
            mr_pool <- param::pool(Kind::Mr),
            mw_pool <- param::pool(Kind::Mw),
            core,
            quota <- quota,
            net,
        }? Error))
    }

    /// Starts receiving: packets arriving on the net device come to this
    /// device (after registration).
    pub(crate) fn attach_rx(&self) -> Result {
        self.net.attach(self.core.clone())
    }

    /// The net device.
    pub(crate) fn netdev_ref(&self) -> &NetDevice {
        &self.ndev
    }

    /// The namespace's sockets.
    pub(crate) fn net(&self) -> &NetSock {
        &self.net
    }

    /// What receive needs.
    pub(crate) fn core(&self) -> &Core {
        &self.core
    }

    /// The QPs by number.
    pub(crate) fn qp_pool(&self) -> &Pool<Qp<Rrxe>> {
        &self.core.qp_pool
    }

    /// The port's active MTU (`enum ib_mtu`).
    pub(crate) fn port_mtu(&self) -> u32 {
        param::ib_mtu_for_netdev(self.ndev.mtu())
    }

    /// Whether this device is bound to `ndev`.
    pub(crate) fn is_on(&self, ndev: &NetDevice) -> bool {
        *self.ndev == *ndev
    }

    /// Whether the port has a GSI QP.
    pub(crate) fn has_gsi(&self) -> bool {
        self.core.gsi.lock().is_some()
    }

    /// Records the GSI QP; `EINVAL` if the port has one.
    pub(crate) fn set_gsi(&self, h: Handle) -> Result {
        let mut g = self.core.gsi.lock();
        if g.is_some() {
            return Err(EINVAL);
        }
        *g = Some(h);
        Ok(())
    }

    /// Forgets the GSI QP `h`.
    pub(crate) fn clear_gsi(&self, h: Handle) {
        let mut g = self.core.gsi.lock();
        if *g == Some(h) {
            *g = None;
        }
    }

    /// The state of a new user context of the calling user.
    pub(crate) fn new_ucontext(&self) -> Result<UContextState> {
        self.uc_pool.count_check()?;
        Ok(UContextState {
            member: self.quota.join()?,
        })
    }

    /// `ENOMEM` if the device has its maximum of CQs.
    pub(crate) fn cq_count_check(&self) -> Result {
        self.cq_pool.count_check()
    }

    fn port_is_active(&self) -> bool {
        self.ndev.is_up_with_carrier()
    }

    /// Announces a change of port state, if there is one, to ib_core's
    /// consumers (`IB_EVENT_PORT_ACTIVE` / `IB_EVENT_PORT_ERR`).
    pub(crate) fn port_changed(dev: &Device<Self>) {
        let active = dev.port_is_active();
        let changed = {
            let mut inner = dev.inner.lock();
            let changed = inner.port_active != active;
            inner.port_active = active;
            changed
        };
        if changed {
            let ev = if active {
                PortEvent::Active
            } else {
                // Counted once per fall from active, however many net
                // device events report the port down.
                dev.core.counters.inc(Counter::LinkDowned);
                PortEvent::Error
            };
            dev.dispatch_port_event(ev);
            pr_info!(
                "{}: port {}\n",
                dev.name(),
                if active { "active" } else { "down" }
            );
        }
    }
}

#[pinned_drop]
impl PinnedDrop for Rrxe {
    fn drop(self: Pin<&mut Self>) {
        // No packet reaches the device any more.
        self.net.detach(&self.ndev);
    }
}

/// The node GUID of a device on `ndev`: the modified EUI-64 of its MAC.
pub(crate) fn node_guid(ndev: &NetDevice) -> [u8; 8] {
    param::eui64_from_mac(&ndev.mac())
}

fn check_port(port: u32) -> Result {
    if port == 1 {
        Ok(())
    } else {
        Err(EINVAL)
    }
}

/// Device-level verbs (called from `verbs.rs`).
impl Rrxe {
    pub(crate) fn query_device(
        dev: &Device<Self>,
        attr: &mut DeviceAttr,
        udata: &UData<'_>,
    ) -> Result {
        if udata.inlen() != 0 || udata.outlen() != 0 {
            return Err(EINVAL);
        }
        let sys_image_guid = dev.inner.lock().sys_image_guid;
        let odp = if odp::enabled() {
            IBK_ON_DEMAND_PAGING
        } else {
            0
        };
        *attr = DeviceAttr {
            vendor_id: VENDOR_ID,
            max_mr_size: MAX_MR_SIZE,
            page_size_cap: PAGE_SIZE_CAP,
            max_qp: MAX_QP as i32,
            max_qp_wr: MAX_QP_WR as i32,
            device_cap_flags: DEVICE_CAP_FLAGS,
            kernel_cap_flags: IBK_ALLOW_USER_UNREG | IBK_LOCAL_DMA_LKEY | IBK_SG_GAPS_REG | odp,
            max_send_sge: MAX_SGE as i32,
            max_recv_sge: MAX_SGE as i32,
            max_sge_rd: MAX_SGE_RD as i32,
            max_cq: MAX_CQ as i32,
            max_cqe: ((1u32 << MAX_LOG_CQE) - 1) as i32,
            max_mr: MAX_MR as i32,
            max_mw: MAX_MW as i32,
            max_pd: MAX_PD as i32,
            max_qp_rd_atom: MAX_QP_RD_ATOM as i32,
            max_res_rd_atom: MAX_RES_RD_ATOM as i32,
            max_qp_init_rd_atom: MAX_QP_INIT_RD_ATOM as i32,
            atomic_cap: IB_ATOMIC_HCA,
            max_mcast_grp: MAX_MCAST_GRP as i32,
            max_mcast_qp_attach: MAX_MCAST_QP_ATTACH as i32,
            max_total_mcast_qp_attach: MAX_TOT_MCAST_QP_ATTACH as i32,
            max_ah: MAX_AH as i32,
            max_srq: MAX_SRQ as i32,
            max_srq_wr: MAX_SRQ_WR as i32,
            max_srq_sge: MAX_SRQ_SGE as i32,
            max_fast_reg_page_list_len: MAX_FMR_PAGE_LIST_LEN,
            max_pkeys: MAX_PKEYS,
            local_ca_ack_delay: LOCAL_CA_ACK_DELAY,
            sys_image_guid: u64::from_ne_bytes(sys_image_guid),
            odp_caps: odp::caps(ODP_GENERAL_CAPS, ODP_RC_CAPS, ODP_UD_CAPS),
            ..Default::default()
        };
        Ok(())
    }

    pub(crate) fn query_port(dev: &Device<Self>, port: u32, attr: &mut PortAttr) -> Result {
        check_port(port)?;
        let cap_flags = dev.inner.lock().port_cap_flags;
        let keys = &dev.core().key_violations;
        let active = dev.port_is_active();
        *attr = PortAttr {
            state: if active { IB_PORT_ACTIVE } else { IB_PORT_DOWN },
            max_mtu: IB_MTU_4096,
            active_mtu: param::ib_mtu_for_netdev(dev.ndev.mtu()),
            gid_tbl_len: PORT_GID_TBL_LEN,
            port_cap_flags: cap_flags,
            max_msg_sz: PORT_MAX_MSG_SZ,
            bad_pkey_cntr: keys.get(KeyViolation::Pkey),
            qkey_viol_cntr: keys.get(KeyViolation::Qkey),
            pkey_tbl_len: PORT_PKEY_TBL_LEN,
            max_vl_num: 1,
            phys_state: if active {
                IB_PORT_PHYS_STATE_LINK_UP
            } else if dev.ndev.is_admin_up() {
                IB_PORT_PHYS_STATE_POLLING
            } else {
                IB_PORT_PHYS_STATE_DISABLED
            },
            ..Default::default()
        };
        // Speed and width follow the Ethernet link; 1X SDR when it cannot
        // tell, also for a net device on its way out. C rxe returns that
        // error instead, and so loses the port's last event: ib_core
        // queries the port before it hands IB_EVENT_PORT_ERR to its
        // clients and drops the event if the query fails, so user space
        // never learns that the port went down with its net device
        // (teardown.sh's netdev-delete victims wait for that event).
        let (speed, width) = dev.eth_speed(port).unwrap_or((1, IB_WIDTH_1X));
        attr.active_speed = speed;
        attr.active_width = width;
        Ok(())
    }

    pub(crate) fn port_immutable(
        _dev: &Device<Self>,
        port: u32,
        imm: &mut PortImmutable,
    ) -> Result {
        check_port(port)?;
        imm.core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
        imm.pkey_tbl_len = i32::from(PORT_PKEY_TBL_LEN);
        imm.gid_tbl_len = PORT_GID_TBL_LEN;
        imm.max_mad_size = IB_MGMT_MAD_SIZE;
        Ok(())
    }

    pub(crate) fn netdev(dev: &Device<Self>, port: u32) -> Option<ARef<NetDevice>> {
        check_port(port).ok()?;
        Some(dev.ndev.clone())
    }

    pub(crate) fn query_pkey(_dev: &Device<Self>, port: u32, index: u16) -> Result<u16> {
        check_port(port)?;
        if index != 0 {
            return Err(EINVAL);
        }
        Ok(IB_DEFAULT_PKEY_FULL)
    }

    pub(crate) fn modify_device(
        dev: &Device<Self>,
        mask: DeviceModifyFlags,
        m: &DeviceModify,
    ) -> Result {
        if mask.without(DeviceModifyFlags::SYS_IMAGE_GUID | DeviceModifyFlags::NODE_DESC)
            != DeviceModifyFlags::NONE
        {
            return Err(crate::rdma::error::eopnotsupp());
        }
        if mask.contains(DeviceModifyFlags::SYS_IMAGE_GUID) {
            // Given in host order; reported in network order.
            dev.inner.lock().sys_image_guid = m.sys_image_guid.to_be_bytes();
        }
        if mask.contains(DeviceModifyFlags::NODE_DESC) {
            let mut desc = [0u8; crate::rdma::device::NODE_DESC_MAX];
            for (d, s) in desc.iter_mut().zip(m.node_desc.iter()) {
                *d = *s;
            }
            dev.set_node_desc(&desc);
        }
        Ok(())
    }

    pub(crate) fn modify_port(
        dev: &Device<Self>,
        port: u32,
        mask: PortModifyFlags,
        m: &PortModify,
    ) -> Result {
        check_port(port)?;
        if mask.without(PortModifyFlags::RESET_QKEY_CNTR) != PortModifyFlags::NONE {
            return Err(crate::rdma::error::eopnotsupp());
        }
        let mut inner = dev.inner.lock();
        inner.port_cap_flags |= m.set_port_cap_mask;
        inner.port_cap_flags &= !m.clr_port_cap_mask;
        if mask.contains(PortModifyFlags::RESET_QKEY_CNTR) {
            dev.core().key_violations.reset(KeyViolation::Qkey);
        }
        Ok(())
    }
}
