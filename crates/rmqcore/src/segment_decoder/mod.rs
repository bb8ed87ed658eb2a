//! A read-only decoder over one commit-log segment file (format §1.1–§1.2), for analytics
//! over store files rather than through a store.
//!
//! It maps the file read-only, never writes it and never takes the store's `lock`, so it
//! works on a crashed copy and beside a running broker (whose appends it may or may not
//! see). It does not recover anything: it reads records from a byte position until the
//! end-of-segment blank, zeros, a limit, or the first record that fails validation, and
//! says which one it met (`SegmentEnd`). A failing record is reported with its position
//! and reason, never skipped: nothing after it can be trusted to start a record.
//!
//! The segment size is the file's own size and the start offset comes from its name, so
//! no store configuration is needed. A file that another process truncates while it is
//! mapped would fault on access; RocketMQ and rmq delete segments (which is safe) but never
//! shrink them.
//!
//! Thread safety: a `SegmentDecoder` is immutable; any number of threads may decode from
//! it at once.

mod arrow;
mod columns;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::big_endian::{read_i32, read_i64};
use crate::error::{Error, IoContext, Result};
use crate::files::segment::{parse_segment_file_name, Segment};
use crate::record::body_crc::body_crc;
use crate::record::crc_property::check_crc_property;
use crate::record::{
    decode_record, DecodeError, Decoded, RecordView, FIXED_PART_V4, MAGIC_POSITION, MAGIC_V1,
    MAGIC_V2, PHYSICAL_OFFSET_POSITION, TOTAL_SIZE_POSITION,
};

pub use arrow::{Bitmap, ListColumn, MapColumn, VarColumn};
pub use columns::{ColumnBatch, ColumnSelection};

/// No record is shorter: the fixed part, the body length, a 1-byte topic length and the
/// properties length (format §1.2).
const MIN_RECORD_LENGTH: usize = FIXED_PART_V4 + 4 + 1 + 2;

/// Room reserved up front for a batch's bodies. Kept well below glibc's largest mmap
/// threshold (32 MiB) so that, batch after batch, the allocator hands back the same heap
/// memory instead of mapping (and the kernel zeroing) fresh pages each time.
const BODY_RESERVATION: usize = 8 << 20;

/// Why reading stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SegmentEnd {
    /// The next record starts at or past the requested limit.
    Limit,
    /// The end-of-segment blank: the log continues in the next segment.
    Blank,
    /// Zero bytes where a record would start: the end of written data.
    EndOfData,
    /// The last record ended exactly at the end of the file.
    EndOfFile,
    /// Bytes that are not a valid record.
    Invalid(InvalidRecord),
}

/// A record that failed validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidRecord {
    /// Byte position in the file.
    pub position: usize,
    pub reason: String,
    /// Every byte after the record's declared extent is zero: the shape a write torn by a
    /// crash (or still in progress) leaves at the end of the last segment.
    pub nothing_after: bool,
}

impl InvalidRecord {
    pub fn to_error(&self, file: &Path) -> Error {
        Error::corrupt(file, self.position as u64, self.reason.clone())
    }
}

/// One valid record and where it starts in the file.
#[derive(Debug, Clone)]
pub struct SegmentRecord<'a> {
    pub position: usize,
    pub view: RecordView<'a>,
    /// `None` when CRCs were not verified; otherwise whether the body CRC matches and, if
    /// the record carries RocketMQ 5's CRC property (format §1.5), whether that matches too.
    pub crc_ok: Option<bool>,
}

/// The outcome of reading at one position.
#[derive(Debug, Clone)]
// Returned by value for every record read; boxing the record would allocate each time.
#[allow(clippy::large_enum_variant)]
pub enum Step<'a> {
    Record(SegmentRecord<'a>),
    End(SegmentEnd),
}

/// Which records a batch keeps. Records that fail it are still validated and counted.
#[derive(Debug, Clone, Default)]
pub struct RecordFilter {
    /// Keep only these topics (compared as text, after lossy UTF-8 decoding).
    pub topics: Option<HashSet<String>>,
    /// Inclusive bounds on the store timestamp, in milliseconds.
    pub store_time_min: Option<i64>,
    pub store_time_max: Option<i64>,
}

impl RecordFilter {
    pub fn accepts(&self, view: &RecordView<'_>) -> bool {
        if self
            .store_time_min
            .is_some_and(|min| view.store_timestamp < min)
            || self
                .store_time_max
                .is_some_and(|max| view.store_timestamp > max)
        {
            return false;
        }
        match &self.topics {
            Some(topics) => topics.contains(view.topic_str().as_ref()),
            None => true,
        }
    }
}

/// How `decode_batch` reads and when it returns.
#[derive(Debug, Clone)]
pub struct BatchOptions {
    pub verify_crc: bool,
    pub filter: RecordFilter,
    /// At most this many rows per batch.
    pub max_rows: usize,
    /// A batch closes before a record that would take it past this many record bytes
    /// (a single larger record still makes a batch of its own).
    pub max_bytes: usize,
    pub columns: ColumnSelection,
}

impl Default for BatchOptions {
    fn default() -> Self {
        BatchOptions {
            verify_crc: true,
            filter: RecordFilter::default(),
            max_rows: 8192,
            max_bytes: 4 << 20,
            columns: ColumnSelection::ALL,
        }
    }
}

/// Rows decoded from `[from, next_position)` of a segment.
#[derive(Debug)]
pub struct DecodedBatch {
    pub columns: ColumnBatch,
    /// Where the next call should start.
    pub next_position: usize,
    /// Records read, including those the filter dropped.
    pub records_scanned: usize,
    /// `None` when the batch filled up and more records may follow.
    pub end: Option<SegmentEnd>,
}

pub struct SegmentDecoder {
    path: PathBuf,
    start_offset: u64,
    bytes: SegmentSource,
}

/// Where the segment's bytes are: a mapped file (`None` for an empty file, which cannot
/// be mapped), or bytes fetched from a store's tier.
enum SegmentSource {
    Mapped(Option<Segment>),
    Fetched(bytes::Bytes),
}

impl std::fmt::Debug for SegmentDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SegmentDecoder")
            .field("path", &self.path)
            .field("start_offset", &self.start_offset)
            .field("size", &self.size())
            .finish()
    }
}

impl SegmentDecoder {
    /// Open a segment whose file name is its 20-digit start offset.
    pub fn open(path: &Path) -> Result<Self> {
        let start_offset = path
            .file_name()
            .and_then(|name| name.to_str())
            .and_then(parse_segment_file_name)
            .ok_or_else(|| {
                Error::invalid(
                    "path",
                    format!(
                        "{} is not named by a 20-digit commit-log offset; pass start_offset",
                        path.display()
                    ),
                )
            })?;
        Self::open_at(path, start_offset)
    }

    /// Open a segment file whose first byte is at commit-log offset `start_offset`.
    pub fn open_at(path: &Path, start_offset: u64) -> Result<Self> {
        let length = std::fs::metadata(path).at(path)?.len();
        let size = usize::try_from(length)
            .map_err(|_| Error::corrupt(path, 0, format!("segment of {length} bytes")))?;
        let segment = if size == 0 {
            None
        } else {
            Some(Segment::open(path, start_offset, size, false)?)
        };
        Ok(SegmentDecoder {
            path: path.to_path_buf(),
            start_offset,
            bytes: SegmentSource::Mapped(segment),
        })
    }

    /// A segment fetched whole (from a tier): `name` says where from, in errors.
    pub fn from_bytes(name: PathBuf, start_offset: u64, bytes: bytes::Bytes) -> Self {
        SegmentDecoder {
            path: name,
            start_offset,
            bytes: SegmentSource::Fetched(bytes),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn start_offset(&self) -> u64 {
        self.start_offset
    }

    pub fn size(&self) -> usize {
        self.bytes().len()
    }

    fn bytes(&self) -> &[u8] {
        match &self.bytes {
            SegmentSource::Mapped(segment) => segment
                .as_ref()
                .map_or(&[], |segment| segment.bytes(0, segment.size())),
            SegmentSource::Fetched(bytes) => bytes,
        }
    }

    /// Read what starts at `position`: a record, or the reason there is none. `limit` is
    /// where the caller's range ends (records must start before it).
    pub fn read_at(&self, position: usize, limit: usize, verify_crc: bool) -> Step<'_> {
        let file = self.bytes();
        if position >= file.len() {
            return Step::End(SegmentEnd::EndOfFile);
        }
        if position >= limit {
            return Step::End(SegmentEnd::Limit);
        }
        let bytes = &file[position..];
        let invalid =
            |reason: String| Step::End(SegmentEnd::Invalid(self.invalid(position, reason)));
        match decode_record(bytes, false) {
            Ok(Decoded::Record(view)) => {
                let expected = self.start_offset + position as u64;
                if u64::try_from(view.physical_offset).ok() != Some(expected) {
                    return invalid(format!(
                        "PHYSICALOFFSET says {} but the record is at commit-log offset {expected}",
                        view.physical_offset
                    ));
                }
                let crc_ok = verify_crc.then(|| crc_matches(&view, &bytes[..view.total_size]));
                Step::Record(SegmentRecord {
                    position,
                    view,
                    crc_ok,
                })
            }
            Ok(Decoded::Blank) => {
                let declared = read_i32(bytes, TOTAL_SIZE_POSITION);
                if usize::try_from(declared).ok() == Some(bytes.len()) {
                    Step::End(SegmentEnd::Blank)
                } else {
                    invalid(format!(
                        "end-of-segment blank says {declared} bytes but {} remain in the file",
                        bytes.len()
                    ))
                }
            }
            Ok(Decoded::End) => Step::End(SegmentEnd::EndOfData),
            Err(DecodeError::Truncated { .. }) if bytes.iter().all(|b| *b == 0) => {
                Step::End(SegmentEnd::EndOfData)
            }
            Err(error) => invalid(error.to_string()),
        }
    }

    fn invalid(&self, position: usize, reason: String) -> InvalidRecord {
        let bytes = &self.bytes()[position..];
        let declared = if bytes.len() >= 4 {
            usize::try_from(read_i32(bytes, TOTAL_SIZE_POSITION)).unwrap_or(0)
        } else {
            0
        };
        let extent = if (8..=bytes.len()).contains(&declared) {
            declared
        } else {
            bytes.len().min(8)
        };
        InvalidRecord {
            position,
            reason: format!(
                "{reason} (commit-log offset {})",
                self.start_offset + position as u64
            ),
            nothing_after: bytes[extent..].iter().all(|b| *b == 0),
        }
    }

    /// Iterate the valid records starting in `[from, limit)`; `Records::end` then says why
    /// the iteration stopped.
    pub fn records(&self, from: usize, limit: usize, verify_crc: bool) -> Records<'_> {
        Records {
            decoder: self,
            position: from,
            limit,
            verify_crc,
            end: None,
        }
    }

    /// Decode the records starting in `[from, limit)` into columns, stopping early when
    /// the batch is full (`end` is then `None` and `next_position` is where to go on).
    pub fn decode_batch(&self, from: usize, limit: usize, options: &BatchOptions) -> DecodedBatch {
        let range = limit.min(self.size()).saturating_sub(from);
        let mut columns = ColumnBatch::with_capacity(
            options.max_rows.min(range / MIN_RECORD_LENGTH + 1),
            options.max_bytes.min(range).min(BODY_RESERVATION),
            options.columns,
        );
        let mut position = from;
        let mut records_scanned = 0;
        let end = loop {
            if columns.rows() >= options.max_rows {
                break None;
            }
            match self.read_at(position, limit, options.verify_crc) {
                Step::Record(record) => {
                    if options.filter.accepts(&record.view) {
                        if columns.rows() > 0
                            && columns.record_bytes() + record.view.total_size > options.max_bytes
                        {
                            break None;
                        }
                        columns.push(&record);
                    }
                    records_scanned += 1;
                    position += record.view.total_size;
                }
                Step::End(end) => break Some(end),
            }
        };
        DecodedBatch {
            columns,
            next_position: position,
            records_scanned,
            end,
        }
    }

    /// Positions at which to cut the file into parts of about `part_size` bytes, each
    /// starting on a record: always `[0, ...]`, increasing. Follows the chain of record
    /// lengths from the start (it reads each record's header, not its body), so a cut is
    /// never placed inside a record. Stops cutting where the chain ends or breaks; the
    /// reader of the last part meets and reports whatever is there.
    pub fn split_points(&self, part_size: usize) -> Vec<usize> {
        let bytes = self.bytes();
        let mut points = vec![0];
        if part_size == 0 {
            return points;
        }
        let mut next_cut = part_size;
        let mut position = 0;
        while position + PHYSICAL_OFFSET_POSITION + 8 <= bytes.len() {
            let header = &bytes[position..];
            let magic = read_i32(header, MAGIC_POSITION);
            let Ok(length) = usize::try_from(read_i32(header, TOTAL_SIZE_POSITION)) else {
                break;
            };
            let at = read_i64(header, PHYSICAL_OFFSET_POSITION);
            if (magic != MAGIC_V1 && magic != MAGIC_V2)
                || length <= PHYSICAL_OFFSET_POSITION
                || length > header.len()
                || u64::try_from(at).ok() != Some(self.start_offset + position as u64)
            {
                break;
            }
            if position >= next_cut {
                points.push(position);
                next_cut = position + part_size;
            }
            position += length;
        }
        points
    }
}

/// The body CRC (skipped for an empty body, as RocketMQ does) and, when present, the
/// whole-record CRC property.
fn crc_matches(view: &RecordView<'_>, record_bytes: &[u8]) -> bool {
    let body_ok = view.body.is_empty() || body_crc(view.body) == view.body_crc;
    body_ok && check_crc_property(view, record_bytes).unwrap_or(true)
}

/// Valid records of a range, in order. See `SegmentDecoder::records`.
pub struct Records<'a> {
    decoder: &'a SegmentDecoder,
    position: usize,
    limit: usize,
    verify_crc: bool,
    end: Option<SegmentEnd>,
}

impl Records<'_> {
    /// Why the iteration stopped; `None` until it has.
    pub fn end(&self) -> Option<&SegmentEnd> {
        self.end.as_ref()
    }

    /// Where the next record would start.
    pub fn position(&self) -> usize {
        self.position
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = SegmentRecord<'a>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.end.is_some() {
            return None;
        }
        match self
            .decoder
            .read_at(self.position, self.limit, self.verify_crc)
        {
            Step::Record(record) => {
                self.position += record.view.total_size;
                Some(record)
            }
            Step::End(end) => {
                self.end = Some(end);
                None
            }
        }
    }
}
