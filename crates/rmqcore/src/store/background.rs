//! Durability and housekeeping: flushing, the checkpoint, the flush and retention
//! threads, and a clean shutdown.

use crate::clock::now_millis;
use crate::config::checkpoint::Checkpoint;
use crate::disk_usage::DiskUsage;
use crate::error::{Error, IoContext, Result};
use crate::options::FlushMode;
use crate::retention::{RetentionReport, SegmentDecision};
use std::fs;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::{abort_path, Store, StoreInner};

/// How often the background thread refreshes the checkpoint (RocketMQ 5 does it every
/// second), which bounds how much log recovery must scan.
const CHECKPOINT_INTERVAL: Duration = Duration::from_secs(1);
/// How often the flush thread looks for sync writers.
const SYNC_FLUSH_POLL: Duration = Duration::from_millis(10);

impl Store {
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

    /// Flush everything written so far and refresh the checkpoint.
    pub fn flush(&self) -> Result<()> {
        self.check_open()?;
        if self.inner.options.read_only {
            return Ok(());
        }
        self.inner.flush_log()?;
        self.inner.checkpoint()
    }

    pub fn flushed_offset(&self) -> u64 {
        self.inner.flush.flushed_offset()
    }

    /// Test hook: make the next flush fail as a disk error would.
    pub fn inject_flush_failure(&self, message: &str) {
        self.inner.flush.inject_failure(message.to_string());
    }
}

impl StoreInner {
    /// msync the log up to what is written now; returns the flushed offset.
    pub(super) fn flush_log(&self) -> Result<u64> {
        self.flush.run_flush(|| {
            // Read before the target, so it is no newer than the last record flushed.
            let timestamp = self.last_store_timestamp.load(Ordering::Acquire);
            let target = self.commit_log.write_offset();
            let from = self.flush.flushed_offset().min(target);
            let started = std::time::Instant::now();
            self.commit_log.flush_range(from, target)?;
            if target > from {
                self.metrics.flushed(target - from, started.elapsed());
            }
            self.flushed_store_timestamp
                .fetch_max(timestamp, Ordering::AcqRel);
            Ok(target)
        })
    }

    /// Flush the queues, then record in the checkpoint an offset below which the log and
    /// the queues are both durable.
    pub(super) fn checkpoint(&self) -> Result<()> {
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

    /// Wait up to `interval`; true once the store is closing.
    pub(super) fn wait_stopped(&self, interval: Duration) -> bool {
        let stopped = self.background_stop.0.lock().expect("stop lock");
        if *stopped {
            return true;
        }
        *self
            .background_stop
            .1
            .wait_timeout(stopped, interval)
            .expect("stop lock")
            .0
    }

    pub(super) fn retention_loop(&self) {
        let interval = Duration::from_millis(self.options.retention.check_interval_ms);
        loop {
            if self.wait_stopped(interval) {
                return;
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

    pub(super) fn run_retention(&self, now_ms: i64, requested: bool) -> Result<RetentionReport> {
        let report = if self.tier.is_some() {
            self.run_tier_retention(now_ms)?
        } else {
            self.run_local_retention(now_ms, requested)?
        };
        self.metrics.retention_ran(&report);
        Ok(report)
    }

    fn run_local_retention(&self, now_ms: i64, requested: bool) -> Result<RetentionReport> {
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
            consume_queue_files_deleted += self.queues.drop_below(commitlog_min_offset as i64)?;
        }
        let index_files_deleted = if deleted.is_empty() {
            0
        } else {
            self.index.delete_files_below(commitlog_min_offset as i64)?
        };
        let disk_usage = self.disk.refresh()?;
        Ok(RetentionReport {
            deleted,
            evicted: Vec::new(),
            kept,
            commitlog_min_offset,
            consume_queue_files_deleted,
            index_files_deleted,
            disk_usage,
        })
    }

    pub(super) fn flush_loop(&self) {
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

    pub(super) fn shut_down_cleanly(&self) -> Result<()> {
        let _writer = self.write_guard();
        self.commit_log.remove_unwritten_segment()?;
        self.flush_log()?;
        self.checkpoint()?;
        self.topics().persist()?;
        fs::remove_file(abort_path(&self.root)).at(&abort_path(&self.root))?;
        crate::files::atomic_file::sync_dir(&self.root)
    }
}
