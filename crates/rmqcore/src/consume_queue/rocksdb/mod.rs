//! RocketMQ 5's RocksDB consume queue (its `RocksDBConsumeQueueStore`, format §6): every
//! queue's entries in one RocksDB database at `consumequeue/`, so a store with a million
//! queues keeps a handful of files open instead of a mapped file per queue.
//!
//! The database is written as RocketMQ writes it: one `WriteBatch` per dispatched batch,
//! on a writer thread of its own (`background.rs`, its progress in `write_progress.rs`),
//! without the write-ahead log (the commit log is the source of truth, and recovery
//! dispatches again whatever a crash lost), with atomic flushes so that the entries and
//! the dispatched offset reach the disk together. Entries of records that retention
//! deleted are dropped by a compaction filter, as RocketMQ's
//! `ConsumeQueueCompactionFilterFactory` does, and each queue's `min` key moves past them.
//!
//! Thread safety: RocksDB is thread-safe; the table of open queues is behind an `RwLock`;
//! each queue's bounds are atomics, assigned by the store's single writer and published
//! by the writer thread once written.

mod background;
mod database;
pub mod layout;
mod queue;
mod write_progress;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, RwLock};

use rocksdb::{
    compaction_filter::Decision, ColumnFamilyDescriptor, Options, DB, DEFAULT_COLUMN_FAMILY_NAME,
};

use crate::consume_queue::{ConsumeQueue, ConsumeQueueStore, QueueRun};
use crate::error::{Error, Result};
use crate::files::page_warmer::PageWarmer;
use background::{BackgroundWriter, Job};
use database::{Batch, Database, Family};
use layout::OFFSET_COLUMN_FAMILY;
use queue::RocksDbConsumeQueue;
use write_progress::WriteProgress;

/// The file RocksDB keeps in every database directory: how a RocksDB consume queue is
/// told from the file form's per-topic directories.
pub const MARKER_FILE: &str = "CURRENT";

#[derive(Debug)]
pub struct RocksDbConsumeQueueStore {
    database: Arc<Database>,
    /// Queues looked up so far; the rest stay in the database until asked for.
    queues: RwLock<HashMap<(String, i32), Arc<RocksDbConsumeQueue>>>,
    /// Writes appends' batches off the store's writer thread (writable stores only).
    writer: Option<BackgroundWriter>,
}

impl RocksDbConsumeQueueStore {
    pub fn dir(root: &Path) -> PathBuf {
        root.join("consumequeue")
    }

    /// Whether `root` holds a RocksDB consume queue.
    pub fn exists(root: &Path) -> bool {
        Self::dir(root).join(MARKER_FILE).is_file()
    }

    /// Open (or, writable, create) the database under `root`.
    pub fn open(root: &Path, writable: bool, commitlog_min: i64) -> Result<Self> {
        let path = Self::dir(root);
        let commitlog_min = Arc::new(AtomicI64::new(commitlog_min));
        let mut db_options = Options::default();
        db_options.create_if_missing(writable);
        db_options.create_missing_column_families(writable);
        db_options.set_atomic_flush(true);
        db_options.set_manual_wal_flush(true);
        db_options.set_paranoid_checks(true);
        db_options.set_keep_log_file_num(5);
        db_options.set_max_open_files(64);
        let mut entries_options = Options::default();
        entries_options.set_write_buffer_size(64 << 20);
        entries_options.set_max_write_buffer_number(2);
        let min = Arc::clone(&commitlog_min);
        entries_options.set_compaction_filter(
            "ConsumeQueueCompactionFilter",
            move |_level: u32, _key: &[u8], value: &[u8]| {
                let below = layout::decode_entry(value)
                    .is_some_and(|entry| entry.commitlog_offset < min.load(Ordering::Acquire));
                if below {
                    Decision::Remove
                } else {
                    Decision::Keep
                }
            },
        );
        let mut offsets_options = Options::default();
        offsets_options.set_write_buffer_size(16 << 20);
        let families = vec![
            ColumnFamilyDescriptor::new(DEFAULT_COLUMN_FAMILY_NAME, entries_options),
            ColumnFamilyDescriptor::new(OFFSET_COLUMN_FAMILY, offsets_options),
        ];
        let opened = if writable {
            std::fs::create_dir_all(&path).map_err(|error| Error::io(&path, error))?;
            DB::open_cf_descriptors(&db_options, &path, families)
        } else {
            DB::open_cf_descriptors_read_only(&db_options, &path, families, false)
        };
        let db = opened.map_err(|error| {
            Error::corrupt(
                &path,
                0,
                format!(
                    "cannot open the RocksDB consume queue: {error}; open the store with \
                     rebuild_consume_queues=True (`rmq rebuild PATH`) to recreate it from the \
                     commit log"
                ),
            )
        })?;
        let mut database = Database {
            db: RwLock::new(Some(db)),
            path,
            writable,
            commitlog_min,
            dispatched: AtomicI64::new(0),
            progress: WriteProgress::default(),
        };
        database.dispatched = AtomicI64::new(database.stored_dispatched_end()?);
        let database = Arc::new(database);
        let writer = if writable {
            Some(BackgroundWriter::start(&database)?)
        } else {
            None
        };
        Ok(RocksDbConsumeQueueStore {
            database,
            queues: RwLock::new(HashMap::new()),
            writer,
        })
    }

    pub fn path(&self) -> &Path {
        &self.database.path
    }

    /// The commit-log offset up to which records were dispatched (flushed or not).
    pub fn dispatched_end(&self) -> Result<i64> {
        self.drain()?;
        Ok(self.database.dispatched_end())
    }

    /// Wait until every batch handed to the writer thread is written.
    fn drain(&self) -> Result<()> {
        self.writer.as_ref().map_or(Ok(()), BackgroundWriter::drain)
    }

    fn cached(&self, topic: &str, queue_id: i32) -> Option<Arc<RocksDbConsumeQueue>> {
        self.queues
            .read()
            .expect("queue table lock")
            .get(&(topic.to_string(), queue_id))
            .cloned()
    }

    fn load(&self, topic: &str, queue_id: i32) -> Result<Option<Arc<RocksDbConsumeQueue>>> {
        if let Some(queue) = self.cached(topic, queue_id) {
            return Ok(Some(queue));
        }
        let Some(queue) = RocksDbConsumeQueue::load(&self.database, topic, queue_id)? else {
            return Ok(None);
        };
        let queue = Arc::new(queue);
        let mut queues = self.queues.write().expect("queue table lock");
        Ok(Some(Arc::clone(
            queues.entry((topic.to_string(), queue_id)).or_insert(queue),
        )))
    }

    /// Every queue in the database, from its `max`/`min` keys.
    fn queue_keys(&self) -> Vec<(String, i32)> {
        let mut keys: BTreeSet<(String, i32)> = self
            .database
            .offset_keys()
            .unwrap_or_default()
            .iter()
            .filter_map(|key| layout::parse_offset_key(key))
            .filter(|(topic, _, _)| topic != layout::CHECKPOINT_TOPIC)
            .map(|(topic, _, queue_id)| (topic, queue_id))
            .collect();
        keys.extend(
            self.queues
                .read()
                .expect("queue table lock")
                .keys()
                .cloned(),
        );
        keys.into_iter().collect()
    }

    fn rocks_queues(&self) -> Vec<Arc<RocksDbConsumeQueue>> {
        self.queue_keys()
            .into_iter()
            .filter_map(|(topic, queue_id)| self.load(&topic, queue_id).ok().flatten())
            .collect()
    }
}

impl ConsumeQueueStore for RocksDbConsumeQueueStore {
    fn get(&self, topic: &str, queue_id: i32) -> Option<Arc<dyn ConsumeQueue>> {
        self.load(topic, queue_id)
            .ok()
            .flatten()
            .map(|queue| queue as Arc<dyn ConsumeQueue>)
    }

    fn get_or_create(&self, topic: &str, queue_id: i32) -> Result<Arc<dyn ConsumeQueue>> {
        if let Some(queue) = self.load(topic, queue_id)? {
            return Ok(queue);
        }
        if !self.database.writable {
            return Err(Error::ReadOnly);
        }
        let queue = Arc::new(RocksDbConsumeQueue::empty(
            &self.database,
            topic,
            queue_id,
            0,
        ));
        let mut queues = self.queues.write().expect("queue table lock");
        Ok(
            Arc::clone(queues.entry((topic.to_string(), queue_id)).or_insert(queue))
                as Arc<dyn ConsumeQueue>,
        )
    }

    fn contains_topic(&self, topic: &str) -> bool {
        let (start, end) = layout::topic_range(topic);
        let stored = self
            .database
            .first_offset_key_from(&start)
            .ok()
            .flatten()
            .is_some_and(|key| key < end);
        stored
            || self
                .queues
                .read()
                .expect("queue table lock")
                .keys()
                .any(|(name, _)| name == topic)
    }

    fn topics(&self) -> Vec<String> {
        let topics: BTreeSet<String> = self
            .queue_keys()
            .into_iter()
            .map(|(topic, _)| topic)
            .collect();
        topics.into_iter().collect()
    }

    fn queues_of(&self, topic: &str) -> Vec<Arc<dyn ConsumeQueue>> {
        self.queue_keys()
            .into_iter()
            .filter(|(name, _)| name == topic)
            .filter_map(|(name, queue_id)| self.get(&name, queue_id))
            .collect()
    }

    fn all(&self) -> Vec<Arc<dyn ConsumeQueue>> {
        self.rocks_queues()
            .into_iter()
            .map(|queue| queue as Arc<dyn ConsumeQueue>)
            .collect()
    }

    fn remove_topic(&self, topic: &str) -> Result<bool> {
        self.drain()?;
        let existed = self.contains_topic(topic);
        let (start, end) = layout::topic_range(topic);
        let mut batch = Batch::default();
        batch.delete_range(Family::Entries, start.clone(), end.clone());
        batch.delete_range(Family::Offsets, start, end);
        self.database.write(batch)?;
        self.queues
            .write()
            .expect("queue table lock")
            .retain(|(name, _), _| name != topic);
        self.flush()?;
        Ok(existed)
    }

    /// All runs in one `WriteBatch`, written by the writer thread: a batch over many
    /// queues costs one write, and the store's writer does not wait for it.
    fn append_runs(&self, runs: &[QueueRun], _warmer: Option<&PageWarmer>) -> Result<()> {
        let mut batch = Batch::default();
        let mut staged = Vec::with_capacity(runs.len());
        for run in runs {
            let queue = self
                .load(run.queue.topic(), run.queue.queue_id())?
                .ok_or(Error::Closed)?;
            if let Some(run) = queue.stage(&mut batch, run.first_offset, &run.entries)? {
                staged.push((queue, run));
            }
        }
        let Some(dispatched_end) = staged.iter().map(|(_, run)| run.dispatched_end).max() else {
            return Ok(());
        };
        let Some(writer) = &self.writer else {
            return Err(Error::ReadOnly);
        };
        let seq = writer.reserve()?;
        for (queue, run) in &staged {
            queue.assign(run, seq);
        }
        writer.submit(Job {
            batch,
            runs: staged,
            dispatched_end,
            seq,
        })
    }

    fn flush(&self) -> Result<()> {
        self.drain()?;
        self.database.flush()
    }

    fn close(&self) {
        if let Some(writer) = &self.writer {
            writer.stop();
        }
        self.database.close();
    }

    /// Only queues whose last entry lies at or past `commitlog_end` change, and when the
    /// dispatched offset is below it no queue can: a clean reopen reads one key.
    fn truncate_from_physical(&self, commitlog_end: i64) -> Result<u64> {
        self.drain()?;
        if self.database.dispatched_end() <= commitlog_end {
            return Ok(0);
        }
        let mut removed = 0;
        for queue in self.rocks_queues() {
            removed += queue.truncate_from_physical(commitlog_end)?;
        }
        let mut batch = Batch::default();
        self.database.put_dispatched_end(&mut batch, commitlog_end);
        self.database.write(batch)?;
        self.database
            .dispatched
            .store(commitlog_end, Ordering::Release);
        Ok(removed)
    }

    /// Entries of deleted segments go in a compaction (the filter drops them); each
    /// queue's `min` key moves past them at once, so readers never see them.
    fn drop_below(&self, commitlog_min: i64) -> Result<u64> {
        self.drain()?;
        let database = &self.database;
        database
            .commitlog_min
            .fetch_max(commitlog_min, Ordering::AcqRel);
        let mut dropped = 0;
        for queue in self.rocks_queues() {
            dropped += queue.drop_below(commitlog_min)?;
        }
        if dropped > 0 && database.writable {
            database.compact_entries()?;
        }
        Ok(dropped)
    }
}
