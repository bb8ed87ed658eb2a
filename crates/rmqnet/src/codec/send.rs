//! A shard's Send request (`rmq.v1.SendRequest`) decoded without building its messages
//! (bodies stay byte ranges of the request), and the `SendResponse` encoded the same way.
//!
//! Decoding only says whether the bytes are a `SendRequest` (and why not); what its
//! messages may hold is checked by the shard (`send_check.rs`) with the engine's rules.
//! A property name given twice keeps its last value at its first place, as a protobuf
//! map read into a dict does.

use std::borrow::Cow;

use rmqcore::{MessageDraft, PutResult};
use rmqproto::fields::{message, send_request as request, send_response as response};
use rmqproto::wire::{put_bytes_field, put_tag, put_varint, WireReader, WireValue};
use rmqproto::wire::{WIRE_LENGTH_DELIMITED, WIRE_VARINT};

/// Byte ranges of one message inside the request.
pub struct MessageSpans {
    pub body: (usize, usize),
    pub tags: Option<String>,
    pub keys: Vec<String>,
    pub properties: Vec<(String, String)>,
    pub flag: i32,
    /// 0: not given (the store uses the time of the put).
    pub born_timestamp: i64,
}

impl MessageSpans {
    /// This message as an engine draft; `raw` is the request it was decoded from.
    pub fn draft<'a>(
        &'a self,
        raw: &'a [u8],
        born_host: Option<std::net::SocketAddr>,
    ) -> MessageDraft<'a> {
        MessageDraft {
            body: &raw[self.body.0..self.body.1],
            tags: self.tags.as_deref().map(Cow::Borrowed),
            keys: self
                .keys
                .iter()
                .map(|key| Cow::Borrowed(key.as_str()))
                .collect(),
            properties: self.properties.clone(),
            flag: self.flag,
            born_timestamp: (self.born_timestamp != 0).then_some(self.born_timestamp),
            born_host,
        }
    }
}

pub type DecodedRequest = (String, i32, u64, Vec<MessageSpans>);

/// Why bytes are not a `SendRequest`.
pub type Malformed = &'static str;

const NOT_PROTOBUF: Malformed = "the bytes are not valid protobuf";
const NOT_UTF8: Malformed = "a string field is not valid UTF-8";
const WRONG_WIRE_TYPE: Malformed = "a field has the wrong wire type";

pub fn decode_request(raw: &[u8]) -> Result<DecodedRequest, Malformed> {
    let base = raw.as_ptr() as usize;
    let mut topic = String::new();
    let mut queue_id = 0i32;
    let mut sequence = 0u64;
    let mut messages = Vec::new();
    let mut reader = WireReader::new(raw);
    while let Some((field, value)) = reader.next_field().ok_or(NOT_PROTOBUF)? {
        match (field, value) {
            (request::TOPIC, WireValue::Bytes(bytes)) => topic = utf8(bytes)?,
            (request::QUEUE_ID, WireValue::Varint(value)) => queue_id = value as i32,
            (request::SEQUENCE, WireValue::Varint(value)) => sequence = value,
            (request::MESSAGES, WireValue::Bytes(bytes)) => {
                let offset = bytes.as_ptr() as usize - base;
                messages.push(decode_message(bytes, offset)?);
            }
            (request::TOPIC | request::QUEUE_ID | request::SEQUENCE | request::MESSAGES, _) => {
                return Err(WRONG_WIRE_TYPE)
            }
            _ => {}
        }
    }
    Ok((topic, queue_id, sequence, messages))
}

/// One `Message`.
fn decode_message(bytes: &[u8], offset: usize) -> Result<MessageSpans, Malformed> {
    let base = bytes.as_ptr() as usize;
    let mut spans = MessageSpans {
        body: (offset, offset),
        tags: None,
        keys: Vec::new(),
        properties: Vec::new(),
        flag: 0,
        born_timestamp: 0,
    };
    let mut reader = WireReader::new(bytes);
    while let Some((field, value)) = reader.next_field().ok_or(NOT_PROTOBUF)? {
        match (field, value) {
            (message::BODY, WireValue::Bytes(body)) => {
                let start = offset + (body.as_ptr() as usize - base);
                spans.body = (start, start + body.len());
            }
            (message::TAGS, WireValue::Bytes(tags)) => spans.tags = Some(utf8(tags)?),
            (message::KEYS, WireValue::Bytes(key)) => spans.keys.push(utf8(key)?),
            (message::PROPERTIES, WireValue::Bytes(entry)) => {
                let (name, value) = decode_map_entry(entry)?;
                match spans
                    .properties
                    .iter_mut()
                    .find(|(known, _)| *known == name)
                {
                    Some(known) => known.1 = value,
                    None => spans.properties.push((name, value)),
                }
            }
            (message::FLAG, WireValue::Varint(flag)) => spans.flag = flag as i32,
            (message::BORN_TIMESTAMP, WireValue::Varint(born)) => {
                spans.born_timestamp = born as i64
            }
            (message::BODY | message::TAGS | message::KEYS | message::PROPERTIES, _)
            | (message::FLAG | message::BORN_TIMESTAMP, _) => return Err(WRONG_WIRE_TYPE),
            _ => {}
        }
    }
    Ok(spans)
}

fn decode_map_entry(entry: &[u8]) -> Result<(String, String), Malformed> {
    let mut name = String::new();
    let mut value = String::new();
    let mut reader = WireReader::new(entry);
    while let Some((field, item)) = reader.next_field().ok_or(NOT_PROTOBUF)? {
        match (field, item) {
            (1, WireValue::Bytes(bytes)) => name = utf8(bytes)?,
            (2, WireValue::Bytes(bytes)) => value = utf8(bytes)?,
            (1 | 2, _) => return Err(WRONG_WIRE_TYPE),
            _ => {}
        }
    }
    Ok((name, value))
}

fn utf8(bytes: &[u8]) -> Result<String, Malformed> {
    std::str::from_utf8(bytes)
        .map(str::to_owned)
        .map_err(|_| NOT_UTF8)
}

/// A serialized `SendResponse` for `results`, in the order of the request.
pub fn encode_send_response(results: &[PutResult], sequence: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(results.len() * 64 + 16);
    for result in results {
        put_bytes_field(&mut out, response::MSG_IDS, result.msg_id().as_bytes());
    }
    let mut packed = Vec::with_capacity(results.len() * 10);
    let mut put_packed = |out: &mut Vec<u8>, field: u32, values: &mut dyn Iterator<Item = i64>| {
        packed.clear();
        for value in values {
            put_varint(&mut packed, value as u64);
        }
        if !packed.is_empty() {
            put_tag(out, field, WIRE_LENGTH_DELIMITED);
            put_varint(out, packed.len() as u64);
            out.extend_from_slice(&packed);
        }
    };
    put_packed(
        &mut out,
        response::COMMITLOG_OFFSETS,
        &mut results.iter().map(|r| r.commitlog_offset),
    );
    put_packed(
        &mut out,
        response::QUEUE_OFFSETS,
        &mut results.iter().map(|r| r.queue_offset),
    );
    put_packed(
        &mut out,
        response::STORE_TIMESTAMPS,
        &mut results.iter().map(|r| r.store_timestamp),
    );
    put_packed(
        &mut out,
        response::STORE_SIZES,
        &mut results.iter().map(|r| i64::from(r.store_size)),
    );
    if sequence != 0 {
        put_tag(&mut out, response::SEQUENCE, WIRE_VARINT);
        put_varint(&mut out, sequence);
    }
    out
}
