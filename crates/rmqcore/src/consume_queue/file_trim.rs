//! Shrinking a file-form queue: recovery cuts entries off its tail, retention deletes
//! files from its head and moves its minimum offset to the commit log's new start.

use super::FileConsumeQueue;
use crate::consume_queue::entry::{CqEntry, ENTRY_SIZE};
use crate::consume_queue::ConsumeQueue;
use crate::error::Result;

impl FileConsumeQueue {
    /// Remove every entry that points at or past `commitlog_end` (recovery truncation):
    /// the entries are zeroed and files left without entries are deleted; in a read-only
    /// queue they are only hidden. Returns how many entries were removed.
    pub(super) fn truncate_tail(&self, commitlog_end: i64) -> Result<u64> {
        let mut max = self.max_offset();
        let min = self.min_offset();
        let old_max = max;
        // Invalid (zeroed) entries are removed too: pages of the queue's tail may have
        // been lost independently of each other, leaving holes.
        while max > min {
            // Only an evicted file lacks an entry below max (or cannot be read now); its
            // entries point far below any truncation.
            let Ok(Some(entry)) = self.entry_unchecked(max - 1) else {
                break;
            };
            if entry.is_placeholder()
                || (entry.is_valid() && entry.commitlog_end() <= commitlog_end)
            {
                break;
            }
            max -= 1;
        }
        if max == old_max {
            return Ok(0);
        }
        if !self.segments.writable() {
            self.bounds.set_max(max);
            return Ok((old_max - max) as u64);
        }
        let logical = max as u64 * ENTRY_SIZE as u64;
        let file_size = self.segments.segment_size() as u64;
        // Keep the file holding the new end unless the end is its first byte and it is
        // not the queue's only file.
        let delete_from = if logical.is_multiple_of(file_size) && logical > 0 {
            logical
        } else {
            logical / file_size * file_size + file_size
        };
        self.segments.remove_from(delete_from)?;
        if let Some(segment) = self.segments.find(logical) {
            let position = (logical - segment.start_offset()) as usize;
            segment.zero_from(position)?;
        }
        self.bounds.set_max(max);
        if self.min_offset() > max {
            self.set_min_offset(max);
        }
        Ok((old_max - max) as u64)
    }

    /// Follow the commit log's new minimum after retention: delete whole files (never the
    /// last one, which holds the queue's position) whose entries all point below it, and
    /// move the minimum offset to the first entry still backed by the log. Returns how
    /// many files were deleted. Called under the store's write lock.
    pub(super) fn drop_files_below(&self, commitlog_min: i64) -> Result<u64> {
        let mut deleted = 0;
        loop {
            let segments = self.segments.segments();
            if segments.len() < 2 {
                break;
            }
            let first = &segments[0];
            let last = CqEntry::decode(first.bytes(first.size() - ENTRY_SIZE, ENTRY_SIZE));
            if last.is_placeholder() || last.commitlog_end() <= commitlog_min {
                if self
                    .segments
                    .remove_first_if(first.start_offset())?
                    .is_none()
                {
                    break;
                }
                deleted += 1;
            } else {
                break;
            }
        }
        self.move_min_to_log_start(commitlog_min);
        Ok(deleted)
    }

    /// Readers start at the first entry of a record the log still holds: the files
    /// keep entries of deleted segments until a whole file is below the log's start.
    pub(super) fn move_min_to_log_start(&self, commitlog_min: i64) {
        let local_start = self
            .segments
            .first()
            .map_or(0, |segment| segment.start_offset());
        let first_start = (self
            .remote_first_start()
            .map_or(local_start, |start| start.min(local_start))
            / ENTRY_SIZE as u64) as i64;
        // Checked first, so that a queue whose oldest entry the log still holds reads
        // no evicted file at open.
        let from = self.min_offset().max(first_start);
        if self
            .entry_unchecked(from)
            .ok()
            .flatten()
            .is_some_and(|entry| !entry.is_placeholder() && entry.commitlog_offset >= commitlog_min)
        {
            if from > self.min_offset() {
                self.set_min_offset(from);
            }
            return;
        }
        let (mut low, mut high) = (self.min_offset().max(first_start), self.max_offset());
        while low < high {
            let middle = low + (high - low) / 2;
            // An evicted file the tier cannot serve (unreachable, changed): the minimum
            // stays, and reads of it fail with the tier's error.
            let Ok(Some(entry)) = self.entry_unchecked(middle) else {
                return;
            };
            if entry.is_placeholder() || entry.commitlog_offset < commitlog_min {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        if low > self.min_offset() {
            self.set_min_offset(low);
        }
    }
}
