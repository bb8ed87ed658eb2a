//! rmq's storage engine: a message store whose files are byte-compatible with Apache
//! RocketMQ's broker store. The on-disk format is specified in `docs/format.md`; each
//! module names the part it implements. This crate knows nothing of Python.

pub mod atomic_file;
pub mod big_endian;
pub mod body_crc;
pub mod checkpoint;
pub mod clock;
pub mod commit_log;
pub mod consume_queue;
pub mod consume_queue_table;
pub mod consumer_offsets;
pub mod crc_property;
pub mod disk_reservation;
pub mod disk_usage;
pub mod dispatch;
pub mod error;
pub mod flush_service;
pub mod host;
pub mod index;
pub mod java_hash;
pub mod lenient_json;
pub mod lookup;
pub mod mapped_file;
pub mod message;
pub mod msg_id;
pub mod options;
pub mod page_warmer;
pub mod properties;
pub mod record;
pub mod recovery;
pub mod retention;
pub mod segment;
pub mod segment_decoder;
pub mod segment_queue;
pub mod store;
pub mod store_lock;
pub mod tag_filter;
pub mod topic;
pub mod topic_config;
pub mod verify;

pub use error::{Error, Result};
pub use message::{MessageDraft, PutResult, StoredMessage};
pub use options::{FlushMode, StoreOptions};
pub use store::{PullResult, Pulled, Store};
