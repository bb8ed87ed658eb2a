//! What went through one queue since the store opened: messages and body bytes stored and
//! read. The counters live on the queue object because the put and pull paths already
//! hold it (`get_or_create`, `get`), so they take no lock and no lookup of their own. Each
//! form of consume queue keeps one.
//!
//! Pulls run concurrently: a read bumps its counters with two relaxed atomic adds. Puts
//! are serialised by the store's write lock, so a put's counters need no atomic add: a
//! relaxed load and store each, plain moves on x86 and ARM, where a locked add costs tens
//! of cycles (`examples/traffic_counter_cost.rs` measures both).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::MutexGuard;

/// Messages and body bytes one way. Each direction has a cache line of its own: the
/// writer bumps `stored` while consumers on other cores bump `read`, and sharing a line
/// would move it between their cores on every call.
#[derive(Debug, Default)]
#[repr(align(64))]
struct Direction {
    messages: AtomicU64,
    bytes: AtomicU64,
}

impl Direction {
    fn add(&self, messages: usize, bytes: usize) {
        self.messages.fetch_add(messages as u64, Ordering::Relaxed);
        self.bytes.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// `add` for a caller that no other caller can overlap: the lock that excludes them
    /// also orders each one's store before the next one's load.
    fn add_exclusive(&self, messages: usize, bytes: usize) {
        let (count, size) = (&self.messages, &self.bytes);
        count.store(
            count.load(Ordering::Relaxed) + messages as u64,
            Ordering::Relaxed,
        );
        size.store(
            size.load(Ordering::Relaxed) + bytes as u64,
            Ordering::Relaxed,
        );
    }
}

#[derive(Debug, Default)]
pub struct QueueTraffic {
    stored: Direction,
    read: Direction,
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
    /// A put of `messages` with `body_bytes` in all, once its records are in the log and
    /// the queue (a sync flush that then times out does not take them back: readers see
    /// them). `_writer` is the store's write lock, held: puts are never concurrent,
    /// which is what lets them skip atomic adds.
    pub fn stored(&self, _writer: &MutexGuard<'_, ()>, messages: usize, body_bytes: usize) {
        self.stored.add_exclusive(messages, body_bytes);
    }

    /// A pull that handed out `messages` with `body_bytes` in all.
    pub fn read(&self, messages: usize, body_bytes: usize) {
        // Empty polls are the common case of an idle consumer: they leave the counters'
        // cache line alone.
        if messages != 0 {
            self.read.add(messages, body_bytes);
        }
    }

    /// Relaxed loads: the four figures may be a call apart from each other, which a
    /// scrape cannot tell from a scrape a moment later.
    pub fn snapshot(&self) -> TrafficSnapshot {
        TrafficSnapshot {
            messages_in: self.stored.messages.load(Ordering::Relaxed),
            bytes_in: self.stored.bytes.load(Ordering::Relaxed),
            messages_out: self.read.messages.load(Ordering::Relaxed),
            bytes_out: self.read.bytes.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn puts_and_pulls_add_up_and_empty_pulls_count_nothing() {
        let traffic = QueueTraffic::default();
        let lock = Mutex::new(());
        let writer = lock.lock().unwrap();
        traffic.stored(&writer, 3, 300);
        traffic.stored(&writer, 1, 7);
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
