//! Consume queues (format §2): per topic and queue, the entries that point into the commit
//! log, in one of two forms a store chooses when it is created: files of 20-byte entries
//! under `consumequeue/` (`file.rs`, `file_store.rs`), or RocketMQ 5's RocksDB consume
//! queue (`rocksdb/`). Dispatch, reads, recovery, retention, verify and rebuild see only
//! the two traits here.
//!
//! Thread safety: appends and truncations come from the store's single writer; reads run
//! concurrently and see entries below `max_offset`, published after the entries.

pub mod entry;
pub mod file;
pub mod file_store;
pub mod form;
pub mod remote;
pub mod rocksdb;
pub mod traffic;

use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use smallvec::SmallVec;

pub use entry::{CqEntry, ENTRY_SIZE, PLACEHOLDER_SIZE};
pub use traffic::{QueueTraffic, TrafficSnapshot};

use crate::error::Result;
use crate::files::page_warmer::PageWarmer;

/// A queue's readable range `[min, max)`: written by the store's single writer after the
/// entries, read by anyone.
#[derive(Debug, Default)]
pub struct QueueBounds {
    min: AtomicI64,
    max: AtomicI64,
}

impl QueueBounds {
    pub fn new(min: i64, max: i64) -> Self {
        QueueBounds {
            min: AtomicI64::new(min),
            max: AtomicI64::new(max),
        }
    }

    pub fn min(&self) -> i64 {
        self.min.load(Ordering::Acquire)
    }

    pub fn max(&self) -> i64 {
        self.max.load(Ordering::Acquire)
    }

    pub fn set_min(&self, offset: i64) {
        self.min.store(offset, Ordering::Release);
    }

    pub fn set_max(&self, offset: i64) {
        self.max.store(offset, Ordering::Release);
    }

    pub fn contains(&self, queue_offset: i64) -> bool {
        queue_offset >= self.min() && queue_offset < self.max()
    }
}

/// One topic's queue.
pub trait ConsumeQueue: Send + Sync + std::fmt::Debug {
    fn topic(&self) -> &str;
    fn queue_id(&self) -> i32;
    /// Where the queue is kept, for error messages.
    fn location(&self) -> &Path;
    fn bounds(&self) -> &QueueBounds;
    /// Messages and bytes stored and read since the store opened (`traffic.rs`).
    fn traffic(&self) -> &QueueTraffic;
    /// The stored entry at `queue_offset`, whether or not it is in the readable range;
    /// an error when the entry is kept where it cannot be read now (an evicted file whose
    /// tier is unreachable or whose object changed), never a silent "no entry".
    fn stored_entry(&self, queue_offset: i64) -> Result<Option<CqEntry>>;
    /// Append `entries` for the queue offsets from `first_offset` on; the first must be
    /// the next one (a queue that starts past zero may start anywhere). With a `warmer`,
    /// pages ahead are faulted in on its thread.
    fn append_all(
        &self,
        first_offset: i64,
        entries: &[CqEntry],
        warmer: Option<&PageWarmer>,
    ) -> Result<()>;
    /// Create what a new, empty queue's first append would create (the file form: its
    /// directory and first file, as that append makes them), so that the append does not
    /// pay for it; nothing for a queue that has entries or files, or a form with none.
    fn prepare_first_file(&self) -> Result<()> {
        Ok(())
    }
    /// Remove the entries of records at or past `commitlog_end`; returns how many.
    fn truncate_from_physical(&self, commitlog_end: i64) -> Result<u64>;
    /// Retention: let go of entries of records below `commitlog_min`; returns how many
    /// files (file form) or entries (RocksDB form) went.
    fn drop_below(&self, commitlog_min: i64) -> Result<u64>;

    /// The bounds as the store's writer has assigned them: ahead of `bounds` while a form
    /// that writes in the background (RocksDB) has not yet written the last entries.
    /// Only the writer asks; it must not wait for its own writes.
    fn writer_bounds(&self) -> &QueueBounds {
        self.bounds()
    }

    /// At open: move the first readable offset past entries of records below
    /// `commitlog_min` (retention deleted them), without changing any file, so that a
    /// read-only open agrees with the writer. Forms that persist their first offset
    /// (RocksDB's `min` key) need nothing.
    fn correct_min_offset(&self, _commitlog_min: i64) {}

    /// The first queue offset readers may ask for.
    fn min_offset(&self) -> i64 {
        self.bounds().min()
    }

    /// The next queue offset to assign.
    fn max_offset(&self) -> i64 {
        self.bounds().max()
    }

    /// The entry at `queue_offset`, if it lies in `[min_offset, max_offset)`.
    fn entry(&self, queue_offset: i64) -> Result<Option<CqEntry>> {
        if self.bounds().contains(queue_offset) {
            self.stored_entry(queue_offset)
        } else {
            Ok(None)
        }
    }

    /// Up to `max` entries from `from` on, in order, stopping at the first one missing:
    /// what sequential readers ask for, so that a form can read them in one pass.
    fn entries(&self, from: i64, max: usize) -> Result<Vec<CqEntry>> {
        let mut entries = Vec::new();
        for queue_offset in (from..).take(max) {
            match self.entry(queue_offset)? {
                Some(entry) => entries.push(entry),
                None => break,
            }
        }
        Ok(entries)
    }

    /// The last entry, if any.
    fn last_entry(&self) -> Result<Option<CqEntry>> {
        let max = self.max_offset();
        if max > self.min_offset() {
            self.entry(max - 1)
        } else {
            Ok(None)
        }
    }
}

/// Reads a queue's entries in order, a chunk at a time (`ConsumeQueue::entries`).
pub struct EntryCursor<'q> {
    queue: &'q dyn ConsumeQueue,
    next: i64,
    chunk: usize,
    buffered: std::collections::VecDeque<CqEntry>,
}

impl<'q> EntryCursor<'q> {
    /// Start at `from`; the first chunk holds `first_chunk` entries, later ones more.
    pub fn new(queue: &'q dyn ConsumeQueue, from: i64, first_chunk: usize) -> Self {
        EntryCursor {
            queue,
            next: from,
            chunk: first_chunk.clamp(1, Self::MAX_CHUNK),
            buffered: std::collections::VecDeque::new(),
        }
    }

    const MAX_CHUNK: usize = 256;
}

impl EntryCursor<'_> {
    /// The next entry; None at the first one missing.
    pub fn next_entry(&mut self) -> Result<Option<CqEntry>> {
        if self.buffered.is_empty() {
            self.buffered = self.queue.entries(self.next, self.chunk)?.into();
            self.chunk = Self::MAX_CHUNK;
        }
        let Some(entry) = self.buffered.pop_front() else {
            return Ok(None);
        };
        self.next += 1;
        Ok(Some(entry))
    }
}

/// Consecutive entries of one queue, gathered by the dispatcher and not yet appended.
#[derive(Debug)]
pub struct QueueRun {
    pub queue: Arc<dyn ConsumeQueue>,
    pub first_offset: i64,
    /// One entry inline: a single put's run then allocates nothing (on the heap its
    /// allocation and free cost about 140 instructions of a 100 B put, callgrind).
    pub entries: SmallVec<[CqEntry; 1]>,
}

impl QueueRun {
    /// The queue offset after the run's last entry.
    pub fn end_offset(&self) -> i64 {
        self.first_offset + self.entries.len() as i64
    }
}

/// Every consume queue of a store.
pub trait ConsumeQueueStore: Send + Sync + std::fmt::Debug {
    fn get(&self, topic: &str, queue_id: i32) -> Option<Arc<dyn ConsumeQueue>>;
    fn get_or_create(&self, topic: &str, queue_id: i32) -> Result<Arc<dyn ConsumeQueue>>;
    fn contains_topic(&self, topic: &str) -> bool;
    fn topics(&self) -> Vec<String>;
    fn queues_of(&self, topic: &str) -> Vec<Arc<dyn ConsumeQueue>>;
    fn all(&self) -> Vec<Arc<dyn ConsumeQueue>>;
    /// Remove a topic's queues; false if it had none.
    fn remove_topic(&self, topic: &str) -> Result<bool>;
    /// Append the runs of one dispatched batch, each to its queue (at most one run per
    /// queue). A form that writes in transactions writes them all in one.
    fn append_runs(&self, runs: &[QueueRun], warmer: Option<&PageWarmer>) -> Result<()> {
        runs.iter()
            .try_for_each(|run| run.queue.append_all(run.first_offset, &run.entries, warmer))
    }
    /// Make every entry appended so far durable.
    fn flush(&self) -> Result<()>;
    /// Queue files that may move to the tier (the file form's sealed files; the
    /// RocksDB form keeps its entries local and has none).
    fn sealed_files(&self) -> Vec<remote::SealedQueueFile> {
        Vec::new()
    }
    /// Delete the local copy of a queue file the tier holds (the queue's oldest);
    /// false when it is not the oldest.
    fn evict_file(&self, _topic: &str, _queue_id: i32, _start: u64) -> Result<bool> {
        Ok(false)
    }
    /// Let go of what the store holds open (called once, when the store closes).
    fn close(&self) {}

    /// Remove the entries of records at or past `commitlog_end` in every queue.
    fn truncate_from_physical(&self, commitlog_end: i64) -> Result<u64> {
        self.all()
            .iter()
            .map(|queue| queue.truncate_from_physical(commitlog_end))
            .sum()
    }

    /// Retention in every queue (see `ConsumeQueue::drop_below`).
    fn drop_below(&self, commitlog_min: i64) -> Result<u64> {
        self.all()
            .iter()
            .map(|queue| queue.drop_below(commitlog_min))
            .sum()
    }
}
