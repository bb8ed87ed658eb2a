//! A v2 message checked as `python/rmq/rocketmq/message_codec.py` (`incoming()`) checks
//! it, and turned into what that path stores: the tag, the keys, the user properties in
//! name order, then `UNIQ_KEY` (the client's message id) and `__SHARDINGKEY` (the message
//! group). `None` for every message the Python path would refuse, and for anything
//! unusual that it might store otherwise (a gzip body, a delivery time, a text whose
//! blankness Python's `str.strip()` decides differently from Rust's): the request then
//! goes to the Python path, which answers it precisely.

use bytes::Bytes;
use rmqproto::rocketmq_v2::{Encoding, Message, MessageType};

pub const UNIQ_KEY: &str = "UNIQ_KEY";
pub const MESSAGE_GROUP: &str = "__SHARDINGKEY";

/// Properties RocketMQ's broker keeps for itself: a client may not set them as user
/// properties. The one list: the Python path (`message_codec.SYSTEM_PROPERTIES`) takes it
/// from here through the binding.
pub const SYSTEM_PROPERTIES: &[&str] = &[
    "TAGS",
    "KEYS",
    UNIQ_KEY,
    MESSAGE_GROUP,
    "DELAY",
    "RETRY_TOPIC",
    "REAL_TOPIC",
    "REAL_QID",
    "TRAN_MSG",
    "PGROUP",
    "MIN_OFFSET",
    "MAX_OFFSET",
    "WAIT",
    "__STARTDELIVERTIME",
    "TIMER_DELIVER_MS",
    "TIMER_DELAY_SEC",
    "CLUSTER",
    "MSG_REGION",
    "TRACE_ON",
    "RECONSUME_TIME",
    "MAX_RECONSUME_TIMES",
    "ORIGIN_MESSAGE_ID",
    "__BORNHOST",
];

/// A message the Python path would accept, as it would store it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    pub topic: String,
    pub message_id: String,
    pub body: Bytes,
    pub tag: Option<String>,
    pub keys: Vec<String>,
    /// User properties by name, then `UNIQ_KEY`, then `__SHARDINGKEY` if grouped.
    pub properties: Vec<(String, String)>,
    pub group: Option<String>,
    /// Milliseconds; `None` when not given (or 0): the store uses the time of the put.
    pub born_timestamp: Option<i64>,
}

/// `message` as the Python path would store it, or `None` to leave it to that path.
pub fn check(message: Message, max_body_bytes: usize) -> Option<Checked> {
    let system = message.system_properties?;
    let topic = message.topic?.name;
    let plain_encoding = matches!(
        Encoding::try_from(system.body_encoding),
        Ok(Encoding::Identity | Encoding::Unspecified)
    );
    let plain = !topic.is_empty()
        && !system.message_id.is_empty()
        && !has_control(&system.message_id)
        && plain_encoding
        && !message.body.is_empty()
        && message.body.len() <= max_body_bytes
        && system.delivery_timestamp.is_none()
        && system.lite_topic.is_none()
        && system.priority.is_none()
        && type_fits(system.message_type, system.message_group.is_some());
    if !plain {
        return None;
    }
    if let Some(tag) = &system.tag {
        if !non_blank(tag)? || tag.contains('|') || has_control(tag) {
            return None;
        }
    }
    for key in &system.keys {
        if !non_blank(key)? || key.contains(' ') || has_control(key) {
            return None;
        }
    }
    if let Some(group) = &system.message_group {
        if !non_blank(group)? || has_control(group) {
            return None;
        }
    }
    let mut properties: Vec<(String, String)> = message.user_properties.into_iter().collect();
    let acceptable = properties.iter().all(|(name, value)| {
        !name.is_empty()
            && !value.is_empty()
            && !SYSTEM_PROPERTIES.contains(&name.as_str())
            && !has_control(name)
            && !has_control(value)
    });
    if !acceptable {
        return None;
    }
    properties.sort_unstable();
    properties.push((UNIQ_KEY.to_owned(), system.message_id.clone()));
    if let Some(group) = &system.message_group {
        properties.push((MESSAGE_GROUP.to_owned(), group.clone()));
    }
    let born_timestamp = match system.born_timestamp {
        None => None,
        Some(born) => {
            if born.seconds < 0 || !(0..1_000_000_000).contains(&born.nanos) {
                return None;
            }
            let millis = born
                .seconds
                .checked_mul(1000)?
                .checked_add(i64::from(born.nanos / 1_000_000))?;
            (millis != 0).then_some(millis)
        }
    };
    Some(Checked {
        topic,
        message_id: system.message_id,
        body: message.body,
        tag: system.tag,
        keys: system.keys,
        properties,
        group: system.message_group,
        born_timestamp,
    })
}

/// `message_codec._check_type`: normal, FIFO or unspecified; FIFO with a message group,
/// normal without one.
fn type_fits(kind: i32, grouped: bool) -> bool {
    match MessageType::try_from(kind) {
        Ok(MessageType::Unspecified) => true,
        Ok(MessageType::Normal) => !grouped,
        Ok(MessageType::Fifo) => grouped,
        _ => false,
    }
}

/// `message_codec._has_control`: a character below U+0020.
fn has_control(text: &str) -> bool {
    text.chars().any(|c| c < '\u{20}')
}

/// Python's `bool(text.strip())`, where Rust can tell: a text with a printable ASCII
/// character, a letter or a digit is not blank (no definition of whitespace holds them);
/// one of ASCII whitespace alone is. Any other text (say, only non-ASCII symbols and
/// spaces) is `None`: Python decides.
fn non_blank(text: &str) -> Option<bool> {
    let python_space = |c: char| matches!(c, ' ' | '\t'..='\r' | '\u{1c}'..='\u{1f}');
    if text
        .chars()
        .any(|c| (c.is_ascii() && !python_space(c)) || c.is_alphanumeric())
    {
        return Some(true);
    }
    text.is_ascii().then_some(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmqproto::rocketmq_v2::{Resource, SystemProperties};

    fn message(system: SystemProperties) -> Message {
        Message {
            topic: Some(Resource {
                resource_namespace: String::new(),
                name: "t".into(),
            }),
            user_properties: [("b".to_owned(), "2".to_owned()), ("a".into(), "1".into())]
                .into_iter()
                .collect(),
            system_properties: Some(system),
            body: Bytes::from_static(b"hello"),
        }
    }

    fn normal() -> SystemProperties {
        SystemProperties {
            message_id: "01AB".into(),
            message_type: MessageType::Normal as i32,
            body_encoding: Encoding::Identity as i32,
            tag: Some("tag".into()),
            keys: vec!["k1".into(), "k2".into()],
            ..Default::default()
        }
    }

    #[test]
    fn an_ordinary_message_is_stored_as_the_python_path_stores_it() {
        let checked = check(message(normal()), 10).unwrap();
        assert_eq!(checked.tag.as_deref(), Some("tag"));
        let names: Vec<_> = checked.properties.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a", "b", UNIQ_KEY]);
        assert_eq!(checked.born_timestamp, None);
        let mut grouped = normal();
        grouped.message_type = MessageType::Fifo as i32;
        grouped.message_group = Some("g".into());
        grouped.born_timestamp = Some(prost_types::Timestamp {
            seconds: 2,
            nanos: 5_000_000,
        });
        let checked = check(message(grouped), 10).unwrap();
        assert_eq!(
            checked.properties.last().unwrap(),
            &(MESSAGE_GROUP.into(), "g".into())
        );
        assert_eq!(checked.born_timestamp, Some(2005));
    }

    #[test]
    fn what_python_refuses_or_treats_otherwise_is_left_to_it() {
        type Change = Box<dyn Fn(&mut SystemProperties)>;
        let variants: Vec<Change> = vec![
            Box::new(|s| s.message_id.clear()),
            Box::new(|s| s.body_encoding = Encoding::Gzip as i32),
            Box::new(|s| s.message_type = MessageType::Fifo as i32),
            Box::new(|s| s.message_group = Some("g".into())),
            Box::new(|s| s.message_type = MessageType::Delay as i32),
            Box::new(|s| s.tag = Some(" ".into())),
            Box::new(|s| s.tag = Some("a|b".into())),
            Box::new(|s| s.tag = Some("\u{3000}".into())),
            Box::new(|s| s.keys.push("a b".into())),
            Box::new(|s| s.keys.push("\u{1}x".into())),
            Box::new(|s| s.delivery_timestamp = Some(Default::default())),
            Box::new(|s| {
                s.born_timestamp = Some(prost_types::Timestamp {
                    seconds: -1,
                    nanos: 0,
                })
            }),
        ];
        for change in variants {
            let mut system = normal();
            change(&mut system);
            assert_eq!(check(message(system), 10), None);
        }
        assert_eq!(check(message(normal()), 4), None, "body over the limit");
        for (name, value) in [("UNIQ_KEY", "x"), ("TAGS", "x"), ("", "x"), ("p", "")] {
            let mut reserved = message(normal());
            reserved.user_properties.insert(name.into(), value.into());
            assert_eq!(check(reserved, 10), None, "{name:?}={value:?}");
        }
    }

    #[test]
    fn blankness_is_decided_only_where_python_agrees() {
        assert_eq!(non_blank("a"), Some(true));
        assert_eq!(non_blank(" \t"), Some(false));
        assert_eq!(non_blank("\u{3000}x"), Some(true));
        assert_eq!(non_blank("\u{3000}"), None);
        assert_eq!(non_blank("标签"), Some(true));
        assert_eq!(non_blank("\u{3000}\u{2028}"), None);
    }
}
