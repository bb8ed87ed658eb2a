//! The shard's hot-path messages, encoded and decoded straight from and into bytes (the
//! request's, the log's): `send` for `SendRequest`/`SendResponse`, `pull` for
//! `PullResponse`, `batches` for the framing of `SendBatches`. Field numbers come from
//! `rmqproto`, generated from `proto/`.

pub mod batches;
pub mod pull;
pub mod send;
