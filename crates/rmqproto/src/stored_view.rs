//! One `rmq.v1.StoredMessage` read in place: its scalar fields decoded and its strings and
//! body borrowed from the bytes, for the readers of Pull responses (the consumer's
//! `ReceivedMessage` and the Spark source's Arrow columns), which differ only in what
//! they build from it.

use crate::fields::map_entry::{KEY as MAP_KEY, VALUE as MAP_VALUE};
use crate::fields::stored_message as stored;
use crate::wire::{WireReader, WireValue};

/// The bytes are not a valid protobuf message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

/// A `StoredMessage`'s single fields; a field the bytes leave out keeps its protobuf
/// default (zero or empty), and `tags` is `None` unless present.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct StoredView<'a> {
    pub topic: &'a [u8],
    pub queue_id: i32,
    pub queue_offset: i64,
    pub commitlog_offset: i64,
    pub store_size: i32,
    pub body: &'a [u8],
    pub tags: Option<&'a [u8]>,
    pub born_timestamp: i64,
    pub store_timestamp: i64,
    pub born_host: &'a [u8],
    pub store_host: &'a [u8],
    pub msg_id: &'a [u8],
    pub flag: i32,
    pub sys_flag: i32,
    pub reconsume_times: i32,
}

/// The repeated fields, handed to `parse`'s caller as they are met: a reader that wants
/// keys or properties only when asked for skips them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repeated<'a> {
    Key(&'a [u8]),
    /// One map entry, still encoded: see `map_entry`.
    Property(&'a [u8]),
}

/// protobuf's int32 and int64 are two's complement varints.
fn int32(value: u64) -> i32 {
    value as i32
}
fn int64(value: u64) -> i64 {
    value as i64
}

impl<'a> StoredView<'a> {
    /// Read `bytes`, calling `repeated` for each key and property in order.
    pub fn parse(
        bytes: &'a [u8],
        mut repeated: impl FnMut(Repeated<'a>) -> Result<(), Malformed>,
    ) -> Result<Self, Malformed> {
        let mut view = StoredView::default();
        let mut reader = WireReader::new(bytes);
        while let Some((field, value)) = reader.next_field().ok_or(Malformed)? {
            match value {
                WireValue::Varint(value) => match field {
                    stored::QUEUE_ID => view.queue_id = int32(value),
                    stored::QUEUE_OFFSET => view.queue_offset = int64(value),
                    stored::COMMITLOG_OFFSET => view.commitlog_offset = int64(value),
                    stored::STORE_SIZE => view.store_size = int32(value),
                    stored::BORN_TIMESTAMP => view.born_timestamp = int64(value),
                    stored::STORE_TIMESTAMP => view.store_timestamp = int64(value),
                    stored::FLAG => view.flag = int32(value),
                    stored::SYS_FLAG => view.sys_flag = int32(value),
                    stored::RECONSUME_TIMES => view.reconsume_times = int32(value),
                    _ => {}
                },
                WireValue::Bytes(bytes) => match field {
                    stored::TOPIC => view.topic = bytes,
                    stored::BODY => view.body = bytes,
                    stored::TAGS => view.tags = Some(bytes),
                    stored::KEYS => repeated(Repeated::Key(bytes))?,
                    stored::PROPERTIES => repeated(Repeated::Property(bytes))?,
                    stored::BORN_HOST => view.born_host = bytes,
                    stored::STORE_HOST => view.store_host = bytes,
                    stored::MSG_ID => view.msg_id = bytes,
                    _ => {}
                },
                WireValue::Fixed => {}
            }
        }
        Ok(view)
    }
}

/// A `map<string, string>` entry's (name, value); either left out is empty.
pub fn map_entry(entry: &[u8]) -> Result<(&[u8], &[u8]), Malformed> {
    let (mut name, mut value): (&[u8], &[u8]) = (b"", b"");
    let mut reader = WireReader::new(entry);
    while let Some((field, part)) = reader.next_field().ok_or(Malformed)? {
        if let WireValue::Bytes(bytes) = part {
            match field {
                MAP_KEY => name = bytes,
                MAP_VALUE => value = bytes,
                _ => {}
            }
        }
    }
    Ok((name, value))
}

/// Add a map entry as protobuf reads a map: a later entry for a name replaces the earlier
/// one (and, here, moves to the end, as a Python dict built in order would have it).
pub fn put_property<'a>(
    entries: &mut Vec<(&'a [u8], &'a [u8])>,
    entry: &'a [u8],
) -> Result<(), Malformed> {
    let (name, value) = map_entry(entry)?;
    entries.retain(|(seen, _)| *seen != name);
    entries.push((name, value));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v1::StoredMessage;
    use prost::Message;
    use std::collections::HashMap;

    #[test]
    fn reads_what_prost_writes() {
        let message = StoredMessage {
            topic: "T".into(),
            queue_id: -3,
            queue_offset: 1 << 40,
            commitlog_offset: 77,
            store_size: 200,
            body: b"hello".to_vec().into(),
            tags: Some("TagA".into()),
            keys: vec!["k1".into(), "k2".into()],
            properties: HashMap::from([("a".into(), "1".into())]),
            born_timestamp: 5,
            store_timestamp: 6,
            born_host: "1.2.3.4:5".into(),
            store_host: "6.7.8.9:10".into(),
            msg_id: "ABC".into(),
            flag: 9,
            sys_flag: 8,
            reconsume_times: 2,
        };
        let bytes = message.encode_to_vec();
        let (mut keys, mut properties) = (Vec::new(), Vec::new());
        let view = StoredView::parse(&bytes, |field| match field {
            Repeated::Key(key) => {
                keys.push(key);
                Ok(())
            }
            Repeated::Property(entry) => put_property(&mut properties, entry),
        })
        .unwrap();
        assert_eq!(view.topic, b"T");
        assert_eq!(
            (view.queue_id, view.queue_offset, view.commitlog_offset),
            (-3, 1 << 40, 77)
        );
        assert_eq!(
            (
                view.store_size,
                view.flag,
                view.sys_flag,
                view.reconsume_times
            ),
            (200, 9, 8, 2)
        );
        assert_eq!((view.born_timestamp, view.store_timestamp), (5, 6));
        assert_eq!(view.body, b"hello");
        assert_eq!(view.tags, Some(&b"TagA"[..]));
        assert_eq!(
            (view.born_host, view.store_host, view.msg_id),
            (&b"1.2.3.4:5"[..], &b"6.7.8.9:10"[..], &b"ABC"[..])
        );
        assert_eq!(keys, vec![&b"k1"[..], &b"k2"[..]]);
        assert_eq!(properties, vec![(&b"a"[..], &b"1"[..])]);
    }

    #[test]
    fn a_later_property_replaces_an_earlier_one() {
        let entry = |name: &[u8], value: &[u8]| {
            let mut out = Vec::new();
            crate::wire::put_bytes_field(&mut out, MAP_KEY, name);
            crate::wire::put_bytes_field(&mut out, MAP_VALUE, value);
            out
        };
        let (first, other, again) = (entry(b"a", b"1"), entry(b"b", b"2"), entry(b"a", b"3"));
        let mut entries = Vec::new();
        for encoded in [&first, &other, &again] {
            put_property(&mut entries, encoded).unwrap();
        }
        assert_eq!(
            entries,
            vec![(&b"b"[..], &b"2"[..]), (&b"a"[..], &b"3"[..])]
        );
    }

    #[test]
    fn truncated_bytes_are_malformed() {
        let bytes = StoredMessage {
            topic: "topic".into(),
            ..Default::default()
        }
        .encode_to_vec();
        let cut = &bytes[..bytes.len() - 1];
        assert_eq!(StoredView::parse(cut, |_| Ok(())), Err(Malformed));
        assert_eq!(map_entry(&[0x0A, 0x05, b'a']), Err(Malformed));
    }
}
