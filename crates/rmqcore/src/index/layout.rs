//! The layout of a RocketMQ index file (format §3): header, slot table and entries,
//! the key hash, and the geometry that sizes a file.
//!
//! ```text
//! offset                         size           field
//! 0                              8   i64        beginTimestamp  store time of entry 1
//! 8                              8   i64        endTimestamp    store time of the newest entry
//! 16                             8   i64        beginPhyOffset  commit-log offset of entry 1
//! 24                             8   i64        endPhyOffset    commit-log offset of the newest entry
//! 32                             4   i32        hashSlotCount   slots in use (not the table size)
//! 36                             4   i32        indexCount      entries + 1 (entry 0 is never used)
//! 40                             4 × slots      slot table: i32 number of the newest entry of
//!                                               the slot, 0 = empty
//! 40 + 4×slots + 20×n            20             entry n (n ≥ 1):
//!     +0   i32  keyHash    |javaHash(topic + "#" + key)|, Integer.MIN_VALUE → 0
//!     +4   i64  commit-log offset of the record
//!     +12  i32  timeDiff   (storeTimestamp − beginTimestamp) / 1000, clamped to [0, i32::MAX]
//!     +16  i32  prev       the entry this one displaced from its slot, 0 = end of chain
//! file size = 40 + 4×slots + 20×entries
//! ```
//!
//! Everything is big-endian. A key lives in slot `keyHash mod slots`; the slot's entries
//! form a chain newest first through `prev`. The file is full when `indexCount` reaches
//! the entry count, so at most `entries − 1` entries are used. The slot and entry counts
//! are not stored: the reader must know them (format §3.1).

use crate::java_hash::java_hash_continue;

pub const HEADER_SIZE: usize = 40;
pub const BEGIN_TIMESTAMP_AT: usize = 0;
pub const END_TIMESTAMP_AT: usize = BEGIN_TIMESTAMP_AT + 8;
pub const BEGIN_PHY_OFFSET_AT: usize = END_TIMESTAMP_AT + 8;
pub const END_PHY_OFFSET_AT: usize = BEGIN_PHY_OFFSET_AT + 8;
pub const HASH_SLOT_COUNT_AT: usize = END_PHY_OFFSET_AT + 8;
pub const INDEX_COUNT_AT: usize = HASH_SLOT_COUNT_AT + 4;
const _: () = assert!(INDEX_COUNT_AT + 4 == HEADER_SIZE);

pub const SLOT_SIZE: usize = 4;
pub const ENTRY_SIZE: usize = 20;
pub const ENTRY_KEY_HASH_AT: usize = 0;
pub const ENTRY_PHY_OFFSET_AT: usize = ENTRY_KEY_HASH_AT + 4;
pub const ENTRY_TIME_DIFF_AT: usize = ENTRY_PHY_OFFSET_AT + 8;
pub const ENTRY_PREV_AT: usize = ENTRY_TIME_DIFF_AT + 4;
const _: () = assert!(ENTRY_PREV_AT + 4 == ENTRY_SIZE);
// Alignment that lets every field be accessed atomically on a page-aligned mapping.
const _: () = assert!(HEADER_SIZE.is_multiple_of(8) && END_PHY_OFFSET_AT.is_multiple_of(8));
const _: () = assert!(
    SLOT_SIZE.is_multiple_of(4)
        && ENTRY_SIZE.is_multiple_of(4)
        && ENTRY_PHY_OFFSET_AT.is_multiple_of(4)
);

/// RocketMQ's defaults (`maxHashSlotNum`, `maxIndexNum`).
pub const DEFAULT_SLOT_COUNT: u32 = 5_000_000;
pub const DEFAULT_ENTRY_COUNT: u32 = 20_000_000;

/// The hash stored for an index key string (format §3.4): the absolute value of Java's
/// `String.hashCode`, with Integer.MIN_VALUE (whose absolute value overflows) mapped to 0.
pub fn index_hash(key_string: &str) -> i32 {
    java_hash_continue(0, key_string).checked_abs().unwrap_or(0)
}

/// `index_hash` of `topic#key`, without building the string.
pub fn index_key_hash(topic: &str, key: &str) -> i32 {
    index_key_hash_after(topic_prefix_hash(topic), key)
}

/// Java's hash of `topic#`, which every key of a topic continues: a batch computes it
/// once for all its keys.
pub fn topic_prefix_hash(topic: &str) -> i32 {
    java_hash_continue(java_hash_continue(0, topic), "#")
}

/// `index_key_hash` given the `topic_prefix_hash` of the key's topic.
pub fn index_key_hash_after(prefix_hash: i32, key: &str) -> i32 {
    java_hash_continue(prefix_hash, key)
        .checked_abs()
        .unwrap_or(0)
}

/// The slot and entry counts of a file, which the file itself does not record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexGeometry {
    pub slot_count: u32,
    /// RocketMQ's `maxIndexNum`: entry numbers run from 1 to `entry_count − 1`.
    pub entry_count: u32,
}

impl Default for IndexGeometry {
    fn default() -> Self {
        IndexGeometry {
            slot_count: DEFAULT_SLOT_COUNT,
            entry_count: DEFAULT_ENTRY_COUNT,
        }
    }
}

impl IndexGeometry {
    pub fn file_size(&self) -> u64 {
        HEADER_SIZE as u64
            + self.slot_count as u64 * SLOT_SIZE as u64
            + self.entry_count as u64 * ENTRY_SIZE as u64
    }

    pub fn slot_position(&self, slot: u32) -> usize {
        HEADER_SIZE + slot as usize * SLOT_SIZE
    }

    pub fn entry_position(&self, number: u32) -> usize {
        HEADER_SIZE + self.slot_count as usize * SLOT_SIZE + number as usize * ENTRY_SIZE
    }

    pub fn slot_of(&self, key_hash: i32) -> u32 {
        key_hash.unsigned_abs() % self.slot_count
    }

    /// The geometry of an existing file: the configured one when the size matches, else
    /// RocketMQ's default ratio of four entries per slot, else none.
    pub fn for_file_size(size: u64, configured: IndexGeometry) -> Option<IndexGeometry> {
        if size == configured.file_size() {
            return Some(configured);
        }
        let body = size.checked_sub(HEADER_SIZE as u64)?;
        let per_slot = SLOT_SIZE as u64 + 4 * ENTRY_SIZE as u64;
        if body == 0 || body % per_slot != 0 {
            return None;
        }
        let slot_count = u32::try_from(body / per_slot).ok()?;
        Some(IndexGeometry {
            slot_count,
            entry_count: slot_count.checked_mul(4)?,
        })
    }
}

/// `IndexGeometry::slot_of` by multiplication instead of division, for the writer, which
/// places every key of every stored message (a 32-bit division costs it 10-20 cycles a
/// key). The remainder is computed directly from the divisor's 64-bit reciprocal, which
/// is exact for every 32-bit dividend and divisor (Lemire, Kaser and Kurz, "Faster
/// remainder by direct computation", 2019).
#[derive(Debug, Clone, Copy)]
pub struct SlotDivisor {
    /// ceil(2^64 / slot_count), wrapped to 0 for a single slot.
    reciprocal: u64,
    slot_count: u32,
}

impl SlotDivisor {
    pub fn new(geometry: IndexGeometry) -> Self {
        let slot_count = geometry.slot_count;
        SlotDivisor {
            reciprocal: (u64::MAX / u64::from(slot_count)).wrapping_add(1),
            slot_count,
        }
    }

    #[inline(always)]
    pub fn slot_of(&self, key_hash: i32) -> u32 {
        let fraction = self
            .reciprocal
            .wrapping_mul(u64::from(key_hash.unsigned_abs()));
        ((u128::from(fraction) * u128::from(self.slot_count)) >> 64) as u32
    }
}

/// The 40-byte header, decoded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IndexHeader {
    pub begin_timestamp: i64,
    pub end_timestamp: i64,
    pub begin_phy_offset: i64,
    pub end_phy_offset: i64,
    pub hash_slot_count: i32,
    pub index_count: i32,
}

/// One 20-byte entry, decoded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IndexEntry {
    pub key_hash: i32,
    pub commitlog_offset: i64,
    pub time_diff: i32,
    pub prev: i32,
}

impl IndexEntry {
    pub fn encode(&self) -> [u8; ENTRY_SIZE] {
        let mut bytes = [0u8; ENTRY_SIZE];
        crate::big_endian::write_i32(&mut bytes, ENTRY_KEY_HASH_AT, self.key_hash);
        crate::big_endian::write_i64(&mut bytes, ENTRY_PHY_OFFSET_AT, self.commitlog_offset);
        crate::big_endian::write_i32(&mut bytes, ENTRY_TIME_DIFF_AT, self.time_diff);
        crate::big_endian::write_i32(&mut bytes, ENTRY_PREV_AT, self.prev);
        bytes
    }

    pub fn decode(bytes: &[u8]) -> Self {
        IndexEntry {
            key_hash: crate::big_endian::read_i32(bytes, ENTRY_KEY_HASH_AT),
            commitlog_offset: crate::big_endian::read_i64(bytes, ENTRY_PHY_OFFSET_AT),
            time_diff: crate::big_endian::read_i32(bytes, ENTRY_TIME_DIFF_AT),
            prev: crate::big_endian::read_i32(bytes, ENTRY_PREV_AT),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_match_the_format_vectors() {
        assert_eq!(index_key_hash("TopicTest", "key1"), 1_655_984_460);
        assert_eq!(
            IndexGeometry::default().slot_of(index_key_hash("TopicTest", "key1")),
            984_460
        );
        // "polygenelubricants" hashes to Integer.MIN_VALUE; split anywhere it is the same string.
        assert_eq!(java_hash_continue(0, "polygenelubricants"), i32::MIN);
        assert_eq!(
            java_hash_continue(java_hash_continue(0, "polygene"), "lubricants"),
            i32::MIN
        );
        assert_eq!(index_key_hash("T", "Aa"), index_key_hash("T", "BB"));
    }

    #[test]
    fn the_slot_divisor_agrees_with_the_remainder() {
        let mut hash = 0x2545_f491_u32;
        let mut hashes = vec![
            0,
            1,
            -1,
            i32::MAX,
            i32::MIN,
            i32::MIN + 1,
            4_999_999,
            5_000_000,
        ];
        for _ in 0..20_000 {
            hash ^= hash << 13;
            hash ^= hash >> 17;
            hash ^= hash << 5;
            hashes.push(hash as i32);
        }
        for slot_count in [1, 2, 3, 7, 4096, 5_000_000, 65_537, u32::MAX - 1, u32::MAX] {
            let geometry = IndexGeometry {
                slot_count,
                entry_count: 4,
            };
            let divisor = SlotDivisor::new(geometry);
            for &key_hash in &hashes {
                assert_eq!(
                    divisor.slot_of(key_hash),
                    geometry.slot_of(key_hash),
                    "{key_hash} mod {slot_count}"
                );
            }
        }
    }

    #[test]
    fn entries_round_trip() {
        let entry = IndexEntry {
            key_hash: 7,
            commitlog_offset: 0x0102_0304_0506_0708,
            time_diff: 9,
            prev: 3,
        };
        assert_eq!(IndexEntry::decode(&entry.encode()), entry);
    }

    #[test]
    fn geometry_is_inferred_from_the_default_ratio() {
        let configured = IndexGeometry {
            slot_count: 7,
            entry_count: 50,
        };
        assert_eq!(
            IndexGeometry::for_file_size(configured.file_size(), configured),
            Some(configured)
        );
        assert_eq!(IndexGeometry::default().file_size(), 420_000_040);
        assert_eq!(
            IndexGeometry::for_file_size(420_000_040, configured),
            Some(IndexGeometry::default())
        );
        assert_eq!(IndexGeometry::for_file_size(41, configured), None);
    }
}
