//! Topic names: RocketMQ's rules (characters `%|a-zA-Z0-9_-`), at most 127 bytes so that
//! every record stays in the V1 layout that RocketMQ 4.9 reads. The character set also
//! guarantees that a topic used as a directory name cannot leave the store directory.

use crate::error::{Error, Result};
use crate::record::MAX_V1_TOPIC_LENGTH;

pub fn validate_topic(topic: &str) -> Result<()> {
    if topic.is_empty() {
        return Err(Error::invalid("topic", "the topic name is empty"));
    }
    if topic.len() > MAX_V1_TOPIC_LENGTH {
        return Err(Error::invalid(
            "topic",
            format!(
                "the topic name is {} bytes, more than {MAX_V1_TOPIC_LENGTH}",
                topic.len()
            ),
        ));
    }
    if let Some(bad) = topic
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '%' | '|' | '_' | '-')))
    {
        return Err(Error::invalid(
            "topic",
            format!(
                "{topic:?} contains {bad:?}; topic names may use only letters, digits and %|_-"
            ),
        ));
    }
    Ok(())
}

/// Consumer group names follow the same rules (they appear in `consumerOffset.json` keys
/// as `topic@group`).
pub fn validate_group(group: &str) -> Result<()> {
    validate_topic(group).map_err(|error| match error {
        Error::InvalidArgument { reason, .. } => {
            Error::invalid("group", reason.replace("topic", "group"))
        }
        other => other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_rocketmq_names() {
        for name in [
            "TopicTest",
            "%RETRY%group",
            "a|b",
            "x-y_z9",
            &"t".repeat(127),
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
            &"t".repeat(128),
        ] {
            assert!(validate_topic(name).is_err(), "{name:?} was accepted");
        }
    }
}
