//! One queue of the RocksDB consume queue: its bounds in memory, its entries and `min` /
//! `max` keys in the database (format §6).

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::layout::{self, Bound, QueueEnd};
use super::{Batch, Database, Family};
use crate::consume_queue::{ConsumeQueue, CqEntry, QueueBounds};
use crate::error::{Error, Result};
use crate::files::page_warmer::PageWarmer;

#[derive(Debug)]
pub struct RocksDbConsumeQueue {
    database: Arc<Database>,
    topic: String,
    queue_id: i32,
    /// `max` is the next queue offset to assign (RocketMQ's `max` key holds the last one).
    bounds: QueueBounds,
}

impl RocksDbConsumeQueue {
    pub(super) fn empty(database: &Arc<Database>, topic: &str, queue_id: i32, at: i64) -> Self {
        RocksDbConsumeQueue {
            database: Arc::clone(database),
            topic: topic.to_string(),
            queue_id,
            bounds: QueueBounds::new(at, at),
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
        queue.bounds.set_min(min_offset);
        queue.trim_lost_tail()?;
        Ok(Some(queue))
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
        self.bounds.set_max(end);
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

    fn bounds(&self) -> &QueueBounds {
        &self.bounds
    }

    fn stored_entry(&self, queue_offset: i64) -> Option<CqEntry> {
        self.database
            .get_entry(&self.key(queue_offset))
            .ok()
            .flatten()
    }

    /// One iterator pass instead of a lookup per entry (a few entries are looked up:
    /// making an iterator costs more than a handful of lookups).
    fn entries(&self, from: i64, max: usize) -> Vec<CqEntry> {
        const LOOKUPS_BELOW: i64 = 4;
        let end = self.max_offset().min(from.saturating_add(max as i64));
        if from < self.min_offset() || from >= end {
            return Vec::new();
        }
        if end - from < LOOKUPS_BELOW {
            return (from..end)
                .map_while(|queue_offset| self.stored_entry(queue_offset))
                .collect();
        }
        self.database
            .entries_in(&self.key(from), &self.key(end), max)
            .into_iter()
            .zip(from..)
            .map_while(|((offset, entry), expected)| (offset == expected).then_some(entry))
            .collect()
    }

    /// One `WriteBatch` for the run: its entries, the queue's `max` key (and `min` for a
    /// queue's first entries) and the dispatched offset, as RocketMQ's
    /// `putMessagePosition` writes them.
    fn append_all(
        &self,
        first_offset: i64,
        entries: &[CqEntry],
        _warmer: Option<&PageWarmer>,
    ) -> Result<()> {
        let Some(last) = entries.last() else {
            return Ok(());
        };
        let max = self.max_offset();
        let empty = max == self.min_offset();
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
        let database = &self.database;
        let mut batch = Batch::default();
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
        let dispatched = last.commitlog_end().max(database.dispatched_end());
        database.put_dispatched_end(&mut batch, dispatched);
        database.write(batch)?;
        database.dispatched.store(dispatched, Ordering::Release);
        if empty {
            self.bounds.set_min(first_offset);
        }
        self.bounds.set_max(last_offset + 1);
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
        self.bounds.set_max(cut);
        if cut <= min {
            self.bounds.set_min(cut);
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
        self.bounds.set_min(first);
        Ok((first - min) as u64)
    }
}
