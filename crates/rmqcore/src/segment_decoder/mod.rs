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
//!
//! This file opens a segment (mapped, or fetched whole from a tier) and hands out its
//! bytes; what is done with them is in the files beside it: `read.rs` reads one record at
//! a position (and iterates them), `batch.rs` decodes a range into columns
//! (`columns.rs`, in Arrow's layouts from `arrow.rs`), and `split.rs` cuts a segment
//! into parts for parallel readers.

mod arrow;
mod batch;
mod columns;
mod read;
mod split;

use std::path::{Path, PathBuf};

use crate::error::{Error, IoContext, Result};
use crate::files::segment::{parse_segment_file_name, Segment};

pub use arrow::{Bitmap, ListColumn, MapColumn, VarColumn};
pub use batch::{BatchOptions, DecodedBatch, RecordFilter};
pub use columns::{ColumnBatch, ColumnSelection};
pub use read::{InvalidRecord, Records, SegmentEnd, SegmentRecord, Step};

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
}
