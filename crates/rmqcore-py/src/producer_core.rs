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

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString, PyTuple};

use crate::native_sender::NativeSender;
use crate::send_future::{Answer, BatchOutcome, PySendFuture};
use crate::send_request_encoding::{encode_request, property_entries, put_message, strings};

/// Bytes counted per message besides its body (keys, tags, framing), for the limits.
const MESSAGE_OVERHEAD: usize = 64;
/// The shortest sleep of the sender thread while a batch lingers.
const MIN_WAKE: Duration = Duration::from_micros(500);
/// How long a wait sleeps before it checks for Ctrl-C.
const SIGNAL_CHECK: Duration = Duration::from_millis(100);

pub(crate) type QueueKey = (String, i32);

/// Messages for one queue, encoded as one `SendRequest`'s `messages` fields.
pub(crate) struct Batch {
    pub(crate) topic: String,
    pub(crate) queue_id: i32,
    pub(crate) messages: Vec<u8>,
    pub(crate) count: usize,
    bytes: usize,
    created: Instant,
    pub(crate) first_sent: Option<Instant>,
    refresh_route: bool,
    /// Its queue was freed for the next batch (`_release`) before its futures resolved.
    pub(crate) released: bool,
    outcome: Arc<BatchOutcome>,
}

impl Batch {
    fn new(key: &QueueKey) -> Self {
        Batch {
            topic: key.0.clone(),
            queue_id: key.1,
            messages: Vec::new(),
            count: 0,
            bytes: 0,
            created: Instant::now(),
            first_sent: None,
            refresh_route: false,
            released: false,
            outcome: BatchOutcome::new(&key.0, key.1),
        }
    }

    pub(crate) fn key(&self) -> QueueKey {
        (self.topic.clone(), self.queue_id)
    }
}

#[derive(Clone, Copy)]
struct Limits {
    batch_max_messages: usize,
    batch_max_bytes: usize,
    linger: Duration,
    max_buffered_bytes: usize,
    max_buffered_messages: usize,
}

impl Limits {
    /// Whether one more message of `size` must wait for answers to come back first.
    fn must_wait(&self, state: &State, size: usize) -> bool {
        state.pending > 0
            && (state.buffered + size > self.max_buffered_bytes
                || state.pending >= self.max_buffered_messages)
    }

    fn full(&self, batch: &Batch, extra: usize) -> bool {
        batch.count >= self.batch_max_messages
            || (batch.count > 0 && batch.bytes + extra > self.batch_max_bytes)
    }
}

struct State {
    limits: Limits,
    /// Batches not yet sent, oldest first, per queue.
    waiting: HashMap<QueueKey, VecDeque<Batch>>,
    /// Queues with a batch in flight (at most one each, so a queue keeps its order).
    inflight: HashSet<QueueKey>,
    /// Batches to send again, and when.
    retries: HashMap<QueueKey, (Batch, Instant)>,
    buffered: usize,
    pending: usize,
    flushing: usize,
    closed: bool,
    next_queue: HashMap<String, u64>,
    queue_counts: HashMap<String, usize>,
}

impl State {
    /// Whether a queue's first waiting batch should leave now, if nothing is in flight.
    fn ready(&self, batches: &VecDeque<Batch>, now: Instant) -> bool {
        let Some(batch) = batches.front() else {
            return false;
        };
        self.flushing > 0
            || self.closed
            || batches.len() > 1
            || self.limits.full(batch, 0)
            || now.duration_since(batch.created) >= self.limits.linger
    }

    /// Take a queue's first waiting batch to send it.
    fn take_next(&mut self, key: &QueueKey) -> Option<Batch> {
        let batches = self.waiting.get_mut(key)?;
        let batch = batches.pop_front()?;
        if batches.is_empty() {
            self.waiting.remove(key);
        }
        self.inflight.insert(key.clone());
        Some(batch)
    }

    /// Batches to send now, or when to look again (None: when something changes).
    fn due(&mut self, now: Instant) -> (Vec<Batch>, Option<Instant>) {
        let mut due = Vec::new();
        let mut wake: Option<Instant> = None;
        let closed = self.closed;
        let retry_keys: Vec<QueueKey> = self
            .retries
            .iter()
            .filter_map(|(key, (_, at))| {
                if now >= *at || closed {
                    Some(key.clone())
                } else {
                    wake = Some(wake.map_or(*at, |wake| wake.min(*at)));
                    None
                }
            })
            .collect();
        for key in retry_keys {
            if let Some((batch, _)) = self.retries.remove(&key) {
                due.push(batch);
            }
        }
        let mut ready_keys = Vec::new();
        for (key, batches) in &self.waiting {
            if self.inflight.contains(key) {
                continue;
            }
            if self.ready(batches, now) {
                ready_keys.push(key.clone());
            } else if let Some(batch) = batches.front() {
                let at = batch.created + self.limits.linger;
                wake = Some(wake.map_or(at, |wake| wake.min(at)));
            }
        }
        for key in ready_keys {
            due.extend(self.take_next(&key));
        }
        (due, wake)
    }

    fn idle(&self) -> bool {
        self.waiting.is_empty() && self.inflight.is_empty() && self.retries.is_empty()
    }
}

/// One batch on its way to the broker, as the Python side sees it.
#[pyclass(module = "rmq._rmqcore", name = "OutgoingBatch")]
pub struct PyOutgoingBatch {
    batch: Option<Batch>,
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

fn handed_back() -> PyErr {
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

/// The producer's batching state; see the module comment. Thread-safe.
#[pyclass(frozen, subclass, module = "rmq._rmqcore", name = "ProducerCore")]
pub struct PyProducerCore {
    core: Arc<Core>,
    /// Sends batches over the binding's own connections (`native_sender.rs`), once the
    /// subclass asked for it with `_use_native`.
    native: Mutex<Option<NativeSender>>,
}

/// The batching state and its condition variable, shared with the native sender's
/// threads.
pub struct Core {
    state: Mutex<State>,
    changed: Condvar,
}

impl std::ops::Deref for PyProducerCore {
    type Target = Core;

    fn deref(&self) -> &Core {
        &self.core
    }
}

fn lock(mutex: &Mutex<State>) -> MutexGuard<'_, State> {
    // Every update finishes before anything that could panic, so a poisoned lock holds
    // whole state.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn seconds(value: f64, argument: &str) -> PyResult<Duration> {
    Duration::try_from_secs_f64(value)
        .map_err(|_| PyTypeError::new_err(format!("{argument} must be a non-negative number")))
}

impl Core {
    pub(crate) fn notify(&self) {
        self.changed.notify_all();
    }

    /// The broker answered the batch of queue `key`: free the queue and, with
    /// `take_next`, take its next batch if it is ready to be sent now.
    pub(crate) fn release(&self, key: &QueueKey, take_next: bool) -> Option<Batch> {
        let following = {
            let mut state = lock(&self.state);
            state.inflight.remove(key);
            let now = Instant::now();
            if take_next
                && !state.retries.contains_key(key)
                && state.waiting.get(key).is_some_and(|batches| {
                    batches.front().is_some_and(|next| !next.refresh_route)
                        && state.ready(batches, now)
                })
            {
                state.take_next(key)
            } else {
                None
            }
        };
        self.notify();
        following
    }

    /// Resolve the batch's futures (running their callbacks), then take it off the
    /// books, freeing its queue unless `release` already did.
    pub(crate) fn finish(&self, py: Python<'_>, batch: Batch, answer: Answer) {
        batch.outcome.finish(py, answer);
        {
            let mut state = lock(&self.state);
            if !batch.released {
                // Released, the queue may already have its next batch in flight.
                state.inflight.remove(&batch.key());
            }
            state.buffered -= batch.bytes;
            state.pending -= batch.count;
        }
        self.notify();
        // The batch (its outcome, with Python objects) is dropped here, after the lock.
        drop(batch);
    }

    /// Wait, without the GIL, until `done(state)` holds (true) or `deadline` passes
    /// (false). The GIL is taken back only to check for Ctrl-C now and then: a thread
    /// woken for every change would take it from the application's thread each time.
    fn wait_until(
        &self,
        py: Python<'_>,
        deadline: Option<Instant>,
        done: impl Fn(&State) -> bool + Send + Sync,
    ) -> PyResult<bool> {
        loop {
            let finished = py.detach(|| {
                let until = Instant::now() + SIGNAL_CHECK;
                let until = deadline.map_or(until, |deadline| deadline.min(until));
                let mut state = lock(&self.state);
                loop {
                    if done(&state) {
                        return Some(true);
                    }
                    let now = Instant::now();
                    if now >= until {
                        return deadline.filter(|deadline| now >= *deadline).map(|_| false);
                    }
                    state = self
                        .changed
                        .wait_timeout(state, until - now)
                        .unwrap_or_else(|poisoned| poisoned.into_inner())
                        .0;
                }
            });
            if let Some(finished) = finished {
                return Ok(finished);
            }
            py.check_signals()?;
        }
    }
}

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
    #[new]
    #[pyo3(signature = (*_args, **_kwargs))]
    fn new(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyAny>>) -> Self {
        PyProducerCore {
            core: Arc::new(Core {
                state: Mutex::new(State {
                    limits: Limits {
                        batch_max_messages: 2048,
                        batch_max_bytes: 1024 * 1024,
                        linger: Duration::from_millis(5),
                        max_buffered_bytes: 1024 * 1024,
                        max_buffered_messages: 2048,
                    },
                    waiting: HashMap::new(),
                    inflight: HashSet::new(),
                    retries: HashMap::new(),
                    buffered: 0,
                    pending: 0,
                    flushing: 0,
                    closed: false,
                    next_queue: HashMap::new(),
                    queue_counts: HashMap::new(),
                }),
                changed: Condvar::new(),
            }),
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

    /// From now on send batches over the binding's own HTTP/2 connections (plaintext)
    /// rather than through the subclass: each call is bounded by `timeout` seconds and
    /// carries `metadata`. A batch the shard refuses, or whose call fails, goes back to
    /// the subclass's `_native_refused(batch, code, message)`.
    #[pyo3(signature = (*, timeout, metadata))]
    fn _use_native(
        slf: &Bound<'_, Self>,
        timeout: f64,
        metadata: Vec<(String, String)>,
    ) -> PyResult<()> {
        let timeout = seconds(timeout, "timeout")?;
        let mut native = slf
            .get()
            .native
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if native.is_some() {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(
                "the producer already sends natively; stop that first",
            ));
        }
        let sender = NativeSender::start(
            Arc::clone(&slf.get().core),
            slf.clone().into_any().unbind(),
            timeout,
            &metadata,
        )
        .map_err(pyo3::exceptions::PyValueError::new_err)?;
        *native = Some(sender);
        Ok(())
    }

    /// Send `batches` (all for the shard at `endpoint`) in one SendBatches call over the
    /// native connections.
    fn _send_native(
        &self,
        py: Python<'_>,
        endpoint: String,
        batches: Vec<Bound<'_, PyOutgoingBatch>>,
    ) -> PyResult<()> {
        if batches.iter().any(|batch| batch.borrow().batch.is_none()) {
            return Err(handed_back());
        }
        let native = self
            .native
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let Some(sender) = native.as_ref() else {
            return Err(crate::errors::rmq_error(
                py,
                "StoreClosedError",
                "the producer's native sender is stopped",
            ));
        };
        let taken = batches
            .iter()
            .filter_map(|batch| batch.borrow_mut().batch.take())
            .collect();
        sender.send(endpoint, taken);
        Ok(())
    }

    /// Stop the native sender: wait (without the GIL) up to `timeout` seconds for calls
    /// still in flight, then close its connections and threads.
    #[pyo3(signature = (timeout=None))]
    fn _stop_native(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<()> {
        let timeout = timeout
            .map(|timeout| seconds(timeout.max(0.0), "timeout"))
            .transpose()?;
        let sender = self
            .native
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(sender) = sender {
            py.detach(|| sender.stop(timeout));
        }
        Ok(())
    }
}
