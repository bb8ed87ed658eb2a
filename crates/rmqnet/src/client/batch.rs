//! One batch of a producer: messages for one queue, encoded as one `SendRequest`'s
//! `messages` fields, with the bookkeeping of its trip to the shard. `O` is the owner's
//! handle on how the batch ended (the binding's shared future state), carried along and
//! never looked into here.

use std::time::Instant;

use super::outcome::SendOutcome;

pub type QueueKey = (String, i32);

pub struct Batch<O> {
    pub topic: String,
    pub queue_id: i32,
    pub messages: Vec<u8>,
    pub count: usize,
    /// What the buffer limits count: bodies plus a fixed overhead per message.
    pub bytes: usize,
    pub(super) created: Instant,
    pub(super) first_sent: Option<Instant>,
    /// The last try failed in a way that may mean the route changed: look it up again.
    pub(super) refresh_route: bool,
    /// The route was looked up for this batch: a queue missing from it is missing.
    pub(super) route_fresh: bool,
    /// Its queue was freed for the next batch before the batch itself finished.
    pub(super) released: bool,
    /// One `send_batch` call's messages, all of them and only them: it leaves without
    /// lingering, and no other message joins it, so the shard accepts or refuses the
    /// caller's batch as a whole.
    pub(super) whole: bool,
    pub outcome: O,
}

impl<O> Batch<O> {
    pub fn new(key: &QueueKey, outcome: O) -> Self {
        Batch {
            topic: key.0.clone(),
            queue_id: key.1,
            messages: Vec::new(),
            count: 0,
            bytes: 0,
            created: Instant::now(),
            first_sent: None,
            refresh_route: false,
            route_fresh: false,
            released: false,
            whole: false,
            outcome,
        }
    }

    pub fn key(&self) -> QueueKey {
        (self.topic.clone(), self.queue_id)
    }

    /// Seconds since the batch was first sent, starting the clock on the first call.
    pub(super) fn mark_sent(&mut self, now: Instant) -> std::time::Duration {
        now.duration_since(*self.first_sent.get_or_insert(now))
    }
}

/// A batch that ended, and how.
pub struct Finished<O> {
    pub batch: Batch<O>,
    pub outcome: SendOutcome,
}
