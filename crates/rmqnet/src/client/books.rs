//! The producer's books: the batches waiting per queue, the queues in flight, the retries,
//! the batches waiting for a route, and the byte and message counts the limits bound,
//! behind one mutex. Three condition variables wake the three kinds of waiters: the sender
//! thread (a batch may have become due), the owner's route thread (a topic's route is
//! wanted) and the owner's other threads (a flush, a send held back by the buffer limits
//! or waiting for a route). The changes made for every batch (a batch queued, stored,
//! finished) wake only the waiters they concern: each wake-up is a switch between threads,
//! and waking every thread on every change made them most of the producer's switches.
//! Every rule of when a batch leaves, is retried or waits for a route is here.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::batch::{Batch, QueueKey};
pub use super::limits::{Limits, RetryPolicy};
use super::routes::Routes;

pub struct State<O> {
    pub limits: Limits,
    pub retry: RetryPolicy,
    pub routes: Routes,
    /// Batches not yet sent, oldest first, per queue.
    pub(super) waiting: HashMap<QueueKey, VecDeque<Batch<O>>>,
    /// Queues with a batch in flight (at most one each, so a queue keeps its order).
    pub(super) inflight: HashSet<QueueKey>,
    /// Batches to send again, and when.
    pub(super) retries: HashMap<QueueKey, (Batch<O>, Instant)>,
    /// Batches waiting for their topic's route, and the topics to look up.
    pub(super) unrouted: Vec<Batch<O>>,
    pub(super) wanted: BTreeSet<String>,
    pub buffered: usize,
    pub pending: usize,
    pub flushing: usize,
    pub closed: bool,
    /// The sender is stopping: its thread and the route thread end now.
    pub(super) stopping: bool,
}

impl<O> State<O> {
    /// Whether `count` more messages of `size` bytes in all must wait for answers to
    /// come back first. With nothing pending they never wait, so a batch larger than
    /// the limits still leaves, alone.
    pub fn must_wait(&self, size: usize, count: usize) -> bool {
        self.pending > 0
            && (self.buffered + size > self.limits.max_buffered_bytes
                || self.pending + count > self.limits.max_buffered_messages)
    }

    /// For a send that had to wait (`must_wait`): whether it may go on. It waits until the
    /// buffer has drained to half its limits, not only until this send fits: the books
    /// then wake it once for every several answers rather than for each (`finished`),
    /// and it sends that many again without waiting. With nothing pending it goes.
    pub fn room_after_wait(&self, size: usize, count: usize) -> bool {
        self.pending == 0 || (!self.must_wait(size, count) && self.below_half())
    }

    /// Whether the buffer holds at most half of each limit.
    fn below_half(&self) -> bool {
        self.buffered <= self.limits.max_buffered_bytes / 2
            && self.pending <= self.limits.max_buffered_messages / 2
    }

    /// Whether a queue's first waiting batch should leave now, if nothing is in flight.
    fn ready(&self, batches: &VecDeque<Batch<O>>, now: Instant) -> bool {
        let Some(batch) = batches.front() else {
            return false;
        };
        self.flushing > 0
            || self.closed
            || batch.whole
            || batches.len() > 1
            || self.limits.full(batch, 0)
            || now.duration_since(batch.created) >= self.limits.linger
    }

    /// Take a queue's first waiting batch to send it.
    fn take_next(&mut self, key: &QueueKey) -> Option<Batch<O>> {
        let batches = self.waiting.get_mut(key)?;
        let batch = batches.pop_front()?;
        if batches.is_empty() {
            self.waiting.remove(key);
        }
        self.inflight.insert(key.clone());
        Some(batch)
    }

    /// Batches to send now, and when to look again (None: when something changes).
    fn due(&mut self, now: Instant) -> (Vec<Batch<O>>, Option<Instant>) {
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
            due.extend(self.retries.remove(&key).map(|(batch, _)| batch));
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

    pub fn idle(&self) -> bool {
        self.waiting.is_empty()
            && self.inflight.is_empty()
            && self.retries.is_empty()
            && self.unrouted.is_empty()
    }
}

/// What `Core::push` did with a message.
pub struct Pushed<O> {
    /// The outcome handle of the message's batch, and the message's place in it.
    pub outcome: O,
    pub index: usize,
    /// The batch this message filled, taken to be sent now.
    pub ready: Option<Batch<O>>,
}

/// The books and their condition variables, shared by every thread of one producer.
pub struct Core<O> {
    state: Mutex<State<O>>,
    /// The owner's threads waiting in `wait_until`.
    changed: Condvar,
    /// The sender thread, waiting in `due` for a batch to send.
    sender_wake: Condvar,
    /// The owner's route thread, waiting in `wanted_routes`.
    routes_wake: Condvar,
}

impl<O: Clone> Default for Core<O> {
    fn default() -> Self {
        Core {
            state: Mutex::new(State {
                limits: Limits::default(),
                retry: RetryPolicy::default(),
                routes: Routes::default(),
                waiting: HashMap::new(),
                inflight: HashSet::new(),
                retries: HashMap::new(),
                unrouted: Vec::new(),
                wanted: BTreeSet::new(),
                buffered: 0,
                pending: 0,
                flushing: 0,
                closed: false,
                stopping: false,
            }),
            changed: Condvar::new(),
            sender_wake: Condvar::new(),
            routes_wake: Condvar::new(),
        }
    }
}

impl<O: Clone> Core<O> {
    pub fn lock(&self) -> MutexGuard<'_, State<O>> {
        // Every update finishes before anything that could panic, so a poisoned lock
        // holds whole state.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Wake every waiter: after a change that any of them may wait for.
    pub fn notify(&self) {
        self.changed.notify_all();
        self.sender_wake.notify_all();
        self.routes_wake.notify_all();
    }

    /// Wake the sender thread: a batch may be due now, or due at an earlier time than
    /// its wait ends.
    fn wake_sender(&self) {
        self.sender_wake.notify_all();
    }

    /// Wake the route thread: a topic's route is wanted.
    pub(super) fn wake_routes(&self) {
        self.routes_wake.notify_all();
    }

    /// Change the books, then wake whoever waits on them.
    pub fn update<T>(&self, change: impl FnOnce(&mut State<O>) -> T) -> T {
        let result = change(&mut self.lock());
        self.notify();
        result
    }

    /// Make every waiting batch due at once (a flush, or a send waiting for room in the
    /// buffer) until `end_flush`. Nothing but the sender acts on this, and only for a
    /// queue with a batch waiting and none in flight (one lingering): the sender is woken
    /// only then. A send blocked on the buffer limits comes here for every batch, and
    /// waking every waiter each time (the sender and the route thread) was a switch to
    /// each of them per batch.
    pub fn begin_flush(&self) {
        let mut state = self.lock();
        state.flushing += 1;
        let lingering = state
            .waiting
            .keys()
            .any(|key| !state.inflight.contains(key));
        drop(state);
        if lingering {
            self.wake_sender();
        }
    }

    pub fn end_flush(&self) {
        self.lock().flushing -= 1;
    }

    /// Wait until `done(state)` holds (true) or `until` passes (false).
    pub fn wait_until(&self, until: Instant, done: impl Fn(&State<O>) -> bool) -> bool {
        self.wait_on(&self.changed, until, done)
    }

    /// `wait_until` for the route thread, woken by the changes to the wanted routes.
    pub(super) fn wait_for_routes(&self, until: Instant, done: impl Fn(&State<O>) -> bool) {
        self.wait_on(&self.routes_wake, until, done);
    }

    fn wait_on(&self, condvar: &Condvar, until: Instant, done: impl Fn(&State<O>) -> bool) -> bool {
        let mut state = self.lock();
        loop {
            if done(&state) {
                return true;
            }
            let now = Instant::now();
            if now >= until {
                return false;
            }
            state = condvar
                .wait_timeout(state, until - now)
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
        }
    }

    /// Put one encoded message (`size` counted against the limits) into its queue's open
    /// batch, opening one with `new_outcome` when there is none with room.
    pub fn push(
        &self,
        key: &QueueKey,
        encoded: &[u8],
        size: usize,
        new_outcome: impl FnOnce() -> O,
    ) -> Pushed<O> {
        let mut guard = self.lock();
        let limits = guard.limits;
        let state = &mut *guard;
        // The queue's entry is nearly always there already: looked up, not made from a
        // copy of the key for each message.
        if !state.waiting.contains_key(key) {
            state.waiting.insert(key.clone(), VecDeque::new());
        }
        let batches = state
            .waiting
            .get_mut(key)
            .expect("the queue's entry was just made");
        if !batches
            .back()
            .is_some_and(|batch| !batch.whole && !limits.full(batch, size))
        {
            batches.push_back(Batch::new(key, new_outcome()));
            // The sender thread schedules its linger.
            self.wake_sender();
        }
        let batch = batches.back_mut().expect("a batch was just opened");
        batch.append_encoded(encoded);
        let index = batch.count;
        batch.count += 1;
        batch.bytes += size;
        let outcome = batch.outcome.clone();
        let now_full =
            batch.count >= limits.batch_max_messages || batch.bytes > limits.batch_max_bytes;
        let alone = batches.len() == 1;
        state.buffered += size;
        state.pending += 1;
        let mut ready = None;
        if now_full {
            if alone && !state.inflight.contains(key) {
                // Sent by the caller rather than handed to the sender thread: a hand-off
                // between threads costs more than the send.
                ready = state.take_next(key);
            } else {
                self.wake_sender();
            }
        }
        Pushed {
            outcome,
            index,
            ready,
        }
    }

    /// Queue one `send_batch` call's `count` encoded messages (`size` counted against the
    /// limits), after `headroom` free bytes of `encoded` (`Batch::set_encoded`), as a batch
    /// of their own, due at once (see `Batch::whole`). It is taken to be sent by the
    /// caller when its queue has nothing in flight or waiting.
    pub fn push_whole(
        &self,
        key: &QueueKey,
        encoded: Vec<u8>,
        headroom: usize,
        count: usize,
        size: usize,
        outcome: O,
    ) -> Option<Batch<O>> {
        let mut batch = Batch::new(key, outcome);
        batch.set_encoded(encoded, headroom);
        batch.count = count;
        batch.bytes = size;
        batch.whole = true;
        let mut state = self.lock();
        state.buffered += size;
        state.pending += count;
        let batches = state.waiting.entry(key.clone()).or_default();
        batches.push_back(batch);
        let alone = batches.len() == 1;
        let inflight = state.inflight.contains(key);
        if alone && !inflight {
            return state.take_next(key);
        }
        drop(state);
        // Behind a batch in flight, it leaves when that one is answered (`release`, or
        // `finished` for a batch that was not stored): nothing for the sender to do now.
        if !inflight {
            self.wake_sender();
        }
        None
    }

    /// The encoded messages of the queue's open (last waiting) batch, if it has one.
    pub fn open_batch(&self, key: &QueueKey) -> Option<Vec<u8>> {
        let state = self.lock();
        Some(state.waiting.get(key)?.back()?.encoded().to_vec())
    }

    /// The shard stored the batch of queue `key`: free the queue and, with `take_next`,
    /// take its next batch if it is ready to be sent now.
    /// Only the sender is woken, and only when the queue keeps a batch it did not take
    /// (one lingering, now due at its linger's end): the batch's owner learns of it in
    /// `finished`, which follows.
    pub fn release(&self, key: &QueueKey, take_next: bool) -> Option<Batch<O>> {
        let mut state = self.lock();
        state.inflight.remove(key);
        let now = Instant::now();
        let next_ready = take_next
            && !state.retries.contains_key(key)
            && state.waiting.get(key).is_some_and(|batches| {
                batches.front().is_some_and(|next| !next.refresh_route) && state.ready(batches, now)
            });
        let next = next_ready.then(|| state.take_next(key)).flatten();
        let left_waiting = next.is_none() && state.waiting.contains_key(key);
        let idle = state.idle();
        drop(state);
        if left_waiting || idle {
            self.wake_sender();
        }
        if idle {
            self.changed.notify_all();
        }
        next
    }

    /// The batch's outcome was delivered: take it off the books, freeing its queue
    /// unless `release` already did. The batch is dropped after the lock.
    /// The owner's waiters are woken (the counts fell); the sender only when a batch of
    /// the queue may now leave (this one was not stored, so `release` did not free the
    /// queue) or the producer is closed (it ends once idle), and so is the route thread.
    pub fn finished(&self, batch: Batch<O>) {
        let mut state = self.lock();
        let queue_waits = !batch.released && {
            let key = batch.key();
            state.inflight.remove(&key);
            state.waiting.contains_key(&key)
        };
        state.buffered -= batch.bytes;
        state.pending -= batch.count;
        let closed = state.closed;
        // The owner's waiters: a flush (nothing pending), a send waiting for room (the
        // buffer at half, `room_after_wait`), a stop (idle, so nothing pending).
        let waiters_may_go = state.pending == 0 || state.below_half();
        drop(state);
        if waiters_may_go {
            self.changed.notify_all();
        }
        if queue_waits || closed {
            self.wake_sender();
        }
        if closed {
            self.wake_routes();
        }
        drop(batch);
    }

    /// Send the batch again after the retry delay, with a fresh route; or give it back
    /// when its retry time is over or the producer is closing.
    pub fn retry_later(&self, mut batch: Batch<O>) -> Result<(), Batch<O>> {
        let now = Instant::now();
        let mut state = self.lock();
        if state.closed || batch.mark_sent(now) >= state.retry.timeout {
            return Err(batch);
        }
        batch.refresh_route = true;
        batch.route_fresh = false;
        let at = now + state.retry.delay;
        state.retries.insert(batch.key(), (batch, at));
        drop(state);
        self.wake_sender();
        Ok(())
    }

    /// For the sender thread: the batches due now, waiting until some are; None once the
    /// producer is stopping, or closed with nothing left.
    pub(super) fn due(&self) -> Option<Vec<Batch<O>>> {
        /// The shortest sleep while a batch lingers, and the longest between looks.
        const MIN_WAKE: Duration = Duration::from_micros(500);
        const MAX_WAKE: Duration = Duration::from_millis(100);
        let mut state = self.lock();
        loop {
            if state.stopping {
                return None;
            }
            let now = Instant::now();
            let (due, wake) = state.due(now);
            if !due.is_empty() {
                return Some(due);
            }
            if state.closed && state.idle() {
                return None;
            }
            let sleep = wake.map_or(MAX_WAKE, |wake| {
                wake.saturating_duration_since(now).max(MIN_WAKE)
            });
            state = self
                .sender_wake
                .wait_timeout(state, sleep)
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
        }
    }

    /// Stop: every batch not yet sent, taken off the queues (the caller fails them).
    pub(super) fn stop(&self) -> Vec<Batch<O>> {
        self.update(|state| {
            state.stopping = true;
            let mut left: Vec<Batch<O>> = state.waiting.drain().flat_map(|(_, b)| b).collect();
            left.extend(state.retries.drain().map(|(_, (batch, _))| batch));
            left.append(&mut state.unrouted);
            state.wanted.clear();
            left
        })
    }
}
