//! Key lookups in index files only the tier holds (format §7.4): the header fields
//! come from the state, and a file's slot table, small and never changed once
//! uploaded, is fetched whole by the first lookup in it and kept (within a byte budget),
//! so a lookup reads only the key's run: one range read per file, two for the first.

use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;

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
            .map(|(name, file)| (name.clone(), file.header))
            .collect()
    }

    /// One range read for the run (16 bytes per entry), after one for the slot table
    /// when it is not kept yet.
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
        let table = self.slot_table(name, header)?;
        let at = slot as usize * SLOT_SIZE;
        let slot_bytes = &table[at..at + SLOT_SIZE];
        let start = read_i32(slot_bytes, 0);
        let length = read_i32(slot_bytes, 4);
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
        let run = self.counted_get(&object, from..to, self.recorded_index_file(name)?)?;
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

impl RemoteLog {
    /// Index file `name`'s size and CRC32 as recorded at upload.
    fn recorded_index_file(&self, name: &str) -> Result<(u64, u32)> {
        self.state
            .read()
            .expect("tier state lock")
            .index_files
            .get(name)
            .map(|file| (file.size, file.crc32))
            .ok_or_else(|| Error::NotFound(format!("index file {name} is no longer in the tier")))
    }

    /// The slot table of index file `name`: kept, or fetched whole and kept.
    fn slot_table(&self, name: &str, header: &CompactedHeader) -> Result<Bytes> {
        if let Some(table) = self.slot_tables.lock().expect("slot table lock").get(name) {
            return Ok(Bytes::clone(&table));
        }
        let object = self.client.location().index_file(name);
        let from = HEADER_SIZE as u64;
        let to = from + u64::from(header.slot_count.max(1)) * SLOT_SIZE as u64;
        let table = self.counted_get(&object, from..to, self.recorded_index_file(name)?)?;
        if table.len() as u64 != to - from {
            return Err(Error::corrupt(
                PathBuf::from(self.client.location().describe(&object)),
                from,
                "the object is shorter than uploaded",
            ));
        }
        self.slot_tables
            .lock()
            .expect("slot table lock")
            .insert(name.to_owned(), Arc::new(table.clone()));
        Ok(table)
    }
}
