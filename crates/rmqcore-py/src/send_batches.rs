//! The framing of `rmq.v1.SendBatchesRequest`: a producer joins the `SendRequest`s of
//! several queues of one shard into one call (`encode_send_batches`), and the shard takes
//! them apart (`split_send_batches`) to store each through the Send fast path. On this
//! 2-core machine a gRPC call costs the Python server about 0.7 ms of CPU whatever it
//! carries, so fewer, fuller calls leave more of it for storing.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::producer_core::PyOutgoingBatch;
use crate::protobuf_wire::{field_length, put_tag, put_varint, WireReader, WireValue};
use crate::protobuf_wire::{WIRE_LENGTH_DELIMITED, WIRE_VARINT};
use crate::send_request_encoding::request_head;

/// `SendBatchesRequest.batches`.
const BATCHES: u32 = 1;
/// `SendBatchesResponse.answers`.
const ANSWERS: u32 = 1;
/// `SendResponse.sequence`.
const SEND_RESPONSE_SEQUENCE: u32 = crate::send_batch::response::SEQUENCE;

/// The `SendRequest`s of an encoded `SendBatchesRequest`, still encoded; None when the
/// bytes are not one (malformed, or a field other than `batches`).
#[pyfunction]
pub fn split_send_batches<'py>(py: Python<'py>, raw: &[u8]) -> Option<Vec<Bound<'py, PyBytes>>> {
    let mut reader = WireReader::new(raw);
    let mut batches = Vec::new();
    while let Some((field, value)) = reader.next_field()? {
        match (field, value) {
            (BATCHES, WireValue::Bytes(batch)) => batches.push(PyBytes::new(py, batch)),
            _ => return None,
        }
    }
    Some(batches)
}

/// One `SendBatchesRequest` carrying `batches` (each a producer's `OutgoingBatch`).
#[pyfunction]
pub fn encode_send_batches<'py>(
    py: Python<'py>,
    batches: Vec<PyRef<'py, PyOutgoingBatch>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut out = Vec::new();
    for batch in &batches {
        let (topic, queue_id, messages) = batch.parts()?;
        let head = request_head(topic, queue_id);
        let length = head.len() + messages.len();
        out.reserve(field_length(BATCHES, length));
        put_tag(&mut out, BATCHES, WIRE_LENGTH_DELIMITED);
        put_varint(&mut out, length as u64);
        out.extend_from_slice(&head);
        out.extend_from_slice(messages);
    }
    Ok(PyBytes::new(py, &out))
}

/// `SendStreamResponse` fields: the request's sequence, then the outcome.
mod answer {
    pub const SEQUENCE: u32 = 1;
    pub const RESULT: u32 = 2;
}

/// The `SendStreamResponse` for a batch the engine stored: `response` (an encoded
/// `SendResponse`, from `Store.put_send_batch`) with its sequence echoed, without
/// decoding the response into protobuf objects and encoding it again.
#[pyfunction]
pub fn stored_answer<'py>(py: Python<'py>, response: &[u8]) -> Option<Bound<'py, PyBytes>> {
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
    put_tag(&mut out, answer::RESULT, WIRE_LENGTH_DELIMITED);
    put_varint(&mut out, response.len() as u64);
    out.extend_from_slice(response);
    Some(PyBytes::new(py, &out))
}

/// A `SendBatchesResponse` from its encoded answers (`SendStreamResponse`s), in order.
#[pyfunction]
pub fn send_batches_response<'py>(
    py: Python<'py>,
    answers: Vec<Bound<'py, PyBytes>>,
) -> Bound<'py, PyBytes> {
    let mut out = Vec::new();
    for answer in &answers {
        let answer = answer.as_bytes();
        put_tag(&mut out, ANSWERS, WIRE_LENGTH_DELIMITED);
        put_varint(&mut out, answer.len() as u64);
        out.extend_from_slice(answer);
    }
    PyBytes::new(py, &out)
}
