//! The background compactor: sealed files are rewritten in the compacted form
//! (`compacted.rs`) one at a time, and queries switch to it once it is published.

use crate::error::{Error, IoContext, Result};
use crate::index::compacted::CompactedIndexFile;
use crate::index::compaction::compact;
use std::collections::VecDeque;
use std::fs;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};
use std::time::{Duration, Instant};

use super::{remove_quietly, IndexFileHandle, IndexService, Shared};

#[derive(Default)]
pub(super) struct CompactorState {
    pub(super) pending: VecDeque<Arc<IndexFileHandle>>,
    pub(super) busy: bool,
    pub(super) paused: bool,
    pub(super) stopping: bool,
    pub(super) last_error: Option<String>,
}

/// Attach each complete compacted file to its source; delete leftovers of interrupted
/// compactions and compacted files that no longer match their source.
pub(super) fn load_compacted(
    dir: &Path,
    files: &[Arc<IndexFileHandle>],
    writable: bool,
) -> Result<()> {
    if !dir.is_dir() {
        return Ok(());
    }
    for entry in fs::read_dir(dir).at(dir)? {
        let entry = entry.at(dir)?;
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let source = files.iter().find(|handle| handle.name == name);
        let usable = match source {
            Some(handle) => {
                let chained = handle.chained().expect("loaded files are mapped");
                CompactedIndexFile::open(&path).ok().filter(|compacted| {
                    let header = compacted.header();
                    header.source_index_count == chained.header().index_count
                        && header.slot_count == chained.geometry().slot_count
                        && chained.is_full()
                })
            }
            None => None,
        };
        match (usable, source) {
            (Some(compacted), Some(handle)) => {
                let _ = handle.compacted.set(Arc::new(compacted));
            }
            _ if writable => remove_quietly(&path)?,
            _ => {}
        }
    }
    Ok(())
}

impl IndexService {
    /// Hold back (or resume) compaction; sealed files wait, queries use their chains.
    pub fn set_compaction_paused(&self, paused: bool) {
        self.shared.compactor().paused = paused;
        self.shared.compactor_changed.notify_all();
    }

    /// Wait until no file waits for compaction; false on timeout (or while paused with
    /// work pending).
    pub fn wait_for_compaction(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut state = self.shared.compactor();
        while state.busy || !state.pending.is_empty() {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            state = self
                .shared
                .compactor_changed
                .wait_timeout(state, deadline - now)
                .expect("compactor lock")
                .0;
        }
        true
    }

    /// The last compaction failure, if any (the file stays chained and usable).
    pub fn last_compaction_error(&self) -> Option<String> {
        self.shared.compactor().last_error.clone()
    }

    pub(super) fn enqueue_compaction(&self, handle: Arc<IndexFileHandle>) -> Result<()> {
        if !self.shared.writable || self.shared.stop.load(Ordering::Acquire) {
            return Ok(());
        }
        self.shared.compactor().pending.push_back(handle);
        self.shared.compactor_changed.notify_all();
        let mut thread = self.compactor_thread.lock().expect("compactor thread lock");
        if thread.is_none() {
            let shared = Arc::clone(&self.shared);
            let spawned = std::thread::Builder::new()
                .name("rmq-index-compact".into())
                .spawn(move || shared.compaction_loop())
                .map_err(|error| Error::io(&self.shared.compacted_dir, error))?;
            *thread = Some(spawned);
        }
        Ok(())
    }
}

impl Shared {
    pub(super) fn compactor(&self) -> MutexGuard<'_, CompactorState> {
        self.compactor.lock().expect("compactor lock")
    }

    pub(super) fn compaction_loop(&self) {
        loop {
            let handle = {
                let mut state = self.compactor();
                loop {
                    if state.stopping {
                        return;
                    }
                    if !state.paused {
                        if let Some(handle) = state.pending.pop_front() {
                            state.busy = true;
                            break handle;
                        }
                    }
                    state = self.compactor_changed.wait(state).expect("compactor lock");
                }
            };
            let result = self.compact_one(&handle);
            let mut state = self.compactor();
            state.busy = false;
            if let Err(error) = result {
                state.last_error = Some(error.to_string());
            }
            drop(state);
            self.compactor_changed.notify_all();
        }
    }

    pub(super) fn compact_one(&self, handle: &IndexFileHandle) -> Result<()> {
        if handle.compacted.get().is_some() {
            return Ok(());
        }
        let Some(file) = handle.chained() else {
            return Ok(());
        };
        // The sealed file reaches the disk first (RocketMQ flushes it at the roll too).
        self.flush_file(&file)?;
        let Some(compacted) = compact(&file, &handle.compacted_path, &self.stop)? else {
            return Ok(());
        };
        let still_listed = self
            .files()
            .iter()
            .any(|listed| std::ptr::eq(listed.as_ref(), handle));
        if !still_listed {
            return remove_quietly(&handle.compacted_path);
        }
        let _ = handle.compacted.set(Arc::new(compacted));
        *handle.chained.write().expect("index file lock") = None;
        Ok(())
    }
}
