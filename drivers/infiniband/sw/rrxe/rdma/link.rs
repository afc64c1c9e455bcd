// SPDX-License-Identifier: GPL-2.0

//! `rdma link add NAME type TYPE netdev DEV`: RDMA link operations.
//!
//! The C callback `newlink(ibdev_name, ndev)` carries no context pointer, so
//! the registration keeps its handler in a module-wide slot. A module can
//! therefore register one link type at a time; a second registration fails
//! with `EBUSY`.

use super::bindings;
use super::netdev::NetDevice;
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;
use kernel::types::Opaque;

/// Handles `rdma link add` for one link type.
pub(crate) trait LinkOps: Send + Sync + 'static {
    /// The `type` word of `rdma link add`.
    const TYPE: &'static CStr;

    /// Creates device `name` on `ndev`. Called in process context with no
    /// driver lock held; may sleep.
    fn newlink(&self, name: &CStr, ndev: &NetDevice) -> Result;
}

/// The handler of the registered link type, as `*const T` where `T` is the
/// `LinkOps` of the one live [`LinkRegistration`]; null when none is.
static HANDLER: AtomicPtr<core::ffi::c_void> = AtomicPtr::new(core::ptr::null_mut());

// SAFETY: The C ops are only touched by `rdma_link_register`/`unregister`,
// which serialise on the link ops rwsem; the handler is `Send + Sync`.
unsafe impl<T: LinkOps> Send for LinkRegistration<T> {}
// SAFETY: See `Send`; no method gives access to the C ops.
unsafe impl<T: LinkOps> Sync for LinkRegistration<T> {}

/// A registered link type; unregistered when dropped.
#[pin_data(PinnedDrop)]
pub(crate) struct LinkRegistration<T: LinkOps> {
    #[pin]
    ops: Opaque<bindings::rdma_link_ops>,
    handler: Arc<T>,
}

impl<T: LinkOps> LinkRegistration<T> {
    /// An initialiser that registers link type `T::TYPE`, handled by
    /// `handler`.
    pub(crate) fn new(handler: Arc<T>) -> impl PinInit<Self, Error> {
        let init = move |slot: *mut Self| {
            let raw = (&*handler as *const T).cast_mut().cast();
            if HANDLER
                .compare_exchange(
                    core::ptr::null_mut(),
                    raw,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_err()
            {
                return Err(EBUSY);
            }
            // SAFETY: `slot` is valid for writes and pinned (the
            // `pin_init_from_closure` contract); `HANDLER` now points at the
            // handler this registration keeps alive until it is dropped.
            unsafe {
                let ops = Opaque::raw_get(core::ptr::addr_of!((*slot).ops));
                ops.write(bindings::rdma_link_ops {
                    type_: T::TYPE.as_char_ptr(),
                    newlink: Some(Self::newlink_callback),
                    ..Default::default()
                });
                core::ptr::addr_of_mut!((*slot).handler).write(handler);
                bindings::rdma_link_register(ops);
            }
            Ok(())
        };
        // SAFETY: On success every field is initialised and the ops are
        // registered; on error nothing was written.
        unsafe { kernel::init::pin_init_from_closure(init) }
    }

    /// # Safety
    ///
    /// Only the RDMA netlink code calls this, as the `newlink` of the link
    /// ops registered by `register`, with a NUL-terminated device name and a
    /// net device it holds a reference to.
    unsafe extern "C" fn newlink_callback(
        ibdev_name: *const kernel::ffi::c_char,
        ndev: *mut bindings::net_device,
    ) -> kernel::ffi::c_int {
        let h = HANDLER.load(Ordering::Acquire);
        if h.is_null() {
            return ENODEV.to_errno();
        }
        // SAFETY: `HANDLER` is non-null only between registration and
        // unregistration of the one `LinkRegistration<T>`, and
        // `rdma_link_unregister` waits for running callbacks; the `Arc` it
        // holds keeps the handler alive.
        let handler = unsafe { &*h.cast::<T>() };
        // SAFETY: The RDMA netlink code passes a NUL-terminated name.
        let name = unsafe { CStr::from_char_ptr(ibdev_name) };
        // SAFETY: nldev_newlink holds a reference on `ndev` for the call.
        let ndev = unsafe { NetDevice::from_raw(ndev) };
        match handler.newlink(name, ndev) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }
}

#[pinned_drop]
impl<T: LinkOps> PinnedDrop for LinkRegistration<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: The ops were registered by `new`; unregistering waits for
        // any `newlink` in progress (it takes the link ops rwsem).
        unsafe { bindings::rdma_link_unregister(self.ops.get()) };
        HANDLER.store(core::ptr::null_mut(), Ordering::Release);
    }
}
