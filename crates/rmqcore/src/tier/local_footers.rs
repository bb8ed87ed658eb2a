//! Copies of queue-grouped objects' footers on local disk, `tier/footers/<start offset>`:
//! written when the object is uploaded, read in place of a ranged GET the first time the
//! object is read, deleted when the object expires from the tier. Without them the first
//! read of every evicted segment paid one more GET for its footer, so a cold key lookup
//! took four range reads instead of three (slot table, entries, record). About 24 bytes
//! per run of one queue's records: ~11 KB for a 64 MiB segment of four queues.
//!
//! A copy is a cache of what the object holds: it goes through the same checks as a
//! fetched footer (CRC32, runs covering the segment exactly), and a copy that is missing,
//! unreadable or fails them is fetched from the bucket again and rewritten. So it is
//! written without fsync, and a failure to write one costs a GET later, not the upload.

use std::fs;
use std::path::{Path, PathBuf};

#[derive(Debug)]
pub struct LocalFooters {
    dir: PathBuf,
}

impl LocalFooters {
    pub fn new(root: &Path) -> Self {
        LocalFooters {
            dir: root.join("tier").join("footers"),
        }
    }

    fn path(&self, start_offset: u64) -> PathBuf {
        self.dir.join(format!("{start_offset:020}"))
    }

    /// The kept copy of the footer of the object starting at `start_offset`, if any.
    pub fn load(&self, start_offset: u64) -> Option<Vec<u8>> {
        fs::read(self.path(start_offset)).ok()
    }

    /// Keep `footer` (best effort, see the module's comment): written beside, then
    /// renamed, so a reader never sees half a copy.
    pub fn save(&self, start_offset: u64, footer: &[u8]) {
        let path = self.path(start_offset);
        let temporary = path.with_extension("tmp");
        let written = fs::create_dir_all(&self.dir)
            .and_then(|()| fs::write(&temporary, footer))
            .and_then(|()| fs::rename(&temporary, &path));
        if written.is_err() {
            let _ = fs::remove_file(&temporary);
        }
    }

    /// Drop the copy of an object that left the tier.
    pub fn remove(&self, start_offset: u64) {
        let _ = fs::remove_file(self.path(start_offset));
    }
}
