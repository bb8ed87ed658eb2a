//! Ranged reads of evicted segments' objects through the block cache (positions here
//! are the object's; `mapped_reads.rs` maps commit-log positions to them): a read fetches the missing
//! blocks it covers in one GET per run of consecutive blocks; a consumer's next records,
//! named by its queue (`prefetch`), are fetched in the background while it decodes the
//! current ones; a reader going through a segment block after block gets whole chunks
//! ahead of it.
//!
//! Nothing read here is trusted: the commit log decodes every record (CRC included) as it
//! does from a local segment, and a GET shorter than the object's recorded size says is
//! an error naming the object, so a changed or truncated object is reported, never served.

use std::ops::RangeInclusive;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;

use super::block_cache::{Block, BlockKey, FetchedBlock, BLOCK_SIZE, CHUNK_BLOCKS};
use super::block_runs::{fill_gaps, runs};
use super::object_client::Arrival;
use super::remote_log::RemoteLog;
use super::state::TieredSegment;
use crate::error::{Error, Result};

/// Chunks fetched ahead of a sequential reader, beyond the one it is in.
const READ_AHEAD_CHUNKS: u64 = 1;

impl RemoteLog {
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
            return self.read_in_block(segment, position, length);
        }
        let blocks = self.blocks(segment, first..=last)?;
        let mut bytes = Vec::with_capacity((end - position) as usize);
        for (index, block) in (first..=last).zip(&blocks) {
            let block_start = index * BLOCK_SIZE;
            let from = position.max(block_start) - block_start;
            let to = end.min(block_start + block.len() as u64) - block_start;
            block.extend_into(from as usize, to as usize, &mut bytes);
        }
        Ok(Bytes::from(bytes))
    }

    /// Up to `length` bytes at `position` of `segment`, no further than the end of the
    /// block holding `position`: a slice of the cached block, never a copy (a record
    /// read from a block's tail would otherwise be copied with the next block's head).
    /// Empty only at the segment's end.
    ///
    /// The read counts as a read of every block `length` reaches, as `read_segment`'s
    /// does: the sequential-reader test (`BlockCache::note_read`) sees the same reads
    /// whichever is used, so a queue's reader that steps back into a block after its
    /// window reached the next one is not taken for a reader of the whole span.
    pub fn read_in_block(
        &self,
        segment: &TieredSegment,
        position: u64,
        length: usize,
    ) -> Result<Bytes> {
        self.read_in_block_up_to(segment, position, length, length)
    }

    /// `read_in_block`, read as far as `length` reaches, giving up to `up_to` bytes (no
    /// further than the end of the block holding `position`): a reader
    /// of consecutive records keeps what its first read gave and reads the next records
    /// there, at no cost to the reads the cache notes.
    pub fn read_in_block_up_to(
        &self,
        segment: &TieredSegment,
        position: u64,
        length: usize,
        up_to: usize,
    ) -> Result<Bytes> {
        if position >= segment.size {
            return Ok(Bytes::new());
        }
        let index = position / BLOCK_SIZE;
        let reach = ((position + length.max(1) as u64).min(segment.size) - 1) / BLOCK_SIZE;
        let block = match self.cached_block(segment, index..=reach) {
            Some(block) => block,
            None => self
                .blocks(segment, index..=reach)?
                .into_iter()
                .next()
                .unwrap_or_default(),
        };
        let from = ((position - index * BLOCK_SIZE) as usize).min(block.len());
        Ok(block.slice(from, from.saturating_add(up_to.max(length))))
    }

    /// The first block of `window` when all of `window`'s blocks are cached (noting the
    /// reads, and starting read-ahead when they move a sequential reader on): the path of
    /// nearly every record read, one lock and a lookup per block, with none of `blocks`'
    /// bookkeeping of misses.
    fn cached_block(&self, segment: &TieredSegment, window: RangeInclusive<u64>) -> Option<Block> {
        let start = segment.start_offset;
        let (first, moved_on) = {
            let mut cache = self.cache.0.lock().expect("block cache lock");
            let first = cache.get((start, *window.start()))?;
            if *window.end() > *window.start() && cache.get((start, *window.end())).is_none() {
                return None;
            }
            let mut moved_on = false;
            for index in window.clone() {
                moved_on |= cache.note_read((start, index));
            }
            (first, moved_on)
        };
        self.reads.cache_hits.fetch_add(1, Ordering::Relaxed);
        if moved_on {
            self.read_ahead(segment, *window.end());
        }
        Some(first)
    }

    /// The blocks `wanted` of `segment`: cached ones at once, missing ones fetched here
    /// (one GET per run), ones another reader is fetching waited for.
    fn blocks(&self, segment: &TieredSegment, wanted: RangeInclusive<u64>) -> Result<Vec<Block>> {
        let start_offset = segment.start_offset;
        let first = *wanted.start();
        let mut found: Vec<Option<Block>> = vec![None; wanted.clone().count()];
        let mut moved_on = false;
        loop {
            let mine: Vec<u64>;
            {
                let (lock, fetched) = &*self.cache;
                let mut cache = lock.lock().expect("block cache lock");
                loop {
                    for (slot, index) in found.iter_mut().zip(wanted.clone()) {
                        if slot.is_none() {
                            *slot = cache.get((start_offset, index));
                            if slot.is_some() {
                                self.reads.cache_hits.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                    if found.iter().all(Option::is_some) {
                        mine = Vec::new();
                        break;
                    }
                    let waiting = wanted.clone().zip(&found).any(|(index, slot)| {
                        slot.is_none() && cache.is_in_flight((start_offset, index))
                    });
                    let missing: Vec<u64> = wanted
                        .clone()
                        .zip(&found)
                        .filter(|(index, slot)| {
                            slot.is_none() && cache.missing((start_offset, *index))
                        })
                        .map(|(index, _)| index)
                        .collect();
                    if !missing.is_empty() {
                        for &index in &missing {
                            cache.start_fetch((start_offset, index));
                        }
                        mine = missing;
                        break;
                    }
                    if waiting {
                        cache = fetched.wait(cache).expect("block cache lock");
                    }
                }
                if !moved_on {
                    for index in wanted.clone() {
                        moved_on |= cache.note_read((start_offset, index));
                    }
                }
            }
            if mine.is_empty() {
                break;
            }
            let mut failure = None;
            for run in runs(&mine) {
                match self.fetch_run(segment, run.clone()) {
                    Ok(blocks) => {
                        for (index, block) in run.zip(blocks) {
                            found[(index - first) as usize] = Some(block.block);
                        }
                    }
                    Err(error) => failure = failure.or(Some(error)),
                }
            }
            if let Some(error) = failure {
                return Err(error);
            }
        }
        if moved_on {
            self.read_ahead(segment, *wanted.end());
        }
        Ok(found.into_iter().map(Option::unwrap_or_default).collect())
    }

    /// One GET for the blocks `run` (marked in flight by the caller), cached and
    /// returned; whatever the outcome the blocks are no longer in flight.
    fn fetch_run(
        &self,
        segment: &TieredSegment,
        run: RangeInclusive<u64>,
    ) -> Result<Vec<FetchedBlock>> {
        let (start, end) = run_bytes(segment, &run);
        let object = self.client.location().segment(segment.start_offset);
        let outcome = self.counted_get_blocks(&object, start..end, (segment.size, segment.crc32));
        let blocks = outcome
            .as_ref()
            .ok()
            .filter(|blocks| whole(blocks, start, end));
        settle(
            &self.cache,
            segment.start_offset,
            &run,
            blocks.map(Vec::as_slice),
        );
        let got = outcome?;
        if whole(&got, start, end) {
            return Ok(got);
        }
        Err(Error::tier_object_changed(
            self.client.location().describe(&object),
            start,
            format!(
                "it is shorter than the {} bytes uploaded (a read of {start}..{end} gave {} \
                 bytes)",
                segment.size,
                fetched_len(&got)
            ),
        ))
    }

    /// Fetch the blocks `wanted` (ascending) of `segment` that are neither cached nor
    /// being fetched, in the background, one GET per run; at most `budget` blocks are
    /// taken from `wanted` (cached ones count: they are read ahead too), and the budget
    /// is reduced by as many. Each is `(block, named)`: a named block covers a record a
    /// reader asked for ahead and counts against the bound of all readers' read-ahead
    /// (`BlockCache::ahead_room`; none is fetched past it); an unnamed one only fills a
    /// gap between named ones (at most `FILL_GAP_BLOCKS`) to make one GET of two. A failed
    /// fetch is dropped: the reader that wants the block fetches it itself and sees the
    /// error.
    fn fetch_in_background(
        &self,
        segment: &TieredSegment,
        wanted: impl Iterator<Item = (u64, bool)>,
        budget: &mut usize,
    ) {
        let blocks = segment.size.div_ceil(BLOCK_SIZE);
        let mine: Vec<u64> = {
            let mut cache = self.cache.0.lock().expect("block cache lock");
            let mut mine = Vec::new();
            for (index, named) in wanted.take_while(|&(index, _)| index < blocks) {
                if *budget == 0 {
                    break;
                }
                *budget -= 1;
                let key: BlockKey = (segment.start_offset, index);
                if !cache.missing(key) {
                    continue;
                }
                if !named {
                    cache.start_fetch_along(key);
                } else if cache.ahead_room() > 0 {
                    cache.start_fetch_ahead(key);
                } else {
                    break;
                }
                mine.push(index);
            }
            mine
        };
        let object = self.client.location().segment(segment.start_offset);
        for run in runs(&mine) {
            let (start, end) = run_bytes(segment, &run);
            let cache = Arc::clone(&self.cache);
            let reads = Arc::clone(&self.reads);
            let start_offset = segment.start_offset;
            let recorded = (segment.size, segment.crc32);
            // The first block of the run not settled yet, and whether what arrived so far
            // was whole blocks where they belong.
            let mut next = *run.start();
            let mut sound = true;
            self.client.spawn_get_recorded_blocks(
                object.clone(),
                start..end,
                recorded,
                BLOCK_SIZE as usize,
                move |arrival| match arrival {
                    Arrival::Blocks(blocks) => {
                        reads
                            .bytes_fetched
                            .fetch_add(fetched_len(&blocks), Ordering::Relaxed);
                        sound &= fits(&blocks, next, *run.end(), end);
                        if sound {
                            let upto = next + blocks.len() as u64 - 1;
                            settle(&cache, start_offset, &(next..=upto), Some(&blocks));
                            next = upto + 1;
                        }
                    }
                    Arrival::End(whole) => {
                        if whole && sound && next > *run.end() {
                            reads.range_reads.fetch_add(1, Ordering::Relaxed);
                        } else if next <= *run.end() {
                            settle(&cache, start_offset, &(next..=*run.end()), None);
                        }
                    }
                },
            );
        }
    }

    fn fetch_ahead_limit(&self) -> usize {
        let cache = self.cache.0.lock().expect("block cache lock");
        cache.fetch_ahead_limit()
    }

    /// The bytes all readers together may have fetched ahead and not read yet: what the
    /// readers' hints share (`store/read_ahead.rs`).
    pub fn read_ahead_limit_bytes(&self) -> u64 {
        self.fetch_ahead_limit() as u64 * BLOCK_SIZE
    }

    /// The bytes that may still be fetched ahead now, for all readers together: a hint
    /// past them would be dropped, and its records fetched when read, block by block.
    pub fn read_ahead_room_bytes(&self) -> u64 {
        let cache = self.cache.0.lock().expect("block cache lock");
        cache.ahead_room() as u64 * BLOCK_SIZE
    }

    /// A reader going through `segment` block after block will want the rest of its
    /// chunk and the chunks after it.
    ///
    /// Not in a queue-grouped object: there the blocks after a queue's records are the
    /// next queue's, and its reader's own next records are what its queue names
    /// (`prefetch`), back to back.
    fn read_ahead(&self, segment: &TieredSegment, index: u64) {
        if segment.segment_size.is_some() {
            return;
        }
        let blocks = segment.size.div_ceil(BLOCK_SIZE);
        let until = ((index / CHUNK_BLOCKS + 1 + READ_AHEAD_CHUNKS) * CHUNK_BLOCKS).min(blocks);
        let mut budget = self.fetch_ahead_limit();
        let wanted = (index + 1..until).map(|index| (index, true));
        self.fetch_in_background(segment, wanted, &mut budget);
    }

    /// Records that a reader will read soon, as (commit-log offset, size): their blocks
    /// (in their objects, `mapped_reads.rs`) are fetched in the background, so that the
    /// fetch overlaps the reader's work and records far apart (a queue's records among
    /// many other queues' in an object not grouped by queue) cost only the blocks
    /// covering them; gaps of up to `FILL_GAP_BLOCKS` are fetched with them. All the
    /// blocks one call names count against one budget, half the cache (see
    /// `BlockCache::fetch_ahead_limit`); records past it are fetched when read.
    pub fn prefetch(&self, records: &[(u64, u32)]) {
        let mut budget = self.fetch_ahead_limit();
        let mut segment: Option<TieredSegment> = None;
        let mut wanted: Vec<u64> = Vec::new();
        for (current, position, size) in self.map_records(records) {
            if segment.is_some_and(|s| s.start_offset != current.start_offset) {
                if let Some(previous) = segment.take() {
                    wanted.sort_unstable();
                    wanted.dedup();
                    self.fetch_in_background(&previous, named(&wanted), &mut budget);
                    wanted.clear();
                }
            }
            segment = Some(current);
            let end = (position + size.max(1)).min(current.size);
            for index in position / BLOCK_SIZE..=(end.max(position + 1) - 1) / BLOCK_SIZE {
                if wanted.last() != Some(&index) {
                    wanted.push(index);
                }
            }
        }
        if let Some(last) = segment {
            wanted.sort_unstable();
            wanted.dedup();
            self.fetch_in_background(&last, named(&wanted), &mut budget);
        }
    }
}

impl RemoteLog {
    /// Records (commit-log offset, size, ascending) that every reader of their queue has
    /// read, and the commit-log offset of the queue's next record (the slowest reader's
    /// next, when known): the blocks of queue-grouped objects that those records touch,
    /// and that were fetched ahead, leave the cache now (`BlockCache::release_read`),
    /// except the block holding the next record (or, not knowing it, the block right
    /// after the records). A queue's records lie back to back in a grouped object, so
    /// the blocks before its next record hold only records it has read, except at the
    /// ends of its records in a segment, where a block holds another queue's first or
    /// last records: that queue's reader, should it still want the block, fetches it
    /// again. Not in an object without a footer: there a queue's records share blocks
    /// with every other queue's.
    pub fn release_read(&self, records: &[(u64, u32)], next: Option<u64>) {
        let mapped = self.map_records(records);
        let kept: Option<BlockKey> = match next {
            Some(next) => self.segment_holding(next).and_then(|segment| {
                let layout = self.layout(&segment).ok()?;
                let (at, _) = layout.map(next - segment.start_offset)?;
                Some((segment.start_offset, at / BLOCK_SIZE))
            }),
            None => mapped
                .last()
                .map(|(segment, at, length)| (segment.start_offset, (at + length) / BLOCK_SIZE)),
        };
        let mut cache = self.cache.0.lock().expect("block cache lock");
        for (segment, at, length) in mapped {
            if segment.segment_size.is_none() {
                continue;
            }
            let start = segment.start_offset;
            let touched = at / BLOCK_SIZE..(at + length).div_ceil(BLOCK_SIZE);
            match kept {
                Some((in_segment, index)) if in_segment == start && touched.contains(&index) => {
                    cache.release_read(start, touched.start..index);
                    cache.release_read(start, index + 1..touched.end);
                }
                _ => {
                    cache.release_read(start, touched);
                }
            }
        }
    }
}

/// The blocks `wanted` (ascending) with their gaps filled (`fill_gaps`), each marked
/// whether it is one of `wanted`.
fn named(wanted: &[u64]) -> impl Iterator<Item = (u64, bool)> + '_ {
    fill_gaps(wanted)
        .into_iter()
        .map(move |index| (index, wanted.binary_search(&index).is_ok()))
}

/// The bytes of `segment` that the blocks `run` hold.
fn run_bytes(segment: &TieredSegment, run: &RangeInclusive<u64>) -> (u64, u64) {
    let start = run.start() * BLOCK_SIZE;
    let end = ((run.end() + 1) * BLOCK_SIZE).min(segment.size);
    (start, end)
}

/// Bytes in fetched blocks.
fn fetched_len(blocks: &[FetchedBlock]) -> u64 {
    blocks.iter().map(|block| block.len() as u64).sum()
}

/// Whether `blocks` hold all of `start..end` (a GET answers short when the object is).
fn whole(blocks: &[FetchedBlock], start: u64, end: u64) -> bool {
    fetched_len(blocks) == end - start
}

/// Whether `blocks`, arrived for the blocks from `first` on of a run ending at block
/// `last` and byte `end` of the object, are whole blocks of it: as many as the run has
/// left at most, each as long as its place holds (the last one at `end` shorter).
/// Anything else is not cached.
fn fits(blocks: &[FetchedBlock], first: u64, last: u64, end: u64) -> bool {
    !blocks.is_empty()
        && first + blocks.len() as u64 - 1 <= last
        && blocks.iter().zip(first..).all(|(block, index)| {
            let place = index * BLOCK_SIZE;
            block.len() as u64 == ((index + 1) * BLOCK_SIZE).min(end) - place
        })
}

/// The end of a fetch of `run` (or of the part of it that `blocks` are): its blocks
/// cached when it succeeded, no longer in flight either way, and everyone waiting for a
/// block told.
fn settle(
    cache: &super::remote_log::SharedCache,
    start_offset: u64,
    run: &RangeInclusive<u64>,
    blocks: Option<&[FetchedBlock]>,
) {
    let (lock, fetched) = &**cache;
    let mut cache = lock.lock().expect("block cache lock");
    for (i, index) in run.clone().enumerate() {
        let ahead = cache.end_fetch((start_offset, index), blocks.is_some());
        if let Some(blocks) = blocks {
            cache.insert_fetched((start_offset, index), blocks[i].clone(), ahead);
        }
    }
    fetched.notify_all();
}
