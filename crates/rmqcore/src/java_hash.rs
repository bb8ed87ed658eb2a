//! Java's `String.hashCode`, which RocketMQ uses for consume-queue tag codes and index
//! keys. Java hashes UTF-16 code units, so non-ASCII text must be re-encoded first.

pub fn java_string_hash(text: &str) -> i32 {
    java_hash_continue(0, text)
}

/// Java's `String.hashCode` continued over more text (UTF-16 code units). ASCII text (tags,
/// topics and keys nearly always) is hashed byte by byte: its bytes are its UTF-16 units,
/// and skipping the UTF-16 encoder made the hash a quarter of its cost (it runs for every
/// key of every stored message and every lookup). Whether the text is ASCII is learnt in
/// the same pass (the OR of its bytes), not by reading it twice; other text is hashed
/// again from its UTF-16 units.
pub fn java_hash_continue(hash: i32, text: &str) -> i32 {
    let step = |hash: i32, unit: i32| hash.wrapping_mul(31).wrapping_add(unit);
    // Four bytes a step (h·31⁴ + b0·31³ + b1·31² + b2·31 + b3, all wrapping, which is the
    // same sum): a quarter of the dependent multiply-adds of one byte a step.
    const P2: i32 = 31 * 31;
    const P3: i32 = P2 * 31;
    const P4: i32 = P3 * 31;
    let chunks = text.as_bytes().chunks_exact(4);
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
    if high_bits < 0x80 {
        return ascii_hash;
    }
    text.encode_utf16()
        .fold(hash, |hash, unit| step(hash, i32::from(unit)))
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
        for end in 0..long.len() {
            let text = &long[..end];
            assert_eq!(java_string_hash(text), one_at_a_time(0, text), "{text:?}");
            assert_eq!(java_hash_continue(-7, text), one_at_a_time(-7, text));
        }
    }

    #[test]
    fn tags_code_is_zero_without_tag() {
        assert_eq!(tags_code(None), 0);
        assert_eq!(tags_code(Some("")), 0);
        assert_eq!(tags_code(Some("TagA")), 2_598_919);
    }
}
