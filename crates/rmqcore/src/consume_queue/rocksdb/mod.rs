//! RocketMQ 5's RocksDB consume queue (its `RocksDBConsumeQueueStore`, format §6): every
//! queue's entries in one RocksDB database at `consumequeue/`, so a store with a million
//! queues keeps a handful of files open instead of a mapped file per queue.
//!
//! The database is written as RocketMQ writes it: one `WriteBatch` per dispatched run,
//! without the write-ahead log (the commit log is the source of truth, and recovery
//! dispatches again whatever a crash lost), with atomic flushes so that the entries and
//! the dispatched offset reach the disk together. Entries of records that retention
//! deleted are dropped by a compaction filter, as RocketMQ's
//! `ConsumeQueueCompactionFilterFactory` does, and each queue's `min` key moves past them.
//!
//! Thread safety: RocksDB is thread-safe; the table of open queues is behind an `RwLock`
//! and each queue's bounds are atomics, written only by the store's single writer.

pub mod layout;
mod queue;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, RwLock};

use rocksdb::{
    compaction_filter::Decision, ColumnFamily, ColumnFamilyDescriptor, FlushOptions, IteratorMode,
    Options, WriteBatch, WriteOptions, DB, DEFAULT_COLUMN_FAMILY_NAME,
};

use crate::consume_queue::{ConsumeQueue, ConsumeQueueStore};
use crate::error::{Error, Result};
use layout::{QueueEnd, OFFSET_COLUMN_FAMILY};
use queue::RocksDbConsumeQueue;

/// The file RocksDB keeps in every database directory: how a RocksDB consume queue is
/// told from the file form's per-topic directories.
pub const MARKER_FILE: &str = "CURRENT";

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
    Put(Family, Vec<u8>, Vec<u8>),
    Delete(Family, Vec<u8>),
    DeleteRange(Family, Vec<u8>, Vec<u8>),
}

impl Batch {
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
    db: RwLock<Option<DB>>,
    path: PathBuf,
    pub(crate) writable: bool,
    /// The commit log's first offset: entries of records below it are dropped by the
    /// compaction filter.
    commitlog_min: Arc<AtomicI64>,
    /// The `CHECKPOINT_TOPIC` value: the end of the last record dispatched.
    dispatched: AtomicI64,
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
    fn family(self, family: Family) -> &'d ColumnFamily {
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

    fn error(&self, what: &str, error: rocksdb::Error) -> Error {
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

    pub(crate) fn get_entry(&self, key: &[u8]) -> Option<crate::consume_queue::CqEntry> {
        let value = self.get(Family::Entries, key).ok()??;
        layout::decode_entry(&value)
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
    fn stored_dispatched_end(&self) -> Result<i64> {
        Ok(self
            .get(Family::Offsets, &layout::checkpoint_key())?
            .filter(|value| value.len() >= 8)
            .map_or(0, |value| crate::big_endian::read_i64(&value, 0)))
    }

    /// Every key of the offset column family, in order.
    fn offset_keys(&self) -> Result<Vec<Vec<u8>>> {
        self.with(|open| {
            open.db
                .iterator_cf(open.family(Family::Offsets), IteratorMode::Start)
                .map_while(|item| item.ok().map(|(key, _)| key.to_vec()))
                .collect()
        })
    }

    /// The first offset key at or after `start`.
    fn first_offset_key_from(&self, start: &[u8]) -> Result<Option<Vec<u8>>> {
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
    fn flush(&self) -> Result<()> {
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

    fn compact_entries(&self) -> Result<()> {
        self.with(|open| {
            open.db
                .compact_range_cf(open.family(Family::Entries), None::<&[u8]>, None::<&[u8]>)
        })
    }

    fn close(&self) {
        self.db.write().expect("database lock").take();
    }
}

#[derive(Debug)]
pub struct RocksDbConsumeQueueStore {
    database: Arc<Database>,
    /// Queues looked up so far; the rest stay in the database until asked for.
    queues: RwLock<HashMap<(String, i32), Arc<RocksDbConsumeQueue>>>,
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
        };
        database.dispatched = AtomicI64::new(database.stored_dispatched_end()?);
        Ok(RocksDbConsumeQueueStore {
            database: Arc::new(database),
            queues: RwLock::new(HashMap::new()),
        })
    }

    pub fn path(&self) -> &Path {
        &self.database.path
    }

    /// The commit-log offset up to which records were dispatched (flushed or not).
    pub fn dispatched_end(&self) -> i64 {
        self.database.dispatched_end()
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

    fn flush(&self) -> Result<()> {
        self.database.flush()
    }

    fn close(&self) {
        self.database.close();
    }

    /// Only queues whose last entry lies at or past `commitlog_end` change, and when the
    /// dispatched offset is below it no queue can: a clean reopen reads one key.
    fn truncate_from_physical(&self, commitlog_end: i64) -> Result<u64> {
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
