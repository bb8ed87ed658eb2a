//! The commit log (format §1): every message of every topic, appended in one sequence of
//! segments. Offsets are absolute byte positions in that sequence.
//!
//! Thread safety: `append` and `truncate` must be called by one writer at a time (the
//! store's write lock); everything else may run concurrently with them. Readers see only
//! records below `write_offset`, which is published after a record's bytes are written.

mod cursor;
pub mod flush_service;
mod record_owner;
mod record_ref;
mod scan;
mod tiered;

pub use tiered::RemoteSegments;

pub use cursor::LogCursor;
pub use record_owner::RecordOwner;
pub use record_ref::RecordRef;
pub use scan::ScanEnd;

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use smallvec::SmallVec;

use crate::error::{Error, Result};
use crate::files::page_warmer::{PageWarmer, WarmCursor};
use crate::files::segment::Segment;
use crate::files::segment_queue::SegmentQueue;
use crate::record::{
    decode_record, encode_blank, encode_record, record_length, Decoded, Placement, RecordInput,
    RecordView, END_FILE_MIN_BLANK_LENGTH,
};

/// Disk blocks of a commit-log segment are reserved this far ahead of the writer.
const COMMIT_LOG_ALLOCATION_CHUNK: usize = 1 << 20;

/// Where one appended record landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    pub physical_offset: u64,
    /// Position of the record in the batch's segment.
    pub position: usize,
    pub size: usize,
}

/// The records of one `append`, which always land in one segment (held inline for a
/// single record: a single put allocates nothing here).
#[derive(Debug)]
pub struct AppendedBatch {
    segment: Arc<Segment>,
    pub records: SmallVec<[Appended; 1]>,
}

impl AppendedBatch {
    /// The record as written, decoded for dispatch; the writer just encoded these bytes,
    /// so they are not validated again.
    pub fn view(&self, record: &Appended) -> Result<RecordView<'_>> {
        match decode_record(self.segment.bytes(record.position, record.size), false) {
            Ok(Decoded::Record(view)) => Ok(view),
            _ => Err(Error::corrupt(
                self.segment.path(),
                record.position as u64,
                "a record just appended does not decode",
            )),
        }
    }
}

#[derive(Debug)]
pub struct CommitLog {
    segments: SegmentQueue,
    write_offset: AtomicU64,
    /// Set once the store starts writing (`start_warming`); absent for readers.
    warmer: std::sync::OnceLock<(PageWarmer, WarmCursor)>,
    /// Segments whose local copy went after their upload (`tiered.rs`).
    remote: std::sync::OnceLock<Arc<dyn RemoteSegments>>,
}

impl CommitLog {
    /// Load the segments; `write_offset` stays at the first segment's start until the
    /// caller recovers the log and calls `set_write_offset`.
    pub fn load(dir: &Path, segment_size: usize, writable: bool) -> Result<Self> {
        let segments =
            SegmentQueue::load(dir, segment_size, writable, COMMIT_LOG_ALLOCATION_CHUNK)?;
        let start = segments.first().map_or(0, |segment| segment.start_offset());
        Ok(CommitLog {
            segments,
            write_offset: AtomicU64::new(start),
            warmer: std::sync::OnceLock::new(),
            remote: std::sync::OnceLock::new(),
        })
    }

    /// Keep `window` bytes ahead of the writer faulted in from now on (`page_warmer.rs`);
    /// 0 leaves every page to the writer's own first touch.
    ///
    /// The segment the next record goes to is created now when the log ends at a
    /// segment boundary (a new store), and the window past the write position is warmed
    /// at once, so that the first put finds its pages in place. Left to that put, its
    /// first write fault read around 8 MiB of the fresh file on the writer's thread:
    /// about 2 ms, most of the fixed cost of a new store's first 50,000 messages
    /// (`bench append`). A segment that cannot be created now is left to the first put,
    /// which reports why.
    pub fn start_warming(&self, window: usize) -> Result<()> {
        if window == 0 || self.warmer.get().is_some() {
            return Ok(());
        }
        let _ = self.warmer.set((
            PageWarmer::start()?,
            WarmCursor::new(window).keeping_read_around_behind(),
        ));
        let offset = self.write_offset();
        let segment = match self.segments.find(offset) {
            Some(segment) => segment,
            None if offset.is_multiple_of(self.segment_size() as u64)
                && self
                    .segments
                    .last()
                    .is_none_or(|last| last.end_offset() == offset) =>
            {
                match self.segments.create(offset) {
                    Ok(segment) => segment,
                    Err(_) => return Ok(()),
                }
            }
            None => return Ok(()),
        };
        if let Some((warmer, cursor)) = self.warmer.get() {
            let position = (offset - segment.start_offset()) as usize;
            warmer.written_to(cursor, &segment, position);
        }
        Ok(())
    }

    /// The warming thread, for the files written along with the log.
    pub fn warmer(&self) -> Option<&PageWarmer> {
        self.warmer.get().map(|(warmer, _)| warmer)
    }

    pub fn stop_warming(&self) {
        if let Some(warmer) = self.warmer() {
            warmer.stop();
        }
    }

    /// Delete the last segment if nothing was written to it: the one `start_warming`
    /// created ahead of a first put that never came, so that a store closed unwritten
    /// leaves no commit-log file. Called by the writer, at a clean shutdown.
    pub fn remove_unwritten_segment(&self) -> Result<()> {
        let offset = self.write_offset();
        if self
            .segments
            .last()
            .is_some_and(|last| last.start_offset() == offset)
        {
            self.segments.remove_from(offset)?;
        }
        Ok(())
    }

    pub fn segments(&self) -> &SegmentQueue {
        &self.segments
    }

    pub fn segment_size(&self) -> usize {
        self.segments.segment_size()
    }

    /// The largest record (with its trailing blank) a segment can take.
    pub fn max_record_length(&self) -> usize {
        self.segment_size() - END_FILE_MIN_BLANK_LENGTH
    }

    /// The first offset held, locally or (with a tier) only in the bucket.
    pub fn min_offset(&self) -> u64 {
        let local = self.local_min_offset();
        self.remote_min_offset()
            .map_or(local, |remote| remote.min(local))
    }

    /// The first offset a local segment holds.
    pub fn local_min_offset(&self) -> u64 {
        self.segments
            .first()
            .map_or_else(|| self.write_offset(), |segment| segment.start_offset())
    }

    /// One past the last readable byte.
    pub fn write_offset(&self) -> u64 {
        self.write_offset.load(Ordering::Acquire)
    }

    pub fn set_write_offset(&self, offset: u64) {
        self.write_offset.store(offset, Ordering::Release);
    }

    /// Append records as one unit: if they do not all fit in the current segment, a blank
    /// closes it and they all go to the next one (as RocketMQ does for batches). The
    /// caller validated each input's length against `max_record_length`.
    pub fn append(
        &self,
        inputs: &[RecordInput<'_>],
        first_queue_offset: i64,
        store_timestamp: i64,
    ) -> Result<AppendedBatch> {
        let lengths: SmallVec<[usize; 1]> = inputs.iter().map(record_length).collect();
        let total: usize = lengths.iter().sum();
        if total > self.max_record_length() {
            return Err(Error::invalid(
                "messages",
                format!(
                    "the batch needs {total} bytes but a commit-log segment holds at most {} (commitlog_segment_size)",
                    self.max_record_length()
                ),
            ));
        }
        let mut offset = self.write_offset();
        let mut segment = self.segment_for_append(offset)?;
        let mut position = (offset - segment.start_offset()) as usize;
        let remaining = segment.size() - position;
        if total + END_FILE_MIN_BLANK_LENGTH > remaining {
            segment.ensure_allocated(position + END_FILE_MIN_BLANK_LENGTH)?;
            self.claim(&segment, position + END_FILE_MIN_BLANK_LENGTH);
            // SAFETY: single writer; bytes at and past write_offset are unpublished.
            encode_blank(
                unsafe { segment.bytes_mut(position, END_FILE_MIN_BLANK_LENGTH) },
                remaining,
            );
            offset = segment.end_offset();
            segment = self.segment_for_append(offset)?;
            position = 0;
        }
        segment.ensure_allocated(position + total)?;
        self.claim(&segment, position + total);
        let mut appended = SmallVec::with_capacity(inputs.len());
        for (index, (input, length)) in inputs.iter().zip(&lengths).enumerate() {
            let placement = Placement {
                queue_offset: first_queue_offset + index as i64,
                physical_offset: i64::try_from(offset).expect("offset fits i64"),
                store_timestamp,
            };
            // SAFETY: as above; records never overlap.
            encode_record(
                unsafe { segment.bytes_mut(position, *length) },
                input,
                placement,
            );
            appended.push(Appended {
                physical_offset: offset,
                position,
                size: *length,
            });
            position += length;
            offset += *length as u64;
        }
        self.set_write_offset(offset);
        if let Some((warmer, cursor)) = self.warmer.get() {
            warmer.written_to(cursor, &segment, position);
        }
        Ok(AppendedBatch {
            segment,
            records: appended,
        })
    }

    /// Keep the page warmer's zero-fills off `segment`'s bytes below `end` before writing
    /// them (`WarmCursor::claim`).
    fn claim(&self, segment: &Segment, end: usize) {
        if let Some((_, cursor)) = self.warmer.get() {
            cursor.claim(segment, end);
        }
    }

    fn segment_for_append(&self, offset: u64) -> Result<Arc<Segment>> {
        match self.segments.find(offset) {
            Some(segment) => Ok(segment),
            None => self.segments.create(offset),
        }
    }

    /// The record at `offset`, validated (CRC included when `check_crc`), handed to
    /// `visit` as the view the validation decoded: a reader that needs the record only
    /// while it looks at it pays one decode, not a second one through `RecordRef::view`.
    pub fn visit<R>(
        &self,
        offset: u64,
        check_crc: bool,
        visit: impl FnOnce(&RecordView<'_>) -> R,
    ) -> Result<R> {
        let end = self.write_offset();
        if offset >= self.min_offset() && offset < end {
            if let Some(segment) = self.segments.find(offset) {
                return Ok(visit(&Self::decode_in(&segment, offset, end, check_crc)?));
            }
        }
        // Out of range or held by the tier: `read` says which, or fetches it.
        Ok(visit(&self.read(offset, check_crc)?.view()))
    }

    /// The record at `offset`, validated (CRC included when `check_crc`).
    pub fn read(&self, offset: u64, check_crc: bool) -> Result<RecordRef> {
        let end = self.write_offset();
        let min = self.min_offset();
        let out_of_range = Error::OffsetOutOfRange {
            what: "commit-log",
            offset: offset as i64,
            min: min as i64,
            max: end as i64,
        };
        if offset < min || offset >= end {
            return Err(out_of_range);
        }
        let Some(segment) = self.segments.find(offset) else {
            return match self.read_remote(offset, check_crc)? {
                Some(record) => Ok(record),
                None => Err(out_of_range),
            };
        };
        let length = Self::decode_in(&segment, offset, end, check_crc)?.total_size;
        let position = (offset - segment.start_offset()) as usize;
        Ok(RecordRef::mapped(segment, position, length))
    }

    /// The record at `offset` of `segment`, which holds it, read no further than `end`
    /// (the log's write offset) and checked: layout, CRCs when asked, and that the record
    /// says it is at `offset`.
    fn decode_in(
        segment: &Segment,
        offset: u64,
        end: u64,
        check_crc: bool,
    ) -> Result<RecordView<'_>> {
        let position = (offset - segment.start_offset()) as usize;
        let readable = usize::try_from(end - offset)
            .unwrap_or(usize::MAX)
            .min(segment.size() - position);
        let bytes = segment.bytes(position, readable);
        match decode_record(bytes, check_crc) {
            Ok(Decoded::Record(view)) => {
                if view.physical_offset != offset as i64 {
                    return Err(Error::corrupt(
                        segment.path(),
                        position as u64,
                        format!(
                            "record says it is at offset {}, found at {offset}",
                            view.physical_offset
                        ),
                    ));
                }
                Ok(view)
            }
            Ok(_) => Err(Error::corrupt(
                segment.path(),
                position as u64,
                "no record starts here",
            )),
            Err(error) => Err(Error::corrupt(
                segment.path(),
                position as u64,
                error.to_string(),
            )),
        }
    }

    /// Cut the log at `offset`: later segments are deleted and the rest of the segment
    /// holding `offset` reads as zero, so that a later scan can never mistake stale bytes
    /// for records.
    pub fn truncate(&self, offset: u64) -> Result<()> {
        let size = self.segment_size() as u64;
        let delete_from = offset.div_ceil(size) * size;
        self.segments.remove_from(delete_from)?;
        if let Some(segment) = self.segments.find(offset) {
            segment.zero_from((offset - segment.start_offset()) as usize)?;
        }
        self.set_write_offset(offset);
        Ok(())
    }

    /// Take back what the last `append` wrote after `offset` (it failed to dispatch):
    /// the bytes are zeroed (only bytes the append wrote, so only allocated ones) and the
    /// write offset returns to `offset`. Called by the writer.
    pub fn roll_back(&self, offset: u64) -> Result<()> {
        let end = self.write_offset();
        let Some(first) = self.segments.find(offset) else {
            self.set_write_offset(offset);
            return Ok(());
        };
        let position = (offset - first.start_offset()) as usize;
        let written_here = if end <= first.end_offset() {
            (end - offset) as usize
        } else {
            // The append closed this segment with a blank and went on in the next one.
            END_FILE_MIN_BLANK_LENGTH.min(first.size() - position)
        };
        // SAFETY: the writer's own unacknowledged bytes; readers of the queues never saw
        // them (their entries were not published or were removed first).
        unsafe { first.bytes_mut(position, written_here) }.fill(0);
        if end > first.end_offset() {
            if let Some(next) = self.segments.find(first.end_offset()) {
                let length = (end - next.start_offset()) as usize;
                // SAFETY: as above.
                unsafe { next.bytes_mut(0, length) }.fill(0);
            }
        }
        self.set_write_offset(offset);
        Ok(())
    }

    /// msync the bytes `[from, to)`, which may span segments.
    ///
    /// The whole pages of the range are unmapped from this process first: the writer has
    /// passed them, and the kernel writes back a mapped page only after write-protecting
    /// its page-table entry, which costs a TLB shootdown (an interrupt to every other core
    /// running the process: the writer's, the network threads') per folio. Unmapped, the
    /// range costs one. With 1 KiB messages, flushing took 11 % of a two-shard broker's
    /// CPU, about half of it in those interrupts (docs/durability.md). Readers map the
    /// pages again from the page cache on their next touch.
    pub fn flush_range(&self, from: u64, to: u64) -> Result<()> {
        let mut offset = from;
        while offset < to {
            let Some(segment) = self.segments.find(offset) else {
                break;
            };
            let end = to.min(segment.end_offset());
            let position = (offset - segment.start_offset()) as usize;
            segment.unmap_pages(position, (end - offset) as usize);
            segment.flush_range(position, (end - offset) as usize)?;
            offset = end;
        }
        Ok(())
    }
}
