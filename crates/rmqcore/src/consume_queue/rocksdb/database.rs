//! The open RocksDB database of a store's consume queue: its two column families, batched
//! writes without the write-ahead log, reads, flushes, and closing while queue handles may
//! still exist.

use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, RwLock};

use rocksdb::{
    ColumnFamily, FlushOptions, IteratorMode, WriteBatch, WriteOptions, DB,
    DEFAULT_COLUMN_FAMILY_NAME,
};

use super::layout::{self, QueueEnd, OFFSET_COLUMN_FAMILY};
use super::write_progress::WriteProgress;
use crate::big_endian::read_i64;
use crate::error::{Error, Result};

/// The two column families (format §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    Entries,
    Offsets,
}

/// Writes gathered for one `WriteBatch`.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    operations: Vec<Operation>,
}

#[derive(Debug)]
enum Operation {
    /// Consecutive entries of one queue: its key prefix, the first queue offset, values.
    Entries(Vec<u8>, i64, Vec<[u8; layout::ENTRY_VALUE_SIZE]>),
    Put(Family, Vec<u8>, Vec<u8>),
    Delete(Family, Vec<u8>),
    DeleteRange(Family, Vec<u8>, Vec<u8>),
}

impl Batch {
    /// Entries for the queue offsets from `first_offset` on, keyed under `key_prefix`
    /// (`layout::queue_key_prefix`): one allocation for the run, not two per entry.
    pub(crate) fn put_entries(
        &mut self,
        key_prefix: Vec<u8>,
        first_offset: i64,
        values: Vec<[u8; layout::ENTRY_VALUE_SIZE]>,
    ) {
        self.operations
            .push(Operation::Entries(key_prefix, first_offset, values));
    }

    /// `other`'s writes after this batch's.
    pub(crate) fn extend(&mut self, other: Batch) {
        self.operations.extend(other.operations);
    }

    pub(crate) fn put(&mut self, family: Family, key: Vec<u8>, value: &[u8]) {
        self.operations
            .push(Operation::Put(family, key, value.to_vec()));
    }

    pub(crate) fn delete(&mut self, family: Family, key: Vec<u8>) {
        self.operations.push(Operation::Delete(family, key));
    }

    pub(crate) fn delete_range(&mut self, family: Family, start: Vec<u8>, end: Vec<u8>) {
        self.operations
            .push(Operation::DeleteRange(family, start, end));
    }
}

/// The database and what every queue shares. It is closed with the store, while queue
/// handles may still be held: accesses after that fail as on a closed store.
pub(crate) struct Database {
    pub(super) db: RwLock<Option<DB>>,
    pub(super) path: PathBuf,
    pub(crate) writable: bool,
    /// The commit log's first offset: entries of records below it are dropped by the
    /// compaction filter.
    pub(super) commitlog_min: Arc<AtomicI64>,
    /// The `CHECKPOINT_TOPIC` value: the end of the last record dispatched.
    pub(super) dispatched: AtomicI64,
    /// How far the writer thread has come (`background.rs`).
    pub(super) progress: WriteProgress,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("path", &self.path)
            .finish()
    }
}

/// The database while it is open.
#[derive(Clone, Copy)]
struct Open<'d> {
    db: &'d DB,
}

impl<'d> Open<'d> {
    pub(super) fn family(self, family: Family) -> &'d ColumnFamily {
        self.db
            .cf_handle(family_name(family))
            .expect("column families are created at open")
    }
}

fn family_name(family: Family) -> &'static str {
    match family {
        Family::Entries => DEFAULT_COLUMN_FAMILY_NAME,
        Family::Offsets => OFFSET_COLUMN_FAMILY,
    }
}

impl Database {
    /// Run `use_db` on the open database.
    fn with<T>(&self, use_db: impl FnOnce(Open<'_>) -> T) -> Result<T> {
        let guard = self.db.read().expect("database lock");
        let db = guard.as_ref().ok_or(Error::Closed)?;
        Ok(use_db(Open { db }))
    }

    pub(super) fn error(&self, what: &str, error: rocksdb::Error) -> Error {
        Error::corrupt(
            &self.path,
            0,
            format!(
                "RocksDB consume queue: {what} failed: {error}; rebuild_consume_queues=True \
                 (`rmq rebuild PATH`) recreates it from the commit log"
            ),
        )
    }

    /// Write a batch as RocketMQ does: no write-ahead log, so the entries become durable
    /// with the next flush; until then recovery dispatches them again.
    pub(crate) fn write(&self, batch: Batch) -> Result<()> {
        if !self.writable {
            return Err(Error::ReadOnly);
        }
        self.with(|open| {
            let mut write = WriteBatch::default();
            for operation in &batch.operations {
                match operation {
                    Operation::Entries(prefix, first_offset, values) => {
                        let family = open.family(Family::Entries);
                        let mut key = prefix.clone();
                        for (queue_offset, value) in (*first_offset..).zip(values) {
                            key.truncate(prefix.len());
                            key.extend_from_slice(&queue_offset.to_be_bytes());
                            write.put_cf(family, &key, value);
                        }
                    }
                    Operation::Put(f, key, value) => write.put_cf(open.family(*f), key, value),
                    Operation::Delete(f, key) => write.delete_cf(open.family(*f), key),
                    Operation::DeleteRange(f, start, end) => {
                        write.delete_range_cf(open.family(*f), start, end)
                    }
                }
            }
            let mut options = WriteOptions::default();
            options.disable_wal(true);
            open.db.write_opt(write, &options)
        })?
        .map_err(|error| self.error("write", error))
    }

    pub(crate) fn get(&self, family: Family, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.with(|open| open.db.get_cf(open.family(family), key))?
            .map_err(|error| self.error("read", error))
    }

    pub(crate) fn get_offset(&self, key: &[u8]) -> Result<Option<QueueEnd>> {
        Ok(self
            .get(Family::Offsets, key)?
            .and_then(|value| layout::decode_queue_end(&value)))
    }

    /// The entry under `key`; a read error is an error, never a missing entry (recovery
    /// would take it for one lost and cut the queue there).
    pub(crate) fn get_entry(&self, key: &[u8]) -> Result<Option<crate::consume_queue::CqEntry>> {
        Ok(self
            .get(Family::Entries, key)?
            .and_then(|value| layout::decode_entry(&value)))
    }

    pub(crate) fn dispatched_end(&self) -> i64 {
        self.dispatched.load(Ordering::Acquire)
    }

    /// Record in `batch` that records up to `end` are dispatched.
    pub(crate) fn put_dispatched_end(&self, batch: &mut Batch, end: i64) {
        batch.put(
            Family::Offsets,
            layout::checkpoint_key(),
            &end.to_be_bytes(),
        );
    }

    /// The commit-log offset up to which records were dispatched (RocketMQ's
    /// `CHECKPOINT_TOPIC` key), as stored.
    pub(super) fn stored_dispatched_end(&self) -> Result<i64> {
        Ok(self
            .get(Family::Offsets, &layout::checkpoint_key())?
            .filter(|value| value.len() >= 8)
            .map_or(0, |value| crate::big_endian::read_i64(&value, 0)))
    }

    /// The entries with keys in `[start, end)`, in order, at most `limit`, each with the
    /// queue offset its key ends with.
    pub(super) fn entries_in(
        &self,
        start: &[u8],
        end: &[u8],
        limit: usize,
    ) -> Vec<(i64, crate::consume_queue::CqEntry)> {
        self.with(|open| {
            open.db
                .iterator_cf(
                    open.family(Family::Entries),
                    IteratorMode::From(start, rocksdb::Direction::Forward),
                )
                .map_while(|item| item.ok())
                .take_while(|(key, _)| key.as_ref() < end)
                .take(limit)
                .filter_map(|(key, value)| {
                    let offset = key.len().checked_sub(8).map(|at| read_i64(&key, at))?;
                    Some((offset, layout::decode_entry(&value)?))
                })
                .collect()
        })
        .unwrap_or_default()
    }

    /// Every key of the offset column family, in order.
    pub(super) fn offset_keys(&self) -> Result<Vec<Vec<u8>>> {
        self.with(|open| {
            open.db
                .iterator_cf(open.family(Family::Offsets), IteratorMode::Start)
                .map_while(|item| item.ok().map(|(key, _)| key.to_vec()))
                .collect()
        })
    }

    /// The first offset key at or after `start`.
    pub(super) fn first_offset_key_from(&self, start: &[u8]) -> Result<Option<Vec<u8>>> {
        self.with(|open| {
            open.db
                .iterator_cf(
                    open.family(Family::Offsets),
                    IteratorMode::From(start, rocksdb::Direction::Forward),
                )
                .next()
                .and_then(|item| item.ok())
                .map(|(key, _)| key.to_vec())
        })
    }

    /// Flush the entries, then the offsets: a crash between the two leaves entries
    /// beyond the queues' `max` keys, which dispatching again overwrites with the same
    /// bytes; the other order could leave `max` keys pointing at entries that were lost.
    pub(super) fn flush(&self) -> Result<()> {
        if !self.writable {
            return Ok(());
        }
        let mut options = FlushOptions::default();
        options.set_wait(true);
        for f in [Family::Entries, Family::Offsets] {
            self.with(|open| open.db.flush_cf_opt(open.family(f), &options))?
                .map_err(|error| self.error("flush", error))?;
        }
        Ok(())
    }

    pub(super) fn compact_entries(&self) -> Result<()> {
        self.with(|open| {
            open.db
                .compact_range_cf(open.family(Family::Entries), None::<&[u8]>, None::<&[u8]>)
        })
    }

    pub(super) fn close(&self) {
        self.db.write().expect("database lock").take();
    }
}
