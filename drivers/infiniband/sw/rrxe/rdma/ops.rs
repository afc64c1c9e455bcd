// SPDX-License-Identifier: GPL-2.0

//! The verbs a driver implements ([`DeviceOps`]) and the adapter that turns
//! them into a C `struct ib_device_ops`.
//!
//! The adapter is the one place where C arguments become Rust references
//! and `Result`s become errnos. Objects that ib_core allocates get their
//! state from the driver's `create_*`, initialised in place in the object;
//! if the driver's `*_created` hook then fails, the adapter takes the
//! object out of any pool and drops the state again before returning the
//! error, so ib_core frees a clean object.

use super::attrs::{
    AhAttr, AhAttrOut, CqInitAttr, QpAttr, QpAttrIn, QpInitAttr, SrqAttr, SrqInitAttr,
};
use super::bindings;
use super::device::{
    Device, DeviceAttr, DeviceModify, LinkLayer, PortAttr, PortImmutable, PortModify,
};
use super::ib::{
    Access, Advice, CqNotify, DeviceModifyFlags, PortModifyFlags, QpAttrMask, ReregFlags,
    SrqAttrMask,
};
use super::mr::{KernelMem, MrType, SgList};
use super::netdev::NetDevice;
use super::objects::{
    Ah, Cq, Creating, KAh, KCq, KMr, KMw, KPd, KQp, KSrq, KUContext, Mr, Mw, Obj, Pd, Qp, Srq,
    UContext,
};
use super::shmem::MmapEntry;
use super::stats::{CounterId, StatDesc};
use super::task::QpTimer;
use super::udata::UData;
use super::wc::Wc;
use super::wqe::{KernelRecvWrs, KernelSendWrs, SgeList};
use core::marker::PhantomData;
use kernel::build_error;
use kernel::error::{from_result, VTABLE_DEFAULT_ERROR};
use kernel::prelude::*;
use kernel::types::ARef;

/// The driver side of an `ib_device`: its per-device state and its verbs.
///
/// The ops run in process context and may sleep, except where noted.
/// The create ops of objects with locks (CQs, QPs, SRQs, MRs, MWs) return
/// an initialiser that the adapter runs in place, in the object's own
/// allocation, which does not move until destroy: the state type is the
/// pinned struct itself. The other states are built by value (a value
/// initialises itself).
#[vtable]
pub(crate) trait DeviceOps: Send + Sync + Sized + 'static {
    /// `ops.driver_id`.
    const DRIVER_ID: u32;
    /// `ops.uverbs_abi_ver`.
    const ABI_VERSION: u32;
    /// The port counters (`rdma statistic show`), in order.
    const COUNTERS: &'static [StatDesc];

    /// State of a user context.
    type UContext: Send + Sync;
    /// State of a protection domain.
    type Pd: Send + Sync;
    /// State of an address handle.
    type Ah: Send + Sync;
    /// State of a completion queue.
    type Cq: Send + Sync;
    /// State of a queue pair.
    type Qp: Send + Sync;
    /// State of a shared receive queue.
    type Srq: Send + Sync;
    /// State of a memory window.
    type Mw: Send + Sync;
    /// State of a memory region.
    type Mr: Send + Sync;

    // --- the device ---------------------------------------------------

    /// Fills the device attributes.
    fn query_device(dev: &Device<Self>, attr: &mut DeviceAttr, udata: &UData<'_>) -> Result;
    /// Fills the attributes of port `port`.
    fn query_port(dev: &Device<Self>, port: u32, attr: &mut PortAttr) -> Result;
    /// Fills the immutable properties of port `port`.
    fn port_immutable(dev: &Device<Self>, port: u32, imm: &mut PortImmutable) -> Result;
    /// The link layer of port `port`.
    fn link_layer(dev: &Device<Self>, port: u32) -> LinkLayer;
    /// The net device behind port `port`.
    fn netdev(dev: &Device<Self>, port: u32) -> Option<ARef<NetDevice>>;
    /// The P_Key at `index` of port `port`.
    fn query_pkey(dev: &Device<Self>, port: u32, index: u16) -> Result<u16>;
    /// Changes device attributes selected by `mask` (`IB_DEVICE_MODIFY_*`).
    fn modify_device(_dev: &Device<Self>, _mask: DeviceModifyFlags, _m: &DeviceModify) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Changes port attributes selected by `mask` (`IB_PORT_*`).
    fn modify_port(
        _dev: &Device<Self>,
        _port: u32,
        _mask: PortModifyFlags,
        _m: &PortModify,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// The device is registered, before ib_core's clients (and so users)
    /// see it: a driver announces its port state here.
    fn enable_driver(_dev: &Device<Self>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Current values of the port counters, one per `COUNTERS` entry.
    fn counters(_dev: &Device<Self>, _port: u32, _values: &mut [u64]) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// A MAD that arrived at port `port`'s GSI QP, before ib_mad's agents
    /// see it (`process_mad`; `mad` and `out` are `IB_MGMT_MAD_SIZE`
    /// bytes): `true` if `out` now holds the reply to send back, `false`
    /// to leave the MAD to the agents.
    fn process_mad(_dev: &Device<Self>, _port: u32, _mad: &[u8], _out: &mut [u8]) -> bool {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Binds `qp` to the per-QP counter `id` (`rdma statistic qp`):
    /// from now on its events count for that counter. ib_core holds the
    /// counter's lock (as for the two below).
    fn counter_bind_qp(_qp: &Qp<Self>, _id: CounterId) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Unbinds `qp` from its counter, adding to `values` (the counter's,
    /// one per `COUNTERS` entry) what it counted since the last update.
    fn counter_unbind_qp(_qp: &Qp<Self>, _values: &mut [u64]) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Brings `values`, counter `id`'s, up to date: adds what the QPs
    /// bound to it counted since the last update.
    fn counter_update(_dev: &Device<Self>, _id: CounterId, _values: &mut [u64]) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    // --- contexts and PDs ---------------------------------------------

    /// A new user context.
    fn alloc_ucontext(dev: &Device<Self>, udata: &mut UData<'_>) -> Result<Self::UContext>;
    /// A new protection domain.
    fn alloc_pd(dev: &Device<Self>, udata: &mut UData<'_>) -> Result<Self::Pd>;
    /// After the PD's state is in place.
    fn pd_created(_pd: &Pd<Self>) -> Result {
        Ok(())
    }

    // --- address handles ----------------------------------------------

    /// A new AH on `pd`. `sleepable` is false when called in atomic
    /// context.
    fn create_ah(pd: &Pd<Self>, attr: &AhAttr<'_>, sleepable: bool) -> Result<Self::Ah>;
    /// After the AH's state is in place (pool insertion, response).
    fn ah_created(ah: &Ah<Self>, sleepable: bool, udata: &mut UData<'_>) -> Result;
    /// Changes the AH's address.
    fn modify_ah(_ah: &Ah<Self>, _attr: &AhAttr<'_>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Reports the AH's address.
    fn query_ah(_ah: &Ah<Self>, _out: &mut AhAttrOut<'_>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    // --- completion queues --------------------------------------------

    /// The state of a new CQ, as an initialiser.
    fn create_cq(
        dev: &Device<Self>,
        attr: &CqInitAttr,
        udata: &mut UData<'_>,
    ) -> Result<impl PinInit<Self::Cq, Error>>;
    /// After the CQ's state is in place (mmap offer, response); the token
    /// sets what only creation sets (the size ib_core reports).
    fn cq_created(cq: Creating<'_, KCq, Self>, udata: &mut UData<'_>) -> Result;
    /// Before the CQ's state is dropped.
    fn destroy_cq(_cq: &Cq<Self>) -> Result {
        Ok(())
    }
    /// Resizes the CQ to at least `cqe` entries.
    fn resize_cq(_cq: &Cq<Self>, _cqe: u32, _udata: &mut UData<'_>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Arms the CQ (`IB_CQ_*` flags); returns 1 if `IB_CQ_REPORT_MISSED_EVENTS`
    /// was asked and completions are already waiting. Any context.
    fn req_notify_cq(cq: &Cq<Self>, flags: CqNotify) -> Result<i32>;
    /// Takes up to `wc.len()` completions (kernel consumers). Any context.
    fn poll_cq(cq: &Cq<Self>, wc: &mut [Wc]) -> Result<usize>;
    /// How many completions are waiting, up to `n`. Any context.
    fn peek_cq(_cq: &Cq<Self>, _n: usize) -> Result<usize> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    // --- queue pairs --------------------------------------------------

    /// The state of a new QP on `pd`, as an initialiser.
    fn create_qp(
        pd: &Pd<Self>,
        init: &mut QpInitAttr<'_>,
        udata: &mut UData<'_>,
    ) -> Result<impl PinInit<Self::Qp, Error>>;
    /// After the QP's state is in place (QPN, mmap offers, response); the
    /// token sets what only creation sets (the QPN).
    fn qp_created(
        qp: Creating<'_, KQp, Self>,
        init: &mut QpInitAttr<'_>,
        udata: &mut UData<'_>,
    ) -> Result;
    /// Changes the attributes in `mask` (`IB_QP_*`).
    fn modify_qp(
        qp: &Qp<Self>,
        attr: &QpAttrIn<'_>,
        mask: QpAttrMask,
        udata: &mut UData<'_>,
    ) -> Result;
    /// Reports the QP's attributes.
    fn query_qp(
        qp: &Qp<Self>,
        attr: &mut QpAttr,
        mask: QpAttrMask,
        init: &mut QpInitAttr<'_>,
    ) -> Result;
    /// Before the QP's work stops and its state is dropped.
    fn destroy_qp(_qp: &Qp<Self>) -> Result {
        Ok(())
    }
    /// The QP's driver details for `rdma res show qp -dd` (any QP of the
    /// device, for any caller: nothing that waits, nothing private).
    fn qp_details(_qp: &Qp<Self>, _out: &mut super::stats::ResAttrs) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Posts a kernel consumer's send requests, taking them from `wrs`
    /// in order; on an error, the request last taken is reported as the
    /// bad one. For a user QP (no requests) this is the doorbell. Any
    /// context.
    fn post_send(qp: &Qp<Self>, wrs: &mut KernelSendWrs<'_>) -> Result;
    /// Posts a kernel consumer's receive requests, as `post_send`.
    fn post_recv(qp: &Qp<Self>, wrs: &mut KernelRecvWrs<'_>) -> Result;
    /// Attaches a UD QP to the multicast group `gid` (ib_core checked the
    /// QP type and that the GID is a multicast address).
    fn attach_mcast(_qp: &Qp<Self>, _gid: &[u8; 16]) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Detaches a UD QP from the multicast group `gid`.
    fn detach_mcast(_qp: &Qp<Self>, _gid: &[u8; 16]) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// The QP's work (process context; never concurrent with itself).
    fn qp_run(qp: &Qp<Self>);
    /// A QP timer fired (softirq context).
    fn qp_timer(qp: &Qp<Self>, t: QpTimer);
    /// A buffer the QP sent (`kind` says what) was freed by the stack
    /// (any context).
    fn qp_tx_done(qp: &Qp<Self>, kind: super::objects::TxKind);

    // --- shared receive queues ----------------------------------------

    /// The state of a new SRQ on `pd`, as an initialiser.
    fn create_srq(
        _pd: &Pd<Self>,
        _init: &mut SrqInitAttr<'_>,
        _udata: &mut UData<'_>,
    ) -> Result<impl PinInit<Self::Srq, Error>> {
        vtable_default::<Self::Srq>()
    }
    /// After the SRQ's state is in place (pool, mmap offer, response).
    fn srq_created(_srq: &Srq<Self>, _udata: &mut UData<'_>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Posts a kernel consumer's receive requests to the SRQ, as
    /// `post_send`.
    fn post_srq_recv(_srq: &Srq<Self>, _wrs: &mut KernelRecvWrs<'_>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Changes the SRQ (`IB_SRQ_MAX_WR`, `IB_SRQ_LIMIT`).
    fn modify_srq(
        _srq: &Srq<Self>,
        _attr: &SrqAttr,
        _mask: SrqAttrMask,
        _udata: &mut UData<'_>,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Reports the SRQ's attributes.
    fn query_srq(_srq: &Srq<Self>, _attr: &mut SrqAttr) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    // --- memory regions and windows -----------------------------------

    /// The state of an MR for all kernel memory (kernel consumers only), as
    /// an initialiser.
    fn get_dma_mr(
        pd: &Pd<Self>,
        access: Access,
        mem: KernelMem,
    ) -> Result<impl PinInit<Self::Mr, Error>>;
    /// The state of an MR over user memory `[start, start + len)` at `iova`,
    /// as an initialiser.
    fn reg_user_mr(
        pd: &Pd<Self>,
        start: u64,
        len: u64,
        iova: u64,
        access: Access,
        udata: &mut UData<'_>,
    ) -> Result<impl PinInit<Self::Mr, Error>>;
    /// The state of an MR for fast registration (kernel consumers only), as
    /// an initialiser.
    fn alloc_mr(
        _pd: &Pd<Self>,
        _mr_type: MrType,
        _max_num_sg: u32,
        _mem: KernelMem,
    ) -> Result<impl PinInit<Self::Mr, Error>> {
        vtable_default::<Self::Mr>()
    }
    /// After the MR's state is in place (pool, keys).
    fn mr_created(mr: &Mr<Self>) -> Result;
    /// Changes translation, access or PD of a user MR in place (`IB_MR_REREG_*`).
    // The arguments of ib_core's `rereg_user_mr`, one for one.
    #[allow(clippy::too_many_arguments)]
    fn rereg_user_mr(
        _mr: &Mr<Self>,
        _flags: ReregFlags,
        _start: u64,
        _len: u64,
        _iova: u64,
        _access: Access,
        _pd: Option<&Pd<Self>>,
        _udata: &mut UData<'_>,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Advice on memory paged on demand behind the MRs of `pd` that
    /// `sges` name (lkey, MR address, length); with `flush`, done when the
    /// call returns (`IB_UVERBS_ADVISE_MR_FLAG_FLUSH`), else best effort.
    /// An advice ib_core does not name fails with `EOPNOTSUPP` here.
    fn advise_mr(_pd: &Pd<Self>, _advice: Advice, _flush: bool, _sges: SgeList<'_>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Before the MR's state is dropped.
    fn dereg_mr(_mr: &Mr<Self>) -> Result {
        Ok(())
    }
    /// Loads the pages of `sg` into a fast-registration MR
    /// ([`SgList::map_pages`]); returns the number of entries mapped.
    fn map_mr_sg(_mr: &Mr<Self>, _sg: &mut SgList<'_, Self>) -> Result<i32> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Adds one page address to a fast-registration MR's page list (called
    /// back from [`SgList::map_pages`]).
    fn mr_set_page(_mr: &Mr<Self>, _addr: u64) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// The state of a new MW on `pd`, as an initialiser.
    fn alloc_mw(_pd: &Pd<Self>, _udata: &mut UData<'_>) -> Result<impl PinInit<Self::Mw, Error>> {
        vtable_default::<Self::Mw>()
    }
    /// After the MW's state is in place (pool, rkey).
    fn mw_created(_mw: &Mw<Self>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Before the MW's state is dropped (`dealloc_mw` cannot fail).
    fn dealloc_mw(_mw: &Mw<Self>) {}
}

/// The body of an optional create op's default: like the other defaults,
/// a build error if the op is installed without the driver implementing
/// it. The state type stands for the initialiser (a value initialises
/// itself).
fn vtable_default<S>() -> Result<S> {
    build_error!(VTABLE_DEFAULT_ERROR)
}

/// Builds the C ops table from `T`'s implementation.
pub(crate) struct Adapter<T: DeviceOps>(PhantomData<T>);

macro_rules! dev {
    ($ib:expr) => {
        // SAFETY: ib_core calls ops only on a device whose ops are ours and
        // whose state is live (before `dealloc_driver`).
        unsafe { Device::<T>::from_raw($ib) }
    };
}

macro_rules! obj {
    ($kind:ty, $c:expr) => {
        // SAFETY: ib_core passes objects of this device that our create op
        // initialised and that are not destroyed yet.
        unsafe { Obj::<$kind, T>::from_raw($c) }
    };
}

macro_rules! udata {
    ($u:expr) => {
        // SAFETY: ib_core passes a udata that is null or valid for the call.
        unsafe { UData::from_raw($u) }
    };
}

/// Initialises the state of an ib_core-allocated object in place from the
/// driver's `create_*` answer. On an error there is nothing to undo: the
/// state is not initialised and ib_core frees the object.
///
/// # Safety
///
/// `c` must be a zeroed object of `K` allocated by ib_core with
/// `size_of::<Obj<K, T>>()` bytes, not yet initialised.
unsafe fn init_obj<K: super::objects::Kind, T: DeviceOps>(
    c: *mut K::C,
    init: Result<impl PinInit<K::State<T>, Error>>,
) -> Result {
    // SAFETY: Per the caller; ib_core keeps the object in place until its
    // destroy op, which drops the state first.
    unsafe { Obj::<K, T>::init_state(c, init?) }
}

/// Runs the driver's `*_created` hook on an object whose state is in
/// place; undoes the state if the hook fails.
///
/// # Safety
///
/// `c` must be an object of `K` whose state [`init_obj`] initialised and
/// that ib_core has not seen created yet.
unsafe fn finish_obj<K: super::objects::Kind, T: DeviceOps>(
    c: *mut K::C,
    created: impl FnOnce(Creating<'_, K, T>) -> Result,
) -> Result {
    // SAFETY: Per the caller the state is initialised.
    let obj = unsafe { Obj::<K, T>::from_raw(c) };
    // SAFETY: The state is initialised and the object's create op (the
    // caller) runs until after the hook returns.
    let creating = unsafe { Creating::new(obj) };
    if let Err(e) = created(creating) {
        // SAFETY: Initialised and not shared with anyone yet but possibly
        // inserted in a pool, which `destroy_state` undoes.
        unsafe { Obj::<K, T>::destroy_state(c) };
        return Err(e);
    }
    Ok(())
}

/// Creates the state of an ib_core-allocated object ([`init_obj`]) and runs
/// the driver's hook ([`finish_obj`]), for kinds whose initialiser borrows
/// nothing the hook needs.
///
/// # Safety
///
/// As [`init_obj`].
unsafe fn create_obj<K: super::objects::Kind, T: DeviceOps>(
    c: *mut K::C,
    init: Result<impl PinInit<K::State<T>, Error>>,
    created: impl FnOnce(Creating<'_, K, T>) -> Result,
) -> Result {
    // SAFETY: Per the caller.
    unsafe { init_obj::<K, T>(c, init)? };
    // SAFETY: Initialised just above; ib_core sees the object only after
    // this op returns.
    unsafe { finish_obj::<K, T>(c, created) }
}

impl<T: DeviceOps> Adapter<T> {
    /// The ops table.
    pub(crate) const OPS: bindings::ib_device_ops = {
        // SAFETY: All-zero is a valid `ib_device_ops`: null pointers, no
        // ops, zero sizes.
        let mut ops: bindings::ib_device_ops = unsafe { core::mem::zeroed() };
        ops.driver_id = T::DRIVER_ID;
        ops.uverbs_abi_ver = T::ABI_VERSION;
        ops.query_device = Some(Self::query_device);
        ops.query_port = Some(Self::query_port);
        ops.get_port_immutable = Some(Self::get_port_immutable);
        ops.get_link_layer = Some(Self::get_link_layer);
        ops.get_netdev = Some(Self::get_netdev);
        ops.query_pkey = Some(Self::query_pkey);
        ops.alloc_ucontext = Some(Self::alloc_ucontext);
        ops.dealloc_ucontext = Some(Self::dealloc_ucontext);
        ops.disassociate_ucontext = Some(Self::disassociate_ucontext);
        ops.mmap = Some(Self::mmap);
        ops.mmap_free = Some(Self::mmap_free);
        ops.alloc_pd = Some(Self::alloc_pd);
        ops.dealloc_pd = Some(Self::dealloc_pd);
        ops.create_ah = Some(Self::create_ah);
        ops.create_user_ah = Some(Self::create_ah);
        ops.destroy_ah = Some(Self::destroy_ah);
        ops.create_cq = Some(Self::create_cq);
        ops.destroy_cq = Some(Self::destroy_cq);
        ops.req_notify_cq = Some(Self::req_notify_cq);
        ops.poll_cq = Some(Self::poll_cq);
        ops.create_qp = Some(Self::create_qp);
        ops.modify_qp = Some(Self::modify_qp);
        ops.query_qp = Some(Self::query_qp);
        ops.destroy_qp = Some(Self::destroy_qp);
        ops.post_send = Some(Self::post_send);
        ops.post_recv = Some(Self::post_recv);
        // ib_core requires these three (`ib_device_check_mandatory`).
        ops.get_dma_mr = Some(Self::get_dma_mr);
        ops.reg_user_mr = Some(Self::reg_user_mr);
        ops.dereg_mr = Some(Self::dereg_mr);
        ops.dealloc_driver = Some(Self::dealloc_driver);
        // The optional verbs: installed when the driver implements them
        // (`HAS_*` of the `#[vtable]`), each group whole.
        assert!(T::HAS_ATTACH_MCAST == T::HAS_DETACH_MCAST);
        assert!(
            T::HAS_CREATE_SRQ == T::HAS_SRQ_CREATED
                && T::HAS_CREATE_SRQ == T::HAS_POST_SRQ_RECV
                && T::HAS_CREATE_SRQ == T::HAS_MODIFY_SRQ
                && T::HAS_CREATE_SRQ == T::HAS_QUERY_SRQ
        );
        assert!(T::HAS_ALLOC_MR == T::HAS_MAP_MR_SG && T::HAS_ALLOC_MR == T::HAS_MR_SET_PAGE);
        assert!(T::HAS_ALLOC_MW == T::HAS_MW_CREATED);
        if T::HAS_MODIFY_DEVICE {
            ops.modify_device = Some(Self::modify_device);
        }
        if T::HAS_MODIFY_PORT {
            ops.modify_port = Some(Self::modify_port);
        }
        if T::HAS_ENABLE_DRIVER {
            ops.enable_driver = Some(Self::enable_driver);
        }
        if T::HAS_COUNTERS {
            ops.alloc_hw_port_stats = Some(Self::alloc_hw_port_stats);
            ops.get_hw_stats = Some(Self::get_hw_stats);
        }
        assert!(
            T::HAS_COUNTER_BIND_QP == T::HAS_COUNTER_UNBIND_QP
                && T::HAS_COUNTER_BIND_QP == T::HAS_COUNTER_UPDATE
                && (!T::HAS_COUNTER_BIND_QP || T::HAS_COUNTERS)
        );
        if T::HAS_COUNTER_BIND_QP {
            ops.counter_bind_qp = Some(Self::counter_bind_qp);
            ops.counter_unbind_qp = Some(Self::counter_unbind_qp);
            ops.counter_dealloc = Some(Self::counter_dealloc);
            ops.counter_alloc_stats = Some(Self::counter_alloc_stats);
            ops.counter_update_stats = Some(Self::counter_update_stats);
        }
        if T::HAS_QP_DETAILS {
            ops.fill_res_qp_entry = Some(Self::fill_res_qp_entry);
        }
        if T::HAS_MODIFY_AH {
            ops.modify_ah = Some(Self::modify_ah);
        }
        if T::HAS_QUERY_AH {
            ops.query_ah = Some(Self::query_ah);
        }
        if T::HAS_RESIZE_CQ {
            ops.resize_cq = Some(Self::resize_cq);
        }
        if T::HAS_PEEK_CQ {
            ops.peek_cq = Some(Self::peek_cq);
        }
        if T::HAS_ATTACH_MCAST {
            ops.attach_mcast = Some(Self::attach_mcast);
            ops.detach_mcast = Some(Self::detach_mcast);
        }
        if T::HAS_CREATE_SRQ {
            ops.post_srq_recv = Some(Self::post_srq_recv);
            ops.create_srq = Some(Self::create_srq);
            ops.modify_srq = Some(Self::modify_srq);
            ops.query_srq = Some(Self::query_srq);
            ops.destroy_srq = Some(Self::destroy_srq);
        }
        if T::HAS_REREG_USER_MR {
            ops.rereg_user_mr = Some(Self::rereg_user_mr);
        }
        if T::HAS_ADVISE_MR {
            ops.advise_mr = Some(Self::advise_mr);
        }
        if T::HAS_PROCESS_MAD {
            ops.process_mad = Some(Self::process_mad);
        }
        if T::HAS_ALLOC_MR {
            ops.alloc_mr = Some(Self::alloc_mr);
            ops.map_mr_sg = Some(Self::map_mr_sg);
        }
        if T::HAS_ALLOC_MW {
            ops.alloc_mw = Some(Self::alloc_mw);
            ops.dealloc_mw = Some(Self::dealloc_mw);
        }
        ops.size_ib_ucontext = core::mem::size_of::<UContext<T>>();
        ops.size_ib_pd = core::mem::size_of::<Pd<T>>();
        ops.size_ib_ah = core::mem::size_of::<Ah<T>>();
        ops.size_ib_cq = core::mem::size_of::<Cq<T>>();
        ops.size_ib_qp = core::mem::size_of::<Qp<T>>();
        ops.size_ib_srq = core::mem::size_of::<Srq<T>>();
        ops.size_ib_mw = core::mem::size_of::<Mw<T>>();
        ops
    };

    // --- the device ---------------------------------------------------

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn query_device(
        ib: *mut bindings::ib_device,
        attr: *mut bindings::ib_device_attr,
        udata: *mut bindings::ib_udata,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core passes a valid attribute struct to fill.
            let attr = unsafe { &mut *attr };
            // SAFETY: ib_core passes a udata that is null or valid for the
            // call; not always a bundled one (`setup_device`).
            let udata = unsafe { UData::from_raw_bare(udata) };
            T::query_device(dev!(ib), attr, &udata)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn query_port(
        ib: *mut bindings::ib_device,
        port: u32,
        attr: *mut bindings::ib_port_attr,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core passes a valid struct to fill.
            T::query_port(dev!(ib), port, unsafe { &mut *attr })?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: a
    /// live device of ours, a received MAD and a reply buffer of
    /// `*out_mad_size` bytes (ib_mad's receive path, a local SMP, sysfs).
    #[allow(clippy::too_many_arguments)]
    unsafe extern "C" fn process_mad(
        ib: *mut bindings::ib_device,
        _flags: kernel::ffi::c_int,
        port: u32,
        _in_wc: *const bindings::ib_wc,
        in_grh: *const bindings::ib_grh,
        in_mad: *const bindings::ib_mad,
        out_mad: *mut bindings::ib_mad,
        out_mad_size: *mut usize,
        _out_mad_pkey_index: *mut u16,
    ) -> kernel::ffi::c_int {
        let n = core::mem::size_of::<bindings::ib_mad>();
        // (A port of `IB_MGMT_MAD_SIZE` MADs: the buffers are that long.)
        let room = if out_mad_size.is_null() {
            0
        } else {
            // SAFETY: Not null: ib_core's size of the output buffer.
            unsafe { *out_mad_size }
        };
        if in_mad.is_null() || out_mad.is_null() || room < n {
            return bindings::ib_mad_result_IB_MAD_RESULT_FAILURE as kernel::ffi::c_int;
        }
        // SAFETY: `in_mad` is a received MAD, a whole `struct ib_mad`, and
        // `out_mad` a buffer of at least as many bytes (checked above),
        // distinct from it; both live for the call.
        let (mad, out) = unsafe {
            (
                core::slice::from_raw_parts(in_mad.cast::<u8>(), n),
                core::slice::from_raw_parts_mut(out_mad.cast::<u8>(), n),
            )
        };
        if !T::process_mad(dev!(ib), port, mad, out) {
            // A received MAD (it has a GRH) goes on as if there were no
            // `process_mad`: to ib_mad's agents, and an unmatched Get or
            // Set is answered "unsupported" (which needs SUCCESS here).
            // Anything else (a MAD sent to the port itself without the
            // wire, or ib_core's sysfs) is not answered.
            let r = if in_grh.is_null() {
                bindings::ib_mad_result_IB_MAD_RESULT_FAILURE
            } else {
                bindings::ib_mad_result_IB_MAD_RESULT_SUCCESS
            };
            return r as kernel::ffi::c_int;
        }
        // SAFETY: Checked non-null above; ib_core reads back the reply's size.
        unsafe { *out_mad_size = n };
        (bindings::ib_mad_result_IB_MAD_RESULT_SUCCESS
            | bindings::ib_mad_result_IB_MAD_RESULT_REPLY) as kernel::ffi::c_int
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn get_port_immutable(
        ib: *mut bindings::ib_device,
        port: u32,
        imm: *mut bindings::ib_port_immutable,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core passes a valid struct to fill.
            T::port_immutable(dev!(ib), port, unsafe { &mut *imm })?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn get_link_layer(
        ib: *mut bindings::ib_device,
        port: u32,
    ) -> bindings::rdma_link_layer {
        match T::link_layer(dev!(ib), port) {
            LinkLayer::Ethernet => bindings::rdma_link_layer_IB_LINK_LAYER_ETHERNET,
        }
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn get_netdev(
        ib: *mut bindings::ib_device,
        port: u32,
    ) -> *mut bindings::net_device {
        match T::netdev(dev!(ib), port) {
            // The caller takes over the reference (it calls dev_put).
            Some(nd) => ARef::into_raw(nd).as_ptr().cast(),
            None => core::ptr::null_mut(),
        }
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn query_pkey(
        ib: *mut bindings::ib_device,
        port: u32,
        index: u16,
        pkey: *mut u16,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            let v = T::query_pkey(dev!(ib), port, index)?;
            // SAFETY: ib_core passes a valid out pointer.
            unsafe { pkey.write(v) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn enable_driver(ib: *mut bindings::ib_device) -> kernel::ffi::c_int {
        from_result(|| {
            T::enable_driver(dev!(ib))?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn modify_device(
        ib: *mut bindings::ib_device,
        mask: kernel::ffi::c_int,
        m: *mut bindings::ib_device_modify,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            let mask = DeviceModifyFlags::from_raw(mask as u32);
            // SAFETY: ib_core passes a valid struct for the call.
            T::modify_device(dev!(ib), mask, unsafe { &*m })?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn modify_port(
        ib: *mut bindings::ib_device,
        port: u32,
        mask: kernel::ffi::c_int,
        m: *mut bindings::ib_port_modify,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            let mask = PortModifyFlags::from_raw(mask as u32);
            // SAFETY: ib_core passes a valid struct for the call.
            T::modify_port(dev!(ib), port, mask, unsafe { &*m })?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn alloc_hw_port_stats(
        _ib: *mut bindings::ib_device,
        _port: u32,
    ) -> *mut bindings::rdma_hw_stats {
        let descs = super::stats::descs::<T>();
        // SAFETY: `descs` is a static table of `COUNTERS.len()` entries
        // with static names; ib_core frees the struct, not the table.
        unsafe { bindings::rdma_alloc_hw_stats_struct(descs.as_ptr(), descs.len() as i32, 0) }
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn get_hw_stats(
        ib: *mut bindings::ib_device,
        stats: *mut bindings::rdma_hw_stats,
        port: u32,
        _index: kernel::ffi::c_int,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: `stats` came from `alloc_hw_port_stats`: its value
            // array has `num_counters` entries, and ib_core holds its lock.
            let values = unsafe {
                let n = usize::try_from((*stats).num_counters).unwrap_or(0);
                core::slice::from_raw_parts_mut((*stats).value.as_mut_ptr(), n)
            };
            T::counters(dev!(ib), port, values)?;
            Ok(values.len() as i32)
        })
    }

    /// # Safety
    ///
    /// Only ib_core's counters call this, through the `ib_device_ops` table
    /// of `Adapter::OPS`, with a counter of this device whose lock it
    /// holds and a live QP of this device that no counter holds.
    unsafe extern "C" fn counter_bind_qp(
        counter: *mut bindings::rdma_counter,
        qp: *mut bindings::ib_qp,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // ib_core files the counter under the id its driver gives it
            // at the first bind (unique on the device, not 0), once that
            // bind succeeds; `counter_dealloc` gives it back.
            // SAFETY: Per the contract, the counter is live and locked.
            let fresh = unsafe { (*counter).id } == 0;
            if fresh {
                // SAFETY: Allocates from the module's counter ids.
                let id = unsafe { bindings::rrxe_helper_counter_id_alloc() };
                // SAFETY: As above.
                unsafe { (*counter).id = u32::try_from(id).map_err(|_| Error::from_errno(id))? };
            }
            if let Err(e) = T::counter_bind_qp(obj!(KQp, qp), CounterId::of(counter)) {
                if fresh {
                    // SAFETY: Not filed anywhere yet (ib_core frees a
                    // counter whose first bind failed without dealloc).
                    unsafe {
                        bindings::rrxe_helper_counter_id_free((*counter).id);
                        (*counter).id = 0;
                    }
                }
                return Err(e);
            }
            // SAFETY: Per the contract; `ib_qp.counter` is the driver's to
            // set on a bind (ib_core reads it to unbind), under the
            // counter's lock.
            unsafe { (*qp).counter = counter };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only ib_core's counters call this, through the `ib_device_ops` table
    /// of `Adapter::OPS`, with a live QP of this device that a counter
    /// holds, whose lock it holds.
    unsafe extern "C" fn counter_unbind_qp(qp: *mut bindings::ib_qp) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: Per the contract, `qp->counter` is the QP's live
            // counter, locked by ib_core.
            let values = unsafe { super::stats::counter_values((*qp).counter) };
            T::counter_unbind_qp(obj!(KQp, qp), values)?;
            // SAFETY: As in `counter_bind_qp`.
            unsafe { (*qp).counter = core::ptr::null_mut() };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only ib_core's counters call this, through the `ib_device_ops` table
    /// of `Adapter::OPS`, with a counter of this device it released and
    /// took out of its records.
    unsafe extern "C" fn counter_dealloc(
        counter: *mut bindings::rdma_counter,
    ) -> kernel::ffi::c_int {
        // SAFETY: Per the contract; a nonzero id is one `counter_bind_qp`
        // allocated.
        unsafe {
            let id = (*counter).id;
            if id != 0 {
                bindings::rrxe_helper_counter_id_free(id);
                (*counter).id = 0;
            }
        }
        0
    }

    /// # Safety
    ///
    /// Only ib_core's counters call this, through the `ib_device_ops` table
    /// of `Adapter::OPS`, for a new counter of this device.
    unsafe extern "C" fn counter_alloc_stats(
        _counter: *mut bindings::rdma_counter,
    ) -> *mut bindings::rdma_hw_stats {
        // A counter has the port's counters (ib_core adds a released
        // counter's values to the port's, index by index).
        let descs = super::stats::descs::<T>();
        // SAFETY: As in `alloc_hw_port_stats`.
        unsafe { bindings::rdma_alloc_hw_stats_struct(descs.as_ptr(), descs.len() as i32, 0) }
    }

    /// # Safety
    ///
    /// Only ib_core's counters call this, through the `ib_device_ops` table
    /// of `Adapter::OPS`, with a live counter of this device whose lock it
    /// holds.
    unsafe extern "C" fn counter_update_stats(
        counter: *mut bindings::rdma_counter,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: Per the contract.
            let (ib, values) =
                unsafe { ((*counter).device, super::stats::counter_values(counter)) };
            T::counter_update(dev!(ib), CounterId::of(counter), values)?;
            Ok(0)
        })
    }

    // --- contexts, mmap and PDs ---------------------------------------

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn alloc_ucontext(
        uc: *mut bindings::ib_ucontext,
        udata: *mut bindings::ib_udata,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core allocated `uc` with our size and set `device`.
            let ib = unsafe { (*uc).device };
            let state = T::alloc_ucontext(dev!(ib), &mut udata!(udata));
            // SAFETY: `uc` is a fresh, zeroed `UContext<T>`.
            unsafe { create_obj::<KUContext, T>(uc, state, |_| Ok(()))? };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn dealloc_ucontext(uc: *mut bindings::ib_ucontext) {
        // SAFETY: ib_core deallocates contexts we initialised, once.
        unsafe { UContext::<T>::destroy_state(uc) };
    }

    /// The device goes while a process holds the context (`rdma link
    /// delete`, `rmmod`). Having this op is what matters: ib_uverbs then
    /// neither waits for the process to close the device nor pins the
    /// module while it has it open. Before calling it, ib_core destroyed
    /// every object of the context (as at the process's exit: the
    /// objects' destroy never waits for user memory, see
    /// Documentation/datapath.md) and zapped its ring mappings, which map
    /// PFNs under ib_core's record ([`MmapEntry::mmap`]). Nothing is left
    /// for the driver; `dealloc_ucontext` follows. The process's verbs
    /// fail with `EIO` from then on.
    ///
    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with a live context of this device.
    unsafe extern "C" fn disassociate_ucontext(_uc: *mut bindings::ib_ucontext) {}

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn mmap(
        uc: *mut bindings::ib_ucontext,
        vma: *mut bindings::vm_area_struct,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: These are the `mmap` op's arguments.
            unsafe { MmapEntry::mmap(uc, vma)? };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn mmap_free(e: *mut bindings::rdma_user_mmap_entry) {
        // SAFETY: ib_core frees entries this driver inserted, once.
        unsafe { MmapEntry::free(e) };
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn alloc_pd(
        pd: *mut bindings::ib_pd,
        udata: *mut bindings::ib_udata,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core allocated `pd` with our size and set `device`.
            let ib = unsafe { (*pd).device };
            let state = T::alloc_pd(dev!(ib), &mut udata!(udata));
            // SAFETY: `pd` is a fresh, zeroed `Pd<T>`.
            unsafe { create_obj::<KPd, T>(pd, state, |p| T::pd_created(&p))? };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn dealloc_pd(
        pd: *mut bindings::ib_pd,
        _udata: *mut bindings::ib_udata,
    ) -> kernel::ffi::c_int {
        // SAFETY: ib_core deallocates PDs we initialised, once, after every
        // object using them is gone.
        unsafe { Pd::<T>::destroy_state(pd) };
        0
    }

    // --- address handles ----------------------------------------------

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn create_ah(
        ah: *mut bindings::ib_ah,
        init: *mut bindings::rdma_ah_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core passes valid attributes whose GID entry it
            // holds for the call, and set `pd` of the new AH.
            let (attr, flags, pd) = unsafe {
                (
                    AhAttr::new(&*(*init).ah_attr),
                    (*init).flags,
                    Pd::<T>::from_raw((*ah).pd),
                )
            };
            let sleepable = flags & bindings::rdma_create_ah_flags_RDMA_CREATE_AH_SLEEPABLE != 0;
            let state = T::create_ah(pd, &attr, sleepable);
            let mut udata = udata!(udata);
            // SAFETY: `ah` is a fresh, zeroed `Ah<T>`.
            unsafe {
                create_obj::<KAh, T>(ah, state, |a| T::ah_created(&a, sleepable, &mut udata))?
            };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn modify_ah(
        ah: *mut bindings::ib_ah,
        attr: *mut bindings::rdma_ah_attr,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core passes valid attributes for the call.
            let attr = unsafe { AhAttr::new(&*attr) };
            T::modify_ah(obj!(KAh, ah), &attr)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn query_ah(
        ah: *mut bindings::ib_ah,
        attr: *mut bindings::rdma_ah_attr,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core passes a valid struct to fill.
            let mut out = AhAttrOut::new(unsafe { &mut *attr });
            T::query_ah(obj!(KAh, ah), &mut out)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn destroy_ah(ah: *mut bindings::ib_ah, flags: u32) -> kernel::ffi::c_int {
        let sleepable = flags & bindings::rdma_destroy_ah_flags_RDMA_DESTROY_AH_SLEEPABLE != 0;
        if sleepable {
            // SAFETY: ib_core destroys AHs we initialised, once.
            unsafe { Ah::<T>::destroy_state(ah) };
        } else {
            // SAFETY: As above, without sleeping.
            unsafe { Ah::<T>::destroy_state_atomic(ah) };
        }
        0
    }

    // --- completion queues --------------------------------------------

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn create_cq(
        cq: *mut bindings::ib_cq,
        attr: *const bindings::ib_cq_init_attr,
        attrs: *mut bindings::uverbs_attr_bundle,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core allocated `cq` with our size and set `device`;
            // `attrs` is null (kernel) or valid for the call.
            let (ib, udata) =
                unsafe { ((*cq).device, bindings::rrxe_helper_attrs_to_udata(attrs)) };
            let mut udata = udata!(udata);
            // SAFETY: ib_core passes valid attributes.
            let init = T::create_cq(dev!(ib), unsafe { &*attr }, &mut udata);
            // SAFETY: `cq` is a fresh, zeroed `Cq<T>`.
            unsafe { init_obj::<KCq, T>(cq, init)? };
            // SAFETY: Initialised just above.
            unsafe { finish_obj::<KCq, T>(cq, |c| T::cq_created(c, &mut udata))? };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn destroy_cq(
        cq: *mut bindings::ib_cq,
        _udata: *mut bindings::ib_udata,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            T::destroy_cq(obj!(KCq, cq))?;
            // SAFETY: ib_core destroys CQs we initialised, once, when no QP
            // uses them any more.
            unsafe { Cq::<T>::destroy_state(cq) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn resize_cq(
        cq: *mut bindings::ib_cq,
        cqe: kernel::ffi::c_int,
        udata: *mut bindings::ib_udata,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            let cqe = u32::try_from(cqe).map_err(|_| EINVAL)?;
            T::resize_cq(obj!(KCq, cq), cqe, &mut udata!(udata))?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn req_notify_cq(
        cq: *mut bindings::ib_cq,
        flags: bindings::ib_cq_notify_flags,
    ) -> kernel::ffi::c_int {
        from_result(|| T::req_notify_cq(obj!(KCq, cq), CqNotify::from_raw(flags)))
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn poll_cq(
        cq: *mut bindings::ib_cq,
        n: kernel::ffi::c_int,
        wc: *mut bindings::ib_wc,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            let n = usize::try_from(n).map_err(|_| EINVAL)?;
            if n == 0 {
                return Ok(0);
            }
            // SAFETY: The consumer passes an array of `n` work completions.
            let wc = unsafe { core::slice::from_raw_parts_mut(wc, n) };
            let got = T::poll_cq(obj!(KCq, cq), wc)?;
            Ok(got as i32)
        })
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn peek_cq(
        cq: *mut bindings::ib_cq,
        n: kernel::ffi::c_int,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            let n = usize::try_from(n).map_err(|_| EINVAL)?;
            Ok(T::peek_cq(obj!(KCq, cq), n)? as i32)
        })
    }

    // --- queue pairs --------------------------------------------------

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn create_qp(
        qp: *mut bindings::ib_qp,
        init: *mut bindings::ib_qp_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core set `pd` (and CQs, SRQ) of the new QP and
            // passes valid attributes for the call.
            let (pd, init) = unsafe { (Pd::<T>::from_raw((*qp).pd), &mut *init) };
            let mut init = QpInitAttr::new(init);
            let mut udata = udata!(udata);
            // SAFETY: `qp` is a fresh, zeroed `Qp<T>` that ib_core keeps in
            // place until destroy.
            unsafe { Qp::<T>::init_task(qp) };
            let state = T::create_qp(pd, &mut init, &mut udata);
            // SAFETY: `qp` is a fresh, zeroed `Qp<T>`.
            unsafe { init_obj::<KQp, T>(qp, state)? };
            // SAFETY: Initialised just above.
            unsafe { finish_obj::<KQp, T>(qp, |q| T::qp_created(q, &mut init, &mut udata))? };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn modify_qp(
        qp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_attr,
        mask: kernel::ffi::c_int,
        udata: *mut bindings::ib_udata,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core passes valid attributes, with the GID entries
            // of the AVs held, for the call.
            let attr = unsafe { QpAttrIn::new(&*attr) };
            T::modify_qp(
                obj!(KQp, qp),
                &attr,
                QpAttrMask::from_raw(mask as u32),
                &mut udata!(udata),
            )?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn query_qp(
        qp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_attr,
        mask: kernel::ffi::c_int,
        init: *mut bindings::ib_qp_init_attr,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core passes valid structs to fill.
            let (attr, init) = unsafe { (&mut *attr, &mut *init) };
            let mask = QpAttrMask::from_raw(mask as u32);
            T::query_qp(obj!(KQp, qp), attr, mask, &mut QpInitAttr::new(init))?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only ib_core's resource dump calls this, through the
    /// `ib_device_ops` table of `Adapter::OPS`, with the message it fills
    /// and a live QP of this device (held by its restrack entry).
    unsafe extern "C" fn fill_res_qp_entry(
        msg: *mut bindings::sk_buff,
        qp: *mut bindings::ib_qp,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            let qp = obj!(KQp, qp);
            // SAFETY: `msg` is the message of this call (the contract).
            unsafe { super::stats::fill_driver(msg, |out| T::qp_details(qp, out)) }?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn destroy_qp(
        qp: *mut bindings::ib_qp,
        _udata: *mut bindings::ib_udata,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            T::destroy_qp(obj!(KQp, qp))?;
            // SAFETY: ib_core destroys QPs we initialised, once.
            unsafe { Qp::<T>::destroy_state(qp) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn attach_mcast(
        qp: *mut bindings::ib_qp,
        gid: *mut bindings::ib_gid,
        _lid: u16,
    ) -> kernel::ffi::c_int {
        // SAFETY: ib_core passes a valid GID; any bytes are valid.
        let gid = unsafe { (*gid).raw };
        from_result(|| T::attach_mcast(obj!(KQp, qp), &gid).map(|()| 0))
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn detach_mcast(
        qp: *mut bindings::ib_qp,
        gid: *mut bindings::ib_gid,
        _lid: u16,
    ) -> kernel::ffi::c_int {
        // SAFETY: As `attach_mcast`.
        let gid = unsafe { (*gid).raw };
        from_result(|| T::detach_mcast(obj!(KQp, qp), &gid).map(|()| 0))
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn post_send(
        qp: *mut bindings::ib_qp,
        wr: *const bindings::ib_send_wr,
        bad: *mut *const bindings::ib_send_wr,
    ) -> kernel::ffi::c_int {
        // SAFETY: ib_core passes a valid list (or none, for a doorbell).
        let mut wrs = unsafe { KernelSendWrs::new(wr) };
        match T::post_send(obj!(KQp, qp), &mut wrs) {
            Ok(()) => 0,
            Err(e) => {
                if !bad.is_null() {
                    // SAFETY: The caller's out pointer.
                    unsafe { *bad = wrs.failed() };
                }
                e.to_errno()
            }
        }
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn post_recv(
        qp: *mut bindings::ib_qp,
        wr: *const bindings::ib_recv_wr,
        bad: *mut *const bindings::ib_recv_wr,
    ) -> kernel::ffi::c_int {
        // SAFETY: ib_core passes a valid list.
        let mut wrs = unsafe { KernelRecvWrs::new(wr) };
        match T::post_recv(obj!(KQp, qp), &mut wrs) {
            Ok(()) => 0,
            Err(e) => {
                if !bad.is_null() {
                    // SAFETY: The caller's out pointer.
                    unsafe { *bad = wrs.failed() };
                }
                e.to_errno()
            }
        }
    }

    // --- shared receive queues ----------------------------------------

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn post_srq_recv(
        srq: *mut bindings::ib_srq,
        wr: *const bindings::ib_recv_wr,
        bad: *mut *const bindings::ib_recv_wr,
    ) -> kernel::ffi::c_int {
        // SAFETY: ib_core passes a valid list.
        let mut wrs = unsafe { KernelRecvWrs::new(wr) };
        match T::post_srq_recv(obj!(KSrq, srq), &mut wrs) {
            Ok(()) => 0,
            Err(e) => {
                if !bad.is_null() {
                    // SAFETY: The caller's out pointer.
                    unsafe { *bad = wrs.failed() };
                }
                e.to_errno()
            }
        }
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn create_srq(
        srq: *mut bindings::ib_srq,
        init: *mut bindings::ib_srq_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core set `pd` of the new SRQ and passes valid
            // attributes.
            let (pd, init) = unsafe { (Pd::<T>::from_raw((*srq).pd), &mut *init) };
            let mut init = SrqInitAttr::new(init);
            let mut udata = udata!(udata);
            let state = T::create_srq(pd, &mut init, &mut udata);
            // SAFETY: `srq` is a fresh, zeroed `Srq<T>`.
            unsafe { init_obj::<KSrq, T>(srq, state)? };
            // SAFETY: Initialised just above.
            unsafe { finish_obj::<KSrq, T>(srq, |s| T::srq_created(&s, &mut udata))? };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn modify_srq(
        srq: *mut bindings::ib_srq,
        attr: *mut bindings::ib_srq_attr,
        mask: bindings::ib_srq_attr_mask,
        udata: *mut bindings::ib_udata,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            let mask = SrqAttrMask::from_raw(mask);
            // SAFETY: ib_core passes valid attributes.
            T::modify_srq(obj!(KSrq, srq), unsafe { &*attr }, mask, &mut udata!(udata))?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn query_srq(
        srq: *mut bindings::ib_srq,
        attr: *mut bindings::ib_srq_attr,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core passes a valid struct to fill.
            T::query_srq(obj!(KSrq, srq), unsafe { &mut *attr })?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn destroy_srq(
        srq: *mut bindings::ib_srq,
        _udata: *mut bindings::ib_udata,
    ) -> kernel::ffi::c_int {
        // SAFETY: ib_core destroys SRQs we initialised, once, when no QP
        // uses them.
        unsafe { Srq::<T>::destroy_state(srq) };
        0
    }

    // --- memory regions -----------------------------------------------

    /// Allocates an MR object with its state from `init`, runs the driver's
    /// hook and hands it to ib_core; on failure returns an error pointer.
    fn new_mr(
        pd: *mut bindings::ib_pd,
        init: Result<impl PinInit<T::Mr, Error>>,
    ) -> *mut bindings::ib_mr {
        match Mr::<T>::alloc(pd, init, |m| T::mr_created(m)) {
            Ok(p) => p,
            Err(e) => e.to_ptr(),
        }
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn get_dma_mr(
        pd: *mut bindings::ib_pd,
        access: kernel::ffi::c_int,
    ) -> *mut bindings::ib_mr {
        // get_dma_mr is not a uverbs command: the caller is a kernel consumer.
        let init = T::get_dma_mr(
            obj!(KPd, pd),
            Access::from_raw(access as u32),
            KernelMem::new(),
        );
        Self::new_mr(pd, init)
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn reg_user_mr(
        pd: *mut bindings::ib_pd,
        start: u64,
        len: u64,
        iova: u64,
        access: kernel::ffi::c_int,
        udata: *mut bindings::ib_udata,
    ) -> *mut bindings::ib_mr {
        let mut udata = udata!(udata);
        let init = T::reg_user_mr(
            obj!(KPd, pd),
            start,
            len,
            iova,
            Access::from_raw(access as u32),
            &mut udata,
        );
        Self::new_mr(pd, init)
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn alloc_mr(
        pd: *mut bindings::ib_pd,
        mr_type: bindings::ib_mr_type,
        max_num_sg: u32,
    ) -> *mut bindings::ib_mr {
        let init = match MrType::from_raw(mr_type) {
            // alloc_mr is not a uverbs command: the caller is a kernel consumer.
            Some(t) => T::alloc_mr(obj!(KPd, pd), t, max_num_sg, KernelMem::new()),
            None => Err(EINVAL),
        };
        Self::new_mr(pd, init)
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    #[allow(clippy::too_many_arguments)]
    unsafe extern "C" fn rereg_user_mr(
        mr: *mut bindings::ib_mr,
        flags: kernel::ffi::c_int,
        start: u64,
        len: u64,
        iova: u64,
        access: kernel::ffi::c_int,
        pd: *mut bindings::ib_pd,
        udata: *mut bindings::ib_udata,
    ) -> *mut bindings::ib_mr {
        let new_pd = if pd.is_null() {
            None
        } else {
            Some(obj!(KPd, pd))
        };
        match T::rereg_user_mr(
            obj!(KMr, mr),
            ReregFlags::from_raw(flags as u32),
            start,
            len,
            iova,
            Access::from_raw(access as u32),
            new_pd,
            &mut udata!(udata),
        ) {
            // NULL: the MR was changed in place.
            Ok(()) => core::ptr::null_mut(),
            Err(e) => e.to_ptr(),
        }
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn advise_mr(
        pd: *mut bindings::ib_pd,
        advice: bindings::ib_uverbs_advise_mr_advice,
        flags: u32,
        sg_list: *mut bindings::ib_sge,
        num_sge: u32,
        _attrs: *mut bindings::uverbs_attr_bundle,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            let advice = Advice::from_raw(advice).ok_or_else(super::error::eopnotsupp)?;
            let flush =
                flags & bindings::ib_uverbs_advise_mr_flag_IB_UVERBS_ADVISE_MR_FLAG_FLUSH != 0;
            // SAFETY: ib_core passes the `num_sge` entries it copied from
            // the caller (uverbs' attribute), live for the call.
            let sges = unsafe { SgeList::new(sg_list, num_sge as usize) };
            T::advise_mr(obj!(KPd, pd), advice, flush, sges)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn dereg_mr(
        mr: *mut bindings::ib_mr,
        _udata: *mut bindings::ib_udata,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            T::dereg_mr(obj!(KMr, mr))?;
            // SAFETY: ib_core deregisters MRs we allocated, once.
            unsafe { Mr::<T>::free(mr) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn map_mr_sg(
        mr: *mut bindings::ib_mr,
        sg: *mut bindings::scatterlist,
        nents: kernel::ffi::c_int,
        offset: *mut kernel::ffi::c_uint,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: The consumer passes a scatterlist of `nents` entries
            // and an offset pointer that is null or valid, for the call.
            let mut sg = unsafe { SgList::new(mr, sg, nents, offset) };
            T::map_mr_sg(obj!(KMr, mr), &mut sg)
        })
    }

    // --- memory windows -----------------------------------------------

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn alloc_mw(
        mw: *mut bindings::ib_mw,
        udata: *mut bindings::ib_udata,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: ib_core set `pd` of the new MW.
            let pd = unsafe { Pd::<T>::from_raw((*mw).pd) };
            let mut udata = udata!(udata);
            let init = T::alloc_mw(pd, &mut udata);
            // SAFETY: `mw` is a fresh, zeroed `Mw<T>`.
            unsafe { create_obj::<KMw, T>(mw, init, |m| T::mw_created(&m))? };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn dealloc_mw(mw: *mut bindings::ib_mw) -> kernel::ffi::c_int {
        T::dealloc_mw(obj!(KMw, mw));
        // SAFETY: ib_core deallocates MWs we initialised, once.
        unsafe { Mw::<T>::destroy_state(mw) };
        0
    }

    // --- the end ------------------------------------------------------

    /// # Safety
    ///
    /// Only ib_core calls this, through the `ib_device_ops` table of
    /// `Adapter::OPS`, with the pointers its contract for this op gives: live
    /// objects of this device, and the attribute and udata buffers of the call.
    unsafe extern "C" fn dealloc_driver(ib: *mut bindings::ib_device) {
        // SAFETY: The last op, called once on a live device.
        unsafe { Device::<T>::drop_state(ib) };
    }
}
