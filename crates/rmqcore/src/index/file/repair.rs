//! Cutting an index file back to the entries of the valid log after an unclean shutdown
//! (format §3.6), rebuilding its slot table from the entries it keeps.

use std::sync::atomic::Ordering;

use super::IndexFile;
use crate::error::Result;
use crate::index::layout::*;

/// What `repair` kept of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RepairOutcome {
    /// Entries kept (numbers 1 ..= kept).
    pub kept: u32,
    pub removed: u32,
    /// Set when the scan stopped at an entry that is not a valid continuation of the
    /// file (torn by a crash) rather than at the cut: the commit-log offset from which
    /// records must be indexed again (the entries of that record were removed too).
    pub reindex_from: Option<i64>,
}

impl IndexFile {
    /// Make the file hold exactly its entries for records below `cut`, as if those had
    /// been its only puts; used by recovery after an unclean shutdown.
    ///
    /// The slot table is rebuilt from the entries rather than trusted: after a power loss
    /// any page written since the last flush may or may not have reached the disk, so a
    /// slot can point at an entry that was lost. Entries are scanned from 1 and kept while
    /// each is a valid continuation (its `prev` is the newest earlier entry of its slot,
    /// offsets do not go backwards, the record lies below `cut`); everything after is
    /// zeroed. `store_time_of` gives a kept record's store time for the header.
    pub fn repair(
        &self,
        cut: i64,
        store_time_of: impl Fn(i64) -> Option<i64>,
    ) -> Result<RepairOutcome> {
        let geometry = self.geometry;
        let scan_end = self.index_count().min(geometry.entry_count);
        let mut slots = vec![0i32; geometry.slot_count as usize];
        let mut last_offset = i64::MIN;
        let mut kept = 0u32;
        let mut torn = false;
        for number in 1..scan_end {
            let entry = self.entry(number);
            if entry.commitlog_offset >= cut {
                break;
            }
            let slot = geometry.slot_of(entry.key_hash) as usize;
            let valid = entry.key_hash >= 0
                && entry.time_diff >= 0
                && entry.commitlog_offset >= 0
                && entry.commitlog_offset >= last_offset
                && entry.prev == slots[slot];
            if !valid {
                torn = true;
                break;
            }
            slots[slot] = number as i32;
            last_offset = entry.commitlog_offset;
            kept = number;
        }
        let mut reindex_from = None;
        if torn && kept > 0 {
            // The record whose entries end the valid prefix may have lost later keys:
            // drop all of its entries so that it is indexed again as a whole.
            reindex_from = Some(last_offset);
            while kept > 0 && self.entry(kept).commitlog_offset == last_offset {
                let entry = self.entry(kept);
                slots[geometry.slot_of(entry.key_hash) as usize] = entry.prev;
                kept -= 1;
            }
        }
        let removed = scan_end.saturating_sub(1).saturating_sub(kept);

        let mut used = 0i32;
        for (slot, value) in slots.iter().enumerate() {
            if *value != 0 {
                used += 1;
            }
            let at = geometry.slot_position(slot as u32);
            if self.load_i32(at, Ordering::Relaxed) != *value {
                self.store_i32(at, *value, Ordering::Relaxed);
            }
        }
        self.zero_from(geometry.entry_position(kept + 1))?;
        let header = self.header();
        let (begin_offset, end_offset) = if kept > 0 {
            (
                self.entry(1).commitlog_offset,
                self.entry(kept).commitlog_offset,
            )
        } else {
            (header.begin_phy_offset, header.begin_phy_offset)
        };
        let begin_time = if kept > 0 {
            store_time_of(begin_offset).unwrap_or(header.begin_timestamp)
        } else {
            header.begin_timestamp
        };
        let end_time = if kept > 0 {
            store_time_of(end_offset).unwrap_or(begin_time)
        } else {
            begin_time
        };
        self.store_i64(BEGIN_TIMESTAMP_AT, begin_time, Ordering::Relaxed);
        self.store_i64(END_TIMESTAMP_AT, end_time, Ordering::Relaxed);
        self.store_i64(BEGIN_PHY_OFFSET_AT, begin_offset, Ordering::Relaxed);
        self.store_i64(END_PHY_OFFSET_AT, end_offset, Ordering::Relaxed);
        self.store_i32(HASH_SLOT_COUNT_AT, used, Ordering::Relaxed);
        self.store_i32(INDEX_COUNT_AT, kept as i32 + 1, Ordering::Release);
        self.dirty.store(true, Ordering::Release);
        self.flush()?;
        Ok(RepairOutcome {
            kept,
            removed,
            reindex_from,
        })
    }

    /// Zero every byte from `position` (4-aligned) to the end: the partial page word by
    /// word, the rest by punching a hole, so stale entries can never be read as valid.
    fn zero_from(&self, position: usize) -> Result<()> {
        let size = self.file.len();
        let page_end = self.file.page_end(position);
        for at in (position..page_end).step_by(4) {
            self.store_i32(at, 0, Ordering::Relaxed);
        }
        if !self.file.punch_hole_from(page_end) {
            // No hole punching here: clear the words that are not zero yet.
            for at in (page_end..size).step_by(4) {
                if self.load_i32(at, Ordering::Relaxed) != 0 {
                    self.store_i32(at, 0, Ordering::Relaxed);
                }
            }
        }
        Ok(())
    }
}
