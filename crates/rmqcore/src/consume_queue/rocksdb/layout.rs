//! The keys and values of RocketMQ 5's RocksDB consume queue (format §6), byte for byte.
//!
//! Column family `default` holds one entry per queue offset; column family `offset` holds,
//! per queue, the first (`min`) and last (`max`) entry's commit-log and queue offsets, and
//! under the topic `CHECKPOINT_TOPIC` the commit-log offset up to which records were
//! dispatched. Every integer is big-endian; the topic is UTF-8.

use crate::big_endian::{read_i32, read_i64, write_i32, write_i64};
use crate::consume_queue::CqEntry;

/// The separator bytes RocketMQ puts between key fields (`AbstractRocksDBStorage.CTRL_*`).
pub const CTRL_0: u8 = 0;
pub const CTRL_1: u8 = 1;
pub const CTRL_2: u8 = 2;

pub const OFFSET_COLUMN_FAMILY: &str = "offset";
/// RocketMQ's `TopicValidator.RMQ_SYS_ROCKSDB_OFFSET_TOPIC`: the dispatched-offset key.
pub const CHECKPOINT_TOPIC: &str = "CHECKPOINT_TOPIC";

/// Entry value: commit-log offset i64, size i32, tags code i64, store time i64.
pub const ENTRY_VALUE_SIZE: usize = 28;
/// Offset value: commit-log offset i64, queue offset i64.
pub const OFFSET_VALUE_SIZE: usize = 16;

/// `topicLength i32, 0x01, topic, 0x01`: the start of every key of a topic in both column
/// families.
pub fn topic_prefix(topic: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(topic.len() + 24);
    key.extend_from_slice(&(topic.len() as i32).to_be_bytes());
    key.push(CTRL_1);
    key.extend_from_slice(topic.as_bytes());
    key.push(CTRL_1);
    key
}

/// `prefix, queueId i32, 0x01`: an entry key without its queue offset.
pub fn queue_key_prefix(topic: &str, queue_id: i32) -> Vec<u8> {
    let mut key = topic_prefix(topic);
    key.extend_from_slice(&queue_id.to_be_bytes());
    key.push(CTRL_1);
    key
}

/// `prefix, queueId i32, 0x01, queueOffset i64`.
pub fn entry_key(topic: &str, queue_id: i32, queue_offset: i64) -> Vec<u8> {
    let mut key = queue_key_prefix(topic, queue_id);
    key.extend_from_slice(&queue_offset.to_be_bytes());
    key
}

/// The range `[start, end)` that holds every entry of one queue: RocketMQ's
/// `buildDeleteCQKey` ends the prefix with 0x00 and 0x02 around the separator.
pub fn queue_entry_range(topic: &str, queue_id: i32) -> (Vec<u8>, Vec<u8>) {
    let mut start = topic_prefix(topic);
    start.extend_from_slice(&queue_id.to_be_bytes());
    let mut end = start.clone();
    start.push(CTRL_0);
    end.push(CTRL_2);
    (start, end)
}

/// The range that holds every key of a topic.
pub fn topic_range(topic: &str) -> (Vec<u8>, Vec<u8>) {
    let start = topic_prefix(topic);
    let mut end = start.clone();
    *end.last_mut().expect("prefix ends with a separator") = CTRL_2;
    (start, end)
}

pub fn encode_entry(entry: &CqEntry) -> [u8; ENTRY_VALUE_SIZE] {
    let mut value = [0u8; ENTRY_VALUE_SIZE];
    write_i64(&mut value, 0, entry.commitlog_offset);
    write_i32(&mut value, 8, entry.size);
    write_i64(&mut value, 12, entry.tags_code);
    write_i64(&mut value, 20, entry.store_timestamp);
    value
}

pub fn decode_entry(value: &[u8]) -> Option<CqEntry> {
    (value.len() == ENTRY_VALUE_SIZE).then(|| CqEntry {
        commitlog_offset: read_i64(value, 0),
        size: read_i32(value, 8),
        tags_code: read_i64(value, 12),
        store_timestamp: read_i64(value, 20),
    })
}

/// Which end of a queue an offset key records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    Min,
    Max,
}

/// `prefix, "min" | "max", 0x01, queueId i32`.
pub fn offset_key(topic: &str, queue_id: i32, bound: Bound) -> Vec<u8> {
    let mut key = topic_prefix(topic);
    key.extend_from_slice(match bound {
        Bound::Min => b"min",
        Bound::Max => b"max",
    });
    key.push(CTRL_1);
    key.extend_from_slice(&queue_id.to_be_bytes());
    key
}

/// The dispatched-offset key: `CHECKPOINT_TOPIC`'s `max` key of queue 0.
pub fn checkpoint_key() -> Vec<u8> {
    offset_key(CHECKPOINT_TOPIC, 0, Bound::Max)
}

/// A queue end: the commit-log offset and queue offset of its first or last entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueEnd {
    pub commitlog_offset: i64,
    pub queue_offset: i64,
}

pub fn encode_queue_end(end: QueueEnd) -> [u8; OFFSET_VALUE_SIZE] {
    let mut value = [0u8; OFFSET_VALUE_SIZE];
    write_i64(&mut value, 0, end.commitlog_offset);
    write_i64(&mut value, 8, end.queue_offset);
    value
}

pub fn decode_queue_end(value: &[u8]) -> Option<QueueEnd> {
    (value.len() == OFFSET_VALUE_SIZE).then(|| QueueEnd {
        commitlog_offset: read_i64(value, 0),
        queue_offset: read_i64(value, 8),
    })
}

/// An offset key taken apart: topic, bound and queue id (None for a malformed key).
pub fn parse_offset_key(key: &[u8]) -> Option<(String, Bound, i32)> {
    let topic_length = usize::try_from(read_i32(key.get(..4)?, 0)).ok()?;
    let rest = key.get(4..)?;
    if rest.len() != 1 + topic_length + 1 + 3 + 1 + 4 || rest[0] != CTRL_1 {
        return None;
    }
    let topic = std::str::from_utf8(&rest[1..1 + topic_length]).ok()?;
    let tail = &rest[1 + topic_length..];
    let bound = match &tail[1..4] {
        b"min" => Bound::Min,
        b"max" => Bound::Max,
        _ => return None,
    };
    Some((topic.to_string(), bound, read_i32(tail, 5)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_rocketmqs() {
        assert_eq!(
            entry_key("T", 3, 258),
            [0, 0, 0, 1, 1, b'T', 1, 0, 0, 0, 3, 1, 0, 0, 0, 0, 0, 0, 1, 2]
        );
        assert_eq!(
            offset_key("T", 3, Bound::Max),
            [0, 0, 0, 1, 1, b'T', 1, b'm', b'a', b'x', 1, 0, 0, 0, 3]
        );
        assert_eq!(
            parse_offset_key(&offset_key("Topic", 7, Bound::Min)),
            Some(("Topic".to_string(), Bound::Min, 7))
        );
        let (start, end) = queue_entry_range("T", 3);
        assert!(start < entry_key("T", 3, 0) && entry_key("T", 3, i64::MAX) < end);
        assert!(entry_key("T", 2, i64::MAX) < start && end < entry_key("T", 4, 0));
    }

    #[test]
    fn values_round_trip() {
        let entry = CqEntry {
            commitlog_offset: 1 << 40,
            size: 300,
            tags_code: -5,
            store_timestamp: 1_700_000_000_123,
        };
        assert_eq!(decode_entry(&encode_entry(&entry)), Some(entry));
        let end = QueueEnd {
            commitlog_offset: 99,
            queue_offset: 4,
        };
        assert_eq!(decode_queue_end(&encode_queue_end(end)), Some(end));
    }
}
