//! `rmq._rmqcore.SendFuture`: the pending result of one `Producer.send`, resolved a batch
//! at a time.
//!
//! A message's future is only its batch's shared outcome and its position in the batch: the
//! waiting, the error and the broker's answer belong to the batch, and a `SendResult` is
//! made when asked for. A producer makes one future per message, so each costs one small
//! object: callbacks are kept here rather than in a Python list of tuples, and the future
//! is untracked by Python's cycle collector (it can only be part of a cycle through a
//! callback, and callbacks are dropped when the batch ends). Measured with per-message
//! callbacks at 100 B, the collector's passes over the objects a producer keeps alive
//! cost more than encoding the messages.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use rmqnet::client::StoredBatch;

use crate::send_result::PySendResult;

/// How long a wait sleeps before it checks for Ctrl-C.
const SIGNAL_CHECK: Duration = Duration::from_millis(100);

/// How a batch ended.
pub enum Answer {
    /// The broker stored it: where each message is.
    Stored(StoredBatch),
    /// The exception every future of the batch raises.
    Failed(Py<PyAny>),
}

#[derive(Default)]
struct OutcomeState {
    answer: Option<Answer>,
    /// Each future waiting (a `SendFuture` or a `SendBatchFuture`) and its callback.
    callbacks: Vec<(Py<PyAny>, Py<PyAny>)>,
}

/// How one batch ended, shared by the futures of its messages (or by the one
/// `SendBatchFuture` of a `send_batch` call, `send_batch_future.rs`).
pub struct BatchOutcome {
    topic: String,
    queue_id: i32,
    /// Where a failing callback is reported: the producer's logger, or (None)
    /// `sys.unraisablehook`.
    callback_log: Option<Py<PyAny>>,
    state: Mutex<OutcomeState>,
    finished: Condvar,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves the state whole (every update is one
    // assignment), so a poisoned lock is used as is.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl BatchOutcome {
    pub fn new(topic: &str, queue_id: i32, callback_log: Option<Py<PyAny>>) -> Arc<Self> {
        Arc::new(BatchOutcome {
            topic: topic.to_owned(),
            queue_id,
            callback_log,
            state: Mutex::new(OutcomeState::default()),
            finished: Condvar::new(),
        })
    }

    /// Resolve every future of the batch and call their callbacks (on this thread).
    pub fn finish(&self, py: Python<'_>, answer: Answer) {
        let callbacks = {
            let mut state = lock(&self.state);
            if state.answer.is_some() {
                return;
            }
            state.answer = Some(answer);
            std::mem::take(&mut state.callbacks)
        };
        self.finished.notify_all();
        for (future, callback) in callbacks {
            self.call_back(py, &callback, future);
        }
    }

    /// Resolve the batch as stored, without Python, unless a callback waits for it: then
    /// `stored` is handed back, for `finish` with the GIL.
    pub fn finish_stored(&self, stored: StoredBatch) -> Option<StoredBatch> {
        {
            let mut state = lock(&self.state);
            if state.answer.is_some() {
                return None;
            }
            if !state.callbacks.is_empty() {
                return Some(stored);
            }
            state.answer = Some(Answer::Stored(stored));
        }
        self.finished.notify_all();
        None
    }

    pub(crate) fn is_finished(&self) -> bool {
        lock(&self.state).answer.is_some()
    }

    /// Wait until the batch ends; `TimeoutError` if `timeout` (seconds) passes first.
    pub(crate) fn wait(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<()> {
        if self.is_finished() {
            return Ok(());
        }
        let deadline = match timeout {
            Some(seconds) if seconds.is_finite() => {
                Some(Instant::now() + Duration::from_secs_f64(seconds.max(0.0)))
            }
            _ => None,
        };
        loop {
            let slice = match deadline {
                Some(deadline) => deadline
                    .saturating_duration_since(Instant::now())
                    .min(SIGNAL_CHECK),
                None => SIGNAL_CHECK,
            };
            let finished = py.detach(|| {
                let state = lock(&self.state);
                let (state, _) = self
                    .finished
                    .wait_timeout_while(state, slice, |state| state.answer.is_none())
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                state.answer.is_some()
            });
            if finished {
                return Ok(());
            }
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                let seconds = timeout.unwrap_or_default();
                return Err(pyo3::exceptions::PyTimeoutError::new_err(format!(
                    "no answer from the broker within {seconds} s"
                )));
            }
            py.check_signals()?;
        }
    }

    /// As `concurrent.futures` does: a failing callback is logged and harms no other.
    fn call_back(&self, py: Python<'_>, callback: &Py<PyAny>, future: Py<PyAny>) {
        let Err(error) = callback.call1(py, (future,)) else {
            return;
        };
        let logged = self.callback_log.as_ref().map(|logger| {
            let kwargs = pyo3::types::PyDict::new(py);
            kwargs.set_item("exc_info", error.value(py))?;
            logger.call_method(
                py,
                "error",
                ("send callback %r failed", callback.bind(py)),
                Some(&kwargs),
            )
        });
        if !matches!(logged, Some(Ok(_))) {
            error.write_unraisable(py, Some(callback.bind(py)));
        }
    }

    /// Call `callback(future)` once the batch ends (at once if it has); `future` is the
    /// caller's future of this batch.
    pub(crate) fn add_callback(&self, future: Bound<'_, PyAny>, callback: Py<PyAny>) {
        let py = future.py();
        {
            let mut state = lock(&self.state);
            if state.answer.is_none() {
                state.callbacks.push((future.unbind(), callback));
                return;
            }
        }
        self.call_back(py, &callback, future.unbind());
    }

    /// Where messages `start..start + count` were stored, in order; None unless the
    /// batch was stored with an answer for each.
    pub(crate) fn stored_results(&self, start: usize, count: usize) -> Option<Vec<PySendResult>> {
        match &lock(&self.state).answer {
            Some(Answer::Stored(batch)) => (start..start + count)
                .map(|index| {
                    let response = &batch.columns;
                    Some(PySendResult {
                        topic: self.topic.clone(),
                        queue_id: self.queue_id,
                        queue_offset: *response.queue_offsets.get(index)?,
                        msg_id: batch.msg_id(index)?,
                        commitlog_offset: *response.commitlog_offsets.get(index)?,
                        store_timestamp: *response.store_timestamps.get(index)?,
                    })
                })
                .collect(),
            _ => None,
        }
    }

    pub(crate) fn describe(&self) -> String {
        format!("{}/{}", self.topic, self.queue_id)
    }

    /// The exception the batch failed with, if it did.
    pub(crate) fn error(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        match &lock(&self.state).answer {
            Some(Answer::Failed(error)) => Some(error.clone_ref(py)),
            _ => None,
        }
    }

    /// Where the `index`th message was stored: (msg id, queue offset, commit log
    /// offset, store timestamp); None unless the batch was stored.
    fn stored(&self, index: usize) -> Option<(String, i64, i64, i64)> {
        match &lock(&self.state).answer {
            Some(Answer::Stored(batch)) => Some((
                batch.msg_id(index)?,
                *batch.columns.queue_offsets.get(index)?,
                *batch.columns.commitlog_offsets.get(index)?,
                *batch.columns.store_timestamps.get(index)?,
            )),
            _ => None,
        }
    }
}

/// The pending result of one `Producer.send`.
#[pyclass(frozen, module = "rmq._rmqcore", name = "SendFuture")]
pub struct PySendFuture {
    outcome: Arc<BatchOutcome>,
    index: usize,
}

impl PySendFuture {
    /// The future of the `index`th message of the batch that ends in `outcome`.
    pub fn create(py: Python<'_>, outcome: Arc<BatchOutcome>, index: usize) -> PyResult<Py<Self>> {
        let future = Py::new(py, PySendFuture { outcome, index })?;
        // SAFETY: `future` is a live object of a type with the GC flag; untracking it only
        // keeps it out of the collector's lists (see the module comment), and PyO3's
        // deallocator untracks again, which is allowed.
        unsafe { pyo3::ffi::PyObject_GC_UnTrack(future.as_ptr().cast()) };
        Ok(future)
    }
}

#[pymethods]
impl PySendFuture {
    fn done(&self) -> bool {
        self.outcome.is_finished()
    }

    fn running(&self) -> bool {
        !self.outcome.is_finished()
    }

    /// A queued send cannot be taken back: always False.
    fn cancel(&self) -> bool {
        false
    }

    fn cancelled(&self) -> bool {
        false
    }

    /// Where the broker stored the message; raises what the send failed with, or
    /// `TimeoutError` if `timeout` seconds pass first.
    #[pyo3(signature = (timeout=None))]
    fn result(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<PySendResult> {
        self.outcome.wait(py, timeout)?;
        if let Some(error) = self.outcome.error(py) {
            return Err(PyErr::from_value(error.into_bound(py)));
        }
        // The sender checked that a stored batch has one answer per message.
        let (msg_id, queue_offset, commitlog_offset, store_timestamp) = self
            .outcome
            .stored(self.index)
            .expect("a finished batch that did not fail has an answer per message");
        Ok(PySendResult {
            topic: self.outcome.topic.clone(),
            queue_id: self.outcome.queue_id,
            queue_offset,
            msg_id,
            commitlog_offset,
            store_timestamp,
        })
    }

    /// The exception the send failed with, or None once it succeeded.
    #[pyo3(signature = (timeout=None))]
    fn exception(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Option<Py<PyAny>>> {
        self.outcome.wait(py, timeout)?;
        Ok(self.outcome.error(py))
    }

    /// Call `callback(future)` once the send has a result (at once if it has).
    fn add_done_callback(slf: Bound<'_, Self>, callback: Py<PyAny>) {
        let outcome = Arc::clone(&slf.get().outcome);
        outcome.add_callback(slf.into_any(), callback);
    }

    fn __repr__(&self) -> String {
        let state = if self.outcome.is_finished() {
            "finished"
        } else {
            "pending"
        };
        format!(
            "<SendFuture {}/{} #{} {}>",
            self.outcome.topic, self.outcome.queue_id, self.index, state
        )
    }
}
