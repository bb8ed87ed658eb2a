//! rmq's network hot path: the producer's client core (`client`), a shard process's public gRPC endpoint served from the engine
//! (`server`, `shard` with its bounds in `shard_limits` and a consumer's positions in `shard_offsets`, its TLS in `server_tls`; RocketMQ 5's calls in `rocketmq`), the proxy to the process's Python server for everything else
//! (`proxy`), the allocator setting of a process serving shards (`freed_memory`), the long-poll wake-ups both sides share (`signals`), and the codec of the
//! hot-path messages (`codec`), which the Python binding's fast path uses too.

pub mod client;
pub mod coalesce;
pub mod codec;
pub mod counts;
pub mod freed_memory;
pub mod grpc;
pub mod inflate;
pub mod proxy;
pub mod rocketmq;
pub mod send_check;
pub mod server;
pub mod server_tls;
pub mod shard;
pub mod shard_limits;
pub mod shard_offsets;
pub mod shard_pull;
pub mod signals;
pub mod status;

pub use server::{Settings, ShardServer};
pub use shard::Shard;
pub use shard_limits::Limits;
