//! The producer's side of the data plane, in plain Rust: the books of batches per queue
//! (`books`, `batch`), the routes its owner pushes in as data (`routes`), the encoding of
//! messages and requests (`encode`), the connections (`channels`, plaintext or TLS), the
//! sender that moves batches to the shards (`sender`), and how each batch ended
//! (`outcome`). Nothing here calls out to its owner: batches that need a route wait until
//! one is pushed in (`Core::set_route`), and ended batches come back as `Finished` values.
//! The rest of a client's calls (routes, admin, lookups, offsets, the consumer's pulls)
//! go over the same kind of connections as plain unary calls (`calls`).

pub mod answer_wire;
pub mod batch;
pub mod books;
pub mod broker_reads;
pub mod calls;
pub mod channels;
#[cfg(test)]
mod core_tests;
pub mod encode;
pub mod limits;
pub mod outcome;
mod parking;
pub mod pull_columns;
pub mod routes;
pub mod sender;
pub mod tls;

pub use batch::{Batch, Finished, QueueKey};
pub use books::{Core, Limits, Pushed, RetryPolicy, State};
pub use calls::{CallHandle, UnaryCalls};
pub use channels::{CallError, ShardChannels};
pub use outcome::{SendOutcome, StoredBatch, RETRYABLE};
pub use sender::Sender;
pub use tls::Tls;
