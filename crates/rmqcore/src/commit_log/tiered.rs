//! The commit log's segments that only the tier holds: reads fall through to them when no
//! local segment has the offset, and are validated exactly as local reads are.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;

use super::{CommitLog, RecordRef};
use crate::big_endian::read_i32;
use crate::error::{Error, Result};
use crate::files::segment::Segment;
use crate::record::{decode_record, Decoded, RecordView};

/// Bytes read at a record's position before its length is known.
const FIRST_READ: usize = 4096;

/// The evicted segment a record was read from: what a reader of several records
/// (`LogCursor`) keeps, so that the next ones in it cost no lookup of their segment.
#[derive(Debug, Clone)]
pub(super) struct RemoteSegmentAt {
    start: u64,
    size: u64,
    /// How errors name the segment's copy.
    object: Arc<Path>,
    /// The bytes the last read gave (to the end of its cached block), and their position
    /// in the segment: the next records there are read from them.
    kept: Option<(u64, Bytes)>,
}

impl RemoteSegmentAt {
    /// The evicted segment holding `offset`.
    pub(super) fn holding(remote: &dyn RemoteSegments, offset: u64) -> Option<Self> {
        let (start, size) = remote.holding(offset)?;
        Some(RemoteSegmentAt {
            start,
            size,
            object: remote.object_name(start),
            kept: None,
        })
    }

    /// The kept bytes from `position` on, when they reach that far.
    fn kept_from(&self, position: u64) -> Option<Bytes> {
        let (at, bytes) = self.kept.as_ref()?;
        let from = usize::try_from(position.checked_sub(*at)?).ok()?;
        (from < bytes.len()).then(|| bytes.slice(from..))
    }

    pub(super) fn contains(&self, offset: u64) -> bool {
        offset >= self.start && offset - self.start < self.size
    }
}

/// Segments whose local copy is gone, kept elsewhere (the store's tier implements it):
/// what the commit log needs to read them.
pub trait RemoteSegments: Send + Sync + std::fmt::Debug {
    /// The first offset only this holds.
    fn min_offset(&self) -> Option<u64>;
    /// The segment holding `offset`, as (start offset, size).
    fn holding(&self, offset: u64) -> Option<(u64, u64)>;
    /// How errors name the segment's copy.
    fn object_name(&self, start_offset: u64) -> Arc<Path>;
    /// `length` bytes at `position` of the segment (fewer at its end).
    fn read(&self, start_offset: u64, position: u64, length: usize) -> Result<Bytes>;
    /// Up to `length` bytes at `position`, fewer where the copy's unit of caching ends
    /// (a slice, never a copy); empty only at the segment's end. Up to `up_to` bytes when
    /// that is more, read as a read of `length` is: what a reader of the next records
    /// keeps.
    fn read_in_block(
        &self,
        start_offset: u64,
        position: u64,
        length: usize,
        up_to: usize,
    ) -> Result<Bytes>;
    /// The whole segment, checked against what was stored.
    fn read_whole(&self, start_offset: u64) -> Result<Bytes>;
    /// Records a reader will read soon, as (offset, size): a hint to fetch them ahead.
    fn prefetch(&self, records: &[(u64, u32)]);
}

/// A whole segment's bytes for a scan: mapped, or fetched from the tier.
pub(super) enum SegmentBytes {
    Mapped(Arc<Segment>),
    Fetched(u64, Bytes),
}

impl SegmentBytes {
    pub(super) fn start_offset(&self) -> u64 {
        match self {
            SegmentBytes::Mapped(segment) => segment.start_offset(),
            SegmentBytes::Fetched(start, _) => *start,
        }
    }

    pub(super) fn bytes(&self) -> &[u8] {
        match self {
            SegmentBytes::Mapped(segment) => segment.bytes_from(0),
            SegmentBytes::Fetched(_, bytes) => bytes,
        }
    }
}

impl CommitLog {
    /// Read evicted segments through `remote` from now on.
    pub fn attach_tier(&self, remote: Arc<dyn RemoteSegments>) {
        let _ = self.remote.set(remote);
    }

    /// Whether evicted segments are read from a tier.
    pub fn has_tier(&self) -> bool {
        self.remote.get().is_some()
    }

    /// With a tier: the offset below which only the tier has records (the first local
    /// segment's start).
    pub fn remote_below(&self) -> Option<u64> {
        self.remote.get()?;
        Some(
            self.segments
                .first()
                .map_or(u64::MAX, |first| first.start_offset()),
        )
    }

    /// Records a reader will read soon, as (offset, size): the tier fetches those it
    /// holds ahead of the reads.
    pub fn prefetch_remote(&self, records: &[(u64, u32)]) {
        if let Some(remote) = self.remote.get() {
            remote.prefetch(records);
        }
    }

    /// The end (exclusive commit-log offset) of the evicted segment holding `offset`;
    /// None when no evicted segment holds it.
    pub fn evicted_segment_end(&self, offset: u64) -> Option<u64> {
        let (start, size) = self.remote.get()?.holding(offset)?;
        Some(start + size)
    }

    pub(super) fn remote_min_offset(&self) -> Option<u64> {
        self.remote.get().and_then(|remote| remote.min_offset())
    }

    /// The whole evicted segment holding `offset`, with its start offset.
    pub(super) fn remote_segment_bytes(&self, offset: u64) -> Result<Option<(u64, Bytes)>> {
        let Some(remote) = self.remote.get() else {
            return Ok(None);
        };
        let Some((start_offset, _)) = remote.holding(offset) else {
            return Ok(None);
        };
        let bytes = remote.read_whole(start_offset)?;
        Ok(Some((start_offset, bytes)))
    }

    /// The record at `offset` from an evicted segment; None when no evicted segment
    /// holds the offset.
    pub(super) fn read_remote(&self, offset: u64, check_crc: bool) -> Result<Option<RecordRef>> {
        let Some(remote) = self.remote.get() else {
            return Ok(None);
        };
        let Some(mut segment) = RemoteSegmentAt::holding(remote.as_ref(), offset) else {
            return Ok(None);
        };
        let object = Arc::clone(&segment.object);
        self.remote_record(
            remote.as_ref(),
            &mut segment,
            offset,
            check_crc,
            |_, bytes| RecordRef::fetched(bytes.clone(), offset, object),
        )
        .map(Some)
    }

    /// The record at `offset` of the evicted `segment`, which holds it, read and checked
    /// as `read_remote` does, its view (decoded and checked once) and its bytes given to
    /// `visit`. A record inside what the segment's last read gave is read there.
    pub(super) fn remote_record<R>(
        &self,
        remote: &dyn RemoteSegments,
        segment: &mut RemoteSegmentAt,
        offset: u64,
        check_crc: bool,
        visit: impl FnOnce(&RecordView<'_>, &Bytes) -> R,
    ) -> Result<R> {
        let start_offset = segment.start;
        let position = offset - start_offset;
        let object = Arc::clone(&segment.object);
        let corrupt = |reason: String| Error::corrupt(&*object, position, reason);
        // Most records are shorter than this: one read (one GET when not cached) gets the
        // length and the record as a slice of one cached block. Only a record crossing
        // into the next block is read again whole, which copies it (just it: a first read
        // across the boundary would copy FIRST_READ bytes for every record near one).
        // The bytes to the block's end are kept: the next records of a pull are mostly
        // there, and read there they cost no lookup in the cache (each block is still
        // read through it once, as its first record is).
        let mut first = match segment.kept_from(position) {
            Some(kept) if kept.len() >= 4 => kept,
            _ => remote.read_in_block(start_offset, position, FIRST_READ, usize::MAX)?,
        };
        if first.len() < 4 {
            first = remote.read(start_offset, position, FIRST_READ)?;
        }
        segment.kept = Some((position, first.clone()));
        if first.len() < 4 {
            return Err(corrupt("no record starts here".into()));
        }
        let length = read_i32(&first, 0);
        if length <= 0 || length as usize > self.max_record_length() {
            return Err(corrupt(format!("no record starts here (length {length})")));
        }
        let bytes = if length as usize <= first.len() {
            first.slice(..length as usize)
        } else {
            remote.read(start_offset, position, length as usize)?
        };
        match decode_record(&bytes, check_crc) {
            Ok(Decoded::Record(view)) if view.physical_offset == offset as i64 => {
                Ok(visit(&view, &bytes))
            }
            Ok(Decoded::Record(view)) => Err(corrupt(format!(
                "record says it is at offset {}, found at {offset}",
                view.physical_offset
            ))),
            Ok(_) => Err(corrupt("no record starts here".into())),
            Err(error) => Err(corrupt(error.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_bytes_serve_only_the_positions_they_hold() {
        let mut segment = RemoteSegmentAt {
            start: 1000,
            size: 500,
            object: Arc::from(Path::new("bucket/segment")),
            kept: None,
        };
        assert!(segment.kept_from(10).is_none(), "nothing kept yet");
        segment.kept = Some((100, Bytes::from_static(b"abcdefgh")));
        assert_eq!(&segment.kept_from(100).unwrap()[..], b"abcdefgh");
        assert_eq!(&segment.kept_from(103).unwrap()[..], b"defgh");
        assert_eq!(&segment.kept_from(107).unwrap()[..], b"h");
        assert!(segment.kept_from(108).is_none(), "past the kept bytes");
        assert!(segment.kept_from(99).is_none(), "before them");
        assert!(segment.contains(1000) && segment.contains(1499));
        assert!(!segment.contains(999) && !segment.contains(1500));
    }
}
