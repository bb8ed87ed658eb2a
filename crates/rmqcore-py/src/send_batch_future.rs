//! `rmq._rmqcore.SendBatchFuture`: the pending result of one `Producer.send_batch`. The
//! caller's messages travel as one batch of their own, so the future is that batch's
//! shared outcome (`send_future::BatchOutcome`) and how many messages it holds: one
//! object per call, and the `SendResult`s are made only when `result` is asked for.

use std::sync::Arc;

use pyo3::prelude::*;

use crate::send_future::BatchOutcome;
use crate::send_result::PySendResult;

/// The pending result of one `Producer.send_batch`.
#[pyclass(frozen, module = "rmq._rmqcore", name = "SendBatchFuture")]
pub struct PySendBatchFuture {
    outcome: Arc<BatchOutcome>,
    count: usize,
}

impl PySendBatchFuture {
    pub fn create(py: Python<'_>, outcome: Arc<BatchOutcome>, count: usize) -> PyResult<Py<Self>> {
        Py::new(py, PySendBatchFuture { outcome, count })
    }
}

#[pymethods]
impl PySendBatchFuture {
    fn done(&self) -> bool {
        self.outcome.is_finished()
    }

    fn running(&self) -> bool {
        !self.outcome.is_finished()
    }

    /// A queued batch cannot be taken back: always False.
    fn cancel(&self) -> bool {
        false
    }

    fn cancelled(&self) -> bool {
        false
    }

    /// Where the broker stored each message, in the order given; raises what the batch
    /// failed with, or `TimeoutError` if `timeout` seconds pass first.
    #[pyo3(signature = (timeout=None))]
    fn result(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Vec<PySendResult>> {
        self.outcome.wait(py, timeout)?;
        if let Some(error) = self.outcome.error(py) {
            return Err(PyErr::from_value(error.into_bound(py)));
        }
        // The sender checked that a stored batch has one answer per message.
        Ok(self
            .outcome
            .stored_results(0, self.count)
            .expect("a finished batch that did not fail has an answer per message"))
    }

    /// The exception the batch failed with, or None once it was stored.
    #[pyo3(signature = (timeout=None))]
    fn exception(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Option<Py<PyAny>>> {
        self.outcome.wait(py, timeout)?;
        Ok(self.outcome.error(py))
    }

    /// Call `callback(future)` once the batch has a result (at once if it has).
    fn add_done_callback(slf: Bound<'_, Self>, callback: Py<PyAny>) {
        let outcome = Arc::clone(&slf.get().outcome);
        outcome.add_callback(slf.into_any(), callback);
    }

    /// How many messages the batch holds.
    fn __len__(&self) -> usize {
        self.count
    }

    fn __repr__(&self) -> String {
        let state = if self.outcome.is_finished() {
            "finished"
        } else {
            "pending"
        };
        format!(
            "<SendBatchFuture {} {} messages {}>",
            self.outcome.describe(),
            self.count,
            state
        )
    }
}
