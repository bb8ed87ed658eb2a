//! The RocketMQ 5 protocol (`apache.rocketmq.v2`) on the native data plane: `SendMessage`
//! (`send`), with the Python path's message checks (`check`) and engine-error codes
//! (`status`). Every other v2 call goes to the process's Python server.

pub mod check;
pub mod send;
pub mod status;
