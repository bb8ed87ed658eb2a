//! `rmq._rmqcore.ProducerCore`: the Python face of `rmqnet::client`, the producer's core.
//!
//! `send` runs once per message: choose the queue, encode the message into its queue's
//! open batch, hand back a `SendFuture`. Everything after that (batching, sending,
//! retries, the next batch of a queue as soon as its answer comes) is `rmqnet::client`'s,
//! on its own threads. The Python `rmq.client.Producer` subclasses this to push routes in
//! as data when the core asks for them (`_routes_wanted`, `_set_route`,
//! `_route_failed`); nothing here calls into Python except the futures' callbacks.
//!
//! Lock order: the GIL, then the core's lock, then `route_failures`. Nothing holding the
//! core's lock calls into Python; waits release the GIL first.
//!
//! The methods are grouped by who calls them: the application (`send.rs` and here), the
//! route thread and the start and stop of the sender (`sending.rs`); `resolve.rs` turns
//! the sender's outcomes into the futures' results.

mod resolve;
mod send;
mod send_batch;
mod sending;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use rmqnet::client::encode::request_head;
use rmqnet::client::{Limits, RetryPolicy, State};

use crate::send_future::BatchOutcome;

type Core = rmqnet::client::Core<Arc<BatchOutcome>>;

/// How long a wait sleeps before it checks for Ctrl-C.
const SIGNAL_CHECK: Duration = Duration::from_millis(100);

/// The producer's core; see the module comment. Thread-safe.
#[pyclass(frozen, subclass, module = "rmq._rmqcore", name = "ProducerCore")]
pub struct PyProducerCore {
    core: Arc<Core>,
    /// The sender and the thread resolving its outcomes, between `_start` and `_stop`.
    running: Mutex<Option<sending::Running>>,
    /// The error of each topic's last failed route lookup, for the sends waiting for it.
    route_failures: Mutex<HashMap<String, Py<PyAny>>>,
    /// The logger a failing send callback is reported to (`_configure`'s `callback_log`).
    callback_log: Mutex<Option<Py<PyAny>>>,
}

fn seconds(value: f64, argument: &str) -> PyResult<Duration> {
    Duration::try_from_secs_f64(value)
        .map_err(|_| PyTypeError::new_err(format!("{argument} must be a non-negative number")))
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl PyProducerCore {
    /// The outcome of a new batch of `topic`'s queue `queue_id`.
    fn new_outcome(&self, py: Python<'_>, topic: &str, queue_id: i32) -> Arc<BatchOutcome> {
        let log = lock(&self.callback_log)
            .as_ref()
            .map(|log| log.clone_ref(py));
        BatchOutcome::new(topic, queue_id, log)
    }

    /// Wait, without the GIL, until `done(state)` holds (true) or `deadline` passes
    /// (false). The GIL is taken back only to check for Ctrl-C now and then.
    fn wait_until(
        &self,
        py: Python<'_>,
        deadline: Option<Instant>,
        done: impl Fn(&State<Arc<BatchOutcome>>) -> bool + Send + Sync,
    ) -> PyResult<bool> {
        loop {
            let slice = Instant::now() + SIGNAL_CHECK;
            let until = deadline.map_or(slice, |deadline| deadline.min(slice));
            if py.detach(|| self.core.wait_until(until, &done)) {
                return Ok(true);
            }
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                return Ok(false);
            }
            py.check_signals()?;
        }
    }
}

#[pymethods]
impl PyProducerCore {
    #[new]
    #[pyo3(signature = (*_args, **_kwargs))]
    fn new(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyAny>>) -> Self {
        PyProducerCore {
            core: Arc::new(Core::default()),
            running: Mutex::new(None),
            route_failures: Mutex::new(HashMap::new()),
            callback_log: Mutex::new(None),
        }
    }

    /// Set the batching limits (`linger` in seconds), how long a batch refused with a
    /// retryable status is retried (`retry_timeout`, seconds) and the `logging.Logger` a
    /// failing send callback is reported to (without one, `sys.unraisablehook`); the
    /// subclass calls this first.
    #[pyo3(signature = (*, batch_max_messages, batch_max_bytes, linger, max_buffered_bytes, max_buffered_messages, retry_timeout=30.0, callback_log=None))]
    #[allow(clippy::too_many_arguments)]
    fn _configure(
        &self,
        batch_max_messages: usize,
        batch_max_bytes: usize,
        linger: f64,
        max_buffered_bytes: usize,
        max_buffered_messages: usize,
        retry_timeout: f64,
        callback_log: Option<Py<PyAny>>,
    ) -> PyResult<()> {
        *lock(&self.callback_log) = callback_log;
        let linger = seconds(linger, "linger")?;
        let retry_timeout = seconds(retry_timeout, "retry_timeout")?;
        self.core.update(|state| {
            state.limits = Limits {
                batch_max_messages,
                batch_max_bytes,
                linger,
                max_buffered_bytes,
                max_buffered_messages,
            };
            state.retry = RetryPolicy {
                timeout: retry_timeout,
                ..RetryPolicy::default()
            };
        });
        Ok(())
    }

    /// Send everything queued now and wait until each has a result; False on timeout.
    #[pyo3(signature = (timeout=None))]
    fn flush(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        let deadline = timeout
            .map(|timeout| seconds(timeout.max(0.0), "timeout"))
            .transpose()?
            .map(|timeout| Instant::now() + timeout);
        self.core.begin_flush();
        let result = self.wait_until(py, deadline, |state| state.pending == 0);
        self.core.end_flush();
        result
    }

    /// Whether `close` began.
    #[getter]
    fn closed(&self) -> bool {
        self.core.lock().closed
    }

    /// Messages sent whose result is not known yet.
    #[getter]
    fn pending(&self) -> usize {
        self.core.lock().pending
    }

    /// Make every queued batch due at once, and retries fail rather than wait.
    fn _close(&self) {
        self.core.update(|state| state.closed = true);
    }

    /// Send batches at once while a caller waits for one (`send_sync`).
    fn _begin_flush(&self) {
        self.core.begin_flush();
    }

    fn _end_flush(&self) {
        self.core.end_flush();
    }

    /// The `rmq.v1.SendRequest` that the open (last) batch of a queue would send, or
    /// None when the queue has no batch waiting: what the producer encoded, to check it.
    fn _open_batch<'py>(
        &self,
        py: Python<'py>,
        topic: &str,
        queue_id: i32,
    ) -> Option<Bound<'py, PyBytes>> {
        let messages = self.core.open_batch(&(topic.to_owned(), queue_id))?;
        let mut request = request_head(topic, queue_id);
        request.extend_from_slice(&messages);
        Some(PyBytes::new(py, &request))
    }
}
