//! Read-ahead for pulls of evicted records: the consume queue knows which records a
//! consumer will read next, so the tier is told their offsets and sizes and fetches just
//! those ranges in the background (a queue's records lie between other queues' records;
//! fetching whole ranges of the log would fetch them all).
//!
//! A queue is hinted whole groups of entries, ahead of the consumer, and each group once:
//! a pull within hinted groups costs a map lookup, and the tier gets the groups' ranges
//! together, so its GETs cover whole runs of the queue's records. How far ahead is
//! measured in the bytes of the hinted records themselves (what the tier fetches of a
//! queue-grouped object, where a queue's records lie back to back), not in entries nor in
//! the bytes of the log they span, and topped up half that span at a time. The span is a
//! share of the tier's read-ahead bound (`BlockCache::fetch_ahead_limit`): the bound
//! divided among the queues pulled from the tier lately, so one reader alone hints up to
//! seven eighths of it and four at once a quarter of that each; a hint never goes past
//! the room the bound leaves at the time (what it would name past it is hinted at a later
//! pull). Measured in log bytes (24 MiB), a reader of one queue of four had about 6 MiB
//! of its own records ahead, topped up 3 MiB at a time: 60 GETs of about 2.5 MB for
//! `bench tier`'s quick store, now 32.
//!
//! And once every reader of a queue has read past records (`queue_readers.rs`), the tier
//! is told, and the blocks it fetched ahead for them leave its cache at once
//! (`RemoteLog::release_read`): their receive buffers are reused by the next GETs, where
//! until the cache was full they were new memory (a fresh process mapped and zeroed the
//! cache's 64 MiB of new pages, at about 1 GB/s on the bench's VM).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::queue_readers::{QueueReaders, READING_LATELY};
use crate::commit_log::CommitLog;
use crate::consume_queue::ConsumeQueue;
use crate::tier::remote_log::RemoteLog;

/// Entries per group.
const GROUP: i64 = 1024;
/// Groups hinted ahead of the one a pull starts in, at least: with 1 KiB records, about
/// 3 MiB of one queue's records in flight or cached ahead of its consumer.
const MIN_GROUPS_AHEAD: i64 = 3;
/// The share of the read-ahead bound the readers' spans add up to: a reader's hints reach
/// at most a group past its span (a group of 1 KiB records is 1 MiB), and the eighth
/// left over keeps such overshoots inside the bound, past which the tier would drop them
/// (their records then fetched when read, block by block, in small GETs).
const SPAN_SHARE: (u64, u64) = (7, 8);
/// And never more groups than this ahead (64 MiB of 1 KiB records).
const MAX_GROUPS_AHEAD: i64 = 64;
/// Queues remembered; past this the memory is cleared (a hint is only a hint).
const MAX_QUEUES: usize = 4096;
/// The most entries told to the tier as read at once: a reader that jumped far ahead has
/// read none of what it jumped over, and no more than this was hinted behind it.
const MAX_RELEASED: i64 = (MAX_GROUPS_AHEAD + 1) * GROUP;

/// What was hinted of one queue.
#[derive(Debug, Clone, Copy)]
struct Hinted {
    /// The groups hinted, as [first, end).
    first: i64,
    end: i64,
    /// Records hinted and their bytes, since `first`: their mean size turns entries
    /// ahead into bytes ahead.
    records: u64,
    bytes: u64,
    /// When the queue was last pulled from the tier.
    pulled: Instant,
}

impl Hinted {
    /// The bytes of the hinted records from queue offset `offset` on.
    fn bytes_ahead(&self, offset: i64) -> u64 {
        let entries = (self.end * GROUP - offset).max(0) as u64;
        entries.saturating_mul(self.bytes) / self.records.max(1)
    }
}

/// What is known of one queue's reads from the tier.
#[derive(Debug)]
struct QueueRead {
    hinted: Hinted,
    readers: QueueReaders,
    /// Entries before this have been told to the tier as read by every reader.
    released: i64,
}

pub(super) struct QueueReadAhead {
    /// Per queue (by its object's address).
    hinted: Mutex<HashMap<usize, QueueRead>>,
    /// The tier the hints are for, and its read-ahead bound in bytes.
    tier: Option<(Arc<RemoteLog>, u64)>,
}

impl QueueReadAhead {
    pub(super) fn new(tier: Option<Arc<RemoteLog>>) -> Self {
        QueueReadAhead {
            hinted: Mutex::default(),
            tier: tier.map(|tier| {
                let limit = tier.read_ahead_limit_bytes();
                (tier, limit)
            }),
        }
    }

    /// A pull of `queue` starts at `offset`, whose record lies at `commitlog_offset`:
    /// when that record is only in the tier, hint the groups ahead not yet hinted.
    pub(super) fn before_pull(
        &self,
        commit_log: &CommitLog,
        queue: &Arc<dyn ConsumeQueue>,
        offset: i64,
        commitlog_offset: i64,
    ) {
        let Some((tier, limit_bytes)) = &self.tier else {
            return;
        };
        let Some(remote_below) = commit_log.remote_below() else {
            return;
        };
        if commitlog_offset < 0 || commitlog_offset as u64 >= remote_below {
            return;
        }
        let key = Arc::as_ptr(queue) as *const () as usize;
        let group = offset / GROUP;
        let now = Instant::now();
        let mut read = None;
        let hint = {
            let mut all = self.hinted.lock().expect("read-ahead lock");
            if all.len() >= MAX_QUEUES {
                all.clear();
            }
            let fresh = Hinted {
                first: group,
                end: group,
                records: 0,
                bytes: 0,
                pulled: now,
            };
            let state = all.entry(key).or_insert_with(|| QueueRead {
                hinted: fresh,
                readers: QueueReaders::default(),
                released: offset,
            });
            state.readers.pulled(offset, now);
            if let Some(slowest) = state.readers.slowest(now) {
                if slowest > state.released {
                    read = Some(state.released.max(slowest - MAX_RELEASED)..slowest);
                }
                state.released = slowest;
            }
            let entry = &mut state.hinted;
            if !(entry.first <= group && group <= entry.end) {
                *entry = fresh;
            }
            entry.end = entry.end.max(group);
            entry.pulled = now;
            let hinted = *entry;
            let readers = all
                .values()
                .filter(|other| now.duration_since(other.hinted.pulled) < READING_LATELY)
                .count()
                .max(1) as u64;
            let span = limit_bytes * SPAN_SHARE.0 / SPAN_SHARE.1 / readers;
            // Topped up only once half the span is read (or fewer than `MIN_GROUPS_AHEAD`
            // are left): a top-up of half the span is one GET of that size when the
            // queue's records lie back to back, where one group at a time made GETs of
            // one group.
            let enough_groups = hinted.end >= group + 1 + MIN_GROUPS_AHEAD;
            let far_enough = hinted.end >= group + 1 + MAX_GROUPS_AHEAD
                || (enough_groups && hinted.bytes_ahead(offset) >= span / 2);
            // A queue's first hint is `MIN_GROUPS_AHEAD` only: the other queues read
            // with it may not have pulled yet, and its share is known at its next pull.
            (!far_enough).then_some((hinted, if hinted.records == 0 { 0 } else { span }))
        };
        if let Some(read) = read {
            release_read(tier, queue.as_ref(), read, remote_below);
        }
        let Some((mut hinted, span)) = hint else {
            return;
        };
        // The groups ahead, one at a time, until their records come to `span` bytes from
        // the pull's record, or `MAX_GROUPS_AHEAD`; at least `MIN_GROUPS_AHEAD`. None past
        // the room the bound leaves now (the tier would drop them and fetch their records
        // when read, block by block): those are hinted at a later pull.
        let mut room = tier.read_ahead_room_bytes();
        let from = hinted.end;
        let mut records: Vec<(u64, u32)> = Vec::new();
        while hinted.end < group + 1 + MAX_GROUPS_AHEAD {
            let ahead = hinted.bytes_ahead(offset);
            if hinted.end >= group + 1 + MIN_GROUPS_AHEAD && ahead >= span {
                break;
            }
            if hinted.records > 0 && (GROUP as u64) * hinted.bytes / hinted.records > room {
                break; // (the group's bytes estimated by the mean record's)
            }
            let start = (hinted.end * GROUP).max(offset);
            let count = ((hinted.end + 1) * GROUP - start).max(0) as usize;
            // A hint only: entries that cannot be read now are the pull's to report.
            let entries = queue.entries(start, count).unwrap_or_default();
            let complete = entries.len() == count;
            let before = records.len();
            records.extend(
                entries
                    .into_iter()
                    .filter(|entry| !entry.is_placeholder() && entry.commitlog_offset >= 0)
                    .take_while(|entry| (entry.commitlog_offset as u64) < remote_below)
                    .map(|entry| (entry.commitlog_offset as u64, entry.size.max(0) as u32)),
            );
            let bytes: u64 = records[before..]
                .iter()
                .map(|&(_, size)| u64::from(size))
                .sum();
            if bytes > room && before > 0 {
                records.truncate(before);
                break;
            }
            room = room.saturating_sub(bytes);
            hinted.records += (records.len() - before) as u64;
            hinted.bytes += bytes;
            hinted.end += 1;
            if !complete {
                break; // the queue's end (or the tier's): nothing further to hint now
            }
        }
        if hinted.end == from {
            return; // hinted far enough already, or no room now
        }
        if let Some(state) = self.hinted.lock().expect("read-ahead lock").get_mut(&key) {
            state.hinted = hinted;
        }
        if !records.is_empty() {
            commit_log.prefetch_remote(&records);
        }
    }
}

/// Tell the tier that every reader of `queue` has read the entries `read`: the blocks it
/// fetched ahead for them leave its cache, but the one holding the next entry's record.
fn release_read(
    tier: &RemoteLog,
    queue: &dyn ConsumeQueue,
    read: std::ops::Range<i64>,
    remote_below: u64,
) {
    // Only a hint's counterpart: entries that cannot be read now are left in the cache.
    // One entry more: the slowest reader's next record, whose block stays.
    let count = (read.end - read.start) as usize;
    let mut entries = queue.entries(read.start, count + 1).unwrap_or_default();
    let next = (entries.len() > count)
        .then(|| entries.pop())
        .flatten()
        .filter(|entry| !entry.is_placeholder() && entry.commitlog_offset >= 0)
        .map(|entry| entry.commitlog_offset as u64);
    let records: Vec<(u64, u32)> = entries
        .into_iter()
        .filter(|entry| !entry.is_placeholder() && entry.commitlog_offset >= 0)
        .take_while(|entry| (entry.commitlog_offset as u64) < remote_below)
        .map(|entry| (entry.commitlog_offset as u64, entry.size.max(0) as u32))
        .collect();
    if !records.is_empty() {
        tier.release_read(&records, next);
    }
}
