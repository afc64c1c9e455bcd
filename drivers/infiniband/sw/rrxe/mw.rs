// SPDX-License-Identifier: GPL-2.0

//! Memory windows (type 1 and 2): allocation, binding and invalidation.
//!
//! A bound window grants remote access to a range of an MR under its own
//! rkey. Binding is a send-queue operation (BIND_MW); a type 2 window is
//! bound to the QP that bound it. Locking: `MwState::inner` (interrupts
//! off) guards the binding; the MR's lock nests inside it only in
//! [`MrBond`]'s drop, so bindings are dropped outside it.
//!
//! A binding holds its MR by reference ([`MrBond`]: the MR refuses to be
//! deregistered, moved or given another PD while bound) and its QP by
//! [`Handle`], never by a number that a later MR or QP could take.

use crate::mem::{self, Need};
use crate::mr::{keys_changed, make_key, MrBond};
use crate::new_irq_spinlock;
use crate::quota::{Charge, Kind};
use crate::rdma::ib::Access;
use crate::rdma::objects::{Mw, Pd, Qp};
use crate::rdma::pool::{Handle, PoolRef};
use crate::rdma::sync::IrqSpinLock;
use crate::rdma::udata::UData;
use crate::Rrxe;
use kernel::prelude::*;

/// What a bound window grants.
pub(crate) struct MwBinding {
    pub(crate) rkey: u32,
    /// The MR the window is bound to, held.
    pub(crate) bond: MrBond,
    pub(crate) addr: u64,
    pub(crate) length: u64,
    pub(crate) access: Access,
    /// The QP a type 2 window is bound to (`None` for type 1).
    pub(crate) qp: Option<Handle>,
}

struct MwInner {
    rkey: u32,
    binding: Option<MwBinding>,
}

/// Driver state of an MW.
#[pin_data]
pub(crate) struct MwState {
    #[pin]
    inner: IrqSpinLock<MwInner>,
    /// A user window's charge to its user.
    _charge: Option<Charge>,
}

impl MwState {
    /// Runs `f` on the binding under the window's lock, if it is bound.
    pub(crate) fn with_binding<R>(&self, f: impl FnOnce(&MwBinding) -> R) -> Option<R> {
        self.inner.lock().binding.as_ref().map(f)
    }
}

/// `alloc_mw`.
pub(crate) fn alloc(pd: &Pd<Rrxe>, _udata: &UData<'_>) -> Result<impl PinInit<MwState, Error>> {
    pd.device().mw_pool.count_check()?;
    let charge = pd.charge(Kind::Mw)?;
    Ok(try_pin_init!(MwState {
        inner <- new_irq_spinlock!(MwInner { rkey: 0, binding: None }, "MwState::inner"),
        _charge: charge,
    }? Error))
}

/// After create: a pool index and the rkey.
pub(crate) fn created(mw: &Mw<Rrxe>) -> Result {
    let index = mw.device().mw_pool.insert(mw)?;
    let rkey = make_key(index);
    let mut inner = mw.inner.lock();
    inner.rkey = rkey;
    mw.set_rkey(rkey);
    Ok(())
}

/// `dealloc_mw`: the window is unbound first, so that lookups kept from
/// before see it gone at their next packet (its MR is let go here).
pub(crate) fn dealloc(mw: &Mw<Rrxe>) {
    let old = mw.inner.lock().binding.take();
    keys_changed();
    drop(old);
}

/// Why a bind failed (the WQE completes with `IB_WC_MW_BIND_ERR`).
#[derive(Debug)]
pub(crate) struct BindError;

/// Executes a BIND_MW work request of `qp`: `mw_rkey` names the window,
/// `mr_lkey` the MR, `new_rkey`'s low byte becomes the window's key byte.
/// A zero length unbinds.
pub(crate) fn bind(
    qp: &Qp<Rrxe>,
    mw_rkey: u32,
    mr_lkey: u32,
    addr: u64,
    length: u64,
    new_rkey: u32,
    access: Access,
) -> Result<(), BindError> {
    let mw = bindable_window(qp, mw_rkey, access)?;
    let type2 = mw.is_type2();
    if length == 0 {
        if type2 {
            // A zero-length bind of a type 2 window is refused (it is
            // invalidated instead).
            return Err(BindError);
        }
        let old = mw.inner.lock().binding.take();
        keys_changed();
        drop(old);
        return Ok(());
    }
    let bond = bond_mr(qp, mr_lkey, addr, length, access)?;
    let qp_handle = if type2 {
        Some(qp.handle().ok_or(BindError)?)
    } else {
        None
    };
    let old = {
        let mut inner = mw.inner.lock();
        // Checked again: another bind or an invalidation may have come
        // while the lock was not held.
        if inner.rkey != mw_rkey || (type2 && inner.binding.is_some()) {
            drop(inner);
            return Err(BindError);
        }
        let rkey = (inner.rkey & !0xff) | (new_rkey & 0xff);
        inner.rkey = rkey;
        // ib_core's copy, under the window's lock as its writers must be.
        mw.set_rkey(rkey);
        inner.binding.replace(MwBinding {
            rkey,
            bond,
            addr,
            length,
            access,
            qp: qp_handle,
        })
    };
    keys_changed();
    // A type 1 window's previous binding lets go of its MR here.
    drop(old);
    Ok(())
}

/// The window `mw_rkey` names, if `qp` may bind it with `access`: of the
/// QP's PD, zero-based access only for a type 2 window, `mw_rkey` its
/// current rkey, and a type 2 window not bound yet.
fn bindable_window(
    qp: &Qp<Rrxe>,
    mw_rkey: u32,
    access: Access,
) -> Result<PoolRef<Mw<Rrxe>>, BindError> {
    let mw = qp.device().mw_pool.get(mw_rkey >> 8).ok_or(BindError)?;
    let type2 = mw.is_type2();
    if !core::ptr::eq(mw.pd(), qp.pd()) {
        return Err(BindError);
    }
    if access.contains(Access::ZERO_BASED) && !type2 {
        return Err(BindError);
    }
    let inner = mw.inner.lock();
    if inner.rkey != mw_rkey {
        return Err(BindError);
    }
    // A type 2 window is bound once, then invalidated before rebinding.
    if type2 && inner.binding.is_some() {
        return Err(BindError);
    }
    drop(inner);
    Ok(mw)
}

/// The MR `mr_lkey` names, held for a window over `length` bytes at
/// `addr` with `access`.
fn bond_mr(
    qp: &Qp<Rrxe>,
    mr_lkey: u32,
    addr: u64,
    length: u64,
    access: Access,
) -> Result<MrBond, BindError> {
    // The MR must allow binding and cover the range.
    let region =
        mem::lkey(qp.pd(), mr_lkey, addr, length, Need::LocalRead).map_err(|_| BindError)?;
    // (The local DMA lkey is no MR: no window binds to it.)
    let mr_access = region.mr().ok_or(BindError)?.inner.lock().access;
    if !mr_access.contains(Access::MW_BIND) {
        return Err(BindError);
    }
    // A window cannot grant what its MR lacks.
    if access.intersects(Access::REMOTE_WRITE.or(Access::REMOTE_ATOMIC))
        && !mr_access.contains(Access::LOCAL_WRITE)
    {
        return Err(BindError);
    }
    let bond = MrBond::new(region.mr_ref().ok_or(BindError)?).ok_or(BindError)?;
    drop(region);
    Ok(bond)
}

/// Invalidates the window `rkey` names (LOCAL_INV, or a SEND with
/// invalidate that `qp` received: `remote`); only bound type 2 windows can
/// be, from a QP of their PD.
pub(crate) fn invalidate(qp: &Qp<Rrxe>, rkey: u32, remote: bool) -> Result {
    let mw = qp.device().mw_pool.get(rkey >> 8).ok_or(EINVAL)?;
    if !mw.is_type2() || !core::ptr::eq(mw.pd(), qp.pd()) {
        return Err(EINVAL);
    }
    let old = {
        let mut inner = mw.inner.lock();
        match &inner.binding {
            // A peer invalidates only the windows bound to the QP it
            // sends to (IBA o10-37.2.x: a type 2B window is the QP's).
            Some(b) if b.rkey == rkey && (!remote || b.qp == qp.handle()) => inner.binding.take(),
            _ => return Err(EINVAL),
        }
    };
    keys_changed();
    // The MR is let go outside the window's lock.
    drop(old);
    Ok(())
}

/// Invalidates the MR or type 2 MW that `key` names; `remote`: for a SEND
/// with invalidate that `qp` received.
pub(crate) fn invalidate_key(qp: &Qp<Rrxe>, key: u32, remote: bool) -> Result {
    let index = key >> 8;
    if index <= crate::param::MAX_MR_INDEX {
        let mr = qp.device().mr_pool.get(index).ok_or(EINVAL)?;
        if !mr.inner.lock().in_pd(qp.pd()) {
            return Err(EINVAL);
        }
        crate::mr::invalidate(&mr, key)
    } else {
        invalidate(qp, key, remote)
    }
}
