//! Reserving disk blocks ahead of writes through a mapping. A write to a page of a sparse
//! file on a full disk kills the process with SIGBUS; reserving the blocks first (with
//! fallocate) turns that into an ENOSPC error the caller can report. Blocks are reserved a
//! chunk at a time so a sparse file costs about what it holds.
//!
//! Thread safety: the writer and the page warmer may both call `ensure`. A race costs at
//! most a second fallocate of a range that is already reserved (a no-op), and the mark
//! only ever grows.

use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::{IoContext, Result};

#[derive(Debug)]
pub struct ReservedPrefix {
    /// Every byte below this offset has its blocks reserved.
    reserved_to: AtomicUsize,
    /// How far ahead of a write to reserve; 0 never reserves.
    chunk: usize,
}

impl ReservedPrefix {
    pub fn new(chunk: usize) -> Self {
        ReservedPrefix {
            reserved_to: AtomicUsize::new(0),
            chunk,
        }
    }

    /// Make sure bytes `[floor, end)` of the file (of `file_size` bytes) are reserved.
    /// `floor` skips a prefix that was reserved otherwise.
    pub fn ensure(
        &self,
        file: &File,
        path: &Path,
        floor: usize,
        end: usize,
        file_size: usize,
    ) -> Result<()> {
        let reserved = self.reserved_to.load(Ordering::Acquire);
        if self.chunk == 0 || end <= reserved {
            return Ok(());
        }
        let from = reserved.max(floor);
        let to = end
            .div_ceil(self.chunk)
            .saturating_mul(self.chunk)
            .min(file_size);
        if to > from {
            allocate_range(file, from, to - from).at(path)?;
        }
        self.reserved_to.fetch_max(to, Ordering::AcqRel);
        Ok(())
    }
}

/// Reserve disk blocks for `[offset, offset + length)` of a file without changing its
/// size. Filesystems that cannot do it (EOPNOTSUPP) are left as they are.
pub fn allocate_range(file: &File, offset: usize, length: usize) -> std::io::Result<()> {
    if length == 0 {
        return Ok(());
    }
    // SAFETY: plain syscall on a descriptor the caller owns.
    let status = unsafe {
        libc::fallocate(
            std::os::fd::AsRawFd::as_raw_fd(file),
            0,
            offset as libc::off_t,
            length as libc::off_t,
        )
    };
    if status == 0 {
        return Ok(());
    }
    let error = std::io::Error::last_os_error();
    if error.raw_os_error() == Some(libc::EOPNOTSUPP) {
        return Ok(());
    }
    Err(error)
}
