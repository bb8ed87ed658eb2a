//! Writing the compacted form of a sealed index file (format §3.7): two passes over the
//! chained file, into a temporary file renamed into place once complete.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::big_endian::{write_i32, write_i64};
use crate::error::{Error, IoContext, Result};
use crate::files::mapped_file::MappedFile;
use crate::index::file::IndexFile;

use super::compacted::{
    CompactedHeader, CompactedIndexFile, ENTRY_KEY_HASH_AT, ENTRY_PHY_OFFSET_AT, ENTRY_SIZE,
    ENTRY_TIME_DIFF_AT, HEADER_SIZE, RUN_LENGTH_AT, RUN_START_AT, SLOT_SIZE,
};

/// How many entries the compactor handles between checks of its stop flag.
const STOP_CHECK_INTERVAL: u32 = 1 << 20;

/// The path `.tmp` beside `path`.
pub fn temporary_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    path.with_file_name(name)
}

/// Write the compacted form of a sealed `source` to `destination`. Returns `None` when
/// `stop` was raised first (nothing is left behind). The source must not change while
/// this runs (it is full, so the writer no longer touches it).
pub fn compact(
    source: &IndexFile,
    destination: &Path,
    stop: &AtomicBool,
) -> Result<Option<CompactedIndexFile>> {
    let geometry = source.geometry();
    let source_header = source.header();
    let entries = source.entries();
    let slot_count = geometry.slot_count as usize;

    // Pass 1: check every chain link and count each slot's entries.
    let mut counts = vec![0u32; slot_count];
    let mut newest = vec![0u32; slot_count];
    for number in 1..=entries {
        if number % STOP_CHECK_INTERVAL == 0 && stop.load(Ordering::Acquire) {
            return Ok(None);
        }
        let entry = source.entry(number);
        let slot = geometry.slot_of(entry.key_hash) as usize;
        if entry.key_hash < 0 || entry.prev != newest[slot] as i32 {
            return Err(Error::corrupt(
                source.path(),
                geometry.entry_position(number) as u64,
                format!(
                    "entry {number} (hash {}) links to {}, but its slot's previous entry is {}",
                    entry.key_hash, entry.prev, newest[slot]
                ),
            ));
        }
        newest[slot] = number;
        counts[slot] += 1;
    }
    drop(newest);

    let header = CompactedHeader {
        begin_timestamp: source_header.begin_timestamp,
        end_timestamp: source_header.end_timestamp,
        begin_phy_offset: source_header.begin_phy_offset,
        end_phy_offset: source_header.end_phy_offset,
        slot_count: geometry.slot_count,
        entry_count: entries,
        source_index_count: source_header.index_count,
        body_crc: 0,
    };
    let size = usize::try_from(header.file_size())
        .map_err(|_| Error::corrupt(destination, 0, "compacted index file too large"))?;
    let directory = destination.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(directory).at(directory)?;
    let temporary = temporary_path(destination);
    // A temporary left by a crash is rewritten from the start.
    let _ = fs::remove_file(&temporary);
    let file = MappedFile::create(&temporary, size as u64)?;
    // SAFETY: a private temporary file that nothing else maps or reads yet.
    let map = unsafe { file.bytes_mut(0, size) };
    let cleanup = |error: Error| {
        let _ = fs::remove_file(&temporary);
        error
    };

    // Slot table: runs in slot order; `cursor` becomes each run's end.
    let mut cursor = counts;
    let mut start = 0u32;
    for (slot, length) in cursor.iter_mut().enumerate() {
        let at = HEADER_SIZE + slot * SLOT_SIZE;
        let run_length = *length;
        if run_length > 0 {
            write_i32(map, at + RUN_START_AT, start as i32);
            write_i32(map, at + RUN_LENGTH_AT, run_length as i32);
        }
        start += run_length;
        *length = start;
    }

    // Pass 2: place each entry, filling runs from the back so the newest comes first.
    let entries_at = header.entries_at();
    for number in 1..=entries {
        if number % STOP_CHECK_INTERVAL == 0 && stop.load(Ordering::Acquire) {
            drop(file);
            let _ = fs::remove_file(&temporary);
            return Ok(None);
        }
        let entry = source.entry(number);
        let slot = geometry.slot_of(entry.key_hash) as usize;
        cursor[slot] -= 1;
        let at = entries_at + cursor[slot] as usize * ENTRY_SIZE;
        write_i32(map, at + ENTRY_KEY_HASH_AT, entry.key_hash);
        write_i32(
            map,
            at + ENTRY_TIME_DIFF_AT,
            if number == 1 { 0 } else { entry.time_diff },
        );
        write_i64(map, at + ENTRY_PHY_OFFSET_AT, entry.commitlog_offset);
    }
    drop(cursor);

    let header = CompactedHeader {
        body_crc: crc32fast::hash(&map[HEADER_SIZE..]),
        ..header
    };
    header.encode(&mut map[..HEADER_SIZE]);
    file.flush().map_err(cleanup)?;
    file.file().sync_all().at(&temporary).map_err(cleanup)?;
    drop(file);
    fs::rename(&temporary, destination)
        .at(destination)
        .map_err(cleanup)?;
    crate::files::atomic_file::sync_dir(directory)?;
    CompactedIndexFile::open(destination).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::layout::IndexGeometry;

    #[test]
    fn runs_hold_each_slot_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let geometry = IndexGeometry {
            slot_count: 3,
            entry_count: 7,
        };
        let source = IndexFile::create(&dir.path().join("s"), geometry, Some((50, 500))).unwrap();
        for (hash, offset) in [(3, 100), (4, 200), (6, 300), (1, 400), (9, 500), (3, 600)] {
            assert!(source.put_key(hash, offset, 10_000 + offset));
        }
        assert!(source.is_full());
        let stop = AtomicBool::new(false);
        let compacted = compact(&source, &dir.path().join("c/s"), &stop)
            .unwrap()
            .unwrap();
        compacted.verify().unwrap();
        let offsets = |hash| {
            compacted
                .run(hash)
                .unwrap()
                .map(|e| e.commitlog_offset)
                .collect::<Vec<_>>()
        };
        assert_eq!(offsets(3), vec![600, 500, 300, 100]);
        assert_eq!(offsets(1), vec![400, 200]);
        assert_eq!(offsets(2), Vec::<i64>::new());
        assert_eq!(compacted.run(3).unwrap().last().unwrap().time_diff, 0);
        assert_eq!(compacted.header().source_index_count, 7);
        assert!(!temporary_path(&dir.path().join("c/s")).exists());
    }
}
