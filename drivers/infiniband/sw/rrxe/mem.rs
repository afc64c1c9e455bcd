// SPDX-License-Identifier: GPL-2.0

//! Access to registered memory for the data path: resolving an lkey or an
//! rkey (MR or bound MW) into a [`Region`] after the key, PD, access and
//! bounds checks, and copying or operating atomically through it.
//!
//! A `Region` holds a pool reference on the MR (so deregistration waits)
//! and a snapshot of what it needs to translate, taken under the MR's lock.
//! An MR paged on demand is accessed only where its pages are in: a page
//! that is not fails the access with [`MemError::WouldFault`], and a work
//! item of the QP's faults it in while the engine that asked parks (see
//! `rdma/odp.rs` and [`QpTask::fault_in`](crate::rdma::task::QpTask::fault_in)).
//! The access still sleeps (the umem's mutex), so these run only where the
//! engines do, under the QP's engine mutex in a work item or a system
//! call, never in softirq or under a spinlock.
//! All address arithmetic is overflow checked; a failed check is a typed
//! error the engines turn into a completion status or a NAK.

use crate::counters::{self, Counter};
use crate::mr::{key_epoch, FastList, MrInner, Seg, Translation, ACCESS_RKEY};
use crate::param::LOCAL_DMA_LKEY;
use crate::rdma::crc::Fold;
use crate::rdma::ib::WcStatus;
use crate::rdma::ib::{Access, Advice};
use crate::rdma::mr::{KernelMem, Umem};
use crate::rdma::objects::{Mr, Pd, Qp};
use crate::rdma::odp::{self, ImplicitUmem, Miss, OdpUmem};
use crate::rdma::pool::PoolRef;
use crate::rdma::skb::{SkBuff, Src};
use crate::rdma::task::{self, Fault};
use crate::rdma::wqe::{Sge, SgeList};
use crate::Rrxe;
use core::cell::RefCell;
use core::ops::Range;
use core::sync::atomic::{AtomicU64, Ordering};
use kernel::prelude::*;
use kernel::sync::Arc;

/// Why an access was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MemError {
    /// No such key, wrong key byte, wrong PD, or invalid MR/MW.
    BadKey,
    /// The key does not grant the access.
    Access,
    /// The range is outside the region (or overflows).
    Bounds,
    /// Misaligned atomic, or a fault in the translation.
    Fault,
    /// The source was a packet whose sender revoked its pages
    /// (`QpTask::zc_revoke`): the packet is dropped, as if lost.
    Revoked,
    /// Memory paged on demand that is not in: its fault is under way in a
    /// work item of the QP's, and the access is to be tried again when
    /// the QP's work runs next (the engine parks, its state as it was).
    WouldFault,
}

/// Why an engine's copy to or from a WQE's memory stopped: the status to
/// complete the WQE with, or memory paged on demand that is not in (see
/// [`MemError::WouldFault`]): the engine parks and tries it again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Halt {
    Status(WcStatus),
    WouldFault,
}

impl From<WcStatus> for Halt {
    fn from(s: WcStatus) -> Self {
        Halt::Status(s)
    }
}

/// What an access needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Need {
    /// The device reads local memory (send data): any valid lkey.
    LocalRead,
    /// The device writes local memory (receive, read response).
    LocalWrite,
    /// A peer reads.
    RemoteRead,
    /// A peer writes.
    RemoteWrite,
    /// A peer does an atomic.
    RemoteAtomic,
    /// A peer flushes: `rights`, the MR's flush rights its placement type
    /// asks for; `whole`, a flush of the whole MR (selectivity level MR),
    /// which names no range to check.
    RemoteFlush { rights: Access, whole: bool },
}

impl Need {
    fn ok(self, access: Access) -> bool {
        match self {
            Need::LocalRead => true,
            Need::LocalWrite => access.contains(Access::LOCAL_WRITE),
            Need::RemoteRead => access.contains(Access::REMOTE_READ),
            Need::RemoteWrite => access.contains(Access::REMOTE_WRITE),
            Need::RemoteAtomic => access.contains(Access::REMOTE_ATOMIC),
            Need::RemoteFlush { rights, .. } => access.contains(rights),
        }
    }

    /// A flush of the whole MR: the access names no range.
    fn whole(self) -> bool {
        matches!(self, Need::RemoteFlush { whole: true, .. })
    }

    /// Checks `[va, va + n)` against `[base, base + len)`, unless the
    /// access names no range.
    fn check_range(self, base: u64, len: u64, va: u64, n: u64) -> Result<(), MemError> {
        if self.whole() {
            return Ok(());
        }
        check_range(base, len, va, n)
    }

    /// Whether the access writes the memory.
    fn writes(self) -> bool {
        matches!(
            self,
            Need::LocalWrite | Need::RemoteWrite | Need::RemoteAtomic
        )
    }

    /// Refuses the access if it writes and the memory behind the MR
    /// (pinned, or to be faulted in) may only be read.
    fn allowed_by(self, writable: bool) -> Result<(), MemError> {
        if self.writes() && !writable {
            return Err(MemError::Access);
        }
        Ok(())
    }
}

/// How a snapshot translates.
enum Snap {
    Kernel(KernelMem),
    User {
        umem: Arc<Umem>,
        base: u64,
        page_off: u64,
    },
    /// `base` is the MR's address of the registration's first byte.
    Odp {
        umem: Arc<OdpUmem>,
        base: u64,
    },
    /// The MR address is the user address.
    OdpImplicit(Arc<ImplicitUmem>),
    /// A fast-registration MR, walked under its lock; looked up by its
    /// own key (and whether that was its rkey), which the walk checks
    /// again: a registration made since, under a new key, is not reached
    /// through the old one. (A window's lookup has no MR key.)
    Fast(Option<(u32, bool)>),
}

/// A checked, live view of registered memory.
pub(crate) struct Region {
    /// The MR, held so that deregistration waits; `None` for the
    /// device's local DMA lkey, which is no MR.
    mr: Option<PoolRef<Mr<Rrxe>>>,
    snap: Snap,
    /// Added to the addresses the caller names: a zero-based window's
    /// offsets start at its address in the MR.
    shift: u64,
    /// What the last access found not in, for [`settle`].
    miss: RefCell<Option<Miss>>,
}

fn check_range(base: u64, len: u64, va: u64, n: u64) -> Result<(), MemError> {
    let end = va.checked_add(n).ok_or(MemError::Bounds)?;
    let rend = base.checked_add(len).ok_or(MemError::Bounds)?;
    if va < base || end > rend {
        return Err(MemError::Bounds);
    }
    Ok(())
}

impl Region {
    fn from_mr(
        mr: PoolRef<Mr<Rrxe>>,
        pd: &Pd<Rrxe>,
        key: u32,
        remote: bool,
        va: u64,
        n: u64,
        need: Need,
    ) -> Result<Self, MemError> {
        let snap = {
            let inner = mr.inner.lock();
            if !inner.in_pd(pd) {
                return Err(MemError::BadKey);
            }
            // An MR without remote access or flush rights answers no rkey.
            if remote && !inner.access.intersects(ACCESS_RKEY) {
                return Err(MemError::Access);
            }
            let (lkey, rkey) = inner.keys;
            if (remote && rkey != key) || (!remote && lkey != key) {
                return Err(MemError::BadKey);
            }
            if !need.ok(inner.access) {
                return Err(MemError::Access);
            }
            match Self::snapshot(&inner, va, n, need)? {
                Snap::Fast(_) => Snap::Fast(Some((key, remote))),
                snap => snap,
            }
        };
        Ok(Self {
            mr: Some(mr),
            snap,
            shift: 0,
            miss: RefCell::new(None),
        })
    }

    fn snapshot(inner: &MrInner, va: u64, n: u64, need: Need) -> Result<Snap, MemError> {
        Ok(match &inner.trans {
            Translation::Dma(m) => Snap::Kernel(*m),
            Translation::User {
                umem,
                iova,
                len,
                page_off,
            } => {
                need.check_range(*iova, *len, va, n)?;
                // Never write pages that were pinned read-only.
                need.allowed_by(umem.writable())?;
                Snap::User {
                    umem: umem.clone(),
                    base: *iova,
                    page_off: *page_off,
                }
            }
            Translation::Odp { umem, iova, len } => {
                need.check_range(*iova, *len, va, n)?;
                // Never fault pages in for writing into an MR that was
                // registered without write access.
                need.allowed_by(umem.writable())?;
                Snap::Odp {
                    umem: umem.clone(),
                    base: *iova,
                }
            }
            Translation::OdpImplicit { umem } => {
                // The MR spans user addresses, no more.
                need.check_range(0, odp::user_end(), va, n)?;
                need.allowed_by(umem.writable())?;
                Snap::OdpImplicit(umem.clone())
            }
            Translation::Fast {
                valid, iova, len, ..
            } => {
                if !*valid {
                    return Err(MemError::BadKey);
                }
                need.check_range(*iova, *len, va, n)?;
                Snap::Fast(None)
            }
        })
    }

    /// Runs `f` on each (kernel or umem) span of `[va, va + n)`, with the
    /// span's bytes as a range of `0..n`.
    fn walk(
        &self,
        va: u64,
        n: usize,
        mut f: impl FnMut(Span<'_>, Range<usize>) -> Result<(), MemError>,
    ) -> Result<(), MemError> {
        let va = va.checked_add(self.shift).ok_or(MemError::Bounds)?;
        match &self.snap {
            Snap::Kernel(m) => f(Span::Kernel(*m, va), 0..n),
            Snap::User {
                umem,
                base,
                page_off,
            } => {
                let off = va
                    .checked_sub(*base)
                    .and_then(|o| o.checked_add(*page_off))
                    .ok_or(MemError::Bounds)?;
                f(Span::User(umem, off), 0..n)
            }
            Snap::Odp { umem, base } => {
                let uva = va
                    .checked_sub(*base)
                    .and_then(|o| o.checked_add(umem.addr()))
                    .ok_or(MemError::Bounds)?;
                f(Span::Odp(umem, uva), 0..n)
            }
            Snap::OdpImplicit(umem) => walk_implicit(umem, va, n, f),
            Snap::Fast(looked_up) => {
                let mr = self.mr.as_ref().ok_or(MemError::BadKey)?;
                // The list may change (a new registration), so walk it
                // under the MR's lock.
                let inner = mr.inner.lock();
                let Translation::Fast {
                    mem,
                    list,
                    iova,
                    len,
                    valid,
                } = &inner.trans
                else {
                    return Err(MemError::BadKey);
                };
                if !*valid {
                    return Err(MemError::BadKey);
                }
                if let Some((key, remote)) = *looked_up {
                    let (lkey, rkey) = inner.keys;
                    if key != if remote { rkey } else { lkey } {
                        return Err(MemError::BadKey);
                    }
                }
                check_range(*iova, *len, va, n as u64)?;
                let mut g = |addr, at| f(Span::Kernel(*mem, addr), at);
                match list {
                    FastList::Pages {
                        pages,
                        npages,
                        page_size,
                        page_off,
                    } => {
                        let pages = pages.get(..*npages).ok_or(MemError::Fault)?;
                        walk_pages(pages, *page_size, *page_off, va - *iova, n, &mut g)
                    }
                    FastList::Segs { segs, nsegs } => {
                        let segs = segs.get(..*nsegs).ok_or(MemError::Fault)?;
                        walk_segs(segs, va - *iova, n, &mut g)
                    }
                }
            }
        }
    }

    /// Copies `src` into the region at `va`.
    pub(crate) fn write(&self, va: u64, src: Src<'_>) -> Result<(), MemError> {
        self.walk(va, src.len(), |span, at| {
            let chunk = src.get(at).ok_or(MemError::Fault)?;
            let n = chunk.len() as u64;
            let r = match &span {
                Span::Kernel(m, addr) => m.write(*addr, chunk),
                Span::User(u, off) => u.write(*off, chunk),
                Span::Odp(u, uva) => u.write(*uva, chunk),
            };
            r.map_err(|e| {
                if e == crate::rdma::error::ecanceled() {
                    MemError::Revoked
                } else {
                    self.failed(&span, e, n, true)
                }
            })
        })
    }

    /// What an access through `span` that failed with `e` is: a miss of
    /// memory paged on demand (`EAGAIN`, kept for [`settle`]), or the
    /// span's error.
    fn failed(&self, span: &Span<'_>, e: Error, n: u64, write: bool) -> MemError {
        match span {
            Span::Odp(u, va) if e == EAGAIN => {
                // (Never borrowed elsewhere meanwhile: `settle` takes it
                // after the access.)
                if let Ok(mut m) = self.miss.try_borrow_mut() {
                    *m = Some(Miss {
                        umem: (*u).clone(),
                        va: *va,
                        len: n,
                        write,
                    });
                }
                MemError::WouldFault
            }
            _ => span.error(),
        }
    }

    /// Copies from the region at `va` into `buf`, through `fold`.
    pub(crate) fn read(&self, va: u64, buf: &mut [u8], fold: &mut Fold) -> Result<(), MemError> {
        self.walk(va, buf.len(), |span, at| {
            let chunk = buf.get_mut(at).ok_or(MemError::Fault)?;
            let n = chunk.len() as u64;
            let r = match &span {
                Span::Kernel(m, addr) => m.read(*addr, chunk, fold),
                Span::User(u, off) => u.read(*off, chunk, fold),
                Span::Odp(u, uva) => u.read(*uva, chunk, fold),
            };
            r.map_err(|e| self.failed(&span, e, n, false))
        })
    }

    /// Attaches the `n` bytes of the region at `va` to `skb` as page
    /// fragments (`Umem::attach`): only memory pinned for a user MR can
    /// be. `Ok(false)` if this region's memory cannot be, or the skb has
    /// too few fragment slots left (it may then hold some of the bytes).
    pub(crate) fn attach(&self, va: u64, n: usize, skb: &mut SkBuff) -> Result<bool, MemError> {
        // (Before the walk: an implicit ODP MR's would make its parts.)
        if !matches!(self.snap, Snap::User { .. }) {
            return Ok(false);
        }
        let mut attached = true;
        let r = self.walk(va, n, |span, at| match span {
            Span::User(u, off) => {
                if u.attach(off, at.len(), skb).map_err(|_| MemError::Fault)? {
                    Ok(())
                } else {
                    attached = false;
                    Err(MemError::Fault)
                }
            }
            // Kernel memory may not be in pages a packet can hold (a
            // vmalloc address), and a page paged on demand may go while
            // the packet holds it: copied.
            Span::Kernel(..) | Span::Odp(..) => {
                attached = false;
                Err(MemError::Fault)
            }
        });
        if !attached {
            return Ok(false);
        }
        r.map(|()| true)
    }

    /// Runs `f` on the 8-byte word at `va` (8-aligned), atomically with
    /// respect to other atomics on it.
    pub(crate) fn atomic(
        &self,
        va: u64,
        f: impl FnOnce(&AtomicU64) -> u64,
    ) -> Result<u64, MemError> {
        if va % 8 != 0 {
            return Err(MemError::Fault);
        }
        let mut out = None;
        let mut f = Some(f);
        self.walk(va, 8, |span, at| {
            if at.len() != 8 {
                return Err(MemError::Fault);
            }
            let Some(f) = f.take() else {
                return Ok(());
            };
            let v = match &span {
                Span::Kernel(m, addr) => m.word(*addr).map(f),
                Span::User(u, off) => u.word(*off).map(f),
                // Under the umem's lock, with the page in.
                Span::Odp(u, uva) => u.atomic(*uva, f),
            };
            out = Some(v.map_err(|e| self.failed(&span, e, 8, true))?);
            Ok(())
        })?;
        out.ok_or(MemError::Fault)
    }

    /// The MR the region is in (none for the local DMA lkey).
    pub(crate) fn mr(&self) -> Option<&Mr<Rrxe>> {
        self.mr.as_deref()
    }

    /// A reference to the MR, for a window that binds to it.
    pub(crate) fn mr_ref(&self) -> Option<PoolRef<Mr<Rrxe>>> {
        self.mr.clone()
    }
}

/// The spans of `n` bytes at `rel` into a page list MR whose first byte
/// is `page_off` into the first page.
fn walk_pages(
    pages: &[u64],
    ps: u64,
    page_off: u64,
    rel: u64,
    n: usize,
    f: &mut impl FnMut(u64, Range<usize>) -> Result<(), MemError>,
) -> Result<(), MemError> {
    if ps == 0 {
        return Err(MemError::Fault);
    }
    let mut rel = rel.checked_add(page_off).ok_or(MemError::Bounds)?;
    let mut done = 0usize;
    while done < n {
        let idx = usize::try_from(rel / ps).map_err(|_| MemError::Fault)?;
        let page = *pages.get(idx).ok_or(MemError::Bounds)?;
        let in_page = rel % ps;
        let addr = (page - page % ps) + in_page;
        let chunk = ((ps - in_page) as usize).min(n - done);
        f(addr, done..done + chunk)?;
        done += chunk;
        rel += chunk as u64;
    }
    Ok(())
}

/// The spans of `n` bytes at `rel` into an SG_GAPS MR, the concatenation
/// of `segs`: from the element that holds `rel`, element by element.
fn walk_segs(
    segs: &[Seg],
    mut rel: u64,
    n: usize,
    f: &mut impl FnMut(u64, Range<usize>) -> Result<(), MemError>,
) -> Result<(), MemError> {
    let mut i = segs.partition_point(|s| s.end <= rel);
    let mut done = 0usize;
    while done < n {
        let s = segs.get(i).ok_or(MemError::Bounds)?;
        let start = s.end.checked_sub(s.len).ok_or(MemError::Fault)?;
        let in_seg = rel.checked_sub(start).ok_or(MemError::Fault)?;
        let left = s.len.checked_sub(in_seg).ok_or(MemError::Fault)?;
        let chunk = usize::try_from(left).unwrap_or(usize::MAX).min(n - done);
        let addr = s.addr.checked_add(in_seg).ok_or(MemError::Fault)?;
        if chunk != 0 {
            f(addr, done..done + chunk)?;
        }
        done += chunk;
        rel += chunk as u64;
        i += 1;
    }
    Ok(())
}

/// [`Region::walk`] over an implicit MR: each part of `[va, va + n)` in
/// its own span, the part made if this is the first access to it (and
/// dropped again if that access failed).
fn walk_implicit(
    umem: &ImplicitUmem,
    va: u64,
    n: usize,
    mut f: impl FnMut(Span<'_>, Range<usize>) -> Result<(), MemError>,
) -> Result<(), MemError> {
    let mut done = 0usize;
    while done < n {
        let at = va.checked_add(done as u64).ok_or(MemError::Bounds)?;
        let (part, new) = umem.part(at).map_err(|_| MemError::Access)?;
        // (The part holds `at`: `part` refuses addresses past user
        // space. Checked, not assumed.)
        let r = match part.end().checked_sub(at).filter(|&l| l > 0) {
            Some(left) => {
                let take = usize::try_from(left).unwrap_or(usize::MAX).min(n - done);
                f(Span::Odp(&part, at), done..done + take).map(|()| take)
            }
            None => Err(MemError::Access),
        };
        // (A part whose page is being faulted in stays: the fault is for
        // it. If the fault fails, `settle` forgets it.)
        if r.is_err() && r != Err(MemError::WouldFault) && new {
            umem.forget(&part);
        }
        done += r?;
    }
    Ok(())
}

enum Span<'a> {
    Kernel(KernelMem, u64),
    /// Offset from the start of the first pinned page.
    User(&'a Umem, u64),
    /// User address of the registration.
    Odp(&'a Arc<OdpUmem>, u64),
}

impl Span<'_> {
    /// What a failed access through the span is: a fault of the
    /// translation; or, in memory paged on demand, an address its owner
    /// does not map (or not for writing), which to a peer is what an
    /// address outside the MR is, an access error (as C rxe answers).
    fn error(&self) -> MemError {
        match self {
            Span::Odp(..) => MemError::Access,
            Span::Kernel(..) | Span::User(..) => MemError::Fault,
        }
    }
}

/// Runs `f` on `r` for `qp`'s engines. An access that found memory paged
/// on demand not in has its fault taken by a work of the QP's own (see
/// [`QpTask::fault_in`](crate::rdma::task::QpTask::fault_in)): it fails
/// with [`MemError::WouldFault`] while that is under way, and with the
/// access error once the same fault failed (the owner does not map the
/// address, or its memory gave an error). Sleeps.
pub(crate) fn settle<R>(
    qp: &Qp<Rrxe>,
    r: &Region,
    f: impl FnOnce(&Region) -> Result<R, MemError>,
) -> Result<R, MemError> {
    let out = f(r);
    if matches!(out, Err(MemError::WouldFault)) {
        let Some(miss) = r.miss.try_borrow_mut().ok().and_then(|mut m| m.take()) else {
            return Err(MemError::Access);
        };
        let umem = miss.umem.clone();
        match qp.fault_in(miss) {
            Fault::Failed => {
                // A part of an implicit MR made for it holds nothing.
                if let Snap::OdpImplicit(imp) = &r.snap {
                    imp.forget(&umem);
                }
                return Err(MemError::Access);
            }
            Fault::Queued => counters::count(qp, Counter::OdpFaults),
            Fault::Pending => {}
        }
    }
    out
}

/// What a prefetch brings in (the advice of `ibv_advise_mr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fetch {
    /// Faults the pages in for reading (`PREFETCH`).
    Read,
    /// Faults them in for writing (`PREFETCH_WRITE`).
    Write,
    /// Maps what the owner has in now and faults nothing
    /// (`PREFETCH_NO_FAULT`).
    Present,
}

/// Bytes a prefetch brings in at a time: the owner's mmap lock is held
/// for one piece's fault, not for the whole range.
const PREFETCH_PIECE: u64 = odp::PART;

/// Memory paged on demand that an lkey names, checked for a prefetch
/// ([`prefetch_of`]), to be brought in by [`Prefetch::run`].
pub(crate) struct Prefetch {
    paged: Paged,
    /// The user address of the first byte.
    uva: u64,
    len: u64,
    how: Fetch,
}

enum Paged {
    Explicit(Arc<OdpUmem>),
    Implicit(Arc<ImplicitUmem>),
}

/// Checks a prefetch of the `len` bytes at MR address `va` through `lkey`
/// of `pd`: `EFAULT` for an lkey `pd` has no MR for, a range outside the
/// MR, or `Fetch::Write` into an MR without local write access (the
/// errors of `ibv_advise_mr(3)`); `EINVAL` for an MR that is not paged on
/// demand (nothing to bring in).
pub(crate) fn prefetch_of(
    pd: &Pd<Rrxe>,
    key: u32,
    va: u64,
    len: u32,
    how: Fetch,
) -> Result<Prefetch> {
    if key == LOCAL_DMA_LKEY {
        return Err(EINVAL);
    }
    let need = if how == Fetch::Write {
        Need::LocalWrite
    } else {
        Need::LocalRead
    };
    let len = u64::from(len);
    let r = lkey(pd, key, va, len, need).map_err(|_| EFAULT)?;
    let (paged, uva) = match &r.snap {
        Snap::Odp { umem, base } => {
            let uva = va
                .checked_sub(*base)
                .and_then(|o| o.checked_add(umem.addr()))
                .ok_or(EFAULT)?;
            (Paged::Explicit(umem.clone()), uva)
        }
        Snap::OdpImplicit(umem) => (Paged::Implicit(umem.clone()), va),
        _ => return Err(EINVAL),
    };
    Ok(Prefetch {
        paged,
        uva,
        len,
        how,
    })
}

impl Prefetch {
    /// Brings the range in, piece by piece: `EFAULT` at the first piece
    /// that cannot be (an address its owner does not map, or not for
    /// writing). A part of an implicit MR made for a piece that failed is
    /// dropped again; `Fetch::Present` makes none (it maps only what the
    /// MR already tracks). Sleeps: the caller's own system call or a job
    /// on its owner's fault workqueue, never a QP's run.
    pub(crate) fn run(&self) -> Result {
        let end = self.uva.checked_add(self.len).ok_or(EFAULT)?;
        let mut at = self.uva;
        while at < end {
            let piece = (PREFETCH_PIECE - at % PREFETCH_PIECE).min(end - at);
            // (Over the owner's memory limit stays ENOMEM; any other
            // failure is an address that cannot be had.)
            self.piece(at, piece)
                .map_err(|e| if e == ENOMEM { e } else { EFAULT })?;
            at += piece;
        }
        Ok(())
    }

    /// Brings the `n` bytes at user address `at` in (they lie in one
    /// piece, hence in one part of an implicit MR).
    fn piece(&self, at: u64, n: u64) -> Result {
        match &self.paged {
            Paged::Explicit(u) => self.fetch(u, at, n),
            Paged::Implicit(imp) if self.how == Fetch::Present => match imp.existing(at) {
                Some(part) => self.fetch(&part, at, n),
                None => Ok(()),
            },
            Paged::Implicit(imp) => {
                let (part, new) = imp.part(at)?;
                let r = self.fetch(&part, at, n);
                if r.is_err() && new {
                    imp.forget(&part);
                }
                r
            }
        }
    }

    fn fetch(&self, u: &OdpUmem, at: u64, n: u64) -> Result {
        match self.how {
            Fetch::Read => u.fault_in(at, n, false),
            Fetch::Write => u.fault_in(at, n, true),
            Fetch::Present => u.snapshot(at, n),
        }
    }
}

/// `advise_mr`: brings in the memory paged on demand that `sges` name in
/// `pd`'s MRs. Every SGE is checked first ([`prefetch_of`]): one bad SGE
/// fails the call and nothing is fetched. With `flush` the call returns
/// once all of it is in (`EFAULT` if some cannot be). Without, it returns
/// at once and a job on the fault workqueue of the PD's user brings the
/// memory in, best effort; while a user has [`FAULT_JOBS_MAX`] jobs under
/// way its advice is dropped, so what a user queues stays bounded.
///
/// [`FAULT_JOBS_MAX`]: crate::rdma::task::FAULT_JOBS_MAX
pub(crate) fn advise(pd: &Pd<Rrxe>, advice: Advice, flush: bool, sges: SgeList<'_>) -> Result {
    let how = match advice {
        Advice::Prefetch => Fetch::Read,
        Advice::PrefetchWrite => Fetch::Write,
        Advice::PrefetchNoFault => Fetch::Present,
    };
    // (Up to the 4095 SGEs uverbs passes: not one large kmalloc.)
    let mut all = KVVec::with_capacity(sges.len(), GFP_KERNEL)?;
    for s in sges.iter() {
        all.push(prefetch_of(pd, s.lkey, s.addr, s.length, how)?, GFP_KERNEL)?;
    }
    if flush {
        return all.iter().try_for_each(Prefetch::run);
    }
    let job = move || {
        for p in all.iter() {
            // (Best effort: a range that cannot be had is left to the
            // access, which fails on it as it would have.)
            let _ = p.run();
        }
    };
    let wq = pd.share().map(|s| s.workqueue());
    match task::spawn_fault_job(wq.as_deref(), pd.device().hold_mem(), job) {
        // A user with its jobs' share under way gets no more: the advice
        // is dropped (best effort), never done in the call, which could
        // wait as long as the user's memory takes (and hold up the
        // device's removal meanwhile).
        Ok(()) | Err((EBUSY, _)) => Ok(()),
        Err((e, _)) => Err(e),
    }
}

/// A key as a work request or a packet names it, for the QP whose engine
/// owns the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Key {
    /// An lkey of the QP's PD.
    Local(u32),
    /// An rkey a peer names to the QP.
    Remote(u32),
}

/// One key looked up for the packets of one message.
struct Cached {
    key: Key,
    need: Need,
    /// The range the lookup was checked for.
    start: u64,
    end: u64,
    /// [`key_epoch`] before the lookup.
    epoch: u64,
    region: Region,
}

/// A looked-up key kept for the packets that follow in the same message
/// and the same batch: a 64 KiB message at a 1 KiB MTU looks its keys up
/// once, not 64 times.
///
/// A miss checks the key for a whole span (the SGE, or what the message
/// has left), so the next packets, further into that span, hit. If the
/// span does not check out, only the packet's own bytes are looked up and
/// nothing is kept: a bad key or a short region fails the same packet as
/// without the cache. The engines clear the cache when a message or a
/// batch ends, so a deregistration waits for one batch at most; and a
/// kept lookup is used only while no key anywhere has changed since it
/// was made ([`keys_changed`](crate::mr::keys_changed)), so an invalidation, unbind or rereg is
/// seen by the next packet, as C rxe's lookup per packet sees it.
///
/// The kept lookup stays in place: a hit borrows it, nothing is moved
/// (taking it out and putting it back would copy the region twice per
/// packet).
pub(crate) struct KeyCache(RefCell<Option<Cached>>);

impl KeyCache {
    /// An empty cache.
    pub(crate) const fn new() -> Self {
        Self(RefCell::new(None))
    }

    /// Runs `f` on the region of `key` for the `n` bytes at `va`, which
    /// lie in `span` (start, length).
    // What one lookup needs: the QP, the key, the access, the bytes and
    // the message they lie in (the cache's key).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn with<R>(
        &self,
        qp: &Qp<Rrxe>,
        key: Key,
        need: Need,
        va: u64,
        n: u64,
        span: (u64, u64),
        f: impl FnOnce(&Region) -> Result<R, MemError>,
    ) -> Result<R, MemError> {
        let end = va.checked_add(n).ok_or(MemError::Bounds)?;
        // (`f` reaches no cache; were the cache in use, the lookup would
        // simply not be kept.)
        let Ok(mut slot) = self.0.try_borrow_mut() else {
            return settle(qp, &resolve(qp, key, va, n, need)?, f);
        };
        let epoch = key_epoch();
        if let Some(c) = slot.as_ref().filter(|c| {
            c.key == key && c.need == need && va >= c.start && end <= c.end && c.epoch == epoch
        }) {
            return settle(qp, &c.region, f);
        }
        *slot = None;
        // `span` is the caller's; it may not hold the packet.
        let whole = span
            .0
            .checked_add(span.1)
            .filter(|&e| span.0 <= va && end <= e);
        match whole.and_then(|e| Some((e, resolve(qp, key, span.0, span.1, need).ok()?))) {
            Some((e, region)) => {
                let c = slot.insert(Cached {
                    key,
                    need,
                    start: span.0,
                    end: e,
                    epoch,
                    region,
                });
                settle(qp, &c.region, f)
            }
            None => {
                drop(slot);
                settle(qp, &resolve(qp, key, va, n, need)?, f)
            }
        }
    }

    /// Checks `key` for `need` over the whole of `span` (start, length),
    /// and keeps the lookup for the packets of the message that follow.
    pub(crate) fn check(
        &self,
        qp: &Qp<Rrxe>,
        key: Key,
        need: Need,
        span: (u64, u64),
    ) -> Result<(), MemError> {
        // (A lookup of the whole span, kept; or one still valid from before.)
        self.with(qp, key, need, span.0, span.1, span, |_| Ok(()))
    }

    /// Drops what is kept (the MR reference with it).
    pub(crate) fn clear(&self) {
        if let Ok(mut slot) = self.0.try_borrow_mut() {
            *slot = None;
        }
    }
}

fn resolve(qp: &Qp<Rrxe>, key: Key, va: u64, n: u64, need: Need) -> Result<Region, MemError> {
    match key {
        Key::Local(k) => local(qp, k, va, n, need),
        Key::Remote(k) => rkey(qp, k, va, n, need),
    }
}

/// The bytes a [`copy_data`] moves: into the memory an SGE list names
/// (receive, read response, atomic result), or out of it (send data),
/// copied or (`Attach`, that many bytes) attached to a packet as page
/// fragments ([`Region::attach`]).
pub(crate) enum Transfer<'a> {
    Into(Src<'a>),
    /// Copied through a [`Fold`] (the wire path's copy and CRC in one pass).
    OutOf(&'a mut [u8], &'a mut Fold),
    Attach(&'a mut SkBuff, usize),
}

/// Why a [`copy_data`] failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CopyError {
    /// The SGE list ends before the copy does.
    Length,
    /// An SGE's address overflows, or its lkey refused the access.
    Protection,
    /// `Transfer::Attach` only: the memory cannot be attached (not pinned
    /// for a user MR), or the packet has too few fragment slots left.
    NotAttached,
    /// `Transfer::Into` only: the source was a packet whose sender revoked
    /// its pages ([`MemError::Revoked`]).
    Revoked,
    /// Memory paged on demand that is not in ([`MemError::WouldFault`]).
    WouldFault,
}

/// Copies between `data` and the SGE list `sge(0..num_sge)`, from byte
/// `offset` of the list (C rxe's `copy_data`). `keys`: the engine's key
/// cache for the lookups, if it keeps one.
pub(crate) fn copy_data(
    qp: &Qp<Rrxe>,
    keys: Option<&KeyCache>,
    sge: impl Fn(usize) -> Option<Sge>,
    num_sge: usize,
    offset: u32,
    mut data: Transfer<'_>,
) -> Result<(), CopyError> {
    let (total, need) = match &data {
        Transfer::Into(d) => (d.len(), Need::LocalWrite),
        Transfer::OutOf(d, _) => (d.len(), Need::LocalRead),
        Transfer::Attach(_, n) => (*n, Need::LocalRead),
    };
    let not_attached = core::cell::Cell::new(false);
    let mut skip = u64::from(offset);
    let mut at = 0usize;
    for i in 0..num_sge {
        if at == total {
            break;
        }
        let s = sge(i).ok_or(CopyError::Length)?;
        let len = u64::from(s.length);
        if skip >= len {
            skip -= len;
            continue;
        }
        let n = ((len - skip) as usize).min(total - at);
        let va = s.addr.checked_add(skip).ok_or(CopyError::Protection)?;
        let op = |r: &Region| match &mut data {
            Transfer::Into(d) => r.write(va, d.get(at..at + n).ok_or(MemError::Bounds)?),
            Transfer::OutOf(d, fold) => {
                r.read(va, d.get_mut(at..at + n).ok_or(MemError::Bounds)?, fold)
            }
            Transfer::Attach(skb, _) => {
                if r.attach(va, n, skb)? {
                    Ok(())
                } else {
                    not_attached.set(true);
                    Err(MemError::Fault)
                }
            }
        };
        match keys {
            Some(k) => k.with(
                qp,
                Key::Local(s.lkey),
                need,
                va,
                n as u64,
                (s.addr, len),
                op,
            ),
            None => local(qp, s.lkey, va, n as u64, need).and_then(|r| settle(qp, &r, op)),
        }
        .map_err(|e| {
            if not_attached.get() {
                CopyError::NotAttached
            } else if e == MemError::Revoked {
                CopyError::Revoked
            } else if e == MemError::WouldFault {
                CopyError::WouldFault
            } else {
                CopyError::Protection
            }
        })?;
        at += n;
        skip = 0;
    }
    if at != total {
        return Err(CopyError::Length);
    }
    Ok(())
}

/// Resolves an lkey of `qp`'s work requests for `n` bytes at `va`. The
/// device's local DMA lkey (`local_dma_lkey`, which kernel PDs get) is all
/// kernel memory for a kernel QP, and a key that nothing has for a user
/// QP: it lies above every pool's range, so no MR or window ever has it.
fn local(qp: &Qp<Rrxe>, k: u32, va: u64, n: u64, need: Need) -> Result<Region, MemError> {
    if k != LOCAL_DMA_LKEY {
        return lkey(qp.pd(), k, va, n, need);
    }
    let mem = qp.kernel_mem.ok_or(MemError::BadKey)?;
    Ok(Region {
        mr: None,
        snap: Snap::Kernel(mem),
        shift: 0,
        miss: RefCell::new(None),
    })
}

/// Resolves an lkey for `n` bytes at `va` on `pd` (an MR's only).
pub(crate) fn lkey(
    pd: &Pd<Rrxe>,
    lkey: u32,
    va: u64,
    n: u64,
    need: Need,
) -> Result<Region, MemError> {
    let mr = pd.device().mr_pool.get(lkey >> 8).ok_or(MemError::BadKey)?;
    Region::from_mr(mr, pd, lkey, false, va, n, need)
}

/// Resolves an rkey that a peer names to `qp` for `n` bytes at `va`: an
/// MR's rkey, or a bound memory window's.
///
/// A window reaches memory only through the MR it holds (its
/// [`MrBond`](crate::mr::MrBond), never an index), in its own PD, which
/// must be the QP's; a type 2 window only for the QP it was bound by (by
/// [`Handle`], which no later QP with the same number has). What the
/// window grants is checked against what the MR allows now (a rereg may
/// have taken local write away) and against how its pages were pinned.
pub(crate) fn rkey(
    qp: &Qp<Rrxe>,
    rkey: u32,
    va: u64,
    n: u64,
    need: Need,
) -> Result<Region, MemError> {
    let pd = qp.pd();
    let dev = pd.device();
    let index = rkey >> 8;
    if index <= crate::param::MAX_MR_INDEX {
        let mr = dev.mr_pool.get(index).ok_or(MemError::BadKey)?;
        return Region::from_mr(mr, pd, rkey, true, va, n, need);
    }
    let mw = dev.mw_pool.get(index).ok_or(MemError::BadKey)?;
    if !core::ptr::eq(mw.pd(), pd) {
        return Err(MemError::BadKey);
    }
    let (mr, addr, length, zero_based) = mw
        .with_binding(|b| {
            if b.rkey != rkey {
                return Err(MemError::BadKey);
            }
            if b.qp.is_some() && b.qp != qp.handle() {
                return Err(MemError::BadKey);
            }
            if !need.ok(b.access) {
                return Err(MemError::Access);
            }
            Ok((
                b.bond.mr_ref(),
                b.addr,
                b.length,
                b.access.contains(Access::ZERO_BASED),
            ))
        })
        .ok_or(MemError::BadKey)??;
    // A zero-based window is addressed from 0; its bytes are at `addr`.
    let (shift, base) = if zero_based { (addr, 0) } else { (0, addr) };
    need.check_range(base, length, va, n)?;
    // (A whole-MR flush names no address: nothing to shift.)
    let mr_va = if need.whole() {
        va
    } else {
        va.checked_add(shift).ok_or(MemError::Bounds)?
    };
    let snap = {
        let inner = mr.inner.lock();
        if !inner.in_pd(pd) {
            return Err(MemError::BadKey);
        }
        // The window cannot grant a write its MR no longer allows, nor a
        // flush its MR never allowed (a bind takes any flush rights).
        if need.writes() && !inner.access.contains(Access::LOCAL_WRITE) {
            return Err(MemError::Access);
        }
        if matches!(need, Need::RemoteFlush { .. }) && !need.ok(inner.access) {
            return Err(MemError::Access);
        }
        Region::snapshot(&inner, mr_va, n, need)?
    };
    Ok(Region {
        mr: Some(mr),
        snap,
        shift,
        miss: RefCell::new(None),
    })
}

/// Plain atomic operations for the responder.
pub(crate) fn cmp_swap(w: &AtomicU64, cmp: u64, swap: u64) -> u64 {
    match w.compare_exchange(cmp, swap, Ordering::AcqRel, Ordering::Acquire) {
        Ok(v) | Err(v) => v,
    }
}

/// Fetch-and-add.
pub(crate) fn fetch_add(w: &AtomicU64, add: u64) -> u64 {
    w.fetch_add(add, Ordering::AcqRel)
}
