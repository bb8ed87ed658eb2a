//! rmq's storage engine: a message store whose files are byte-compatible with Apache
//! RocketMQ's broker store. The on-disk format is specified in `docs/format.md`; each
//! module names the part it implements. This crate knows nothing of Python.

pub mod big_endian;
pub mod clock;
pub mod commit_log;
pub mod config;
pub mod consume_queue;
pub mod disk_usage;
pub mod dispatch;
pub mod error;
pub mod files;
pub mod index;
pub mod java_hash;
pub mod lookup;
pub mod options;
pub mod record;
pub mod recovery;
pub mod retention;
pub mod segment_decoder;
pub mod store;
pub mod tag_filter;
pub mod tier;
pub mod topic;
pub mod verify;

pub use error::{Error, Result};
pub use options::{ConsumeQueueType, FlushMode, StoreOptions};
pub use record::message::{DraftKeys, MessageDraft, PutResult, StoredMessage};
pub use store::{PullQuery, PullResult, Pulled, Store};
