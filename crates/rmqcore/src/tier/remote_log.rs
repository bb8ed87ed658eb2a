//! Reading commit-log segments whose local copy is gone: ranged GETs of fixed-size blocks,
//! kept in a bounded cache, so a single message costs one small read and a sequential
//! consumer one GET per block, never a whole segment.
//!
//! Nothing read here is trusted: the commit log decodes every record (CRC included) as it
//! does from a local segment, and a block shorter than the object's recorded size is an
//! error naming the object, so a changed or truncated object is reported, never served.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};

use bytes::Bytes;

use super::object_client::ObjectClient;
use super::state::{TierState, TieredSegment};
use crate::error::{Error, Result};

/// Bytes per ranged GET: large enough that a sequential consumer pays one request per
/// thousands of small messages, small enough that one old message costs little.
pub const BLOCK_SIZE: u64 = 2 << 20;

/// Blocks fetched ahead of a sequential reader (one moving on from the block before),
/// beyond the one it asked for: the bucket answers while the reader decodes. Lookups
/// of single messages read no more than their block.
const READ_AHEAD_BLOCKS: u64 = 3;

/// Blocks fetched, least recently used first out, and blocks being fetched.
#[derive(Debug)]
struct BlockCache {
    capacity_blocks: usize,
    blocks: HashMap<(u64, u64), Bytes>,
    order: VecDeque<(u64, u64)>,
    in_flight: HashSet<(u64, u64)>,
    /// The block each segment's reader asked for last: a reader moving to the next one
    /// is sequential and gets read-ahead; lookups jumping around do not.
    last_read: HashMap<u64, u64>,
}

/// The cache, and the signal that a fetch in flight ended.
type SharedCache = Arc<(Mutex<BlockCache>, Condvar)>;

impl BlockCache {
    fn get(&mut self, key: (u64, u64)) -> Option<Bytes> {
        let block = self.blocks.get(&key)?.clone();
        if let Some(at) = self.order.iter().position(|k| *k == key) {
            self.order.remove(at);
        }
        self.order.push_back(key);
        Some(block)
    }

    fn insert(&mut self, key: (u64, u64), block: Bytes) {
        while self.blocks.len() >= self.capacity_blocks {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            self.blocks.remove(&oldest);
        }
        self.blocks.insert(key, block);
        self.order.push_back(key);
    }

    /// Note a read of `key`; true when it is the block after the segment's last one.
    fn moves_on(&mut self, (segment, index): (u64, u64)) -> bool {
        let previous = self.last_read.insert(segment, index);
        index > 0 && previous == Some(index - 1)
    }

    fn forget_segment(&mut self, start_offset: u64) {
        self.last_read.remove(&start_offset);
        self.blocks.retain(|(start, _), _| *start != start_offset);
        self.order.retain(|(start, _)| *start != start_offset);
    }
}

#[derive(Debug)]
pub struct RemoteLog {
    pub(super) client: Arc<ObjectClient>,
    root: PathBuf,
    pub(super) state: RwLock<TierState>,
    cache: SharedCache,
    reads: Arc<ReadCounters>,
}

/// What reads of evicted segments cost: requests to the bucket and what they fetched.
#[derive(Debug, Default)]
pub struct ReadCounters {
    range_reads: AtomicU64,
    bytes_fetched: AtomicU64,
    cache_hits: AtomicU64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadStats {
    pub range_reads: u64,
    pub bytes_fetched: u64,
    pub cache_hits: u64,
}

impl RemoteLog {
    pub fn read_stats(&self) -> ReadStats {
        ReadStats {
            range_reads: self.reads.range_reads.load(Ordering::Relaxed),
            bytes_fetched: self.reads.bytes_fetched.load(Ordering::Relaxed),
            cache_hits: self.reads.cache_hits.load(Ordering::Relaxed),
        }
    }

    pub(super) fn counted_get(
        &self,
        object: &object_store::path::Path,
        range: std::ops::Range<u64>,
    ) -> Result<Bytes> {
        let bytes = self.client.get_range(object, range)?;
        self.reads.range_reads.fetch_add(1, Ordering::Relaxed);
        self.reads
            .bytes_fetched
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Ok(bytes)
    }

    pub fn new(client: Arc<ObjectClient>, root: &Path, state: TierState, cache_bytes: u64) -> Self {
        RemoteLog {
            client,
            root: root.to_path_buf(),
            state: RwLock::new(state),
            cache: Arc::new((
                Mutex::new(BlockCache {
                    capacity_blocks: (cache_bytes / BLOCK_SIZE).max(2 + READ_AHEAD_BLOCKS) as usize,
                    blocks: HashMap::new(),
                    order: VecDeque::new(),
                    in_flight: HashSet::new(),
                    last_read: HashMap::new(),
                }),
                Condvar::new(),
            )),
            reads: Arc::new(ReadCounters::default()),
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
        Ok(())
    }

    pub fn forget_cached(&self, start_offset: u64) {
        self.cache
            .0
            .lock()
            .expect("block cache lock")
            .forget_segment(start_offset);
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

    /// `length` bytes at `position` of `segment` (fewer at its end).
    pub fn read_segment(
        &self,
        segment: &TieredSegment,
        position: u64,
        length: usize,
    ) -> Result<Bytes> {
        let end = (position + length as u64).min(segment.size);
        if position >= end {
            return Ok(Bytes::new());
        }
        let first = position / BLOCK_SIZE;
        let last = (end - 1) / BLOCK_SIZE;
        if first == last {
            let block = self.block(segment, first)?;
            let from = (position - first * BLOCK_SIZE) as usize;
            return Ok(block.slice(from..from + (end - position) as usize));
        }
        let mut bytes = Vec::with_capacity((end - position) as usize);
        for index in first..=last {
            let block = self.block(segment, index)?;
            let block_start = index * BLOCK_SIZE;
            let from = position.max(block_start) - block_start;
            let to = end.min(block_start + block.len() as u64) - block_start;
            bytes.extend_from_slice(&block[from as usize..to as usize]);
        }
        Ok(Bytes::from(bytes))
    }

    /// The whole object in one GET (not cached), checked against its recorded size and
    /// CRC32: what scans of the whole log read.
    pub fn read_whole_segment(&self, segment: &TieredSegment) -> Result<Bytes> {
        let object = self.client.location().segment(segment.start_offset);
        let bytes = self.counted_get(&object, 0..segment.size)?;
        if bytes.len() as u64 != segment.size || crc32fast::hash(&bytes) != segment.crc32 {
            return Err(Error::corrupt(
                self.segment_object_name(segment),
                0,
                format!(
                    "the object differs from the segment uploaded ({} bytes, CRC32 {:08x}): it \
                     was changed in the bucket",
                    segment.size, segment.crc32
                ),
            ));
        }
        Ok(bytes)
    }

    fn block(&self, segment: &TieredSegment, index: u64) -> Result<Bytes> {
        let key = (segment.start_offset, index);
        let (lock, fetched) = &*self.cache;
        let sequential;
        {
            let mut cache = lock.lock().expect("block cache lock");
            loop {
                if let Some(block) = cache.get(key) {
                    self.reads.cache_hits.fetch_add(1, Ordering::Relaxed);
                    let sequential = cache.moves_on(key);
                    drop(cache);
                    if sequential {
                        self.read_ahead(segment, index);
                    }
                    return Ok(block);
                }
                if !cache.in_flight.contains(&key) {
                    break;
                }
                cache = fetched.wait(cache).expect("block cache lock");
            }
            sequential = cache.moves_on(key);
            cache.in_flight.insert(key);
        }
        let start = index * BLOCK_SIZE;
        let end = (start + BLOCK_SIZE).min(segment.size);
        let object = self.client.location().segment(segment.start_offset);
        let outcome = self.counted_get(&object, start..end);
        {
            let mut cache = lock.lock().expect("block cache lock");
            cache.in_flight.remove(&key);
            if let Ok(block) = &outcome {
                if block.len() as u64 == end - start {
                    cache.insert(key, block.clone());
                }
            }
            fetched.notify_all();
        }
        let block = outcome?;
        if block.len() as u64 != end - start {
            return Err(Error::corrupt(
                self.segment_object_name(segment),
                start,
                format!(
                    "the object is shorter than the {} bytes uploaded (a read of {start}..{end} \
                     gave {} bytes): it was changed in the bucket",
                    segment.size,
                    block.len()
                ),
            ));
        }
        if sequential {
            self.read_ahead(segment, index);
        }
        Ok(block)
    }

    /// A sequential reader will want the next blocks: fetch those not cached or in
    /// flight in the background (a failure just leaves the reader to fetch itself).
    fn read_ahead(&self, segment: &TieredSegment, index: u64) {
        let object = self.client.location().segment(segment.start_offset);
        for ahead in index + 1..=index + READ_AHEAD_BLOCKS {
            let start = ahead * BLOCK_SIZE;
            if start >= segment.size {
                break;
            }
            let key = (segment.start_offset, ahead);
            {
                let mut cache = self.cache.0.lock().expect("block cache lock");
                if cache.blocks.contains_key(&key) || !cache.in_flight.insert(key) {
                    continue;
                }
            }
            let end = (start + BLOCK_SIZE).min(segment.size);
            let cache = Arc::clone(&self.cache);
            let reads = Arc::clone(&self.reads);
            self.client
                .spawn_get_range(object.clone(), start..end, move |block| {
                    let (lock, fetched) = &*cache;
                    let mut cache = lock.lock().expect("block cache lock");
                    cache.in_flight.remove(&key);
                    if let Some(block) = block {
                        reads.range_reads.fetch_add(1, Ordering::Relaxed);
                        reads
                            .bytes_fetched
                            .fetch_add(block.len() as u64, Ordering::Relaxed);
                        if block.len() as u64 == end - start {
                            cache.insert(key, block);
                        }
                    }
                    fetched.notify_all();
                });
        }
    }
}

impl crate::commit_log::RemoteSegments for RemoteLog {
    fn min_offset(&self) -> Option<u64> {
        self.first_remote_offset()
    }

    fn holding(&self, offset: u64) -> Option<(u64, u64)> {
        self.segment_holding(offset)
            .map(|segment| (segment.start_offset, segment.size))
    }

    fn object_name(&self, start_offset: u64) -> PathBuf {
        let location = self.client.location();
        PathBuf::from(location.describe(&location.segment(start_offset)))
    }

    fn read(&self, start_offset: u64, position: u64, length: usize) -> Result<Bytes> {
        let segment = self.listed(start_offset)?;
        self.read_segment(&segment, position, length)
    }

    fn read_whole(&self, start_offset: u64) -> Result<Bytes> {
        let segment = self.listed(start_offset)?;
        self.read_whole_segment(&segment)
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
