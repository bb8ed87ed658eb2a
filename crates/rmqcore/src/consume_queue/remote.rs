//! Consume-queue files (file form) whose local copy is gone, kept in the store's tier
//! (format §7.5): what a queue needs to read their entries. The RocksDB form keeps its
//! entries local; only the file form's sealed files move.

use bytes::Bytes;

use crate::error::Result;
use crate::files::segment::Segment;
use std::sync::Arc;

/// Evicted queue files, by topic, queue id and logical start offset (bytes).
pub trait RemoteQueueFiles: Send + Sync + std::fmt::Debug {
    /// The start offset of the queue's oldest evicted file.
    fn first_start(&self, topic: &str, queue_id: i32) -> Option<u64>;
    /// The evicted file holding logical byte `logical`, as its start offset.
    fn holding(&self, topic: &str, queue_id: i32, logical: u64) -> Option<u64>;
    /// The whole file, checked against the size and CRC32 recorded at upload: a range of
    /// 20-byte entries carries no checksum of its own, so nothing less can be trusted.
    /// Shared with the tier's bounded cache of files: a reader may keep a `Weak` to it,
    /// which lives as long as the cache keeps the file.
    fn read_file(&self, topic: &str, queue_id: i32, start: u64) -> Result<Arc<Bytes>>;
    /// A number that changes whenever the tier's record of its files does (a file
    /// expired, evicted, uploaded): what `holding` answered stays true while it does not.
    fn state_version(&self) -> u64;
    /// The size in bytes of the queue's files the tier records (evicted or not), if any:
    /// a queue made again (a rebuild) keeps that layout whatever the store was opened
    /// with, so its new files line up with the recorded ones.
    fn recorded_file_size(&self, topic: &str, queue_id: i32) -> Option<u64>;
    /// A read failed (bucket unreachable, object changed or gone): kept for the tier's
    /// status, beside the error the read returns.
    fn note_read_failure(&self, error: &crate::error::Error);
}

/// A sealed queue file (a newer one exists for its queue), as the uploader sees it.
#[derive(Debug, Clone)]
pub struct SealedQueueFile {
    pub topic: String,
    pub queue_id: i32,
    pub segment: Arc<Segment>,
    /// The commit-log end of its last entry: every entry points below it.
    pub last_commitlog_end: i64,
}
