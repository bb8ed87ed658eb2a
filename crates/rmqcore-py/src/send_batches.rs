//! The framing of `rmq.v1.SendBatchesRequest`: a producer joins the `SendRequest`s of
//! several queues of one shard into one call (`encode_send_batches`), and the shard takes
//! them apart (`split_send_batches`) to store each through the Send fast path. On this
//! 2-core machine a gRPC call costs the Python server about 0.7 ms of CPU whatever it
//! carries, so fewer, fuller calls leave more of it for storing.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::producer_core::PyOutgoingBatch;
use crate::send_request_encoding::request_head;
use rmqproto::fields::send_stream_response as answer;
use rmqproto::wire::WIRE_LENGTH_DELIMITED;
use rmqproto::wire::{field_length, put_tag, put_varint, WireReader, WireValue};

/// `SendBatchesRequest.batches`.
use rmqproto::fields::send_batches_request::BATCHES;
use rmqproto::fields::send_batches_response::ANSWERS;

/// The `SendRequest`s of an encoded `SendBatchesRequest`, still encoded; None when the
/// bytes are not one (malformed, or a field other than `batches`).
#[pyfunction]
pub fn split_send_batches<'py>(py: Python<'py>, raw: &[u8]) -> Option<Vec<Bound<'py, PyBytes>>> {
    let parts = rmqnet::codec::batches::split(raw)?;
    Some(
        parts
            .into_iter()
            .map(|part| PyBytes::new(py, part))
            .collect(),
    )
}

/// One `SendBatchesRequest` carrying `batches` (each a producer's `OutgoingBatch`).
#[pyfunction]
pub fn encode_send_batches<'py>(
    py: Python<'py>,
    batches: Vec<PyRef<'py, PyOutgoingBatch>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let parts = batches
        .iter()
        .map(|batch| batch.parts())
        .collect::<PyResult<Vec<_>>>()?;
    Ok(PyBytes::new(py, &encode_parts(parts)))
}

/// A `SendBatchesRequest` from each batch's topic, queue and encoded `messages` fields.
pub fn encode_parts<'a>(parts: impl IntoIterator<Item = (&'a str, i32, &'a [u8])>) -> Vec<u8> {
    let mut out = Vec::new();
    for (topic, queue_id, messages) in parts {
        let head = request_head(topic, queue_id);
        let length = head.len() + messages.len();
        out.reserve(field_length(BATCHES, length));
        put_tag(&mut out, BATCHES, WIRE_LENGTH_DELIMITED);
        put_varint(&mut out, length as u64);
        out.extend_from_slice(&head);
        out.extend_from_slice(messages);
    }
    out
}

/// How the shard answered one batch of a `SendBatchesResponse`.
#[derive(Debug, PartialEq, Eq)]
pub enum BatchAnswer {
    /// Stored: where its encoded `SendResponse` lies in the response.
    Stored(std::ops::Range<usize>),
    /// Refused with this status code and message.
    Refused(i32, String),
}

/// The answers of an encoded `SendBatchesResponse`, in order; None when malformed.
pub fn parse_answers(raw: &[u8]) -> Option<Vec<BatchAnswer>> {
    let base = raw.as_ptr() as usize;
    let mut reader = WireReader::new(raw);
    let mut answers = Vec::new();
    while let Some((field, value)) = reader.next_field()? {
        let (ANSWERS, WireValue::Bytes(answer)) = (field, value) else {
            continue;
        };
        let mut parsed = None;
        let mut fields = WireReader::new(answer);
        while let Some((field, value)) = fields.next_field()? {
            match (field, value) {
                (answer::RESULT, WireValue::Bytes(result)) => {
                    let start = result.as_ptr() as usize - base;
                    parsed = Some(BatchAnswer::Stored(start..start + result.len()));
                }
                (answer::ERROR, WireValue::Bytes(error)) => parsed = Some(parse_error(error)?),
                _ => {}
            }
        }
        // An empty result is a stored batch whose response has every field at default.
        answers.push(parsed.unwrap_or(BatchAnswer::Stored(0..0)));
    }
    Some(answers)
}

/// `rmq.v1.Error`: code 1, message 2.
fn parse_error(raw: &[u8]) -> Option<BatchAnswer> {
    let mut code = 0;
    let mut message = String::new();
    let mut reader = WireReader::new(raw);
    while let Some((field, value)) = reader.next_field()? {
        match (field, value) {
            (1, WireValue::Varint(value)) => code = value as i32,
            (2, WireValue::Bytes(text)) => message = String::from_utf8_lossy(text).into_owned(),
            _ => {}
        }
    }
    Some(BatchAnswer::Refused(code, message))
}

/// The `SendStreamResponse` for a batch the engine stored: `response` (an encoded
/// `SendResponse`, from `Store.put_send_batch`) with its sequence echoed, without
/// decoding the response into protobuf objects and encoding it again.
#[pyfunction]
pub fn stored_answer<'py>(py: Python<'py>, response: &[u8]) -> Option<Bound<'py, PyBytes>> {
    let answer = rmqnet::codec::batches::stored_answer(response)?;
    Some(PyBytes::new(py, &answer))
}

/// A `SendBatchesResponse` from its encoded answers (`SendStreamResponse`s), in order.
#[pyfunction]
pub fn send_batches_response<'py>(
    py: Python<'py>,
    answers: Vec<Bound<'py, PyBytes>>,
) -> Bound<'py, PyBytes> {
    let response = rmqnet::codec::batches::response(answers.iter().map(|a| a.as_bytes()));
    PyBytes::new(py, &response)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmqproto::fields::error as error_fields;
    use rmqproto::wire::{put_bytes_field, put_int_field, put_string_field};

    fn answer(result: Option<&[u8]>, error: Option<(i64, &str)>) -> Vec<u8> {
        let mut out = Vec::new();
        put_int_field(&mut out, answer::SEQUENCE, 7);
        if let Some(result) = result {
            put_bytes_field(&mut out, answer::RESULT, result);
        }
        if let Some((code, message)) = error {
            let mut error = Vec::new();
            put_int_field(&mut error, error_fields::CODE, code);
            put_string_field(&mut error, error_fields::MESSAGE, message);
            put_bytes_field(&mut out, answer::ERROR, &error);
        }
        out
    }

    #[test]
    fn answers_read_back_in_order() {
        let stored = b"\x0a\x03abc";
        let mut response = Vec::new();
        for part in [
            answer(Some(stored), None),
            answer(None, Some((3, "bad tags"))),
            answer(None, None),
        ] {
            put_bytes_field(&mut response, ANSWERS, &part);
        }
        let answers = parse_answers(&response).expect("well formed");
        let BatchAnswer::Stored(range) = &answers[0] else {
            panic!("first answer {:?}", answers[0]);
        };
        assert_eq!(&response[range.clone()], stored);
        assert_eq!(answers[1], BatchAnswer::Refused(3, "bad tags".into()));
        assert_eq!(answers[2], BatchAnswer::Stored(0..0));
        assert_eq!(parse_answers(b""), Some(vec![]));
        assert_eq!(parse_answers(b"\x0a\x05ab"), None);
    }

    #[test]
    fn encoded_parts_frame_each_request() {
        let encoded = encode_parts([("t", 1, &b"\x1a\x02\x0a\x00"[..]), ("u", 2, &b""[..])]);
        let mut reader = WireReader::new(&encoded);
        let mut requests = Vec::new();
        while let Some((field, value)) = reader.next_field().expect("well formed") {
            let (BATCHES, WireValue::Bytes(request)) = (field, value) else {
                panic!("unexpected field {field}");
            };
            requests.push(request.to_vec());
        }
        assert_eq!(requests.len(), 2);
        assert!(requests[0].ends_with(b"\x1a\x02\x0a\x00"));
        assert_eq!(requests[1], request_head("u", 2));
    }
}
