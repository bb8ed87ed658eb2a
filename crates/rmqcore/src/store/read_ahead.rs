//! Read-ahead for pulls of evicted records: the consume queue knows which records a
//! consumer will read next, so the tier is told their offsets and sizes and fetches just
//! those ranges in the background (a queue's records lie between other queues' records;
//! fetching whole ranges of the log would fetch them all).
//!
//! A queue is hinted a group of entries at a time, a few groups ahead of the consumer,
//! and each group once: a pull within hinted groups costs a map lookup, and the tier gets
//! a group's ranges together, so its GETs cover whole runs of the queue's records.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::commit_log::CommitLog;
use crate::consume_queue::ConsumeQueue;

/// Entries per group.
const GROUP: i64 = 1024;
/// Groups hinted ahead of the one a pull starts in: with 1 KiB records, about 3 MiB of
/// one queue's records in flight or cached ahead of its consumer (what one hint fetches
/// is bounded by the read cache, `BlockCache::fetch_ahead_limit`).
const GROUPS_AHEAD: i64 = 3;
/// Queues remembered; past this the memory is cleared (a hint is only a hint).
const MAX_QUEUES: usize = 4096;

#[derive(Debug, Default)]
pub(super) struct QueueReadAhead {
    /// Per queue (by its object's address): the groups already hinted, as [first, end).
    hinted: Mutex<HashMap<usize, (i64, i64)>>,
}

impl QueueReadAhead {
    /// A pull of `queue` starts at `offset`, whose record lies at `commitlog_offset`:
    /// when that record is only in the tier, hint the groups ahead not yet hinted.
    pub(super) fn before_pull(
        &self,
        commit_log: &CommitLog,
        queue: &Arc<dyn ConsumeQueue>,
        offset: i64,
        commitlog_offset: i64,
    ) {
        let Some(remote_below) = commit_log.remote_below() else {
            return;
        };
        if commitlog_offset < 0 || commitlog_offset as u64 >= remote_below {
            return;
        }
        let key = Arc::as_ptr(queue) as *const () as usize;
        let group = offset / GROUP;
        let wanted_end = group + 1 + GROUPS_AHEAD;
        let from = {
            let mut hinted = self.hinted.lock().expect("read-ahead lock");
            if hinted.len() >= MAX_QUEUES {
                hinted.clear();
            }
            let from = match hinted.get(&key) {
                Some(&(first, end)) if first <= group && group <= end => end.max(group),
                _ => group,
            };
            if from >= wanted_end {
                return;
            }
            let first = match hinted.get(&key) {
                Some(&(first, end)) if first <= group && group <= end => first,
                _ => group,
            };
            hinted.insert(key, (first, wanted_end));
            from
        };
        let start = (from * GROUP).max(offset);
        let count = (wanted_end * GROUP - start).max(0) as usize;
        // A hint only: entries that cannot be read now are the pull's to report.
        let records: Vec<(u64, u32)> = queue
            .entries(start, count)
            .unwrap_or_default()
            .into_iter()
            .filter(|entry| !entry.is_placeholder() && entry.commitlog_offset >= 0)
            .take_while(|entry| (entry.commitlog_offset as u64) < remote_below)
            .map(|entry| (entry.commitlog_offset as u64, entry.size.max(0) as u32))
            .collect();
        if !records.is_empty() {
            commit_log.prefetch_remote(&records);
        }
    }
}
