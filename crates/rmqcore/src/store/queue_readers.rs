//! Who is reading one queue from the tier, as far as pulls tell: each reader's place is
//! where its last pull started, and the records before the slowest reader's place have
//! been read by every reader (what lets the tier drop them from its cache,
//! `store/read_ahead.rs`).
//!
//! A pull names no reader, so a pull continues the reader whose place is the nearest
//! before it (a reader goes forward); a pull at or before every place is a new reader
//! (two readers starting at one offset are two; a reader pulling the same offset again
//! leaves a second place there, which holds the others back until it goes stale). A
//! reader that has not pulled for `READING_LATELY` is gone: its place no longer holds
//! the others back. Taking one reader's pull for another's can only leave a place behind
//! (until it goes stale), never put one ahead of where a reader is, except for a new
//! reader starting ahead of a slower one, which takes its place: that reader's next
//! records are then fetched again, when read.

use std::time::{Duration, Instant};

/// A reader that has not pulled for this long is gone.
pub(super) const READING_LATELY: Duration = Duration::from_secs(1);
/// Readers of one queue remembered; past this the one that pulled least lately goes.
const MAX_READERS: usize = 16;

#[derive(Debug, Clone, Default)]
pub(super) struct QueueReaders {
    /// (where the reader's last pull started, when).
    places: Vec<(i64, Instant)>,
}

impl QueueReaders {
    /// A pull starting at queue offset `offset` at `now`: it continues the reader whose
    /// place is the nearest before `offset`, or is a new reader.
    pub(super) fn pulled(&mut self, offset: i64, now: Instant) {
        self.places
            .retain(|(_, when)| now.duration_since(*when) < READING_LATELY);
        let continued = self
            .places
            .iter_mut()
            .filter(|(place, _)| *place < offset)
            .max_by_key(|(place, _)| *place);
        match continued {
            Some(reader) => *reader = (offset, now),
            None => {
                if self.places.len() >= MAX_READERS {
                    let least_lately = (0..self.places.len())
                        .min_by_key(|&i| self.places[i].1)
                        .unwrap_or(0);
                    self.places.swap_remove(least_lately);
                }
                self.places.push((offset, now));
            }
        }
    }

    /// The first queue offset that some reader pulling lately has not read yet.
    pub(super) fn slowest(&self, now: Instant) -> Option<i64> {
        self.places
            .iter()
            .filter(|(_, when)| now.duration_since(*when) < READING_LATELY)
            .map(|(place, _)| *place)
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lone_reader_has_read_what_lies_before_its_pull() {
        let now = Instant::now();
        let mut readers = QueueReaders::default();
        readers.pulled(0, now);
        readers.pulled(32, now);
        readers.pulled(64, now);
        assert_eq!(readers.slowest(now), Some(64));
        assert_eq!(readers.places.len(), 1, "one reader going forward");
    }

    #[test]
    fn two_readers_hold_back_to_the_slower_one() {
        let now = Instant::now();
        let mut readers = QueueReaders::default();
        readers.pulled(1000, now);
        readers.pulled(0, now);
        assert_eq!(readers.slowest(now), Some(0));
        readers.pulled(1032, now);
        assert_eq!(readers.slowest(now), Some(0), "the fast one moved on alone");
        readers.pulled(32, now);
        readers.pulled(64, now);
        assert_eq!(readers.slowest(now), Some(64));
        assert_eq!(readers.places.len(), 2);
    }

    #[test]
    fn two_readers_starting_together_are_two() {
        let now = Instant::now();
        let mut readers = QueueReaders::default();
        readers.pulled(0, now);
        readers.pulled(0, now);
        for offset in (32..=256).step_by(32) {
            readers.pulled(offset, now);
        }
        assert_eq!(
            readers.slowest(now),
            Some(0),
            "the second one has not moved"
        );
        readers.pulled(32, now);
        assert_eq!(readers.slowest(now), Some(32));
    }

    #[test]
    fn a_reader_that_stopped_pulling_no_longer_holds_the_others_back() {
        let then = Instant::now();
        let mut readers = QueueReaders::default();
        readers.pulled(0, then);
        readers.pulled(5000, then);
        let later = then + READING_LATELY;
        assert_eq!(readers.slowest(later), None);
        readers.pulled(5032, later);
        assert_eq!(readers.slowest(later), Some(5032));
        assert_eq!(readers.places.len(), 1);
    }
}
