//! The compacted form of a sealed index file: rmq's own read-optimised copy, kept under
//! `index_compacted/<same name>` beside the RocketMQ-format file (which stays in `index/`
//! for RocketMQ brokers and tools). The idea is RocketMQ's tiered-store index; the layout
//! is format §3.7: each slot's entries lie contiguously, newest first, and the slot
//! records where that run starts and how long it is, so a lookup is one slot read plus
//! one contiguous read instead of a walk that touches a random page per entry. Written by
//! `compaction.rs`.
//!
//! ```text
//! offset                        size          field
//! 0                             8             magic "RMQIXC01"
//! 8                             8   i64       beginTimestamp   (as the source header)
//! 16                            8   i64       endTimestamp
//! 24                            8   i64       beginPhyOffset
//! 32                            8   i64       endPhyOffset
//! 40                            4   i32       slotCount        the table size
//! 44                            4   i32       entryCount       entries stored
//! 48                            4   i32       sourceIndexCount the source's indexCount
//! 52                            4   i32       bodyCrc          CRC-32 of every byte from 64 on
//! 56                            8             reserved, zero
//! 64                            8 × slots     slot s: i32 run start (entry index, 0-based),
//!                                             i32 run length (entries); empty = 0, 0
//! 64 + 8×slots + 16×i           16            entry i:
//!     +0  i32 keyHash
//!     +4  i32 timeDiff   seconds since beginTimestamp (the source's first-entry quirk,
//!                        a difference from the previous file's end, is normalised to 0)
//!     +8  i64 commit-log offset
//! file size = 64 + 8×slots + 16×entryCount
//! ```
//!
//! Big-endian like everything else. A compacted file is written as `<name>.tmp`,
//! synced, renamed into place and the directory synced; only then do queries switch to
//! it, so a crash at any point leaves the source file usable and at worst a `.tmp` that
//! the next open deletes. A compacted file whose `sourceIndexCount` no longer matches
//! its source (recovery cut the source) is stale and deleted.
//!
//! Thread safety: a `CompactedIndexFile` is immutable once written; any number of
//! threads may read it.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::big_endian::{read_i32, read_i64, write_i32, write_i64};
use crate::error::{Error, Result};
use crate::files::mapped_file::MappedFile;

pub const MAGIC: [u8; 8] = *b"RMQIXC01";
pub const HEADER_SIZE: usize = 64;
pub const MAGIC_AT: usize = 0;
pub const BEGIN_TIMESTAMP_AT: usize = MAGIC_AT + 8;
pub const END_TIMESTAMP_AT: usize = BEGIN_TIMESTAMP_AT + 8;
pub const BEGIN_PHY_OFFSET_AT: usize = END_TIMESTAMP_AT + 8;
pub const END_PHY_OFFSET_AT: usize = BEGIN_PHY_OFFSET_AT + 8;
pub const SLOT_COUNT_AT: usize = END_PHY_OFFSET_AT + 8;
pub const ENTRY_COUNT_AT: usize = SLOT_COUNT_AT + 4;
pub const SOURCE_INDEX_COUNT_AT: usize = ENTRY_COUNT_AT + 4;
pub const BODY_CRC_AT: usize = SOURCE_INDEX_COUNT_AT + 4;
const RESERVED_AT: usize = BODY_CRC_AT + 4;
const _: () = assert!(RESERVED_AT + 8 == HEADER_SIZE);

pub const SLOT_SIZE: usize = 8;
pub const RUN_START_AT: usize = 0;
pub const RUN_LENGTH_AT: usize = 4;
const _: () = assert!(RUN_LENGTH_AT + 4 == SLOT_SIZE);

pub const ENTRY_SIZE: usize = 16;
pub const ENTRY_KEY_HASH_AT: usize = 0;
pub const ENTRY_TIME_DIFF_AT: usize = 4;
pub const ENTRY_PHY_OFFSET_AT: usize = 8;
const _: () = assert!(ENTRY_PHY_OFFSET_AT + 8 == ENTRY_SIZE);
const _: () = assert!(HEADER_SIZE.is_multiple_of(8) && SLOT_SIZE.is_multiple_of(8));

/// The header's fields. The tier state (format §7.2) keeps the fields a query needs under
/// their names here; it leaves out the two that tie a file to its local source and its
/// own bytes, since a tiered copy is checked by its whole CRC32 instead.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactedHeader {
    pub begin_timestamp: i64,
    pub end_timestamp: i64,
    pub begin_phy_offset: i64,
    pub end_phy_offset: i64,
    pub slot_count: u32,
    pub entry_count: u32,
    #[serde(skip)]
    pub source_index_count: i32,
    #[serde(skip)]
    pub body_crc: u32,
}

impl CompactedHeader {
    pub fn decode(bytes: &[u8]) -> Self {
        CompactedHeader {
            begin_timestamp: read_i64(bytes, BEGIN_TIMESTAMP_AT),
            end_timestamp: read_i64(bytes, END_TIMESTAMP_AT),
            begin_phy_offset: read_i64(bytes, BEGIN_PHY_OFFSET_AT),
            end_phy_offset: read_i64(bytes, END_PHY_OFFSET_AT),
            slot_count: read_i32(bytes, SLOT_COUNT_AT) as u32,
            entry_count: read_i32(bytes, ENTRY_COUNT_AT) as u32,
            source_index_count: read_i32(bytes, SOURCE_INDEX_COUNT_AT),
            body_crc: read_i32(bytes, BODY_CRC_AT) as u32,
        }
    }

    pub(super) fn encode(&self, bytes: &mut [u8]) {
        bytes[MAGIC_AT..MAGIC_AT + 8].copy_from_slice(&MAGIC);
        write_i64(bytes, BEGIN_TIMESTAMP_AT, self.begin_timestamp);
        write_i64(bytes, END_TIMESTAMP_AT, self.end_timestamp);
        write_i64(bytes, BEGIN_PHY_OFFSET_AT, self.begin_phy_offset);
        write_i64(bytes, END_PHY_OFFSET_AT, self.end_phy_offset);
        write_i32(bytes, SLOT_COUNT_AT, self.slot_count as i32);
        write_i32(bytes, ENTRY_COUNT_AT, self.entry_count as i32);
        write_i32(bytes, SOURCE_INDEX_COUNT_AT, self.source_index_count);
        write_i32(bytes, BODY_CRC_AT, self.body_crc as i32);
        bytes[RESERVED_AT..HEADER_SIZE].fill(0);
    }

    pub fn file_size(&self) -> u64 {
        HEADER_SIZE as u64
            + self.slot_count as u64 * SLOT_SIZE as u64
            + self.entry_count as u64 * ENTRY_SIZE as u64
    }

    pub fn entries_at(&self) -> usize {
        HEADER_SIZE + self.slot_count as usize * SLOT_SIZE
    }
}

/// One entry of a compacted file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactedEntry {
    pub key_hash: i32,
    pub time_diff: i32,
    pub commitlog_offset: i64,
}

pub struct CompactedIndexFile {
    header: CompactedHeader,
    /// Never written after it is renamed into place, so its bytes are read freely.
    file: MappedFile,
}

impl std::fmt::Debug for CompactedIndexFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompactedIndexFile")
            .field("path", &self.path())
            .field("header", &self.header)
            .finish()
    }
}

impl CompactedIndexFile {
    /// Map a complete compacted file, checking its magic and size (not its CRC, which
    /// `verify` reads the whole file for).
    pub fn open(path: &Path) -> Result<Self> {
        let file = MappedFile::open(path, false)?;
        let length = file.len();
        if length < HEADER_SIZE {
            return Err(Error::corrupt(
                path,
                0,
                format!("compacted index file is {length} bytes, shorter than its header"),
            ));
        }
        let map = file.bytes(0, length);
        if map[MAGIC_AT..MAGIC_AT + 8] != MAGIC {
            return Err(Error::corrupt(
                path,
                0,
                "not a compacted index file (bad magic)",
            ));
        }
        let header = CompactedHeader::decode(map);
        if header.slot_count == 0 || header.file_size() != length as u64 {
            return Err(Error::corrupt(
                path,
                0,
                format!("compacted index file is {length} bytes; its header ({} slots, {} entries) says {}", header.slot_count, header.entry_count, header.file_size()),
            ));
        }
        Ok(CompactedIndexFile { header, file })
    }

    pub fn path(&self) -> &Path {
        self.file.path()
    }

    fn map(&self) -> &[u8] {
        self.file.bytes(0, self.file.len())
    }

    /// The whole file (for upload to the tier).
    pub fn bytes(&self) -> &[u8] {
        self.map()
    }

    pub fn header(&self) -> &CompactedHeader {
        &self.header
    }

    /// The run of `key_hash`'s slot, newest first: the one contiguous read of a lookup.
    /// Entries of other keys sharing the slot are in the run too; callers compare hashes.
    pub fn run(&self, key_hash: i32) -> Result<impl Iterator<Item = CompactedEntry> + '_> {
        let slot = key_hash.unsigned_abs() % self.header.slot_count;
        let slot_at = HEADER_SIZE + slot as usize * SLOT_SIZE;
        let start = read_i32(self.map(), slot_at + RUN_START_AT);
        let length = read_i32(self.map(), slot_at + RUN_LENGTH_AT);
        let in_bounds = start >= 0
            && length >= 0
            && (start as u64 + length as u64) <= u64::from(self.header.entry_count);
        if !in_bounds {
            return Err(Error::corrupt(
                self.path(),
                slot_at as u64,
                format!("slot {slot} points at entries {start}+{length}, outside the file"),
            ));
        }
        let from = self.header.entries_at() + start as usize * ENTRY_SIZE;
        let bytes = &self.map()[from..from + length as usize * ENTRY_SIZE];
        Ok(bytes.chunks_exact(ENTRY_SIZE).map(|entry| CompactedEntry {
            key_hash: read_i32(entry, ENTRY_KEY_HASH_AT),
            time_diff: read_i32(entry, ENTRY_TIME_DIFF_AT),
            commitlog_offset: read_i64(entry, ENTRY_PHY_OFFSET_AT),
        }))
    }

    /// Read the whole file and check its CRC and that the runs tile the entry area.
    pub fn verify(&self) -> Result<()> {
        let computed = crc32fast::hash(&self.map()[HEADER_SIZE..]);
        if computed != self.header.body_crc {
            return Err(Error::corrupt(
                self.path(),
                HEADER_SIZE as u64,
                format!(
                    "body CRC {computed:#010x}, header says {:#010x}",
                    self.header.body_crc
                ),
            ));
        }
        let mut next = 0u64;
        for slot in 0..self.header.slot_count as usize {
            let at = HEADER_SIZE + slot * SLOT_SIZE;
            let (start, length) = (
                read_i32(self.map(), at + RUN_START_AT),
                read_i32(self.map(), at + RUN_LENGTH_AT),
            );
            if length > 0 && start as u64 != next {
                return Err(Error::corrupt(
                    self.path(),
                    at as u64,
                    format!("slot {slot}'s run starts at {start}, expected {next}"),
                ));
            }
            next += length.max(0) as u64;
        }
        if next != u64::from(self.header.entry_count) {
            return Err(Error::corrupt(
                self.path(),
                0,
                format!(
                    "runs cover {next} entries, header says {}",
                    self.header.entry_count
                ),
            ));
        }
        Ok(())
    }
}
