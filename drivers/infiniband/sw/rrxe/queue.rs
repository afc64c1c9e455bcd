// SPDX-License-Identifier: GPL-2.0

//! The rxe queue: a ring of fixed-size slots behind the header of
//! `include/uapi/rdma/rdma_user_rxe.h` (`struct rxe_queue_buf`), shared with
//! librxe by `mmap` for user objects.
//!
//! ```text
//!   0  log2_elem_size        128  producer_index   256  consumer_index
//! 384  data: 2^k slots of 2^log2_elem_size bytes; one slot is kept empty
//! ```
//!
//! The driver keeps a private copy of the index it owns (the producer for
//! queues it fills, the consumer for queues it drains) and only publishes
//! it; the other index is read from the shared header with acquire ordering
//! and masked, so a user cannot push the driver outside the ring. Element
//! contents read from a user ring are untrusted: callers copy a slot once
//! and validate the copy.
//!
//! For kernel consumers both indices are the driver's own; `client_*`
//! methods move the client side.
//!
//! Locking: a `Queue` is owned by its object's lock.

use crate::rdma::charge::MemCharge;
use crate::rdma::objects::UContext;
use crate::rdma::shmem::{Mapping, SharedBuf};
use crate::rdma::uapi::{self, MmInfo};
use kernel::prelude::*;
use kernel::sync::Arc;

use crate::Rrxe;

/// Offset of `producer_index` in the header.
const PRODUCER: usize = 128;
/// Offset of `consumer_index` in the header.
const CONSUMER: usize = 256;
/// Size of the header; the slots follow.
pub(crate) const HEADER: usize = 384;
/// Smallest slot: a cache line, as rxe pads elements.
const MIN_ELEM: usize = 64;

/// Which side the driver is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dir {
    /// The driver produces, the client consumes (CQs).
    ToClient,
    /// The client produces, the driver consumes (SQ, RQ, SRQ).
    FromClient,
}

/// A ring of slots.
pub(crate) struct Queue {
    buf: Arc<SharedBuf>,
    log2_elem: u32,
    mask: u32,
    dir: Dir,
    /// The driver's index: producer for `ToClient`, consumer for
    /// `FromClient`.
    index: u32,
    /// The offer of the buffer to user space, if it is a user queue.
    mapping: Option<Mapping>,
}

impl Queue {
    /// A queue holding at least `num_elem` elements of `elem_size` bytes;
    /// returns it with the element count it really holds (slots - 1).
    /// A `user` queue's ring is charged to the calling process first
    /// (`ENOMEM` over its locked-memory limit).
    pub(crate) fn new(
        num_elem: u32,
        elem_size: usize,
        dir: Dir,
        user: bool,
    ) -> Result<(Self, u32)> {
        let elem = elem_size
            .max(MIN_ELEM)
            .checked_next_power_of_two()
            .ok_or(EINVAL)?;
        let slots = num_elem
            .checked_add(1)
            .and_then(u32::checked_next_power_of_two)
            .ok_or(EINVAL)?;
        let size = (slots as usize)
            .checked_mul(elem)
            .and_then(|n| n.checked_add(HEADER))
            .ok_or(EINVAL)?;
        // A user queue's ring is charged to its process for as long as
        // the buffer lives (the charge goes with it).
        let charge = if user { MemCharge::user(size)? } else { None };
        let buf = SharedBuf::new(size, charge)?;
        let log2_elem = elem.trailing_zeros();
        let mask = slots - 1;
        buf.store_release(0, log2_elem)?;
        buf.store_release(4, mask)?;
        Ok((
            Self {
                buf,
                log2_elem,
                mask,
                dir,
                index: 0,
                mapping: None,
            },
            slots - 1,
        ))
    }

    /// Offers the ring to the user context and returns what librxe needs
    /// to map it.
    pub(crate) fn expose(&mut self, uctx: &UContext<Rrxe>) -> Result<MmInfo> {
        let m = self.buf.expose(uctx)?;
        let mi = uapi::mminfo(m.offset(), m.size());
        self.mapping = Some(m);
        Ok(mi)
    }

    /// Elements the ring can hold.
    pub(crate) fn capacity(&self) -> u32 {
        self.mask
    }

    /// Bytes per slot.
    pub(crate) fn elem_size(&self) -> usize {
        1usize << self.log2_elem
    }

    fn slot(&self, index: u32) -> usize {
        HEADER + (((index & self.mask) as usize) << self.log2_elem)
    }

    /// The producer index (masked).
    pub(crate) fn producer(&self) -> u32 {
        match self.dir {
            Dir::ToClient => self.index,
            Dir::FromClient => self.buf.load_acquire(PRODUCER).unwrap_or(0) & self.mask,
        }
    }

    /// The consumer index (masked).
    pub(crate) fn consumer(&self) -> u32 {
        match self.dir {
            Dir::ToClient => self.buf.load_acquire(CONSUMER).unwrap_or(0) & self.mask,
            Dir::FromClient => self.index,
        }
    }

    /// Elements waiting.
    pub(crate) fn count(&self) -> u32 {
        self.producer().wrapping_sub(self.consumer()) & self.mask
    }

    /// Whether no element waits.
    pub(crate) fn is_empty(&self) -> bool {
        self.count() == 0
    }

    /// Whether no slot is free.
    pub(crate) fn is_full(&self) -> bool {
        self.count() == self.mask
    }

    /// Copies `dst.len()` bytes at `off` of slot `index` out.
    pub(crate) fn read_at(&self, index: u32, off: usize, dst: &mut [u8]) -> Result {
        let end = off.checked_add(dst.len()).ok_or(EINVAL)?;
        if end > self.elem_size() {
            return Err(EINVAL);
        }
        self.buf.read(self.slot(index) + off, dst)
    }

    /// Copies `src` into slot `index` at `off`.
    pub(crate) fn write_at(&self, index: u32, off: usize, src: &[u8]) -> Result {
        let end = off.checked_add(src.len()).ok_or(EINVAL)?;
        if end > self.elem_size() {
            return Err(EINVAL);
        }
        self.buf.write(self.slot(index) + off, src)
    }

    /// The number of slots.
    pub(crate) fn slots(&self) -> u32 {
        self.mask + 1
    }

    /// The client's producer index (kernel clients posting).
    pub(crate) fn client_producer(&self) -> u32 {
        self.buf.load_acquire(PRODUCER).unwrap_or(0) & self.mask
    }

    /// Copies the slot at the consumer index into `dst` (up to the slot
    /// size).
    pub(crate) fn read_head(&self, dst: &mut [u8]) -> Result {
        let n = dst.len().min(self.elem_size());
        self.buf
            .read(self.slot(self.consumer()), dst.get_mut(..n).ok_or(EINVAL)?)
    }

    /// Writes `src` into the slot at the producer index.
    pub(crate) fn write_tail(&self, src: &[u8]) -> Result {
        if src.len() > self.elem_size() {
            return Err(EINVAL);
        }
        self.buf.write(self.slot(self.producer()), src)
    }

    /// Publishes one produced element (driver-produced queues).
    pub(crate) fn advance_producer(&mut self) -> Result {
        if self.dir != Dir::ToClient {
            return Err(EINVAL);
        }
        self.index = (self.index + 1) & self.mask;
        self.buf.store_release(PRODUCER, self.index)
    }

    /// Publishes one consumed element (driver-consumed queues).
    pub(crate) fn advance_consumer(&mut self) -> Result {
        if self.dir != Dir::FromClient {
            return Err(EINVAL);
        }
        self.index = (self.index + 1) & self.mask;
        self.buf.store_release(CONSUMER, self.index)
    }

    /// The client's side for kernel clients: one element produced.
    pub(crate) fn client_advance_producer(&mut self) -> Result {
        let p = self.buf.load_acquire(PRODUCER)?;
        self.buf
            .store_release(PRODUCER, p.wrapping_add(1) & self.mask)
    }

    /// The client's side for kernel clients: one element consumed.
    pub(crate) fn client_advance_consumer(&mut self) -> Result {
        let c = self.buf.load_acquire(CONSUMER)?;
        self.buf
            .store_release(CONSUMER, c.wrapping_add(1) & self.mask)
    }

    /// Empties the ring: both indices back to 0 (the QP was reset).
    pub(crate) fn reset(&mut self) {
        self.index = 0;
        // Cannot fail: the header is inside the buffer.
        let _ = self.buf.store_release(PRODUCER, 0);
        let _ = self.buf.store_release(CONSUMER, 0);
    }

    /// Moves the waiting elements into `new` (same direction) and makes it
    /// this queue. Returns the queue to drop: the old one, or `new` with
    /// `EINVAL` if the elements do not fit. (Dropping a user queue may
    /// free memory, so callers drop it after releasing their lock.)
    pub(crate) fn resize_into(
        &mut self,
        new: Queue,
    ) -> core::result::Result<Queue, (Error, Queue)> {
        match self.move_into(new) {
            Ok(old) => Ok(old),
            Err((e, q)) => Err((e, q)),
        }
    }

    fn move_into(&mut self, mut new: Queue) -> core::result::Result<Queue, (Error, Queue)> {
        let count = self.count();
        if count > new.capacity() {
            return Err((EINVAL, new));
        }
        if let Err(e) = self.copy_waiting(&mut new, count) {
            return Err((e, new));
        }
        Ok(core::mem::replace(self, new))
    }

    fn copy_waiting(&self, new: &mut Queue, count: u32) -> Result {
        let n = self.elem_size().min(new.elem_size());
        let mut from = self.consumer();
        for i in 0..count {
            new.buf
                .copy_from(new.slot(i), &self.buf, self.slot(from), n)?;
            from = from.wrapping_add(1) & self.mask;
        }
        // Both indices of the new ring: the elements sit at 0..count.
        new.buf.store_release(PRODUCER, count)?;
        new.buf.store_release(CONSUMER, 0)?;
        new.index = match new.dir {
            Dir::ToClient => count,
            Dir::FromClient => 0,
        };
        Ok(())
    }
}
