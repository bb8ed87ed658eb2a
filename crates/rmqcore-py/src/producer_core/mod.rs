//! `rmq._rmqcore.ProducerCore`: the producer's per-message work, under one lock.
//!
//! `send` runs once per message, and in Python its queue choice, batching, byte
//! accounting and future cost about four times the encoding itself. Here it is one call:
//! choose the queue, encode the message into its queue's open batch, count its bytes,
//! hand back a `SendFuture`. The Python `rmq.client.Producer` subclasses this and keeps
//! what happens once per batch: routes, retries, the sender thread. It provides three
//! hooks: `_queue_count(topic)` (the route's queue count, or the `BrokerError` that
//! stopped the lookup), `_dispatch(batch)` (send one `OutgoingBatch`), and, for batches
//! sent with `_send_native` (`native_sender.rs`), `_native_refused(batch, code,
//! message)`; it runs the sender thread around `_take_due`.
//!
//! Lock order: the GIL, then this lock. Nothing holding the lock calls into Python or
//! drops a Python object (which could run arbitrary code); waits release the GIL first.
//!
//! The state and its lock are in `batching.rs`; the methods Python calls are grouped by
//! who calls them: the application (`send.rs` and here), the sender thread
//! (`sender_thread.rs`), the native sender's switch (`native.rs`); `outgoing_batch.rs`
//! is the batch the Python side holds.

mod batching;
mod native;
mod outgoing_batch;
mod send;
mod sender_thread;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::native_sender::NativeSender;

use batching::{lock, Limits};
pub(crate) use batching::{Batch, Core};
pub use outgoing_batch::PyOutgoingBatch;

/// The producer's batching state; see the module comment. Thread-safe.
#[pyclass(frozen, subclass, module = "rmq._rmqcore", name = "ProducerCore")]
pub struct PyProducerCore {
    core: Arc<Core>,
    /// Sends batches over the binding's own connections (`native_sender.rs`), once the
    /// subclass asked for it with `_use_native`.
    native: Mutex<Option<NativeSender>>,
}

impl std::ops::Deref for PyProducerCore {
    type Target = Core;

    fn deref(&self) -> &Core {
        &self.core
    }
}

fn seconds(value: f64, argument: &str) -> PyResult<Duration> {
    Duration::try_from_secs_f64(value)
        .map_err(|_| PyTypeError::new_err(format!("{argument} must be a non-negative number")))
}

#[pymethods]
impl PyProducerCore {
    #[new]
    #[pyo3(signature = (*_args, **_kwargs))]
    fn new(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyAny>>) -> Self {
        PyProducerCore {
            core: Arc::new(Core::new()),
            native: Mutex::new(None),
        }
    }

    /// Set the batching limits (`linger` in seconds); the subclass calls this first.
    #[pyo3(signature = (*, batch_max_messages, batch_max_bytes, linger, max_buffered_bytes, max_buffered_messages))]
    fn _configure(
        &self,
        batch_max_messages: usize,
        batch_max_bytes: usize,
        linger: f64,
        max_buffered_bytes: usize,
        max_buffered_messages: usize,
    ) -> PyResult<()> {
        let linger = seconds(linger, "linger")?;
        let mut state = lock(&self.state);
        state.limits = Limits {
            batch_max_messages,
            batch_max_bytes,
            linger,
            max_buffered_bytes,
            max_buffered_messages,
        };
        Ok(())
    }

    /// Send everything queued now and wait until each has a result; False on timeout.
    #[pyo3(signature = (timeout=None))]
    fn flush(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        let deadline = timeout
            .map(|timeout| seconds(timeout.max(0.0), "timeout"))
            .transpose()?
            .map(|timeout| Instant::now() + timeout);
        lock(&self.state).flushing += 1;
        self.notify();
        let result = self.wait_until(py, deadline, |state| state.pending == 0);
        lock(&self.state).flushing -= 1;
        result
    }

    /// Whether `close` began.
    #[getter]
    fn closed(&self) -> bool {
        lock(&self.state).closed
    }

    /// Messages sent whose result is not known yet.
    #[getter]
    fn pending(&self) -> usize {
        lock(&self.state).pending
    }

    /// Make every queued batch due at once, and retries fail rather than wait.
    fn _close(&self) {
        lock(&self.state).closed = true;
        self.notify();
    }

    /// Send batches at once while a caller waits for one (`send_sync`).
    fn _begin_flush(&self) {
        lock(&self.state).flushing += 1;
        self.notify();
    }

    fn _end_flush(&self) {
        lock(&self.state).flushing -= 1;
    }

    /// Remember a topic's queue count (after a route lookup).
    fn _set_queue_count(&self, topic: &str, count: usize) {
        lock(&self.state)
            .queue_counts
            .insert(topic.to_owned(), count);
    }
}
