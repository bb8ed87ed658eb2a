//! One fixed-size, memory-mapped file of a commit log or consume queue, named by the
//! 20-digit offset of its first byte (format §1.1, §2.1).
//!
//! Thread safety: a `Segment` is shared (`Arc`) between one writer and many readers. The
//! writer only writes bytes past the offsets it has published; readers only read bytes
//! below them, so the two never touch the same bytes. The mapping lives as long as any
//! `Arc` does, so a reader keeps a deleted segment readable until it lets go.

use std::path::Path;

use crate::error::Result;
use crate::files::disk_reservation::ReservedPrefix;
use crate::files::mapped_file::MappedFile;

pub const SEGMENT_NAME_DIGITS: usize = 20;

pub fn segment_file_name(start_offset: u64) -> String {
    format!("{start_offset:0width$}", width = SEGMENT_NAME_DIGITS)
}

/// The start offset a segment's name encodes, if the name is one.
pub fn parse_segment_file_name(name: &str) -> Option<u64> {
    (name.len() == SEGMENT_NAME_DIGITS && name.bytes().all(|b| b.is_ascii_digit()))
        .then(|| name.parse().ok())
        .flatten()
}

pub struct Segment {
    start_offset: u64,
    file: MappedFile,
    /// Disk blocks reserved ahead of the writer (see `ensure_allocated`).
    reserved: ReservedPrefix,
}

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segment")
            .field("path", &self.path())
            .field("size", &self.size())
            .finish()
    }
}

impl Segment {
    /// Create a new zero-filled (sparse) file of `size` bytes and map it read-write.
    /// With a non-zero `allocation_chunk`, the writer reserves disk blocks that many bytes
    /// at a time ahead of what it writes (`ensure_allocated`).
    pub fn create(
        dir: &Path,
        start_offset: u64,
        size: usize,
        allocation_chunk: usize,
    ) -> Result<Self> {
        let path = dir.join(segment_file_name(start_offset));
        Ok(Segment {
            start_offset,
            file: MappedFile::create(&path, size as u64)?,
            reserved: ReservedPrefix::new(allocation_chunk),
        })
    }

    /// Map an existing file, which must be exactly `size` bytes.
    pub fn open(path: &Path, start_offset: u64, size: usize, writable: bool) -> Result<Self> {
        let file = MappedFile::open_exact(path, size as u64, writable, |length| {
            format!("segment is {length} bytes, expected {size} like its siblings")
        })?;
        Ok(Segment {
            start_offset,
            file,
            reserved: ReservedPrefix::new(0),
        })
    }

    /// Reserve disk blocks `chunk` bytes at a time ahead of writes (see
    /// `ensure_allocated`); 0 never reserves.
    pub fn with_allocation_chunk(mut self, chunk: usize) -> Self {
        let chunk = if self.file.is_writable() { chunk } else { 0 };
        self.reserved = ReservedPrefix::new(chunk);
        self
    }

    /// Reserve disk blocks for bytes below `end` before the writer touches them through
    /// the mapping (see `disk_reservation.rs`).
    pub fn ensure_allocated(&self, end: usize) -> Result<()> {
        self.reserved
            .ensure(self.file.file(), self.path(), 0, end, self.size())
    }

    pub fn path(&self) -> &Path {
        self.file.path()
    }

    pub fn start_offset(&self) -> u64 {
        self.start_offset
    }

    pub fn end_offset(&self) -> u64 {
        self.start_offset + self.size() as u64
    }

    pub fn size(&self) -> usize {
        self.file.len()
    }

    pub fn contains(&self, offset: u64) -> bool {
        offset >= self.start_offset && offset < self.end_offset()
    }

    /// Bytes `[position, position + length)` of the file, which the caller knows to be
    /// published (written before an offset it read with acquire ordering).
    pub fn bytes(&self, position: usize, length: usize) -> &[u8] {
        self.file.bytes(position, length)
    }

    /// All bytes from `position` to the end of the file.
    pub fn bytes_from(&self, position: usize) -> &[u8] {
        self.bytes(position, self.size() - position)
    }

    /// Mutable access to unpublished bytes.
    ///
    /// # Safety
    /// Only the single writer may call this, only for bytes no reader can see yet
    /// (at or past every published offset), and never for overlapping ranges at once.
    #[expect(
        clippy::mut_from_ref,
        reason = "the writer protocol in the module docs makes this exclusive"
    )]
    pub unsafe fn bytes_mut(&self, position: usize, length: usize) -> &mut [u8] {
        // SAFETY: the caller's contract is this one.
        unsafe { self.file.bytes_mut(position, length) }
    }

    /// Fault in the pages of `[position, position + length)` as the writer's first write
    /// would, without changing a byte (see `page_warmer.rs`).
    pub fn populate_for_write(&self, position: usize, length: usize) -> std::io::Result<()> {
        self.file.populate_for_write(position, length)
    }

    /// Write zeros over a range through the file, not the mapping (`page_warmer.rs`).
    pub fn write_zeros(&self, position: usize, length: usize) -> std::io::Result<()> {
        self.file.write_zeros(position, length)
    }

    /// Fault pages in one at a time, without read-around (`MappedFile::skip_read_around`).
    pub fn skip_read_around(&self) {
        self.file.skip_read_around();
    }

    /// Read-around on or off for the whole pages of a range (`MappedFile::read_around`).
    pub fn read_around(&self, position: usize, length: usize, on: bool) {
        self.file.read_around(position, length, on);
    }

    /// Drop the process's mappings of the whole pages in a range, keeping their contents
    /// (`MappedFile::unmap_pages`).
    pub fn unmap_pages(&self, position: usize, length: usize) {
        self.file.unmap_pages(position, length);
    }

    /// msync the byte range so it is durable.
    pub fn flush_range(&self, position: usize, length: usize) -> Result<()> {
        self.file.flush_range(position, length)
    }

    /// Make every byte from `position` to the end of the file read as zero: the partial
    /// page by writing zeros, the rest by punching a hole, so a 1 GiB segment is cleared
    /// without writing 1 GiB. Called only by the writer on unpublished bytes.
    pub fn zero_from(&self, position: usize) -> Result<()> {
        let page_end = self.file.page_end(position);
        if page_end > position {
            // SAFETY: the caller is the writer and nothing past `position` is published.
            unsafe { self.bytes_mut(position, page_end - position) }.fill(0);
            self.flush_range(position, page_end - position)?;
        }
        if self.file.punch_hole_from(page_end) {
            return Ok(());
        }
        // No hole punching on this filesystem: write zeros where data is not zero yet.
        let tail = self.bytes_from(page_end);
        if let Some(last_nonzero) = tail.iter().rposition(|b| *b != 0) {
            // SAFETY: as above.
            unsafe { self.bytes_mut(page_end, last_nonzero + 1) }.fill(0);
            self.flush_range(page_end, last_nonzero + 1)?;
        }
        Ok(())
    }

    pub fn flush(&self) -> Result<()> {
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_twenty_digits() {
        assert_eq!(segment_file_name(1_073_741_824), "00000000001073741824");
        assert_eq!(
            parse_segment_file_name("00000000001073741824"),
            Some(1_073_741_824)
        );
        assert_eq!(parse_segment_file_name("1073741824"), None);
        assert_eq!(parse_segment_file_name("0000000000107374182x"), None);
    }

    #[test]
    fn created_segments_are_zero_filled_and_sized() {
        let dir = tempfile::tempdir().unwrap();
        let segment = Segment::create(dir.path(), 4096, 4096, 1024).unwrap();
        assert_eq!(segment.bytes(0, 4096), &[0u8; 4096][..]);
        unsafe { segment.bytes_mut(10, 3) }.copy_from_slice(b"abc");
        segment.flush().unwrap();
        let reopened = Segment::open(segment.path(), 4096, 4096, false).unwrap();
        assert_eq!(reopened.bytes(10, 3), b"abc");
        assert!(Segment::open(segment.path(), 4096, 8192, false).is_err());
    }
}
