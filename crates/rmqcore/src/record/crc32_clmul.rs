//! CRC-32/IEEE folded 64 bytes per instruction with the 512-bit carry-less multiply
//! (AVX-512 `VPCLMULQDQ`). Records are mostly 100 B to 4 KiB and every one is hashed when
//! written and when read; crc32fast takes its 512-bit path only from 2 KiB.
//!
//! The bytes are a polynomial over GF(2), the first byte's lowest bit the highest power
//! (the CRC's reflected order). A 128-bit lane loaded from 16 bytes holds bit m as the
//! coefficient of x^(127−m): its low 64 bits (A) are the higher powers, its high 64 (B)
//! the lower, so the lane is A·x⁶⁴ + B. Moving a lane D bits further on multiplies it by
//! x^D; modulo P that is A·(x^(D+64) mod P) + B·(x^D mod P), 96 bits, which is XORed into
//! the lane D bits on. A multiplier m < x³² is kept as a 33-bit value whose bit j is the
//! coefficient of x^(32−j) (`crc_shift`'s reflected form shifted left by one): a product
//! of a 64-bit half and such a value is x³² short of the lane's alignment, so the
//! multipliers are x^(D+32) and x^(D−32). At the end one lane remains, and the CRC is
//! that lane times x³² mod P (Barrett's reduction, two more multiplies).

#[cfg(target_arch = "x86_64")]
pub use wide::{available, crc32_update, MIN_LENGTH};

// The 512-bit intrinsics are stable from Rust 1.89, the workspace's `rust-version`.
#[cfg(target_arch = "x86_64")]
mod wide {
    use std::arch::x86_64::*;
    use std::sync::LazyLock;

    use crate::record::crc_shift::factor_for;

    /// Below this the 512-bit set-up costs more than it saves (one register of bytes).
    pub const MIN_LENGTH: usize = 64;

    /// Whether this CPU runs `crc32_update`; detected once.
    pub fn available() -> bool {
        static DETECTED: LazyLock<bool> = LazyLock::new(|| {
            is_x86_feature_detected!("avx512f")
                && is_x86_feature_detected!("vpclmulqdq")
                && is_x86_feature_detected!("pclmulqdq")
                && is_x86_feature_detected!("sse4.1")
                && is_x86_feature_detected!("ssse3")
        });
        *DETECTED
    }

    /// x^bits mod P as a 33-bit multiplier (see the module's comment).
    const fn multiplier(bits: u64) -> i64 {
        assert!(bits.is_multiple_of(8));
        ((factor_for(bits / 8) as u64) << 1) as i64
    }

    /// The pair that moves a lane `bits` further on: (for A, for B).
    const fn fold_pair(bits: u64) -> (i64, i64) {
        (multiplier(bits + 32), multiplier(bits - 32))
    }

    /// P = x³² + ..., as a 33-bit multiplier: bit j is the coefficient of x^(32−j).
    const P: i64 = reflect33(0x1_04C1_1DB7);

    /// floor(x⁶⁴ / P), Barrett's constant, as a 33-bit multiplier.
    const MU: i64 = reflect33(quotient_x64_by_p());

    /// Long division over GF(2), in the usual order (bit k is the coefficient of x^k).
    const fn quotient_x64_by_p() -> u64 {
        const P_NORMAL: u128 = 0x1_04C1_1DB7;
        let mut remainder: u128 = 1 << 64;
        let mut quotient: u64 = 0;
        let mut degree = 64;
        while degree >= 32 {
            if remainder & (1 << degree) != 0 {
                remainder ^= P_NORMAL << (degree - 32);
                quotient |= 1 << (degree - 32);
            }
            degree -= 1;
        }
        quotient
    }

    const fn reflect33(value: u64) -> i64 {
        let mut reflected = 0u64;
        let mut bit = 0;
        while bit < 33 {
            if value & (1 << bit) != 0 {
                reflected |= 1 << (32 - bit);
            }
            bit += 1;
        }
        reflected as i64
    }

    // Every multiplier is a constant: `factor_for` at run time would cost more than the CRC.
    const FOLD_4_REGISTERS: (i64, i64) = fold_pair(4 * 512);
    const FOLD_3_REGISTERS: (i64, i64) = fold_pair(3 * 512);
    const FOLD_2_REGISTERS: (i64, i64) = fold_pair(2 * 512);
    const FOLD_1_REGISTER: (i64, i64) = fold_pair(512);
    const FOLD_3_LANES: (i64, i64) = fold_pair(3 * 128);
    const FOLD_2_LANES: (i64, i64) = fold_pair(2 * 128);
    const FOLD_LANE: (i64, i64) = fold_pair(128);
    /// Lane A·x⁶⁴ + B times x³² is A·x⁹⁶ + B·x³²: the first step of the final reduction.
    const TIMES_X96: i64 = multiplier(96);
    const TIMES_X64: i64 = multiplier(64);

    /// Byte shuffles for the last partial lane: from offset t, the control that moves a
    /// lane's bytes t places towards its end (zeros in front), and from 16 + t the one
    /// that moves them t places towards its start (zeros behind).
    static SHIFTS: [u8; 48] = {
        let mut table = [0x80u8; 48];
        let mut i = 0;
        while i < 16 {
            table[16 + i] = i as u8;
            i += 1;
        }
        table
    };

    /// `crc32fast::Hasher::new_with_initial(crc)` then `update(bytes)`: the CRC-32 of
    /// whatever `crc` was the CRC of, followed by `bytes`.
    ///
    /// # Safety
    /// `available()` is true and `bytes.len() >= MIN_LENGTH`.
    #[target_feature(enable = "avx512f,vpclmulqdq,pclmulqdq,sse4.1,ssse3")]
    pub unsafe fn crc32_update(crc: u32, bytes: &[u8]) -> u32 {
        assert!(bytes.len() >= MIN_LENGTH);
        let mut rest = bytes;
        // The previous CRC, inverted, XORed into the first 32 bits: the same as starting
        // the division from it.
        let initial = _mm512_zextsi128_si512(_mm_cvtsi32_si128(!crc as i32));
        let mut register = _mm512_xor_si512(take512(&mut rest), initial);
        if rest.len() >= 3 * 64 {
            register = fold_four_registers(register, &mut rest);
        }
        let keys = pair512(FOLD_1_REGISTER);
        while rest.len() >= 64 {
            register = fold512(register, take512(&mut rest), keys);
        }
        let mut lane = lanes_into_one(register);
        let keys = pair128(FOLD_LANE);
        while rest.len() >= 16 {
            lane = fold128(lane, take128(&mut rest), keys);
        }
        if !rest.is_empty() {
            lane = last_partial_lane(lane, bytes, rest.len());
        }
        !reduce(lane)
    }

    /// From 256 bytes on, four registers (16 lanes) fold independently, 256 bytes a
    /// step; then they are folded into the last one.
    #[target_feature(enable = "avx512f,vpclmulqdq")]
    fn fold_four_registers(first: __m512i, rest: &mut &[u8]) -> __m512i {
        let (mut r0, mut r1, mut r2, mut r3) = (first, take512(rest), take512(rest), take512(rest));
        let keys = pair512(FOLD_4_REGISTERS);
        while rest.len() >= 4 * 64 {
            r0 = fold512(r0, take512(rest), keys);
            r1 = fold512(r1, take512(rest), keys);
            r2 = fold512(r2, take512(rest), keys);
            r3 = fold512(r3, take512(rest), keys);
        }
        let moved = _mm512_ternarylogic_epi64::<0x96>(
            times(r0, pair512(FOLD_3_REGISTERS)),
            times(r1, pair512(FOLD_2_REGISTERS)),
            times(r2, pair512(FOLD_1_REGISTER)),
        );
        _mm512_xor_si512(moved, r3)
    }

    /// The four lanes of a register folded into its last one, all three at once.
    #[target_feature(enable = "avx512f,vpclmulqdq")]
    fn lanes_into_one(register: __m512i) -> __m128i {
        let ((a3, b3), (a2, b2), (a1, b1)) = (FOLD_3_LANES, FOLD_2_LANES, FOLD_LANE);
        let keys = _mm512_set_epi64(0, 0, b1, a1, b2, a2, b3, a3);
        let moved = times(register, keys);
        let low = _mm_xor_si128(
            _mm512_extracti32x4_epi32::<0>(moved),
            _mm512_extracti32x4_epi32::<1>(moved),
        );
        let high = _mm_xor_si128(
            _mm512_extracti32x4_epi32::<2>(moved),
            _mm512_extracti32x4_epi32::<3>(register),
        );
        _mm_xor_si128(low, high)
    }

    /// The last 1..=15 bytes: the lane and those bytes are 16 + t bytes; the first t are
    /// moved a lane on and XORed into the last 16.
    #[target_feature(enable = "pclmulqdq,sse4.1,ssse3")]
    fn last_partial_lane(lane: __m128i, bytes: &[u8], t: usize) -> __m128i {
        let towards_end = load128(&SHIFTS[t..t + 16]);
        let towards_start = load128(&SHIFTS[16 + t..32 + t]);
        let front = _mm_shuffle_epi8(lane, towards_end);
        let kept = _mm_shuffle_epi8(lane, towards_start);
        // The message's last 16 bytes end with the t new ones; `towards_end` has its top
        // bit set exactly in the 16 − t places before them.
        let last = load128(&bytes[bytes.len() - 16..]);
        let back = _mm_blendv_epi8(last, kept, towards_end);
        fold128(front, back, pair128(FOLD_LANE))
    }

    /// The CRC (before its final inversion) of what `lane` holds: lane · x³² mod P.
    #[target_feature(enable = "pclmulqdq,sse4.1")]
    fn reduce(lane: __m128i) -> u32 {
        let low32 = _mm_set_epi32(0, 0, 0, -1);
        // A·x⁹⁶ + B·x³², < 96 bits, now with bit m the coefficient of x^(95−m).
        let times_x96 = _mm_set_epi64x(0, TIMES_X96);
        let y = _mm_xor_si128(
            _mm_clmulepi64_si128::<0x00>(lane, times_x96),
            _mm_srli_si128::<8>(lane),
        );
        // Its top 32 bits moved down by x⁶⁴ mod P: < 64 bits, bit m ↔ x^(63−m).
        let times_x64 = _mm_set_epi64x(0, TIMES_X64);
        let z = _mm_xor_si128(
            _mm_clmulepi64_si128::<0x00>(_mm_and_si128(y, low32), times_x64),
            _mm_srli_si128::<4>(y),
        );
        // Barrett: the quotient from the top 32 bits times floor(x⁶⁴/P), then z − q·P.
        let mu_p = _mm_set_epi64x(P, MU);
        let quotient = _mm_and_si128(
            _mm_clmulepi64_si128::<0x00>(_mm_and_si128(z, low32), mu_p),
            low32,
        );
        let remainder = _mm_xor_si128(z, _mm_clmulepi64_si128::<0x10>(quotient, mu_p));
        _mm_extract_epi32::<1>(remainder) as u32
    }

    #[target_feature(enable = "avx512f")]
    fn pair512((a, b): (i64, i64)) -> __m512i {
        _mm512_set_epi64(b, a, b, a, b, a, b, a)
    }

    fn pair128((a, b): (i64, i64)) -> __m128i {
        // SAFETY: SSE2 is part of x86-64.
        unsafe { _mm_set_epi64x(b, a) }
    }

    /// Each lane's A and B times the keys' A and B multipliers, XORed: the lanes moved on.
    #[target_feature(enable = "avx512f,vpclmulqdq")]
    fn times(register: __m512i, keys: __m512i) -> __m512i {
        _mm512_xor_si512(
            _mm512_clmulepi64_epi128::<0x00>(register, keys),
            _mm512_clmulepi64_epi128::<0x11>(register, keys),
        )
    }

    #[target_feature(enable = "avx512f,vpclmulqdq")]
    fn fold512(register: __m512i, next: __m512i, keys: __m512i) -> __m512i {
        _mm512_ternarylogic_epi64::<0x96>(
            _mm512_clmulepi64_epi128::<0x00>(register, keys),
            _mm512_clmulepi64_epi128::<0x11>(register, keys),
            next,
        )
    }

    #[target_feature(enable = "pclmulqdq")]
    fn fold128(lane: __m128i, next: __m128i, keys: __m128i) -> __m128i {
        _mm_xor_si128(
            _mm_xor_si128(
                _mm_clmulepi64_si128::<0x00>(lane, keys),
                _mm_clmulepi64_si128::<0x11>(lane, keys),
            ),
            next,
        )
    }

    #[target_feature(enable = "avx512f")]
    fn take512(rest: &mut &[u8]) -> __m512i {
        let (head, tail) = rest.split_at(64);
        *rest = tail;
        // SAFETY: `head` is 64 readable bytes; the load has no alignment requirement.
        unsafe { _mm512_loadu_si512(head.as_ptr().cast()) }
    }

    fn take128(rest: &mut &[u8]) -> __m128i {
        let (head, tail) = rest.split_at(16);
        *rest = tail;
        load128(head)
    }

    fn load128(bytes: &[u8]) -> __m128i {
        assert!(bytes.len() >= 16);
        // SAFETY: 16 readable bytes; the load has no alignment requirement.
        unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) }
    }
}
