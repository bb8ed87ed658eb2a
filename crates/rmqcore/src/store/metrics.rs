//! Counters an operator scrapes (`rmq serve --metrics-port`): relaxed atomics bumped once
//! per call on the hot path, never a lock; read as a snapshot.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::Store;
use crate::consume_queue::TrafficSnapshot;

/// Upper bounds of the latency buckets, in microseconds (the last bucket is unbounded).
pub const LATENCY_BOUNDS_US: [u64; 14] = [
    25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 1_000_000,
];

/// Upper bounds of the group-commit size buckets, in bytes flushed by one flush.
pub const FLUSH_BYTES_BOUNDS: [u64; 10] = [
    4_096,
    16_384,
    65_536,
    262_144,
    1_048_576,
    4_194_304,
    16_777_216,
    67_108_864,
    268_435_456,
    1_073_741_824,
];

#[derive(Debug)]
pub struct Histogram<const N: usize> {
    bounds: &'static [u64; N],
    /// One count per bound, and one for everything above the last.
    counts: [AtomicU64; 16],
    sum: AtomicU64,
}

impl<const N: usize> Histogram<N> {
    const fn new(bounds: &'static [u64; N]) -> Self {
        Histogram {
            bounds,
            counts: [const { AtomicU64::new(0) }; 16],
            sum: AtomicU64::new(0),
        }
    }

    pub fn observe(&self, value: u64) {
        let bucket = self.bounds.partition_point(|bound| *bound < value);
        self.counts[bucket].fetch_add(1, Ordering::Relaxed);
        self.sum.fetch_add(value, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> HistogramSnapshot {
        HistogramSnapshot {
            bounds: self.bounds.to_vec(),
            counts: self.counts[..=N]
                .iter()
                .map(|count| count.load(Ordering::Relaxed))
                .collect(),
            sum: self.sum.load(Ordering::Relaxed),
        }
    }
}

/// Counts per bucket (not cumulative; the last is above every bound) and their sum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistogramSnapshot {
    pub bounds: Vec<u64>,
    pub counts: Vec<u64>,
    pub sum: u64,
}

#[derive(Debug)]
pub struct StoreMetrics {
    pub messages_put: AtomicU64,
    pub body_bytes_put: AtomicU64,
    pub messages_read: AtomicU64,
    pub body_bytes_read: AtomicU64,
    /// Retention runs, and the segments they deleted (from the store) or evicted (the
    /// local copy of an uploaded segment).
    pub retention_runs: AtomicU64,
    pub segments_deleted: AtomicU64,
    pub segments_evicted: AtomicU64,
    pub put_latency_us: Histogram<14>,
    pub pull_latency_us: Histogram<14>,
    pub flush_latency_us: Histogram<14>,
    pub flush_bytes: Histogram<10>,
}

impl Default for StoreMetrics {
    fn default() -> Self {
        StoreMetrics {
            messages_put: AtomicU64::new(0),
            body_bytes_put: AtomicU64::new(0),
            messages_read: AtomicU64::new(0),
            body_bytes_read: AtomicU64::new(0),
            retention_runs: AtomicU64::new(0),
            segments_deleted: AtomicU64::new(0),
            segments_evicted: AtomicU64::new(0),
            put_latency_us: Histogram::new(&LATENCY_BOUNDS_US),
            pull_latency_us: Histogram::new(&LATENCY_BOUNDS_US),
            flush_latency_us: Histogram::new(&LATENCY_BOUNDS_US),
            flush_bytes: Histogram::new(&FLUSH_BYTES_BOUNDS),
        }
    }
}

impl StoreMetrics {
    pub(super) fn put(&self, messages: usize, body_bytes: usize, took: Duration) {
        let counters = [&self.messages_put, &self.body_bytes_put];
        count_call(counters, &self.put_latency_us, messages, body_bytes, took);
    }

    pub(super) fn pulled(&self, messages: usize, body_bytes: usize, took: Duration) {
        let counters = [&self.messages_read, &self.body_bytes_read];
        count_call(counters, &self.pull_latency_us, messages, body_bytes, took);
    }

    pub(super) fn retention_ran(&self, report: &crate::retention::RetentionReport) {
        self.retention_runs.fetch_add(1, Ordering::Relaxed);
        self.segments_deleted
            .fetch_add(report.deleted.len() as u64, Ordering::Relaxed);
        self.segments_evicted
            .fetch_add(report.evicted.len() as u64, Ordering::Relaxed);
    }

    pub(super) fn flushed(&self, bytes: u64, took: Duration) {
        self.flush_bytes.observe(bytes);
        self.flush_latency_us.observe(took.as_micros() as u64);
    }
}

/// What `Store::metrics` reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsSnapshot {
    pub messages_put: u64,
    pub body_bytes_put: u64,
    pub messages_read: u64,
    pub body_bytes_read: u64,
    pub retention_runs: u64,
    pub segments_deleted: u64,
    pub segments_evicted: u64,
    pub put_latency_us: HistogramSnapshot,
    pub pull_latency_us: HistogramSnapshot,
    pub flush_latency_us: HistogramSnapshot,
    pub flush_bytes: HistogramSnapshot,
    pub commitlog_min_offset: u64,
    pub commitlog_max_offset: u64,
    pub flushed_offset: u64,
    /// Commit-log bytes not yet in the consume queues and the index.
    pub dispatch_lag_bytes: u64,
}

impl Store {
    /// The store's counters since it was opened, and its log's extent.
    pub fn metrics(&self) -> MetricsSnapshot {
        let inner = &self.inner;
        let metrics = &inner.metrics;
        let max = inner.commit_log.write_offset();
        MetricsSnapshot {
            messages_put: metrics.messages_put.load(Ordering::Relaxed),
            body_bytes_put: metrics.body_bytes_put.load(Ordering::Relaxed),
            messages_read: metrics.messages_read.load(Ordering::Relaxed),
            body_bytes_read: metrics.body_bytes_read.load(Ordering::Relaxed),
            retention_runs: metrics.retention_runs.load(Ordering::Relaxed),
            segments_deleted: metrics.segments_deleted.load(Ordering::Relaxed),
            segments_evicted: metrics.segments_evicted.load(Ordering::Relaxed),
            put_latency_us: metrics.put_latency_us.snapshot(),
            pull_latency_us: metrics.pull_latency_us.snapshot(),
            flush_latency_us: metrics.flush_latency_us.snapshot(),
            flush_bytes: metrics.flush_bytes.snapshot(),
            commitlog_min_offset: inner.commit_log.min_offset(),
            commitlog_max_offset: max,
            flushed_offset: inner.flush.flushed_offset(),
            dispatch_lag_bytes: max.saturating_sub(inner.dispatched_offset.load(Ordering::Acquire)),
        }
    }
}

/// One queue's traffic since the store opened (`consume_queue/traffic.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueTrafficSnapshot {
    pub topic: String,
    pub queue_id: i32,
    pub traffic: TrafficSnapshot,
}

impl Store {
    /// Every queue's messages and body bytes stored and read since the store opened,
    /// ordered by topic and queue. Queues without traffic are listed too, so that a
    /// counter exists (at zero) before its first message. Read at scrape time only.
    pub fn queue_traffic(&self) -> Vec<QueueTrafficSnapshot> {
        let mut queues: Vec<QueueTrafficSnapshot> = self
            .inner
            .queues
            .all()
            .iter()
            .map(|queue| QueueTrafficSnapshot {
                topic: queue.topic().to_string(),
                queue_id: queue.queue_id(),
                traffic: queue.traffic().snapshot(),
            })
            .collect();
        queues.sort_by(|a, b| (&a.topic, a.queue_id).cmp(&(&b.topic, b.queue_id)));
        queues
    }
}

/// One put or pull: its messages and body bytes added to their counters, its time to its
/// latency histogram.
fn count_call(
    counters: [&AtomicU64; 2],
    latency_us: &Histogram<14>,
    messages: usize,
    body_bytes: usize,
    took: Duration,
) {
    counters[0].fetch_add(messages as u64, Ordering::Relaxed);
    counters[1].fetch_add(body_bytes as u64, Ordering::Relaxed);
    latency_us.observe(took.as_micros() as u64);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_land_in_the_first_bucket_whose_bound_they_do_not_pass() {
        let histogram = Histogram::new(&LATENCY_BOUNDS_US);
        for value in [0, 25, 26, 1_000_000, 1_000_001] {
            histogram.observe(value);
        }
        let snapshot = histogram.snapshot();
        assert_eq!(snapshot.counts.len(), LATENCY_BOUNDS_US.len() + 1);
        assert_eq!(snapshot.counts[0], 2);
        assert_eq!(snapshot.counts[1], 1);
        assert_eq!(snapshot.counts[13], 1);
        assert_eq!(snapshot.counts[14], 1);
        assert_eq!(snapshot.sum, 2_000_052);
    }
}
