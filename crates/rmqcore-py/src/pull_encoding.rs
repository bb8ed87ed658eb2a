//! Stored messages encoded as the broker's `rmq.v1` protobuf (proto/rmq/v1/broker.proto),
//! so that a shard answers a Pull without building a Python object per message.
//!
//! The output is field 1 (`repeated StoredMessage messages`) of `PullResponse`; protobuf
//! readers merge concatenated fields, so the shard appends the response's scalar fields
//! encoded by the Python protobuf library. Field numbers below are the .proto's; a test in
//! tests/ decodes this output with the generated Python classes and compares it with the
//! message-by-message encoding, so a change to the .proto that is not made here fails.

use rmqcore::StoredMessage;

use crate::protobuf_wire::{
    field_length, put_bytes_field, put_int_field, put_string_field, put_tag, put_varint,
    WIRE_LENGTH_DELIMITED,
};

const PULL_RESPONSE_MESSAGES: u32 = 1;

mod stored {
    pub const TOPIC: u32 = 1;
    pub const QUEUE_ID: u32 = 2;
    pub const QUEUE_OFFSET: u32 = 3;
    pub const COMMITLOG_OFFSET: u32 = 4;
    pub const STORE_SIZE: u32 = 5;
    pub const BODY: u32 = 6;
    pub const TAGS: u32 = 7;
    pub const KEYS: u32 = 8;
    pub const PROPERTIES: u32 = 9;
    pub const BORN_TIMESTAMP: u32 = 10;
    pub const STORE_TIMESTAMP: u32 = 11;
    pub const BORN_HOST: u32 = 12;
    pub const STORE_HOST: u32 = 13;
    pub const MSG_ID: u32 = 14;
    pub const FLAG: u32 = 15;
    pub const SYS_FLAG: u32 = 16;
    pub const RECONSUME_TIMES: u32 = 17;
}

const MAP_KEY: u32 = 1;
const MAP_VALUE: u32 = 2;

/// Append `messages` as repeated field 1 of `rmq.v1.PullResponse`.
pub fn encode_pull_messages(messages: &[StoredMessage]) -> Vec<u8> {
    let mut out = Vec::with_capacity(
        messages
            .iter()
            .map(|message| message.body.len() + 160)
            .sum(),
    );
    let mut scratch = Vec::new();
    for message in messages {
        scratch.clear();
        encode_stored_message(&mut scratch, message);
        put_bytes_field(&mut out, PULL_RESPONSE_MESSAGES, &scratch);
    }
    out
}

/// One `rmq.v1.StoredMessage`. Like protobuf's own encoders, fields holding their default
/// value are left out, except `tags`, whose presence is part of its value.
fn encode_stored_message(out: &mut Vec<u8>, message: &StoredMessage) {
    put_string_field(out, stored::TOPIC, &message.topic);
    put_int_field(out, stored::QUEUE_ID, i64::from(message.queue_id));
    put_int_field(out, stored::QUEUE_OFFSET, message.queue_offset);
    put_int_field(out, stored::COMMITLOG_OFFSET, message.commitlog_offset);
    put_int_field(out, stored::STORE_SIZE, i64::from(message.store_size));
    put_bytes_field(out, stored::BODY, &message.body);
    if let Some(tags) = &message.tags {
        put_tag(out, stored::TAGS, WIRE_LENGTH_DELIMITED);
        put_varint(out, tags.len() as u64);
        out.extend_from_slice(tags.as_bytes());
    }
    for key in &message.keys {
        put_tag(out, stored::KEYS, WIRE_LENGTH_DELIMITED);
        put_varint(out, key.len() as u64);
        out.extend_from_slice(key.as_bytes());
    }
    for (name, value) in &message.properties {
        let entry_length = field_length(MAP_KEY, name.len()) + field_length(MAP_VALUE, value.len());
        put_tag(out, stored::PROPERTIES, WIRE_LENGTH_DELIMITED);
        put_varint(out, entry_length as u64);
        put_tag(out, MAP_KEY, WIRE_LENGTH_DELIMITED);
        put_varint(out, name.len() as u64);
        out.extend_from_slice(name.as_bytes());
        put_tag(out, MAP_VALUE, WIRE_LENGTH_DELIMITED);
        put_varint(out, value.len() as u64);
        out.extend_from_slice(value.as_bytes());
    }
    put_int_field(out, stored::BORN_TIMESTAMP, message.born_timestamp);
    put_int_field(out, stored::STORE_TIMESTAMP, message.store_timestamp);
    put_string_field(out, stored::BORN_HOST, &message.born_host.to_string());
    put_string_field(out, stored::STORE_HOST, &message.store_host.to_string());
    put_string_field(out, stored::MSG_ID, &message.msg_id);
    put_int_field(out, stored::FLAG, i64::from(message.flag));
    put_int_field(out, stored::SYS_FLAG, i64::from(message.sys_flag));
    put_int_field(
        out,
        stored::RECONSUME_TIMES,
        i64::from(message.reconsume_times),
    );
}
