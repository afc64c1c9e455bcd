// SPDX-License-Identifier: GPL-2.0

//! A spinlock that disables local interrupts while held
//! (`spin_lock_irqsave`), for state that verbs reach from any context
//! (kernel consumers post and poll from softirq or interrupt handlers) and
//! that packet processing touches. The `kernel` crate of this kernel only
//! has the plain spinlock; this backend plugs into its generic `Lock`.
//!
//! And [`OneWayGate`]: a rule that holds until something first happens,
//! and that short runs may rely on while they last.

use super::bindings;
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::sync::lock::{Backend, Lock};

/// A spinlock held with local interrupts disabled.
pub(crate) type IrqSpinLock<T> = Lock<T, IrqSpinLockBackend>;

/// The backend of [`IrqSpinLock`].
pub(crate) struct IrqSpinLockBackend;

// SAFETY: `spin_lock_irqsave`/`spin_unlock_irqrestore` provide mutual
// exclusion; the guard state carries the saved flags from lock to unlock on
// the same CPU (interrupts are off, so the task cannot migrate).
unsafe impl Backend for IrqSpinLockBackend {
    type State = kernel::bindings::spinlock_t;
    type GuardState = kernel::ffi::c_ulong;

    /// # Safety
    ///
    /// As the `Backend` trait requires.
    unsafe fn init(
        ptr: *mut Self::State,
        name: *const kernel::ffi::c_char,
        key: *mut kernel::bindings::lock_class_key,
    ) {
        // SAFETY: Per the trait contract `ptr` is valid for writes and
        // `name`/`key` live forever.
        unsafe { kernel::bindings::__spin_lock_init(ptr, name, key) }
    }

    /// # Safety
    ///
    /// As the `Backend` trait requires.
    unsafe fn lock(ptr: *mut Self::State) -> Self::GuardState {
        // SAFETY: The lock was initialised (trait contract); the two
        // bindings name the same C type.
        unsafe { bindings::rrxe_helper_spin_lock_irqsave(ptr.cast()) }
    }

    /// # Safety
    ///
    /// As the `Backend` trait requires.
    unsafe fn unlock(ptr: *mut Self::State, flags: &Self::GuardState) {
        // SAFETY: The caller owns the lock; `flags` are the ones `lock`
        // saved.
        unsafe { bindings::rrxe_helper_spin_unlock_irqrestore(ptr.cast(), *flags) }
    }
}

/// Creates an [`IrqSpinLock`] initialiser with a static lock class.
#[macro_export]
macro_rules! new_irq_spinlock {
    ($inner:expr, $name:literal) => {
        $crate::rdma::sync::IrqSpinLock::new(
            $inner,
            kernel::c_str!($name),
            kernel::static_lock_class!(),
        )
    };
}

/// A random `u32` (`get_random_u32`).
pub(crate) fn random_u32() -> u32 {
    // SAFETY: Plain call; the RNG is always usable in process context.
    unsafe { bindings::rrxe_helper_get_random_u32() }
}

/// A gate that runs pass while it is open and that closes for good:
/// [`OneWayGate::close`] waits until every run that passed while it was
/// open has left. So a run that passed may rely, until it leaves, on
/// what closing the gate comes before (it is the first step of that
/// change).
pub(crate) struct OneWayGate(AtomicU32);

/// The closed bit of a [`OneWayGate`]; the bits below count the passes
/// held.
const GATE_CLOSED: u32 = 1 << 31;

impl OneWayGate {
    /// An open gate.
    pub(crate) const fn new() -> Self {
        Self(AtomicU32::new(0))
    }

    /// A pass through the gate, held until dropped; `None` if it is
    /// closed (or, never in practice, if 2^31 passes are held). Any
    /// context; never waits.
    pub(crate) fn enter(&self) -> Option<GatePass<'_>> {
        let mut s = self.0.load(Ordering::Relaxed);
        loop {
            if s & GATE_CLOSED != 0 || s == GATE_CLOSED - 1 {
                return None;
            }
            match self
                .0
                .compare_exchange_weak(s, s + 1, Ordering::Acquire, Ordering::Relaxed)
            {
                // INVARIANT: One pass counted, given back on drop.
                Ok(_) => return Some(GatePass(self)),
                Err(v) => s = v,
            }
        }
    }

    /// Whether the gate is closed.
    pub(crate) fn is_closed(&self) -> bool {
        self.0.load(Ordering::Acquire) & GATE_CLOSED != 0
    }

    /// Closes the gate for good and waits until no pass taken before is
    /// held. Sleeps: process context only.
    pub(crate) fn close(&self) {
        self.0.fetch_or(GATE_CLOSED, Ordering::AcqRel);
        while self.0.load(Ordering::Acquire) & !GATE_CLOSED != 0 {
            // SAFETY: The caller is in process context and may sleep (this
            // function's contract); passes are held for short runs.
            unsafe { kernel::bindings::msleep(1) };
        }
    }
}

/// A run's pass through a [`OneWayGate`].
///
/// # Invariants
///
/// Counted in the gate's passes until dropped.
pub(crate) struct GatePass<'a>(&'a OneWayGate);

impl Drop for GatePass<'_> {
    fn drop(&mut self) {
        self.0 .0.fetch_sub(1, Ordering::Release);
    }
}
