//! Writing: keys of dispatched records go into the newest file, which rolls to a new
//! one when full; a batch holds the writer lock once for all its records.

use crate::error::{Error, IoContext, Result};
use crate::index::file::{AppendState, IndexFile};
use crate::index::layout::{index_key_hash_after, topic_prefix_hash};
use crate::record::RecordView;
use std::fs;
use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard, OnceLock, RwLock};

use super::{next_file_name, visit_index_keys, IndexFileHandle, IndexService, Shared};

pub(super) struct WriterState {
    /// Records below this commit-log offset are indexed (the replay dedup).
    pub(super) next_offset: i64,
    pub(super) last_name: Option<String>,
    /// The file being written, so that a put does not look it up in the file list.
    pub(super) active: Option<ActiveFile>,
    /// The last topic indexed and its `topic_prefix_hash`. Kept here rather than per
    /// batch so that single puts to one topic (each its own batch) hash it once: per
    /// batch it cost about 300 instructions a 100 B put (callgrind).
    pub(super) topic_hash: Option<(Vec<u8>, i32)>,
}

/// The file keys go to, with its header as the writer keeps it: stored to the file when
/// the batch ends (`IndexBatch`'s drop) or the file fills, not once per key.
pub(super) struct ActiveFile {
    handle: Arc<IndexFileHandle>,
    file: Arc<IndexFile>,
    state: AppendState,
}

impl WriterState {
    /// Store the active file's header if keys were added since it was last stored.
    fn store_header(&mut self) {
        if let Some(active) = &mut self.active {
            active.file.store_header(&mut active.state);
        }
    }
}

/// Records being indexed under one hold of the writer lock (`IndexService::batch`).
pub struct IndexBatch<'s> {
    pub(super) service: &'s IndexService,
    /// None for a read-only index, which indexes nothing.
    pub(super) writer: Option<MutexGuard<'s, WriterState>>,
}

impl IndexService {
    pub(super) fn writer(&self) -> MutexGuard<'_, WriterState> {
        self.writer.lock().expect("index writer lock")
    }

    /// Index one record (dispatch): skipped when it lies below the point the index is
    /// complete up to (replay after a restart).
    pub fn dispatch(&self, view: &RecordView<'_>) -> Result<()> {
        self.batch().dispatch(view)
    }

    /// Index several records in order under one lock (the append path's batch).
    pub fn batch(&self) -> IndexBatch<'_> {
        IndexBatch {
            service: self,
            writer: self.shared.writable.then(|| self.writer()),
        }
    }

    // Once per key of every stored message: inlined into the dispatch loop, its rare
    // steps (opening a file, sealing a full one) kept out of line.
    #[inline(always)]
    pub(super) fn put_key(
        &self,
        writer: &mut WriterState,
        key_hash: i32,
        offset: i64,
        store_timestamp: i64,
    ) -> Result<()> {
        if writer.active.is_none() {
            writer.active = Some(self.open_active(writer)?);
        }
        let Some(ActiveFile { file, state, .. }) = writer.active.as_mut() else {
            unreachable!("opened above");
        };
        file.reserve_next_entry(state)?;
        if !file.append_key(state, key_hash, offset, store_timestamp) {
            return Err(refused_key(file));
        }
        // Sealed the moment it fills: it is compacted now, while the next key goes to a
        // new file (created when that key comes, as RocketMQ does).
        if state.is_full(file) {
            self.seal_active(writer)?;
        }
        Ok(())
    }

    #[cold]
    fn seal_active(&self, writer: &mut WriterState) -> Result<()> {
        if let Some(mut full) = writer.active.take() {
            full.file.store_header(&mut full.state);
            self.enqueue_compaction(full.handle)?;
        }
        Ok(())
    }

    /// The file the next key goes to: the last one if it has room, else a new one.
    #[cold]
    fn open_active(&self, writer: &mut WriterState) -> Result<ActiveFile> {
        let last = self.shared.files().last().and_then(|handle| {
            let file = handle.chained()?;
            Some((Arc::clone(handle), file))
        });
        let (handle, file) = match last.filter(|(_, file)| !file.is_full()) {
            Some(last) => last,
            None => self.roll(writer)?,
        };
        let state = file.open_append();
        Ok(ActiveFile {
            handle,
            file,
            state,
        })
    }

    /// Start a new file after the full (or missing) last one.
    pub(super) fn roll(
        &self,
        writer: &mut WriterState,
    ) -> Result<(Arc<IndexFileHandle>, Arc<IndexFile>)> {
        let previous_end = self
            .shared
            .files()
            .last()
            .and_then(|handle| handle.header_end());
        let name = next_file_name(writer.last_name.as_deref())?;
        fs::create_dir_all(&self.shared.dir).at(&self.shared.dir)?;
        let path = self.shared.dir.join(&name);
        let file = Arc::new(IndexFile::create(
            &path,
            self.shared.geometry,
            previous_end,
        )?);
        let handle = Arc::new(IndexFileHandle {
            compacted_path: self.shared.compacted_dir.join(&name),
            name: name.clone(),
            chained_path: path,
            chained: RwLock::new(Some(Arc::clone(&file))),
            compacted: OnceLock::new(),
        });
        self.shared
            .files
            .write()
            .expect("index file list lock")
            .push(Arc::clone(&handle));
        writer.last_name = Some(name);
        Ok((handle, file))
    }

    /// Flush every file written since its last flush (a sealed file's first flush makes
    /// its end time the checkpoint's `indexMsgTimestamp`).
    pub fn flush(&self) -> Result<()> {
        for handle in self.shared.files() {
            if let Some(file) = handle.chained() {
                self.shared.flush_file(&file)?;
            }
        }
        Ok(())
    }
}

#[cold]
fn refused_key(file: &IndexFile) -> Error {
    Error::corrupt(
        file.path(),
        0,
        "an index file that is not full refused a key",
    )
}

impl Shared {
    pub(super) fn flush_file(&self, file: &IndexFile) -> Result<()> {
        let full = file.is_full();
        file.flush()?;
        if full {
            self.sealed_end_timestamp
                .fetch_max(file.header().end_timestamp, Ordering::AcqRel);
        }
        Ok(())
    }
}

impl WriterState {
    /// `topic`'s `topic_prefix_hash`, computed only when it is not the last topic's.
    #[inline(always)]
    fn topic_prefix_hash(&mut self, topic: &[u8]) -> i32 {
        match &mut self.topic_hash {
            Some((known, hash)) if known.as_slice() == topic => *hash,
            cached => {
                let hash = topic_prefix_hash(&String::from_utf8_lossy(topic));
                *cached = Some((topic.to_vec(), hash));
                hash
            }
        }
    }
}

impl Drop for IndexBatch<'_> {
    /// The batch's keys are all written: their header is stored before the writer lock
    /// is released, so the store publishes no record whose keys the header does not
    /// count.
    fn drop(&mut self) {
        if let Some(writer) = self.writer.as_deref_mut() {
            writer.store_header();
        }
    }
}

impl IndexBatch<'_> {
    pub fn dispatch(&mut self, view: &RecordView<'_>) -> Result<()> {
        self.dispatch_keys(
            view.topic,
            view.physical_offset,
            view.total_size,
            view.store_timestamp,
            |visit| visit_index_keys(view, visit),
        )
    }

    /// Index the keys `keys` visits for the record at `physical_offset` of `topic`, in
    /// the order visited (format §3.4's: `UNIQ_KEY`, then the `KEYS` tokens). `keys` is
    /// called only when the record lies at or past the point the index is complete up to.
    pub fn dispatch_keys(
        &mut self,
        topic: &[u8],
        physical_offset: i64,
        total_size: usize,
        store_timestamp: i64,
        keys: impl FnOnce(&mut dyn FnMut(&str) -> Result<()>) -> Result<()>,
    ) -> Result<()> {
        let Some(writer) = self.writer.as_deref_mut() else {
            return Ok(());
        };
        if physical_offset < writer.next_offset {
            return Ok(());
        }
        let prefix_hash = writer.topic_prefix_hash(topic);
        let service = self.service;
        keys(&mut |key| {
            service.put_key(
                writer,
                index_key_hash_after(prefix_hash, key),
                physical_offset,
                store_timestamp,
            )
        })?;
        writer.next_offset = physical_offset + total_size as i64;
        Ok(())
    }
}
