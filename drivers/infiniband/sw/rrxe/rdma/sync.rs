// SPDX-License-Identifier: GPL-2.0

//! A spinlock that disables local interrupts while held
//! (`spin_lock_irqsave`), for state that verbs reach from any context
//! (kernel consumers post and poll from softirq or interrupt handlers) and
//! that packet processing touches. The `kernel` crate of this kernel only
//! has the plain spinlock; this backend plugs into its generic `Lock`.

use super::bindings;
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
