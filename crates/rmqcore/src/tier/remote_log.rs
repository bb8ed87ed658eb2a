//! The tier's view of evicted segments: the state (what is uploaded, what is only in the
//! bucket), the read counters, and whole-object reads for scans. Reads by commit-log
//! position go through each object's layout (`mapped_reads.rs`) to ranged reads of the
//! object through the block cache (`ranged_reads.rs`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};

use bytes::Bytes;

use super::block_cache::{BlockCache, FetchedBlock, BLOCK_SIZE};
use super::bounded_cache::BoundedCache;
use super::object_client::ObjectClient;
use super::state::{TierState, TieredSegment};
use crate::error::{Error, Result};

/// The cache, and the signal that a fetch in flight ended.
pub(super) type SharedCache = Arc<(Mutex<BlockCache>, Condvar)>;

#[derive(Debug)]
pub struct RemoteLog {
    pub(super) client: Arc<ObjectClient>,
    root: PathBuf,
    pub(super) state: RwLock<TierState>,
    pub(super) cache: SharedCache,
    pub(super) reads: Arc<ReadCounters>,
    /// Index files' slot tables (`remote_index.rs`), a quarter of the read cache's bytes.
    pub(super) slot_tables: Mutex<BoundedCache<String, Bytes>>,
    /// Evicted consume-queue files, checked whole (`remote_queue.rs`), a quarter of the
    /// read cache's bytes.
    pub(super) queue_files: Mutex<BoundedCache<String, Bytes>>,
    /// Bumped by every change of `state`: a reader that remembers what it looked up in
    /// the state (`RemoteQueueFiles::state_version`) looks again after a change.
    state_version: AtomicU64,
    /// The last failed read of a queue file, for the status.
    pub(super) queue_read_failure: Mutex<Option<String>>,
    /// The object name records read last were read from: a reader going through a
    /// segment names it once, not once per record.
    last_object_name: Mutex<Option<(u64, Arc<Path>)>>,
    /// Footers of queue-grouped objects (`mapped_reads.rs`), an eighth of the read
    /// cache's bytes, and the one read last (a reader going through a segment looks it
    /// up once, not once per record).
    pub(super) layouts: Mutex<BoundedCache<u64, super::grouped_object::Layout>>,
    pub(super) last_layout: Mutex<Option<(u64, Arc<super::grouped_object::Layout>)>>,
    /// Copies of those footers on local disk, so an object's first read needs no GET
    /// for its footer (`local_footers.rs`).
    pub(super) footers: super::local_footers::LocalFooters,
}

/// What reads of evicted segments cost: requests to the bucket and what they fetched.
#[derive(Debug, Default)]
pub struct ReadCounters {
    pub(super) range_reads: AtomicU64,
    pub(super) bytes_fetched: AtomicU64,
    pub(super) cache_hits: AtomicU64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadStats {
    pub range_reads: u64,
    pub bytes_fetched: u64,
    pub cache_hits: u64,
    /// Bytes fetched (or being fetched) ahead of readers and not read yet, all readers
    /// together; the most there were; the bound on them; and those pushed out unread.
    pub read_ahead_bytes: u64,
    pub read_ahead_peak_bytes: u64,
    pub read_ahead_limit_bytes: u64,
    pub read_ahead_evicted_unread_bytes: u64,
    /// Bytes fetched ahead that left the cache once every reader had read past them
    /// (`BlockCache::release_read`).
    pub read_ahead_released_bytes: u64,
    /// Bytes of the receive buffers cached blocks keep alive now: what the cache's bound
    /// is on.
    pub cache_held_bytes: u64,
}

impl RemoteLog {
    pub fn read_stats(&self) -> ReadStats {
        let (ahead, peak, limit, evicted_unread, released, held) = {
            let cache = self.cache.0.lock().expect("block cache lock");
            let (ahead, peak, limit, evicted_unread) = cache.ahead_stats();
            let held = cache.held_bytes();
            (
                ahead,
                peak,
                limit,
                evicted_unread,
                cache.released_blocks(),
                held,
            )
        };
        let bytes = |blocks: u64| blocks * BLOCK_SIZE;
        ReadStats {
            range_reads: self.reads.range_reads.load(Ordering::Relaxed),
            bytes_fetched: self.reads.bytes_fetched.load(Ordering::Relaxed),
            cache_hits: self.reads.cache_hits.load(Ordering::Relaxed),
            read_ahead_bytes: bytes(ahead as u64),
            read_ahead_peak_bytes: bytes(peak as u64),
            read_ahead_limit_bytes: bytes(limit as u64),
            read_ahead_evicted_unread_bytes: bytes(evicted_unread),
            read_ahead_released_bytes: bytes(released),
            cache_held_bytes: held,
        }
    }

    /// A ranged GET of an object recorded with `size` bytes and CRC32 `crc32`, checked
    /// against that record (`ObjectClient::get_recorded`) and counted.
    pub(super) fn counted_get(
        &self,
        object: &object_store::path::Path,
        range: std::ops::Range<u64>,
        (size, crc32): (u64, u32),
    ) -> Result<Bytes> {
        let bytes = self.client.get_recorded(object, range, size, crc32)?;
        self.reads.range_reads.fetch_add(1, Ordering::Relaxed);
        self.reads
            .bytes_fetched
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Ok(bytes)
    }

    /// `counted_get`, the body cut into cache blocks as it arrives.
    pub(super) fn counted_get_blocks(
        &self,
        object: &object_store::path::Path,
        range: std::ops::Range<u64>,
        recorded: (u64, u32),
    ) -> Result<Vec<FetchedBlock>> {
        let blocks =
            self.client
                .get_recorded_blocks(object, range, recorded, BLOCK_SIZE as usize)?;
        self.reads.range_reads.fetch_add(1, Ordering::Relaxed);
        let fetched: u64 = blocks.iter().map(|b| b.len() as u64).sum();
        self.reads
            .bytes_fetched
            .fetch_add(fetched, Ordering::Relaxed);
        Ok(blocks)
    }

    pub fn new(client: Arc<ObjectClient>, root: &Path, state: TierState, cache_bytes: u64) -> Self {
        RemoteLog {
            client,
            root: root.to_path_buf(),
            state: RwLock::new(state),
            cache: Arc::new((Mutex::new(BlockCache::new(cache_bytes)), Condvar::new())),
            reads: Arc::new(ReadCounters::default()),
            slot_tables: Mutex::new(BoundedCache::new(cache_bytes / 4)),
            queue_files: Mutex::new(BoundedCache::new(cache_bytes / 4)),
            state_version: AtomicU64::new(0),
            queue_read_failure: Mutex::new(None),
            last_object_name: Mutex::new(None),
            layouts: Mutex::new(BoundedCache::new(cache_bytes / 8)),
            last_layout: Mutex::new(None),
            footers: super::local_footers::LocalFooters::new(root),
        }
    }

    pub fn client(&self) -> &Arc<ObjectClient> {
        &self.client
    }

    pub fn state(&self) -> TierState {
        self.state.read().expect("tier state lock").clone()
    }

    /// Change the state and persist it before anyone acts on the change.
    pub fn update(&self, change: impl FnOnce(&mut TierState)) -> Result<()> {
        let mut state = self.state.write().expect("tier state lock");
        let mut next = state.clone();
        change(&mut next);
        next.persist(&self.root)?;
        *state = next;
        self.state_version.fetch_add(1, Ordering::Release);
        Ok(())
    }

    /// How many times the state has changed.
    pub(super) fn state_version(&self) -> u64 {
        self.state_version.load(Ordering::Acquire)
    }

    pub fn forget_cached(&self, start_offset: u64) {
        self.cache
            .0
            .lock()
            .expect("block cache lock")
            .forget_segment(start_offset);
        self.forget_layout(start_offset);
    }

    /// The first offset only the tier holds.
    pub fn first_remote_offset(&self) -> Option<u64> {
        let state = self.state.read().expect("tier state lock");
        let first = state
            .remote_only()
            .next()
            .map(|segment| segment.start_offset);
        first
    }

    /// The evicted segment holding `offset`.
    pub fn segment_holding(&self, offset: u64) -> Option<TieredSegment> {
        self.state
            .read()
            .expect("tier state lock")
            .remote_holding(offset)
            .copied()
    }

    /// How errors name the segment's object.
    pub fn segment_object_name(&self, segment: &TieredSegment) -> PathBuf {
        let location = self.client.location();
        PathBuf::from(location.describe(&location.segment(segment.start_offset)))
    }

    /// The whole object in one GET (not cached), checked against its recorded size and
    /// CRC32 (`read_whole_log` puts a grouped object's records back in log order).
    pub fn read_whole_segment(&self, segment: &TieredSegment) -> Result<Bytes> {
        let object = self.client.location().segment(segment.start_offset);
        let bytes = self.counted_get(&object, 0..segment.size, (segment.size, segment.crc32))?;
        if bytes.len() as u64 != segment.size || crc32fast::hash(&bytes) != segment.crc32 {
            return Err(Error::tier_object_changed(
                self.client.location().describe(&object),
                0,
                format!(
                    "its bytes differ from the segment uploaded ({} bytes, CRC32 {:08x})",
                    segment.size, segment.crc32
                ),
            ));
        }
        Ok(bytes)
    }
}

impl crate::commit_log::RemoteSegments for RemoteLog {
    fn min_offset(&self) -> Option<u64> {
        self.first_remote_offset()
    }

    fn holding(&self, offset: u64) -> Option<(u64, u64)> {
        self.segment_holding(offset)
            .map(|segment| (segment.start_offset, segment.log_size()))
    }

    fn object_name(&self, start_offset: u64) -> Arc<Path> {
        let mut last = self.last_object_name.lock().expect("object name lock");
        match &*last {
            Some((start, name)) if *start == start_offset => Arc::clone(name),
            _ => {
                let location = self.client.location();
                let name: Arc<Path> =
                    PathBuf::from(location.describe(&location.segment(start_offset))).into();
                *last = Some((start_offset, Arc::clone(&name)));
                name
            }
        }
    }

    fn read(&self, start_offset: u64, position: u64, length: usize) -> Result<Bytes> {
        let segment = self.listed(start_offset)?;
        self.read_log(&segment, position, length)
    }

    fn read_in_block(
        &self,
        start_offset: u64,
        position: u64,
        length: usize,
        up_to: usize,
    ) -> Result<Bytes> {
        let segment = self.listed(start_offset)?;
        self.read_log_in_block(&segment, position, length, up_to)
    }

    fn read_whole(&self, start_offset: u64) -> Result<Bytes> {
        let segment = self.listed(start_offset)?;
        self.read_whole_log(&segment)
    }

    fn prefetch(&self, records: &[(u64, u32)]) {
        RemoteLog::prefetch(self, records);
    }
}

impl RemoteLog {
    /// A segment the state lists (one that expired meanwhile is not found).
    fn listed(&self, start_offset: u64) -> Result<TieredSegment> {
        self.state
            .read()
            .expect("tier state lock")
            .segments
            .get(&start_offset)
            .copied()
            .ok_or_else(|| {
                Error::NotFound(format!(
                    "segment {start_offset} is no longer in the tier (expired)"
                ))
            })
    }
}
