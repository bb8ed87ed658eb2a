//! The producer's books: the batches waiting per queue, the queues in flight, the retries
//! and the byte and message counts the limits bound, behind one mutex whose condition
//! variable wakes whoever waits on a change (the sender thread, a flush, a send held back
//! by the buffer limits). Kept apart from the Python methods because the native sender's
//! threads share it too (`Core`), and because every rule of when a batch leaves is here,
//! in plain Rust, with no Python in reach of the lock.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use pyo3::prelude::*;

use crate::send_future::{Answer, BatchOutcome};

/// How long a wait sleeps before it checks for Ctrl-C.
pub(super) const SIGNAL_CHECK: Duration = Duration::from_millis(100);

pub(crate) type QueueKey = (String, i32);

/// Messages for one queue, encoded as one `SendRequest`'s `messages` fields.
pub(crate) struct Batch {
    pub(crate) topic: String,
    pub(crate) queue_id: i32,
    pub(crate) messages: Vec<u8>,
    pub(crate) count: usize,
    pub(super) bytes: usize,
    created: Instant,
    pub(crate) first_sent: Option<Instant>,
    pub(super) refresh_route: bool,
    /// Its queue was freed for the next batch (`_release`) before its futures resolved.
    pub(crate) released: bool,
    pub(super) outcome: Arc<BatchOutcome>,
}

impl Batch {
    pub(super) fn new(key: &QueueKey) -> Self {
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
pub(super) struct Limits {
    pub(super) batch_max_messages: usize,
    pub(super) batch_max_bytes: usize,
    pub(super) linger: Duration,
    pub(super) max_buffered_bytes: usize,
    pub(super) max_buffered_messages: usize,
}

impl Limits {
    /// Whether one more message of `size` must wait for answers to come back first.
    pub(super) fn must_wait(&self, state: &State, size: usize) -> bool {
        state.pending > 0
            && (state.buffered + size > self.max_buffered_bytes
                || state.pending >= self.max_buffered_messages)
    }

    pub(super) fn full(&self, batch: &Batch, extra: usize) -> bool {
        batch.count >= self.batch_max_messages
            || (batch.count > 0 && batch.bytes + extra > self.batch_max_bytes)
    }
}

pub(super) struct State {
    pub(super) limits: Limits,
    /// Batches not yet sent, oldest first, per queue.
    pub(super) waiting: HashMap<QueueKey, VecDeque<Batch>>,
    /// Queues with a batch in flight (at most one each, so a queue keeps its order).
    pub(super) inflight: HashSet<QueueKey>,
    /// Batches to send again, and when.
    pub(super) retries: HashMap<QueueKey, (Batch, Instant)>,
    pub(super) buffered: usize,
    pub(super) pending: usize,
    pub(super) flushing: usize,
    pub(super) closed: bool,
    pub(super) next_queue: HashMap<String, u64>,
    pub(super) queue_counts: HashMap<String, usize>,
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
    pub(super) fn take_next(&mut self, key: &QueueKey) -> Option<Batch> {
        let batches = self.waiting.get_mut(key)?;
        let batch = batches.pop_front()?;
        if batches.is_empty() {
            self.waiting.remove(key);
        }
        self.inflight.insert(key.clone());
        Some(batch)
    }

    /// Batches to send now, or when to look again (None: when something changes).
    pub(super) fn due(&mut self, now: Instant) -> (Vec<Batch>, Option<Instant>) {
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

    pub(super) fn idle(&self) -> bool {
        self.waiting.is_empty() && self.inflight.is_empty() && self.retries.is_empty()
    }
}

/// The batching state and its condition variable, shared with the native sender's
/// threads.
pub struct Core {
    pub(super) state: Mutex<State>,
    pub(super) changed: Condvar,
}

pub(super) fn lock(mutex: &Mutex<State>) -> MutexGuard<'_, State> {
    // Every update finishes before anything that could panic, so a poisoned lock holds
    // whole state.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Core {
    /// An empty producer with the default limits, until `_configure` sets them.
    pub(super) fn new() -> Self {
        Core {
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
        }
    }

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
    pub(super) fn wait_until(
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
