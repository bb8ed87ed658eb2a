//! A stored message as a receiving RocketMQ v2 client reads it: the reverse of what
//! `check.rs` stores (tag, keys, user properties; the client's message id from
//! `UNIQ_KEY`, the message group from `__SHARDINGKEY`), with the system properties the
//! clients read (born and store host and time, queue id and offset, receipt handle,
//! invisible duration, delivery attempt). Both v2 paths answer receives with it (the
//! Python one through the binding). A message stored without `UNIQ_KEY` (sent through
//! rmq's own API) gets the id `01` followed by its 32-hex-digit offset msgId, the
//! clients' id format.

use bytes::Bytes;
use rmqcore::record::message::StoredMessage;
use rmqproto::rocketmq_v2::{
    Digest, DigestType, Encoding, Message, MessageType, Resource, SystemProperties,
};

use super::claim::Delivery;
use super::properties::{MESSAGE_GROUP, SYSTEM_PROPERTIES, UNIQ_KEY};
use super::receipt::Receipt;

/// The delivery a message goes out as.
pub struct Delivered<'a> {
    pub receipt_handle: &'a str,
    pub attempt: i32,
    pub invisible_ms: i64,
}

pub fn message_id(message: &StoredMessage) -> String {
    property(message, UNIQ_KEY)
        .map(str::to_owned)
        .unwrap_or_else(|| format!("01{}", message.msg_id))
}

fn property<'a>(message: &'a StoredMessage, name: &str) -> Option<&'a str> {
    message
        .properties
        .iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
}

pub fn outgoing(message: StoredMessage, delivered: &Delivered<'_>) -> Message {
    let id = message_id(&message);
    let group = property(&message, MESSAGE_GROUP)
        .filter(|group| !group.is_empty())
        .map(str::to_owned);
    let born_host = message.born_host.to_string();
    // The host without the port, as RocketMQ's proxy gives it.
    let born_host = born_host
        .rsplit_once(':')
        .map_or(born_host.as_str(), |(host, _)| host)
        .to_owned();
    let system = SystemProperties {
        tag: message.tags.clone(),
        keys: message.keys.clone(),
        message_id: id,
        body_digest: Some(Digest {
            r#type: DigestType::Crc32 as i32,
            checksum: format!("{:X}", crc32fast::hash(&message.body)),
        }),
        body_encoding: Encoding::Identity as i32,
        message_type: if group.is_some() {
            MessageType::Fifo
        } else {
            MessageType::Normal
        } as i32,
        born_timestamp: Some(timestamp(message.born_timestamp)),
        born_host,
        store_timestamp: Some(timestamp(message.store_timestamp)),
        store_host: message.store_host.to_string(),
        receipt_handle: Some(delivered.receipt_handle.to_owned()),
        queue_id: message.queue_id,
        queue_offset: Some(message.queue_offset),
        invisible_duration: Some(duration(delivered.invisible_ms)),
        delivery_attempt: Some(delivered.attempt),
        message_group: group,
        ..Default::default()
    };
    let user_properties = message
        .properties
        .into_iter()
        .filter(|(name, _)| !SYSTEM_PROPERTIES.contains(&name.as_str()))
        .collect();
    Message {
        topic: Some(Resource {
            resource_namespace: String::new(),
            name: message.topic,
        }),
        user_properties,
        system_properties: Some(system),
        body: Bytes::from(message.body),
    }
}

/// A claimed message as it goes out, with the receipt handle of its delivery.
pub fn delivered(delivery: Delivery, invisible_ms: i64) -> Message {
    let receipt = Receipt {
        topic: delivery.message.topic.clone(),
        queue_id: delivery.message.queue_id,
        offset: delivery.message.queue_offset,
        attempt: delivery.attempt,
        deadline_ms: delivery.deadline_ms,
    };
    let handle = receipt.encode();
    let delivered = Delivered {
        receipt_handle: &handle,
        attempt: delivery.attempt,
        invisible_ms,
    };
    outgoing(delivery.message, &delivered)
}

pub fn timestamp(ms: i64) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: ms.div_euclid(1000),
        nanos: (ms.rem_euclid(1000) * 1_000_000) as i32,
    }
}

pub fn duration(ms: i64) -> prost_types::Duration {
    prost_types::Duration {
        seconds: ms / 1000,
        nanos: ((ms % 1000) * 1_000_000) as i32,
    }
}

/// Milliseconds of a protobuf duration.
pub fn millis(duration: &prost_types::Duration) -> i64 {
    duration.seconds.saturating_mul(1000) + i64::from(duration.nanos) / 1_000_000
}
