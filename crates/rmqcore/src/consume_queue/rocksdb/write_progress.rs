//! How far the RocksDB consume queue's writer thread (`background.rs`) has come: the
//! jobs handed to it and written, and the first failed write. Every queue shares it, so
//! that a reader waits for the offsets it was told of, and the database (`database.rs`)
//! holds it.

use std::path::Path;
use std::sync::{Condvar, Mutex};

use crate::error::{Error, Result};

#[derive(Debug, Default)]
struct Progress {
    /// Jobs handed over and jobs written (or failed), by sequence number.
    submitted: u64,
    written: u64,
    failure: Option<String>,
}

/// How far the writer thread has come; shared with every queue so its readers can wait.
#[derive(Debug, Default)]
pub(crate) struct WriteProgress {
    progress: Mutex<Progress>,
    changed: Condvar,
}

impl WriteProgress {
    /// Wait until job `seq` is written (or failed).
    pub(super) fn wait_for(&self, seq: u64) {
        let mut progress = self.progress.lock().expect("write progress lock");
        while progress.written < seq {
            progress = self.changed.wait(progress).expect("write progress lock");
        }
    }

    /// Wait until every job handed over is written; the first failure, if any.
    pub(super) fn drain(&self, database: &Path) -> Result<()> {
        let mut progress = self.progress.lock().expect("write progress lock");
        while progress.written < progress.submitted {
            progress = self.changed.wait(progress).expect("write progress lock");
        }
        Self::failed(&progress, database)
    }

    fn failed(progress: &Progress, database: &Path) -> Result<()> {
        match &progress.failure {
            None => Ok(()),
            Some(reason) => Err(Error::corrupt(
                database,
                0,
                format!(
                    "RocksDB consume queue: an earlier write failed ({reason}); the commit log \
                     holds the records, and reopening the store dispatches them again"
                ),
            )),
        }
    }

    /// The next sequence number, unless a write has failed.
    pub(super) fn next_seq(&self, database: &Path) -> Result<u64> {
        let mut progress = self.progress.lock().expect("write progress lock");
        Self::failed(&progress, database)?;
        progress.submitted += 1;
        Ok(progress.submitted)
    }

    pub(super) fn has_failed(&self) -> bool {
        self.progress
            .lock()
            .expect("write progress lock")
            .failure
            .is_some()
    }

    pub(super) fn finished(&self, seq: u64, failure: Option<String>) {
        let mut progress = self.progress.lock().expect("write progress lock");
        progress.written = progress.written.max(seq);
        if progress.failure.is_none() {
            progress.failure = failure;
        }
        drop(progress);
        self.changed.notify_all();
    }
}
