// SPDX-License-Identifier: GPL-2.0

//! AETH syndromes: ACK with a credit count, RNR NAK with its timer, NAK
//! codes (IBA vol. 1 9.7.5.1, tables 43-45; rxe_hdr.h `enum aeth_syndrome`).
//!
//! The syndrome byte is `0 TT VVVVV`: bit 7 reserved, bits 6:5 the type
//! (00 ACK, 01 RNR NAK, 10 reserved, 11 NAK) and bits 4:0 the value
//! (credit code, RNR timer, or NAK code).

/// Syndrome type bits (rxe `AETH_TYPE_MASK`).
pub const TYPE_MASK: u8 = 0xe0;
/// Value bits.
pub const VALUE_MASK: u8 = 0x1f;
/// ACK type.
pub const TYPE_ACK: u8 = 0x00;
/// RNR NAK type.
pub const TYPE_RNR_NAK: u8 = 0x20;
/// Reserved type.
pub const TYPE_RESERVED: u8 = 0x40;
/// NAK type.
pub const TYPE_NAK: u8 = 0x60;
/// The credit code meaning "no end-to-end flow control" (unlimited credits);
/// rxe always sends it (`AETH_ACK_UNLIMITED` = 0x1f is the whole syndrome).
pub const CREDITS_UNLIMITED: u8 = 0x1f;

/// A NAK code (IBA table 45).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NakCode {
    /// PSN sequence error (0).
    PsnSequenceError,
    /// Invalid request (1).
    InvalidRequest,
    /// Remote access error (2).
    RemoteAccessError,
    /// Remote operational error (3).
    RemoteOperationalError,
    /// Invalid RD request (4).
    InvalidRdRequest,
    /// A reserved code (5..=31), kept so decoding is lossless.
    Reserved(u8),
}

impl NakCode {
    /// Decodes the low 5 bits of `v`.
    pub const fn from_bits(v: u8) -> Self {
        match v & VALUE_MASK {
            0 => Self::PsnSequenceError,
            1 => Self::InvalidRequest,
            2 => Self::RemoteAccessError,
            3 => Self::RemoteOperationalError,
            4 => Self::InvalidRdRequest,
            r => Self::Reserved(r),
        }
    }

    /// The 5-bit code.
    pub const fn bits(self) -> u8 {
        match self {
            Self::PsnSequenceError => 0,
            Self::InvalidRequest => 1,
            Self::RemoteAccessError => 2,
            Self::RemoteOperationalError => 3,
            Self::InvalidRdRequest => 4,
            Self::Reserved(r) => r & VALUE_MASK,
        }
    }
}

/// An RNR NAK timer code (5 bits), the minimum time the requester waits
/// before retrying (IBA table 44, `enum ib_rnr_timeout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RnrTimer(u8);

/// Microseconds for each RNR timer code, IBA table 44 (code 0 is the
/// longest: 655.36 ms). rxe's `rnrnak_usec` has 61410 for code 25, a typo
/// for IBA's 61.44 ms; this table follows IBA.
const RNR_USEC: [u32; 32] = [
    655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1_280, 1_920, 2_560, 3_840,
    5_120, 7_680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840,
    245_760, 327_680, 491_520,
];

/// Looks `code` up in a 32-entry table.
#[allow(clippy::indexing_slicing)]
const fn lookup32(table: &[u32; 32], code: u8) -> u32 {
    // In range by construction: the index is masked to 5 bits and the table
    // has 32 entries, so this cannot panic.
    table[(code & VALUE_MASK) as usize]
}

impl RnrTimer {
    /// The longest timer, code 0: 655.36 ms.
    pub const MAX_WAIT: Self = Self(0);

    /// Makes a timer from a 5-bit code; `None` above 31.
    pub const fn new(code: u8) -> Option<Self> {
        if code <= VALUE_MASK {
            Some(Self(code))
        } else {
            None
        }
    }

    /// The 5-bit code.
    pub const fn code(self) -> u8 {
        self.0
    }

    /// The timer in microseconds (IBA table 44).
    pub const fn usec(self) -> u32 {
        lookup32(&RNR_USEC, self.0)
    }

    /// The shortest timer that waits at least `usec` microseconds (code 0,
    /// the longest, when nothing shorter suffices).
    pub const fn at_least_usec(usec: u32) -> Self {
        let mut best = Self::MAX_WAIT;
        let mut code = 1u8;
        while code <= VALUE_MASK {
            let t = Self(code);
            if t.usec() >= usec && (best.0 == 0 || t.usec() < best.usec()) {
                best = t;
            }
            code = code.wrapping_add(1);
        }
        best
    }
}

/// Credits advertised for each credit code 0..=30 (IBA table 43); code 31
/// means unlimited.
const CREDITS: [u32; 32] = [
    0,
    1,
    2,
    3,
    4,
    6,
    8,
    12,
    16,
    24,
    32,
    48,
    64,
    96,
    128,
    192,
    256,
    384,
    512,
    768,
    1024,
    1536,
    2048,
    3072,
    4096,
    6144,
    8192,
    12288,
    16384,
    24576,
    32768,
    u32::MAX,
];

/// The number of receive credits a 5-bit credit code stands for; `None`
/// for code 31 (unlimited, no end-to-end flow control).
pub const fn credits(code: u8) -> Option<u32> {
    if code & VALUE_MASK == CREDITS_UNLIMITED {
        None
    } else {
        Some(lookup32(&CREDITS, code))
    }
}

/// The largest credit code (0..=30) whose credit count does not exceed
/// `available` receive WQEs.
pub const fn credit_code(available: u32) -> u8 {
    let mut code = 0u8;
    while code < CREDITS_UNLIMITED {
        let next = code.wrapping_add(1);
        if next == CREDITS_UNLIMITED || lookup32(&CREDITS, next) > available {
            break;
        }
        code = next;
    }
    code
}

/// A decoded AETH syndrome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Syndrome {
    /// Positive acknowledge with a 5-bit credit code (31 = unlimited).
    Ack {
        /// Credit code; see [`credits`].
        credit_code: u8,
    },
    /// Receiver not ready: retry after the timer.
    RnrNak(RnrTimer),
    /// Negative acknowledge.
    Nak(NakCode),
    /// The reserved type 10b with its value bits, kept so decoding is
    /// lossless. Bit 7 set (reserved) also decodes here, whole.
    Reserved(u8),
}

impl Syndrome {
    /// rxe's ACK: unlimited credits (syndrome byte 0x1f).
    pub const ACK_UNLIMITED: Self = Self::Ack {
        credit_code: CREDITS_UNLIMITED,
    };

    /// Decodes a syndrome byte. Total: every byte decodes, and
    /// `decode(b).encode() == b` for every `b`.
    pub const fn decode(b: u8) -> Self {
        if b & 0x80 != 0 {
            return Self::Reserved(b);
        }
        let v = b & VALUE_MASK;
        match b & TYPE_MASK {
            TYPE_ACK => Self::Ack { credit_code: v },
            TYPE_RNR_NAK => Self::RnrNak(RnrTimer(v)),
            TYPE_NAK => Self::Nak(NakCode::from_bits(v)),
            _ => Self::Reserved(b),
        }
    }

    /// Encodes the syndrome byte. Values wider than 5 bits are masked.
    pub const fn encode(self) -> u8 {
        match self {
            Self::Ack { credit_code } => TYPE_ACK | (credit_code & VALUE_MASK),
            Self::RnrNak(t) => TYPE_RNR_NAK | t.0,
            Self::Nak(c) => TYPE_NAK | c.bits(),
            Self::Reserved(b) => b,
        }
    }

    /// True for an ACK (of any credit count).
    pub const fn is_ack(self) -> bool {
        matches!(self, Self::Ack { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rxe_syndrome_bytes() {
        // The values of rxe_hdr.h's enum aeth_syndrome.
        assert_eq!(Syndrome::ACK_UNLIMITED.encode(), 0x1f);
        assert_eq!(Syndrome::Nak(NakCode::PsnSequenceError).encode(), 0x60);
        assert_eq!(Syndrome::Nak(NakCode::InvalidRequest).encode(), 0x61);
        assert_eq!(Syndrome::Nak(NakCode::RemoteAccessError).encode(), 0x62);
        assert_eq!(
            Syndrome::Nak(NakCode::RemoteOperationalError).encode(),
            0x63
        );
        assert_eq!(Syndrome::Nak(NakCode::InvalidRdRequest).encode(), 0x64);
        assert_eq!(
            Syndrome::RnrNak(RnrTimer::new(0x12).unwrap()).encode(),
            0x32
        );
        assert_eq!(Syndrome::decode(0x20 | 14), Syndrome::RnrNak(RnrTimer(14)));
        assert_eq!(Syndrome::decode(0x05), Syndrome::Ack { credit_code: 5 });
        assert_eq!(Syndrome::decode(0x45), Syndrome::Reserved(0x45));
        assert_eq!(
            Syndrome::decode(0x7f),
            Syndrome::Nak(NakCode::Reserved(0x1f))
        );
        assert!(Syndrome::decode(0x1f).is_ack());
        assert!(!Syndrome::decode(0x60).is_ack());
    }

    #[test]
    fn every_byte_round_trips() {
        for b in 0..=255u8 {
            assert_eq!(Syndrome::decode(b).encode(), b, "{b:#x}");
        }
    }

    #[test]
    fn rnr_table_iba() {
        let want: [(u8, u32); 8] = [
            (0, 655_360),
            (1, 10),
            (5, 60),
            (13, 960),
            (18, 5_120),
            (25, 61_440),
            (30, 327_680),
            (31, 491_520),
        ];
        for (code, usec) in want {
            assert_eq!(RnrTimer::new(code).unwrap().usec(), usec);
        }
        assert_eq!(RnrTimer::new(32), None);
        // Codes 1..=31 grow strictly; code 0 is the longest of all.
        for c in 1..31u8 {
            assert!(RnrTimer(c).usec() < RnrTimer(c + 1).usec());
        }
        assert!(RnrTimer(0).usec() > RnrTimer(31).usec());
    }

    #[test]
    fn rnr_at_least() {
        assert_eq!(RnrTimer::at_least_usec(0).code(), 1);
        assert_eq!(RnrTimer::at_least_usec(10).code(), 1);
        assert_eq!(RnrTimer::at_least_usec(11).code(), 2);
        assert_eq!(RnrTimer::at_least_usec(61_440).code(), 25);
        assert_eq!(RnrTimer::at_least_usec(491_521).code(), 0);
        assert_eq!(RnrTimer::at_least_usec(u32::MAX).code(), 0);
        for c in 0..32u8 {
            let t = RnrTimer(c);
            assert_eq!(RnrTimer::at_least_usec(t.usec()), t);
        }
    }

    #[test]
    fn credit_table() {
        assert_eq!(credits(0), Some(0));
        assert_eq!(credits(5), Some(6));
        assert_eq!(credits(30), Some(32768));
        assert_eq!(credits(31), None);
        assert_eq!(credit_code(0), 0);
        assert_eq!(credit_code(5), 4);
        assert_eq!(credit_code(6), 5);
        assert_eq!(credit_code(40_000), 30);
        for c in 0..31u8 {
            assert_eq!(credit_code(credits(c).unwrap()), c);
        }
    }
}
