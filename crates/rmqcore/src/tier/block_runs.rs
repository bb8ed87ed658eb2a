//! Which GETs fetch the blocks a reader is missing: consecutive blocks grouped into runs
//! of at most one chunk, and, for background fetches, small gaps between wanted blocks
//! filled in so that one GET replaces two.

use super::block_cache::CHUNK_BLOCKS;

/// Blocks between two wanted ones that a background fetch takes too, to make one GET of
/// two: up to 1 MiB, about what a GET's fixed cost is worth in bytes. A consumer of one
/// queue among a few interleaved ones so fetches the span whole in large GETs; one whose
/// records are far apart fetches only the blocks covering them.
pub const FILL_GAP_BLOCKS: u64 = 16;

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
}
