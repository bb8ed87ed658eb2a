//! Which GETs fetch the blocks a reader is missing: consecutive blocks grouped into runs
//! of at most `MAX_RUN_BLOCKS`, and, for background fetches, small gaps between wanted
//! blocks filled in so that one GET replaces two.

/// Blocks between two wanted ones that a background fetch takes too, to make one GET of
/// two: up to 1 MiB, about what a GET's fixed cost is worth in bytes. A consumer of one
/// queue among a few interleaved ones so fetches the span whole in large GETs; one whose
/// records are far apart fetches only the blocks covering them.
pub const FILL_GAP_BLOCKS: u64 = 16;

/// The most blocks one GET fetches (16 MiB). A GET costs versitygw (the loopback S3
/// server of `bench tier`) about 0.45 ms of CPU whatever its length, as much as 2 MB of
/// body: runs were cut at every 8 MiB boundary of the object, and a queue's records
/// crossing one by a block or two cost a GET of a block (8 of the 32 GETs of `bench
/// tier --size quick`'s one-queue read were 64 KiB). The read-ahead bound (half the read
/// cache, `BlockCache::fetch_ahead_limit`) keeps what all readers have in flight within
/// the cache whatever the GETs' size.
pub const MAX_RUN_BLOCKS: u64 = 256;

/// Consecutive missing blocks grouped into the runs one GET each fetches: `blocks` in
/// ascending order, a run broken at a gap, and one longer than `MAX_RUN_BLOCKS` cut into
/// as few runs of (nearly) equal length as fit, not into full ones and a remnant.
pub fn runs(blocks: &[u64]) -> Vec<std::ops::RangeInclusive<u64>> {
    let mut consecutive: Vec<(u64, u64)> = Vec::new();
    for &index in blocks {
        match consecutive.last_mut() {
            Some((_, last)) if *last + 1 == index => *last = index,
            _ => consecutive.push((index, index)),
        }
    }
    let mut runs = Vec::with_capacity(consecutive.len());
    for (first, last) in consecutive {
        let length = last - first + 1;
        let pieces = length.div_ceil(MAX_RUN_BLOCKS);
        let mut start = first;
        for piece in 0..pieces {
            // The first `length % pieces` runs take one block more.
            let take = length / pieces + u64::from(piece < length % pieces);
            runs.push(start..=start + take - 1);
            start += take;
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
    fn runs_break_at_gaps_not_at_fixed_boundaries() {
        let blocks = [1, 2, 3, 5, 127, 128, 129];
        assert_eq!(runs(&blocks), vec![1..=3, 5..=5, 127..=129]);
        assert!(runs(&[]).is_empty());
    }

    #[test]
    fn a_long_run_is_cut_into_even_runs_of_at_most_the_limit() {
        let whole: Vec<u64> = (10..10 + MAX_RUN_BLOCKS).collect();
        assert_eq!(runs(&whole), vec![10..=9 + MAX_RUN_BLOCKS]);
        // One block more than the limit: two runs of about half, not the limit and one.
        let over: Vec<u64> = (0..MAX_RUN_BLOCKS + 1).collect();
        let half = MAX_RUN_BLOCKS / 2;
        assert_eq!(runs(&over), vec![0..=half, half + 1..=MAX_RUN_BLOCKS]);
        let long: Vec<u64> = (0..3 * MAX_RUN_BLOCKS - 1).collect();
        let got = runs(&long);
        assert_eq!(got.len(), 3);
        assert_eq!(got.first().map(|run| *run.start()), Some(0));
        assert_eq!(
            got.last().map(|run| *run.end()),
            Some(3 * MAX_RUN_BLOCKS - 2)
        );
        for pair in got.windows(2) {
            assert_eq!(*pair[0].end() + 1, *pair[1].start(), "{got:?}");
        }
        for run in &got {
            let length = run.end() - run.start() + 1;
            assert!(
                length <= MAX_RUN_BLOCKS && length + 1 >= MAX_RUN_BLOCKS,
                "{got:?}"
            );
        }
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
