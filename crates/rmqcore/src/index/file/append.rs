//! Adding keys to an index file (format §3.4 "putKey"): each key's entry and slot are
//! written through the mapping as it comes, while the header's six fields are kept in an
//! `AppendState` and stored once per batch (`store_header`). Storing them per key, each
//! store checked for bounds and writability, cost about 190 instructions a key
//! (callgrind, 100 B batch with a key per message).
//!
//! What readers see is unchanged in kind: a query walks chains from the slots (acquire)
//! and reaches only complete entries, and a header stored at the end of the batch says
//! no more than what those entries hold. The store publishes a batch's records (the
//! dispatched offset the checkpoint reads) only after its header is stored, so a
//! checkpoint never covers an entry the flushed header does not count; recovery repairs
//! a file past the checkpoint from its entries, not from its header (`repair.rs`).

use std::sync::atomic::Ordering;

use super::{IndexFile, ENTRY_RESERVATION_CHUNK};
use crate::error::Result;
use crate::index::layout::*;

/// A file's header as its writer keeps it between stores to the file.
#[derive(Debug, Clone, Copy)]
pub struct AppendState {
    header: IndexHeader,
    slots: SlotDivisor,
    /// The next entry number (`indexCount`, at least 1).
    count: u32,
    /// `count` when the header was last read or stored.
    stored_count: u32,
    /// Entry bytes below this are known reserved on disk.
    reserved_end: usize,
}

impl AppendState {
    pub fn is_full(&self, file: &IndexFile) -> bool {
        self.count >= file.geometry.entry_count
    }

    /// Whether keys were added since the header was last stored.
    pub fn has_unstored_keys(&self) -> bool {
        self.count != self.stored_count
    }
}

impl IndexFile {
    /// Start adding keys: the header as the file holds it now. One writer at a time.
    pub fn open_append(&self) -> AppendState {
        assert!(self.file.is_writable(), "write to a read-only index file");
        let header = self.header();
        let count = self.index_count();
        AppendState {
            header,
            slots: SlotDivisor::new(self.geometry),
            count,
            stored_count: count,
            reserved_end: self.geometry.entry_position(0),
        }
    }

    /// Reserve disk blocks for the next entry (and a chunk after it) before `append_key`
    /// writes it through the mapping; asks the file system once a chunk.
    #[inline(always)]
    pub fn reserve_next_entry(&self, state: &mut AppendState) -> Result<()> {
        let end = self.geometry.entry_position(state.count) + ENTRY_SIZE;
        if end <= state.reserved_end {
            return Ok(());
        }
        self.reserve_entries_to(state, end)
    }

    #[cold]
    fn reserve_entries_to(&self, state: &mut AppendState, end: usize) -> Result<()> {
        let file_size = self.geometry.file_size() as usize;
        self.reserved.ensure(
            self.file.file(),
            self.path(),
            self.geometry.entry_position(0),
            end,
            file_size,
        )?;
        // What `ensure` reserved up to, at least.
        state.reserved_end = end
            .div_ceil(ENTRY_RESERVATION_CHUNK)
            .saturating_mul(ENTRY_RESERVATION_CHUNK)
            .min(file_size);
        Ok(())
    }

    /// Add one key's entry and point its slot at it, in putKey's order of effects; the
    /// header changes in `state` only. Returns false, changing nothing, when the file is
    /// full.
    #[inline(always)]
    pub fn append_key(
        &self,
        state: &mut AppendState,
        key_hash: i32,
        commitlog_offset: i64,
        store_timestamp: i64,
    ) -> bool {
        let count = state.count;
        if count >= self.geometry.entry_count {
            return false;
        }
        let slot = self
            .file
            .atomic_i32(self.geometry.slot_position(state.slots.slot_of(key_hash)));
        let mut previous = i32::from_be(slot.load(Ordering::Relaxed));
        if previous <= 0 || previous as u32 > count {
            previous = 0;
        }
        let begin_timestamp = state.header.begin_timestamp;
        let time_diff = if begin_timestamp <= 0 {
            0
        } else {
            let seconds = (store_timestamp - begin_timestamp) / 1000;
            i32::try_from(seconds.max(0)).unwrap_or(i32::MAX)
        };
        let words = self
            .file
            .atomic_i32_words(self.geometry.entry_position(count), ENTRY_SIZE / 4);
        let offset = commitlog_offset as u64;
        for (word, value) in words.iter().zip([
            key_hash,
            (offset >> 32) as u32 as i32,
            offset as u32 as i32,
            time_diff,
            previous,
        ]) {
            word.store(value.to_be(), Ordering::Relaxed);
        }
        // Publishes the entry to readers of the slot (they load it with acquire).
        slot.store((count as i32).to_be(), Ordering::Release);
        let header = &mut state.header;
        if count <= 1 {
            header.begin_phy_offset = commitlog_offset;
            header.begin_timestamp = store_timestamp;
        }
        if previous == 0 {
            header.hash_slot_count = header.hash_slot_count.wrapping_add(1);
        }
        header.end_phy_offset = commitlog_offset;
        header.end_timestamp = store_timestamp;
        state.count = count + 1;
        header.index_count = state.count as i32;
        true
    }

    /// Store the header `state` holds, if keys were added since it was last stored.
    pub fn store_header(&self, state: &mut AppendState) {
        if !state.has_unstored_keys() {
            return;
        }
        let header = &state.header;
        self.store_i64(
            BEGIN_TIMESTAMP_AT,
            header.begin_timestamp,
            Ordering::Relaxed,
        );
        self.store_i64(END_TIMESTAMP_AT, header.end_timestamp, Ordering::Relaxed);
        self.store_i64(
            BEGIN_PHY_OFFSET_AT,
            header.begin_phy_offset,
            Ordering::Relaxed,
        );
        self.store_i64(END_PHY_OFFSET_AT, header.end_phy_offset, Ordering::Relaxed);
        self.store_i32(
            HASH_SLOT_COUNT_AT,
            header.hash_slot_count,
            Ordering::Relaxed,
        );
        // Last, with release: a reader that sees the count sees the fields above.
        self.store_i32(INDEX_COUNT_AT, header.index_count, Ordering::Release);
        self.dirty.store(true, Ordering::Release);
        state.stored_count = state.count;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ops::ControlFlow;

    fn file(dir: &std::path::Path, name: &str) -> IndexFile {
        let geometry = IndexGeometry {
            slot_count: 3,
            entry_count: 6,
        };
        IndexFile::create(&dir.join(name), geometry, Some((50, 900))).unwrap()
    }

    #[test]
    fn a_batch_stores_the_header_once_with_the_bytes_of_one_put_per_key() {
        let dir = tempfile::tempdir().unwrap();
        let (batched, one_by_one) = (file(dir.path(), "a"), file(dir.path(), "b"));
        // Slots 1, 1 and 2 of 3.
        let keys = [(4, 100, 1_000), (7, 200, 2_500), (2, 300, 9_000)];
        let mut state = batched.open_append();
        for (hash, offset, time) in keys {
            batched.reserve_next_entry(&mut state).unwrap();
            assert!(batched.append_key(&mut state, hash, offset, time));
            assert!(one_by_one.put_key(hash, offset, time));
        }
        // Until it is stored the header is the seeded one, while every entry can already
        // be reached from its slot.
        assert_eq!(batched.header().index_count, 1);
        assert_eq!(batched.header().end_phy_offset, 50);
        let mut reached = Vec::new();
        batched.walk_chain(7, |number, entry| {
            reached.push((number, entry.commitlog_offset));
            ControlFlow::Continue(())
        });
        assert_eq!(reached, vec![(2, 200), (1, 100)]);
        assert!(state.has_unstored_keys());
        batched.store_header(&mut state);
        assert!(!state.has_unstored_keys());
        assert_eq!(batched.header(), one_by_one.header());
        assert_eq!(
            batched.header(),
            IndexHeader {
                begin_timestamp: 1_000,
                end_timestamp: 9_000,
                begin_phy_offset: 100,
                end_phy_offset: 300,
                hash_slot_count: 2,
                index_count: 4,
            }
        );
        let bytes = |file: &IndexFile| std::fs::read(file.path()).unwrap();
        batched.flush().unwrap();
        one_by_one.flush().unwrap();
        assert_eq!(bytes(&batched), bytes(&one_by_one));
    }

    #[test]
    fn a_full_file_refuses_the_next_key_and_keeps_its_header() {
        let dir = tempfile::tempdir().unwrap();
        let index = file(dir.path(), "f");
        let mut state = index.open_append();
        for number in 1..6 {
            assert!(!state.is_full(&index));
            assert!(index.append_key(&mut state, number, i64::from(number) * 10, 1_000));
        }
        assert!(state.is_full(&index));
        assert!(!index.append_key(&mut state, 9, 60, 1_000));
        index.store_header(&mut state);
        assert!(index.is_full());
        assert_eq!(index.header().end_phy_offset, 50);
    }
}
