//! A store directory (format §0.1): the commit log, its consume queues, the checkpoint,
//! abort and lock files, and the config files, behind one API.
//!
//! Thread safety: `Store` is `Send + Sync`. Appends are serialised by one write lock (one
//! writer, as in RocketMQ); reads run concurrently with them and with each other.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::checkpoint::Checkpoint;
use crate::clock::now_millis;
use crate::commit_log::CommitLog;
use crate::consume_queue_table::ConsumeQueueTable;
use crate::consumer_offsets::ConsumerOffsetTable;
use crate::disk_usage::{DiskGuard, DiskUsage};
use crate::dispatch::{dispatch_to_consume_queue, queue_entry_of};
use crate::error::{Error, IoContext, Result};
use crate::flush_service::FlushService;
use crate::index_file::IndexGeometry;
use crate::index_service::IndexService;
use crate::message::{MessageDraft, PutResult, StoredMessage};
use crate::options::{FlushMode, StoreOptions, MAX_QUEUE_ID};
use crate::record::{RecordInput, RecordView};
use crate::recovery::{recover, RecoveryReport};
use crate::retention::{RetentionReport, SegmentDecision};
use crate::store_lock::StoreLock;
use crate::tag_filter::TagFilter;
use crate::topic::{validate_group, validate_topic, validate_v1_topic};
use crate::topic_config::TopicConfigTable;

/// How often the background thread refreshes the checkpoint (RocketMQ 5 does it every
/// second), which bounds how much log recovery must scan.
const CHECKPOINT_INTERVAL: Duration = Duration::from_secs(1);
/// How often the flush thread looks for sync writers.
const SYNC_FLUSH_POLL: Duration = Duration::from_millis(10);

/// The answer to a pull: the messages and where the next pull should start.
#[derive(Debug, Clone)]
pub struct PullResult {
    pub messages: Vec<StoredMessage>,
    pub next_offset: i64,
    pub min_offset: i64,
    pub max_offset: i64,
}

/// What `pull_each` visited: how many records, and the queue's positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pulled {
    pub count: usize,
    pub next_offset: i64,
    pub min_offset: i64,
    pub max_offset: i64,
}

struct StoreInner {
    root: PathBuf,
    options: StoreOptions,
    lock: Mutex<Option<StoreLock>>,
    commit_log: CommitLog,
    queues: ConsumeQueueTable,
    topics: Mutex<TopicConfigTable>,
    offsets: Mutex<ConsumerOffsetTable>,
    write_lock: Mutex<()>,
    flush: FlushService,
    /// Commit-log offset below which every record has been dispatched.
    dispatched_offset: AtomicU64,
    /// Store time of the newest record.
    last_store_timestamp: AtomicI64,
    /// A store time no newer than the last flushed record's (RocketMQ's recovery reads
    /// the checkpoint's timestamps; older is safe).
    flushed_store_timestamp: AtomicI64,
    /// The flushed offset last written to the checkpoint.
    checkpoint_lock: Mutex<i64>,
    closed: AtomicBool,
    /// The message-key index (format §3), fed by dispatch like the queues.
    index: IndexService,
    recovery_report: RecoveryReport,
    /// Refuses writes above the disk warning ratio.
    disk: DiskGuard,
    /// One retention run at a time.
    retention_lock: Mutex<()>,
    /// Wakes and stops the retention thread.
    background_stop: (Mutex<bool>, Condvar),
}

pub struct Store {
    inner: Arc<StoreInner>,
    flush_thread: Mutex<Option<JoinHandle<()>>>,
    retention_thread: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("root", &self.inner.root)
            .finish()
    }
}

fn abort_path(root: &Path) -> PathBuf {
    root.join("abort")
}

impl Store {
    /// Open (or create) the store at `root`, recovering it.
    pub fn open(root: &Path, options: StoreOptions) -> Result<Store> {
        options.validate()?;
        let writable = !options.read_only;
        if writable {
            fs::create_dir_all(root).at(root)?;
        } else if !root.is_dir() {
            return Err(Error::NotFound(format!(
                "no store directory at {}",
                root.display()
            )));
        }
        let lock = if writable {
            Some(StoreLock::acquire(root)?)
        } else {
            None
        };
        let abort_file_found = abort_path(root).exists();
        let commit_log = CommitLog::load(
            &root.join("commitlog"),
            options.commitlog_segment_size,
            writable,
        )?;
        let queues =
            ConsumeQueueTable::load(root, options.consume_queue_entries_per_file, writable)?;
        let checkpoint = Checkpoint::load(root)?;
        let topics = TopicConfigTable::load(root)?;
        let offsets = ConsumerOffsetTable::load(root)?;
        let index_geometry = IndexGeometry {
            slot_count: options.index_slot_count as u32,
            entry_count: options.index_entry_count as u32,
        };
        let index = IndexService::load(root, index_geometry, writable)?;
        let recovery_report = recover(
            &commit_log,
            &queues,
            &checkpoint,
            abort_file_found,
            writable,
            &index,
        )?;
        let end = commit_log.write_offset();
        if writable {
            // Present while the store is open; its presence at the next open means the
            // shutdown was not clean.
            fs::write(abort_path(root), std::process::id().to_string()).at(&abort_path(root))?;
            crate::atomic_file::sync_dir(root)?;
        }
        let inner = Arc::new(StoreInner {
            root: root.to_path_buf(),
            lock: Mutex::new(lock),
            commit_log,
            queues,
            topics: Mutex::new(topics),
            offsets: Mutex::new(offsets),
            write_lock: Mutex::new(()),
            flush: FlushService::new(end),
            dispatched_offset: AtomicU64::new(end),
            last_store_timestamp: AtomicI64::new(checkpoint.physic_msg_timestamp),
            flushed_store_timestamp: AtomicI64::new(checkpoint.physic_msg_timestamp),
            checkpoint_lock: Mutex::new(0),
            closed: AtomicBool::new(false),
            recovery_report,
            index,
            disk: DiskGuard::new(root, options.retention.disk_space_warning_level_ratio),
            retention_lock: Mutex::new(()),
            background_stop: (Mutex::new(false), Condvar::new()),
            options,
        });
        if writable {
            // The recovered state is the new baseline: make it durable before accepting
            // writes so that the next recovery starts from here.
            inner.checkpoint()?;
            inner
                .commit_log
                .start_warming(inner.options.warm_ahead_bytes)?;
        }
        let flush_thread = if writable {
            let background = Arc::clone(&inner);
            Some(
                std::thread::Builder::new()
                    .name("rmq-flush".into())
                    .spawn(move || background.flush_loop())
                    .map_err(|error| Error::io(root, error))?,
            )
        } else {
            None
        };
        let retention_thread = if writable {
            inner.disk.refresh()?;
            let background = Arc::clone(&inner);
            Some(
                std::thread::Builder::new()
                    .name("rmq-retention".into())
                    .spawn(move || background.retention_loop())
                    .map_err(|error| Error::io(root, error))?,
            )
        } else {
            None
        };
        Ok(Store {
            inner,
            flush_thread: Mutex::new(flush_thread),
            retention_thread: Mutex::new(retention_thread),
        })
    }

    pub fn root(&self) -> &Path {
        &self.inner.root
    }

    pub fn options(&self) -> &StoreOptions {
        &self.inner.options
    }

    pub fn recovery_report(&self) -> &RecoveryReport {
        &self.inner.recovery_report
    }

    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::Acquire)
    }

    pub fn commit_log(&self) -> &CommitLog {
        &self.inner.commit_log
    }

    pub fn consume_queues(&self) -> &ConsumeQueueTable {
        &self.inner.queues
    }

    fn check_open(&self) -> Result<()> {
        if self.is_closed() {
            Err(Error::Closed)
        } else {
            Ok(())
        }
    }

    fn check_writable(&self) -> Result<()> {
        self.check_open()?;
        if self.inner.options.read_only {
            return Err(Error::ReadOnly);
        }
        self.inner.flush.check_healthy()?;
        self.inner.disk.check_writable()
    }

    /// Delete what retention allows now (see `retention.rs`), as if asked by an
    /// operator: expired segments go whatever the hour. `now_ms` stands in for the
    /// clock in tests.
    pub fn run_retention(&self, now_ms: Option<i64>) -> Result<RetentionReport> {
        self.check_open()?;
        if self.inner.options.read_only {
            return Err(Error::ReadOnly);
        }
        self.inner
            .run_retention(now_ms.unwrap_or_else(now_millis), true)
    }

    pub fn disk_usage(&self) -> Result<DiskUsage> {
        self.check_open()?;
        self.inner.disk.usage()
    }

    /// Test hook: make the store see `ratio` as its disk usage (`None` to stop). Takes
    /// effect at once for write refusal; retention sees it on its next run.
    pub fn set_disk_usage_override(&self, ratio: Option<f64>) -> Result<DiskUsage> {
        self.check_open()?;
        self.inner.disk.set_usage_override(ratio)
    }

    /// Append one message.
    pub fn put(&self, topic: &str, queue_id: i32, draft: &MessageDraft<'_>) -> Result<PutResult> {
        let mut results = self.put_batch(topic, queue_id, std::slice::from_ref(draft))?;
        Ok(results.pop().expect("one result per message"))
    }

    /// Append messages to one queue as a unit: all are written or none.
    pub fn put_batch(
        &self,
        topic: &str,
        queue_id: i32,
        drafts: &[MessageDraft<'_>],
    ) -> Result<Vec<PutResult>> {
        self.check_writable()?;
        self.validate_written_topic(topic)?;
        validate_queue_id(queue_id)?;
        if drafts.is_empty() {
            return Err(Error::invalid("messages", "the batch is empty"));
        }
        let options = &self.inner.options;
        let prepared = drafts
            .iter()
            .map(|draft| draft.prepare(options.max_message_size, options.append_record_crc))
            .collect::<Result<Vec<_>>>()?;
        let born_default = now_millis();
        let inputs: Vec<RecordInput<'_>> = prepared
            .iter()
            .map(|message| RecordInput {
                topic,
                queue_id,
                flag: message.flag,
                body: message.body,
                body_crc: message.body_crc,
                properties: &message.properties,
                sys_flag: 0,
                born_timestamp: message.born_timestamp.unwrap_or(born_default),
                born_host: message.born_host.unwrap_or(options.store_host),
                store_host: options.store_host,
                reconsume_times: 0,
                prepared_transaction_offset: 0,
            })
            .collect();
        for input in &inputs {
            let length = crate::record::record_length(input);
            if length > self.inner.commit_log.max_record_length() {
                return Err(Error::invalid(
                    "body",
                    format!(
                        "the record needs {length} bytes, more than a {}-byte segment holds",
                        options.commitlog_segment_size
                    ),
                ));
            }
        }

        let (results, end) = {
            let _writer = self.inner.write_guard();
            self.check_writable()?;
            self.inner.ensure_topic(topic, queue_id + 1)?;
            let queue = self.inner.queues.get_or_create(topic, queue_id)?;
            let first_queue_offset = queue.max_offset();
            let store_timestamp = now_millis();
            let log_end_before = self.inner.commit_log.write_offset();
            let appended = self
                .inner
                .commit_log
                .append(&inputs, first_queue_offset, store_timestamp)
                .map_err(|error| self.inner.explain_disk_full(error))?;
            // Queue and index entries come from the record bytes as written, as in
            // recovery, so the derived files always agree with the log.
            // Every record of a put goes to the consume queue (no transaction flags), at
            // consecutive offsets from `first_queue_offset`; the entries are appended
            // together so each queue file is looked up once per batch.
            let mut index = self.inner.index.batch();
            let dispatched = appended
                .records
                .iter()
                .map(|placed| {
                    let view = appended.view(placed)?;
                    index.dispatch(&view)?;
                    Ok(queue_entry_of(&view))
                })
                .collect::<Result<Vec<_>>>()
                .and_then(|entries| {
                    let warmer = self.inner.commit_log.warmer();
                    queue.append_all(first_queue_offset, &entries, warmer)
                });
            drop(index);
            if let Err(error) = dispatched {
                // All or nothing: a batch whose queue or index entries cannot be written
                // (a full disk) is taken back out of the log. Index entries already
                // written point at offsets that later records reuse; key queries compare
                // each record's topic and keys, so they never return a wrong message.
                queue.truncate_from_physical(log_end_before as i64)?;
                self.inner.commit_log.roll_back(log_end_before)?;
                return Err(self.inner.explain_disk_full(error));
            }
            let mut results = Vec::with_capacity(appended.records.len());
            for (index, placed) in appended.records.iter().enumerate() {
                results.push(PutResult {
                    store_host: options.store_host,
                    commitlog_offset: placed.physical_offset as i64,
                    queue_offset: first_queue_offset + index as i64,
                    store_timestamp,
                    store_size: placed.size as i32,
                });
            }
            let end = self.inner.commit_log.write_offset();
            self.inner.dispatched_offset.store(end, Ordering::Release);
            self.inner
                .last_store_timestamp
                .store(store_timestamp, Ordering::Release);
            (results, end)
        };
        if options.flush_mode == FlushMode::Sync {
            self.inner
                .flush
                .wait_flushed(end, Duration::from_millis(options.sync_flush_timeout_ms))?;
        }
        Ok(results)
    }

    /// A topic that records are written for: a valid name, and short enough for V1
    /// when the store keeps RocketMQ 4.9 readers (longer topics get V2 records).
    fn validate_written_topic(&self, topic: &str) -> Result<()> {
        validate_topic(topic)?;
        if self.inner.options.v1_records_only {
            validate_v1_topic(topic)?;
        }
        Ok(())
    }

    /// The end of what readers may see: under sync flush only flushed records.
    fn readable_end(&self) -> u64 {
        match self.inner.options.flush_mode {
            FlushMode::Sync if !self.inner.options.read_only => self.inner.flush.flushed_offset(),
            _ => self.inner.commit_log.write_offset(),
        }
    }

    fn known_topic(&self, topic: &str) -> Result<()> {
        validate_topic(topic)?;
        if self.inner.queues.contains_topic(topic) || self.inner.topics().get(topic).is_some() {
            Ok(())
        } else {
            Err(Error::NotFound(format!("topic {topic:?} does not exist")))
        }
    }

    /// Read messages of a queue from `offset` on. With a tag filter, entries whose tag
    /// does not match are passed over (up to a bounded number) and `next_offset` moves
    /// past them.
    pub fn pull(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_count: usize,
        filter: Option<&TagFilter>,
        max_bytes: Option<usize>,
    ) -> Result<PullResult> {
        let mut messages = Vec::new();
        let pulled = self.pull_each(
            topic,
            queue_id,
            offset,
            max_count,
            filter,
            max_bytes,
            |view| {
                messages.push(StoredMessage::from_record(view));
            },
        )?;
        Ok(PullResult {
            messages,
            next_offset: pulled.next_offset,
            min_offset: pulled.min_offset,
            max_offset: pulled.max_offset,
        })
    }

    /// `pull`, handing each record to `visit` as it is read instead of collecting copies
    /// (the broker encodes them for the wire straight from the log).
    #[expect(
        clippy::too_many_arguments,
        reason = "pull's arguments and the visitor"
    )]
    pub fn pull_each(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_count: usize,
        filter: Option<&TagFilter>,
        max_bytes: Option<usize>,
        mut visit: impl FnMut(&RecordView<'_>),
    ) -> Result<Pulled> {
        self.check_open()?;
        self.known_topic(topic)?;
        validate_queue_id(queue_id)?;
        if offset < 0 {
            return Err(Error::invalid("offset", format!("{offset} is negative")));
        }
        if max_count == 0 {
            return Err(Error::invalid("max_count", "must be at least 1"));
        }
        let Some(queue) = self.inner.queues.get(topic, queue_id) else {
            return if offset == 0 {
                Ok(Pulled {
                    count: 0,
                    next_offset: 0,
                    min_offset: 0,
                    max_offset: 0,
                })
            } else {
                Err(Error::OffsetOutOfRange {
                    what: "queue",
                    offset,
                    min: 0,
                    max: 0,
                })
            };
        };
        let (min, max) = (queue.min_offset(), queue.max_offset());
        if offset < min || offset > max {
            return Err(Error::OffsetOutOfRange {
                what: "queue",
                offset,
                min,
                max,
            });
        }
        // Passing over non-matching entries is bounded so one pull cannot scan a whole
        // queue (RocketMQ bounds it the same way).
        const MAX_FILTERED_ENTRIES: i64 = 16_000;
        let readable_end = self.readable_end() as i64;
        let mut count = 0usize;
        let mut bytes = 0usize;
        let mut next = offset;
        while next < max
            && count < max_count
            && next - offset < MAX_FILTERED_ENTRIES + max_count as i64
        {
            let Some(entry) = queue.entry(next) else {
                break;
            };
            if entry.commitlog_end() > readable_end {
                break;
            }
            if entry.is_placeholder()
                || filter.is_some_and(|filter| !filter.matches_code(entry.tags_code))
            {
                next += 1;
                continue;
            }
            let record = match self
                .inner
                .commit_log
                .read(entry.commitlog_offset as u64, true)
            {
                Ok(record) => record,
                // Retention deleted the segment after the entry was read: the queue's
                // minimum has moved past this offset.
                Err(Error::OffsetOutOfRange { .. }) if count == 0 => {
                    return Err(Error::OffsetOutOfRange {
                        what: "queue",
                        offset,
                        min: queue.min_offset().max(next + 1),
                        max: queue.max_offset(),
                    });
                }
                Err(Error::OffsetOutOfRange { .. }) => break,
                // A damaged record ends the read before it, so that the valid records
                // ahead of it are returned; a read starting at it reports it.
                Err(Error::Corrupt { .. }) if next > offset => break,
                Err(error) => return Err(error.at_queue_offset(next)),
            };
            let view = record.view();
            if let Some(filter) = filter {
                if !filter.matches_tag(view.tags()) {
                    next += 1;
                    continue;
                }
            }
            if let Some(limit) = max_bytes {
                if count > 0 && bytes + view.body.len() > limit {
                    break;
                }
            }
            bytes += view.body.len();
            visit(&view);
            count += 1;
            next += 1;
        }
        Ok(Pulled {
            count,
            next_offset: next,
            min_offset: min,
            max_offset: max,
        })
    }

    /// Messages of `topic` whose keys or `UNIQ_KEY` include `key`, stored in
    /// `[begin, end]`, newest first, at most `max_count` (see `lookup.rs`).
    pub fn query_by_key(
        &self,
        topic: &str,
        key: &str,
        begin: i64,
        end: Option<i64>,
        max_count: usize,
    ) -> Result<Vec<StoredMessage>> {
        self.check_open()?;
        self.known_topic(topic)?;
        let end = end.unwrap_or(i64::MAX);
        crate::lookup::query_by_key(
            &self.inner.commit_log,
            &self.inner.index,
            self.readable_end(),
            topic,
            key,
            begin,
            end,
            max_count,
        )
    }

    /// The message a msgId names (see `lookup.rs`).
    pub fn get_by_msg_id(&self, msg_id: &str) -> Result<StoredMessage> {
        self.check_open()?;
        crate::lookup::get_by_msg_id(&self.inner.commit_log, self.readable_end(), msg_id)
    }

    /// The first queue offset stored at or after `timestamp` (see `lookup.rs`).
    pub fn offset_for_time(&self, topic: &str, queue_id: i32, timestamp: i64) -> Result<i64> {
        self.check_open()?;
        self.known_topic(topic)?;
        validate_queue_id(queue_id)?;
        let queue = self.inner.queues.get(topic, queue_id);
        crate::lookup::offset_for_time(
            &self.inner.commit_log,
            queue.as_deref(),
            self.readable_end(),
            timestamp,
        )
    }

    pub fn index(&self) -> &IndexService {
        &self.inner.index
    }

    /// Compare the index with a rebuild from the valid log; see `index_verify.rs`.
    pub fn verify_index(&self) -> Result<crate::index_verify::IndexVerification> {
        self.check_open()?;
        crate::index_verify::verify_index(
            &self.inner.index,
            &self.inner.commit_log,
            self.readable_end(),
        )
    }

    /// The record at a commit-log offset.
    pub fn read_at(&self, commitlog_offset: i64) -> Result<StoredMessage> {
        self.check_open()?;
        let offset = u64::try_from(commitlog_offset)
            .map_err(|_| Error::invalid("commitlog_offset", "is negative"))?;
        if offset >= self.readable_end() && offset < self.inner.commit_log.write_offset() {
            return Err(Error::OffsetOutOfRange {
                what: "commit-log",
                offset: commitlog_offset,
                min: self.inner.commit_log.min_offset() as i64,
                max: self.readable_end() as i64,
            });
        }
        let record = self.inner.commit_log.read(offset, true)?;
        Ok(StoredMessage::from_record(&record.view()))
    }

    pub fn min_offset(&self, topic: &str, queue_id: i32) -> Result<i64> {
        self.check_open()?;
        self.known_topic(topic)?;
        validate_queue_id(queue_id)?;
        Ok(self
            .inner
            .queues
            .get(topic, queue_id)
            .map_or(0, |queue| queue.min_offset()))
    }

    pub fn max_offset(&self, topic: &str, queue_id: i32) -> Result<i64> {
        self.check_open()?;
        self.known_topic(topic)?;
        validate_queue_id(queue_id)?;
        Ok(self
            .inner
            .queues
            .get(topic, queue_id)
            .map_or(0, |queue| queue.max_offset()))
    }

    /// Topics the store knows: configured ones and any with a consume queue.
    pub fn topics(&self) -> Result<Vec<String>> {
        self.check_open()?;
        let mut topics: BTreeSet<String> = self.inner.queues.topics().into_iter().collect();
        topics.extend(
            self.inner
                .topics()
                .topics()
                .map(|config| config.topic_name.clone()),
        );
        Ok(topics.into_iter().collect())
    }

    /// Number of queues of a topic: its configured count, or more if queues exist beyond.
    pub fn queue_count(&self, topic: &str) -> Result<i32> {
        self.check_open()?;
        self.known_topic(topic)?;
        let configured = self
            .inner
            .topics()
            .get(topic)
            .map_or(0, |config| config.queue_count());
        let existing = self
            .inner
            .queues
            .queues_of(topic)
            .iter()
            .map(|queue| queue.queue_id() + 1)
            .max()
            .unwrap_or(0);
        Ok(configured.max(existing))
    }

    pub fn create_topic(&self, topic: &str, queues: i32) -> Result<()> {
        self.check_writable()?;
        self.validate_written_topic(topic)?;
        if !(1..=MAX_QUEUE_ID + 1).contains(&queues) {
            return Err(Error::invalid(
                "queues",
                format!("{queues} is not between 1 and {}", MAX_QUEUE_ID + 1),
            ));
        }
        let _writer = self.inner.write_guard();
        let mut table = self.inner.topics();
        if table.ensure(topic, queues) {
            table.persist()?;
        }
        Ok(())
    }

    pub fn delete_topic(&self, topic: &str) -> Result<()> {
        self.check_writable()?;
        self.known_topic(topic)?;
        let _writer = self.inner.write_guard();
        let mut topics = self.inner.topics();
        if topics.remove(topic) {
            topics.persist()?;
        }
        drop(topics);
        self.inner.queues.remove_topic(topic)?;
        let mut offsets = self.inner.offsets.lock().expect("offset table lock");
        if offsets.remove_topic(topic) {
            offsets.persist()?;
        }
        Ok(())
    }

    pub fn commit_offset(
        &self,
        group: &str,
        topic: &str,
        queue_id: i32,
        offset: i64,
    ) -> Result<()> {
        self.check_writable()?;
        validate_group(group)?;
        validate_topic(topic)?;
        validate_queue_id(queue_id)?;
        if offset < 0 {
            return Err(Error::invalid("offset", format!("{offset} is negative")));
        }
        let mut offsets = self.inner.offsets.lock().expect("offset table lock");
        offsets.set(group, topic, queue_id, offset);
        offsets.persist()
    }

    pub fn committed_offset(&self, group: &str, topic: &str, queue_id: i32) -> Result<Option<i64>> {
        self.check_open()?;
        validate_group(group)?;
        validate_topic(topic)?;
        validate_queue_id(queue_id)?;
        Ok(self
            .inner
            .offsets
            .lock()
            .expect("offset table lock")
            .get(group, topic, queue_id))
    }

    /// Flush everything written so far and refresh the checkpoint.
    pub fn flush(&self) -> Result<()> {
        self.check_open()?;
        if self.inner.options.read_only {
            return Ok(());
        }
        self.inner.flush_log()?;
        self.inner.checkpoint()
    }

    /// Compare the consume queues with a rebuild from the valid log; see `verify.rs`.
    /// Entries that recovery of a read-only store had to hide count as differences.
    pub fn verify(&self) -> Result<crate::verify::VerifyReport> {
        self.check_open()?;
        let mut report = crate::verify::verify(
            &self.inner.commit_log,
            &self.inner.queues,
            self.readable_end(),
        )?;
        let hidden = self.inner.recovery_report.consume_queue_entries_removed;
        if self.inner.options.read_only && hidden > 0 {
            report.difference_count += hidden;
            report.differences.push(crate::verify::Difference {
                kind: "extra_entries",
                detail: format!("{hidden} consume-queue entries point past the end of the valid log (recovery would remove them)"),
            });
        }
        let index = self.verify_index()?;
        report.difference_count += index.difference_count;
        for detail in index.differences {
            if report.differences.len() < crate::verify::MAX_LISTED_DIFFERENCES {
                report.differences.push(crate::verify::Difference {
                    kind: "index",
                    detail,
                });
            }
        }
        Ok(report)
    }

    /// Delete every consume queue and index entry and dispatch the whole log again.
    pub fn rebuild(&self) -> Result<u64> {
        self.check_writable()?;
        let _writer = self.inner.write_guard();
        for topic in self.inner.queues.topics() {
            self.inner.queues.remove_topic(&topic)?;
        }
        let start = self.inner.commit_log.min_offset();
        // Cutting the index at the log's first record empties it.
        let record_at = |offset: i64| {
            let record = self
                .inner
                .commit_log
                .read(u64::try_from(offset).ok()?, false)
                .ok()?;
            let view = record.view();
            Some((view.store_timestamp, view.total_size as i64))
        };
        self.inner.index.recover(start as i64, false, record_at)?;
        let mut dispatched = 0u64;
        self.inner.commit_log.scan(start, false, |_, view| {
            self.inner.index.dispatch(view)?;
            if dispatch_to_consume_queue(&self.inner.queues, view)?
                == crate::dispatch::Dispatched::Appended
            {
                dispatched += 1;
            }
            Ok(None)
        })?;
        self.inner.checkpoint()?;
        Ok(dispatched)
    }

    /// Test hook: make the next flush fail as a disk error would.
    pub fn inject_flush_failure(&self, message: &str) {
        self.inner.flush.inject_failure(message.to_string());
    }

    pub fn flushed_offset(&self) -> u64 {
        self.inner.flush.flushed_offset()
    }

    /// Flush, write the checkpoint, remove `abort` and release the lock. Idempotent.
    pub fn close(&self) -> Result<()> {
        if self.inner.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.inner.flush.stop();
        self.inner.commit_log.stop_warming();
        *self.inner.background_stop.0.lock().expect("stop lock") = true;
        self.inner.background_stop.1.notify_all();
        if let Some(thread) = self
            .retention_thread
            .lock()
            .expect("retention thread lock")
            .take()
        {
            let _ = thread.join();
        }
        self.inner.index.shutdown();
        if let Some(thread) = self.flush_thread.lock().expect("flush thread lock").take() {
            let _ = thread.join();
        }
        // After a failed flush the files cannot be closed cleanly: `abort` stays, so the
        // next open recovers them.
        let failed = self.inner.flush.failure().is_some();
        let outcome = if self.inner.options.read_only || failed {
            Ok(())
        } else {
            self.inner.shut_down_cleanly()
        };
        self.inner.lock.lock().expect("store lock").take();
        outcome
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

fn validate_queue_id(queue_id: i32) -> Result<()> {
    if (0..=MAX_QUEUE_ID).contains(&queue_id) {
        Ok(())
    } else {
        Err(Error::invalid(
            "queue_id",
            format!("{queue_id} is not between 0 and {MAX_QUEUE_ID}"),
        ))
    }
}

impl StoreInner {
    fn write_guard(&self) -> MutexGuard<'_, ()> {
        self.write_lock.lock().expect("write lock")
    }

    fn topics(&self) -> MutexGuard<'_, TopicConfigTable> {
        self.topics.lock().expect("topic table lock")
    }

    /// Make sure a topic written to exists with enough queues; a new one gets at least
    /// the default queue count.
    fn ensure_topic(&self, topic: &str, queues: i32) -> Result<()> {
        let mut table = self.topics();
        let wanted = if table.get(topic).is_none() {
            queues.max(self.options.default_queue_count)
        } else {
            queues
        };
        if table.ensure(topic, wanted) {
            table.persist()?;
        }
        Ok(())
    }

    /// msync the log up to what is written now; returns the flushed offset.
    fn flush_log(&self) -> Result<u64> {
        self.flush.run_flush(|| {
            // Read before the target, so it is no newer than the last record flushed.
            let timestamp = self.last_store_timestamp.load(Ordering::Acquire);
            let target = self.commit_log.write_offset();
            let from = self.flush.flushed_offset().min(target);
            self.commit_log.flush_range(from, target)?;
            self.flushed_store_timestamp
                .fetch_max(timestamp, Ordering::AcqRel);
            Ok(target)
        })
    }

    /// Flush the queues, then record in the checkpoint an offset below which the log and
    /// the queues are both durable.
    fn checkpoint(&self) -> Result<()> {
        // Serialised and monotonic: a background checkpoint racing an explicit flush
        // must not record an older offset after a newer one.
        let mut last_written = self.checkpoint_lock.lock().expect("checkpoint lock");
        let timestamp = self.flushed_store_timestamp.load(Ordering::Acquire);
        let dispatched = self.dispatched_offset.load(Ordering::Acquire);
        self.queues.flush()?;
        self.index.flush()?;
        let safe = (self.flush.flushed_offset().min(dispatched) as i64).max(*last_written);
        *last_written = safe;
        let checkpoint = Checkpoint {
            physic_msg_timestamp: timestamp,
            logics_msg_timestamp: timestamp,
            index_msg_timestamp: self.index.sealed_end_timestamp(),
            master_flushed_offset: 0,
            confirm_phy_offset: 0,
            flushed_offset: Some(safe),
            records_carry_crc: self.options.append_record_crc,
        };
        checkpoint.store(&self.root)
    }

    /// A new segment that cannot be allocated (ENOSPC, EDQUOT) becomes the same
    /// `DiskFull` error the usage threshold gives, naming the store, the usage and the
    /// threshold, and the store refuses writes until usage falls.
    fn explain_disk_full(&self, error: Error) -> Error {
        let Error::Io { source, .. } = &error else {
            return error;
        };
        if !matches!(source.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT)) {
            return error;
        }
        let threshold = self.options.retention.disk_space_warning_level_ratio;
        let usage = self.disk.refresh().map_or(1.0, |usage| usage.ratio);
        Error::DiskFull {
            path: self.root.clone(),
            usage,
            threshold,
        }
    }

    fn retention_loop(&self) {
        let interval = Duration::from_millis(self.options.retention.check_interval_ms);
        loop {
            {
                let stopped = self.background_stop.0.lock().expect("stop lock");
                if *stopped {
                    return;
                }
                let stopped = self
                    .background_stop
                    .1
                    .wait_timeout(stopped, interval)
                    .expect("stop lock")
                    .0;
                if *stopped {
                    return;
                }
            }
            let Ok(usage) = self.disk.refresh() else {
                continue;
            };
            let options = &self.options.retention;
            let now = now_millis();
            let due = options
                .delete_when
                .contains(&crate::retention::local_hour(now))
                || usage.ratio > options.disk_max_used_space_ratio;
            if due {
                // Failures show in the next explicit run's report; the thread keeps going.
                let _ = self.run_retention(now, false);
            }
        }
    }

    fn run_retention(&self, now_ms: i64, requested: bool) -> Result<RetentionReport> {
        let _one_run = self.retention_lock.lock().expect("retention lock");
        let options = &self.options.retention;
        let usage = self.disk.usage()?;
        let segments = self.commit_log.segments().segments();
        let (to_delete, kept) =
            crate::retention::plan(&segments, options, usage.ratio, now_ms, requested);
        drop(segments);
        let mut deleted = Vec::with_capacity(to_delete.len());
        for (index, (segment, reason)) in to_delete.into_iter().enumerate() {
            if index > 0 {
                crate::retention::pause_between_deletions(options);
            }
            let start = segment.start_offset();
            let path = segment.path().to_path_buf();
            drop(segment);
            if self.commit_log.segments().remove_first_if(start)?.is_some() {
                deleted.push(SegmentDecision {
                    path,
                    start_offset: start,
                    reason,
                });
            }
        }
        let commitlog_min_offset = self.commit_log.min_offset();
        let mut consume_queue_files_deleted = 0;
        if !deleted.is_empty() {
            let _writer = self.write_guard();
            for queue in self.queues.all() {
                consume_queue_files_deleted += queue.drop_below(commitlog_min_offset as i64)?;
            }
        }
        let index_files_deleted = if deleted.is_empty() {
            0
        } else {
            self.index.delete_files_below(commitlog_min_offset as i64)?
        };
        let disk_usage = self.disk.refresh()?;
        Ok(RetentionReport {
            deleted,
            kept,
            commitlog_min_offset,
            consume_queue_files_deleted,
            index_files_deleted,
            disk_usage,
        })
    }

    fn flush_loop(&self) {
        let sync = self.options.flush_mode == FlushMode::Sync;
        let interval = if sync {
            SYNC_FLUSH_POLL
        } else {
            Duration::from_millis(self.options.flush_interval_ms)
        };
        let thorough = Duration::from_millis(self.options.flush_thorough_interval_ms);
        let least_bytes = (self.options.flush_least_pages * 4096) as u64;
        let mut last_thorough = Instant::now();
        let mut last_checkpoint = Instant::now();
        while self.flush.wait_for_work(interval) {
            let dirty = self
                .commit_log
                .write_offset()
                .saturating_sub(self.flush.flushed_offset());
            let due = sync || dirty >= least_bytes || last_thorough.elapsed() >= thorough;
            if due && dirty > 0 {
                if self.flush_log().is_err() {
                    // The failure is recorded in the flush service; writers see it.
                    continue;
                }
                if last_thorough.elapsed() >= thorough {
                    last_thorough = Instant::now();
                }
            }
            if last_checkpoint.elapsed() >= CHECKPOINT_INTERVAL && self.flush.failure().is_none() {
                let _ = self.checkpoint();
                last_checkpoint = Instant::now();
            }
        }
    }

    fn shut_down_cleanly(&self) -> Result<()> {
        let _writer = self.write_guard();
        self.flush_log()?;
        self.checkpoint()?;
        self.topics().persist()?;
        fs::remove_file(abort_path(&self.root)).at(&abort_path(&self.root))?;
        crate::atomic_file::sync_dir(&self.root)
    }
}
