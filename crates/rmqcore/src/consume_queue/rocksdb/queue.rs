//! One queue of the RocksDB consume queue: its bounds in memory, its entries and `min` /
//! `max` keys in the database (format §6).

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::layout::{self, Bound, QueueEnd};
use super::{Batch, Database, Family};
use crate::consume_queue::{ConsumeQueue, CqEntry, QueueBounds, QueueTraffic};
use crate::error::{Error, Result};
use crate::files::page_warmer::PageWarmer;

/// A run put into a batch: how the queue's bounds move once the batch is written.
pub(super) struct StagedRun {
    new_min: Option<i64>,
    new_max: i64,
    /// The end of the run's last record in the commit log.
    pub(super) dispatched_end: i64,
}

#[derive(Debug)]
pub struct RocksDbConsumeQueue {
    database: Arc<Database>,
    topic: String,
    queue_id: i32,
    /// What readers see: `max` is the next queue offset written (RocketMQ's `max` key
    /// holds the last one).
    bounds: QueueBounds,
    /// What the store's writer has assigned, ahead of `bounds` while the writer thread
    /// has the batch (`background.rs`).
    assigned: QueueBounds,
    /// The writer-thread job holding the queue's last assigned entries.
    pending_seq: AtomicU64,
    traffic: QueueTraffic,
}

impl RocksDbConsumeQueue {
    pub(super) fn empty(database: &Arc<Database>, topic: &str, queue_id: i32, at: i64) -> Self {
        RocksDbConsumeQueue {
            database: Arc::clone(database),
            topic: topic.to_string(),
            queue_id,
            bounds: QueueBounds::new(at, at),
            assigned: QueueBounds::new(at, at),
            pending_seq: AtomicU64::new(0),
            traffic: QueueTraffic::default(),
        }
    }

    /// The queue as its `min` and `max` keys describe it; None when it has neither.
    pub(super) fn load(
        database: &Arc<Database>,
        topic: &str,
        queue_id: i32,
    ) -> Result<Option<Self>> {
        let max = database.get_offset(&layout::offset_key(topic, queue_id, Bound::Max))?;
        let min = database.get_offset(&layout::offset_key(topic, queue_id, Bound::Min))?;
        let (min_offset, max_offset) = match (min, max) {
            (None, None) => return Ok(None),
            (Some(min), None) => (min.queue_offset, min.queue_offset),
            (min, Some(max)) => (
                min.map_or(0, |min| min.queue_offset.min(max.queue_offset + 1)),
                max.queue_offset + 1,
            ),
        };
        let queue = Self::empty(database, topic, queue_id, max_offset);
        queue.set_min(min_offset);
        queue.trim_lost_tail()?;
        Ok(Some(queue))
    }

    /// Put the run's entries and the queue's `max` key (and `min` for a queue's first
    /// entries) into `batch`; None for an empty run. The bounds move by `publish`, after
    /// the batch is written.
    pub(super) fn stage(
        &self,
        batch: &mut Batch,
        first_offset: i64,
        entries: &[CqEntry],
    ) -> Result<Option<StagedRun>> {
        let Some(last) = entries.last() else {
            return Ok(None);
        };
        let (min, max) = (self.assigned.min(), self.assigned.max());
        let empty = max == min;
        if first_offset != max && !empty {
            return Err(Error::corrupt(
                self.location(),
                0,
                format!(
                    "entry for queue offset {first_offset} of {}/{} out of order: the queue \
                     expects {max}",
                    self.topic, self.queue_id
                ),
            ));
        }
        batch.put_entries(
            layout::queue_key_prefix(&self.topic, self.queue_id),
            first_offset,
            entries.iter().map(layout::encode_entry).collect(),
        );
        let last_offset = first_offset + entries.len() as i64 - 1;
        batch.put(
            Family::Offsets,
            self.offset_key(Bound::Max),
            &layout::encode_queue_end(QueueEnd {
                commitlog_offset: last.commitlog_offset,
                queue_offset: last_offset,
            }),
        );
        if empty {
            batch.put(
                Family::Offsets,
                self.offset_key(Bound::Min),
                &layout::encode_queue_end(QueueEnd {
                    commitlog_offset: entries[0].commitlog_offset,
                    queue_offset: first_offset,
                }),
            );
        }
        Ok(Some(StagedRun {
            new_min: empty.then_some(first_offset),
            new_max: last_offset + 1,
            dispatched_end: last.commitlog_end(),
        }))
    }

    /// The store's writer goes on from a staged run at once; readers wait for job `seq`.
    pub(super) fn assign(&self, staged: &StagedRun, seq: u64) {
        self.pending_seq.store(seq, Ordering::Release);
        if let Some(min) = staged.new_min {
            self.assigned.set_min(min);
        }
        self.assigned.set_max(staged.new_max);
    }

    /// Readers may see a staged run once its batch is written.
    pub(super) fn publish(&self, staged: &StagedRun) {
        if let Some(min) = staged.new_min {
            self.bounds.set_min(min);
        }
        self.bounds.set_max(staged.new_max);
    }

    /// Bounds that readers and the writer see alike (loading, truncation, retention:
    /// never with a batch pending on the writer thread).
    fn set_min(&self, offset: i64) {
        self.assigned.set_min(offset);
        self.bounds.set_min(offset);
    }

    fn set_max(&self, offset: i64) {
        self.assigned.set_max(offset);
        self.bounds.set_max(offset);
    }

    /// A crash can keep the `max` key of a batch whose entries it lost (the two column
    /// families reach the disk in separate flushes, and writes go on between them): step
    /// the queue's end back to its last entry, so that recovery dispatches the rest again.
    fn trim_lost_tail(&self) -> Result<()> {
        let (min, max) = (self.min_offset(), self.max_offset());
        let mut end = max;
        while end > min && self.database.get_entry(&self.key(end - 1))?.is_none() {
            end -= 1;
        }
        if end == max {
            return Ok(());
        }
        if self.database.writable {
            let mut batch = Batch::default();
            let next_commitlog = self.database.dispatched_end();
            self.set_end(&mut batch, min, end, next_commitlog)?;
            self.database.write(batch)?;
        }
        self.set_max(end);
        Ok(())
    }

    /// Record in `batch` that the queue ends before `end`: its `max` key names the entry
    /// before `end`, or, with none left, the queue continues at `end` (its `min` key says
    /// so, with `next_commitlog` as the commit-log offset).
    fn set_end(&self, batch: &mut Batch, min: i64, end: i64, next_commitlog: i64) -> Result<()> {
        let last = if end > min {
            self.database.get_entry(&self.key(end - 1))?
        } else {
            None
        };
        match last {
            Some(last) => batch.put(
                Family::Offsets,
                self.offset_key(Bound::Max),
                &layout::encode_queue_end(QueueEnd {
                    commitlog_offset: last.commitlog_offset,
                    queue_offset: end - 1,
                }),
            ),
            None => {
                batch.delete(Family::Offsets, self.offset_key(Bound::Max));
                batch.put(
                    Family::Offsets,
                    self.offset_key(Bound::Min),
                    &layout::encode_queue_end(QueueEnd {
                        commitlog_offset: next_commitlog,
                        queue_offset: end,
                    }),
                );
            }
        }
        Ok(())
    }

    fn key(&self, queue_offset: i64) -> Vec<u8> {
        layout::entry_key(&self.topic, self.queue_id, queue_offset)
    }

    fn offset_key(&self, bound: Bound) -> Vec<u8> {
        layout::offset_key(&self.topic, self.queue_id, bound)
    }

    /// The first queue offset in `[from, to)` whose record starts at or past
    /// `commitlog_offset` (entries are in log order), or `to`.
    fn first_at_or_past(&self, from: i64, to: i64, commitlog_offset: i64) -> Result<i64> {
        let (mut low, mut high) = (from, to);
        while low < high {
            let middle = low + (high - low) / 2;
            match self.database.get_entry(&self.key(middle))? {
                Some(entry) if entry.commitlog_offset >= commitlog_offset => high = middle,
                // Missing entries were dropped by retention: below the target too.
                _ => low = middle + 1,
            }
        }
        Ok(low)
    }
}

impl ConsumeQueue for RocksDbConsumeQueue {
    fn topic(&self) -> &str {
        &self.topic
    }

    fn queue_id(&self) -> i32 {
        self.queue_id
    }

    fn location(&self) -> &Path {
        &self.database.path
    }

    /// Entries assigned by the writer are waited for, so that a message can be read as
    /// soon as its put returns.
    fn bounds(&self) -> &QueueBounds {
        if self.assigned.max() > self.bounds.max() {
            self.database
                .progress
                .wait_for(self.pending_seq.load(Ordering::Acquire));
        }
        &self.bounds
    }

    fn writer_bounds(&self) -> &QueueBounds {
        &self.assigned
    }

    fn traffic(&self) -> &QueueTraffic {
        &self.traffic
    }

    fn stored_entry(&self, queue_offset: i64) -> Result<Option<CqEntry>> {
        self.database.get_entry(&self.key(queue_offset))
    }

    /// One iterator pass instead of a lookup per entry (a few entries are looked up:
    /// making an iterator costs more than a handful of lookups).
    fn entries(&self, from: i64, max: usize) -> Result<Vec<CqEntry>> {
        const LOOKUPS_BELOW: i64 = 4;
        let end = self.max_offset().min(from.saturating_add(max as i64));
        if from < self.min_offset() || from >= end {
            return Ok(Vec::new());
        }
        if end - from < LOOKUPS_BELOW {
            let mut entries = Vec::new();
            for queue_offset in from..end {
                match self.stored_entry(queue_offset)? {
                    Some(entry) => entries.push(entry),
                    None => break,
                }
            }
            return Ok(entries);
        }
        Ok(self
            .database
            .entries_in(&self.key(from), &self.key(end), max)
            .into_iter()
            .zip(from..)
            .map_while(|((offset, entry), expected)| (offset == expected).then_some(entry))
            .collect())
    }

    /// One `WriteBatch` for the run, written at once (appends from the store go through
    /// `ConsumeQueueStore::append_runs` and the writer thread instead).
    fn append_all(
        &self,
        first_offset: i64,
        entries: &[CqEntry],
        _warmer: Option<&PageWarmer>,
    ) -> Result<()> {
        // Written here, after whatever the writer thread holds, so bounds only grow.
        self.database.progress.drain(&self.database.path)?;
        let mut batch = Batch::default();
        let Some(staged) = self.stage(&mut batch, first_offset, entries)? else {
            return Ok(());
        };
        let dispatched = staged.dispatched_end.max(self.database.dispatched_end());
        self.database.put_dispatched_end(&mut batch, dispatched);
        self.database.write(batch)?;
        self.database
            .dispatched
            .store(dispatched, Ordering::Release);
        self.assign(&staged, 0);
        self.publish(&staged);
        Ok(())
    }

    fn truncate_from_physical(&self, commitlog_end: i64) -> Result<u64> {
        let (min, max) = (self.min_offset(), self.max_offset());
        let cut = self.first_at_or_past(min, max, commitlog_end)?;
        if cut >= max {
            return Ok(0);
        }
        let mut batch = Batch::default();
        batch.delete_range(Family::Entries, self.key(cut), self.key(max));
        self.set_end(&mut batch, min, cut, commitlog_end)?;
        self.database.write(batch)?;
        self.set_max(cut);
        if cut <= min {
            self.set_min(cut);
        }
        Ok((max - cut) as u64)
    }

    fn drop_below(&self, commitlog_min: i64) -> Result<u64> {
        let (min, max) = (self.min_offset(), self.max_offset());
        let first = self.first_at_or_past(min, max, commitlog_min)?;
        if first <= min {
            return Ok(0);
        }
        let mut batch = Batch::default();
        batch.put(
            Family::Offsets,
            self.offset_key(Bound::Min),
            &layout::encode_queue_end(QueueEnd {
                commitlog_offset: self
                    .database
                    .get_entry(&self.key(first))?
                    .map_or(commitlog_min, |entry| entry.commitlog_offset),
                queue_offset: first,
            }),
        );
        self.database.write(batch)?;
        self.set_min(first);
        Ok((first - min) as u64)
    }
}
