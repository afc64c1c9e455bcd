// SPDX-License-Identifier: GPL-2.0

//! The retransmit deadline, kept apart from the kernel timer that
//! enforces it.
//!
//! A requester restarts its ACK timeout with every message it sends and
//! stops it with every ACK that leaves nothing outstanding. Doing that on
//! the kernel timer itself costs a timer-base lock round trip (and an
//! enqueue or dequeue) per message; in a ping-pong that is twice per round
//! trip. [`Deadline`] moves the deadline in a plain field instead and
//! leaves the kernel timer pending:
//! - the timer is only armed when none is pending, or when the deadline
//!   moves *earlier* than the pending expiry (a reset back-off);
//! - when it fires, [`Deadline::fired`] says whether the deadline really
//!   passed, or the timer must be armed again for the rest of the time, or
//!   nothing is outstanding any more.
//!
//! So a retransmission never comes earlier than the deadline, and never
//! later than it by more than the timer's own slack. Times are jiffies: an
//! unsigned counter that wraps, compared the way the kernel's
//! `time_before` does (the sign of the difference).

/// A point in time in jiffies (the kernel's `unsigned long`).
pub type Jiffies = u64;

/// Whether `a` is before `b` on the wrapping jiffies clock.
pub const fn time_before(a: Jiffies, b: Jiffies) -> bool {
    (a.wrapping_sub(b) as i64) < 0
}

/// What a fired timer means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fired {
    /// Nothing is outstanding: no timeout, and the timer stays off.
    Idle,
    /// The deadline moved on since the timer was armed: arm it again for
    /// this expiry, no timeout yet.
    Rearm(Jiffies),
    /// The deadline passed: a real timeout.
    Expired,
}

/// A retransmit deadline and the state of the kernel timer behind it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Deadline {
    /// When the oldest unacknowledged packet times out; `None` when
    /// nothing waits for an acknowledgement.
    due: Option<Jiffies>,
    /// The expiry of the pending kernel timer; `None` when it is not
    /// pending (never armed, fired, or cancelled).
    timer: Option<Jiffies>,
}

impl Deadline {
    /// No deadline and no timer.
    pub const fn new() -> Self {
        Self {
            due: None,
            timer: None,
        }
    }

    /// Whether a deadline is set (something waits for an ACK).
    pub const fn is_set(&self) -> bool {
        self.due.is_some()
    }

    /// Sets the deadline to `now + dur` (`dur` at least one jiffy).
    /// Returns the expiry to arm the kernel timer at, or `None` when the
    /// pending timer fires early enough (it is checked again then).
    pub fn start(&mut self, now: Jiffies, dur: Jiffies) -> Option<Jiffies> {
        let due = now.wrapping_add(dur.max(1));
        self.due = Some(due);
        match self.timer {
            Some(t) if !time_before(due, t) => None,
            _ => {
                self.timer = Some(due);
                Some(due)
            }
        }
    }

    /// Nothing waits for an ACK any more. The timer, if pending, is left
    /// to fire once and find [`Fired::Idle`].
    pub fn clear(&mut self) {
        self.due = None;
    }

    /// The kernel timer was cancelled (and the deadline dropped with it).
    pub fn cancel(&mut self) {
        *self = Self::new();
    }

    /// The kernel timer fired at `now`. On [`Fired::Rearm`] the caller
    /// arms it at the given expiry; on [`Fired::Expired`] the deadline is
    /// consumed (a retransmission starts a new one).
    pub fn fired(&mut self, now: Jiffies) -> Fired {
        self.timer = None;
        match self.due {
            None => Fired::Idle,
            Some(due) if time_before(now, due) => {
                self.timer = Some(due);
                Fired::Rearm(due)
            }
            Some(_) => {
                self.due = None;
                Fired::Expired
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_start_arms_later_ones_do_not() {
        let mut d = Deadline::new();
        assert!(!d.is_set());
        assert_eq!(d.start(100, 10), Some(110));
        assert!(d.is_set());
        // Each message pushes the deadline on; the pending timer stays.
        assert_eq!(d.start(105, 10), None);
        assert_eq!(d.start(109, 10), None);
        // Fires at 110: the deadline is 119, so arm again, no timeout.
        assert_eq!(d.fired(110), Fired::Rearm(119));
        assert_eq!(d.fired(119), Fired::Expired);
        assert!(!d.is_set());
    }

    #[test]
    fn earlier_deadline_rearms() {
        let mut d = Deadline::new();
        // Backed off: 80 jiffies.
        assert_eq!(d.start(0, 80), Some(80));
        // Progress reset the back-off: due at 15, before the timer.
        assert_eq!(d.start(5, 10), Some(15));
        assert_eq!(d.fired(15), Fired::Expired);
    }

    #[test]
    fn cleared_deadline_fires_idle_and_stays_off() {
        let mut d = Deadline::new();
        assert_eq!(d.start(0, 10), Some(10));
        d.clear();
        assert!(!d.is_set());
        assert_eq!(d.fired(10), Fired::Idle);
        // The timer is off now: the next start must arm it.
        assert_eq!(d.start(20, 10), Some(30));
        // Cleared while pending, then started again before it fires:
        // the pending timer (30) covers the new deadline (35).
        d.clear();
        assert_eq!(d.start(25, 10), None);
        assert_eq!(d.fired(30), Fired::Rearm(35));
    }

    #[test]
    fn cancel_forgets_the_timer() {
        let mut d = Deadline::new();
        assert_eq!(d.start(0, 10), Some(10));
        d.cancel();
        assert_eq!(d, Deadline::new());
        assert_eq!(d.start(1, 10), Some(11));
    }

    #[test]
    fn zero_duration_is_one_jiffy() {
        let mut d = Deadline::new();
        assert_eq!(d.start(7, 0), Some(8));
        assert_eq!(d.fired(7), Fired::Rearm(8));
    }

    #[test]
    fn wraps_like_the_kernel_clock() {
        let mut d = Deadline::new();
        let now = u64::MAX - 4;
        assert_eq!(d.start(now, 10), Some(5));
        assert!(time_before(now, 5));
        assert_eq!(d.fired(u64::MAX), Fired::Rearm(5));
        assert_eq!(d.fired(5), Fired::Expired);
        // A later start across the wrap does not re-arm.
        assert_eq!(d.start(u64::MAX - 1, 10), Some(8));
        assert_eq!(d.start(2, 10), None);
        assert_eq!(d.fired(8), Fired::Rearm(12));
    }
}
