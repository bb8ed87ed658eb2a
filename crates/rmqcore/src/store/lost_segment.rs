//! Where a queue goes on past a commit-log segment lost from the tier: a pull that meets
//! such a segment reports the first queue offset whose record lies after it, so a reader
//! that accepts the loss skips the whole segment in one step rather than one record per
//! pull (each of which would ask the bucket for the missing object again).

use crate::consume_queue::ConsumeQueue;
use crate::error::Error;

use super::Store;

impl Store {
    /// `error`, met reading the record of queue offset `at` at commit-log offset
    /// `commitlog_offset`, with the queue offset past the lost segment attached when it is
    /// a lost tier segment and that offset can be found (else `error` as it was).
    pub(super) fn with_resume_offset(
        &self,
        error: Error,
        queue: &dyn ConsumeQueue,
        at: i64,
        commitlog_offset: u64,
    ) -> Error {
        if !matches!(error, Error::TierObjectChanged { .. }) {
            return error;
        }
        let Some(end) = self.inner.commit_log.evicted_segment_end(commitlog_offset) else {
            return error;
        };
        match first_entry_at_or_past(queue, at + 1, end) {
            Some(resume) => error.resuming_at(resume),
            None => error,
        }
    }
}

/// The smallest queue offset in `[from, max]` whose entry points at or past commit-log
/// offset `end` (`max`, the queue's end, when none does). A queue's entries point at
/// ascending commit-log offsets, so a binary search over entries (20 bytes each, read
/// through the consume-queue files) finds it in a few reads. None if an entry cannot be
/// read (its queue file is itself lost): the caller then reports no resume offset.
fn first_entry_at_or_past(queue: &dyn ConsumeQueue, from: i64, end: u64) -> Option<i64> {
    let (mut low, mut high) = (from, queue.max_offset());
    while low < high {
        let middle = low + (high - low) / 2;
        match queue.entry(middle).ok()? {
            // Placeholders (rare) carry no position of their own: step over them.
            Some(entry) if entry.is_placeholder() => {
                return first_entry_at_or_past_linear(queue, low, high, end)
            }
            Some(entry) if (entry.commitlog_offset as u64) < end => low = middle + 1,
            Some(_) => high = middle,
            None => return None,
        }
    }
    Some(low)
}

/// The same search entry by entry over `[low, high)`, for queues with placeholders.
fn first_entry_at_or_past_linear(
    queue: &dyn ConsumeQueue,
    low: i64,
    high: i64,
    end: u64,
) -> Option<i64> {
    let mut at = low;
    while at < high {
        let entries = queue.entries(at, 256).ok()?;
        if entries.is_empty() {
            return None;
        }
        for entry in &entries {
            if !entry.is_placeholder() && entry.commitlog_offset as u64 >= end {
                return Some(at);
            }
            at += 1;
        }
    }
    Some(high)
}
