//! Which messages of one queue one consumer group holds invisible, and until when.
//!
//! RocketMQ 5's consumers do not own queues: they *receive* messages, which stay
//! invisible to the rest of the group for an invisible duration, and *ack* them. A
//! message not acked in time is delivered again with its attempt counted.
//!
//! Every offset in `[low, next)` is either acked or leased; `low` is the group's
//! committed offset (everything below it is acked), `next` the first offset never handed
//! out. A queue whose leased messages carry a message group (FIFO) hands out nothing more
//! until they are acked or due again, so a message group is consumed in order.
//!
//! Deadlines are kept in ordered sets beside the leases, so finding what is due, or
//! whether an ordered message blocks the queue, never walks every lease.

use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    pub attempt: i32,
    pub deadline_ms: i64,
    pub ordered: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueLeases {
    pub(crate) low: i64,
    pub(crate) next: i64,
    pub(crate) acked: BTreeSet<i64>,
    pub(crate) leased: BTreeMap<i64, Lease>,
    /// (deadline, offset) of every lease.
    deadlines: BTreeSet<(i64, i64)>,
    /// (deadline, offset) of the ordered leases only.
    ordered: BTreeSet<(i64, i64)>,
}

impl QueueLeases {
    pub fn new(low: i64) -> Self {
        QueueLeases {
            low,
            next: low,
            ..Default::default()
        }
    }

    /// The state as saved: `low`, `next`, the acked offsets above `low`, the leases.
    pub(crate) fn restored(
        low: i64,
        next: i64,
        acked: BTreeSet<i64>,
        leased: BTreeMap<i64, Lease>,
    ) -> Self {
        let mut queue = QueueLeases {
            low,
            next,
            acked,
            ..Default::default()
        };
        for (offset, lease) in leased {
            queue.insert(offset, lease);
        }
        queue
    }

    pub fn low(&self) -> i64 {
        self.low
    }

    pub fn next(&self) -> i64 {
        self.next
    }

    pub fn lease_of(&self, offset: i64) -> Option<Lease> {
        self.leased.get(&offset).copied()
    }

    pub fn is_leased(&self, offset: i64) -> bool {
        self.leased.contains_key(&offset)
    }

    /// An ordered message is out and not yet due: the queue waits for its ack.
    pub fn blocked(&self, now_ms: i64) -> bool {
        self.ordered
            .last()
            .is_some_and(|&(deadline, _)| deadline > now_ms)
    }

    /// Leased messages whose invisible time is over, lowest offset first.
    pub fn due(&self, now_ms: i64) -> Vec<(i64, Lease)> {
        let mut due: Vec<(i64, Lease)> = self
            .deadlines
            .range(..=(now_ms, i64::MAX))
            .map(|&(_, offset)| (offset, self.leased[&offset]))
            .collect();
        due.sort_unstable_by_key(|&(offset, _)| offset);
        due
    }

    fn insert(&mut self, offset: i64, lease: Lease) {
        self.remove(offset);
        self.deadlines.insert((lease.deadline_ms, offset));
        if lease.ordered {
            self.ordered.insert((lease.deadline_ms, offset));
        }
        self.leased.insert(offset, lease);
    }

    fn remove(&mut self, offset: i64) -> Option<Lease> {
        let lease = self.leased.remove(&offset)?;
        self.deadlines.remove(&(lease.deadline_ms, offset));
        self.ordered.remove(&(lease.deadline_ms, offset));
        Some(lease)
    }

    pub fn lease(&mut self, offset: i64, attempt: i32, deadline_ms: i64, ordered: bool) {
        self.insert(
            offset,
            Lease {
                attempt,
                deadline_ms,
                ordered,
            },
        );
        self.next = self.next.max(offset + 1);
    }

    /// Ack the delivery `attempt` of `offset`; false when that delivery is not the one
    /// out (acked already, or delivered again since).
    pub fn ack(&mut self, offset: i64, attempt: i32) -> bool {
        if self.lease_of(offset).map(|lease| lease.attempt) != Some(attempt) {
            return false;
        }
        self.settle(offset);
        true
    }

    /// Done with `offset` (acked, filtered out, dead-lettered or expired).
    pub fn settle(&mut self, offset: i64) {
        self.remove(offset);
        if offset >= self.low {
            self.acked.insert(offset);
        }
        self.next = self.next.max(offset + 1);
        self.advance_low();
    }

    fn advance_low(&mut self) {
        while self.acked.remove(&self.low) {
            self.low += 1;
        }
    }

    /// Messages below `offset` are gone (retention): nothing there to deliver.
    pub fn skip_to(&mut self, offset: i64) {
        if offset <= self.low {
            return;
        }
        self.acked = self.acked.split_off(&offset);
        let gone: Vec<i64> = self.leased.range(..offset).map(|(&o, _)| o).collect();
        for old in gone {
            self.remove(old);
        }
        self.low = offset;
        self.next = self.next.max(offset);
        self.advance_low();
    }

    /// Messages `from..to` were lost with a tier object: nothing there to deliver, and
    /// the group's position moves past them, as RocketMQ's broker corrects a consumer
    /// offset that no longer exists. Leases below `from` stay (their messages may be
    /// readable), so this settles the range rather than skipping to `to`.
    pub fn pass_lost(&mut self, from: i64, to: i64) {
        if from <= self.low {
            self.skip_to(to);
            return;
        }
        for offset in from..to {
            self.settle(offset);
        }
    }

    /// A new invisible deadline for the delivery `attempt` of `offset`.
    pub fn extend(&mut self, offset: i64, attempt: i32, deadline_ms: i64) -> bool {
        match self.lease_of(offset) {
            Some(lease) if lease.attempt == attempt => {
                self.insert(
                    offset,
                    Lease {
                        deadline_ms,
                        ..lease
                    },
                );
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// The plain model the sets must agree with: what `leases.py` kept (every lease in a
    /// map, scanned whole for each question).
    #[derive(Default)]
    struct Model {
        low: i64,
        next: i64,
        acked: BTreeSet<i64>,
        leased: HashMap<i64, Lease>,
    }

    impl Model {
        fn settle(&mut self, offset: i64) {
            self.leased.remove(&offset);
            if offset >= self.low {
                self.acked.insert(offset);
            }
            self.next = self.next.max(offset + 1);
            while self.acked.remove(&self.low) {
                self.low += 1;
            }
        }
        fn blocked(&self, now: i64) -> bool {
            self.leased
                .values()
                .any(|l| l.ordered && l.deadline_ms > now)
        }
        fn due(&self, now: i64) -> Vec<(i64, Lease)> {
            let mut due: Vec<_> = self
                .leased
                .iter()
                .filter(|(_, l)| l.deadline_ms <= now)
                .map(|(&o, &l)| (o, l))
                .collect();
            due.sort_unstable_by_key(|&(o, _)| o);
            due
        }
    }

    /// A small deterministic generator (xorshift): the sequences are reproducible.
    struct Steps(u64);
    impl Steps {
        fn below(&mut self, n: u64) -> i64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n) as i64
        }
    }

    #[test]
    fn random_operations_agree_with_the_plain_model() {
        for seed in 1..200u64 {
            let mut steps = Steps(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let mut queue = QueueLeases::new(0);
            let mut model = Model::default();
            for _ in 0..300 {
                let now = steps.below(100);
                let offset = steps.below(40);
                match steps.below(6) {
                    0 | 1 => {
                        let lease = Lease {
                            attempt: steps.below(3) as i32 + 1,
                            deadline_ms: steps.below(100),
                            ordered: steps.below(4) == 0,
                        };
                        if offset >= model.low {
                            queue.lease(offset, lease.attempt, lease.deadline_ms, lease.ordered);
                            model.leased.insert(offset, lease);
                            model.next = model.next.max(offset + 1);
                        }
                    }
                    2 => {
                        let attempt = steps.below(3) as i32 + 1;
                        let expected =
                            model.leased.get(&offset).map(|l| l.attempt) == Some(attempt);
                        if expected {
                            model.settle(offset);
                        }
                        assert_eq!(queue.ack(offset, attempt), expected);
                    }
                    3 => {
                        queue.settle(offset);
                        model.settle(offset);
                    }
                    4 => {
                        let attempt = steps.below(3) as i32 + 1;
                        let deadline = steps.below(100);
                        let expected = match model.leased.get_mut(&offset) {
                            Some(l) if l.attempt == attempt => {
                                l.deadline_ms = deadline;
                                true
                            }
                            _ => false,
                        };
                        assert_eq!(queue.extend(offset, attempt, deadline), expected);
                    }
                    _ => {
                        let to = steps.below(10) + model.low;
                        queue.skip_to(to);
                        if to > model.low {
                            model.acked.retain(|&o| o >= to);
                            model.leased.retain(|&o, _| o >= to);
                            model.low = to;
                            model.next = model.next.max(to);
                            while model.acked.remove(&model.low) {
                                model.low += 1;
                            }
                        }
                    }
                }
                assert_eq!((queue.low, queue.next), (model.low, model.next));
                assert_eq!(queue.acked, model.acked);
                assert_eq!(queue.blocked(now), model.blocked(now));
                assert_eq!(queue.due(now), model.due(now));
                assert_eq!(queue.deadlines.len(), queue.leased.len());
            }
        }
    }

    #[test]
    fn an_ordered_lease_blocks_until_acked_or_due() {
        let mut queue = QueueLeases::new(5);
        queue.lease(5, 1, 100, true);
        queue.lease(6, 1, 50, false);
        assert!(queue.blocked(99));
        assert!(!queue.blocked(100));
        assert_eq!(queue.due(60).len(), 1);
        assert!(
            !queue.ack(5, 2),
            "a later attempt's receipt is not this one"
        );
        assert!(queue.ack(5, 1));
        assert!(!queue.blocked(0));
        assert_eq!((queue.low, queue.next), (6, 7));
        queue.settle(6);
        assert_eq!(queue.low, 7);
    }

    #[test]
    fn lost_messages_are_passed_over_and_leases_below_them_stay() {
        let mut queue = QueueLeases::new(0);
        queue.lease(0, 1, 100, false);
        queue.pass_lost(1, 50);
        assert_eq!((queue.low(), queue.next()), (0, 50));
        assert!(queue.is_leased(0));
        assert!(queue.ack(0, 1));
        assert_eq!(queue.low(), 50);
        // Nothing outstanding below: the position jumps in one step.
        queue.pass_lost(50, 1_000_000);
        assert_eq!((queue.low(), queue.next()), (1_000_000, 1_000_000));
    }
}
