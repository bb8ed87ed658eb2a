//! Java's `String.hashCode`, which RocketMQ uses for consume-queue tag codes and index
//! keys. Java hashes UTF-16 code units, so non-ASCII text must be re-encoded first.

pub fn java_string_hash(text: &str) -> i32 {
    java_hash_continue(0, text)
}

/// Java's `String.hashCode` continued over more text (UTF-16 code units). ASCII text (tags,
/// topics and keys nearly always) is hashed from its bytes: they are its UTF-16 units, and
/// skipping the UTF-16 encoder made the hash a quarter of its cost (it runs for every key of
/// every stored message and every lookup). Whether the text is ASCII is learnt in the same
/// pass, not by reading it twice; other text is hashed again from its UTF-16 units.
pub fn java_hash_continue(hash: i32, text: &str) -> i32 {
    let bytes = text.as_bytes();
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    if bytes.len() >= 8 {
        // SAFETY: compiled only where SSE2 is enabled for the whole build (every x86-64).
        if let Some(hash) = unsafe { sixteen_at_a_time::ascii_hash(hash, bytes) } {
            return hash;
        }
        return utf16_hash(hash, text);
    }
    match four_at_a_time(hash, bytes) {
        Some(hash) => hash,
        None => utf16_hash(hash, text),
    }
}

fn step(hash: i32, unit: i32) -> i32 {
    hash.wrapping_mul(31).wrapping_add(unit)
}

/// `31^n` as Java's int arithmetic has it (wrapping).
const fn power_of_31(n: u32) -> i32 {
    31i32.wrapping_pow(n)
}

fn utf16_hash(hash: i32, text: &str) -> i32 {
    text.encode_utf16()
        .fold(hash, |hash, unit| step(hash, i32::from(unit)))
}

/// The hash of ASCII `bytes` continued from `hash`, four bytes a step (h·31⁴ + b0·31³ +
/// b1·31² + b2·31 + b3, all wrapping, which is the same sum): a quarter of the dependent
/// multiply-adds of one byte a step. None when a byte is not ASCII.
fn four_at_a_time(hash: i32, bytes: &[u8]) -> Option<i32> {
    const P2: i32 = power_of_31(2);
    const P3: i32 = power_of_31(3);
    const P4: i32 = power_of_31(4);
    let chunks = bytes.chunks_exact(4);
    let tail = chunks.remainder();
    let mut high_bits = 0u8;
    let mut ascii_hash = hash;
    for quad in chunks {
        high_bits |= quad[0] | quad[1] | quad[2] | quad[3];
        let unit = |i: usize| i32::from(quad[i]);
        ascii_hash = ascii_hash
            .wrapping_mul(P4)
            .wrapping_add(unit(0).wrapping_mul(P3))
            .wrapping_add(unit(1).wrapping_mul(P2))
            .wrapping_add(unit(2).wrapping_mul(31))
            .wrapping_add(unit(3));
    }
    for &byte in tail {
        high_bits |= byte;
        ascii_hash = step(ascii_hash, i32::from(byte));
    }
    (high_bits < 0x80).then_some(ascii_hash)
}

/// Sixteen bytes a step with SSE2 (every x86-64 has it): the bytes widened to 16-bit
/// lanes and multiplied by 31³, 31², 31, 1 with adjacent lanes summed (`pmaddwd`), the four
/// quads combined by 31¹², 31⁸, 31⁴, 1. The last partial block is right-aligned in zeros,
/// which add nothing to the sum. A 15-byte key (`order-000000001`) costs about 76
/// instructions, 110 four bytes a step; a 32-character `UNIQ_KEY` two blocks (callgrind).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
mod sixteen_at_a_time {
    use super::power_of_31;
    use std::arch::x86_64::{
        _mm_add_epi32, _mm_cvtsi128_si32, _mm_loadu_si128, _mm_madd_epi16, _mm_movemask_epi8,
        _mm_setr_epi16, _mm_setzero_si128, _mm_shuffle_epi32, _mm_unpackhi_epi8, _mm_unpacklo_epi8,
    };

    /// `31^n` for a block of n bytes.
    const POWERS: [i32; 17] = {
        let mut powers = [1i32; 17];
        let mut n = 1;
        while n < 17 {
            powers[n] = powers[n - 1].wrapping_mul(31);
            n += 1;
        }
        powers
    };

    #[target_feature(enable = "sse2")]
    pub(super) fn ascii_hash(mut hash: i32, bytes: &[u8]) -> Option<i32> {
        let blocks = bytes.chunks_exact(16);
        let tail = blocks.remainder();
        for block in blocks {
            let block: &[u8; 16] = block.try_into().expect("sixteen bytes");
            hash = hash
                .wrapping_mul(POWERS[16])
                .wrapping_add(block_sum(block)?);
        }
        if !tail.is_empty() {
            let mut block = [0u8; 16];
            block[16 - tail.len()..].copy_from_slice(tail);
            hash = hash
                .wrapping_mul(POWERS[tail.len()])
                .wrapping_add(block_sum(&block)?);
        }
        Some(hash)
    }

    /// Σ bᵢ·31^(15−i) (wrapping) of sixteen ASCII bytes; None if one is not ASCII.
    #[target_feature(enable = "sse2")]
    #[inline]
    fn block_sum(block: &[u8; 16]) -> Option<i32> {
        // SAFETY: an unaligned load of the sixteen bytes of `block`.
        let bytes = unsafe { _mm_loadu_si128(block.as_ptr().cast()) };
        if _mm_movemask_epi8(bytes) != 0 {
            return None;
        }
        let weights = _mm_setr_epi16(29_791, 961, 31, 1, 29_791, 961, 31, 1);
        let zero = _mm_setzero_si128();
        // Lanes: b0·31³ + b1·31², b2·31 + b3, and so on (ASCII times 31³ fits 32 bits).
        let low = _mm_madd_epi16(_mm_unpacklo_epi8(bytes, zero), weights);
        let high = _mm_madd_epi16(_mm_unpackhi_epi8(bytes, zero), weights);
        // Lanes 0 and 2: the sums of four bytes each.
        let low = _mm_add_epi32(low, _mm_shuffle_epi32::<0b10_11_00_01>(low));
        let high = _mm_add_epi32(high, _mm_shuffle_epi32::<0b10_11_00_01>(high));
        let quad = |lanes, second: bool| {
            _mm_cvtsi128_si32(if second {
                _mm_shuffle_epi32::<0b10>(lanes)
            } else {
                lanes
            })
        };
        Some(
            quad(low, false)
                .wrapping_mul(power_of_31(12))
                .wrapping_add(quad(low, true).wrapping_mul(power_of_31(8)))
                .wrapping_add(quad(high, false).wrapping_mul(power_of_31(4)))
                .wrapping_add(quad(high, true)),
        )
    }
}

/// The tags code stored in a consume-queue entry (format §1.7): the hash sign-extended,
/// or 0 when there is no tag.
pub fn tags_code(tags: Option<&str>) -> i64 {
    match tags {
        Some(tag) if !tag.is_empty() => i64::from(java_string_hash(tag)),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_java_test_vectors() {
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("TagA"), 2_598_919);
        assert_eq!(java_string_hash("TopicTest#key1"), -1_655_984_460);
        assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
        assert_eq!(java_string_hash("Aa"), java_string_hash("BB"));
        // Past ASCII the UTF-16 units count: "é" is one unit (233), "😀" two.
        assert_eq!(java_string_hash("é"), 233);
        assert_eq!(java_string_hash("😀"), 0xD83D * 31 + 0xDE00);
        assert_eq!(
            java_hash_continue(java_string_hash("a"), "é"),
            97 * 31 + 233
        );
    }

    #[test]
    fn hashes_utf16_units_not_utf8_bytes() {
        // 'é' is one UTF-16 unit (0xE9); an astral char is a surrogate pair.
        assert_eq!(java_string_hash("é"), 0xE9);
        assert_eq!(java_string_hash("😀"), 0xD83D * 31 + 0xDE00);
    }

    #[test]
    fn four_bytes_a_step_equals_one_byte_a_step() {
        let one_at_a_time = |hash: i32, text: &str| {
            text.bytes()
                .fold(hash, |h, b| h.wrapping_mul(31).wrapping_add(i32::from(b)))
        };
        let long = "BenchTopic#order-000000001 ~\x7f".repeat(9);
        for start in 0..20 {
            for end in start..long.len() {
                let text = &long[start..end];
                assert_eq!(java_string_hash(text), one_at_a_time(0, text), "{text:?}");
                assert_eq!(java_hash_continue(-7, text), one_at_a_time(-7, text));
            }
        }
    }

    #[test]
    fn text_past_ascii_anywhere_is_hashed_by_its_utf16_units() {
        let utf16 = |hash: i32, text: &str| {
            text.encode_utf16().fold(hash, |h, unit| {
                h.wrapping_mul(31).wrapping_add(i32::from(unit))
            })
        };
        for prefix in 0..40 {
            for tail in ["é", "😀", "ключ", "\u{80}x"] {
                let text = format!("{}{tail}{}", "k".repeat(prefix), "z".repeat(prefix % 7));
                assert_eq!(java_hash_continue(11, &text), utf16(11, &text), "{text:?}");
            }
        }
    }

    #[test]
    fn tags_code_is_zero_without_tag() {
        assert_eq!(tags_code(None), 0);
        assert_eq!(tags_code(Some("")), 0);
        assert_eq!(tags_code(Some("TagA")), 2_598_919);
    }
}
