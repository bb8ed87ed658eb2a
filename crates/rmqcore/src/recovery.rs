//! Recovery on open (format §5): find the end of the valid commit log, cut what follows,
//! remove consume-queue entries that point past it, and dispatch what the queues lack.
//!
//! Where the scan starts: an rmq checkpoint records an offset below which the log and
//! the queues were both flushed, so the scan covers only the unflushed tail and restart
//! time does not grow with the store. A RocketMQ-written store has no such offset; its
//! scan starts at the newest segment that RocketMQ's own rules make safe.

use std::collections::HashMap;
use std::time::Instant;

use crate::commit_log::{CommitLog, ScanEnd};
use crate::config::checkpoint::Checkpoint;
use crate::consume_queue::ConsumeQueueStore;
use crate::dispatch::{Dispatched, Dispatcher};
use crate::error::Result;
use crate::index::IndexService;
use crate::record::{decode_record, Decoded};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecoveryMode {
    /// The last shutdown was clean (no `abort` file).
    Normal,
    /// The `abort` file was there: the process died or the machine lost power.
    Abnormal,
    /// Opened read-only: nothing was changed on disk; what would be cut is only hidden.
    ReadOnly,
}

impl RecoveryMode {
    pub fn as_str(&self) -> &'static str {
        match self {
            RecoveryMode::Normal => "normal",
            RecoveryMode::Abnormal => "abnormal",
            RecoveryMode::ReadOnly => "read_only",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct RecoveryReport {
    pub mode: RecoveryMode,
    /// Why the scan started where it did.
    pub start_reason: String,
    pub scan_start_offset: u64,
    /// One past the last valid record: the log's end after recovery.
    pub valid_end_offset: u64,
    pub records_scanned: u64,
    /// Bytes between the valid end and the furthest point the log had data.
    pub bytes_truncated: u64,
    /// Why the scan stopped; `None` when it reached clean end-of-data.
    pub stop_reason: Option<String>,
    pub consume_queue_entries_removed: u64,
    pub records_redispatched: u64,
    /// Queue entries the log holds but the queues lack (read-only opens cannot add them).
    pub records_not_dispatched: u64,
    pub duration_ms: f64,
}

/// Where recovery may start scanning: a record boundary below which nothing needs
/// checking or dispatching.
fn scan_start(
    commit_log: &CommitLog,
    queues: &dyn ConsumeQueueStore,
    checkpoint: &Checkpoint,
    clean: bool,
) -> (u64, String) {
    // Recovery checks local segments only: those in the tier were sealed and uploaded.
    let min = commit_log.local_min_offset();
    if let Some(flushed) = checkpoint.flushed_offset {
        let start = u64::try_from(flushed).unwrap_or(0).max(min);
        return (
            start,
            format!("rmq checkpoint: log and queues flushed up to {flushed}"),
        );
    }
    let dispatched_end = queues
        .all()
        .iter()
        // A queue's last entry is in its newest file, which is never evicted; an entry
        // that cannot be read counts as none, so recovery scans from further back.
        .filter_map(|queue| queue.last_entry().ok().flatten())
        .map(|entry| entry.commitlog_end())
        .max()
        .unwrap_or(0);
    let segments = commit_log.segments().segments();
    if clean {
        // RocketMQ 5.3.2+: the newest segment starting at or below the queues' end.
        let start = segments
            .iter()
            .rev()
            .find(|segment| segment.start_offset() as i64 <= dispatched_end)
            .map_or(min, |segment| segment.start_offset());
        return (
            start,
            format!(
                "RocketMQ store, clean shutdown: segment holding the queues' end {dispatched_end}"
            ),
        );
    }
    // Abnormal: the newest segment whose first record was stored before the checkpoint's
    // safe time.
    let safe_time = checkpoint.min_timestamp();
    for segment in segments.iter().rev() {
        if let Ok(Decoded::Record(view)) = decode_record(segment.bytes_from(0), true) {
            if view.store_timestamp != 0 && view.store_timestamp <= safe_time {
                return (
                    segment.start_offset(),
                    format!(
                        "RocketMQ store, unclean shutdown: first segment stored before {safe_time}"
                    ),
                );
            }
        }
    }
    (
        min,
        "RocketMQ store, unclean shutdown: no segment predates the checkpoint; from the first"
            .to_string(),
    )
}

/// Recover the log and queues. In read-only mode files are left as they are.
pub fn recover(
    commit_log: &CommitLog,
    queues: &dyn ConsumeQueueStore,
    checkpoint: &Checkpoint,
    abort_file_found: bool,
    writable: bool,
    index: &IndexService,
) -> Result<RecoveryReport> {
    let started = Instant::now();
    let mode = match (writable, abort_file_found) {
        (false, _) => RecoveryMode::ReadOnly,
        (true, false) => RecoveryMode::Normal,
        (true, true) => RecoveryMode::Abnormal,
    };
    let (start, start_reason) = scan_start(commit_log, queues, checkpoint, !abort_file_found);

    // A writable store drops every queue entry from the scan start on and dispatches
    // those records again: entries past the checkpoint may have holes or point at bytes
    // that were lost.
    let mut consume_queue_entries_removed = 0;
    if writable {
        consume_queue_entries_removed += queues.truncate_from_physical(start as i64)?;
    }

    // Each record must continue its queue exactly: the body CRC does not cover the
    // header, so a damaged queue id or queue offset shows up here instead.
    let mut next_queue_offsets: HashMap<(Vec<u8>, i32), i64> = HashMap::new();
    let mut records_scanned = 0u64;
    let (valid_end, end) = commit_log.scan(start, true, |_, view| {
        records_scanned += 1;
        if checkpoint.records_carry_crc && !crate::record::crc_property::has_crc_property(view) {
            return Ok(Some(
                "the record lacks the CRC property every record since the checkpoint carries"
                    .to_string(),
            ));
        }
        if !writable || !view.is_dispatched_to_consume_queue() {
            return Ok(None);
        }
        let key = (view.topic.to_vec(), view.queue_id);
        let expected = *next_queue_offsets.entry(key).or_insert_with(|| {
            queues
                .get(&view.topic_str(), view.queue_id)
                .map_or(view.queue_offset, |queue| queue.max_offset())
        });
        if view.queue_offset != expected {
            return Ok(Some(format!(
                "queue offset {} of {}/{} does not continue the queue at {expected}",
                view.queue_offset,
                view.topic_str(),
                view.queue_id
            )));
        }
        next_queue_offsets.insert((view.topic.to_vec(), view.queue_id), expected + 1);
        Ok(None)
    })?;
    // Only an invalid record means there may be data past the valid end.
    let (data_end, stop_reason) = match end {
        ScanEnd::EndOfData | ScanEnd::EndOfSegments => (valid_end, None),
        ScanEnd::Invalid { offset, reason } => (
            furthest_data(commit_log, valid_end),
            Some(format!("invalid record at offset {offset}: {reason}")),
        ),
    };

    if writable {
        commit_log.truncate(valid_end)?;
    } else {
        // Read-only: entries past the valid end are hidden, files stay as they are.
        consume_queue_entries_removed += queues.truncate_from_physical(valid_end as i64)?;
        commit_log.set_write_offset(valid_end);
    }

    // The index drops its entries from the scan start on too (`IndexService::recover`);
    // if a torn file leaves it complete only below an earlier record, it is fed from
    // there, and the queues still from the scan start.
    let index_from = if writable {
        let record_at = |offset: i64| {
            let view_of = commit_log.read(u64::try_from(offset).ok()?, false).ok()?;
            let view = view_of.view();
            Some((view.store_timestamp, view.total_size as i64))
        };
        let complete_below = index
            .recover(start as i64, !abort_file_found, record_at)?
            .complete_below;
        u64::try_from(complete_below)
            .unwrap_or(start)
            .max(commit_log.local_min_offset())
            .min(start)
    } else {
        start
    };

    let mut records_redispatched = 0u64;
    let mut records_not_dispatched = 0u64;
    let mut dispatcher = Dispatcher::new(queues, index);
    commit_log.scan(index_from, false, |offset, view| {
        if writable {
            dispatcher.index(view)?;
            if offset >= start && dispatcher.to_queue(view)? == Dispatched::Appended {
                records_redispatched += 1;
            }
        } else if view.is_dispatched_to_consume_queue() {
            let topic = view.topic_str();
            let present = queues
                .get(&topic, view.queue_id)
                .is_some_and(|queue| view.queue_offset < queue.max_offset());
            if !present {
                records_not_dispatched += 1;
            }
        }
        Ok(None)
    })?;
    dispatcher.finish()?;

    Ok(RecoveryReport {
        mode,
        start_reason,
        scan_start_offset: start,
        valid_end_offset: valid_end,
        records_scanned,
        bytes_truncated: data_end.saturating_sub(valid_end),
        stop_reason,
        consume_queue_entries_removed,
        records_redispatched,
        records_not_dispatched,
        duration_ms: started.elapsed().as_secs_f64() * 1000.0,
    })
}

/// The end of the non-zero bytes at or after `from` in its segment and every later one:
/// how much a truncation at `from` throws away.
fn furthest_data(commit_log: &CommitLog, from: u64) -> u64 {
    let mut end = from;
    for segment in commit_log.segments().segments() {
        if segment.end_offset() <= from {
            continue;
        }
        let skip = from.saturating_sub(segment.start_offset()) as usize;
        if let Some(last) = segment.bytes_from(skip).iter().rposition(|b| *b != 0) {
            end = segment.start_offset() + (skip + last + 1) as u64;
        }
    }
    end
}
