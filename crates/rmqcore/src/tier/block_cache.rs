//! The bounded cache of evicted segments' blocks: fixed-size pieces of the objects,
//! least recently used out first, and which blocks a GET is fetching right now, so that
//! two readers wanting the same block wait for one request instead of sending two.
//!
//! Blocks are small (64 KiB) so that a reader of one queue, whose records are spread
//! between other queues' records, fetches little it does not need; a GET still fetches
//! a run of consecutive blocks at once, so small blocks do not mean small requests.

use std::collections::{BTreeMap, HashMap, HashSet};

use bytes::Bytes;

/// Bytes per block: what a lookup of one record fetches, and the grain at which a
/// consumer's sparse reads are covered.
pub const BLOCK_SIZE: u64 = 64 << 10;

/// The most blocks one GET fetches (8 MiB): versitygw (the loopback S3 server of
/// `bench tier`) spent about 1.5 ms of CPU on a GET whatever its length with its default
/// 1 MiB read buffer, allocated per request, and 0.4 ns per byte sent, so a GET's fixed
/// cost was worth about 4 MB of body (0.6 ms, about 1.5 MB, with the 64 KiB buffer the
/// tests and bench give it now). 16 MiB GETs (with 2,048-entry queue hints) made fewer requests,
/// but with four consumers of one span their read-ahead outgrew the 64 MiB cache and
/// pushed out blocks before they were read (`bench tier`, 2 GiB: 121x the body fetched).
pub const CHUNK_BLOCKS: u64 = 128;

/// Blocks between two wanted ones that a background fetch takes too, to make one GET of
/// two: up to 1 MiB, about what a GET's fixed cost is worth in bytes. A consumer of one
/// queue among a few interleaved ones so fetches the span whole in large GETs; one whose
/// records are far apart fetches only the blocks covering them.
pub const FILL_GAP_BLOCKS: u64 = 16;

/// (segment start offset, block index within the segment).
pub type BlockKey = (u64, u64);

/// A sequential reader is one that has read this many consecutive blocks of a segment:
/// only then is a whole chunk ahead worth fetching. A consumer of one queue reads a few
/// consecutive blocks (one batch of that queue) and then jumps; it is served by the
/// ranges its queue names (`RemoteLog::prefetch`), not by whole chunks.
const SEQUENTIAL_STREAK: u64 = 8;

#[derive(Debug)]
pub struct BlockCache {
    capacity_blocks: usize,
    /// Each block with the stamp of its last use.
    blocks: HashMap<BlockKey, (Bytes, u64)>,
    /// The blocks by last use, oldest first.
    by_use: BTreeMap<u64, BlockKey>,
    next_stamp: u64,
    in_flight: HashSet<BlockKey>,
    /// Per segment: the block read last and how many consecutive blocks led up to it.
    streaks: HashMap<u64, (u64, u64)>,
    /// Blocks fetched (or being fetched) ahead of a reader, for any reader, and not read
    /// yet: their number is bounded by `fetch_ahead_limit` for all readers together, so
    /// that many consumers' read-ahead cannot push out of the cache what another fetched
    /// ahead before it is read.
    ahead: HashSet<BlockKey>,
    /// The most blocks `ahead` has held.
    ahead_peak: usize,
    /// Blocks fetched ahead that were pushed out of the cache before anyone read them.
    ahead_evicted_unread: u64,
}

impl BlockCache {
    pub fn new(capacity_bytes: u64) -> Self {
        BlockCache {
            capacity_blocks: (capacity_bytes / BLOCK_SIZE).max(4 * CHUNK_BLOCKS) as usize,
            blocks: HashMap::new(),
            by_use: BTreeMap::new(),
            next_stamp: 0,
            in_flight: HashSet::new(),
            streaks: HashMap::new(),
            ahead: HashSet::new(),
            ahead_peak: 0,
            ahead_evicted_unread: 0,
        }
    }

    fn stamp(&mut self) -> u64 {
        self.next_stamp += 1;
        self.next_stamp
    }

    /// The block, marked as just used.
    pub fn get(&mut self, key: BlockKey) -> Option<Bytes> {
        let stamp = self.stamp();
        let (block, used) = self.blocks.get_mut(&key)?;
        self.ahead.remove(&key);
        self.by_use.remove(used);
        *used = stamp;
        let block = block.clone();
        self.by_use.insert(stamp, key);
        Some(block)
    }

    #[cfg(test)]
    fn contains(&self, key: BlockKey) -> bool {
        self.blocks.contains_key(&key)
    }

    /// Whether the block is neither cached nor being fetched.
    pub fn missing(&self, key: BlockKey) -> bool {
        !self.blocks.contains_key(&key) && !self.in_flight.contains(&key)
    }

    pub fn is_in_flight(&self, key: BlockKey) -> bool {
        self.in_flight.contains(&key)
    }

    pub fn start_fetch(&mut self, key: BlockKey) {
        self.in_flight.insert(key);
    }

    /// A fetch of `key` ahead of its reader: in flight, and counted against the bound
    /// of all readers' read-ahead until it is read (or pushed out, or its fetch fails).
    pub fn start_fetch_ahead(&mut self, key: BlockKey) {
        self.in_flight.insert(key);
        self.ahead.insert(key);
        self.ahead_peak = self.ahead_peak.max(self.ahead.len());
    }

    /// The fetch of `key` ended; `cached`: its block is about to be inserted.
    pub fn end_fetch(&mut self, key: BlockKey, cached: bool) {
        self.in_flight.remove(&key);
        if !cached {
            self.ahead.remove(&key);
        }
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

    pub fn insert(&mut self, key: BlockKey, block: Bytes) {
        if let Some((_, used)) = self.blocks.remove(&key) {
            self.by_use.remove(&used);
        }
        while self.blocks.len() >= self.capacity_blocks {
            let Some((_, oldest)) = self.by_use.pop_first() else {
                break;
            };
            self.blocks.remove(&oldest);
            if self.ahead.remove(&oldest) {
                self.ahead_evicted_unread += 1;
            }
        }
        let stamp = self.stamp();
        self.blocks.insert(key, (block, stamp));
        self.by_use.insert(stamp, key);
    }

    /// Note a read of `key`; true when the segment's reader has just moved on to this
    /// block after `SEQUENTIAL_STREAK - 1` consecutive ones (further reads of the same
    /// block answer false: read-ahead is decided once per block).
    pub fn note_read(&mut self, (segment, index): BlockKey) -> bool {
        let streak = match self.streaks.get(&segment) {
            Some(&(last, _)) if last == index => return false,
            Some(&(last, streak)) if last + 1 == index => streak + 1,
            _ => 1,
        };
        self.streaks.insert(segment, (index, streak));
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
        let gone: Vec<(BlockKey, u64)> = self
            .blocks
            .iter()
            .filter(|((start, _), _)| *start == start_offset)
            .map(|(key, (_, used))| (*key, *used))
            .collect();
        for (key, used) in gone {
            self.blocks.remove(&key);
            self.by_use.remove(&used);
        }
    }
}

/// A GET's body, as it arrives, cut into `block`-byte pieces, each its own buffer (the
/// last shorter at the body's end): each byte is copied once, from the HTTP client's
/// buffers into the piece that keeps it. A piece never shares a buffer with another, so
/// the cache's bound counts what it holds (a slice of one large buffer would keep all of
/// it alive for as long as any one block is cached).
pub async fn collect_blocks<S, E>(mut body: S, block: usize) -> Result<Vec<Bytes>, E>
where
    S: futures::Stream<Item = Result<Bytes, E>> + Unpin,
{
    use futures::StreamExt;
    let mut blocks = Vec::new();
    let mut current: Vec<u8> = Vec::with_capacity(block);
    while let Some(chunk) = body.next().await {
        let chunk = chunk?;
        let mut rest = &chunk[..];
        while !rest.is_empty() {
            let take = (block - current.len()).min(rest.len());
            current.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            if current.len() == block {
                let full = std::mem::replace(&mut current, Vec::with_capacity(block));
                blocks.push(Bytes::from(full));
            }
        }
    }
    if !current.is_empty() {
        blocks.push(Bytes::from(current));
    }
    Ok(blocks)
}

/// Consecutive missing blocks grouped into the runs one GET each fetches: `blocks` in
/// ascending order, a run broken at a gap and at every chunk boundary.
pub fn runs(blocks: &[u64]) -> Vec<std::ops::RangeInclusive<u64>> {
    let mut runs: Vec<std::ops::RangeInclusive<u64>> = Vec::new();
    for &index in blocks {
        match runs.last_mut() {
            Some(run) if *run.end() + 1 == index && index % CHUNK_BLOCKS != 0 => {
                *run = *run.start()..=index;
            }
            _ => runs.push(index..=index),
        }
    }
    runs
}

/// Blocks a run made by filling gaps is widened to, at both ends: readers of queues
/// interleaved in the same span of the log each ask for it shifted a little; widened to
/// the same boundaries, the second asks for blocks already on their way instead of
/// making a small GET of the few its span adds.
pub const DENSE_ALIGN_BLOCKS: u64 = 32;

/// `blocks` (ascending) with each gap of at most `FILL_GAP_BLOCKS` between two of them
/// filled in, and each run so made that is at least `FILL_GAP_BLOCKS` long and had a gap
/// filled widened to `DENSE_ALIGN_BLOCKS` boundaries (the caller drops blocks past the
/// object's end). A run with no gap is one queue's records in a row: widening it would
/// only fetch other queues' records.
pub fn fill_gaps(blocks: &[u64]) -> Vec<u64> {
    // (first, last, whether a gap was filled)
    let mut spans: Vec<(u64, u64, bool)> = Vec::new();
    for &index in blocks {
        match spans.last_mut() {
            Some((_, last, _)) if index <= *last => {}
            Some((_, last, gapped)) if index - *last - 1 <= FILL_GAP_BLOCKS => {
                *gapped |= index > *last + 1;
                *last = index;
            }
            _ => spans.push((index, index, false)),
        }
    }
    let mut filled = Vec::new();
    let mut free_from = 0;
    for (first, last, gapped) in spans {
        let (first, last) = if gapped && last - first + 1 >= FILL_GAP_BLOCKS {
            let aligned_end = (last / DENSE_ALIGN_BLOCKS + 1) * DENSE_ALIGN_BLOCKS - 1;
            (
                (first / DENSE_ALIGN_BLOCKS * DENSE_ALIGN_BLOCKS).max(free_from),
                aligned_end,
            )
        } else {
            (first.max(free_from), last)
        };
        if first <= last {
            filled.extend(first..=last);
            free_from = last + 1;
        }
    }
    filled
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_recently_used_goes_first() {
        let mut cache = BlockCache::new(0);
        let capacity = cache.capacity_blocks as u64;
        for index in 0..capacity {
            cache.insert((0, index), Bytes::from_static(b"x"));
        }
        assert!(cache.get((0, 0)).is_some());
        cache.insert((0, capacity), Bytes::from_static(b"y"));
        assert!(cache.contains((0, 0)), "block 0 was used last but one");
        assert!(
            !cache.contains((0, 1)),
            "block 1 was the least recently used"
        );
        assert_eq!(cache.blocks.len(), cache.by_use.len());
        cache.forget_segment(0);
        assert!(cache.blocks.is_empty() && cache.by_use.is_empty());
    }

    #[test]
    fn runs_break_at_gaps_and_chunks() {
        let blocks = [1, 2, 3, 5, CHUNK_BLOCKS - 1, CHUNK_BLOCKS, CHUNK_BLOCKS + 1];
        assert_eq!(
            runs(&blocks),
            vec![
                1..=3,
                5..=5,
                CHUNK_BLOCKS - 1..=CHUNK_BLOCKS - 1,
                CHUNK_BLOCKS..=CHUNK_BLOCKS + 1
            ]
        );
    }

    #[test]
    fn small_gaps_are_filled_large_ones_kept() {
        let far = 3 + FILL_GAP_BLOCKS + 2;
        assert_eq!(fill_gaps(&[1, 3, far]), vec![1, 2, 3, far]);
        let dense: Vec<u64> = (40..60).step_by(2).collect();
        assert_eq!(fill_gaps(&dense), (32..64).collect::<Vec<_>>(), "widened");
        let solid: Vec<u64> = (40..70).collect();
        assert_eq!(fill_gaps(&solid), solid, "one queue's records in a row");
        assert_eq!(
            fill_gaps(&[0, FILL_GAP_BLOCKS + 1]),
            (0..DENSE_ALIGN_BLOCKS).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_body_is_cut_into_blocks_whatever_its_chunks() {
        let body: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
        let chunks: Vec<Result<Bytes, ()>> = [0..1, 1..4000, 4000..4096, 4096..9999, 9999..10_000]
            .into_iter()
            .map(|range| Ok(Bytes::copy_from_slice(&body[range])))
            .collect();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let blocks = runtime
            .block_on(collect_blocks(futures::stream::iter(chunks), 4096))
            .unwrap();
        let lengths: Vec<usize> = blocks.iter().map(Bytes::len).collect();
        assert_eq!(lengths, vec![4096, 4096, 10_000 - 8192]);
        assert_eq!(blocks.concat(), body);
        let failed: Vec<Result<Bytes, &str>> = vec![Ok(Bytes::from_static(b"x")), Err("cut")];
        let outcome = runtime.block_on(collect_blocks(futures::stream::iter(failed), 4096));
        assert_eq!(
            outcome,
            Err("cut"),
            "a body cut short is an error, not fewer blocks"
        );
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
        cache.insert((1, 0), Bytes::from_static(b"x"));
        assert_eq!(cache.ahead_room(), 0, "fetched but not read yet");
        assert!(cache.get((1, 0)).is_some());
        assert_eq!(cache.ahead_room(), 1);
        cache.end_fetch((2, 0), false);
        assert_eq!(cache.ahead_room(), 2);
        // A block pushed out before it was read is counted and leaves the bound.
        cache.end_fetch((1, 1), true);
        cache.insert((1, 1), Bytes::from_static(b"x"));
        for index in 0..cache.capacity_blocks as u64 {
            cache.insert((9, index), Bytes::from_static(b"y"));
        }
        let (unread, peak, limit_now, evicted_unread) = cache.ahead_stats();
        assert_eq!((peak, limit_now, evicted_unread), (limit, limit, 1));
        assert_eq!(unread, limit - 3);
        cache.forget_segment(1);
        cache.forget_segment(2);
        assert_eq!(cache.ahead_room(), limit);
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
