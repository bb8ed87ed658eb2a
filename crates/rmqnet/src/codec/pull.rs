//! Stored messages encoded as the broker's `rmq.v1` protobuf (proto/rmq/v1/broker.proto),
//! so that a shard answers a Pull without building a Python object per message.
//!
//! The output is field 1 (`repeated StoredMessage messages`) of `PullResponse`; protobuf
//! readers merge concatenated fields, so the shard appends the response's scalar fields
//! encoded by the Python protobuf library. Field numbers come from `rmqproto`; a test in
//! tests/ decodes this output with the generated Python classes and compares it with the
//! message-by-message encoding, so a change to the .proto that is not made here fails.

use std::net::SocketAddr;

use rmqcore::record::crc_property::CRC_PROPERTY_NAME;
use rmqcore::record::msg_id::create_msg_id;
use rmqcore::record::properties::{property_entries, KEY_SEPARATOR, PROPERTY_KEYS, PROPERTY_TAGS};
use rmqcore::record::RecordView;

use rmqproto::wire::{
    field_length, put_bytes_field, put_int_field, put_string_field, put_tag, put_varint,
    WIRE_LENGTH_DELIMITED,
};

use rmqproto::fields::map_entry::{KEY as MAP_KEY, VALUE as MAP_VALUE};
use rmqproto::fields::pull_response::MESSAGES as PULL_RESPONSE_MESSAGES;
use rmqproto::fields::stored_message as stored;

/// Encodes records as repeated field 1 of `rmq.v1.PullResponse`, one at a time as the
/// store reads them.
#[derive(Default)]
pub struct PullEncoder {
    out: Vec<u8>,
    scratch: Vec<u8>,
    /// Hosts are the same for most records; formatting an address is not free.
    hosts: Vec<(SocketAddr, String)>,
}

impl PullEncoder {
    pub fn push(&mut self, view: &RecordView<'_>) {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        self.encode_stored_message(&mut scratch, view);
        put_bytes_field(&mut self.out, PULL_RESPONSE_MESSAGES, &scratch);
        self.scratch = scratch;
    }

    /// An encoder whose output starts with `prefix` zero bytes, for a frame header to
    /// be written there later (`grpc::ok_in_place`).
    pub fn after_prefix(prefix: usize) -> PullEncoder {
        PullEncoder {
            out: vec![0; prefix],
            ..PullEncoder::default()
        }
    }

    pub fn finish(self) -> Vec<u8> {
        self.out
    }

    fn host(&mut self, address: SocketAddr) -> &str {
        let at = match self.hosts.iter().position(|(known, _)| *known == address) {
            Some(at) => at,
            None => {
                if self.hosts.len() >= 16 {
                    self.hosts.clear();
                }
                self.hosts.push((address, address.to_string()));
                self.hosts.len() - 1
            }
        };
        &self.hosts[at].1
    }

    /// One `rmq.v1.StoredMessage` with the fields `StoredMessage::from_record` gives (the
    /// Python path's source): tags and keys from the last `TAGS`/`KEYS`, other properties
    /// in order (a map keeps the last of a repeated name, as that function does), the CRC
    /// property hidden. Like protobuf's own encoders, fields holding their default value
    /// are left out, except `tags`, whose presence is part of its value.
    fn encode_stored_message(&mut self, out: &mut Vec<u8>, view: &RecordView<'_>) {
        put_string_field(out, stored::TOPIC, &view.topic_str());
        put_int_field(out, stored::QUEUE_ID, i64::from(view.queue_id));
        put_int_field(out, stored::QUEUE_OFFSET, view.queue_offset);
        put_int_field(out, stored::COMMITLOG_OFFSET, view.physical_offset);
        let store_size = i32::try_from(view.total_size).unwrap_or(i32::MAX);
        put_int_field(out, stored::STORE_SIZE, i64::from(store_size));
        put_bytes_field(out, stored::BODY, view.body);
        // Tags and keys come from the view's one scan of the properties.
        if let Some(tags) = view.tags() {
            put_text(out, stored::TAGS, &String::from_utf8_lossy(tags));
        }
        if let Some(keys) = view.dispatch_properties().keys {
            for key in String::from_utf8_lossy(keys).split(KEY_SEPARATOR) {
                if !key.is_empty() {
                    put_text(out, stored::KEYS, key);
                }
            }
        }
        for (name, value) in property_entries(view.properties) {
            if name == PROPERTY_TAGS.as_bytes()
                || name == PROPERTY_KEYS.as_bytes()
                || name == CRC_PROPERTY_NAME.as_bytes()
            {
                continue;
            }
            let (name, value) = (
                String::from_utf8_lossy(name),
                String::from_utf8_lossy(value),
            );
            let entry_length =
                field_length(MAP_KEY, name.len()) + field_length(MAP_VALUE, value.len());
            put_tag(out, stored::PROPERTIES, WIRE_LENGTH_DELIMITED);
            put_varint(out, entry_length as u64);
            put_text(out, MAP_KEY, &name);
            put_text(out, MAP_VALUE, &value);
        }
        put_int_field(out, stored::BORN_TIMESTAMP, view.born_timestamp);
        put_int_field(out, stored::STORE_TIMESTAMP, view.store_timestamp);
        put_string_field(out, stored::BORN_HOST, self.host(view.born_host));
        put_string_field(out, stored::STORE_HOST, self.host(view.store_host));
        put_string_field(
            out,
            stored::MSG_ID,
            &create_msg_id(&view.store_host, view.physical_offset),
        );
        put_int_field(out, stored::FLAG, i64::from(view.flag));
        put_int_field(out, stored::SYS_FLAG, i64::from(view.sys_flag));
        put_int_field(
            out,
            stored::RECONSUME_TIMES,
            i64::from(view.reconsume_times),
        );
    }
}

/// A length-delimited field that is written even when empty (repeated and optional ones).
fn put_text(out: &mut Vec<u8>, field: u32, text: &str) {
    put_tag(out, field, WIRE_LENGTH_DELIMITED);
    put_varint(out, text.len() as u64);
    out.extend_from_slice(text.as_bytes());
}

/// The scalar fields of a `PullResponse`, appended after its encoded messages (protobuf
/// readers merge fields that follow one another).
pub fn response_tail(next_offset: i64, min_offset: i64, max_offset: i64) -> Vec<u8> {
    use rmqproto::fields::pull_response as response;
    let mut out = Vec::with_capacity(33);
    put_int_field(&mut out, response::NEXT_OFFSET, next_offset);
    put_int_field(&mut out, response::MIN_OFFSET, min_offset);
    put_int_field(&mut out, response::MAX_OFFSET, max_offset);
    out
}
