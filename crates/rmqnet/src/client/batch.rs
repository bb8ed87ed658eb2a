//! One batch of a producer: messages for one queue, encoded as one `SendRequest`'s
//! `messages` fields, with the bookkeeping of its trip to the shard. `O` is the owner's
//! handle on how the batch ended (the binding's shared future state), carried along and
//! never looked into here.

use std::time::Instant;

use bytes::Bytes;

use super::encode::frame_alone;
use super::outcome::SendOutcome;

pub type QueueKey = (String, i32);

pub struct Batch<O> {
    pub topic: String,
    pub queue_id: i32,
    messages: Messages,
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
            messages: Messages::Open {
                buffer: Vec::new(),
                headroom: 0,
            },
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

    /// The batch's encoded `messages` fields.
    pub fn encoded(&self) -> &[u8] {
        match &self.messages {
            Messages::Open { buffer, headroom } => &buffer[*headroom..],
            Messages::Framed { body, messages } => &body[*messages..],
        }
    }

    /// Append encoded `messages` fields; only to a batch not yet sent.
    pub(super) fn append_encoded(&mut self, encoded: &[u8]) {
        match &mut self.messages {
            Messages::Open { buffer, .. } => buffer.extend_from_slice(encoded),
            Messages::Framed { .. } => unreachable!("a batch that left is not added to"),
        }
    }

    /// Take `buffer` as the batch's messages: its encoded `messages` fields after
    /// `headroom` bytes left free (`encode::request_headroom`) for framing a call that
    /// carries this batch alone.
    pub fn set_encoded(&mut self, buffer: Vec<u8>, headroom: usize) {
        self.messages = Messages::Open { buffer, headroom };
    }

    /// The whole body of a call carrying this batch alone, framed in the room left before
    /// its messages, so that they are not copied; None when the batch has no such room.
    /// The body is kept: a retry sends it again.
    pub(super) fn alone_body(&mut self) -> Option<Bytes> {
        if let Messages::Open { buffer, headroom } = &mut self.messages {
            let start = frame_alone(buffer, *headroom, &self.topic, self.queue_id)?;
            let messages = *headroom - start;
            let body = Bytes::from(std::mem::take(buffer)).slice(start..);
            self.messages = Messages::Framed { body, messages };
        }
        match &self.messages {
            Messages::Framed { body, .. } => Some(body.clone()),
            Messages::Open { .. } => None,
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

/// Where a batch's encoded messages are kept.
enum Messages {
    /// Being filled, after `headroom` free bytes.
    Open { buffer: Vec<u8>, headroom: usize },
    /// Framed in place as the body of a call carrying the batch alone; the messages start
    /// `messages` bytes into it.
    Framed { body: Bytes, messages: usize },
}

/// A batch that ended, and how.
pub struct Finished<O> {
    pub batch: Batch<O>,
    pub outcome: SendOutcome,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::encode::{put_message, request_headroom};

    #[test]
    fn a_batch_framed_alone_keeps_its_messages_and_sends_the_same_body_again() {
        let key: QueueKey = ("orders".into(), 3);
        let mut messages = Vec::new();
        put_message(&mut messages, b"hello", Some("TagA"), &["k"], &[]);
        let headroom = request_headroom(&key.0);
        let mut buffer = vec![0; headroom];
        buffer.extend_from_slice(&messages);
        let mut batch = Batch::new(&key, ());
        batch.set_encoded(buffer, headroom);
        assert_eq!(batch.encoded(), messages.as_slice());
        let first = batch.alone_body().expect("room to frame");
        assert_eq!(batch.encoded(), messages.as_slice());
        assert_eq!(batch.alone_body(), Some(first.clone()));
        assert!(first.ends_with(&messages));

        // Built message by message (no room left): sent with others, copied.
        let mut appended = Batch::new(&key, ());
        appended.append_encoded(&messages);
        assert_eq!(appended.alone_body(), None);
        assert_eq!(appended.encoded(), messages.as_slice());
    }
}
