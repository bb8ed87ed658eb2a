//! Sending a producer's batches with no Python between one batch of a queue and the next.
//!
//! A thread (`rmq-producer`) takes the batches the books say are due (linger over, a
//! flush, a retry) and sends them; a batch that `Core::push` filled is sent by the
//! caller at once (`dispatch`). Batches for one shard leave as one SendBatches call over
//! `channels.rs` connections. When the answer comes, on the runtime's thread: each stored
//! batch frees its queue and the batches now ready for those queues leave at once, in
//! one call to the same shard; a refused batch with a retryable code waits for a retry.
//! Only then do the answered batches go to the owner's channel as `Finished` values (for
//! the binding, to resolve their futures).
//!
//! A queue's outcomes arrive in the order of its batches: a queue has one batch in
//! flight, and its outcome is queued before the next batch is sent.
//!
//! A shard has at most `CALLS_PER_SHARD` calls in flight; batches due for a shard with
//! that many wait (`Held`) and leave together, with the batches its next answer frees,
//! when one of them is answered. Without the bound every `send_batch` batch went in a
//! call of its own (its queue is free when it comes, and an answer frees one queue), and
//! each call costs the client and the shard as much again: the HTTP/2 frames, the
//! syscalls, the wake-ups on both sides and the resolver's run. Two calls keep one
//! waiting at the shard while it stores the other.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Sender as Outcomes;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::runtime::{Handle, Runtime};

use super::batch::{Batch, Finished};
use super::books::Core;
use super::channels::{CallError, Framed, ShardChannels};
use super::encode::batches_request;
use super::outcome::{answers, code, SendOutcome};
use crate::grpc::{frame_in_place, FRAME_PREFIX};

const SEND_BATCHES: &str = "/rmq.v1.Shard/SendBatches";
/// Calls in flight to one shard at most (see the module comment).
const CALLS_PER_SHARD: usize = 2;
/// How long stopping waits for cancelled calls to be dropped.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(200);

struct Shared<O> {
    core: Arc<Core<O>>,
    channels: ShardChannels,
    handle: Handle,
    outcomes: Outcomes<Finished<O>>,
    /// Calls in flight, so that stopping can wait for them.
    calls: Mutex<usize>,
    /// Per shard endpoint: its calls in flight, and the batches held back for it.
    shards: Mutex<HashMap<String, Held<O>>>,
    /// Calls made since the start.
    calls_made: AtomicU64,
    calls_ended: Condvar,
}

/// One shard's calls in flight, and the batches waiting for one of them to be answered.
struct Held<O> {
    calls: usize,
    batches: Vec<Batch<O>>,
}

/// The runtime, connections and sender thread of one producer.
pub struct Sender<O> {
    shared: Arc<Shared<O>>,
    runtime: Runtime,
    thread: JoinHandle<()>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl<O: Clone + Send + 'static> Sender<O> {
    /// Start sending the batches of `core` over `channels`; every batch that ends goes
    /// to `outcomes`.
    pub fn start(
        core: Arc<Core<O>>,
        channels: ShardChannels,
        outcomes: Outcomes<Finished<O>>,
    ) -> Result<Self, String> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("rmq-send")
            .enable_all()
            .build()
            .map_err(|error| format!("cannot start the producer's sender: {error}"))?;
        // A producer restarted after `stop` sends again.
        core.update(|state| state.stopping = false);
        let shared = Arc::new(Shared {
            core,
            channels,
            handle: runtime.handle().clone(),
            outcomes,
            calls: Mutex::new(0),
            shards: Mutex::new(HashMap::new()),
            calls_made: AtomicU64::new(0),
            calls_ended: Condvar::new(),
        });
        let due = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("rmq-producer".into())
            .spawn(move || {
                while let Some(batches) = due.core.due() {
                    dispatch(&due, batches);
                }
            })
            .map_err(|error| format!("cannot start the producer's thread: {error}"))?;
        Ok(Sender {
            shared,
            runtime,
            thread,
        })
    }

    /// Send batches taken off the books (each queue's, at most one).
    pub fn dispatch(&self, batches: Vec<Batch<O>>) {
        dispatch(&self.shared, batches);
    }

    /// How many SendBatches calls the sender made (each carries every batch ready for
    /// one shard).
    pub fn calls_made(&self) -> u64 {
        self.shared.calls_made.load(Ordering::Relaxed)
    }

    /// Wait up to `timeout` (None: for ever) for every batch to end, then stop: calls
    /// still in flight fail as cancelled, batches not sent as `Closed`.
    pub fn stop(self, timeout: Option<Duration>) {
        let deadline = timeout.map(|timeout| Instant::now() + timeout);
        let core = &self.shared.core;
        while !core.wait_until(
            deadline.unwrap_or_else(|| Instant::now() + Duration::from_secs(1)),
            |state| state.idle(),
        ) {
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                break;
            }
        }
        let left = core.stop();
        let _ = self.thread.join();
        for batch in left {
            finish(&self.shared, batch, SendOutcome::Closed);
        }
        let mut calls = lock(&self.shared.calls);
        while *calls > 0 {
            let left = deadline.map(|deadline| deadline.saturating_duration_since(Instant::now()));
            if left == Some(Duration::ZERO) {
                break;
            }
            calls = self
                .shared
                .calls_ended
                .wait_timeout(calls, left.unwrap_or(Duration::from_secs(1)))
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
        }
        drop(calls);
        // Dropping the tasks of calls still in flight fails their batches (`InFlight`).
        self.runtime.shutdown_timeout(SHUTDOWN_GRACE);
    }
}

fn finish<O>(shared: &Shared<O>, batch: Batch<O>, outcome: SendOutcome) {
    // The receiver is gone only when the owner stopped listening: nothing to tell.
    let _ = shared.outcomes.send(Finished { batch, outcome });
}

fn dispatch<O: Clone + Send + 'static>(shared: &Arc<Shared<O>>, batches: Vec<Batch<O>>) {
    let (groups, failed) = shared.core.route(batches);
    for Finished { batch, outcome } in failed {
        finish(shared, batch, outcome);
    }
    for (endpoint, group) in groups {
        let send = {
            let mut shards = lock(&shared.shards);
            let shard = shards.entry(endpoint.clone()).or_insert_with(|| Held {
                calls: 0,
                batches: Vec::new(),
            });
            if shard.calls >= CALLS_PER_SHARD {
                shard.batches.extend(group);
                None
            } else {
                shard.calls += 1;
                Some(group)
            }
        };
        if let Some(group) = send {
            start_call(shared, endpoint, group);
        }
    }
}

/// A call to `endpoint` ended: the batches held back for the shard, which the caller
/// sends with those the answer freed.
fn call_ended<O>(shared: &Shared<O>, endpoint: &str) -> Vec<Batch<O>> {
    let mut shards = lock(&shared.shards);
    let Some(shard) = shards.get_mut(endpoint) else {
        return Vec::new();
    };
    shard.calls -= 1;
    std::mem::take(&mut shard.batches)
}

/// The batches of one call; dropped before the answer came (the sender stopped), they
/// fail as cancelled, and so do the batches held back for its shard.
struct InFlight<O> {
    shared: Arc<Shared<O>>,
    endpoint: String,
    batches: Vec<Batch<O>>,
    answered: bool,
}

impl<O> Drop for InFlight<O> {
    fn drop(&mut self) {
        let mut cancelled = std::mem::take(&mut self.batches);
        if !self.answered {
            cancelled.extend(call_ended(&self.shared, &self.endpoint));
        }
        for batch in cancelled {
            let message = "the producer closed before the broker answered";
            finish(
                &self.shared,
                batch,
                SendOutcome::refused(code::CANCELLED, message),
            );
        }
        *lock(&self.shared.calls) -= 1;
        self.shared.calls_ended.notify_all();
    }
}

fn start_call<O: Clone + Send + 'static>(
    shared: &Arc<Shared<O>>,
    endpoint: String,
    mut batches: Vec<Batch<O>>,
) {
    let alone = match batches.as_mut_slice() {
        [batch] => batch.alone_body(),
        _ => None,
    };
    let body = Framed(alone.unwrap_or_else(|| {
        let parts = batches
            .iter()
            .map(|batch| (batch.topic.as_str(), batch.queue_id, batch.encoded()));
        frame_in_place(batches_request(FRAME_PREFIX, parts))
    }));
    *lock(&shared.calls) += 1;
    shared.calls_made.fetch_add(1, Ordering::Relaxed);
    let mut call = InFlight {
        shared: Arc::clone(shared),
        endpoint,
        batches,
        answered: false,
    };
    shared.handle.spawn(async move {
        let answer = call
            .shared
            .channels
            .unary_framed(&call.endpoint, SEND_BATCHES, body)
            .await;
        let batches = std::mem::take(&mut call.batches);
        call.answered = true;
        answered(&call.shared, &call.endpoint, batches, answer);
    });
}

/// Free the queues of the stored batches and send their next batches (with those held
/// back for the shard), hold the retryable refusals for a retry, and hand every other
/// answered batch to the owner.
fn answered<O: Clone + Send + 'static>(
    shared: &Arc<Shared<O>>,
    endpoint: &str,
    batches: Vec<Batch<O>>,
    answer: Result<Bytes, CallError>,
) {
    let outcomes = match answer {
        Ok(raw) => {
            let counts: Vec<usize> = batches.iter().map(|batch| batch.count).collect();
            answers(&raw, &counts)
        }
        Err(error) => vec![SendOutcome::refused(error.code, error.message); batches.len()],
    };
    let mut ended = Vec::with_capacity(batches.len());
    let mut following = Vec::new();
    for (mut batch, outcome) in batches.into_iter().zip(outcomes) {
        if let SendOutcome::Stored(_) = outcome {
            batch.released = true;
            following.extend(shared.core.release(&batch.key(), true));
        } else if outcome.retryable() {
            match shared.core.retry_later(batch) {
                Ok(()) => continue,
                Err(given_back) => batch = given_back,
            }
        }
        ended.push((batch, outcome));
    }
    // Queued before the next batches leave, so a queue's outcomes keep their order.
    for (batch, outcome) in ended {
        finish(shared, batch, outcome);
    }
    following.extend(call_ended(shared, endpoint));
    if !following.is_empty() {
        dispatch(shared, following);
    }
}
