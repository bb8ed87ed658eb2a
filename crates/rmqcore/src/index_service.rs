//! The message-key index of a store: the index files under `index/` (format §3), fed by
//! dispatch from the commit log, rolled when full, compacted in the background once
//! sealed (`index_compaction.rs`), repaired by recovery, and searched newest first.
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

use std::collections::VecDeque;
use std::fs;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::clock::now_millis;
use crate::error::{Error, IoContext, Result};
use crate::index_compaction::{compact, CompactedIndexFile};
use crate::index_file::{index_key_hash, IndexFile, IndexGeometry};
use crate::properties::KEY_SEPARATOR;
use crate::record::{sys_flag, RecordView};

pub const INDEX_DIR: &str = "index";
pub const COMPACTED_INDEX_DIR: &str = "index_compacted";
/// `yyyyMMddHHmmssSSS`.
const NAME_DIGITS: usize = 17;

/// Visit the keys a record is indexed under, in RocketMQ's order: `UNIQ_KEY`, then each
/// non-empty `KEYS` token. None for ROLLBACK records, which are never indexed.
fn visit_index_keys(
    view: &RecordView<'_>,
    mut visit: impl FnMut(&str) -> Result<()>,
) -> Result<()> {
    if view.transaction_type() == sys_flag::TRANSACTION_ROLLBACK {
        return Ok(());
    }
    let properties = view.dispatch_properties();
    if let Some(uniq) = properties.uniq_key.filter(|uniq| !uniq.is_empty()) {
        visit(&String::from_utf8_lossy(uniq))?;
    }
    if let Some(raw) = properties.keys {
        for key in String::from_utf8_lossy(raw).split(KEY_SEPARATOR) {
            if !key.is_empty() {
                visit(key)?;
            }
        }
    }
    Ok(())
}

/// The keys a record is indexed under (see `visit_index_keys`).
pub fn index_keys(view: &RecordView<'_>) -> Vec<String> {
    let mut keys = Vec::new();
    visit_index_keys(view, |key| {
        keys.push(key.to_owned());
        Ok(())
    })
    .expect("collecting keys cannot fail");
    keys
}

/// Whether a query for `topic`/`key` should return this record: the exact test that
/// filters out hash collisions and other topics' keys.
pub fn record_matches_key(view: &RecordView<'_>, topic: &str, key: &str) -> bool {
    view.topic == topic.as_bytes() && index_keys(view).iter().any(|indexed| indexed == key)
}

/// `millis` as a file name in local time, or `None` if the C library cannot convert it.
pub fn file_name_for(millis: i64) -> Option<String> {
    let seconds = libc::time_t::try_from(millis.div_euclid(1000)).ok()?;
    // SAFETY: `tm` is plain data; localtime_r only writes into it.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are valid for the call.
    if unsafe { libc::localtime_r(&seconds, &mut tm) }.is_null() {
        return None;
    }
    Some(format!(
        "{:04}{:02}{:02}{:02}{:02}{:02}{:03}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        millis.rem_euclid(1000)
    ))
}

/// The time a file name stands for (local time), if it is one.
pub fn millis_of_file_name(name: &str) -> Option<i64> {
    if name.len() != NAME_DIGITS || !name.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let field = |range: std::ops::Range<usize>| name[range].parse::<i32>().ok();
    // SAFETY: plain data.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    tm.tm_year = field(0..4)? - 1900;
    tm.tm_mon = field(4..6)? - 1;
    tm.tm_mday = field(6..8)?;
    tm.tm_hour = field(8..10)?;
    tm.tm_min = field(10..12)?;
    tm.tm_sec = field(12..14)?;
    tm.tm_isdst = -1;
    // SAFETY: valid pointer to an initialised struct.
    let seconds = unsafe { libc::mktime(&mut tm) };
    let millis = field(14..17)?;
    (seconds != -1).then(|| seconds * 1000 + i64::from(millis))
}

/// One index file: its RocketMQ-format form and, once sealed and compacted, the
/// compacted form that queries use instead.
#[derive(Debug)]
pub struct IndexFileHandle {
    name: String,
    chained_path: PathBuf,
    compacted_path: PathBuf,
    /// Unmapped once the compacted form is published (the file stays on disk).
    chained: RwLock<Option<Arc<IndexFile>>>,
    compacted: OnceLock<Arc<CompactedIndexFile>>,
}

impl IndexFileHandle {
    fn chained(&self) -> Option<Arc<IndexFile>> {
        self.chained.read().expect("index file lock").clone()
    }

    /// (endPhyOffset, endTimestamp) from whichever form the file has.
    fn header_end(&self) -> Option<(i64, i64)> {
        if let Some(compacted) = self.compacted.get() {
            let header = compacted.header();
            return Some((header.end_phy_offset, header.end_timestamp));
        }
        let header = self.chained()?.header();
        Some((header.end_phy_offset, header.end_timestamp))
    }

    fn remove_files(&self) -> Result<()> {
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

struct WriterState {
    /// Records below this commit-log offset are indexed (the replay dedup).
    next_offset: i64,
    last_name: Option<String>,
    /// The file being written, so that a put does not look it up in the file list.
    active: Option<(Arc<IndexFileHandle>, Arc<IndexFile>)>,
}

#[derive(Default)]
struct CompactorState {
    pending: VecDeque<Arc<IndexFileHandle>>,
    busy: bool,
    paused: bool,
    stopping: bool,
    last_error: Option<String>,
}

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
            writer: Mutex::new(WriterState {
                next_offset: 0,
                last_name,
                active: None,
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

    fn writer(&self) -> MutexGuard<'_, WriterState> {
        self.writer.lock().expect("index writer lock")
    }

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

    fn put_key(
        &self,
        writer: &mut WriterState,
        key_hash: i32,
        offset: i64,
        store_timestamp: i64,
    ) -> Result<()> {
        let active = writer.active.take().or_else(|| {
            let handle = self.shared.files().last().cloned()?;
            let file = handle.chained()?;
            Some((handle, file))
        });
        let (handle, file) = match active.filter(|(_, file)| !file.is_full()) {
            Some(active) => active,
            None => self.roll(writer)?,
        };
        file.reserve_next_entry()?;
        if !file.put_key(key_hash, offset, store_timestamp) {
            return Err(Error::corrupt(
                file.path(),
                0,
                "an index file that is not full refused a key",
            ));
        }
        // Sealed the moment it fills: it is compacted now, while the next key goes to a
        // new file (created when that key comes, as RocketMQ does).
        if file.is_full() {
            self.enqueue_compaction(handle)?;
        } else {
            writer.active = Some((handle, file));
        }
        Ok(())
    }

    /// Start a new file after the full (or missing) last one.
    fn roll(&self, writer: &mut WriterState) -> Result<(Arc<IndexFileHandle>, Arc<IndexFile>)> {
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

    /// For the checkpoint: the end time of the newest full, flushed file (RocketMQ's
    /// `indexMsgTimestamp`).
    pub fn sealed_end_timestamp(&self) -> i64 {
        self.shared.sealed_end_timestamp.load(Ordering::Acquire)
    }

    /// Candidate commit-log offsets for `topic#key` with store times in `[begin, end]`,
    /// newest first, file by file, until `visit` breaks. Candidates are prefiltered by
    /// hash and by the entry's time (second resolution, so conservative); the caller
    /// checks the record itself. Within a file the walk stops at the first entry older
    /// than `begin`, which assumes store times do not go backwards (RocketMQ's rule).
    pub fn visit_candidates(
        &self,
        topic: &str,
        key: &str,
        begin: i64,
        end: i64,
        mut visit: impl FnMut(i64) -> Result<ControlFlow<()>>,
    ) -> Result<()> {
        let key_hash = index_key_hash(topic, key);
        for handle in self.shared.files().iter().rev() {
            let flow = if let Some(compacted) = handle.compacted.get() {
                visit_compacted(compacted, key_hash, begin, end, &mut visit)?
            } else if let Some(file) = handle.chained() {
                visit_chained(&file, key_hash, begin, end, &mut visit)?
            } else {
                ControlFlow::Continue(())
            };
            if flow.is_break() {
                break;
            }
        }
        Ok(())
    }

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

    /// Each file's name and the forms it has now (for `index_verify`).
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

    fn enqueue_compaction(&self, handle: Arc<IndexFileHandle>) -> Result<()> {
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

impl Shared {
    fn files(&self) -> Vec<Arc<IndexFileHandle>> {
        self.files.read().expect("index file list lock").clone()
    }

    fn compactor(&self) -> MutexGuard<'_, CompactorState> {
        self.compactor.lock().expect("compactor lock")
    }

    fn flush_file(&self, file: &IndexFile) -> Result<()> {
        let full = file.is_full();
        file.flush()?;
        if full {
            self.sealed_end_timestamp
                .fetch_max(file.header().end_timestamp, Ordering::AcqRel);
        }
        Ok(())
    }

    fn compaction_loop(&self) {
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

    fn compact_one(&self, handle: &IndexFileHandle) -> Result<()> {
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

fn remove_quietly(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(Error::io(path, error)),
    }
}

/// Attach each complete compacted file to its source; delete leftovers of interrupted
/// compactions and compacted files that no longer match their source.
fn load_compacted(dir: &Path, files: &[Arc<IndexFileHandle>], writable: bool) -> Result<()> {
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

/// A name later than `last` (if any) for a file created now.
fn next_file_name(last: Option<&str>) -> Result<String> {
    let clock_error = || {
        Error::io(
            INDEX_DIR,
            std::io::Error::other("cannot convert the time to a local index file name"),
        )
    };
    let mut millis = now_millis();
    if let Some(last_millis) = last.and_then(millis_of_file_name) {
        millis = millis.max(last_millis + 1);
    }
    // Around a daylight-saving change local names can repeat: step until later.
    for _ in 0..10_000_000 {
        let name = file_name_for(millis).ok_or_else(clock_error)?;
        match last {
            Some(last) if name.as_str() <= last => millis += 1,
            _ => return Ok(name),
        }
        millis += 1;
    }
    Err(clock_error())
}

/// The earliest store time an entry can stand for, given its file's begin time.
fn entry_time(begin_timestamp: i64, time_diff: i32) -> i64 {
    begin_timestamp.saturating_add(i64::from(time_diff) * 1000)
}

fn overlaps(file_begin: i64, file_end: i64, begin: i64, end: i64) -> bool {
    file_begin <= end && file_end >= begin
}

fn visit_chained(
    file: &IndexFile,
    key_hash: i32,
    begin: i64,
    end: i64,
    visit: &mut impl FnMut(i64) -> Result<ControlFlow<()>>,
) -> Result<ControlFlow<()>> {
    let header = file.header();
    if header.index_count <= 1
        || !overlaps(header.begin_timestamp, header.end_timestamp, begin, end)
    {
        return Ok(ControlFlow::Continue(()));
    }
    let mut outcome = Ok(ControlFlow::Continue(()));
    file.walk_chain(key_hash, |number, entry| {
        // Entry 1's difference is measured from the previous file's end (format §3.4).
        let earliest = if number == 1 {
            header.begin_timestamp
        } else {
            entry_time(header.begin_timestamp, entry.time_diff)
        };
        if earliest.saturating_add(999) < begin {
            return ControlFlow::Break(());
        }
        if entry.key_hash != key_hash || earliest > end {
            return ControlFlow::Continue(());
        }
        match visit(entry.commitlog_offset) {
            Ok(ControlFlow::Continue(())) => ControlFlow::Continue(()),
            other => {
                outcome = other;
                ControlFlow::Break(())
            }
        }
    });
    outcome
}

fn visit_compacted(
    file: &CompactedIndexFile,
    key_hash: i32,
    begin: i64,
    end: i64,
    visit: &mut impl FnMut(i64) -> Result<ControlFlow<()>>,
) -> Result<ControlFlow<()>> {
    let header = file.header();
    if header.entry_count == 0
        || !overlaps(header.begin_timestamp, header.end_timestamp, begin, end)
    {
        return Ok(ControlFlow::Continue(()));
    }
    for entry in file.run(key_hash)? {
        let earliest = entry_time(header.begin_timestamp, entry.time_diff);
        if earliest.saturating_add(999) < begin {
            break;
        }
        if entry.key_hash != key_hash || earliest > end {
            continue;
        }
        if visit(entry.commitlog_offset)?.is_break() {
            return Ok(ControlFlow::Break(()));
        }
    }
    Ok(ControlFlow::Continue(()))
}

/// Records being indexed under one hold of the writer lock (`IndexService::batch`).
pub struct IndexBatch<'s> {
    service: &'s IndexService,
    /// None for a read-only index, which indexes nothing.
    writer: Option<MutexGuard<'s, WriterState>>,
}

impl IndexBatch<'_> {
    pub fn dispatch(&mut self, view: &RecordView<'_>) -> Result<()> {
        let Some(writer) = self.writer.as_deref_mut() else {
            return Ok(());
        };
        if view.physical_offset < writer.next_offset {
            return Ok(());
        }
        let mut topic = None;
        visit_index_keys(view, |key| {
            let topic = topic.get_or_insert_with(|| view.topic_str());
            self.service.put_key(
                writer,
                index_key_hash(topic, key),
                view.physical_offset,
                view.store_timestamp,
            )
        })?;
        writer.next_offset = view.physical_offset + view.total_size as i64;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_round_trip_through_local_time() {
        let millis = 1_700_000_000_123;
        let name = file_name_for(millis).unwrap();
        assert_eq!(name.len(), NAME_DIGITS);
        assert!(name.ends_with("123"));
        assert_eq!(millis_of_file_name(&name), Some(millis));
        assert_eq!(millis_of_file_name("2023111422132012"), None);
    }

    #[test]
    fn names_always_move_forward() {
        let future = file_name_for(now_millis() + 3_600_000).unwrap();
        let next = next_file_name(Some(&future)).unwrap();
        assert!(next > future);
        assert_eq!(
            millis_of_file_name(&next),
            millis_of_file_name(&future).map(|m| m + 1)
        );
    }
}
