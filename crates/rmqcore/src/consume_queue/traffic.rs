//! What went through one queue since the store opened: messages and body bytes stored and
//! read. The counters live on the queue object because the put and pull paths already
//! hold it (`get_or_create`, `get`): bumping them costs two relaxed atomic adds per call,
//! with no lock and no lookup of their own. Each form of consume queue keeps one.

use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Default)]
pub struct QueueTraffic {
    messages_in: AtomicU64,
    bytes_in: AtomicU64,
    messages_out: AtomicU64,
    bytes_out: AtomicU64,
}

/// The counters of one queue at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TrafficSnapshot {
    pub messages_in: u64,
    pub bytes_in: u64,
    pub messages_out: u64,
    pub bytes_out: u64,
}

impl QueueTraffic {
    /// A put of `messages` with `body_bytes` in all, once it has succeeded.
    pub fn stored(&self, messages: usize, body_bytes: usize) {
        self.messages_in
            .fetch_add(messages as u64, Ordering::Relaxed);
        self.bytes_in
            .fetch_add(body_bytes as u64, Ordering::Relaxed);
    }

    /// A pull that handed out `messages` with `body_bytes` in all.
    pub fn read(&self, messages: usize, body_bytes: usize) {
        // Empty polls are the common case of an idle consumer: they leave the counters'
        // cache line alone.
        if messages == 0 {
            return;
        }
        self.messages_out
            .fetch_add(messages as u64, Ordering::Relaxed);
        self.bytes_out
            .fetch_add(body_bytes as u64, Ordering::Relaxed);
    }

    /// Relaxed loads: the four figures may be a call apart from each other, which a
    /// scrape cannot tell from a scrape a moment later.
    pub fn snapshot(&self) -> TrafficSnapshot {
        TrafficSnapshot {
            messages_in: self.messages_in.load(Ordering::Relaxed),
            bytes_in: self.bytes_in.load(Ordering::Relaxed),
            messages_out: self.messages_out.load(Ordering::Relaxed),
            bytes_out: self.bytes_out.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn puts_and_pulls_add_up_and_empty_pulls_count_nothing() {
        let traffic = QueueTraffic::default();
        traffic.stored(3, 300);
        traffic.stored(1, 7);
        traffic.read(2, 200);
        traffic.read(0, 0);
        assert_eq!(
            traffic.snapshot(),
            TrafficSnapshot {
                messages_in: 4,
                bytes_in: 307,
                messages_out: 2,
                bytes_out: 200,
            }
        );
    }
}
