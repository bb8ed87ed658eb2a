//! A store directory (format §0.1): the commit log, its consume queues, the checkpoint,
//! abort and lock files, and the config files, behind one API.
//!
//! Thread safety: `Store` is `Send + Sync`. Appends are serialised by one write lock (one
//! writer, as in RocketMQ); reads run concurrently with them and with each other.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use crate::commit_log::flush_service::FlushService;
use crate::commit_log::CommitLog;
use crate::config::checkpoint::Checkpoint;
use crate::config::consumer_offsets::ConsumerOffsetTable;
use crate::config::topics::TopicConfigTable;
use crate::consume_queue::ConsumeQueueStore;
use crate::disk_usage::DiskGuard;
use crate::error::{Error, IoContext, Result};
use crate::files::store_lock::StoreLock;
use crate::index::layout::IndexGeometry;
use crate::index::IndexService;
use crate::options::{ConsumeQueueType, StoreOptions, MAX_QUEUE_ID};
use crate::recovery::{recover, RecoveryReport};
use crate::tier::uploader::Uploader;

mod admin;
mod background;
mod lost_segment;
mod maintenance;
mod metrics;
mod pull_query;
mod queue_readers;
mod read;
mod read_ahead;
mod tier_retention;
mod tier_status;
mod tiering;
mod tiering_queues;
mod write;

pub use metrics::{HistogramSnapshot, MetricsSnapshot, QueueTrafficSnapshot};
pub use pull_query::{PullQuery, PullResult, Pulled};
pub use tier_status::{SegmentTier, TierStatus};

struct StoreInner {
    root: PathBuf,
    options: StoreOptions,
    lock: Mutex<Option<StoreLock>>,
    commit_log: CommitLog,
    queues: Box<dyn ConsumeQueueStore>,
    consume_queue_type: ConsumeQueueType,
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
    /// Wakes and stops the retention and tier threads.
    background_stop: (Mutex<bool>, Condvar),
    /// Uploads sealed segments to the store's tier, if it has one.
    tier: Option<Arc<Uploader>>,
    /// Pulls of evicted records tell the tier what they will read next.
    read_ahead: read_ahead::QueueReadAhead,
    metrics: metrics::StoreMetrics,
}

pub struct Store {
    inner: Arc<StoreInner>,
    flush_thread: Mutex<Option<JoinHandle<()>>>,
    retention_thread: Mutex<Option<JoinHandle<()>>>,
    tier_thread: Mutex<Option<JoinHandle<()>>>,
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
    pub fn open(root: &Path, mut options: StoreOptions) -> Result<Store> {
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
        // Before the queues open: the log's first offset may be in the tier.
        options.tier = tiering::tier_options_for(root, options.tier.as_ref())?;
        let tier = match &options.tier {
            Some(tier_options) => Some(tiering::open_tier(
                root,
                tier_options,
                &commit_log,
                writable,
            )?),
            None => None,
        };
        let consume_queue_type = crate::consume_queue::form::choose(root, &options)?;
        let queues = crate::consume_queue::form::open(
            root,
            consume_queue_type,
            &options,
            commit_log.min_offset() as i64,
            !commit_log.segments().segments().is_empty(),
            tier.as_ref()
                .map(|uploader| Arc::clone(uploader.remote()) as _),
        )?;
        let checkpoint = Checkpoint::load(root)?;
        let topics = TopicConfigTable::load(root)?;
        let offsets = ConsumerOffsetTable::load(root)?;
        let index_geometry = IndexGeometry {
            slot_count: options.index_slot_count as u32,
            entry_count: options.index_entry_count as u32,
        };
        let index = IndexService::load(root, index_geometry, writable)?;
        if let Some(uploader) = &tier {
            index.attach_remote(Arc::clone(uploader.remote()) as _);
        }
        let recovery_report = recover(
            &commit_log,
            queues.as_ref(),
            &checkpoint,
            abort_file_found,
            writable,
            &index,
        )?;
        let log_min = commit_log.min_offset() as i64;
        for queue in queues.all() {
            queue.correct_min_offset(log_min);
        }
        let end = commit_log.write_offset();
        if writable {
            // Present while the store is open; its presence at the next open means the
            // shutdown was not clean.
            fs::write(abort_path(root), std::process::id().to_string()).at(&abort_path(root))?;
            crate::files::atomic_file::sync_dir(root)?;
        }
        // Pulls' hints share the bound of the tier's read-ahead among the queues read.
        let read_ahead = read_ahead::QueueReadAhead::new(
            tier.as_ref().map(|uploader| Arc::clone(uploader.remote())),
        );
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
            consume_queue_type,
            index,
            disk: DiskGuard::new(root, options.retention.disk_space_warning_level_ratio),
            retention_lock: Mutex::new(()),
            background_stop: (Mutex::new(false), Condvar::new()),
            tier,
            read_ahead,
            metrics: metrics::StoreMetrics::default(),
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
        let flush_thread = writable
            .then(|| spawn_background(&inner, root, "rmq-flush", StoreInner::flush_loop))
            .transpose()?;
        let retention_thread = if writable {
            inner.disk.refresh()?;
            let retention = StoreInner::retention_loop;
            Some(spawn_background(&inner, root, "rmq-retention", retention)?)
        } else {
            None
        };
        let tier_thread = (writable && inner.tier.is_some())
            .then(|| spawn_background(&inner, root, "rmq-tier", StoreInner::tier_loop))
            .transpose()?;
        let store = Store {
            inner,
            flush_thread: Mutex::new(flush_thread),
            retention_thread: Mutex::new(retention_thread),
            tier_thread: Mutex::new(tier_thread),
        };
        if store.inner.options.rebuild_consume_queues && writable {
            store.rebuild()?;
        }
        Ok(store)
    }

    pub fn root(&self) -> &Path {
        &self.inner.root
    }

    pub fn options(&self) -> &StoreOptions {
        &self.inner.options
    }

    /// The form of the store's consume queues.
    pub fn consume_queue_type(&self) -> ConsumeQueueType {
        self.inner.consume_queue_type
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

    pub fn consume_queues(&self) -> &dyn ConsumeQueueStore {
        self.inner.queues.as_ref()
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
        if let Some(thread) = self.tier_thread.lock().expect("tier thread lock").take() {
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
        self.inner.queues.close();
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
        // One lookup on every put to a topic that has its queues already.
        let wanted = match table.get(topic) {
            Some(config) if config.queue_count() >= queues => return Ok(()),
            Some(_) => queues,
            None => queues.max(self.options.default_queue_count),
        };
        if table.ensure(topic, wanted) {
            table.persist()?;
        }
        Ok(())
    }
}

/// One of the store's background threads (flush, retention, tier), running `work` on the
/// store's shared state until the store stops it.
fn spawn_background(
    inner: &Arc<StoreInner>,
    root: &Path,
    name: &str,
    work: fn(&StoreInner),
) -> Result<JoinHandle<()>> {
    let background = Arc::clone(inner);
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || work(&background))
        .map_err(|error| Error::io(root, error))
}
