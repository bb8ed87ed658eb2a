//! The shard's side of `rmq.v1.SendBatchesRequest` for the Python servicer: take a
//! producer's call apart (`split_send_batches`) to store each batch through the Send fast
//! path, and frame the answers. The framing itself is `rmqnet::codec::batches`; the
//! producer's side is `rmqnet::client::encode`.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

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
