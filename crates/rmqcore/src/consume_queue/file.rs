//! The file form of a consume queue (format §2): the entries of one topic's queue, 20 bytes each, in
//! fixed-size files under `consumequeue/<topic>/<queueId>/` named by logical byte offset.
//! Entry `n` (the queue offset) is at byte `n × 20` of that logical address space.
//!
//! Thread safety: `append` and `truncate_from_physical` are called by the store's single
//! writer; lookups run concurrently and see entries below `max_offset`, published after
//! the entry bytes are written.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::consume_queue::entry::{CqEntry, ENTRY_SIZE, PLACEHOLDER_SIZE};
use crate::consume_queue::remote::RemoteQueueFiles;
use crate::consume_queue::{ConsumeQueue, QueueBounds, QueueTraffic};
use crate::error::{Error, Result};
use crate::files::page_warmer::{PageWarmer, WarmCursor};
use crate::files::segment::Segment;
use crate::files::segment_queue::SegmentQueue;

/// Disk blocks of a queue file are reserved this far ahead of the writer: small, so a
/// quiet queue costs little.
const CONSUME_QUEUE_ALLOCATION_CHUNK: usize = 16 * 1024;
/// Pages this far ahead of the queue's writer are faulted in by the store's warming
/// thread (`page_warmer.rs`): about 13,000 entries, a few milliseconds of a fast writer,
/// small enough that many busy queues cost little memory.
const CONSUME_QUEUE_WARM_WINDOW: usize = 256 * 1024;
#[derive(Debug)]
pub struct FileConsumeQueue {
    topic: String,
    queue_id: i32,
    segments: SegmentQueue,
    bounds: QueueBounds,
    traffic: QueueTraffic,
    /// Set by `append`, cleared by `flush`, so a flush skips idle queues.
    dirty: AtomicBool,
    warm_cursor: WarmCursor,
    /// The store's tier, which holds the queue's evicted files (oldest first, all below
    /// the first local file).
    remote: Option<Arc<dyn RemoteQueueFiles>>,
    /// The evicted file read last (`file_tier.rs`).
    last_remote_file: tier::LastRemoteFile,
}

impl FileConsumeQueue {
    /// Load the queue's files and find its end: the first invalid entry of the last file
    /// (entries are written in order and the rest of a file is zero, so the valid entries
    /// form a prefix and a binary search finds the end).
    pub fn load(
        dir: &Path,
        topic: &str,
        queue_id: i32,
        entries_per_file: usize,
        writable: bool,
        remote: Option<Arc<dyn RemoteQueueFiles>>,
    ) -> Result<Self> {
        let segments = SegmentQueue::load(
            dir,
            entries_per_file * ENTRY_SIZE,
            writable,
            CONSUME_QUEUE_ALLOCATION_CHUNK,
        )?;
        if segments.segment_size() % ENTRY_SIZE != 0 {
            let path = segments
                .first()
                .map(|s| s.path().to_path_buf())
                .unwrap_or_default();
            return Err(Error::corrupt(
                path,
                0,
                format!(
                    "consume-queue file size {} is not a multiple of 20",
                    segments.segment_size()
                ),
            ));
        }
        let queue = FileConsumeQueue {
            topic: topic.to_string(),
            queue_id,
            segments,
            bounds: QueueBounds::default(),
            traffic: QueueTraffic::default(),
            dirty: AtomicBool::new(false),
            warm_cursor: WarmCursor::new(CONSUME_QUEUE_WARM_WINDOW),
            remote,
            last_remote_file: Default::default(),
        };
        queue.find_bounds();
        Ok(queue)
    }

    fn entries_per_file(&self) -> i64 {
        (self.segments.segment_size() / ENTRY_SIZE) as i64
    }

    fn find_bounds(&self) {
        let segments = self.segments.segments();
        let Some(first) = segments.first() else {
            return;
        };
        // Evicted files come before the local ones: the queue starts at the oldest.
        let first_start = self
            .remote_first_start()
            .map_or(first.start_offset(), |start| {
                start.min(first.start_offset())
            });
        let first_index = (first_start / ENTRY_SIZE as u64) as i64;
        // Walk back over trailing files that hold no valid entry (a crash after creating
        // a file, or truncation).
        let mut max = first_index;
        for segment in segments.iter().rev() {
            let entries = self.entries_per_file() as usize;
            let valid = |index: usize| {
                CqEntry::decode(segment.bytes(index * ENTRY_SIZE, ENTRY_SIZE)).is_valid()
            };
            let (mut low, mut high) = (0usize, entries);
            while low < high {
                let middle = (low + high) / 2;
                if valid(middle) {
                    low = middle + 1;
                } else {
                    high = middle;
                }
            }
            if low > 0 {
                max = (segment.start_offset() / ENTRY_SIZE as u64) as i64 + low as i64;
                break;
            }
        }
        let mut min = first_index;
        // An evicted file the tier cannot serve now ends the walk: reads of it fail with
        // the tier's error, not here.
        while min < max
            && self
                .entry_unchecked(min)
                .ok()
                .flatten()
                .is_some_and(|entry| entry.is_placeholder())
        {
            min += 1;
        }
        self.bounds.set_min(min);
        self.bounds.set_max(max);
    }

    pub fn segments(&self) -> &SegmentQueue {
        &self.segments
    }

    pub fn set_min_offset(&self, offset: i64) {
        self.bounds.set_min(offset);
    }

    fn entry_unchecked(&self, queue_offset: i64) -> Result<Option<CqEntry>> {
        let Ok(queue_offset) = u64::try_from(queue_offset) else {
            return Ok(None);
        };
        let logical = queue_offset * ENTRY_SIZE as u64;
        let Some(segment) = self.segments.find(logical) else {
            return self.remote_entry(logical);
        };
        let position = (logical - segment.start_offset()) as usize;
        Ok(Some(CqEntry::decode(segment.bytes(position, ENTRY_SIZE))))
    }

    /// Append the entry for `queue_offset`, which must be the next one. A new file for a
    /// queue that starts past zero is padded with placeholders, as RocketMQ does.
    pub fn append(&self, queue_offset: i64, entry: CqEntry) -> Result<()> {
        self.append_all(queue_offset, &[entry], None)
    }

    /// The file that holds `logical`, created (and padded with placeholders when the
    /// queue starts inside it) if it does not exist yet.
    fn segment_for_append(&self, logical: u64, queue_offset: i64) -> Result<Arc<Segment>> {
        if let Some(segment) = self.segments.find(logical) {
            return Ok(segment);
        }
        let file_size = self.segments.segment_size() as u64;
        let start = logical / file_size * file_size;
        let segment = self.segments.create(start)?;
        // Entries fill a queue file 20 bytes at a time, and the store's warming thread
        // keeps the pages just ahead faulted in: the kernel's read-around on the first
        // fault would instead fill the whole 6 MB file on the writer's thread (about
        // 1.8 ms of a 100 B batch's first put to a queue, a round of `bench append`
        // writes 1 MB of queue).
        segment.skip_read_around();
        if self.max_offset() == 0 && logical > start {
            let placeholder = CqEntry {
                commitlog_offset: 0,
                size: PLACEHOLDER_SIZE,
                tags_code: 0,
                store_timestamp: 0,
            };
            let pad = (logical - start) as usize;
            segment.ensure_allocated(pad)?;
            self.warm_cursor.claim(&segment, pad);
            // SAFETY: single writer; the new file is not published yet.
            let bytes = unsafe { segment.bytes_mut(0, pad) };
            for chunk in bytes.chunks_exact_mut(ENTRY_SIZE) {
                placeholder.encode(chunk);
            }
            self.set_min_offset(queue_offset);
        }
        Ok(segment)
    }

    /// Flush the queue's files if anything was appended since the last flush.
    pub fn flush(&self) -> Result<()> {
        if self.dirty.swap(false, Ordering::AcqRel) {
            if let Err(error) = self.segments.flush_all() {
                self.dirty.store(true, Ordering::Release);
                return Err(error);
            }
        }
        Ok(())
    }
}

impl ConsumeQueue for FileConsumeQueue {
    fn topic(&self) -> &str {
        &self.topic
    }

    fn queue_id(&self) -> i32 {
        self.queue_id
    }

    fn location(&self) -> &Path {
        self.segments.dir()
    }

    fn bounds(&self) -> &QueueBounds {
        &self.bounds
    }

    fn traffic(&self) -> &QueueTraffic {
        &self.traffic
    }

    fn stored_entry(&self, queue_offset: i64) -> Result<Option<CqEntry>> {
        self.entry_unchecked(queue_offset)
    }

    /// Up to `max` entries from `from` on: each file is looked up once and its entries
    /// decoded in one pass over its mapping (a sequential reader's path; one lookup per
    /// entry cost a scan about a tenth of its instructions). Entries kept in the tier
    /// (no local file) go through `entry`, one at a time, as before.
    fn entries(&self, from: i64, max: usize) -> Result<Vec<CqEntry>> {
        let end = self.max_offset().min(from.saturating_add(max as i64));
        let mut entries = Vec::with_capacity((end - from).clamp(0, max as i64) as usize);
        let mut queue_offset = from;
        while queue_offset < end {
            if !self.bounds.contains(queue_offset) {
                break;
            }
            let logical = queue_offset as u64 * ENTRY_SIZE as u64;
            let Some(segment) = self.segments.find(logical) else {
                match self.entry(queue_offset)? {
                    Some(entry) => entries.push(entry),
                    None => break,
                }
                queue_offset += 1;
                continue;
            };
            let position = (logical - segment.start_offset()) as usize;
            let in_file = ((segment.size() - position) / ENTRY_SIZE) as i64;
            let run = in_file.min(end - queue_offset) as usize;
            let bytes = segment.bytes(position, run * ENTRY_SIZE);
            entries.extend(bytes.chunks_exact(ENTRY_SIZE).map(CqEntry::decode));
            queue_offset += run as i64;
        }
        Ok(entries)
    }

    /// Append `entries` for the queue offsets from `first_offset` on; the first must be
    /// the next one. Each file is looked up and reserved once per call, not per entry;
    /// with a `warmer`, the pages ahead are faulted in on its thread.
    fn append_all(
        &self,
        first_offset: i64,
        entries: &[CqEntry],
        warmer: Option<&PageWarmer>,
    ) -> Result<()> {
        let max = self.max_offset();
        if first_offset != max && !(self.segments.is_empty() && first_offset >= 0) {
            return Err(Error::corrupt(
                self.location(),
                (first_offset.max(0) as u64) * ENTRY_SIZE as u64,
                format!(
                    "entry for queue offset {first_offset} out of order: the queue expects {max}"
                ),
            ));
        }
        let mut queue_offset = first_offset;
        let mut rest = entries;
        while !rest.is_empty() {
            let logical = queue_offset as u64 * ENTRY_SIZE as u64;
            let segment = self.segment_for_append(logical, queue_offset)?;
            let position = (logical - segment.start_offset()) as usize;
            let room = (segment.size() - position) / ENTRY_SIZE;
            let (run, after) = rest.split_at(rest.len().min(room));
            let length = run.len() * ENTRY_SIZE;
            segment.ensure_allocated(position + length)?;
            self.warm_cursor.claim(&segment, position + length);
            // SAFETY: single writer; the entries are past max_offset, so unpublished.
            let bytes = unsafe { segment.bytes_mut(position, length) };
            for (entry, chunk) in run.iter().zip(bytes.chunks_exact_mut(ENTRY_SIZE)) {
                entry.encode(chunk);
            }
            if self.max_offset() == 0 && self.min_offset() == 0 && queue_offset > 0 {
                self.set_min_offset(queue_offset);
            }
            queue_offset += run.len() as i64;
            self.bounds.set_max(queue_offset);
            if let Some(warmer) = warmer {
                warmer.written_to(&self.warm_cursor, &segment, position + length);
            }
            rest = after;
        }
        self.dirty.store(true, Ordering::Release);
        Ok(())
    }

    fn prepare_first_file(&self) -> Result<()> {
        if self.segments.is_empty() && self.min_offset() == 0 && self.max_offset() == 0 {
            self.segment_for_append(0, 0)?;
        }
        Ok(())
    }

    fn truncate_from_physical(&self, commitlog_end: i64) -> Result<u64> {
        self.truncate_tail(commitlog_end)
    }

    fn drop_below(&self, commitlog_min: i64) -> Result<u64> {
        self.drop_files_below(commitlog_min)
    }

    fn correct_min_offset(&self, commitlog_min: i64) {
        self.move_min_to_log_start(commitlog_min)
    }
}

#[path = "file_trim.rs"]
mod trim;

#[path = "file_tier.rs"]
mod tier;

#[cfg(test)]
#[path = "file_tests.rs"]
mod tests;
