//! One RocketMQ index file mapped in memory (format §3, layout in `layout.rs`): a hash
//! index from `topic#key` to commit-log offsets, in a fixed-size file under `index/`
//! named by its creation time.
//!
//! Thread safety: one writer at a time (`put_key`, `repair`), any number of readers at
//! the same time. Every access to the mapping is an aligned atomic load or store of a
//! 4- or 8-byte word (the layout keeps every field 4-byte aligned and the header 8-byte
//! aligned), so readers never race the writer in the memory-model sense. An entry is
//! complete before the slot store (release) that makes it reachable; a reader loads the
//! slot with acquire, so every entry it reaches by the chain is complete.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use crate::error::{IoContext, Result};
use crate::files::disk_reservation::ReservedPrefix;
use crate::files::mapped_file::MappedFile;
use crate::index::layout::*;

mod append;
mod repair;

pub use append::AppendState;
pub use repair::RepairOutcome;

pub struct IndexFile {
    file: MappedFile,
    geometry: IndexGeometry,
    /// Written since the last flush.
    dirty: AtomicBool,
    /// Disk blocks reserved ahead of entry writes (`reserve_next_entry`).
    reserved: ReservedPrefix,
}

impl std::fmt::Debug for IndexFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexFile")
            .field("path", &self.path())
            .field("geometry", &self.geometry)
            .finish()
    }
}

/// Entry bytes are reserved on disk this far ahead of the writer.
const ENTRY_RESERVATION_CHUNK: usize = 64 * 1024;

impl IndexFile {
    /// Create a new (sparse, zero) file. As RocketMQ does, the header starts with the
    /// previous file's end offset and end time as both begin and end, so the first
    /// entry's time difference is measured from there.
    pub fn create(
        path: &Path,
        geometry: IndexGeometry,
        previous_end: Option<(i64, i64)>,
    ) -> Result<Self> {
        let file = MappedFile::create(path, geometry.file_size())?;
        // The header and slot table are written at random places: reserve them now, so a
        // full disk fails here rather than with SIGBUS on a write through the mapping.
        crate::files::disk_reservation::allocate_range(file.file(), 0, geometry.entry_position(0))
            .at(path)?;
        // Keys land at random slots: a fresh file's first touches each read around 8 MiB
        // of zeros (`read_ahead_kb` here) on the writer's thread. Without read-around, 50,000
        // 100 B messages with a key each (a new store) went from 361 to 280 ns a message.
        // Opened files keep read-around: compaction and repair read them in order.
        file.skip_read_around();
        let index = IndexFile {
            file,
            geometry,
            dirty: AtomicBool::new(true),
            reserved: ReservedPrefix::new(ENTRY_RESERVATION_CHUNK),
        };
        if let Some((end_phy_offset, end_timestamp)) = previous_end {
            if end_phy_offset > 0 {
                index.store_i64(BEGIN_PHY_OFFSET_AT, end_phy_offset, Ordering::Relaxed);
                index.store_i64(END_PHY_OFFSET_AT, end_phy_offset, Ordering::Relaxed);
            }
            if end_timestamp > 0 {
                index.store_i64(BEGIN_TIMESTAMP_AT, end_timestamp, Ordering::Relaxed);
                index.store_i64(END_TIMESTAMP_AT, end_timestamp, Ordering::Relaxed);
            }
        }
        // RocketMQ's in-memory count starts at 1 and reaches the file at its first flush.
        index.store_i32(INDEX_COUNT_AT, 1, Ordering::Release);
        Ok(index)
    }

    /// Map an existing file, which must be exactly `geometry.file_size()` bytes.
    pub fn open(path: &Path, geometry: IndexGeometry, writable: bool) -> Result<Self> {
        let file = MappedFile::open_exact(path, geometry.file_size(), writable, |length| {
            format!(
                "index file is {length} bytes; {} slots and {} entries need {}",
                geometry.slot_count,
                geometry.entry_count,
                geometry.file_size()
            )
        })?;
        Ok(IndexFile {
            file,
            geometry,
            dirty: AtomicBool::new(false),
            reserved: ReservedPrefix::new(ENTRY_RESERVATION_CHUNK),
        })
    }

    pub fn path(&self) -> &Path {
        self.file.path()
    }

    pub fn name(&self) -> String {
        self.path()
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    pub fn geometry(&self) -> IndexGeometry {
        self.geometry
    }

    fn atomic_i64(&self, at: usize) -> &AtomicI64 {
        assert!(
            at + 8 <= HEADER_SIZE,
            "index header field {at} out of bounds"
        );
        self.file.atomic_i64(at)
    }

    fn load_i32(&self, at: usize, order: Ordering) -> i32 {
        i32::from_be(self.file.atomic_i32(at).load(order))
    }

    // Several stores per key indexed: once the compiler outlined it, a put paid ~130
    // instructions a message for the calls (callgrind).
    #[inline]
    fn store_i32(&self, at: usize, value: i32, order: Ordering) {
        assert!(self.file.is_writable(), "write to a read-only index file");
        self.file.atomic_i32(at).store(value.to_be(), order);
    }

    fn load_i64(&self, at: usize, order: Ordering) -> i64 {
        i64::from_be(self.atomic_i64(at).load(order))
    }

    #[inline]
    fn store_i64(&self, at: usize, value: i64, order: Ordering) {
        assert!(self.file.is_writable(), "write to a read-only index file");
        self.atomic_i64(at).store(value.to_be(), order);
    }

    pub fn header(&self) -> IndexHeader {
        IndexHeader {
            index_count: self.load_i32(INDEX_COUNT_AT, Ordering::Acquire),
            begin_timestamp: self.load_i64(BEGIN_TIMESTAMP_AT, Ordering::Relaxed),
            end_timestamp: self.load_i64(END_TIMESTAMP_AT, Ordering::Relaxed),
            begin_phy_offset: self.load_i64(BEGIN_PHY_OFFSET_AT, Ordering::Relaxed),
            end_phy_offset: self.load_i64(END_PHY_OFFSET_AT, Ordering::Relaxed),
            hash_slot_count: self.load_i32(HASH_SLOT_COUNT_AT, Ordering::Relaxed),
        }
    }

    /// The next entry number (RocketMQ reads a stored value ≤ 0 as 1).
    pub fn index_count(&self) -> u32 {
        u32::try_from(self.load_i32(INDEX_COUNT_AT, Ordering::Acquire))
            .unwrap_or(0)
            .max(1)
    }

    /// Entries in use.
    pub fn entries(&self) -> u32 {
        self.index_count().min(self.geometry.entry_count) - 1
    }

    pub fn is_full(&self) -> bool {
        self.index_count() >= self.geometry.entry_count
    }

    pub fn slot(&self, slot: u32) -> i32 {
        self.load_i32(self.geometry.slot_position(slot), Ordering::Acquire)
    }

    /// Entry `number`, which the caller reached through a slot or chain (or knows to be
    /// below `index_count`).
    pub fn entry(&self, number: u32) -> IndexEntry {
        let at = self.geometry.entry_position(number);
        let high = self.load_i32(at + ENTRY_PHY_OFFSET_AT, Ordering::Relaxed) as u32;
        let low = self.load_i32(at + ENTRY_PHY_OFFSET_AT + 4, Ordering::Relaxed) as u32;
        IndexEntry {
            key_hash: self.load_i32(at + ENTRY_KEY_HASH_AT, Ordering::Relaxed),
            commitlog_offset: ((u64::from(high) << 32) | u64::from(low)) as i64,
            time_diff: self.load_i32(at + ENTRY_TIME_DIFF_AT, Ordering::Relaxed),
            prev: self.load_i32(at + ENTRY_PREV_AT, Ordering::Relaxed),
        }
    }

    /// Add one key (format §3.4 "putKey"), header included. Returns false, changing
    /// nothing, when the file is full. One writer at a time; a batch of keys goes through
    /// `open_append`, `append_key` and one `store_header` instead.
    pub fn put_key(&self, key_hash: i32, commitlog_offset: i64, store_timestamp: i64) -> bool {
        let mut state = self.open_append();
        if !self.append_key(&mut state, key_hash, commitlog_offset, store_timestamp) {
            return false;
        }
        self.store_header(&mut state);
        true
    }

    /// Walk the chain of `key_hash`'s slot, newest entry first, until `visit` says stop.
    /// Every step goes to a strictly older entry, so a damaged file cannot loop.
    pub fn walk_chain(
        &self,
        key_hash: i32,
        mut visit: impl FnMut(u32, IndexEntry) -> std::ops::ControlFlow<()>,
    ) {
        let mut number = self.slot(self.geometry.slot_of(key_hash));
        while number > 0 && (number as u32) < self.geometry.entry_count {
            let entry = self.entry(number as u32);
            if visit(number as u32, entry).is_break() || entry.prev >= number {
                break;
            }
            number = entry.prev;
        }
    }

    pub fn is_dirty(&self) -> bool {
        self.dirty.load(Ordering::Acquire)
    }

    /// msync the whole file if anything was written since the last flush.
    pub fn flush(&self) -> Result<()> {
        if !self.file.is_writable() || !self.dirty.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        self.file
            .flush()
            .inspect_err(|_| self.dirty.store(true, Ordering::Release))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::layout::IndexGeometry;

    #[test]
    fn chains_link_newest_first_and_fill_up() {
        let dir = tempfile::tempdir().unwrap();
        let geometry = IndexGeometry {
            slot_count: 2,
            entry_count: 4,
        };
        let file = IndexFile::create(&dir.path().join("f"), geometry, None).unwrap();
        assert!(file.put_key(4, 100, 1_000));
        assert!(file.put_key(1, 200, 2_000));
        assert!(file.put_key(6, 300, 5_000));
        assert!(!file.put_key(8, 400, 6_000));
        let mut seen = Vec::new();
        file.walk_chain(8, |number, entry| {
            seen.push((number, entry.commitlog_offset, entry.time_diff));
            std::ops::ControlFlow::Continue(())
        });
        assert_eq!(seen, vec![(3, 300, 4), (1, 100, 0)]);
        let header = file.header();
        assert_eq!(
            (
                header.index_count,
                header.hash_slot_count,
                header.end_phy_offset
            ),
            (4, 2, 300)
        );
    }
}
