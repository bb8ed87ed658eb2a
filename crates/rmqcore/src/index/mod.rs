//! The message-key index of a store: the index files under `index/` (format §3), fed by
//! dispatch from the commit log, rolled when full, compacted in the background once
//! sealed (`compacted.rs`), repaired by recovery, and searched newest first.
//!
//! What is indexed (format §3.4): for every record that is not a transaction ROLLBACK,
//! the key `topic#UNIQ_KEY` if the record has one, then `topic#token` for each non-empty
//! token of `KEYS` split on single spaces, in that order. Records are indexed once, in
//! log order; a replayed record below the point the index is complete up to is skipped.
//!
//! Files are named by their creation time as `yyyyMMddHHmmssSSS` in local time; a name
//! is always later than the previous file's, even if two files are created in the same
//! millisecond or the clock steps back, so name order is log order.
//!
//! Thread safety: `IndexService` is `Send + Sync`. `dispatch` serialises writers on an
//! internal lock (the store already calls it under its write lock); queries take no lock
//! beyond cloning the file list and run concurrently with writing and compaction.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, RwLock};
use std::thread::JoinHandle;

use crate::error::{Error, IoContext, Result};
use crate::index::file::IndexFile;
use crate::index::layout::IndexGeometry;

pub mod compacted;
pub mod compaction;
mod compactor;
pub mod file;
mod keys;
pub mod layout;
mod naming;
mod query;
mod recovery;
mod registry;
pub mod remote;
pub mod verify;
mod writer;

pub use keys::{index_keys, record_matches_key};
pub use naming::{file_name_for, millis_of_file_name};
pub use recovery::IndexRecovery;
pub use registry::{IndexFileForms, IndexFileHandle, IndexFileInfo};
pub use writer::IndexBatch;

use compactor::{load_compacted, CompactorState};
use keys::visit_index_keys;
use naming::next_file_name;
use registry::remove_quietly;
use writer::WriterState;

pub const INDEX_DIR: &str = "index";
pub const COMPACTED_INDEX_DIR: &str = "index_compacted";

struct Shared {
    dir: PathBuf,
    compacted_dir: PathBuf,
    geometry: IndexGeometry,
    writable: bool,
    files: RwLock<Vec<Arc<IndexFileHandle>>>,
    /// End time of the newest full file known to be flushed (checkpoint field).
    sealed_end_timestamp: AtomicI64,
    compactor: Mutex<CompactorState>,
    compactor_changed: Condvar,
    stop: AtomicBool,
}

pub struct IndexService {
    shared: Arc<Shared>,
    /// Files only the store's tier holds (`remote.rs`).
    remote: OnceLock<Arc<dyn remote::RemoteIndex>>,
    writer: Mutex<WriterState>,
    compactor_thread: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for IndexService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexService")
            .field("dir", &self.shared.dir)
            .finish()
    }
}

impl IndexService {
    /// Open the index files of the store at `root`. Nothing is repaired here and no
    /// thread is started: recovery calls `recover` once it knows the valid log.
    pub fn load(root: &Path, geometry: IndexGeometry, writable: bool) -> Result<Self> {
        let dir = root.join(INDEX_DIR);
        let compacted_dir = root.join(COMPACTED_INDEX_DIR);
        let mut found: Vec<(String, PathBuf, u64)> = Vec::new();
        if dir.is_dir() {
            for entry in fs::read_dir(&dir).at(&dir)? {
                let entry = entry.at(&dir)?;
                let path = entry.path();
                let metadata = entry.metadata().at(&path)?;
                let name = entry.file_name().to_string_lossy().into_owned();
                // RocketMQ skips names that do not parse as a number.
                if metadata.is_dir()
                    || name.is_empty()
                    || name.len() > 18
                    || !name.bytes().all(|b| b.is_ascii_digit())
                {
                    continue;
                }
                found.push((name, path, metadata.len()));
            }
        }
        found.sort();
        let mut files = Vec::with_capacity(found.len());
        for (name, path, length) in found {
            if length == 0 && writable {
                // Created but never sized: an interrupted roll.
                fs::remove_file(&path).at(&path)?;
                continue;
            }
            let file_geometry = IndexGeometry::for_file_size(length, geometry).ok_or_else(|| {
                Error::corrupt(&path, 0, format!("index file is {length} bytes, which fits neither {} slots and {} entries nor 4 entries per slot", geometry.slot_count, geometry.entry_count))
            })?;
            let chained = Arc::new(IndexFile::open(&path, file_geometry, writable)?);
            files.push(Arc::new(IndexFileHandle {
                compacted_path: compacted_dir.join(&name),
                name,
                chained_path: path,
                chained: RwLock::new(Some(chained)),
                compacted: OnceLock::new(),
            }));
        }
        load_compacted(&compacted_dir, &files, writable)?;
        let last_name = files.last().map(|handle| handle.name.clone());
        let shared = Arc::new(Shared {
            dir,
            compacted_dir,
            geometry,
            writable,
            files: RwLock::new(files),
            sealed_end_timestamp: AtomicI64::new(0),
            compactor: Mutex::new(CompactorState::default()),
            compactor_changed: Condvar::new(),
            stop: AtomicBool::new(false),
        });
        for handle in shared.files() {
            if let Some(chained) = handle.chained().filter(|file| file.is_full()) {
                shared
                    .sealed_end_timestamp
                    .fetch_max(chained.header().end_timestamp, Ordering::AcqRel);
            }
        }
        Ok(IndexService {
            shared,
            remote: OnceLock::new(),
            writer: Mutex::new(WriterState {
                next_offset: 0,
                last_name,
                active: None,
                topic_hash: None,
            }),
            compactor_thread: Mutex::new(None),
        })
    }

    pub fn geometry(&self) -> IndexGeometry {
        self.shared.geometry
    }

    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// Stop the compactor (an unfinished compaction is abandoned; it runs again at the
    /// next open). Idempotent; the index stays usable for queries and flushes.
    pub fn shutdown(&self) {
        self.shared.stop.store(true, Ordering::Release);
        self.shared.compactor().stopping = true;
        self.shared.compactor_changed.notify_all();
        if let Some(thread) = self
            .compactor_thread
            .lock()
            .expect("compactor thread lock")
            .take()
        {
            let _ = thread.join();
        }
    }
}

impl Drop for IndexService {
    fn drop(&mut self) {
        self.shutdown();
    }
}
