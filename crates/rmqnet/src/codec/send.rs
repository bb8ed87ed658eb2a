//! A shard's Send request (`rmq.v1.SendRequest`) decoded straight into the engine's
//! drafts, borrowing the request's bytes (bodies, tags and keys are slices of it), and the
//! `SendResponse` encoded the same way. Per message, the decode allocates only the draft's
//! key list: a copy of each tag and key, then a second list of drafts, cost a shard more
//! per 100-byte message than encoding its record.
//!
//! Decoding only says whether the bytes are a `SendRequest` (and why not); what its
//! messages may hold is checked by the shard (`send_check.rs`) with the engine's rules.
//! A property name given twice keeps its last value at its first place, as a protobuf
//! map read into a dict does.

use std::borrow::Cow;

use rmqcore::record::msg_id::push_msg_id_hex;
use rmqcore::{MessageDraft, PutResult};
use rmqproto::fields::{message, send_request as request, send_response as response};
use rmqproto::wire::{put_bytes_field, put_tag, put_varint, WireReader, WireValue};
use rmqproto::wire::{WIRE_LENGTH_DELIMITED, WIRE_VARINT};

/// A request's topic, queue id, sequence and messages (their `born_host` left unset: the
/// shard names the peer).
pub type DecodedRequest<'a> = (&'a str, i32, u64, Vec<MessageDraft<'a>>);

/// Why bytes are not a `SendRequest`.
pub type Malformed = &'static str;

const NOT_PROTOBUF: Malformed = "the bytes are not valid protobuf";
const NOT_UTF8: Malformed = "a string field is not valid UTF-8";
const WRONG_WIRE_TYPE: Malformed = "a field has the wrong wire type";

pub fn decode_request(raw: &[u8]) -> Result<DecodedRequest<'_>, Malformed> {
    let mut topic = "";
    let mut queue_id = 0i32;
    let mut sequence = 0u64;
    let mut messages = Vec::new();
    let mut reader = WireReader::new(raw);
    while let Some((field, value)) = reader.next_field().ok_or(NOT_PROTOBUF)? {
        match (field, value) {
            (request::TOPIC, WireValue::Bytes(bytes)) => topic = utf8(bytes)?,
            (request::QUEUE_ID, WireValue::Varint(value)) => queue_id = value as i32,
            (request::SEQUENCE, WireValue::Varint(value)) => sequence = value,
            (request::MESSAGES, WireValue::Bytes(bytes)) => messages.push(decode_message(bytes)?),
            (request::TOPIC | request::QUEUE_ID | request::SEQUENCE | request::MESSAGES, _) => {
                return Err(WRONG_WIRE_TYPE)
            }
            _ => {}
        }
    }
    Ok((topic, queue_id, sequence, messages))
}

/// One `Message`.
fn decode_message(bytes: &[u8]) -> Result<MessageDraft<'_>, Malformed> {
    let mut draft = MessageDraft::default();
    let mut reader = WireReader::new(bytes);
    while let Some((field, value)) = reader.next_field().ok_or(NOT_PROTOBUF)? {
        match (field, value) {
            (message::BODY, WireValue::Bytes(body)) => draft.body = body,
            (message::TAGS, WireValue::Bytes(tags)) => {
                draft.tags = Some(Cow::Borrowed(utf8(tags)?))
            }
            (message::KEYS, WireValue::Bytes(key)) => draft.keys.push(Cow::Borrowed(utf8(key)?)),
            (message::PROPERTIES, WireValue::Bytes(entry)) => {
                let (name, value) = decode_map_entry(entry)?;
                match draft
                    .properties
                    .iter_mut()
                    .find(|(known, _)| *known == name)
                {
                    Some(known) => known.1 = value.to_owned(),
                    None => draft.properties.push((name.to_owned(), value.to_owned())),
                }
            }
            (message::FLAG, WireValue::Varint(flag)) => draft.flag = flag as i32,
            // 0 is "not given": the store uses the time of the put.
            (message::BORN_TIMESTAMP, WireValue::Varint(born)) => {
                draft.born_timestamp = (born != 0).then_some(born as i64)
            }
            (message::BODY | message::TAGS | message::KEYS | message::PROPERTIES, _)
            | (message::FLAG | message::BORN_TIMESTAMP, _) => return Err(WRONG_WIRE_TYPE),
            _ => {}
        }
    }
    Ok(draft)
}

fn decode_map_entry(entry: &[u8]) -> Result<(&str, &str), Malformed> {
    let mut name = "";
    let mut value = "";
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

fn utf8(bytes: &[u8]) -> Result<&str, Malformed> {
    std::str::from_utf8(bytes).map_err(|_| NOT_UTF8)
}

/// A serialized `SendResponse` for `results`, in the order of the request.
pub fn encode_send_response(results: &[PutResult], sequence: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(results.len() * 64 + 16);
    // Each id's hex digits go through one reused buffer, not a String per message.
    let mut msg_id = Vec::with_capacity(56);
    for result in results {
        msg_id.clear();
        push_msg_id_hex(&mut msg_id, &result.store_host, result.commitlog_offset);
        put_bytes_field(&mut out, response::MSG_IDS, &msg_id);
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
