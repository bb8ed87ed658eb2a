//! How many requests of each method the data plane answered itself and how many it
//! declined to the Python server: lock-free counters, read by the shard process's metrics
//! (`rmq_native_requests`), so an operator (and a test) can see the fast path at work.

use std::sync::atomic::{AtomicU64, Ordering};

/// The methods the data plane may answer, by their gRPC path.
pub const METHODS: [&str; 9] = [
    "/rmq.v1.Shard/Send",
    "/rmq.v1.Shard/SendBatches",
    "/rmq.v1.Shard/Pull",
    "/rmq.v1.Shard/QueueOffsets",
    "/rmq.v1.Shard/FetchOffsets",
    "/apache.rocketmq.v2.MessagingService/SendMessage",
    "/apache.rocketmq.v2.MessagingService/ReceiveMessage",
    "/apache.rocketmq.v2.MessagingService/AckMessage",
    "/apache.rocketmq.v2.MessagingService/ChangeInvisibleDuration",
];

#[derive(Default)]
pub struct RequestCounts {
    answered: [AtomicU64; METHODS.len()],
    declined: [AtomicU64; METHODS.len()],
}

impl RequestCounts {
    /// Count one request of `method` (a path of `METHODS`; others are not counted).
    pub fn count(&self, method: &str, answered: bool) {
        if let Some(index) = METHODS.iter().position(|known| *known == method) {
            let counter = if answered {
                &self.answered[index]
            } else {
                &self.declined[index]
            };
            counter.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// `(method, answered, declined)` for every method.
    pub fn snapshot(&self) -> Vec<(&'static str, u64, u64)> {
        METHODS
            .iter()
            .enumerate()
            .map(|(index, method)| {
                (
                    *method,
                    self.answered[index].load(Ordering::Relaxed),
                    self.declined[index].load(Ordering::Relaxed),
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_method_counts_apart() {
        let counts = RequestCounts::default();
        counts.count(METHODS[3], true);
        counts.count(METHODS[3], false);
        counts.count(METHODS[3], true);
        counts.count("/rmq.v1.Admin/Other", true);
        let snapshot = counts.snapshot();
        assert_eq!(snapshot[3], (METHODS[3], 2, 1));
        assert!(snapshot[..3].iter().all(|(_, a, d)| *a == 0 && *d == 0));
    }
}
