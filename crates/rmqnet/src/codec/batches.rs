//! `rmq.v1.SendBatchesRequest` and its response, framed without decoding what they carry:
//! a producer joins the `SendRequest`s of several queues of one shard into one call, and
//! the shard takes them apart, stores each on its own, and answers each with a
//! `SendStreamResponse` (where it was stored, or why not).

use rmqproto::fields::error as error_fields;
use rmqproto::fields::send_batches_request::BATCHES;
use rmqproto::fields::send_batches_response::ANSWERS;
use rmqproto::fields::send_response::SEQUENCE as SEND_RESPONSE_SEQUENCE;
use rmqproto::fields::send_stream_response as answer;
use rmqproto::wire::{
    put_bytes_field, put_int_field, put_string_field, put_tag, put_varint, WireReader, WireValue,
};
use rmqproto::wire::{WIRE_LENGTH_DELIMITED, WIRE_VARINT};

/// The `SendRequest`s of an encoded `SendBatchesRequest`, still encoded; None when the
/// bytes are not one (malformed, or a field other than `batches`).
pub fn split(raw: &[u8]) -> Option<Vec<&[u8]>> {
    let mut reader = WireReader::new(raw);
    let mut batches = Vec::new();
    while let Some((field, value)) = reader.next_field()? {
        match (field, value) {
            (BATCHES, WireValue::Bytes(batch)) => batches.push(batch),
            _ => return None,
        }
    }
    Some(batches)
}

/// The `SendStreamResponse` for a stored batch: `response` (an encoded `SendResponse`)
/// with its sequence echoed. None when `response` is not valid protobuf.
pub fn stored_answer(response: &[u8]) -> Option<Vec<u8>> {
    let mut sequence = 0;
    let mut reader = WireReader::new(response);
    while let Some((field, value)) = reader.next_field()? {
        if let (SEND_RESPONSE_SEQUENCE, WireValue::Varint(value)) = (field, value) {
            sequence = value;
        }
    }
    let mut out = Vec::with_capacity(response.len() + 16);
    if sequence != 0 {
        put_tag(&mut out, answer::SEQUENCE, WIRE_VARINT);
        put_varint(&mut out, sequence);
    }
    put_bytes_field_always(&mut out, answer::RESULT, response);
    Some(out)
}

/// The `SendStreamResponse` for a refused batch: a gRPC status code and its message.
pub fn refused_answer(sequence: u64, code: i32, message: &str) -> Vec<u8> {
    let mut error = Vec::new();
    put_int_field(&mut error, error_fields::CODE, i64::from(code));
    put_string_field(&mut error, error_fields::MESSAGE, message);
    let mut out = Vec::with_capacity(error.len() + 16);
    put_int_field(&mut out, answer::SEQUENCE, sequence as i64);
    put_bytes_field(&mut out, answer::ERROR, &error);
    out
}

/// A `SendBatchesResponse` from its encoded answers, in order.
pub fn response<'a>(answers: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    for answer in answers {
        put_bytes_field_always(&mut out, ANSWERS, answer);
    }
    out
}

/// A length-delimited field even when empty (an empty `SendResponse` is still an answer).
fn put_bytes_field_always(out: &mut Vec<u8>, field: u32, value: &[u8]) {
    put_tag(out, field, WIRE_LENGTH_DELIMITED);
    put_varint(out, value.len() as u64);
    out.extend_from_slice(value);
}
