//! Store settings. Defaults are RocketMQ's (format §1.1, §2.1, §3.1, §5.4); every size can
//! be made small so that tests roll files quickly.

use std::net::SocketAddr;

use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushMode {
    /// A background thread flushes by interval; `put` returns once the bytes are mapped.
    Async,
    /// `put` returns once its bytes are durable; concurrent puts share one flush.
    Sync,
}

impl FlushMode {
    pub fn parse(text: &str) -> Result<Self> {
        match text {
            "ASYNC_FLUSH" => Ok(FlushMode::Async),
            "SYNC_FLUSH" => Ok(FlushMode::Sync),
            other => Err(Error::invalid("flush_disk_type", format!("{other:?} is neither \"ASYNC_FLUSH\" nor \"SYNC_FLUSH\""))),
        }
    }
}

#[derive(Debug, Clone)]
pub struct StoreOptions {
    pub commitlog_segment_size: usize,
    pub consume_queue_entries_per_file: usize,
    pub store_host: SocketAddr,
    pub max_message_size: usize,
    /// Queues given to a topic created by its first put.
    pub default_queue_count: i32,
    pub read_only: bool,
    pub flush_mode: FlushMode,
    pub flush_interval_ms: u64,
    pub flush_least_pages: usize,
    pub flush_thorough_interval_ms: u64,
    /// How long a sync put waits for its flush before failing.
    pub sync_flush_timeout_ms: u64,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            commitlog_segment_size: 1 << 30,
            consume_queue_entries_per_file: 300_000,
            store_host: "127.0.0.1:10911".parse().expect("literal address"),
            max_message_size: 4 * 1024 * 1024,
            default_queue_count: 8,
            read_only: false,
            flush_mode: FlushMode::Async,
            flush_interval_ms: 500,
            flush_least_pages: 4,
            flush_thorough_interval_ms: 10_000,
            sync_flush_timeout_ms: 5_000,
        }
    }
}

/// The largest queue id rmq accepts; RocketMQ keeps queue counts far below this.
pub const MAX_QUEUE_ID: i32 = 65_535;

impl StoreOptions {
    pub fn validate(&self) -> Result<()> {
        if !(4096..=i32::MAX as usize).contains(&self.commitlog_segment_size) {
            return Err(Error::invalid("commitlog_segment_size", "must be between 4096 and 2147483647 bytes"));
        }
        if self.consume_queue_entries_per_file == 0 || self.consume_queue_entries_per_file > 50_000_000 {
            return Err(Error::invalid("consume_queue_entries_per_file", "must be between 1 and 50000000"));
        }
        if self.max_message_size == 0 || self.max_message_size > 64 * 1024 * 1024 {
            return Err(Error::invalid("max_message_size", "must be between 1 byte and 64 MiB"));
        }
        if !(1..=MAX_QUEUE_ID + 1).contains(&self.default_queue_count) {
            return Err(Error::invalid("default_queue_count", format!("must be between 1 and {}", MAX_QUEUE_ID + 1)));
        }
        Ok(())
    }
}
