//! A consume-queue entry (format §2.2): where a record is in the commit log, its size and
//! its tags code; the file form stores it in 20 bytes, the RocksDB form in 28 with the
//! store time.

use crate::big_endian::{read_i32, read_i64, write_i32, write_i64};

/// Bytes of an entry in a consume-queue file.
pub const ENTRY_SIZE: usize = 20;
const PHYSICAL_OFFSET_AT: usize = 0;
const SIZE_AT: usize = 8;
const TAGS_CODE_AT: usize = 12;
const _: () = assert!(TAGS_CODE_AT + 8 == ENTRY_SIZE);

/// A placeholder entry written before a queue's first real entry (format §2.3).
pub const PLACEHOLDER_SIZE: i32 = i32::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CqEntry {
    pub commitlog_offset: i64,
    pub size: i32,
    pub tags_code: i64,
    /// The record's store time: kept by the RocksDB form, 0 where the file form is read.
    pub store_timestamp: i64,
}

impl CqEntry {
    pub fn encode(&self, buf: &mut [u8]) {
        write_i64(buf, PHYSICAL_OFFSET_AT, self.commitlog_offset);
        write_i32(buf, SIZE_AT, self.size);
        write_i64(buf, TAGS_CODE_AT, self.tags_code);
    }

    pub fn decode(buf: &[u8]) -> Self {
        CqEntry {
            commitlog_offset: read_i64(buf, PHYSICAL_OFFSET_AT),
            size: read_i32(buf, SIZE_AT),
            tags_code: read_i64(buf, TAGS_CODE_AT),
            store_timestamp: 0,
        }
    }

    /// Valid as RocketMQ's recovery sees it (placeholders included).
    pub fn is_valid(&self) -> bool {
        self.commitlog_offset >= 0 && self.size > 0
    }

    pub fn is_placeholder(&self) -> bool {
        self.commitlog_offset == 0 && self.size == PLACEHOLDER_SIZE
    }

    /// One past the record's last byte.
    pub fn commitlog_end(&self) -> i64 {
        self.commitlog_offset + i64::from(self.size)
    }
}
