//! Recovery: cut the index back to the valid log, repairing torn files, and say from
//! where records must be indexed again.

use crate::error::Result;
use std::sync::{Arc, OnceLock, RwLock};

use super::{remove_quietly, IndexFileHandle, IndexService};

/// What recovery did to the index.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IndexRecovery {
    pub files_repaired: u32,
    pub files_removed: u32,
    pub entries_removed: u64,
    /// The index holds every record below this offset; records from here on must be
    /// dispatched to it again.
    pub complete_below: i64,
}

impl IndexService {
    /// Make the index hold exactly the records below `cut` (and none at or past it),
    /// then start compacting the sealed files. Called once by recovery, with `cut` =
    /// where its re-dispatch starts after an unclean shutdown, or the valid end of the
    /// log after a clean one. Returns the offset from which records must be dispatched
    /// again; `record_at` gives the store time and size of a valid record.
    ///
    /// A file is trusted as it is when its header says it ends below `cut` and either
    /// the shutdown was clean or the file is full (a full file was flushed before any
    /// checkpoint that covers it). The first file that is not is repaired
    /// (`IndexFile::repair`) and every later file is deleted. This replaces RocketMQ's
    /// rule (delete every file newer than the checkpoint's `indexMsgTimestamp`), which
    /// loses the entries of the deleted files that lie below the re-dispatch start.
    pub fn recover(
        &self,
        cut: i64,
        clean_shutdown: bool,
        record_at: impl Fn(i64) -> Option<(i64, i64)>,
    ) -> Result<IndexRecovery> {
        let mut outcome = IndexRecovery {
            complete_below: cut,
            ..IndexRecovery::default()
        };
        {
            let mut files = self.shared.files.write().expect("index file list lock");
            let damaged = files.iter().position(|handle| match handle.chained() {
                Some(file) => {
                    let header = file.header();
                    !(header.end_phy_offset < cut && (clean_shutdown || file.is_full()))
                }
                None => false,
            });
            if let Some(first) = damaged {
                let file = files[first].chained().expect("loaded files are mapped");
                let repaired =
                    file.repair(cut, |offset| record_at(offset).map(|(time, _)| time))?;
                outcome.files_repaired = 1;
                outcome.entries_removed += u64::from(repaired.removed);
                if let Some(from) = repaired.reindex_from {
                    outcome.complete_below = if record_at(from).is_some() {
                        from.min(cut)
                    } else {
                        cut
                    };
                }
                let keep = if repaired.kept > 0 { first + 1 } else { first };
                if repaired.removed > 0 {
                    remove_quietly(&files[first].compacted_path)?;
                }
                for handle in files.drain(keep..) {
                    if let Some(file) = handle.chained() {
                        outcome.entries_removed += u64::from(file.entries());
                    }
                    handle.remove_files()?;
                    outcome.files_removed += 1;
                }
                if keep > first {
                    // Its compacted form (if any) describes the file before the cut.
                    let handle = &files[first];
                    if handle.compacted.get().is_some() && repaired.removed > 0 {
                        let replacement = Arc::new(IndexFileHandle {
                            name: handle.name.clone(),
                            chained_path: handle.chained_path.clone(),
                            compacted_path: handle.compacted_path.clone(),
                            chained: RwLock::new(Some(file)),
                            compacted: OnceLock::new(),
                        });
                        files[first] = replacement;
                    }
                }
            }
            for handle in files.iter() {
                if handle.compacted.get().is_some() {
                    *handle.chained.write().expect("index file lock") = None;
                }
            }
        }
        let mut writer = self.writer();
        writer.next_offset = outcome.complete_below;
        writer.active = None;
        drop(writer);
        if self.shared.writable {
            let sealed: Vec<_> = self
                .shared
                .files()
                .into_iter()
                .filter(|handle| {
                    handle.compacted.get().is_none()
                        && handle.chained().is_some_and(|file| file.is_full())
                })
                .collect();
            for handle in sealed {
                self.enqueue_compaction(handle)?;
            }
        }
        Ok(outcome)
    }
}
