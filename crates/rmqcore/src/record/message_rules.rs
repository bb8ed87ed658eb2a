//! What a message's tags, keys and user properties may hold. These are the only copy of
//! the rules: the engine applies them to every draft it stores, the shard's native data
//! plane asks them before it takes a request, and the Python broker calls them
//! (`rmq._rmqcore.validate_message_fields`) for its precise errors.
//!
//! Each rule protects the record format (format §1.6): properties are `name 0x01 value
//! 0x02` text, keys are joined with spaces into `KEYS`, and RocketMQ's parser drops an
//! empty name or value, so storing one would lose it silently.

use crate::error::{Error, Result};
use crate::record::crc_property::CRC_PROPERTY_NAME;
use crate::record::property_format::{
    KEY_SEPARATOR, NAME_VALUE_SEPARATOR, PROPERTY_KEYS, PROPERTY_SEPARATOR, PROPERTY_TAGS,
};

/// Whether `bytes` may hold a byte below `0x03` (0x01 and 0x02 separate properties), or
/// a space when `or_space`: eight bytes a step, since every tag, key and property of every
/// stored message is checked, most of them twice. A `true` may be a false alarm (a NUL, or
/// with `or_space` a `!` or `"`); callers then look byte by byte. Inlined, so that each
/// caller's `or_space` is a constant: called, it cost a 15-byte key about 55 instructions.
#[inline(always)]
fn may_hold_separator(bytes: &[u8], or_space: bool) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    const SPACES: u64 = u64::from_ne_bytes([b' '; 8]);
    // Any byte below n (n <= 128) sets its high bit in (x - n·ONES) & !x & HIGH.
    let below_three = |word: u64| word.wrapping_sub(3 * ONES) & !word & HIGH != 0;
    let suspicious = |word: u64| below_three(word) || (or_space && below_three(word ^ SPACES));
    if bytes.len() < 8 {
        return bytes
            .iter()
            .any(|b| *b < 3 || (or_space && *b == KEY_SEPARATOR as u8));
    }
    let word = |chunk: &[u8]| u64::from_ne_bytes(chunk.try_into().expect("eight bytes"));
    // The bytes after the last whole word are looked at as the last eight bytes, a word
    // overlapping the one before (a byte looked at twice changes nothing): byte by byte,
    // the tail of a 15-byte key cost about 60 instructions (callgrind).
    bytes.chunks_exact(8).map(word).any(suspicious) || suspicious(word(&bytes[bytes.len() - 8..]))
}

/// Whether `text` may hold the space that separates keys (or a byte that separates
/// properties), eight bytes a step: the binding splits a string of keys only when it may.
/// A `true` may be a false alarm (a NUL, `!` or `"`); splitting such text still yields it
/// whole.
#[inline]
pub fn may_hold_key_separator(text: &str) -> bool {
    may_hold_separator(text.as_bytes(), true)
}

/// Refuse text holding a byte that separates properties in the record.
#[inline]
pub fn check_property_text(argument: &'static str, what: &str, text: &str) -> Result<()> {
    if !may_hold_separator(text.as_bytes(), false) {
        return Ok(());
    }
    check_text_bytewise(argument, what, text)
}

/// `check_property_text` for text the word check flagged (nearly never: kept out of
/// line so that the checks of every stored tag and key inline into their caller).
#[cold]
fn check_text_bytewise(argument: &'static str, what: &str, text: &str) -> Result<()> {
    match text
        .bytes()
        .find(|b| *b == NAME_VALUE_SEPARATOR || *b == PROPERTY_SEPARATOR)
    {
        None => Ok(()),
        Some(byte) => Err(Error::invalid(
            argument,
            format!("{what} {text:?} contains the byte 0x{byte:02x}, which separates properties in the record"),
        )),
    }
}

/// Tags as given on the wire: present means non-empty (leave them unset instead).
#[inline]
pub fn check_tags(tags: &str) -> Result<()> {
    if tags.is_empty() {
        return Err(Error::invalid("tags", "tags is empty; leave it unset"));
    }
    check_property_text("tags", "tags", tags)
}

#[inline]
pub fn check_key(key: &str) -> Result<()> {
    // Every stored key comes through here: one pass over its bytes finds the good ones
    // (nearly all); only a refused key is looked at again, to say why.
    if key.is_empty() || may_hold_separator(key.as_bytes(), true) {
        return check_key_bytewise(key);
    }
    Ok(())
}

/// Why `check_key` refuses a key the word check flagged (or accepts a false alarm).
#[cold]
fn check_key_bytewise(key: &str) -> Result<()> {
    if key.is_empty() {
        return Err(Error::invalid("keys", "a key is empty"));
    }
    if key.contains(KEY_SEPARATOR) {
        return Err(Error::invalid(
            "keys",
            format!("key {key:?} contains a space, which separates keys"),
        ));
    }
    check_property_text("keys", "key", key)
}

/// A user property: `TAGS` and `KEYS` come from their own fields, and the record CRC's
/// property is the store's.
pub fn check_user_property(name: &str, value: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::invalid("properties", "a property name is empty"));
    }
    if name == PROPERTY_TAGS || name == PROPERTY_KEYS {
        return Err(Error::invalid(
            "properties",
            format!(
                "property {name:?} is reserved; use the {} field",
                name.to_lowercase()
            ),
        ));
    }
    if name == CRC_PROPERTY_NAME {
        return Err(Error::invalid(
            "properties",
            format!("property {name:?} is reserved for the record CRC"),
        ));
    }
    if value.is_empty() {
        return Err(Error::invalid(
            "properties",
            format!("property {name:?} has an empty value, which the record format cannot keep"),
        ));
    }
    check_property_text("properties", "property name", name)?;
    check_property_text("properties", "property value", value)
}

/// Every rule for one message's tags, keys and user properties; the first broken one.
#[inline]
pub fn check_message_fields<'a>(
    tags: Option<&str>,
    keys: impl IntoIterator<Item = &'a str>,
    properties: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<()> {
    if let Some(tags) = tags {
        check_tags(tags)?;
    }
    for key in keys {
        check_key(key)?;
    }
    for (name, value) in properties {
        check_user_property(name, value)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(result: Result<()>, fragment: &str) {
        let message = result.expect_err("refused").to_string();
        assert!(message.contains(fragment), "{message}");
    }

    #[test]
    fn the_word_check_never_misses_a_separator_or_space() {
        // Every byte value at every position of a word and of the tail, among text bytes.
        for length in 1..=19 {
            for at in 0..length {
                for byte in 0..=255u8 {
                    let mut bytes = vec![b'k'; length];
                    bytes[at] = byte;
                    if byte < 3 {
                        assert!(may_hold_separator(&bytes, false), "{bytes:?}");
                    }
                    if byte < 3 || byte == b' ' {
                        assert!(may_hold_separator(&bytes, true), "{bytes:?}");
                    }
                }
            }
            assert!(!may_hold_separator(&vec![b'k'; length], true));
        }
        assert!(!may_hold_separator(
            "ключ-\u{e9}\u{1F600} order-1".as_bytes(),
            false
        ));
    }

    #[test]
    fn plain_fields_pass() {
        check_message_fields(Some("TagA"), ["k1", "k2"], [("color", "red")]).unwrap();
        check_message_fields(None, [], []).unwrap();
    }

    #[test]
    fn each_rule_names_what_is_wrong() {
        refused(check_tags(""), "leave it unset");
        refused(check_tags("a\u{1}b"), "separates properties");
        refused(check_key(""), "a key is empty");
        refused(check_key("a b"), "contains a space");
        refused(check_key("a\u{2}"), "0x02");
        refused(check_key("\u{1}a"), "0x01");
        // A space anywhere is the reason given, even after another refused byte.
        refused(check_key("a\u{1}b c"), "contains a space");
        check_key("order-000000001").unwrap();
        check_key("ключ-\u{e9}\u{1F600}").unwrap();
        refused(check_user_property("", "v"), "name is empty");
        refused(check_user_property("TAGS", "v"), "use the tags field");
        refused(check_user_property("KEYS", "v"), "use the keys field");
        refused(check_user_property(CRC_PROPERTY_NAME, "v"), "record CRC");
        refused(check_user_property("n", ""), "empty value");
        refused(check_user_property("n\u{1}", "v"), "property name");
        refused(check_user_property("n", "v\u{2}"), "property value");
    }
}
