// SPDX-License-Identifier: GPL-2.0

//! Index pools: objects found by a number (QPN, memory key index, AH
//! number) from any context, including packet processing in softirq.
//!
//! A [`Pool`] is an allocating xarray (`XA_FLAGS_LOCK_IRQ`) of
//! [`PoolElem`]s. Each ib object wrapper embeds one `PoolElem`; the
//! abstraction inserts it when the driver asks (`Pool::insert`) and removes
//! it when ib_core destroys the object, before the object's state is
//! dropped. Removal erases the index, so no new lookup finds the object,
//! then waits until every [`PoolRef`] taken by earlier lookups is gone. So a
//! `PoolRef` always points at a live object, and destroy cannot race a
//! later user (a packet in flight holds a `PoolRef`).
//!
//! Lookups take the xarray lock with interrupts disabled and take a
//! reference only if the count is not already zero; removal drops the
//! initial reference after erasing.
//!
//! An index is reused once its object is gone, so an object that must
//! find another one again later never keeps its index: it keeps either a
//! [`PoolRef`] (the other object then cannot go: its destroy waits, so a
//! long-lived `PoolRef` goes with a rule that refuses the destroy while
//! it is held, as an MR with windows bound refuses deregistration), or a
//! [`Handle`]: the index with the object's serial number, which no other
//! object ever has, so a lookup by handle finds that object or nothing.

use super::bindings;
use core::marker::PhantomData;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};
use kernel::prelude::*;
use kernel::types::Opaque;

/// The pool link of one object. Zeroed memory is a valid, unlinked elem
/// (ib_core zeroes the objects it allocates).
///
/// # Invariants
///
/// While `pool` is non-null, the elem is stored in that pool's xarray at
/// `index` and `refs` counts one reference for the pool plus one per
/// [`PoolRef`]; `done` is initialised.
#[repr(C)]
pub(crate) struct PoolElem {
    pool: AtomicPtr<RawPool>,
    index: AtomicU32,
    refs: AtomicU32,
    /// Set when the elem is inserted, from [`NEXT_SERIAL`]; never reused.
    serial: AtomicU64,
    done: Opaque<bindings::completion>,
}

/// The serial number of the next object inserted in any pool. At a
/// billion insertions a second, 64 bits last five centuries.
static NEXT_SERIAL: AtomicU64 = AtomicU64::new(1);

/// The name of one pooled object that no other object ever has: its
/// index and its serial number. A lookup by handle ([`Pool::get_handle`])
/// finds the object or, once it is gone, nothing, even when its index
/// was given to another object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Handle {
    index: u32,
    serial: u64,
}

impl PoolElem {
    /// The index, or `None` if the object is in no pool.
    pub(crate) fn index(&self) -> Option<u32> {
        if self.pool.load(Ordering::Acquire).is_null() {
            None
        } else {
            Some(self.index.load(Ordering::Relaxed))
        }
    }

    /// The object's handle, or `None` if it is in no pool.
    pub(crate) fn handle(&self) -> Option<Handle> {
        let index = self.index()?;
        Some(Handle {
            index,
            serial: self.serial.load(Ordering::Relaxed),
        })
    }

    /// Takes a reference if the object is in its pool (for owners other
    /// than [`PoolRef`], such as a packet in flight). Give it back with
    /// [`Self::release`].
    pub(super) fn hold(&self) -> bool {
        self.get()
    }

    /// Gives back a reference taken with [`Self::hold`].
    pub(super) fn release(&self) {
        self.put();
    }

    fn get(&self) -> bool {
        let mut n = self.refs.load(Ordering::Relaxed);
        loop {
            if n == 0 {
                return false;
            }
            match self
                .refs
                .compare_exchange_weak(n, n + 1, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(v) => n = v,
            }
        }
    }

    fn put(&self) {
        if self.refs.fetch_sub(1, Ordering::AcqRel) == 1 {
            // SAFETY: `done` was initialised when the elem was inserted;
            // `complete` may be called from any context.
            unsafe { bindings::complete(self.done.get()) };
        }
    }

    /// Erases the elem from its pool and drops the pool's reference.
    fn remove(&self) -> Option<&RawPool> {
        let pool = self.pool.load(Ordering::Acquire);
        if pool.is_null() {
            return None;
        }
        // SAFETY: By the type invariant the pool outlives its elems (the
        // owner of a pool destroys it only after every object in it).
        let pool = unsafe { &*pool };
        let index = self.index.load(Ordering::Relaxed);
        // SAFETY: The xarray is initialised; the entry at `index` is us.
        unsafe { bindings::rrxe_helper_xa_erase_irq(pool.xa.get(), index as _) };
        self.put();
        Some(pool)
    }

    fn finish(&self, pool: &RawPool) {
        pool.count.fetch_sub(1, Ordering::Relaxed);
        self.pool.store(core::ptr::null_mut(), Ordering::Release);
    }

    /// Removes the elem from its pool, if it is in one, and waits until no
    /// [`PoolRef`] to it remains. Sleeps.
    ///
    /// # Safety
    ///
    /// Called once, when the object owning the elem is being destroyed.
    pub(crate) unsafe fn remove_and_wait(&self) {
        if let Some(pool) = self.remove() {
            // SAFETY: `done` is initialised; destroy ops that call this run
            // in process context.
            unsafe { bindings::wait_for_completion(self.done.get()) };
            self.finish(pool);
        }
    }

    /// As [`Self::remove_and_wait`] for atomic context: polls for the
    /// references to go (lookups hold them for one packet's processing).
    ///
    /// It polls the completion, not the count: the holder that drops the
    /// last reference goes on to `complete()`, which takes the
    /// completion's lock inside this object after the count reached zero.
    /// `completion_done` returns true only once that lock was released, so
    /// the object cannot be freed under `complete()`.
    ///
    /// # Safety
    ///
    /// As [`Self::remove_and_wait`].
    pub(crate) unsafe fn remove_and_spin(&self) {
        if let Some(pool) = self.remove() {
            // SAFETY: `done` was initialised when the elem was inserted;
            // `completion_done` may be called from any context.
            while !unsafe { bindings::completion_done(self.done.get()) } {
                core::hint::spin_loop();
            }
            self.finish(pool);
        }
    }
}

/// The untyped part of a pool.
#[pin_data(PinnedDrop)]
struct RawPool {
    #[pin]
    xa: Opaque<bindings::xarray>,
    next: AtomicU32,
    count: AtomicU32,
    min: u32,
    max: u32,
    limit: u32,
}

#[pinned_drop]
impl PinnedDrop for RawPool {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: Every elem removed itself before its object was freed, so
        // the xarray is empty; destroy frees its internal nodes.
        unsafe { bindings::xa_destroy(self.xa.get()) };
    }
}

/// Objects that embed a [`PoolElem`].
///
/// # Safety
///
/// `elem` must return a field of `self`, and `from_elem` must invert it
/// (return the object that contains the elem).
pub(crate) unsafe trait PoolObject {
    /// The embedded elem.
    fn elem(&self) -> &PoolElem;
    /// The object containing `elem`.
    ///
    /// # Safety
    ///
    /// `elem` must be the elem of a live `Self`.
    unsafe fn from_elem(elem: *const PoolElem) -> *const Self;
}

/// A pool of `O`s indexed by numbers in `min..=max`, holding at most
/// `limit` objects.
#[pin_data]
pub(crate) struct Pool<O: PoolObject> {
    #[pin]
    raw: RawPool,
    _o: PhantomData<fn(&O)>,
}

// SAFETY: The xarray is internally locked and the counters are atomic.
unsafe impl<O: PoolObject> Send for Pool<O> {}
// SAFETY: See `Send`.
unsafe impl<O: PoolObject> Sync for Pool<O> {}

impl<O: PoolObject> Pool<O> {
    /// A pool for indices `min..=max` with at most `limit` members.
    pub(crate) fn new(min: u32, max: u32, limit: u32) -> impl PinInit<Self> {
        pin_init!(Self {
            raw <- pin_init!(RawPool {
                xa <- Opaque::ffi_init(|xa| {
                    // SAFETY: `xa` is valid for writes.
                    unsafe { bindings::rrxe_helper_xa_init_alloc_irq(xa) }
                }),
                next: AtomicU32::new(min),
                count: AtomicU32::new(0),
                min,
                max,
                limit,
            }),
            _o: PhantomData,
        })
    }

    /// Number of objects in the pool.
    pub(crate) fn count(&self) -> u32 {
        self.raw.count.load(Ordering::Relaxed)
    }

    /// `ENOMEM` if the pool is at its limit (a check before building an
    /// object; `insert` checks again).
    pub(crate) fn count_check(&self) -> Result {
        if self.count() >= self.raw.limit {
            Err(ENOMEM)
        } else {
            Ok(())
        }
    }

    /// Inserts `obj` at a free index (cyclically after the last one) and
    /// returns the index. `ENOMEM` when the pool is at its limit or out of
    /// indices. The object leaves the pool when its wrapper is destroyed.
    pub(crate) fn insert(&self, obj: &O) -> Result<u32> {
        self.insert_gfp(obj, false)
    }

    /// As [`Self::insert`], from atomic context if `atomic`.
    pub(crate) fn insert_gfp(&self, obj: &O, atomic: bool) -> Result<u32> {
        let elem = obj.elem();
        if !elem.pool.load(Ordering::Acquire).is_null() {
            return Err(EINVAL);
        }
        if self.raw.count.fetch_add(1, Ordering::Relaxed) >= self.raw.limit {
            self.raw.count.fetch_sub(1, Ordering::Relaxed);
            return Err(ENOMEM);
        }
        elem.refs.store(1, Ordering::Relaxed);
        // Before the xarray publishes the elem (its lock orders the store
        // before any lookup that finds it).
        elem.serial.store(
            NEXT_SERIAL.fetch_add(1, Ordering::Relaxed),
            Ordering::Relaxed,
        );
        // SAFETY: `done` is ours to initialise: the elem is in no pool.
        unsafe { bindings::rrxe_helper_init_completion(elem.done.get()) };
        let mut id: u32 = 0;
        // The cyclic cursor is read and moved by the allocation under the
        // xarray's lock (as C rxe's `&pool->next`): loaded before and
        // stored after, a racing allocation's cursor was rolled back and
        // just-freed key indices came back at once.
        let next = self.raw.next.as_ptr();
        // SAFETY: The xarray is initialised. The stored pointer stays
        // valid until `remove_and_wait`, which the object wrapper calls
        // before its memory is freed. `next` is only accessed here, under
        // the xarray's lock.
        let ret = unsafe {
            bindings::rrxe_helper_xa_alloc_cyclic_irq(
                self.raw.xa.get(),
                &mut id,
                (elem as *const PoolElem).cast_mut().cast(),
                self.raw.min,
                self.raw.max,
                next,
                atomic,
            )
        };
        if ret < 0 {
            self.raw.count.fetch_sub(1, Ordering::Relaxed);
            return Err(if ret == EBUSY.to_errno() {
                ENOMEM
            } else {
                Error::from_errno(ret)
            });
        }
        elem.index.store(id, Ordering::Relaxed);
        // INVARIANT: Inserted at `id` with one reference for the pool.
        elem.pool
            .store((&self.raw as *const RawPool).cast_mut(), Ordering::Release);
        Ok(id)
    }

    /// The object at `index`, with a reference that keeps it from being
    /// destroyed. Any context.
    pub(crate) fn get(&self, index: u32) -> Option<PoolRef<O>> {
        // SAFETY: The xarray is initialised; lookups under its lock see
        // only inserted elems, whose objects are live until removal, which
        // erases under the same lock first.
        unsafe {
            let xa = self.raw.xa.get();
            let flags = bindings::rrxe_helper_xa_lock_irqsave(xa);
            let e = bindings::xa_load(xa, index as _).cast::<PoolElem>();
            let got = !e.is_null() && (*e).get();
            bindings::rrxe_helper_xa_unlock_irqrestore(xa, flags);
            if got {
                // INVARIANT: We took a reference on a live object.
                Some(PoolRef {
                    obj: NonNull::new_unchecked(O::from_elem(e).cast_mut()),
                })
            } else {
                None
            }
        }
    }
}

impl<O: PoolObject> Pool<O> {
    /// Runs `f` on the object at `index`, if it is in the pool, under the
    /// pool's lock (interrupts off; `f` must not sleep) and without taking
    /// a reference: removal erases under the same lock first, so the
    /// object lives while `f` runs, and a destroy that cannot sleep never
    /// waits for this lookup (from an interrupt on this CPU it could not).
    /// Any context.
    pub(crate) fn with<R>(&self, index: u32, f: impl FnOnce(&O) -> R) -> Option<R> {
        // SAFETY: The xarray is initialised; lookups under its lock see
        // only inserted elems, whose objects are live until removal, which
        // erases under the same lock first. An elem whose pool reference
        // is gone (`refs` 0) is being removed and is not looked at.
        unsafe {
            let xa = self.raw.xa.get();
            let flags = bindings::rrxe_helper_xa_lock_irqsave(xa);
            let e = bindings::xa_load(xa, index as _).cast::<PoolElem>();
            let r = if !e.is_null() && (*e).refs.load(Ordering::Acquire) != 0 {
                Some(f(&*O::from_elem(e)))
            } else {
                None
            };
            bindings::rrxe_helper_xa_unlock_irqrestore(xa, flags);
            r
        }
    }

    /// The object `h` names, if it is still in the pool (see [`Handle`]).
    /// Any context.
    pub(crate) fn get_handle(&self, h: Handle) -> Option<PoolRef<O>> {
        let r = self.get(h.index)?;
        // The serial was written before the elem went into the xarray,
        // whose lock the lookup took.
        if r.elem().serial.load(Ordering::Relaxed) == h.serial {
            Some(r)
        } else {
            None
        }
    }
}

/// A counted reference to a pooled object: while it lives, the object's
/// destroy waits.
///
/// # Invariants
///
/// `obj` is live and this value holds one of its elem's references.
pub(crate) struct PoolRef<O: PoolObject> {
    obj: NonNull<O>,
}

// SAFETY: References may be dropped on any thread; objects are Sync.
unsafe impl<O: PoolObject + Sync> Send for PoolRef<O> {}
// SAFETY: Only shared access is given out.
unsafe impl<O: PoolObject + Sync> Sync for PoolRef<O> {}

impl<O: PoolObject> core::ops::Deref for PoolRef<O> {
    type Target = O;

    fn deref(&self) -> &O {
        // SAFETY: By the type invariant the object is live.
        unsafe { self.obj.as_ref() }
    }
}

impl<O: PoolObject> Clone for PoolRef<O> {
    fn clone(&self) -> Self {
        // The count is at least one (ours), so this cannot fail.
        let ok = self.elem().get();
        debug_assert!(ok);
        // INVARIANT: One more reference taken.
        Self { obj: self.obj }
    }
}

impl<O: PoolObject> Drop for PoolRef<O> {
    fn drop(&mut self) {
        self.elem().put();
    }
}
