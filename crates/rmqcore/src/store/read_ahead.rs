//! Read-ahead for pulls of evicted records: the consume queue knows which records a
//! consumer will read next, so the tier is told their offsets and sizes and fetches just
//! those ranges in the background (a queue's records lie between other queues' records;
//! fetching whole ranges of the log would fetch them all).
//!
//! A queue is hinted whole groups of entries, ahead of the consumer, and each group once:
//! a pull within hinted groups costs a map lookup, and the tier gets the groups' ranges
//! together, so its GETs cover whole runs of the queue's records. How far ahead is
//! measured in bytes of the log the hinted records span, not in entries, and topped up
//! half that span at a time: a queue whose records lie back to back (one queue, or large
//! batches) spans a quarter of the bytes per entry that one of four interleaved queues
//! does, and hinting one group at a time made one 1 MiB GET per group (`bench tier`,
//! quick, the store written with one queue: 505 GETs for 537 MB, now 137).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::commit_log::CommitLog;
use crate::consume_queue::ConsumeQueue;

/// Entries per group.
const GROUP: i64 = 1024;
/// Groups hinted ahead of the one a pull starts in, at least: with 1 KiB records, about
/// 3 MiB of one queue's records in flight or cached ahead of its consumer.
const MIN_GROUPS_AHEAD: i64 = 3;
/// More groups are hinted until the hinted records span this many bytes of the log (what
/// one hint fetches is still bounded by the read cache, `BlockCache::fetch_ahead_limit`).
/// With 12 MiB a reader of one queue of four topped up about 1 MiB at a time, one GET
/// each: 24 MiB halves its GETs (`bench tier`'s store at 2 GiB: 534 to 239 for 544 MB),
/// and four such readers still keep at most 24 MiB ahead, within the 32 MiB bound of a
/// 64 MiB cache.
const AHEAD_SPAN: u64 = 24 << 20;
/// And never more groups than this ahead.
const MAX_GROUPS_AHEAD: i64 = 16;
/// Queues remembered; past this the memory is cleared (a hint is only a hint).
const MAX_QUEUES: usize = 4096;

#[derive(Debug, Default)]
pub(super) struct QueueReadAhead {
    /// Per queue (by its object's address): the groups already hinted, as [first, end),
    /// and the commit-log offset of the last record hinted.
    hinted: Mutex<HashMap<usize, (i64, i64, u64)>>,
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
        let (first, from, mut last_hinted) = {
            let mut hinted = self.hinted.lock().expect("read-ahead lock");
            if hinted.len() >= MAX_QUEUES {
                hinted.clear();
            }
            match hinted.get(&key) {
                Some(&(first, end, last)) if first <= group && group <= end => {
                    (first, end.max(group), last)
                }
                _ => (group, group, 0),
            }
        };
        let spanned = |last: u64| last.saturating_sub(commitlog_offset as u64);
        // Topped up only once half the span is read (or fewer than `MIN_GROUPS_AHEAD` are
        // left): a top-up of half the span is one GET of that size when the queue's
        // records lie back to back, where one group at a time made GETs of one group.
        let enough_groups = from >= group + 1 + MIN_GROUPS_AHEAD;
        if from >= group + 1 + MAX_GROUPS_AHEAD
            || (enough_groups && spanned(last_hinted) >= AHEAD_SPAN / 2)
        {
            return;
        }
        // The groups ahead, one at a time, until the records span `AHEAD_SPAN` of the log
        // from the pull's record, or `MAX_GROUPS_AHEAD`; at least `MIN_GROUPS_AHEAD`.
        let mut records: Vec<(u64, u32)> = Vec::new();
        let mut end = from;
        while end < group + 1 + MAX_GROUPS_AHEAD {
            if end >= group + 1 + MIN_GROUPS_AHEAD && spanned(last_hinted) >= AHEAD_SPAN {
                break;
            }
            let start = (end * GROUP).max(offset);
            let count = ((end + 1) * GROUP - start).max(0) as usize;
            // A hint only: entries that cannot be read now are the pull's to report.
            let entries = queue.entries(start, count).unwrap_or_default();
            let complete = entries.len() == count;
            records.extend(
                entries
                    .into_iter()
                    .filter(|entry| !entry.is_placeholder() && entry.commitlog_offset >= 0)
                    .take_while(|entry| (entry.commitlog_offset as u64) < remote_below)
                    .map(|entry| (entry.commitlog_offset as u64, entry.size.max(0) as u32)),
            );
            last_hinted = records.last().map_or(last_hinted, |&(last, _)| last);
            end += 1;
            if !complete {
                break; // the queue's end (or the tier's): nothing further to hint now
            }
        }
        if end == from {
            return; // hinted far enough already
        }
        self.hinted
            .lock()
            .expect("read-ahead lock")
            .insert(key, (first, end, last_hinted));
        if !records.is_empty() {
            commit_log.prefetch_remote(&records);
        }
    }
}
