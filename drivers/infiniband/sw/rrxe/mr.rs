// SPDX-License-Identifier: GPL-2.0

//! Memory regions: DMA MRs for kernel consumers, user MRs over pinned
//! memory or over memory paged on demand (`IB_ACCESS_ON_DEMAND`, explicit
//! ranges only), and fast-registration MRs whose page list (or, for
//! `IB_MR_TYPE_SG_GAPS`, list of elements) a kernel consumer loads with
//! `ib_map_mr_sg`. Keys are the pool index shifted left by 8
//! with a random low byte, as rxe makes them.
//!
//! Locking: `MrState::inner` (interrupts off) guards what rereg and fast
//! registration change: access, translation and page list.

use crate::new_irq_spinlock;
use crate::quota::{Charge, Kind};
use crate::rdma::device::Device;
use crate::rdma::error::eopnotsupp;
use crate::rdma::ib::{Access, ReregFlags};
use crate::rdma::mr::{KernelMem, MrType, SgList, Umem, PAGE_SIZE};
use crate::rdma::objects::{Mr, Pd};
use crate::rdma::odp::{ImplicitUmem, OdpUmem};
use crate::rdma::pool::PoolRef;
use crate::rdma::sync::{random_u32, IrqSpinLock};
use crate::rdma::udata::UData;
use crate::Rrxe;
use core::sync::atomic::{AtomicU64, Ordering};
use kernel::prelude::*;
use kernel::sync::Arc;

/// Access flags that grant remote access.
pub(crate) const ACCESS_REMOTE: Access = Access::REMOTE_READ
    .or(Access::REMOTE_WRITE)
    .or(Access::REMOTE_ATOMIC);
/// Access flags for which an MR gets an rkey (a peer may name it): the
/// remote ones and the flush rights (C rxe gives every MR its rkey).
pub(crate) const ACCESS_RKEY: Access = ACCESS_REMOTE
    .or(Access::FLUSH_GLOBAL)
    .or(Access::FLUSH_PERSISTENT);
/// Access flags an MR may have.
pub(crate) const ACCESS_SUPPORTED_MR: Access = ACCESS_REMOTE
    .or(Access::LOCAL_WRITE)
    .or(Access::MW_BIND)
    .or(Access::FLUSH_GLOBAL)
    .or(Access::FLUSH_PERSISTENT)
    .or(Access::OPTIONAL);
/// Access flags a user MR may have: those of any MR, and paging on
/// demand (over huge pages with `HUGETLB`, see [`check_access`]).
const ACCESS_SUPPORTED_USER_MR: Access = ACCESS_SUPPORTED_MR
    .or(Access::ON_DEMAND)
    .or(Access::HUGETLB);

/// Moved on by every change that can take away or redirect what a key
/// grants (see [`keys_changed`]): a kept lookup from before it is not
/// used again.
static KEY_EPOCH: AtomicU64 = AtomicU64::new(0);

/// Called after any change that narrows, moves or ends what an lkey or
/// rkey grants: an MR's rereg, deregistration, fast registration or
/// invalidation, a window's bind, unbind, invalidation or deallocation.
/// From then on every [`KeyCache`](crate::mem::KeyCache) looks its key up again at its next
/// packet, so at most the packet being placed as the change is made still
/// goes through the old grant, as with a lookup per packet (C rxe). One
/// counter for the module: such changes are rare beside packets, and a
/// needless lookup again costs what the cache saves on one packet.
pub(crate) fn keys_changed() {
    KEY_EPOCH.fetch_add(1, Ordering::SeqCst);
}

/// The count of key changes so far (see [`keys_changed`]).
pub(crate) fn key_epoch() -> u64 {
    KEY_EPOCH.load(Ordering::SeqCst)
}

/// How an MR translates addresses.
pub(crate) enum Translation {
    /// All kernel memory (kernel consumers' DMA MR).
    Dma(KernelMem),
    /// Pinned user pages: `iova` is the byte at `page_off` into the first
    /// page.
    User {
        umem: Arc<Umem>,
        iova: u64,
        len: u64,
        page_off: u64,
    },
    /// User memory paged on demand: `iova` is the byte at the
    /// registration's first address (`umem.addr()`).
    Odp {
        umem: Arc<OdpUmem>,
        iova: u64,
        len: u64,
    },
    /// The registering process's whole address space paged on demand
    /// (implicit ODP): the MR address is the user address.
    OdpImplicit { umem: Arc<ImplicitUmem> },
    /// A fast-registration MR (kernel addresses): what `map_mr_sg`
    /// loaded, valid between a REG_MR and a LOCAL_INV, which fixes the
    /// range `[iova, iova + len)`.
    Fast {
        mem: KernelMem,
        list: FastList,
        iova: u64,
        len: u64,
        valid: bool,
    },
}

/// One element of an `IB_MR_TYPE_SG_GAPS` MR: `len` bytes at kernel
/// address `addr`, ending `end` bytes into the MR.
#[derive(Clone, Copy, Default)]
pub(crate) struct Seg {
    pub(crate) addr: u64,
    pub(crate) len: u64,
    pub(crate) end: u64,
}

/// What `map_mr_sg` loads into a fast-registration MR; its table is
/// allocated for `max_num_sg` entries and never grows.
pub(crate) enum FastList {
    /// `IB_MR_TYPE_MEM_REG`: the first `npages` of `pages`.
    /// `ib_sg_to_pages` hands over page-aligned addresses; the MR's first
    /// byte sits `page_off` into the first page (the offset of the first
    /// scatterlist entry, taken when the list is mapped: a consumer may
    /// change the IOVA afterwards, to zero or to carry a tag in its high
    /// bits, but not the data's place in its page).
    Pages {
        pages: KVVec<u64>,
        npages: usize,
        page_size: u64,
        page_off: u64,
    },
    /// `IB_MR_TYPE_SG_GAPS`: the first `nsegs` of `segs`, the scatterlist's
    /// elements in order, each at any address and of any length; the MR
    /// is their concatenation (mlx5's semantics).
    Segs { segs: KVVec<Seg>, nsegs: usize },
}

/// What rereg and fast registration change.
pub(crate) struct MrInner {
    pub(crate) access: Access,
    pub(crate) trans: Translation,
    /// The current (lkey, rkey); rkey 0 without remote access or flush
    /// rights.
    pub(crate) keys: (u32, u32),
    /// Memory windows bound to the MR (each holds an [`MrBond`]).
    windows: u32,
    /// Deregistration began: no window binds any more.
    gone: bool,
    /// The address of the MR's PD (compared, never followed): the
    /// registration's, then a rereg's. ib_core's own `pd` field changes
    /// only after a rereg returns, so a lookup that read it could pass
    /// the old PD's check after the change (and keep its lookup).
    pd: usize,
}

impl MrInner {
    /// Whether the MR is in `pd`.
    pub(crate) fn in_pd(&self, pd: &Pd<Rrxe>) -> bool {
        self.pd == pd_addr(pd)
    }
}

fn pd_addr(pd: &Pd<Rrxe>) -> usize {
    pd as *const Pd<Rrxe> as usize
}

/// A memory window's hold on the MR it is bound to. While one lives, the
/// MR cannot be deregistered (EINVAL, as C rxe answers), its pages cannot
/// be moved and its PD cannot change (EBUSY); and since the window
/// reaches the MR only through the bond, never by its index, it reaches
/// this MR's pages or none.
pub(crate) struct MrBond(PoolRef<Mr<Rrxe>>);

impl MrBond {
    /// Binds a window to `mr`; `None` if the MR is being deregistered.
    pub(crate) fn new(mr: PoolRef<Mr<Rrxe>>) -> Option<Self> {
        {
            let mut inner = mr.inner.lock();
            if inner.gone {
                return None;
            }
            inner.windows += 1;
        }
        Some(Self(mr))
    }

    /// A reference to the MR for one access.
    pub(crate) fn mr_ref(&self) -> PoolRef<Mr<Rrxe>> {
        self.0.clone()
    }
}

impl Drop for MrBond {
    fn drop(&mut self) {
        let mut inner = self.0.inner.lock();
        inner.windows = inner.windows.saturating_sub(1);
    }
}

/// Driver state of an MR.
#[pin_data]
pub(crate) struct MrState {
    #[pin]
    pub(crate) inner: IrqSpinLock<MrInner>,
    /// A user MR's charge to its user.
    _charge: Option<Charge>,
}

/// The state of a new MR with `access` and `trans`, no keys yet and no
/// window bound.
fn new_state(
    pd: &Pd<Rrxe>,
    access: Access,
    trans: Translation,
    charge: Option<Charge>,
) -> impl PinInit<MrState, Error> {
    let pd = pd_addr(pd);
    try_pin_init!(MrState {
        inner <- new_irq_spinlock!(
            MrInner {
                access,
                trans,
                keys: (0, 0),
                windows: 0,
                gone: false,
                pd,
            },
            "MrState::inner"
        ),
        _charge: charge,
    }? Error)
}

fn check_supported(access: Access, supported: Access) -> Result {
    if access.without(supported) != Access::NONE {
        return Err(eopnotsupp());
    }
    Ok(())
}

/// The access of a user MR.
fn check_access(access: Access) -> Result {
    check_supported(access, ACCESS_SUPPORTED_USER_MR)?;
    // Huge pages are a page size for memory paged on demand (the umem's
    // page table in 2 MiB entries); pinned memory is pinned page by page
    // whatever backs it, so there the flag is refused, as C rxe refuses it.
    if access.contains(Access::HUGETLB) && !access.contains(Access::ON_DEMAND) {
        return Err(eopnotsupp());
    }
    // Remote write or atomic need local write (IBA 10.6.3.2), as
    // ib_check_mr_access enforces for user space.
    if access.intersects(Access::REMOTE_WRITE.or(Access::REMOTE_ATOMIC))
        && !access.contains(Access::LOCAL_WRITE)
    {
        return Err(EINVAL);
    }
    Ok(())
}

/// `get_dma_mr`. Remote write needs no local write here: with the
/// device's `local_dma_lkey`, `ib_alloc_pd` asks for remote read and write
/// alone for an `IB_PD_UNSAFE_GLOBAL_RKEY` PD (its lkey is the device's,
/// not this MR's), and C rxe takes any access.
pub(crate) fn dma(
    pd: &Pd<Rrxe>,
    access: Access,
    mem: KernelMem,
) -> Result<impl PinInit<MrState, Error>> {
    check_supported(access, ACCESS_SUPPORTED_MR)?;
    pd.device().mr_pool.count_check()?;
    Ok(new_state(pd, access, Translation::Dma(mem), None))
}

/// `reg_user_mr`: pins the pages, or (`IB_ACCESS_ON_DEMAND`) registers
/// them to be faulted in when accessed.
pub(crate) fn user(
    pd: &Pd<Rrxe>,
    start: u64,
    len: u64,
    iova: u64,
    access: Access,
    _udata: &UData<'_>,
) -> Result<impl PinInit<MrState, Error>> {
    check_access(access)?;
    pd.device().mr_pool.count_check()?;
    let charge = pd.charge(Kind::Mr)?;
    if access.contains(Access::ON_DEMAND) {
        // Before the MR exists: no other QP's run may run the PD's QPs
        // any more (see `PdState::no_faults`).
        pd.no_faults.close();
    }
    let trans = user_translation(pd.device(), start, len, iova, access)?;
    check_persistent(access, pinned(&trans).as_deref())?;
    Ok(new_state(pd, access, trans, charge))
}

/// The persistent flush right promises that a FLUSH makes the data
/// persistent: it is granted only over pinned pages of persistent memory
/// (EINVAL otherwise, as C rxe's `is_pmem_page` check), never over pages
/// paged on demand, which no registration can vouch for.
fn check_persistent(access: Access, pinned: Option<&Umem>) -> Result {
    if access.contains(Access::FLUSH_PERSISTENT) && !pinned.is_some_and(Umem::persistent) {
        return Err(EINVAL);
    }
    Ok(())
}

/// The pinned pages of a translation of pinned user pages.
fn pinned(trans: &Translation) -> Option<Arc<Umem>> {
    match trans {
        Translation::User { umem, .. } => Some(umem.clone()),
        _ => None,
    }
}

/// The translation of a user MR over `[start, start + len)` of the calling
/// process, its first byte at `iova`.
fn user_translation(
    dev: &Device<Rrxe>,
    start: u64,
    len: u64,
    iova: u64,
    access: Access,
) -> Result<Translation> {
    if access.contains(Access::ON_DEMAND) {
        // Implicit ODP: the whole address space (`ibv_reg_mr(pd, NULL,
        // SIZE_MAX, ..)`), at MR address 0, as hardware RNICs take it.
        if start == 0 && len == u64::MAX {
            if iova != 0 {
                return Err(EINVAL);
            }
            let umem = ImplicitUmem::get(dev, access)?;
            return Ok(Translation::OdpImplicit { umem });
        }
        let umem = Arc::new(OdpUmem::get(dev, start, len, access)?, GFP_KERNEL)?;
        return Ok(Translation::Odp { umem, iova, len });
    }
    let umem = Arc::new(Umem::get(dev, start, len, access)?, GFP_KERNEL)?;
    Ok(Translation::User {
        umem,
        iova,
        len,
        page_off: start % PAGE_SIZE,
    })
}

/// A table of `n` entries for a fast-registration MR. The count is the
/// consumer's: whatever it asks for (0 too, as C rxe) if that can be
/// allocated, ENOMEM without a warning if not.
fn table<T: Clone>(n: u32, value: T) -> Result<KVVec<T>> {
    let n = usize::try_from(n).map_err(|_| ENOMEM)?;
    KVVec::from_elem(value, n, GFP_KERNEL | __GFP_NOWARN).map_err(|_| ENOMEM)
}

/// `alloc_mr`: a fast-registration MR for up to `max_num_sg` pages
/// (`IB_MR_TYPE_MEM_REG`) or scatterlist elements (`IB_MR_TYPE_SG_GAPS`).
pub(crate) fn fast(
    pd: &Pd<Rrxe>,
    mr_type: MrType,
    max_num_sg: u32,
    mem: KernelMem,
) -> Result<impl PinInit<MrState, Error>> {
    pd.device().mr_pool.count_check()?;
    let list = match mr_type {
        MrType::MemReg => FastList::Pages {
            pages: table(max_num_sg, 0u64)?,
            npages: 0,
            page_size: PAGE_SIZE,
            page_off: 0,
        },
        MrType::SgGaps => FastList::Segs {
            segs: table(max_num_sg, Seg::default())?,
            nsegs: 0,
        },
        MrType::Integrity => return Err(EINVAL),
    };
    Ok(new_state(
        pd,
        Access::NONE,
        Translation::Fast {
            mem,
            list,
            iova: 0,
            len: 0,
            valid: false,
        },
        None,
    ))
}

/// A key from a pool index and a random low byte.
pub(crate) fn make_key(index: u32) -> u32 {
    (index << 8) | (random_u32() & 0xff)
}

/// After create: a pool index and the keys.
pub(crate) fn created(mr: &Mr<Rrxe>) -> Result {
    let index = mr.device().mr_pool.insert(mr)?;
    let key = make_key(index);
    let keys = {
        let mut inner = mr.inner.lock();
        let rkey = match inner.trans {
            Translation::Fast { .. } => key,
            _ if inner.access.intersects(ACCESS_RKEY) => key,
            _ => 0,
        };
        inner.keys = (key, rkey);
        inner.keys
    };
    mr.set_keys(keys.0, keys.1);
    Ok(())
}

/// The access an MR has after a rereg with `flags` asking for `access`.
/// An MR keeps its kind of pages: pinned, or paged on demand (the
/// translation in place would not match the access); a new translation
/// may change the page size of memory paged on demand.
fn rereg_access(flags: ReregFlags, old: Access, access: Access) -> Result<Access> {
    let new = if flags.contains(ReregFlags::ACCESS) {
        access
    } else {
        old
    };
    check_access(new)?;
    let differ = |f: Access| new.contains(f) != old.contains(f);
    if differ(Access::ON_DEMAND) || (!flags.contains(ReregFlags::TRANS) && differ(Access::HUGETLB))
    {
        return Err(eopnotsupp());
    }
    Ok(new)
}

/// `rereg_user_mr`: translation, access and PD changes in place (C rxe
/// only does the last two). ib_core moves the PD and the IOVA/length.
#[allow(clippy::too_many_arguments)]
pub(crate) fn rereg(
    mr: &Mr<Rrxe>,
    flags: ReregFlags,
    start: u64,
    len: u64,
    iova: u64,
    access: Access,
    pd: Option<&Pd<Rrxe>>,
    _udata: &UData<'_>,
) -> Result {
    if flags.without(ReregFlags::SUPPORTED) != ReregFlags::NONE {
        return Err(eopnotsupp());
    }
    let old_access = {
        let inner = mr.inner.lock();
        // Memory registered read-only is not made writable in place.
        match &inner.trans {
            Translation::User { umem, .. } => umem.check_rereg(flags, access)?,
            Translation::Odp { umem, .. } => umem.check_rereg(flags, access)?,
            Translation::OdpImplicit { umem } => umem.check_rereg(flags, access)?,
            _ => return Err(EINVAL),
        }
        inner.access
    };
    let new_access = rereg_access(flags, old_access, access)?;
    if let Some(pd) = pd.filter(|_| flags.contains(ReregFlags::PD)) {
        if old_access.contains(Access::ON_DEMAND) {
            // (As at registration: before the MR is in the new PD.)
            pd.no_faults.close();
        }
    }
    // Register the new range first (sleeps), then switch under the lock.
    let new_trans = if flags.contains(ReregFlags::TRANS) {
        let t = user_translation(mr.device(), start, len, iova, new_access)?;
        check_persistent(new_access, pinned(&t).as_deref())?;
        Some(t)
    } else {
        // uverbs holds the MR for writing through a rereg: the
        // translation cannot change under this check (made outside the
        // lock, page by page).
        let umem = pinned(&mr.inner.lock().trans);
        check_persistent(new_access, umem.as_deref())?;
        None
    };
    let (old, keys) = {
        let mut inner = mr.inner.lock();
        // Bound windows reach this MR's pages in its PD: neither moves
        // under them (checked here, where the switch is, since a bind may
        // have come while the new pages were pinned).
        if inner.windows != 0 && flags.intersects(ReregFlags::TRANS | ReregFlags::PD) {
            drop(inner);
            drop(new_trans);
            return Err(EBUSY);
        }
        inner.access = new_access;
        if let Some(pd) = pd.filter(|_| flags.contains(ReregFlags::PD)) {
            inner.pd = pd_addr(pd);
        }
        let lkey = inner.keys.0;
        inner.keys = (
            lkey,
            if new_access.intersects(ACCESS_RKEY) {
                lkey
            } else {
                0
            },
        );
        (
            new_trans.map(|t| core::mem::replace(&mut inner.trans, t)),
            inner.keys,
        )
    };
    // Lookups kept from before see the change at their next packet.
    keys_changed();
    // The old pages are released outside the lock (which sleeps).
    drop(old);
    mr.set_keys(keys.0, keys.1);
    Ok(())
}

/// `dereg_mr`: refused (EINVAL, as C rxe) while memory windows are bound
/// to the MR; otherwise no window binds to it any more.
pub(crate) fn dereg(mr: &Mr<Rrxe>) -> Result {
    let mut inner = mr.inner.lock();
    if inner.windows != 0 {
        return Err(EINVAL);
    }
    inner.gone = true;
    drop(inner);
    keys_changed();
    Ok(())
}

/// `map_mr_sg`: reloads the page list or the elements of a
/// fast-registration MR.
pub(crate) fn map_sg(mr: &Mr<Rrxe>, sg: &mut SgList<'_, Rrxe>) -> Result<i32> {
    let page_size = u64::from(sg.page_size());
    let gaps = {
        let mut inner = mr.inner.lock();
        let Translation::Fast { list, valid, .. } = &mut inner.trans else {
            return Err(EINVAL);
        };
        // A new list is not registered until the next REG_MR.
        *valid = false;
        keys_changed();
        match list {
            FastList::Pages {
                npages,
                page_size: ps,
                ..
            } => {
                // Pages of the consumer's size are walked in kernel pages'
                // steps: one must divide the other (`ib_map_mr_sg` asks
                // for a power of two).
                if page_size == 0 || !page_size.is_power_of_two() {
                    return Err(EINVAL);
                }
                *npages = 0;
                *ps = page_size;
                false
            }
            FastList::Segs { nsegs, .. } => {
                *nsegs = 0;
                true
            }
        }
    };
    if gaps {
        return sg.map_segments(|addr, len| add_seg(mr, addr, len));
    }
    let n = sg.map_pages()?;
    // `ib_sg_to_pages` set the IOVA to the first entry's address.
    let (iova, _) = mr.range();
    if let Translation::Fast {
        list: FastList::Pages { page_off, .. },
        ..
    } = &mut mr.inner.lock().trans
    {
        *page_off = iova % page_size;
    }
    Ok(n)
}

/// One element of an SG_GAPS MR; ENOMEM when its table is full.
fn add_seg(mr: &Mr<Rrxe>, addr: u64, len: u64) -> Result {
    let mut inner = mr.inner.lock();
    let Translation::Fast {
        list: FastList::Segs { segs, nsegs },
        ..
    } = &mut inner.trans
    else {
        return Err(EINVAL);
    };
    let start = match nsegs.checked_sub(1) {
        Some(last) => segs.get(last).ok_or(EINVAL)?.end,
        None => 0,
    };
    let end = start.checked_add(len).ok_or(EINVAL)?;
    *segs.get_mut(*nsegs).ok_or(ENOMEM)? = Seg { addr, len, end };
    *nsegs += 1;
    Ok(())
}

/// Makes a fast-registration MR valid (a REG_MR work request): new key
/// byte, access, and the range `map_mr_sg` set.
pub(crate) fn fast_register(mr: &Mr<Rrxe>, key: u32, access: Access) -> Result {
    let (iova, len) = mr.range();
    let keys = {
        let mut inner = mr.inner.lock();
        // Only the key byte is the consumer's to choose (C rxe's rule).
        if key >> 8 != inner.keys.0 >> 8 {
            return Err(EINVAL);
        }
        let lkey = (inner.keys.0 & !0xff) | (key & 0xff);
        match &mut inner.trans {
            // A registered MR is invalidated before it is registered
            // again (C rxe's RXE_MR_STATE_FREE).
            Translation::Fast { valid: true, .. } => return Err(EINVAL),
            Translation::Fast {
                valid,
                iova: i,
                len: l,
                ..
            } => {
                *valid = true;
                *i = iova;
                *l = len;
            }
            _ => return Err(EINVAL),
        }
        inner.access = access;
        inner.keys = (lkey, lkey);
        inner.keys
    };
    keys_changed();
    mr.set_keys(keys.0, keys.1);
    Ok(())
}

/// Invalidates a fast-registration MR whose key is `key` (LOCAL_INV, or a
/// SEND with invalidate).
pub(crate) fn invalidate(mr: &Mr<Rrxe>, key: u32) -> Result {
    let mut inner = mr.inner.lock();
    if inner.keys.0 != key && inner.keys.1 != key {
        return Err(EINVAL);
    }
    match &mut inner.trans {
        Translation::Fast { valid, .. } => {
            *valid = false;
            drop(inner);
            keys_changed();
            Ok(())
        }
        // Other MRs cannot be invalidated by a key.
        _ => Err(EINVAL),
    }
}

/// One page address from `ib_sg_to_pages`.
pub(crate) fn set_page(mr: &Mr<Rrxe>, addr: u64) -> Result {
    let mut inner = mr.inner.lock();
    match &mut inner.trans {
        Translation::Fast {
            list: FastList::Pages { pages, npages, .. },
            ..
        } => {
            // Refused beyond the MR's allocation: `ib_sg_to_pages` stops.
            let slot = pages.get_mut(*npages).ok_or(ENOMEM)?;
            *slot = addr;
            *npages += 1;
            Ok(())
        }
        _ => Err(EINVAL),
    }
}
