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
    let mut messages = Vec::with_capacity(count_messages(raw));
    let mut reader = WireReader::new(raw);
    while let Some((field, value)) = reader.next_field().ok_or(NOT_PROTOBUF)? {
        match (field, value) {
            (request::TOPIC, WireValue::Bytes(bytes)) => topic = utf8(bytes)?,
            (request::QUEUE_ID, WireValue::Varint(value)) => queue_id = value as i32,
            (request::SEQUENCE, WireValue::Varint(value)) => sequence = value,
            (request::MESSAGES, WireValue::Bytes(bytes)) => {
                // Decoded in place: a draft returned by value was copied once more
                // (about 150 bytes by a memcpy call; 60 instructions per message).
                messages.push(MessageDraft::default());
                let draft = messages.last_mut().expect("just pushed");
                decode_message(bytes, draft)?
            }
            (request::TOPIC | request::QUEUE_ID | request::SEQUENCE | request::MESSAGES, _) => {
                return Err(WRONG_WIRE_TYPE)
            }
            _ => {}
        }
    }
    Ok((topic, queue_id, sequence, messages))
}

/// How many `messages` fields a request holds (as far as it is well formed), so the
/// drafts' list is allocated once: grown by doubling, it moved every draft (about 150
/// bytes each) twice more per request, and took eight allocations for 128 messages.
fn count_messages(raw: &[u8]) -> usize {
    let mut reader = WireReader::new(raw);
    let mut count = 0;
    while let Some(Some((field, value))) = reader.next_field() {
        if field == request::MESSAGES && matches!(value, WireValue::Bytes(_)) {
            count += 1;
        }
    }
    count
}

/// One `Message`, into `draft` (a default one).
fn decode_message<'a>(bytes: &'a [u8], draft: &mut MessageDraft<'a>) -> Result<(), Malformed> {
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
    Ok(())
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
    // Tags and keys are mostly ASCII, which a word-wide check confirms in a few
    // instructions: `from_utf8` took about 100 per short string (callgrind), a fifth of
    // the decode of a 100-byte message with a tag and a key.
    if bytes.is_ascii() {
        // SAFETY: ASCII bytes are valid UTF-8.
        return Ok(unsafe { std::str::from_utf8_unchecked(bytes) });
    }
    std::str::from_utf8(bytes).map_err(|_| NOT_UTF8)
}

/// A serialized `SendResponse` for `results`, in the order of the request.
///
/// Messages stored under one store host (every batch a shard stores) carry that host once
/// and no msgIds: the client derives an id from the host and the commit-log offset when
/// asked. Encoding 32 hex digits per message here, and decoding each into a string on the
/// client, cost the client about as much as encoding the request (callgrind).
pub fn encode_send_response(results: &[PutResult], sequence: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(results.len() * 24 + 40);
    match results.first() {
        Some(first) if results.iter().all(|r| r.store_host == first.store_host) => {
            let host = first.store_host.to_string();
            put_bytes_field(&mut out, response::STORE_HOST, host.as_bytes());
        }
        _ => {
            // Each id's hex digits go through one reused buffer, not a String per message.
            let mut msg_id = Vec::with_capacity(56);
            for result in results {
                msg_id.clear();
                push_msg_id_hex(&mut msg_id, &result.store_host, result.commitlog_offset);
                put_bytes_field(&mut out, response::MSG_IDS, &msg_id);
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, value: &str) -> Vec<u8> {
        let mut out = Vec::new();
        put_bytes_field(&mut out, 1, name.as_bytes());
        put_bytes_field(&mut out, 2, value.as_bytes());
        out
    }

    fn request(messages: &[Vec<u8>]) -> Vec<u8> {
        let mut out = Vec::new();
        put_bytes_field(&mut out, request::TOPIC, b"orders");
        put_tag(&mut out, request::QUEUE_ID, WIRE_VARINT);
        put_varint(&mut out, 3);
        for message in messages {
            put_bytes_field(&mut out, request::MESSAGES, message);
        }
        put_tag(&mut out, request::SEQUENCE, WIRE_VARINT);
        put_varint(&mut out, 9);
        out
    }

    #[test]
    fn drafts_borrow_the_request_and_keep_each_field() {
        let mut first = Vec::new();
        put_bytes_field(&mut first, message::BODY, b"hello");
        put_bytes_field(&mut first, message::TAGS, b"TagA");
        put_bytes_field(&mut first, message::KEYS, b"k1");
        put_bytes_field(&mut first, message::KEYS, b"k2");
        put_bytes_field(&mut first, message::PROPERTIES, &entry("a", "1"));
        put_bytes_field(&mut first, message::PROPERTIES, &entry("b", "2"));
        put_bytes_field(&mut first, message::PROPERTIES, &entry("a", "3"));
        put_tag(&mut first, message::FLAG, WIRE_VARINT);
        put_varint(&mut first, 4);
        put_tag(&mut first, message::BORN_TIMESTAMP, WIRE_VARINT);
        put_varint(&mut first, 1_700_000_000_000);
        let mut second = Vec::new();
        put_bytes_field(&mut second, message::BODY, b"");
        put_bytes_field(&mut second, message::KEYS, "ключ".as_bytes());
        put_tag(&mut second, message::BORN_TIMESTAMP, WIRE_VARINT);
        put_varint(&mut second, 0);
        let raw = request(&[first, second]);

        let (topic, queue_id, sequence, drafts) = decode_request(&raw).unwrap();
        assert_eq!(drafts.capacity(), 2, "the list is sized once");
        assert_eq!(
            (topic, queue_id, sequence, drafts.len()),
            ("orders", 3, 9, 2)
        );
        let [one, two] = &drafts[..] else {
            unreachable!()
        };
        let within = |bytes: &[u8]| raw.as_ptr_range().contains(&bytes.as_ptr());
        assert_eq!(one.body, b"hello");
        assert!(within(one.body), "the body is a slice of the request");
        assert!(matches!(one.tags, Some(Cow::Borrowed("TagA"))));
        assert!(matches!(
            one.keys[..],
            [Cow::Borrowed("k1"), Cow::Borrowed("k2")]
        ));
        assert!(within(one.keys[0].as_bytes()));
        // A name given twice keeps its last value at its first place.
        let properties = [
            ("a".to_owned(), "3".to_owned()),
            ("b".to_owned(), "2".to_owned()),
        ];
        assert_eq!(one.properties, properties);
        assert_eq!(
            (one.flag, one.born_timestamp, one.born_host),
            (4, Some(1_700_000_000_000), None)
        );
        // A born timestamp of 0 is "not given"; a key past ASCII is read as UTF-8.
        assert_eq!(
            (two.body, two.born_timestamp, two.tags.is_none()),
            (&b""[..], None, true)
        );
        assert!(matches!(two.keys[..], [Cow::Borrowed("ключ")]));
    }

    #[test]
    fn malformed_requests_say_why() {
        let mut bad_utf8 = Vec::new();
        put_bytes_field(&mut bad_utf8, message::TAGS, &[0xff, 0xfe]);
        assert_eq!(decode_request(&request(&[bad_utf8])).err(), Some(NOT_UTF8));
        let mut wrong_type = Vec::new();
        put_tag(&mut wrong_type, message::BODY, WIRE_VARINT);
        put_varint(&mut wrong_type, 1);
        assert_eq!(
            decode_request(&request(&[wrong_type])).err(),
            Some(WRONG_WIRE_TYPE)
        );
        assert_eq!(
            decode_request(&[0x0a, 0x05, b'a']).err(),
            Some(NOT_PROTOBUF)
        );
    }
}
