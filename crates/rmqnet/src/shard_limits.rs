//! The bounds a shard holds its requests to: what a send may carry and what a pull may ask
//! for. Its own file because both the send check and the shard use it.

/// The bounds the Python broker enforces (`rmq.broker.validation.Limits`).
#[derive(Debug, Clone)]
pub struct Limits {
    pub max_body_bytes: usize,
    pub max_batch_messages: usize,
    pub max_batch_bytes: usize,
    pub default_pull_messages: usize,
    pub max_pull_messages: usize,
    pub default_pull_bytes: usize,
    pub max_pull_bytes: usize,
    pub max_wait_ms: u64,
}
