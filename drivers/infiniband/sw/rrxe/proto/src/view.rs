// SPDX-License-Identifier: GPL-2.0

//! The `header_view!` macro: the common skeleton of every header view.
//!
//! A view is a thin wrapper over a byte buffer `T` (`&[u8]`, `&mut [u8]`,
//! `[u8; N]`, ...). `new` checks the length once and returns
//! [`super::hdr::TooShort`] instead of panicking; afterwards the getters
//! (for `T: AsRef<[u8]>`) and setters (for `T: AsMut<[u8]>`) read and write
//! the fields in place through [`super::be`], so a view never copies the
//! header.

/// Declares a header view type `$name<T>` of `$len` bytes.
macro_rules! header_view {
    ($(#[$doc:meta])* $name:ident, $len:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub struct $name<T> {
            buf: T,
        }

        impl<T> $name<T> {
            /// Length of this header in bytes.
            pub const LEN: usize = $len;

            /// Returns the wrapped buffer.
            pub fn into_inner(self) -> T {
                self.buf
            }
        }

        impl<T: AsRef<[u8]>> $name<T> {
            /// Wraps `buf`, which must hold at least [`Self::LEN`] bytes;
            /// bytes past the header are allowed and ignored.
            pub fn new(buf: T) -> Result<Self, TooShort> {
                let have = buf.as_ref().len();
                if have < Self::LEN {
                    Err(TooShort { need: Self::LEN, have })
                } else {
                    Ok(Self { buf })
                }
            }

            /// Wraps a buffer whose length the caller has checked already.
            /// (Were it short, reads would yield 0 and writes be dropped:
            /// still no panic.)
            #[allow(dead_code)]
            pub(crate) fn wrap(buf: T) -> Self {
                Self { buf }
            }

            /// The [`Self::LEN`] bytes of the header.
            pub fn as_bytes(&self) -> &[u8] {
                let b = self.buf.as_ref();
                b.get(..Self::LEN).unwrap_or(b)
            }

            #[inline(always)]
            fn b(&self) -> &[u8] {
                self.buf.as_ref()
            }
        }

        impl<T: AsMut<[u8]>> $name<T> {
            #[inline(always)]
            fn bm(&mut self) -> &mut [u8] {
                self.buf.as_mut()
            }

            /// Zeroes the [`Self::LEN`] bytes of the header.
            pub fn clear(&mut self) {
                for b in self.bm().iter_mut().take(Self::LEN) {
                    *b = 0;
                }
            }
        }
    };
}
