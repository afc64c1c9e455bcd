// SPDX-License-Identifier: GPL-2.0

//! The verbs of an rrxe device: the `DeviceOps` implementation, each op a
//! call into the file of its object (the split of C rxe's rxe_verbs.c).

use crate::av::Av;
use crate::counters;
use crate::cq::{self, CqState};
use crate::device::{PdState, Rrxe, UContextState};
use crate::engine;
use crate::mcast;
use crate::mem;
use crate::mr::{self, MrState};
use crate::mw::{self, MwState};
use crate::param;
use crate::post;
use crate::proto::pma::{self, Answer};
use crate::qp::{self, QpState};
use crate::quota::{Charge, Kind};
use crate::rdma::attrs::{
    AhAttr, AhAttrOut, CqInitAttr, QpAttr, QpAttrIn, QpInitAttr, SrqAttr, SrqInitAttr,
};
use crate::rdma::consts::RDMA_DRIVER_RXE;
use crate::rdma::device::{
    Device, DeviceAttr, DeviceModify, LinkLayer, PortAttr, PortImmutable, PortModify,
};
use crate::rdma::ib::{
    Access, Advice, CqNotify, DeviceModifyFlags, PortModifyFlags, QpAttrMask, ReregFlags,
    SrqAttrMask,
};
use crate::rdma::mr::{KernelMem, MrType, SgList};
use crate::rdma::netdev::NetDevice;
use crate::rdma::objects::{Ah, Cq, Creating, KCq, KQp, Mr, Mw, Pd, Qp, Srq, TxKind};
use crate::rdma::ops::DeviceOps;
use crate::rdma::stats::{CounterId, ResAttrs, StatDesc};
use crate::rdma::task::QpTimer;
use crate::rdma::uapi::CreateAhResp;
use crate::rdma::udata::UData;
use crate::rdma::wc::Wc;
use crate::rdma::wqe::{KernelRecvWrs, KernelSendWrs, SgeList};
use crate::srq::{self, SrqState};
use kernel::c_str;
use kernel::prelude::*;
use kernel::types::ARef;

/// Driver state of an AH: its address vector.
pub(crate) struct AhState {
    pub(crate) av: kernel::sync::Arc<crate::rdma::sync::IrqSpinLock<Av>>,
    /// A user AH's charge to its user.
    _charge: Option<Charge>,
}

#[vtable]
impl DeviceOps for Rrxe {
    const DRIVER_ID: u32 = RDMA_DRIVER_RXE;
    /// librxe speaks uverbs ABI version 2 (`RXE_UVERBS_ABI_VERSION`).
    const ABI_VERSION: u32 = 2;
    const COUNTERS: &'static [StatDesc] = counters::DESCS;

    type UContext = UContextState;
    type Pd = PdState;
    type Ah = AhState;
    type Cq = CqState;
    type Qp = QpState;
    type Srq = SrqState;
    type Mw = MwState;
    type Mr = MrState;

    fn query_device(dev: &Device<Self>, attr: &mut DeviceAttr, udata: &UData<'_>) -> Result {
        Rrxe::query_device(dev, attr, udata)
    }

    fn query_port(dev: &Device<Self>, port: u32, attr: &mut PortAttr) -> Result {
        Rrxe::query_port(dev, port, attr)
    }

    fn port_immutable(dev: &Device<Self>, port: u32, imm: &mut PortImmutable) -> Result {
        Rrxe::port_immutable(dev, port, imm)
    }

    fn link_layer(_dev: &Device<Self>, _port: u32) -> LinkLayer {
        LinkLayer::Ethernet
    }

    fn netdev(dev: &Device<Self>, port: u32) -> Option<ARef<NetDevice>> {
        Rrxe::netdev(dev, port)
    }

    fn query_pkey(dev: &Device<Self>, port: u32, index: u16) -> Result<u16> {
        Rrxe::query_pkey(dev, port, index)
    }

    fn modify_device(dev: &Device<Self>, mask: DeviceModifyFlags, m: &DeviceModify) -> Result {
        Rrxe::modify_device(dev, mask, m)
    }

    fn modify_port(dev: &Device<Self>, port: u32, mask: PortModifyFlags, m: &PortModify) -> Result {
        Rrxe::modify_port(dev, port, mask, m)
    }

    fn enable_driver(dev: &Device<Self>) -> Result {
        Rrxe::port_changed(dev);
        Ok(())
    }

    fn counters(dev: &Device<Self>, _port: u32, values: &mut [u64]) -> Result {
        dev.core().counters.read(values);
        Ok(())
    }

    fn process_mad(dev: &Device<Self>, port: u32, mad: &[u8], out: &mut [u8]) -> bool {
        port == 1
            && pma::answer(mad, &counters::port_counts(&dev.core().counters), out) == Answer::Reply
    }

    fn counter_bind_qp(q: &Qp<Self>, id: CounterId) -> Result {
        let core = q.device().core();
        let h = q.handle().ok_or(EINVAL)?;
        core.bindings.lock().bind(id, h)?;
        q.counts.bind(&core.counters, id);
        Ok(())
    }

    fn counter_unbind_qp(q: &Qp<Self>, values: &mut [u64]) -> Result {
        let core = q.device().core();
        let id = q.counts.bound();
        q.counts.unbind(values);
        if let Some(h) = q.handle() {
            core.bindings.lock().unbind(id, h);
        }
        Ok(())
    }

    fn counter_update(dev: &Device<Self>, id: CounterId, values: &mut [u64]) -> Result {
        let core = dev.core();
        for h in core.bindings.lock().of(id) {
            match core.qp_pool.get_handle(h) {
                Some(qp) if qp.counts.bound() == id => qp.counts.harvest(values),
                _ => {}
            }
        }
        Ok(())
    }

    fn alloc_ucontext(dev: &Device<Self>, _udata: &mut UData<'_>) -> Result<UContextState> {
        dev.dbg_err(c_str!("alloc_ucontext"), dev.new_ucontext())
    }

    fn alloc_pd(dev: &Device<Self>, udata: &mut UData<'_>) -> Result<PdState> {
        let r = dev.pd_pool.count_check().and_then(|()| PdState::new(udata));
        dev.dbg_err(c_str!("alloc_pd"), r)
    }

    fn pd_created(pd: &Pd<Self>) -> Result {
        pd.dbg_err(
            c_str!("alloc_pd"),
            pd.device().pd_pool.insert(pd).map(|_| ()),
        )
    }

    fn create_ah(pd: &Pd<Self>, attr: &AhAttr<'_>, sleepable: bool) -> Result<AhState> {
        pd.dbg_err(c_str!("create_ah"), new_ah(pd, attr, sleepable))
    }

    fn ah_created(ah: &Ah<Self>, sleepable: bool, udata: &mut UData<'_>) -> Result {
        ah.dbg_err(c_str!("create_ah"), ah_insert(ah, sleepable, udata))
    }

    fn modify_ah(ah: &Ah<Self>, attr: &AhAttr<'_>) -> Result {
        let r = Av::from_attr(attr, param::PORT_GID_TBL_LEN as u32).map(|av| *ah.av.lock() = av);
        ah.dbg_err(c_str!("modify_ah"), r)
    }

    fn query_ah(ah: &Ah<Self>, out: &mut AhAttrOut<'_>) -> Result {
        let av = *ah.av.lock();
        av.fill_attr(out);
        Ok(())
    }

    fn create_cq(
        dev: &Device<Self>,
        attr: &CqInitAttr,
        udata: &mut UData<'_>,
    ) -> Result<impl PinInit<CqState, Error>> {
        dev.dbg_err(
            c_str!("create_cq"),
            cq::create(dev, attr, udata, UContextState::share_of(udata)),
        )
    }

    fn cq_created(c: Creating<'_, KCq, Self>, udata: &mut UData<'_>) -> Result {
        cq::created(c, udata)
    }

    fn resize_cq(c: &Cq<Self>, cqe: u32, udata: &mut UData<'_>) -> Result {
        c.dbg_err(c_str!("resize_cq"), cq::resize(c, cqe, udata))
    }

    fn req_notify_cq(c: &Cq<Self>, flags: CqNotify) -> Result<i32> {
        cq::req_notify(c, flags)
    }

    fn poll_cq(c: &Cq<Self>, wc: &mut [Wc]) -> Result<usize> {
        cq::poll(c, wc)
    }

    fn peek_cq(c: &Cq<Self>, n: usize) -> Result<usize> {
        cq::peek(c, n)
    }

    fn create_qp(
        pd: &Pd<Self>,
        init: &mut QpInitAttr<'_>,
        udata: &mut UData<'_>,
    ) -> Result<impl PinInit<QpState, Error>> {
        pd.dbg_err(c_str!("create_qp"), qp::create(pd, init, udata))
    }

    fn qp_created(
        q: Creating<'_, KQp, Self>,
        _init: &mut QpInitAttr<'_>,
        udata: &mut UData<'_>,
    ) -> Result {
        qp::created(q, udata)
    }

    fn modify_qp(
        q: &Qp<Self>,
        attr: &QpAttrIn<'_>,
        mask: QpAttrMask,
        _udata: &mut UData<'_>,
    ) -> Result {
        q.dbg_err(c_str!("modify_qp"), qp::modify(q, attr, mask))
    }

    fn query_qp(
        q: &Qp<Self>,
        attr: &mut QpAttr,
        _mask: QpAttrMask,
        init: &mut QpInitAttr<'_>,
    ) -> Result {
        qp::query(q, attr, init)
    }

    fn destroy_qp(q: &Qp<Self>) -> Result {
        q.dbg_err(c_str!("destroy_qp"), qp::destroy(q))
    }

    fn qp_details(q: &Qp<Self>, out: &mut ResAttrs) -> Result {
        qp::details(q, out)
    }

    fn post_send(q: &Qp<Self>, wrs: &mut KernelSendWrs<'_>) -> Result {
        q.dbg_err(c_str!("post_send"), post::post_send(q, wrs))
    }

    fn post_recv(q: &Qp<Self>, wrs: &mut KernelRecvWrs<'_>) -> Result {
        q.dbg_err(c_str!("post_recv"), post::post_recv(q, wrs))
    }

    fn post_srq_recv(s: &Srq<Self>, wrs: &mut KernelRecvWrs<'_>) -> Result {
        s.dbg_err(c_str!("post_srq_recv"), post::post_srq_recv(s, wrs))
    }

    fn attach_mcast(q: &Qp<Self>, gid: &[u8; 16]) -> Result {
        q.dbg_err(c_str!("attach_mcast"), mcast::attach(q, gid))
    }

    fn detach_mcast(q: &Qp<Self>, gid: &[u8; 16]) -> Result {
        q.dbg_err(c_str!("detach_mcast"), mcast::detach(q, gid))
    }

    fn qp_run(q: &Qp<Self>) {
        engine::run(q)
    }

    fn qp_timer(q: &Qp<Self>, t: QpTimer) {
        qp::timer_fired(q, t)
    }

    fn qp_tx_done(q: &Qp<Self>, kind: TxKind) {
        qp::tx_done(q, kind)
    }

    fn create_srq(
        pd: &Pd<Self>,
        init: &mut SrqInitAttr<'_>,
        udata: &mut UData<'_>,
    ) -> Result<impl PinInit<SrqState, Error>> {
        pd.dbg_err(c_str!("create_srq"), srq::create(pd, init, udata))
    }

    fn srq_created(s: &Srq<Self>, udata: &mut UData<'_>) -> Result {
        s.dbg_err(c_str!("create_srq"), srq::created(s, udata))
    }

    fn modify_srq(
        s: &Srq<Self>,
        attr: &SrqAttr,
        mask: SrqAttrMask,
        udata: &mut UData<'_>,
    ) -> Result {
        s.dbg_err(c_str!("modify_srq"), srq::modify(s, attr, mask, udata))
    }

    fn query_srq(s: &Srq<Self>, attr: &mut SrqAttr) -> Result {
        srq::query(s, attr)
    }

    fn get_dma_mr(
        pd: &Pd<Self>,
        access: Access,
        mem: KernelMem,
    ) -> Result<impl PinInit<MrState, Error>> {
        pd.dbg_err(c_str!("get_dma_mr"), mr::dma(pd, access, mem))
    }

    fn reg_user_mr(
        pd: &Pd<Self>,
        start: u64,
        len: u64,
        iova: u64,
        access: Access,
        udata: &mut UData<'_>,
    ) -> Result<impl PinInit<MrState, Error>> {
        pd.dbg_err(
            c_str!("reg_user_mr"),
            mr::user(pd, start, len, iova, access, udata),
        )
    }

    fn alloc_mr(
        pd: &Pd<Self>,
        mr_type: MrType,
        max_num_sg: u32,
        mem: KernelMem,
    ) -> Result<impl PinInit<MrState, Error>> {
        pd.dbg_err(c_str!("alloc_mr"), mr::fast(pd, mr_type, max_num_sg, mem))
    }

    fn mr_created(m: &Mr<Self>) -> Result {
        m.dbg_err(c_str!("reg_mr"), mr::created(m))
    }

    fn rereg_user_mr(
        m: &Mr<Self>,
        flags: ReregFlags,
        start: u64,
        len: u64,
        iova: u64,
        access: Access,
        pd: Option<&Pd<Self>>,
        udata: &mut UData<'_>,
    ) -> Result {
        m.dbg_err(
            c_str!("rereg_user_mr"),
            mr::rereg(m, flags, start, len, iova, access, pd, udata),
        )
    }

    fn advise_mr(pd: &Pd<Self>, advice: Advice, flush: bool, sges: SgeList<'_>) -> Result {
        pd.dbg_err(c_str!("advise_mr"), mem::advise(pd, advice, flush, sges))
    }

    fn dereg_mr(m: &Mr<Self>) -> Result {
        m.dbg_err(c_str!("dereg_mr"), mr::dereg(m))
    }

    fn map_mr_sg(m: &Mr<Self>, sg: &mut SgList<'_, Self>) -> Result<i32> {
        m.dbg_err(c_str!("map_mr_sg"), mr::map_sg(m, sg))
    }

    fn mr_set_page(m: &Mr<Self>, addr: u64) -> Result {
        mr::set_page(m, addr)
    }

    fn alloc_mw(pd: &Pd<Self>, udata: &mut UData<'_>) -> Result<impl PinInit<MwState, Error>> {
        pd.dbg_err(c_str!("alloc_mw"), mw::alloc(pd, udata))
    }

    fn mw_created(m: &Mw<Self>) -> Result {
        m.dbg_err(c_str!("alloc_mw"), mw::created(m))
    }

    fn dealloc_mw(m: &Mw<Self>) {
        mw::dealloc(m)
    }
}

/// An AH's state for `create_ah`.
fn new_ah(pd: &Pd<Rrxe>, attr: &AhAttr<'_>, sleepable: bool) -> Result<AhState> {
    let av = Av::from_attr(attr, param::PORT_GID_TBL_LEN as u32)?;
    pd.device().ah_pool.count_check()?;
    let charge = pd.charge(Kind::Ah)?;
    let flags = if sleepable { GFP_KERNEL } else { GFP_ATOMIC };
    Ok(AhState {
        av: kernel::sync::Arc::pin_init(crate::new_irq_spinlock!(av, "AhState::av"), flags)?,
        _charge: charge,
    })
}

/// Numbers a new AH, and tells a provider with room for it the number.
fn ah_insert(ah: &Ah<Rrxe>, sleepable: bool, udata: &mut UData<'_>) -> Result {
    let ah_num = ah.device().ah_pool.insert_gfp(ah, !sleepable)?;
    // Old providers give no room for the AH number; they embed the AV.
    if udata.outlen() >= core::mem::size_of::<CreateAhResp>() {
        udata.write(&CreateAhResp {
            ah_num,
            reserved: 0,
        })?;
    }
    Ok(())
}
