// SPDX-License-Identifier: GPL-2.0

//! 24-bit sequence numbers: packet (PSN) and message (MSN) sequence
//! arithmetic with wrap-around.
//!
//! IBA sequence numbers live in a 24-bit space that wraps, so "before" and
//! "after" are only meaningful within half the space (2^23). Comparison is
//! done the way rxe does it (`psn_compare` in rxe_verbs.h): the sign of
//! `(a - b) << 8` taken as a signed 32-bit number. That relation is not a
//! total order (it is not transitive across the whole space), which is why
//! [`Psn`] and [`Msn`] deliberately do not implement `Ord`.

use core::cmp::Ordering;

/// The size of the sequence space: 2^24.
pub const SEQ_SPACE: u32 = 1 << 24;
/// Mask of a 24-bit sequence number.
pub const SEQ_MASK: u32 = SEQ_SPACE - 1;
/// Half the space: the largest distance [`Psn::distance`] can report.
pub const SEQ_HALF: u32 = 1 << 23;

/// rxe's `psn_compare`: negative if `a` is before `b`, zero if equal,
/// positive if after, modulo 2^24. Only the sign is meaningful (the value is
/// the distance shifted left by 8). Bits above 24 of the inputs are ignored.
pub const fn psn_compare(a: u32, b: u32) -> i32 {
    (a.wrapping_sub(b) << 8) as i32
}

macro_rules! seq24 {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct $name(u32);

        impl $name {
            /// The zero sequence number.
            pub const ZERO: Self = Self(0);
            /// The largest sequence number (2^24 - 1).
            pub const MAX: Self = Self(SEQ_MASK);

            /// Makes a sequence number from the low 24 bits of `v`.
            pub const fn new(v: u32) -> Self {
                Self(v & SEQ_MASK)
            }

            /// The value, below 2^24.
            pub const fn get(self) -> u32 {
                self.0
            }

            /// `self + n` modulo 2^24.
            pub const fn add(self, n: u32) -> Self {
                Self::new(self.0.wrapping_add(n))
            }

            /// `self - n` modulo 2^24.
            pub const fn sub(self, n: u32) -> Self {
                Self::new(self.0.wrapping_sub(n))
            }

            /// The next number (`self + 1` modulo 2^24).
            pub const fn next(self) -> Self {
                self.add(1)
            }

            /// How far `self` is ahead of `base`, modulo 2^24 (0..2^24).
            pub const fn offset_from(self, base: Self) -> u32 {
                self.0.wrapping_sub(base.0) & SEQ_MASK
            }

            /// Signed distance from `other` to `self` in -2^23..2^23:
            /// positive if `self` is after `other`.
            pub const fn distance(self, other: Self) -> i32 {
                psn_compare(self.0, other.0) >> 8
            }

            /// Wrap-around comparison, as rxe's `psn_compare`.
            pub const fn compare(self, other: Self) -> Ordering {
                let d = psn_compare(self.0, other.0);
                if d < 0 {
                    Ordering::Less
                } else if d > 0 {
                    Ordering::Greater
                } else {
                    Ordering::Equal
                }
            }

            /// `self` comes strictly before `other`.
            pub const fn before(self, other: Self) -> bool {
                psn_compare(self.0, other.0) < 0
            }

            /// `self` comes strictly after `other`.
            pub const fn after(self, other: Self) -> bool {
                psn_compare(self.0, other.0) > 0
            }

            /// `self` is in the window of `len` numbers starting at `base`
            /// (`base`, `base + 1`, ..., `base + len - 1`, modulo 2^24). A
            /// `len` of 2^24 or more covers the whole space.
            pub const fn in_window(self, base: Self, len: u32) -> bool {
                self.offset_from(base) < len
            }
        }

        impl From<$name> for u32 {
            fn from(v: $name) -> u32 {
                v.0
            }
        }
    };
}

seq24!(
    /// A 24-bit packet sequence number (BTH PSN).
    Psn
);

seq24!(
    /// A 24-bit message sequence number (AETH MSN).
    Msn
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_to_24_bits() {
        assert_eq!(Psn::new(0x1ff_ffff).get(), 0xff_ffff);
        assert_eq!(Psn::new(0x100_0000), Psn::ZERO);
        assert_eq!(Msn::MAX.get(), 0xff_ffff);
    }

    #[test]
    fn wraps() {
        assert_eq!(Psn::MAX.next(), Psn::ZERO);
        assert_eq!(Psn::ZERO.sub(1), Psn::MAX);
        assert_eq!(Psn::new(0xff_fffe).add(5).get(), 3);
        assert_eq!(Psn::new(3).offset_from(Psn::new(0xff_fffe)), 5);
        assert_eq!(Psn::new(3).distance(Psn::new(0xff_fffe)), 5);
        assert_eq!(Psn::new(0xff_fffe).distance(Psn::new(3)), -5);
    }

    #[test]
    fn compare_like_rxe() {
        assert!(psn_compare(1, 0) > 0);
        assert!(psn_compare(0, 1) < 0);
        assert_eq!(psn_compare(7, 7), 0);
        assert!(psn_compare(0, 0xff_ffff) > 0);
        assert!(psn_compare(0xff_ffff, 0) < 0);
        // Bits above 24 never matter.
        assert_eq!(psn_compare(0x0100_0005, 5), 0);
        assert!(Psn::new(0).after(Psn::MAX));
        assert!(Psn::MAX.before(Psn::ZERO));
        assert_eq!(Psn::new(9).compare(Psn::new(9)), Ordering::Equal);
        // The antipode: exactly half the space apart compares "before" in
        // both directions' sign convention of rxe (the sign bit is set).
        assert!(psn_compare(SEQ_HALF, 0) < 0);
        assert_eq!(Psn::new(SEQ_HALF).distance(Psn::ZERO), -(SEQ_HALF as i32));
    }

    #[test]
    fn windows() {
        let base = Psn::new(0xff_fff0);
        assert!(base.in_window(base, 1));
        assert!(!base.in_window(base, 0));
        assert!(Psn::new(0xf).in_window(base, 0x20));
        assert!(!Psn::new(0x10).in_window(base, 0x20));
        assert!(!Psn::new(0xff_ffef).in_window(base, 0x20));
        assert!(Psn::new(0xff_ffef).in_window(base, SEQ_SPACE));
    }
}
