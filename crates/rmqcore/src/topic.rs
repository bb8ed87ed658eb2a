//! Topic and group names: which names a store accepts, and which record layout a topic
//! needs (the limits and their RocketMQ sources are in `docs/format.md`, "Names").
//!
//! The character set is RocketMQ's (`%|a-zA-Z0-9_-`); it also guarantees that a topic used
//! as a directory name cannot leave the store directory. A name may be up to 255 bytes:
//! RocketMQ 5 accepts consumer groups of 255 characters, so its `%RETRY%` and `%DLQ%`
//! topics run past the V1 layout's 127, and a topic names its consume-queue directory,
//! which a file system allows 255 bytes.

use crate::error::{Error, Result};
use crate::record::MAX_V1_TOPIC_LENGTH;

/// The longest topic or group name: a directory name's limit (`NAME_MAX`).
pub const MAX_NAME_LENGTH: usize = 255;

pub fn validate_topic(topic: &str) -> Result<()> {
    validate_name(topic, "topic")
}

/// Consumer group names follow the same rules (they appear in `consumerOffset.json` keys
/// as `topic@group`, and in the names of the group's retry and dead-letter topics).
pub fn validate_group(group: &str) -> Result<()> {
    validate_name(group, "group")
}

/// A topic written to a store kept readable by RocketMQ 4.9 (`v1_records_only`), whose
/// records must all be V1: the topic's length has one signed byte.
pub fn validate_v1_topic(topic: &str) -> Result<()> {
    if topic.len() > MAX_V1_TOPIC_LENGTH {
        return Err(Error::invalid(
            "topic",
            format!(
                "the topic name is {} bytes, more than {MAX_V1_TOPIC_LENGTH}: the store was \
                 opened with v1_records_only, which keeps every record in the V1 layout that \
                 RocketMQ 4.9 reads (open it without v1_records_only to write such topics \
                 as V2 records, as RocketMQ 5 does)",
                topic.len()
            ),
        ));
    }
    Ok(())
}

/// The bytes a topic or group name may use: ASCII letters, digits and `%|_-`.
const NAME_BYTES: [bool; 256] = {
    let mut allowed = [false; 256];
    let mut byte = 0;
    while byte < 256 {
        let c = byte as u8;
        allowed[byte] = c.is_ascii_alphanumeric() || matches!(c, b'%' | b'|' | b'_' | b'-');
        byte += 1;
    }
    allowed
};

fn validate_name(name: &str, what: &'static str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::invalid(what, format!("the {what} name is empty")));
    }
    if name.len() > MAX_NAME_LENGTH {
        return Err(Error::invalid(
            what,
            format!(
                "the {what} name is {} bytes, more than {MAX_NAME_LENGTH}",
                name.len()
            ),
        ));
    }
    // A byte table rather than a walk of chars: every put and read checks its topic.
    if let Some(at) = name.bytes().position(|byte| !NAME_BYTES[usize::from(byte)]) {
        // Every byte before `at` is ASCII, so a char starts there.
        let bad = name[at..]
            .chars()
            .next()
            .expect("a char starts at a refused byte");
        return Err(Error::invalid(
            what,
            format!(
                "the {what} name {name:?} contains {bad:?}; {what} names may use only \
                 letters, digits and %|_-"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_rocketmq_names() {
        let long_retry = format!("%RETRY%{}", "g".repeat(248));
        for name in [
            "TopicTest",
            "%RETRY%group",
            "a|b",
            "x-y_z9",
            &"t".repeat(127),
            &"t".repeat(128),
            &long_retry,
        ] {
            validate_topic(name).unwrap();
        }
    }

    #[test]
    fn rejects_everything_else() {
        for name in [
            "",
            "..",
            "a/b",
            "a.b",
            "a b",
            "é",
            "a\u{0}",
            &"t".repeat(256),
        ] {
            assert!(validate_topic(name).is_err(), "{name:?} was accepted");
        }
    }

    #[test]
    fn errors_name_what_was_checked() {
        let error = validate_group("a b").unwrap_err().to_string();
        assert!(error.contains("group name"), "{error}");
        let error = validate_topic(&"t".repeat(256)).unwrap_err().to_string();
        assert!(error.contains("256 bytes, more than 255"), "{error}");
    }

    #[test]
    fn errors_name_the_whole_refused_character() {
        // The byte table finds the first byte of a multi-byte char; the error shows the char.
        let error = validate_topic("abcé").unwrap_err().to_string();
        assert!(error.contains("contains 'é'"), "{error}");
        let error = validate_topic("a.b").unwrap_err().to_string();
        assert!(error.contains("contains '.'"), "{error}");
    }

    #[test]
    fn v1_only_stores_refuse_long_topics_naming_the_option() {
        validate_v1_topic(&"t".repeat(127)).unwrap();
        let error = validate_v1_topic(&"t".repeat(128)).unwrap_err().to_string();
        assert!(error.contains("v1_records_only"), "{error}");
    }
}
