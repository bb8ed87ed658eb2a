//! Java's `String.hashCode`, which RocketMQ uses for consume-queue tag codes and index
//! keys. Java hashes UTF-16 code units, so non-ASCII text must be re-encoded first.

pub fn java_string_hash(text: &str) -> i32 {
    text.encode_utf16().fold(0i32, |hash, unit| {
        hash.wrapping_mul(31).wrapping_add(i32::from(unit))
    })
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
    }

    #[test]
    fn hashes_utf16_units_not_utf8_bytes() {
        // 'é' is one UTF-16 unit (0xE9); an astral char is a surrogate pair.
        assert_eq!(java_string_hash("é"), 0xE9);
        assert_eq!(java_string_hash("😀"), 0xD83D * 31 + 0xDE00);
    }

    #[test]
    fn tags_code_is_zero_without_tag() {
        assert_eq!(tags_code(None), 0);
        assert_eq!(tags_code(Some("")), 0);
        assert_eq!(tags_code(Some("TagA")), 2_598_919);
    }
}
