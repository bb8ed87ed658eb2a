//! `ProducerCore.send`, the one call per message: the queue choice (from the routes
//! pushed in; a sharding key's CRC or round robin), its keys and properties read before
//! the core's lock is taken (reading them runs Python), the wait for room when the
//! buffer limits are reached, then its encoding into the queue's open batch. A batch
//! that this message fills is sent from here rather than left to the sender thread: a
//! hand-off between threads costs more than the send.

use std::cell::RefCell;
use std::sync::Arc;
use std::time::Instant;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use rmqnet::client::encode::put_message;

use crate::message_fields::{property_entries, strings};
use crate::send_future::{Answer, PySendFuture};

use super::{lock, PyProducerCore};

/// Bytes counted per message besides its body (keys, tags, framing), for the limits.
pub(super) const MESSAGE_OVERHEAD: usize = 64;

thread_local! {
    /// A message's encoding, reused by every send on its thread: the push copies it into
    /// its batch at once, so a buffer per message would only be allocated and freed.
    static ENCODED: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

impl PyProducerCore {
    /// The queue for a message, or the error that kept the topic's route from being
    /// known. A topic with no route yet is asked of the route thread, and waited for.
    pub(super) fn choose_queue(
        &self,
        py: Python<'_>,
        topic: &str,
        sharding_key: Option<&Bound<'_, PyAny>>,
        queue_id: Option<i32>,
    ) -> PyResult<Result<i32, Py<PyAny>>> {
        if let Some(queue_id) = queue_id {
            return Ok(Ok(queue_id));
        }
        let key = match sharding_key {
            None => None,
            Some(key) => Some(if let Ok(text) = key.cast::<PyString>() {
                text.to_str()?.as_bytes().to_vec()
            } else if let Ok(raw) = key.cast::<PyBytes>() {
                raw.as_bytes().to_vec()
            } else {
                return Err(PyTypeError::new_err("sharding_key must be str or bytes"));
            }),
        };
        loop {
            if let Some(queue) = self.core.lock().routes.choose_queue(topic, key.as_deref()) {
                return Ok(Ok(queue));
            }
            if let Some(error) = self.wait_for_route(py, topic)? {
                return Ok(Err(error));
            }
        }
    }

    /// Ask the route thread for `topic`'s route and wait until it is known (None) or its
    /// lookup failed (the error).
    fn wait_for_route(&self, py: Python<'_>, topic: &str) -> PyResult<Option<Py<PyAny>>> {
        let Some(timeout) = self.route_timeout() else {
            return Err(crate::errors::rmq_error(
                py,
                "StoreClosedError",
                "the producer is not sending",
            ));
        };
        lock(&self.route_failures).remove(topic);
        self.core.want_route(topic);
        let failed = |topic: &str| lock(&self.route_failures).contains_key(topic);
        // The route thread's lookup retries an unavailable broker for the retry timeout,
        // each call bounded by the call timeout: it answers within both.
        let timeout = timeout + self.core.lock().retry.timeout;
        let deadline = Instant::now() + timeout;
        let known = self.wait_until(py, Some(deadline), |state| {
            state.routes.queue_count(topic).is_some() || failed(topic)
        })?;
        if !known {
            let message = format!("no route for topic {topic:?} within {timeout:?}");
            return Err(crate::errors::broker_error(py, 14, message, None));
        }
        Ok(lock(&self.route_failures)
            .get(topic)
            .map(|error| error.clone_ref(py)))
    }
}

#[pymethods]
impl PyProducerCore {
    /// Queue one message; the future resolves once the broker stored it.
    #[pyo3(signature = (topic, body, *, tags=None, keys=None, properties=None, sharding_key=None, queue_id=None))]
    #[allow(clippy::too_many_arguments)]
    fn send(
        &self,
        py: Python<'_>,
        topic: &str,
        body: &[u8],
        tags: Option<&str>,
        keys: Option<&Bound<'_, PyAny>>,
        properties: Option<&Bound<'_, PyAny>>,
        sharding_key: Option<&Bound<'_, PyAny>>,
        queue_id: Option<i32>,
    ) -> PyResult<Py<PySendFuture>> {
        if self.core.lock().closed {
            return Err(crate::errors::rmq_error(
                py,
                "StoreClosedError",
                "the producer is closed",
            ));
        }
        let queue = match self.choose_queue(py, topic, sharding_key, queue_id)? {
            Ok(queue) => queue,
            Err(error) => {
                let failed = self.new_outcome(py, topic, queue_id.unwrap_or(-1));
                failed.finish(py, Answer::Failed(error));
                return PySendFuture::create(py, failed, 0);
            }
        };
        // Read before taking the lock: reading `keys` and `properties` runs Python.
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
        let size = body.len() + MESSAGE_OVERHEAD;
        if self.core.lock().must_wait(size, 1) {
            // Lingering batches leave at once while a send waits for room (as for a
            // flush): otherwise it would wait out their linger.
            self.core.begin_flush();
            let waited = self.wait_until(py, None, |state| state.room_after_wait(size, 1));
            self.core.end_flush();
            waited?;
        }
        // From here to the push nothing runs Python (the wait above may, through a signal
        // handler that sends), so this thread's encoding buffer is free.
        let key = (topic.to_owned(), queue);
        let push = |encoded: &mut Vec<u8>| {
            encoded.clear();
            put_message(
                encoded,
                body,
                tags,
                &key_strs,
                entries.as_deref().unwrap_or_default(),
            );
            self.core
                .push(&key, encoded, size, || self.new_outcome(py, topic, queue))
        };
        let pushed = ENCODED.with(|buffer| match buffer.try_borrow_mut() {
            Ok(mut encoded) => push(&mut encoded),
            Err(_) => push(&mut Vec::with_capacity(body.len() + 64)),
        });
        let future = PySendFuture::create(py, Arc::clone(&pushed.outcome), pushed.index)?;
        if let Some(batch) = pushed.ready {
            self.dispatch(batch);
        }
        Ok(future)
    }
}
