//! Key lookups in index files only the tier holds (format §7.4): the header fields
//! come from the state, so a lookup reads the key's slot and then its run, nothing more.

use std::path::PathBuf;

use super::remote_log::RemoteLog;
use crate::big_endian::{read_i32, read_i64};
use crate::error::{Error, Result};
use crate::index::compacted::{
    CompactedEntry, CompactedHeader, ENTRY_SIZE, HEADER_SIZE, SLOT_SIZE,
};

impl crate::index::remote::RemoteIndex for RemoteLog {
    fn remote_files(&self) -> Vec<(String, CompactedHeader)> {
        let state = self.state.read().expect("tier state lock");
        state
            .index_files
            .iter()
            .rev()
            .filter(|(_, file)| !file.local)
            .map(|(name, file)| {
                let header = CompactedHeader {
                    begin_timestamp: file.begin_timestamp,
                    end_timestamp: file.end_timestamp,
                    begin_phy_offset: file.begin_phy_offset,
                    end_phy_offset: file.end_phy_offset,
                    slot_count: file.slot_count,
                    entry_count: file.entry_count,
                    ..CompactedHeader::default()
                };
                (name.clone(), header)
            })
            .collect()
    }

    /// Two range reads: the slot (8 bytes), then its run (16 bytes per entry).
    fn remote_run(
        &self,
        name: &str,
        header: &CompactedHeader,
        key_hash: i32,
    ) -> Result<Vec<CompactedEntry>> {
        let object = self.client.location().index_file(name);
        let describe = || PathBuf::from(self.client.location().describe(&object));
        let slot = key_hash.unsigned_abs() % header.slot_count.max(1);
        let slot_at = (HEADER_SIZE + slot as usize * SLOT_SIZE) as u64;
        let slot_bytes = self.counted_get(&object, slot_at..slot_at + SLOT_SIZE as u64)?;
        if slot_bytes.len() != SLOT_SIZE {
            return Err(Error::corrupt(
                describe(),
                slot_at,
                "the object is shorter than uploaded",
            ));
        }
        let start = read_i32(&slot_bytes, 0);
        let length = read_i32(&slot_bytes, 4);
        if start < 0 || length < 0 || start as u64 + length as u64 > u64::from(header.entry_count) {
            return Err(Error::corrupt(
                describe(),
                slot_at,
                format!("slot {slot} points at entries {start}+{length}, outside the file"),
            ));
        }
        if length == 0 {
            return Ok(Vec::new());
        }
        let from = (header.entries_at() + start as usize * ENTRY_SIZE) as u64;
        let to = from + length as u64 * ENTRY_SIZE as u64;
        let run = self.counted_get(&object, from..to)?;
        if run.len() as u64 != to - from {
            return Err(Error::corrupt(
                describe(),
                from,
                "the object is shorter than uploaded",
            ));
        }
        Ok(run
            .chunks_exact(ENTRY_SIZE)
            .map(|entry| CompactedEntry {
                key_hash: read_i32(entry, 0),
                time_diff: read_i32(entry, 4),
                commitlog_offset: read_i64(entry, 8),
            })
            .collect())
    }
}
