//! `ProducerCore.send`, the one call per message: the queue choice (the route's queue
//! count, cached; a sharding key's CRC or round robin), the message's encoding before the
//! lock is taken (reading its keys and properties runs Python), then, under the lock, its
//! place in the queue's open batch, and the wait for room when the buffer limits are
//! reached. A batch that this message fills is dispatched from here rather than left to
//! the sender thread: under the GIL every hand-off between threads costs more than the
//! send.

use std::sync::Arc;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::send_future::{Answer, BatchOutcome, PySendFuture};
use crate::send_request_encoding::{property_entries, put_message, strings};

use super::batching::{lock, Batch, QueueKey};
use super::{PyOutgoingBatch, PyProducerCore};

/// Bytes counted per message besides its body (keys, tags, framing), for the limits.
const MESSAGE_OVERHEAD: usize = 64;

impl PyProducerCore {
    /// The queue for a message, or the error that kept the route from being known.
    fn choose_queue(
        slf: &Bound<'_, Self>,
        topic: &str,
        sharding_key: Option<&Bound<'_, PyAny>>,
        queue_id: Option<i32>,
    ) -> PyResult<Result<i32, Py<PyAny>>> {
        if let Some(queue_id) = queue_id {
            return Ok(Ok(queue_id));
        }
        let known = lock(&slf.get().state).queue_counts.get(topic).copied();
        let count = match known {
            Some(count) => count,
            None => {
                let answer = slf.call_method1("_queue_count", (topic,))?;
                let Ok(count) = answer.extract::<usize>() else {
                    return Ok(Err(answer.unbind()));
                };
                lock(&slf.get().state)
                    .queue_counts
                    .insert(topic.to_owned(), count);
                count
            }
        };
        let count = count.max(1) as u64;
        let slot = match sharding_key {
            Some(key) => {
                let hash = if let Ok(text) = key.cast::<PyString>() {
                    crc32fast::hash(text.to_str()?.as_bytes())
                } else if let Ok(raw) = key.cast::<PyBytes>() {
                    crc32fast::hash(raw.as_bytes())
                } else {
                    return Err(PyTypeError::new_err("sharding_key must be str or bytes"));
                };
                u64::from(hash) % count
            }
            None => {
                let mut state = lock(&slf.get().state);
                let next = state.next_queue.entry(topic.to_owned()).or_insert(0);
                let slot = *next % count;
                *next = next.wrapping_add(1);
                slot
            }
        };
        Ok(Ok(slot as i32))
    }
}
#[pymethods]
impl PyProducerCore {
    /// Queue one message; the future resolves once the broker stored it.
    #[pyo3(signature = (topic, body, *, tags=None, keys=None, properties=None, sharding_key=None, queue_id=None))]
    #[allow(clippy::too_many_arguments)]
    fn send(
        slf: &Bound<'_, Self>,
        topic: &str,
        body: &[u8],
        tags: Option<&str>,
        keys: Option<&Bound<'_, PyAny>>,
        properties: Option<&Bound<'_, PyAny>>,
        sharding_key: Option<&Bound<'_, PyAny>>,
        queue_id: Option<i32>,
    ) -> PyResult<Py<PySendFuture>> {
        let py = slf.py();
        let core = slf.get();
        if lock(&core.state).closed {
            return Err(crate::errors::rmq_error(
                py,
                "StoreClosedError",
                "the producer is closed",
            ));
        }
        let queue = match Self::choose_queue(slf, topic, sharding_key, queue_id)? {
            Ok(queue) => queue,
            Err(error) => {
                let failed = BatchOutcome::new(topic, queue_id.unwrap_or(-1));
                failed.finish(py, Answer::Failed(error));
                return PySendFuture::create(py, failed, 0);
            }
        };
        // Encoded before taking the lock: reading `keys` and `properties` runs Python.
        let key_objects = match keys {
            Some(keys) if keys.is_instance_of::<PyString>() => {
                vec![keys.cast::<PyString>()?.clone()]
            }
            Some(keys) => strings("keys", keys)?,
            None => Vec::new(),
        };
        let key_strs = key_objects
            .iter()
            .map(|key| key.to_str())
            .collect::<PyResult<Vec<&str>>>()?;
        let entries = properties.map(property_entries).transpose()?;
        let mut encoded = Vec::with_capacity(body.len() + 64);
        put_message(
            &mut encoded,
            body,
            tags,
            &key_strs,
            entries.as_deref().unwrap_or_default(),
        );
        let size = body.len() + MESSAGE_OVERHEAD;
        let key: QueueKey = (topic.to_owned(), queue);

        let (outcome, index, ready) = {
            let mut guard = lock(&core.state);
            if guard.limits.must_wait(&guard, size) {
                // Lingering batches leave at once while a send waits for room (as for a
                // flush): otherwise it would wait out their linger.
                guard.flushing += 1;
                drop(guard);
                core.notify();
                let waited =
                    core.wait_until(py, None, |state| !state.limits.must_wait(state, size));
                guard = lock(&core.state);
                guard.flushing -= 1;
                waited?;
            }
            let limits = guard.limits;
            let state = &mut *guard;
            let batches = state.waiting.entry(key.clone()).or_default();
            let open = batches
                .back()
                .is_some_and(|batch| !limits.full(batch, size));
            if !open {
                batches.push_back(Batch::new(&key));
                // The sender thread schedules its linger.
                core.notify();
            }
            let batch = batches.back_mut().expect("a batch was just opened");
            batch.messages.extend_from_slice(&encoded);
            let index = batch.count;
            batch.count += 1;
            batch.bytes += size;
            let outcome = Arc::clone(&batch.outcome);
            let now_full =
                batch.count >= limits.batch_max_messages || batch.bytes > limits.batch_max_bytes;
            state.buffered += size;
            state.pending += 1;
            let mut ready = None;
            if now_full {
                let first = state
                    .waiting
                    .get(&key)
                    .is_some_and(|batches| batches.len() == 1);
                if first && !state.inflight.contains(&key) {
                    // Sent from here rather than handed to the sender thread: under the GIL
                    // every hand-off between threads costs more than the send.
                    ready = state.take_next(&key);
                } else {
                    core.notify();
                }
            }
            (outcome, index, ready)
        };
        let future = PySendFuture::create(py, outcome, index)?;
        if let Some(batch) = ready {
            let batch = Py::new(py, PyOutgoingBatch { batch: Some(batch) })?;
            slf.call_method1("_dispatch", (batch,))?;
        }
        Ok(future)
    }
}
