//! A file mapped into memory whole: what commit-log and consume-queue segments, index
//! files and compacted index files are built on. It owns the file, its mapping and the
//! raw accesses (bytes, atomics, msync, page population, hole punching); the layers above
//! decide who may touch which bytes when.
//!
//! Thread safety: `MappedFile` is `Send + Sync`. Reads through `bytes` and the atomics are
//! safe for any caller; `bytes_mut` is `unsafe` because exclusivity of the written range
//! is the caller's protocol (one writer, writing only bytes no reader can see yet).

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, AtomicI64};

use memmap2::{MmapOptions, MmapRaw};

use crate::error::{Error, IoContext, Result};

pub(crate) const PAGE: usize = 4096;

pub struct MappedFile {
    path: PathBuf,
    file: File,
    map: MmapRaw,
    writable: bool,
}

impl std::fmt::Debug for MappedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedFile")
            .field("path", &self.path)
            .field("len", &self.len())
            .finish()
    }
}

impl MappedFile {
    /// Create a new file of `size` zero bytes (sparse) and map it read-write. A file that
    /// cannot be sized (a full disk) is removed again.
    pub fn create(path: &Path, size: u64) -> Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .at(path)?;
        if let Err(error) = file.set_len(size) {
            let _ = std::fs::remove_file(path);
            return Err(Error::io(path, error));
        }
        Self::map(path, file, size, true)
    }

    /// Map an existing file whole.
    pub fn open(path: &Path, writable: bool) -> Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(writable)
            .open(path)
            .at(path)?;
        let size = file.metadata().at(path)?.len();
        Self::map(path, file, size, writable)
    }

    /// Map an existing file that must be exactly `size` bytes; `mismatch` says, for the
    /// size found, why that is wrong.
    pub fn open_exact(
        path: &Path,
        size: u64,
        writable: bool,
        mismatch: impl FnOnce(u64) -> String,
    ) -> Result<Self> {
        let mapped = Self::open(path, writable)?;
        let found = mapped.len() as u64;
        if found != size {
            return Err(Error::corrupt(path, 0, mismatch(found)));
        }
        Ok(mapped)
    }

    fn map(path: &Path, file: File, size: u64, writable: bool) -> Result<Self> {
        let length =
            usize::try_from(size).map_err(|_| Error::corrupt(path, 0, "file too large to map"))?;
        let options = {
            let mut options = MmapOptions::new();
            options.len(length);
            options
        };
        let map = if writable {
            options.map_raw(&file)
        } else {
            options.map_raw_read_only(&file)
        }
        .at(path)?;
        Ok(MappedFile {
            path: path.to_path_buf(),
            file,
            map,
            writable,
        })
    }

    /// Have each page fault bring in only its own page, without the kernel's read-around
    /// (`MADV_RANDOM`). For a file written from its start and read back while cached,
    /// read-around only allocates and zeroes pages of holes ahead of the writer, on the
    /// writer's thread: with `read_ahead_kb` at 8192 (this machine), a fresh 6 MB
    /// consume-queue file was filled whole at its first entry. Advice only: a kernel that
    /// refuses it leaves the mapping as it was.
    pub fn skip_read_around(&self) {
        self.read_around(0, self.len(), false);
    }

    /// Turn the kernel's read-around on (`MADV_NORMAL`) or off (`MADV_RANDOM`) for the
    /// pages from the first page boundary at or after `position` through the page holding
    /// `position + length - 1` (a file's partial last page included); advice only, as
    /// above.
    pub fn read_around(&self, position: usize, length: usize, on: bool) {
        let start = position.div_ceil(PAGE).saturating_mul(PAGE);
        let end = position
            .saturating_add(length)
            .min(self.len())
            .div_ceil(PAGE)
            .saturating_mul(PAGE);
        let advice = if on {
            libc::MADV_NORMAL
        } else {
            libc::MADV_RANDOM
        };
        let _ = self.advise(start, end, advice);
    }

    /// `madvise` the pages `[start, end)` (page-aligned, or nothing when empty) with one
    /// of the advice values this file uses, none of which changes the file's bytes: read-
    /// around on or off, dropping page-table entries of this shared mapping, populating.
    fn advise(&self, start: usize, end: usize, advice: libc::c_int) -> std::io::Result<()> {
        if start >= end {
            return Ok(());
        }
        debug_assert!(start.is_multiple_of(PAGE) && end <= self.len().div_ceil(PAGE) * PAGE);
        // SAFETY: the range lies inside the mapping, which `self` keeps alive, and the
        // advice values above change which pages are mapped and how they are faulted in,
        // never the bytes the file holds.
        let status =
            unsafe { libc::madvise(self.map.as_mut_ptr().add(start).cast(), end - start, advice) };
        if status == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn file(&self) -> &File {
        &self.file
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn is_writable(&self) -> bool {
        self.writable
    }

    fn check_range(&self, position: usize, length: usize) {
        assert!(
            position
                .checked_add(length)
                .is_some_and(|end| end <= self.len()),
            "{position}+{length} is past the end of {}",
            self.path.display()
        );
    }

    /// Bytes `[position, position + length)`, which the caller knows no writer is
    /// changing (published, or the file is never written).
    pub fn bytes(&self, position: usize, length: usize) -> &[u8] {
        self.check_range(position, length);
        // SAFETY: in bounds (checked); the mapping lives as long as `self`; writers only
        // write bytes that readers cannot see yet (module docs).
        unsafe { std::slice::from_raw_parts(self.map.as_ptr().add(position), length) }
    }

    /// Mutable access to bytes no reader can see yet.
    ///
    /// # Safety
    /// Only the single writer may call this, only for unpublished bytes, and never for
    /// overlapping ranges at once.
    #[expect(
        clippy::mut_from_ref,
        reason = "the writer protocol in the module docs makes this exclusive"
    )]
    pub unsafe fn bytes_mut(&self, position: usize, length: usize) -> &mut [u8] {
        assert!(self.writable, "write to read-only {}", self.path.display());
        self.check_range(position, length);
        // SAFETY: in bounds; exclusivity is the caller's contract.
        unsafe { std::slice::from_raw_parts_mut(self.map.as_mut_ptr().add(position), length) }
    }

    /// The 4-byte word at `at` (a multiple of 4) as an atomic: files read and written
    /// concurrently word by word (index files) use only these.
    pub fn atomic_i32(&self, at: usize) -> &AtomicI32 {
        assert!(
            at.is_multiple_of(4),
            "word {at} of {} is misaligned",
            self.path.display()
        );
        self.check_range(at, 4);
        // SAFETY: in bounds and 4-byte aligned (the mapping is page-aligned); the mapping
        // lives as long as `self`; every access to these bytes is atomic.
        unsafe { &*self.map.as_ptr().add(at).cast::<AtomicI32>() }
    }

    /// The `count` 4-byte words from `at` (a multiple of 4) as atomics, checked once: an
    /// index entry's five words cost one bounds check, not five.
    pub fn atomic_i32_words(&self, at: usize, count: usize) -> &[AtomicI32] {
        assert!(
            at.is_multiple_of(4),
            "word {at} of {} is misaligned",
            self.path.display()
        );
        self.check_range(at, count.saturating_mul(4));
        // SAFETY: as for `atomic_i32`, for every word of the checked range.
        unsafe { std::slice::from_raw_parts(self.map.as_ptr().add(at).cast::<AtomicI32>(), count) }
    }

    /// The 8-byte word at `at` (a multiple of 8) as an atomic.
    pub fn atomic_i64(&self, at: usize) -> &AtomicI64 {
        assert!(
            at.is_multiple_of(8),
            "word {at} of {} is misaligned",
            self.path.display()
        );
        self.check_range(at, 8);
        // SAFETY: as for `atomic_i32`, with 8-byte alignment.
        unsafe { &*self.map.as_ptr().add(at).cast::<AtomicI64>() }
    }

    /// msync the byte range so it is durable.
    pub fn flush_range(&self, position: usize, length: usize) -> Result<()> {
        if length == 0 || !self.writable {
            return Ok(());
        }
        self.map.flush_range(position, length).at(&self.path)
    }

    /// Drop this process's page-table entries for the whole pages within `[position,
    /// position + length)` (`MADV_DONTNEED`). For a shared file mapping nothing is lost:
    /// the pages stay in the page cache, dirty ones stay dirty, and the next touch maps
    /// them again.
    pub fn unmap_pages(&self, position: usize, length: usize) {
        let start = position.div_ceil(PAGE).saturating_mul(PAGE);
        let end = (position.saturating_add(length) / PAGE * PAGE).min(self.len());
        if self.writable {
            let _ = self.advise(start, end, libc::MADV_DONTNEED);
        }
    }

    /// msync the whole file.
    pub fn flush(&self) -> Result<()> {
        if !self.writable {
            return Ok(());
        }
        self.map.flush().at(&self.path)
    }

    /// Fault in the pages of `[position, position + length)` as a first write would,
    /// without changing a byte (see `page_warmer.rs`); the caller reserved their disk
    /// blocks first. EINVAL means the kernel cannot do it (before Linux 5.14).
    pub fn populate_for_write(&self, position: usize, length: usize) -> std::io::Result<()> {
        if !self.writable || length == 0 {
            return Ok(());
        }
        let start = position / PAGE * PAGE;
        let end = position
            .saturating_add(length)
            .div_ceil(PAGE)
            .saturating_mul(PAGE)
            .min(self.len());
        self.advise(start, end, libc::MADV_POPULATE_WRITE)
    }

    /// Write zeros over `[position, position + length)` through the file, not the mapping
    /// (see `page_warmer.rs` for why and for who may call it).
    pub fn write_zeros(&self, position: usize, length: usize) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt;
        // 256 KiB per `pwrite`, also for the warmer's 2 MiB pieces: whole 2 MiB writes
        // made the shards' warming 4-8x dearer (0.25 -> 1.5-2 µs per 1 KiB message,
        // alternating builds, 2026-11-28), as each asked the kernel for a 2 MiB folio of
        // memory the host had taken back.
        static ZEROS: [u8; 256 << 10] = [0; 256 << 10];
        let mut at = position;
        let end = position.saturating_add(length).min(self.len());
        while at < end {
            let piece = (end - at).min(ZEROS.len());
            self.file.write_all_at(&ZEROS[..piece], at as u64)?;
            at += piece;
        }
        Ok(())
    }

    /// The first page boundary at or after `position` (capped at the file's end): where
    /// `punch_hole_from` can start.
    pub fn page_end(&self, position: usize) -> usize {
        position.div_ceil(PAGE).saturating_mul(PAGE).min(self.len())
    }

    /// Make the pages from `page_start` (page-aligned, or the file's end) to the end read
    /// as zero without writing them. Returns false, changing nothing, on a file system
    /// that cannot punch holes; the caller then writes the zeros itself.
    pub fn punch_hole_from(&self, page_start: usize) -> bool {
        if page_start >= self.len() {
            return true;
        }
        debug_assert_eq!(page_start % PAGE, 0);
        // SAFETY: plain syscall on a descriptor we own; the range lies inside the file.
        let status = unsafe {
            libc::fallocate(
                std::os::fd::AsRawFd::as_raw_fd(&self.file),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                page_start as libc::off_t,
                (self.len() - page_start) as libc::off_t,
            )
        };
        status == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_files_are_zero_sized_and_reopen_with_their_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let mapped = MappedFile::create(&path, 8192).unwrap();
        assert_eq!(mapped.bytes(0, 8192), &[0u8; 8192][..]);
        unsafe { mapped.bytes_mut(4090, 10) }.copy_from_slice(b"0123456789");
        mapped
            .atomic_i32(8)
            .store(7, std::sync::atomic::Ordering::Relaxed);
        mapped.flush().unwrap();
        assert!(
            MappedFile::create(&path, 8192).is_err(),
            "create never replaces"
        );
        let reopened = MappedFile::open_exact(&path, 8192, false, |n| n.to_string()).unwrap();
        assert_eq!(reopened.bytes(4090, 10), b"0123456789");
        let error = MappedFile::open_exact(&path, 4096, false, |n| format!("{n} bytes"));
        assert!(error.unwrap_err().to_string().contains("8192 bytes"));
    }

    #[test]
    fn holes_read_as_zero() {
        let dir = tempfile::tempdir().unwrap();
        let mapped = MappedFile::create(&dir.path().join("f"), 3 * 4096).unwrap();
        unsafe { mapped.bytes_mut(0, 3 * 4096) }.fill(0xAB);
        assert_eq!(mapped.page_end(5000), 8192);
        if mapped.punch_hole_from(4096) {
            assert!(mapped.bytes(4096, 8192).iter().all(|b| *b == 0));
            assert!(mapped.bytes(0, 4096).iter().all(|b| *b == 0xAB));
        }
    }
}
