//! The bounded cache of evicted segments' blocks: fixed-size pieces of the objects,
//! least recently used out first, and which blocks a GET is fetching right now, so that
//! two readers wanting the same block wait for one request instead of sending two.
//!
//! Blocks are small (64 KiB) so that a reader of one queue, whose records are spread
//! between other queues' records, fetches little it does not need; a GET still fetches
//! a run of consecutive blocks at once, so small blocks do not mean small requests.
//!
//! A block is a slice of the receive buffer its GET's body was copied into
//! (`cached_block.rs`, `receive_buffers.rs`), which stays allocated while any block of it
//! is cached: the cache is bounded by the bytes of the buffers its blocks keep alive,
//! each counted once, not by its blocks' own bytes.
//!
//! A block fetched ahead of a sequential reader leaves the cache as soon as every reader
//! of its queue has read past it (`release_read`), not when the cache is full: its buffer
//! then goes back to the pool once its last block has left, and the next GET reuses it,
//! so a fresh process maps about the read-ahead bound of new memory, not the whole cache
//! (Apache RocketMQ's tiered store drops a read-ahead message once every active consumer
//! group has read it, for the same reason). Blocks read any other way stay until the
//! cache is full, least recently used out first.

use std::collections::BTreeMap;

use super::block_key_hash::{FastMap, FastSet};
pub use super::cached_block::{Block, BufferId, FetchedBlock};

/// Bytes per block: what a lookup of one record fetches, and the grain at which a
/// consumer's sparse reads are covered.
pub const BLOCK_SIZE: u64 = 64 << 10;

/// The chunk (8 MiB) a reader going block after block through an object without a
/// footer has fetched ahead of it (`RemoteLog::read_ahead`), and a quarter of the
/// smallest cache. GETs are sized by `block_runs::MAX_RUN_BLOCKS`. 16 MiB chunks (with
/// 2,048-entry queue hints) made fewer requests, but with four consumers of one span their
/// read-ahead outgrew the 64 MiB cache and pushed out blocks before they were read
/// (`bench tier`, 2 GiB: 121x the body fetched), before read-ahead had a bound.
pub const CHUNK_BLOCKS: u64 = 128;

/// (segment start offset, block index within the segment).
pub type BlockKey = (u64, u64);

/// A sequential reader is one that has read this many consecutive blocks of a segment:
/// only then is a whole chunk ahead worth fetching. A consumer of one queue reads a few
/// consecutive blocks (one batch of that queue) and then jumps; it is served by the
/// ranges its queue names (`RemoteLog::prefetch`), not by whole chunks.
const SEQUENTIAL_STREAK: u64 = 8;

#[derive(Debug)]
pub struct BlockCache {
    capacity_bytes: u64,
    /// `capacity_bytes` in whole blocks: what read-ahead is bounded by.
    capacity_blocks: usize,
    /// Each block with the stamp of its last use, its buffer and whether it was fetched
    /// ahead of a reader (`Fetch::Ahead`), which `release_read` may let go of.
    blocks: FastMap<BlockKey, (Block, u64, BufferId, bool)>,
    /// Per buffer that cached blocks are slices of: how many blocks are.
    buffers: FastMap<u64, u32>,
    /// The bytes of the buffers in `buffers`: what the bound is on.
    held_bytes: u64,
    /// The blocks by last use, oldest first.
    by_use: BTreeMap<u64, BlockKey>,
    next_stamp: u64,
    /// Blocks being fetched, and whether ahead of a reader.
    in_flight: FastMap<BlockKey, bool>,
    /// Per segment: the block read last and how many consecutive blocks led up to it.
    streaks: FastMap<u64, (u64, u64)>,
    /// Blocks fetched (or being fetched) ahead of a reader, for any reader, and not read
    /// yet: their number is bounded by `fetch_ahead_limit` for all readers together, so
    /// that many consumers' read-ahead cannot push out of the cache what another fetched
    /// ahead before it is read.
    ahead: FastSet<BlockKey>,
    /// The most blocks `ahead` has held.
    ahead_peak: usize,
    /// Blocks fetched ahead that were pushed out of the cache before anyone read them.
    ahead_evicted_unread: u64,
    /// Blocks fetched ahead that left the cache once their readers had read past them.
    released: u64,
}

impl BlockCache {
    pub fn new(capacity_bytes: u64) -> Self {
        let capacity_blocks = (capacity_bytes / BLOCK_SIZE).max(4 * CHUNK_BLOCKS);
        BlockCache {
            capacity_bytes: capacity_blocks * BLOCK_SIZE,
            capacity_blocks: capacity_blocks as usize,
            blocks: FastMap::default(),
            buffers: FastMap::default(),
            held_bytes: 0,
            by_use: BTreeMap::new(),
            next_stamp: 0,
            in_flight: FastMap::default(),
            streaks: FastMap::default(),
            ahead: FastSet::default(),
            ahead_peak: 0,
            ahead_evicted_unread: 0,
            released: 0,
        }
    }

    fn stamp(&mut self) -> u64 {
        self.next_stamp += 1;
        self.next_stamp
    }

    /// The block, marked as just used.
    pub fn get(&mut self, key: BlockKey) -> Option<Block> {
        // A block is read once per record in it (tens of times in a row): one used among
        // the newest quarter of the cache keeps its place, which spares the reader a move
        // in `by_use` per record (perf: a tenth of a sequential tier reader's CPU was the
        // cache's bookkeeping); it is still far from the oldest end.
        let recent = self
            .next_stamp
            .saturating_sub(self.capacity_blocks as u64 / 4);
        let (block, used, _, _) = self.blocks.get_mut(&key)?;
        let block = block.clone();
        if *used < recent {
            self.next_stamp += 1;
            let old = std::mem::replace(used, self.next_stamp);
            self.by_use.remove(&old);
            self.by_use.insert(self.next_stamp, key);
        }
        if !self.ahead.is_empty() {
            self.ahead.remove(&key);
        }
        Some(block)
    }

    #[cfg(test)]
    fn contains(&self, key: BlockKey) -> bool {
        self.blocks.contains_key(&key)
    }

    /// Whether the block is neither cached nor being fetched.
    pub fn missing(&self, key: BlockKey) -> bool {
        !self.blocks.contains_key(&key) && !self.in_flight.contains_key(&key)
    }

    pub fn is_in_flight(&self, key: BlockKey) -> bool {
        self.in_flight.contains_key(&key)
    }

    /// A fetch of `key` for a read that wants it now (random access, or a sequential
    /// reader's block nobody fetched ahead).
    pub fn start_fetch(&mut self, key: BlockKey) {
        self.in_flight.entry(key).or_insert(false);
    }

    /// A background fetch of `key` that no reader named (a gap filled between two named
    /// blocks to make one GET of two): fetched ahead, not counted against the bound.
    pub fn start_fetch_along(&mut self, key: BlockKey) {
        self.in_flight.insert(key, true);
    }

    /// A fetch of `key` ahead of its reader: in flight, and counted against the bound
    /// of all readers' read-ahead until it is read (or pushed out, or its fetch fails).
    pub fn start_fetch_ahead(&mut self, key: BlockKey) {
        self.in_flight.insert(key, true);
        self.ahead.insert(key);
        self.ahead_peak = self.ahead_peak.max(self.ahead.len());
    }

    /// The fetch of `key` ended; `cached`: its block is about to be inserted. Whether it
    /// was fetched ahead of a reader (what `insert_fetched` is told).
    pub fn end_fetch(&mut self, key: BlockKey, cached: bool) -> bool {
        let ahead = self.in_flight.remove(&key).unwrap_or(false);
        if !cached {
            self.ahead.remove(&key);
        }
        ahead
    }

    /// How many more blocks may be fetched ahead now, for all readers together.
    pub fn ahead_room(&self) -> usize {
        self.fetch_ahead_limit().saturating_sub(self.ahead.len())
    }

    /// (blocks fetched ahead and unread now, the most there were, the limit, blocks
    /// fetched ahead and pushed out unread).
    pub fn ahead_stats(&self) -> (usize, usize, usize, u64) {
        (
            self.ahead.len(),
            self.ahead_peak,
            self.fetch_ahead_limit(),
            self.ahead_evicted_unread,
        )
    }

    /// Cache `block` as `key`, fetched for a read that wanted it now: it stays until the
    /// cache is full (`insert_fetched`).
    #[cfg(test)]
    pub fn insert(&mut self, key: BlockKey, block: FetchedBlock) {
        self.insert_fetched(key, block, false);
    }

    /// Cache `block` as `key`, pushing out the least recently used blocks until the
    /// buffers held, its own included, fit the bound; `ahead`: it was fetched ahead of a
    /// reader, and leaves once its readers have read past it (`release_read`).
    pub fn insert_fetched(&mut self, key: BlockKey, block: FetchedBlock, ahead: bool) {
        if let Some((_, used, buffers, _)) = self.blocks.remove(&key) {
            self.by_use.remove(&used);
            self.release(buffers);
        }
        loop {
            let adds = if self.buffers.contains_key(&block.buffer.id) {
                0
            } else {
                block.buffer.bytes
            };
            if self.held_bytes + adds <= self.capacity_bytes {
                break;
            }
            let Some((_, oldest)) = self.by_use.pop_first() else {
                break;
            };
            if let Some((_, _, buffer, _)) = self.blocks.remove(&oldest) {
                self.release(buffer);
            }
            if self.ahead.remove(&oldest) {
                self.ahead_evicted_unread += 1;
            }
        }
        let stamp = self.stamp();
        let buffer = block.buffer;
        *self.buffers.entry(buffer.id).or_insert_with(|| {
            self.held_bytes += buffer.bytes;
            0
        }) += 1;
        self.blocks.insert(key, (block.block, stamp, buffer, ahead));
        self.by_use.insert(stamp, key);
    }

    /// Every reader of the blocks `indices` of `segment` has read past them: those that
    /// were fetched ahead of a reader leave the cache now (one not read yet leaves the
    /// read-ahead bound too: its readers passed it by), so that their buffers go back
    /// to the pool for the next GETs once their last block has left. Blocks fetched for
    /// a read that wanted them now (a lookup, a get by offset) stay. How many left.
    pub fn release_read(&mut self, segment: u64, indices: std::ops::Range<u64>) -> usize {
        let mut left = 0;
        for index in indices {
            let key = (segment, index);
            if !self.blocks.get(&key).is_some_and(|(_, _, _, ahead)| *ahead) {
                continue;
            }
            if let Some((_, used, buffer, _)) = self.blocks.remove(&key) {
                self.by_use.remove(&used);
                self.release(buffer);
                self.ahead.remove(&key);
                left += 1;
            }
        }
        self.released += left as u64;
        left
    }

    /// Blocks fetched ahead that left the cache once read past (`release_read`).
    pub fn released_blocks(&self) -> u64 {
        self.released
    }

    /// One cached block fewer keeps `buffer` alive.
    fn release(&mut self, buffer: BufferId) {
        if let Some(refs) = self.buffers.get_mut(&buffer.id) {
            *refs -= 1;
            if *refs == 0 {
                self.buffers.remove(&buffer.id);
                self.held_bytes -= buffer.bytes;
            }
        }
    }

    /// Bytes of the buffers cached blocks keep alive.
    pub fn held_bytes(&self) -> u64 {
        self.held_bytes
    }

    /// Note a read of `key`; true when the segment's reader has just moved on to this
    /// block after `SEQUENTIAL_STREAK - 1` consecutive ones (further reads of the same
    /// block answer false: read-ahead is decided once per block).
    pub fn note_read(&mut self, (segment, index): BlockKey) -> bool {
        let entry = self.streaks.entry(segment).or_insert((index, 0));
        let streak = match *entry {
            (last, streak) if last == index && streak > 0 => return false,
            (last, streak) if last + 1 == index => streak + 1,
            _ => 1,
        };
        *entry = (index, streak);
        streak >= SEQUENTIAL_STREAK
    }

    /// The most blocks one background fetch may ask for: half the cache, so that what is
    /// fetched ahead is not pushed out by the rest of the same fetch before it is read.
    pub fn fetch_ahead_limit(&self) -> usize {
        self.capacity_blocks / 2
    }

    pub fn forget_segment(&mut self, start_offset: u64) {
        self.streaks.remove(&start_offset);
        self.ahead.retain(|(start, _)| *start != start_offset);
        let gone: Vec<(BlockKey, u64, BufferId)> = self
            .blocks
            .iter()
            .filter(|((start, _), _)| *start == start_offset)
            .map(|(key, (_, used, buffer, _))| (*key, *used, *buffer))
            .collect();
        for (key, used, buffers) in gone {
            self.blocks.remove(&key);
            self.by_use.remove(&used);
            self.release(buffers);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    /// A whole block in a buffer of its own.
    fn block() -> FetchedBlock {
        FetchedBlock::copied(vec![7; BLOCK_SIZE as usize])
    }

    #[test]
    fn least_recently_used_goes_first() {
        let mut cache = BlockCache::new(0);
        let capacity = cache.capacity_blocks as u64;
        for index in 0..capacity {
            cache.insert((0, index), block());
        }
        assert!(cache.get((0, 0)).is_some());
        cache.insert((0, capacity), block());
        assert!(cache.contains((0, 0)), "block 0 was used last but one");
        assert!(
            !cache.contains((0, 1)),
            "block 1 was the least recently used"
        );
        assert_eq!(cache.blocks.len(), cache.by_use.len());
        cache.forget_segment(0);
        assert!(cache.blocks.is_empty() && cache.by_use.is_empty());
        assert_eq!(cache.held_bytes(), 0);
    }

    #[test]
    fn a_buffer_counts_once_and_until_its_last_block_goes() {
        let mut cache = BlockCache::new(0);
        let capacity = cache.capacity_blocks as u64;
        let piece = Bytes::from(vec![1u8; 4 * BLOCK_SIZE as usize]);
        let buffer = BufferId::new(piece.len() as u64);
        for index in 0..4u64 {
            let at = (index * BLOCK_SIZE) as usize;
            let bytes = piece.slice(at..at + BLOCK_SIZE as usize);
            cache.insert((0, index), FetchedBlock::within(bytes, buffer));
        }
        assert_eq!(
            cache.held_bytes(),
            4 * BLOCK_SIZE,
            "one buffer, counted once"
        );
        for index in 0..capacity - 4 {
            cache.insert((1, index), block());
        }
        assert_eq!(cache.held_bytes(), capacity * BLOCK_SIZE, "full, not over");
        // Blocks 1..3 read again, after the cache filled: block 0 is the oldest, and
        // pushing it out alone frees nothing, so the next insert pushes out a block of
        // another buffer too.
        for index in 1..4 {
            cache.stamp();
            let (_, used, _, _) = cache.blocks.get_mut(&(0, index)).unwrap();
            let old = std::mem::replace(used, cache.next_stamp);
            cache.by_use.remove(&old);
            cache.by_use.insert(cache.next_stamp, (0, index));
        }
        cache.insert((2, 0), block());
        assert!(!cache.contains((0, 0)), "the oldest block went");
        assert!(
            cache.contains((0, 1)),
            "but its buffer is still held by block 1"
        );
        assert!(cache.held_bytes() <= capacity * BLOCK_SIZE);
        assert!(
            !cache.contains((1, 0)),
            "so a block of another buffer went too"
        );
        cache.forget_segment(0);
        cache.forget_segment(1);
        cache.forget_segment(2);
        assert_eq!(cache.held_bytes(), 0);
        assert!(cache.buffers.is_empty());
    }

    #[test]
    fn a_block_read_again_soon_keeps_its_place_and_one_read_late_moves() {
        let mut cache = BlockCache::new(0);
        let capacity = cache.capacity_blocks as u64;
        cache.insert((0, 0), block());
        let stamp = cache.blocks[&(0, 0)].1;
        assert!(cache.get((0, 0)).is_some());
        assert_eq!(
            cache.blocks[&(0, 0)].1,
            stamp,
            "read again at once: no move"
        );
        for index in 1..capacity / 2 {
            cache.insert((1, index), block());
        }
        assert!(cache.get((0, 0)).is_some());
        let moved = cache.blocks[&(0, 0)].1;
        assert!(moved > stamp, "read after half the cache: newest again");
        assert_eq!(cache.by_use.get(&moved), Some(&(0, 0)));
        assert_eq!(cache.blocks.len(), cache.by_use.len());
    }

    #[test]
    fn read_ahead_is_bounded_for_all_readers_together() {
        let mut cache = BlockCache::new(0);
        let limit = cache.fetch_ahead_limit();
        // Two readers' read-ahead, in two segments, share one room.
        for index in 0..limit as u64 / 2 {
            cache.start_fetch_ahead((1, index));
            cache.start_fetch_ahead((2, index));
        }
        assert_eq!(cache.ahead_room(), 0);
        // A block read leaves room for one more; a failed fetch too.
        cache.end_fetch((1, 0), true);
        cache.insert((1, 0), block());
        assert_eq!(cache.ahead_room(), 0, "fetched but not read yet");
        assert!(cache.get((1, 0)).is_some());
        assert_eq!(cache.ahead_room(), 1);
        cache.end_fetch((2, 0), false);
        assert_eq!(cache.ahead_room(), 2);
        // A block pushed out before it was read is counted and leaves the bound.
        cache.end_fetch((1, 1), true);
        cache.insert((1, 1), block());
        for index in 0..cache.capacity_blocks as u64 {
            cache.insert((9, index), block());
        }
        let (unread, peak, limit_now, evicted_unread) = cache.ahead_stats();
        assert_eq!((peak, limit_now, evicted_unread), (limit, limit, 1));
        assert_eq!(unread, limit - 3);
        cache.forget_segment(1);
        cache.forget_segment(2);
        assert_eq!(cache.ahead_room(), limit);
    }

    #[test]
    fn a_block_fetched_ahead_leaves_once_read_past_and_one_fetched_on_demand_stays() {
        let mut cache = BlockCache::new(0);
        // Two blocks of one buffer fetched ahead, a third block fetched by a lookup.
        let piece = Bytes::from(vec![1u8; 2 * BLOCK_SIZE as usize]);
        let buffer = BufferId::new(piece.len() as u64);
        for index in 0..2u64 {
            cache.start_fetch_ahead((0, index));
            let ahead = cache.end_fetch((0, index), true);
            assert!(ahead);
            let at = (index * BLOCK_SIZE) as usize;
            let bytes = piece.slice(at..at + BLOCK_SIZE as usize);
            cache.insert_fetched((0, index), FetchedBlock::within(bytes, buffer), ahead);
        }
        cache.start_fetch((0, 2));
        let ahead = cache.end_fetch((0, 2), true);
        assert!(!ahead);
        cache.insert_fetched((0, 2), block(), ahead);
        assert!(cache.get((0, 0)).is_some());
        assert_eq!(cache.held_bytes(), 3 * BLOCK_SIZE);
        // Read past block 0: it leaves, but its buffer is still held by block 1.
        assert_eq!(cache.release_read(0, 0..1), 1);
        assert!(!cache.contains((0, 0)));
        assert_eq!(cache.held_bytes(), 3 * BLOCK_SIZE);
        // Read past all three: block 1 leaves (unread: it leaves the bound too) and frees
        // the buffer; the lookup's block 2 stays.
        assert_eq!(cache.ahead_stats().0, 1);
        assert_eq!(cache.release_read(0, 0..3), 1);
        assert!(!cache.contains((0, 1)));
        assert!(
            cache.contains((0, 2)),
            "fetched on demand: kept until the cache is full"
        );
        assert_eq!(cache.held_bytes(), BLOCK_SIZE);
        assert_eq!(cache.ahead_stats().0, 0);
        assert_eq!(cache.released_blocks(), 2);
        assert_eq!(cache.blocks.len(), cache.by_use.len());
    }

    #[test]
    fn a_streak_of_blocks_is_sequential() {
        let mut cache = BlockCache::new(0);
        for index in 0..SEQUENTIAL_STREAK - 1 {
            assert!(!cache.note_read((7, index)));
        }
        assert!(cache.note_read((7, SEQUENTIAL_STREAK - 1)));
        assert!(
            !cache.note_read((7, SEQUENTIAL_STREAK + 3)),
            "a jump ends it"
        );
    }
}
