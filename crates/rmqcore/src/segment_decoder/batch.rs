//! Decoding a range of a segment into a batch of columns, the unit Spark reads: the
//! filter that decides which records become rows, the bounds on rows and bytes that close
//! a batch, and the batch with where the next one starts. Its allocations are sized from
//! the range up front, so that batch after batch reuses the same heap memory.

use std::collections::HashSet;

use crate::record::{RecordView, FIXED_PART_V4};

use super::{ColumnBatch, ColumnSelection, SegmentDecoder, SegmentEnd, Step};

/// No record is shorter: the fixed part, the body length, a 1-byte topic length and the
/// properties length (format §1.2).
const MIN_RECORD_LENGTH: usize = FIXED_PART_V4 + 4 + 1 + 2;

/// Room reserved up front for a batch's bodies. Kept well below glibc's largest mmap
/// threshold (32 MiB) so that, batch after batch, the allocator hands back the same heap
/// memory instead of mapping (and the kernel zeroing) fresh pages each time.
const BODY_RESERVATION: usize = 8 << 20;

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

impl SegmentDecoder {
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
}
