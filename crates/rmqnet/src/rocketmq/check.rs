//! A sent v2 message checked as RocketMQ's proxy checks it, in the order (and with the
//! codes and words) the Python broker always answered with, and turned into what the
//! store keeps: the tag, the keys, the user properties in name order, then `UNIQ_KEY`
//! (the client's message id) and `__SHARDINGKEY` (the message group). A refused message
//! gets its own status; the request's other messages go on.

use bytes::Bytes;
use rmqproto::rocketmq_v2::{Code, Message, MessageType, Status, SystemProperties};

use super::body_encoding::decoded_body;
use super::properties::{user_properties, MESSAGE_GROUP, UNIQ_KEY};
use super::python_text::{has_control, is_blank, repr};
use super::status::refused;

/// A message that passed every check, as it is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    pub topic: String,
    pub message_id: String,
    /// Inflated, when it was sent gzipped.
    pub body: Bytes,
    pub tag: Option<String>,
    pub keys: Vec<String>,
    /// User properties by name, then `UNIQ_KEY`, then `__SHARDINGKEY` if grouped.
    pub properties: Vec<(String, String)>,
    pub group: Option<String>,
    /// Milliseconds; `None` when not given (or 0): the store uses the time of the put.
    pub born_timestamp: Option<i64>,
}

/// A message refused before the store saw it: the id it is answered with, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    pub message_id: String,
    pub status: Status,
}

/// `message` as it is stored, or why it is refused.
pub fn check(message: Message, max_body_bytes: usize) -> Result<Checked, Refused> {
    let topic = message.topic.map(|t| t.name).unwrap_or_default();
    let system = message.system_properties.unwrap_or_default();
    let accepted = accept(&topic, &system, message.body, max_body_bytes).and_then(|body| {
        let properties = user_properties(message.user_properties)?;
        Ok((body, properties, born_timestamp(&system)?))
    });
    let (body, mut properties, born_timestamp) = match accepted {
        Ok(accepted) => accepted,
        Err(status) => {
            return Err(Refused {
                message_id: system.message_id,
                status,
            })
        }
    };
    properties.push((UNIQ_KEY.to_owned(), system.message_id.clone()));
    if let Some(group) = &system.message_group {
        properties.push((MESSAGE_GROUP.to_owned(), group.clone()));
    }
    Ok(Checked {
        topic,
        message_id: system.message_id,
        body,
        tag: system.tag,
        keys: system.keys,
        properties,
        group: system.message_group,
        born_timestamp,
    })
}

/// The checks of the message's own fields before its properties, in their order; the
/// body to store.
fn accept(
    topic: &str,
    system: &SystemProperties,
    body: Bytes,
    max_body_bytes: usize,
) -> Result<Bytes, Status> {
    if topic.is_empty() {
        return Err(refused(Code::IllegalTopic, "the message names no topic"));
    }
    if system.message_id.is_empty() {
        return Err(refused(
            Code::IllegalMessageId,
            "the message has no message_id",
        ));
    }
    let body = decoded_body(body, system.body_encoding, max_body_bytes)?;
    if body.is_empty() {
        return Err(refused(Code::MessageBodyEmpty, "the message body is empty"));
    }
    if body.len() > max_body_bytes {
        return Err(refused(
            Code::MessageBodyTooLarge,
            format!(
                "the body is {} bytes; this broker takes at most {max_body_bytes}",
                body.len()
            ),
        ));
    }
    check_type(
        system.message_type,
        system.message_group.is_some(),
        system.delivery_timestamp.is_some(),
    )?;
    if let Some(tag) = &system.tag {
        if is_blank(tag) || tag.contains('|') || has_control(tag) {
            return Err(refused(
                Code::IllegalMessageTag,
                format!("tag {} is blank or holds '|'", repr(tag)),
            ));
        }
    }
    for key in &system.keys {
        if is_blank(key) || key.contains(' ') || has_control(key) {
            return Err(refused(
                Code::IllegalMessageKey,
                format!("key {} is blank or holds a space", repr(key)),
            ));
        }
    }
    if let Some(group) = &system.message_group {
        if is_blank(group) || has_control(group) {
            return Err(refused(
                Code::IllegalMessageGroup,
                format!("message group {} is blank", repr(group)),
            ));
        }
    }
    Ok(body)
}

/// Normal, FIFO or unspecified; FIFO with a message group, normal without one. Delay and
/// transactional messages are the protocol's, but not offered here.
fn check_type(kind: i32, grouped: bool, delayed: bool) -> Result<(), Status> {
    let kind = MessageType::try_from(kind).map_err(|_| kind);
    if matches!(kind, Ok(MessageType::Delay | MessageType::Transaction)) || delayed {
        return Err(refused(
            Code::NotImplemented,
            "delay and transactional messages are not supported; send normal or FIFO messages",
        ));
    }
    let conflict = |text: &str| Err(refused(Code::MessagePropertyConflictWithType, text));
    match kind {
        Ok(MessageType::Unspecified) => Ok(()),
        Ok(MessageType::Fifo) if !grouped => conflict("a FIFO message needs a message group"),
        Ok(MessageType::Normal) if grouped => {
            conflict("a normal message cannot have a message group")
        }
        Ok(MessageType::Fifo | MessageType::Normal) => Ok(()),
        Ok(other) => Err(refused(
            Code::Unsupported,
            format!("message type {} is not supported", other.as_str_name()),
        )),
        Err(unknown) => Err(refused(
            Code::Unsupported,
            format!("message type {unknown} is not supported"),
        )),
    }
}

/// The client's born time in milliseconds (rounded down, as the seconds and nanoseconds
/// add up); `None` when not given or 0, and the store takes the time of the put.
fn born_timestamp(system: &SystemProperties) -> Result<Option<i64>, Status> {
    let Some(born) = &system.born_timestamp else {
        return Ok(None);
    };
    let millis = born
        .seconds
        .checked_mul(1000)
        .and_then(|millis| millis.checked_add(i64::from(born.nanos).div_euclid(1_000_000)))
        .ok_or_else(|| refused(Code::BadRequest, "born_timestamp is out of range"))?;
    Ok((millis != 0).then_some(millis))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmqproto::rocketmq_v2::{Encoding, Resource};

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

    fn refusal(message: Message, max_body_bytes: usize) -> (Code, String) {
        let refused = check(message, max_body_bytes).expect_err("refused");
        assert_eq!(refused.message_id, "01AB");
        let code = Code::try_from(refused.status.code).unwrap();
        (code, refused.status.message)
    }

    #[test]
    fn an_ordinary_message_is_stored_with_its_fields_as_properties() {
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
    fn each_refusal_has_its_code_and_words() {
        type Change = Box<dyn Fn(&mut SystemProperties)>;
        let cases: Vec<(Change, Code, &str)> = vec![
            (
                Box::new(|s| s.message_type = MessageType::Fifo as i32),
                Code::MessagePropertyConflictWithType,
                "a FIFO message needs a message group",
            ),
            (
                Box::new(|s| s.message_group = Some("g".into())),
                Code::MessagePropertyConflictWithType,
                "a normal message cannot have a message group",
            ),
            (
                Box::new(|s| s.message_type = MessageType::Delay as i32),
                Code::NotImplemented,
                "delay and transactional messages are not supported; send normal or FIFO messages",
            ),
            (
                Box::new(|s| s.delivery_timestamp = Some(Default::default())),
                Code::NotImplemented,
                "delay and transactional messages are not supported; send normal or FIFO messages",
            ),
            (
                Box::new(|s| s.message_type = MessageType::Lite as i32),
                Code::Unsupported,
                "message type LITE is not supported",
            ),
            (
                Box::new(|s| s.message_type = 99),
                Code::Unsupported,
                "message type 99 is not supported",
            ),
            (
                Box::new(|s| s.tag = Some("\u{3000}".into())),
                Code::IllegalMessageTag,
                "tag '\\u3000' is blank or holds '|'",
            ),
            (
                Box::new(|s| s.tag = Some("a|b".into())),
                Code::IllegalMessageTag,
                "tag 'a|b' is blank or holds '|'",
            ),
            (
                Box::new(|s| s.keys.push("a b".into())),
                Code::IllegalMessageKey,
                "key 'a b' is blank or holds a space",
            ),
            (
                Box::new(|s| s.keys.push("\u{1}x".into())),
                Code::IllegalMessageKey,
                "key '\\x01x' is blank or holds a space",
            ),
            (
                Box::new(|s| {
                    s.message_type = MessageType::Fifo as i32;
                    s.message_group = Some(" ".into());
                }),
                Code::IllegalMessageGroup,
                "message group ' ' is blank",
            ),
            (
                Box::new(|s| {
                    s.born_timestamp = Some(prost_types::Timestamp {
                        seconds: i64::MAX,
                        nanos: 0,
                    })
                }),
                Code::BadRequest,
                "born_timestamp is out of range",
            ),
        ];
        for (change, code, words) in cases {
            let mut system = normal();
            change(&mut system);
            assert_eq!(refusal(message(system), 10), (code, words.to_owned()));
        }
        let too_large = (
            Code::MessageBodyTooLarge,
            "the body is 5 bytes; this broker takes at most 4".to_owned(),
        );
        assert_eq!(refusal(message(normal()), 4), too_large);
        let reserved = "is reserved by the broker or holds a control character";
        for (name, value, words) in [
            ("UNIQ_KEY", "x", format!("property 'UNIQ_KEY' {reserved}")),
            ("", "x", format!("property '' {reserved}")),
            ("p", "\u{1}", format!("property 'p' {reserved}")),
            ("p", "", "property 'p' is empty".to_owned()),
        ] {
            let mut bad = message(normal());
            bad.user_properties.insert(name.into(), value.into());
            assert_eq!(refusal(bad, 10), (Code::IllegalMessagePropertyKey, words));
        }
    }

    #[test]
    fn a_negative_born_time_rounds_down_as_python_does() {
        let mut system = normal();
        system.born_timestamp = Some(prost_types::Timestamp {
            seconds: -1,
            nanos: 1,
        });
        assert_eq!(
            check(message(system), 10).unwrap().born_timestamp,
            Some(-1000)
        );
    }
}
