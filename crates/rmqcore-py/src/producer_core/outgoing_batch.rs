//! `rmq._rmqcore.OutgoingBatch`: a batch taken off the producer's books and lent to
//! Python while it is on its way to the broker. The Python side only reads it, encodes it
//! and hands it back (to `_release`, `_complete`, `_retry_later` or the native sender),
//! which takes the `Batch` out again; any use after that is the error `handed_back`, so a
//! batch can never be resolved or sent twice.

use std::time::Instant;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::send_request_encoding::encode_request;

use super::Batch;

/// One batch on its way to the broker, as the Python side sees it.
#[pyclass(module = "rmq._rmqcore", name = "OutgoingBatch")]
pub struct PyOutgoingBatch {
    pub(super) batch: Option<Batch>,
}

impl PyOutgoingBatch {
    pub(crate) fn new(batch: Batch) -> Self {
        PyOutgoingBatch { batch: Some(batch) }
    }

    fn batch(&self) -> PyResult<&Batch> {
        self.batch.as_ref().ok_or_else(handed_back)
    }

    /// Topic, queue and encoded messages, for a request carrying several batches.
    pub fn parts(&self) -> PyResult<(&str, i32, &[u8])> {
        let batch = self.batch()?;
        Ok((&batch.topic, batch.queue_id, &batch.messages))
    }
}

pub(super) fn handed_back() -> PyErr {
    pyo3::exceptions::PyRuntimeError::new_err("this batch was handed back to its producer")
}

#[pymethods]
impl PyOutgoingBatch {
    #[getter]
    fn topic(&self) -> PyResult<&str> {
        Ok(&self.batch()?.topic)
    }

    #[getter]
    fn queue_id(&self) -> PyResult<i32> {
        Ok(self.batch()?.queue_id)
    }

    fn __len__(&self) -> PyResult<usize> {
        Ok(self.batch()?.count)
    }

    /// Whether the last try failed in a way that may mean the route changed.
    #[getter]
    fn refresh_route(&self) -> PyResult<bool> {
        Ok(self.batch()?.refresh_route)
    }

    /// Seconds since the batch was first sent (0 before that); starts the clock when
    /// called for the first time, so call it as the batch is sent.
    fn mark_sent(&mut self) -> PyResult<f64> {
        let batch = self.batch.as_mut().ok_or_else(handed_back)?;
        let first = *batch.first_sent.get_or_insert_with(Instant::now);
        Ok(first.elapsed().as_secs_f64())
    }

    /// The whole `rmq.v1.SendRequest`.
    fn encode<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let batch = self.batch()?;
        encode_request(py, &batch.topic, batch.queue_id, &batch.messages)
    }
}
