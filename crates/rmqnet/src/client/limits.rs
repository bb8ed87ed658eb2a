//! The numbers a producer works within: how big a batch grows and how long it lingers
//! (`Limits`), how much may be sent and not yet answered, and how long a refused batch is
//! retried (`RetryPolicy`).

use std::time::Duration;

use super::batch::Batch;

#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub batch_max_messages: usize,
    pub batch_max_bytes: usize,
    pub linger: Duration,
    pub max_buffered_bytes: usize,
    pub max_buffered_messages: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            batch_max_messages: 2048,
            batch_max_bytes: 1024 * 1024,
            linger: Duration::from_millis(5),
            max_buffered_bytes: 1024 * 1024,
            max_buffered_messages: 2048,
        }
    }
}

impl Limits {
    pub(super) fn full<O>(&self, batch: &Batch<O>, extra: usize) -> bool {
        batch.count >= self.batch_max_messages
            || (batch.count > 0 && batch.bytes + extra > self.batch_max_bytes)
    }
}

/// How long a batch refused with a retryable code is tried again, and how often.
#[derive(Clone, Copy, Debug)]
pub struct RetryPolicy {
    pub timeout: Duration,
    pub delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            timeout: Duration::from_secs(30),
            delay: Duration::from_millis(200),
        }
    }
}
