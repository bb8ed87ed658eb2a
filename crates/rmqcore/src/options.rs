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
            other => Err(Error::invalid(
                "flush_disk_type",
                format!("{other:?} is neither \"ASYNC_FLUSH\" nor \"SYNC_FLUSH\""),
            )),
        }
    }
}

/// The two forms of consume queue (format §2 and §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsumeQueueType {
    /// 20-byte entries in files under `consumequeue/<topic>/<queueId>/`.
    File,
    /// RocketMQ 5's RocksDB consume queue in `consumequeue/`.
    RocksDb,
}

impl ConsumeQueueType {
    pub fn parse(text: &str) -> Result<Self> {
        match text {
            "file" => Ok(ConsumeQueueType::File),
            "rocksdb" => Ok(ConsumeQueueType::RocksDb),
            other => Err(Error::invalid(
                "consume_queue_type",
                format!("{other:?} is neither \"file\" nor \"rocksdb\""),
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ConsumeQueueType::File => "file",
            ConsumeQueueType::RocksDb => "rocksdb",
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
    /// Hash slots per index file (RocketMQ's `maxHashSlotNum`, format §3.1).
    pub index_slot_count: usize,
    /// Entries per index file (RocketMQ's `maxIndexNum`; one fewer are usable).
    pub index_entry_count: usize,
    pub retention: RetentionOptions,
    /// Append RocketMQ 5.2's whole-record CRC property (format §1.5) to every record,
    /// so damage to header fields and properties is detected, not only to bodies.
    pub append_record_crc: bool,
    /// Bytes of the commit log ahead of the writer whose pages a background thread
    /// faults in before the writer gets there (`page_warmer.rs`); 0 turns it off.
    pub warm_ahead_bytes: usize,
    /// Keep every record in the V1 layout that RocketMQ 4.9 reads: topics over 127 bytes
    /// are refused instead of written as V2 records (RocketMQ 5's
    /// `autoMessageVersionOnTopicLen` turned off).
    pub v1_records_only: bool,
    /// The consume-queue form of a new store; None opens an existing store as it was
    /// created (and a new one with files).
    pub consume_queue_type: Option<ConsumeQueueType>,
    /// Recreate the consume queues and the key index from the commit log while opening
    /// (for a RocksDB consume queue that is damaged or missing).
    pub rebuild_consume_queues: bool,
    /// Sealed segments go to an S3-compatible bucket (`tier/`); None keeps all local.
    pub tier: Option<TierOptions>,
}

/// The object-storage tier of a store (format §7).
#[derive(Debug, Clone)]
pub struct TierOptions {
    /// `s3://bucket/prefix`.
    pub url: String,
    /// An S3-compatible server's `http(s)://host:port`; None for AWS itself.
    pub endpoint: Option<String>,
    pub region: Option<String>,
    /// Local copies of uploaded segments are kept up to this many bytes, newest first
    /// (None: no byte limit).
    pub local_retention_bytes: Option<u64>,
    /// ... and no longer than this after they were last written (None: no time limit).
    pub local_retention_ms: Option<u64>,
    /// Segments expire from the tier (and the store) this long after they were last
    /// written; None uses `RetentionOptions::file_reserved_time_ms`.
    pub tier_retention_ms: Option<u64>,
    /// How often the uploader looks for sealed segments.
    pub upload_interval_ms: u64,
    /// Multipart parts uploaded at once.
    pub parts_in_flight: usize,
    /// Bytes of fetched blocks kept for reads of evicted segments.
    pub read_cache_bytes: u64,
}

impl TierOptions {
    pub fn new(url: impl Into<String>) -> Self {
        TierOptions {
            url: url.into(),
            endpoint: None,
            region: None,
            local_retention_bytes: None,
            local_retention_ms: None,
            tier_retention_ms: None,
            upload_interval_ms: 1_000,
            parts_in_flight: 4,
            read_cache_bytes: 64 << 20,
        }
    }
}

/// Expiry and disk guarding (format §5.5); defaults are RocketMQ's.
#[derive(Debug, Clone)]
pub struct RetentionOptions {
    /// A segment expires this long after it was last written (`fileReservedTime`, 72 h).
    pub file_reserved_time_ms: u64,
    /// Local hours of the day at which expired segments are deleted (`deleteWhen`).
    pub delete_when: Vec<u32>,
    /// Above this disk usage, expired segments are deleted at any hour.
    pub disk_max_used_space_ratio: f64,
    /// Above this, the oldest segments are deleted even if they have not expired.
    pub disk_space_clean_forcibly_ratio: f64,
    /// Above this, writes are refused until usage falls again.
    pub disk_space_warning_level_ratio: f64,
    /// At most this many segments are deleted per run (`deleteFileBatchMax`).
    pub delete_files_batch_max: usize,
    /// Pause between two deletions so that writers are not stalled.
    pub delete_interval_ms: u64,
    /// How often the background thread checks the disk and runs retention.
    pub check_interval_ms: u64,
}

impl Default for RetentionOptions {
    fn default() -> Self {
        RetentionOptions {
            file_reserved_time_ms: 72 * 3600 * 1000,
            delete_when: vec![4],
            disk_max_used_space_ratio: 0.75,
            disk_space_clean_forcibly_ratio: 0.85,
            disk_space_warning_level_ratio: 0.90,
            delete_files_batch_max: 10,
            delete_interval_ms: 100,
            check_interval_ms: 10_000,
        }
    }
}

impl RetentionOptions {
    /// Parse RocketMQ's `deleteWhen`: hours separated by `;`, e.g. `"04"` or `"02;14"`.
    pub fn parse_delete_when(text: &str) -> Result<Vec<u32>> {
        text.split(';')
            .map(str::trim)
            .filter(|part| !part.is_empty())
            .map(|part| {
                part.parse::<u32>()
                    .ok()
                    .filter(|hour| *hour < 24)
                    .ok_or_else(|| {
                        Error::invalid(
                            "delete_when",
                            format!(
                                "{part:?} is not an hour from 00 to 23 (use \"04\" or \"02;14\")"
                            ),
                        )
                    })
            })
            .collect()
    }

    pub fn validate(&self) -> Result<()> {
        let ratios = [
            ("disk_max_used_space_ratio", self.disk_max_used_space_ratio),
            (
                "disk_space_clean_forcibly_ratio",
                self.disk_space_clean_forcibly_ratio,
            ),
            (
                "disk_space_warning_level_ratio",
                self.disk_space_warning_level_ratio,
            ),
        ];
        for (name, ratio) in ratios {
            if !(0.0..=1.0).contains(&ratio) {
                return Err(Error::invalid(
                    name,
                    format!("{ratio} is not a ratio between 0 and 1"),
                ));
            }
        }
        if self.delete_files_batch_max == 0 {
            return Err(Error::invalid(
                "delete_files_batch_max",
                "must be at least 1",
            ));
        }
        if self.check_interval_ms == 0 {
            return Err(Error::invalid(
                "retention_check_interval_ms",
                "must be at least 1",
            ));
        }
        Ok(())
    }
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
            index_slot_count: 5_000_000,
            index_entry_count: 20_000_000,
            retention: RetentionOptions::default(),
            append_record_crc: true,
            warm_ahead_bytes: 64 << 20,
            v1_records_only: false,
            consume_queue_type: None,
            rebuild_consume_queues: false,
            tier: None,
        }
    }
}

/// The largest queue id rmq accepts; RocketMQ keeps queue counts far below this.
pub const MAX_QUEUE_ID: i32 = 65_535;

impl StoreOptions {
    pub fn validate(&self) -> Result<()> {
        if !(4096..=i32::MAX as usize).contains(&self.commitlog_segment_size) {
            return Err(Error::invalid(
                "commitlog_segment_size",
                "must be between 4096 and 2147483647 bytes",
            ));
        }
        if self.consume_queue_entries_per_file == 0
            || self.consume_queue_entries_per_file > 50_000_000
        {
            return Err(Error::invalid(
                "consume_queue_entries_per_file",
                "must be between 1 and 50000000",
            ));
        }
        if self.max_message_size == 0 || self.max_message_size > 64 * 1024 * 1024 {
            return Err(Error::invalid(
                "max_message_size",
                "must be between 1 byte and 64 MiB",
            ));
        }
        if self.index_slot_count == 0 || self.index_slot_count > i32::MAX as usize {
            return Err(Error::invalid(
                "index_slot_count",
                "must be between 1 and 2147483647",
            ));
        }
        if self.index_entry_count < 2 || self.index_entry_count > i32::MAX as usize {
            return Err(Error::invalid(
                "index_entry_count",
                "must be between 2 and 2147483647 (entry 0 is never used)",
            ));
        }
        // RocketMQ sizes an index file with a Java int.
        if 40 + 4 * self.index_slot_count as u64 + 20 * self.index_entry_count as u64
            > i32::MAX as u64
        {
            return Err(Error::invalid(
                "index_entry_count",
                "an index file of 40 + 4×slots + 20×entries bytes must stay below 2 GiB",
            ));
        }
        self.retention.validate()?;
        if !(1..=MAX_QUEUE_ID + 1).contains(&self.default_queue_count) {
            return Err(Error::invalid(
                "default_queue_count",
                format!("must be between 1 and {}", MAX_QUEUE_ID + 1),
            ));
        }
        Ok(())
    }
}
