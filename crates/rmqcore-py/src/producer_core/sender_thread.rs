//! What the Python sender thread calls around each batch: `_take_due` blocks (without the
//! GIL) until batches are due, and each batch then comes back as `_release` (free its
//! queue, perhaps taking the next batch at once), `_complete` (resolve its futures) or
//! `_retry_later`. Every one of them only moves a batch between the books and Python; the
//! rules of when a batch is due are `batching.rs`'s.

use std::time::{Duration, Instant};

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use crate::send_future::Answer;

use super::batching::{lock, SIGNAL_CHECK};
use super::outgoing_batch::handed_back;
use super::{seconds, PyOutgoingBatch, PyProducerCore};

/// The shortest sleep of the sender thread while a batch lingers.
const MIN_WAKE: Duration = Duration::from_micros(500);

#[pymethods]
impl PyProducerCore {
    /// For the sender thread: the batches due now, waiting until some are; None once
    /// the producer is closed and nothing is left.
    fn _take_due(&self, py: Python<'_>) -> PyResult<Option<Vec<Py<PyOutgoingBatch>>>> {
        let due = py.detach(|| {
            let mut state = lock(&self.state);
            loop {
                let now = Instant::now();
                let (due, wake) = state.due(now);
                if !due.is_empty() {
                    return Some(due);
                }
                if state.closed && state.idle() {
                    return None;
                }
                let sleep = wake.map_or(SIGNAL_CHECK, |wake| {
                    wake.saturating_duration_since(now).max(MIN_WAKE)
                });
                state = self
                    .changed
                    .wait_timeout(state, sleep)
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .0;
            }
        });
        due.map(|due| {
            due.into_iter()
                .map(|batch| Py::new(py, PyOutgoingBatch { batch: Some(batch) }))
                .collect()
        })
        .transpose()
    }

    /// Send `batch` again after `delay` seconds, looking its route up afresh.
    fn _retry_later(&self, batch: &Bound<'_, PyOutgoingBatch>, delay: f64) -> PyResult<()> {
        let delay = seconds(delay, "delay")?;
        let mut batch = batch.borrow_mut().batch.take().ok_or_else(handed_back)?;
        batch.refresh_route = true;
        lock(&self.state)
            .retries
            .insert(batch.key(), (batch, Instant::now() + delay));
        self.notify();
        Ok(())
    }

    /// The broker answered `batch`: free its queue and, with `take_next`, take the
    /// queue's next batch if it is ready, to be sent before this batch's futures
    /// resolve (their callbacks then run while the next batch is on its way).
    fn _release(
        &self,
        py: Python<'_>,
        batch: &Bound<'_, PyOutgoingBatch>,
        take_next: bool,
    ) -> PyResult<Option<Py<PyOutgoingBatch>>> {
        let key = {
            let mut outgoing = batch.borrow_mut();
            let batch = outgoing.batch.as_mut().ok_or_else(handed_back)?;
            if batch.released {
                return Ok(None);
            }
            batch.released = true;
            batch.key()
        };
        self.release(&key, take_next)
            .map(|batch| Py::new(py, PyOutgoingBatch { batch: Some(batch) }))
            .transpose()
    }

    /// Resolve the batch's futures with the broker's `response`, or with `error`, and
    /// free its queue if `_release` did not already.
    #[pyo3(signature = (batch, response, error))]
    fn _complete(
        &self,
        py: Python<'_>,
        batch: &Bound<'_, PyOutgoingBatch>,
        response: Option<Py<PyAny>>,
        error: Option<Py<PyAny>>,
    ) -> PyResult<()> {
        let answer = match (response, error) {
            (Some(response), None) => Answer::Stored(response),
            (None, Some(error)) => Answer::Failed(error),
            _ => {
                return Err(PyTypeError::new_err(
                    "give exactly one of response and error",
                ))
            }
        };
        let batch = batch.borrow_mut().batch.take().ok_or_else(handed_back)?;
        self.finish(py, batch, answer);
        Ok(())
    }
}
