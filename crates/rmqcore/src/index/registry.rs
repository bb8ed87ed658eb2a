//! The list of index files, each in its chained and (once sealed) compacted form: what
//! the service reports about them and how retention deletes them.

use crate::error::{Error, Result};
use crate::index::compacted::CompactedIndexFile;
use crate::index::file::IndexFile;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock, RwLock};

use super::{IndexService, Shared};

/// One index file: its RocketMQ-format form and, once sealed and compacted, the
/// compacted form that queries use instead.
#[derive(Debug)]
pub struct IndexFileHandle {
    pub(super) name: String,
    pub(super) chained_path: PathBuf,
    pub(super) compacted_path: PathBuf,
    /// Unmapped once the compacted form is published (the file stays on disk).
    pub(super) chained: RwLock<Option<Arc<IndexFile>>>,
    pub(super) compacted: OnceLock<Arc<CompactedIndexFile>>,
}

/// A file as `IndexService::files` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexFileInfo {
    pub name: String,
    pub entries: u32,
    pub full: bool,
    pub compacted: bool,
    pub begin_timestamp: i64,
    pub end_timestamp: i64,
    pub begin_phy_offset: i64,
    pub end_phy_offset: i64,
}

/// A file's mapped forms at one moment: the chained one until it is compacted.
#[derive(Debug, Clone)]
pub struct IndexFileForms {
    pub name: String,
    pub chained: Option<Arc<IndexFile>>,
    pub compacted: Option<Arc<CompactedIndexFile>>,
}

pub(super) fn remove_quietly(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(Error::io(path, error)),
    }
}

impl IndexFileHandle {
    pub(super) fn chained(&self) -> Option<Arc<IndexFile>> {
        self.chained.read().expect("index file lock").clone()
    }

    /// (endPhyOffset, endTimestamp) from whichever form the file has.
    pub(super) fn header_end(&self) -> Option<(i64, i64)> {
        if let Some(compacted) = self.compacted.get() {
            let header = compacted.header();
            return Some((header.end_phy_offset, header.end_timestamp));
        }
        let header = self.chained()?.header();
        Some((header.end_phy_offset, header.end_timestamp))
    }

    pub(super) fn remove_files(&self) -> Result<()> {
        for path in [&self.chained_path, &self.compacted_path] {
            match fs::remove_file(path) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => return Err(Error::io(path, error)),
            }
        }
        Ok(())
    }
}

impl IndexService {
    /// Every index file, oldest first.
    pub fn files(&self) -> Vec<IndexFileInfo> {
        self.shared
            .files()
            .iter()
            .map(|handle| {
                if let Some(compacted) = handle.compacted.get() {
                    let header = compacted.header();
                    IndexFileInfo {
                        name: handle.name.clone(),
                        entries: header.entry_count,
                        full: true,
                        compacted: true,
                        begin_timestamp: header.begin_timestamp,
                        end_timestamp: header.end_timestamp,
                        begin_phy_offset: header.begin_phy_offset,
                        end_phy_offset: header.end_phy_offset,
                    }
                } else {
                    let file = handle.chained().expect("an uncompacted file is mapped");
                    let header = file.header();
                    IndexFileInfo {
                        name: handle.name.clone(),
                        entries: file.entries(),
                        full: file.is_full(),
                        compacted: false,
                        begin_timestamp: header.begin_timestamp,
                        end_timestamp: header.end_timestamp,
                        begin_phy_offset: header.begin_phy_offset,
                        end_phy_offset: header.end_phy_offset,
                    }
                }
            })
            .collect()
    }

    /// Retention: delete index files whose entries all point below the commit log's new
    /// minimum (RocketMQ's `deleteExpiredFile`); the newest file is always kept. Queries
    /// holding a file keep its mapping until they finish. Returns how many were deleted.
    pub fn delete_files_below(&self, commitlog_min: i64) -> Result<u64> {
        let infos = self.files();
        let mut doomed = Vec::new();
        for info in infos.iter().take(infos.len().saturating_sub(1)) {
            if info.end_phy_offset >= commitlog_min {
                break;
            }
            doomed.push(info.name.clone());
        }
        if doomed.is_empty() {
            return Ok(0);
        }
        let removed: Vec<Arc<IndexFileHandle>> = {
            let mut files = self.shared.files.write().expect("index file list lock");
            let (gone, kept): (Vec<_>, Vec<_>) = files
                .drain(..)
                .partition(|handle| doomed.contains(&handle.name));
            *files = kept;
            gone
        };
        for handle in &removed {
            handle.remove_files()?;
        }
        Ok(removed.len() as u64)
    }

    /// Each file's name and the forms it has now (for `verify.rs`).
    pub fn file_forms(&self) -> Vec<IndexFileForms> {
        self.shared
            .files()
            .iter()
            .map(|handle| IndexFileForms {
                name: handle.name.clone(),
                chained: handle.chained(),
                compacted: handle.compacted.get().cloned(),
            })
            .collect()
    }

    /// The compacted form of a file, if it has one (tests and `verify`).
    pub fn compacted_file(&self, name: &str) -> Option<Arc<CompactedIndexFile>> {
        self.shared
            .files()
            .iter()
            .find(|handle| handle.name == name)
            .and_then(|handle| handle.compacted.get().cloned())
    }

    /// For the checkpoint: the end time of the newest full, flushed file (RocketMQ's
    /// `indexMsgTimestamp`).
    pub fn sealed_end_timestamp(&self) -> i64 {
        self.shared.sealed_end_timestamp.load(Ordering::Acquire)
    }
}

impl Shared {
    pub(super) fn files(&self) -> Vec<Arc<IndexFileHandle>> {
        self.files.read().expect("index file list lock").clone()
    }
}
