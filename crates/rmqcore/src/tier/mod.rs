//! The object-storage tier (format §7): sealed commit-log segments are uploaded to an
//! S3-compatible bucket, their local copies go once local retention says so, and reads of
//! old messages are served from the bucket through a bounded block cache.
//!
//! Lifecycle of a segment: written -> sealed (the writer moved on) -> uploaded (size and
//! CRC32 confirmed by the bucket, recorded in `tier/state.json`) -> evicted (local file
//! deleted; only after the upload is recorded) -> expired (deleted from the bucket by
//! tier retention). `uploader.rs` moves segments along; `remote_log.rs` reads them.
//! A segment's object holds its records grouped by queue, with a footer mapping
//! commit-log positions into it (`grouped_object.rs`, footers kept in `bounded_cache.rs`).
//! Compacted index files and the file form's sealed consume-queue files follow the
//! segments they point into (`remote_index.rs`, `remote_queue.rs`, both keeping what they
//! fetch whole in `bounded_cache.rs`). Reads go through the block cache (`block_cache.rs`, its blocks slices of
//! the buffers the GETs' bodies are copied into, `cached_block.rs`, reused from a pool,
//! `receive_buffers.rs`, its maps hashed by `block_key_hash.rs`),
//! which GETs fetch which blocks (`block_runs.rs`, `ranged_reads.rs`), and the bucket
//! client (`object_client.rs`, with its checked ranged GETs in `recorded_get.rs` and its
//! errors in `object_errors.rs`).

mod block_cache;
mod block_key_hash;
mod block_runs;
mod bounded_cache;
mod cached_block;
pub mod grouped_object;
mod local_footers;
pub mod location;
mod mapped_reads;
pub mod object_client;
mod object_errors;
mod ranged_reads;
pub mod reader;
mod receive_buffers;
mod recorded_get;
mod remote_index;
pub mod remote_log;
mod remote_queue;
pub mod state;
pub mod uploader;

pub use location::TierLocation;
pub use object_client::{ObjectClient, TierEndpoint};
pub use state::{TierState, TieredQueueFile, TieredSegment};
