//! The RocketMQ 5 protocol (`apache.rocketmq.v2`) on the native data plane: `SendMessage`
//! (`send`: every request answered per message, stored by `put`, with the protocol's
//! message checks in `check`, the user properties and the names the broker reserves in
//! `properties`, gzip bodies in `body_encoding`, the refusals' wording in `python_text`
//! and the codes in `status`), and the consume side: `ReceiveMessage` (`receive`),
//! `AckMessage` and `ChangeInvisibleDuration` (`ack`), over the lease book (`lease_book`,
//! `queue_leases`, `claim`) that the Python path shares through the binding, with receipt
//! handles (`receipt`) and received messages (`outgoing`) built here for both paths.
//! Every other v2 call, and whatever the consume side declines, goes to the process's
//! Python server.

pub mod ack;
pub mod body_encoding;
pub mod check;
pub mod claim;
pub mod lease_book;
pub mod outgoing;
pub mod properties;
pub mod put;
pub mod python_text;
pub mod queue_leases;
pub mod receipt;
pub mod receive;
pub mod send;
pub mod status;
