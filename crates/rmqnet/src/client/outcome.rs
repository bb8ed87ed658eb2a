//! How a producer's batch ended, as plain Rust values: the binding turns each into the
//! futures' result or exception (through its one error table), and nothing here knows
//! about Python. `answers` reads a shard's `SendBatchesResponse` (`answer_wire.rs`) into
//! one outcome per batch, once, on the sender's thread.

use std::net::SocketAddr;

use rmqcore::record::msg_id::create_msg_id;

use super::answer_wire::{read_answers, ReadAnswer, StoredColumns};

/// gRPC status codes (numbered as `grpc.StatusCode`) the producer itself reports.
pub mod code {
    pub const CANCELLED: i32 = 1;
    pub const UNKNOWN: i32 = 2;
    pub const INVALID_ARGUMENT: i32 = 3;
    pub const DEADLINE_EXCEEDED: i32 = 4;
    pub const FAILED_PRECONDITION: i32 = 9;
    pub const UNAVAILABLE: i32 = 14;
}

/// Codes worth another try after a pause and a fresh route: the shard may be restarting
/// (UNAVAILABLE, DEADLINE_EXCEEDED) or the queue has moved (FAILED_PRECONDITION).
pub const RETRYABLE: [i32; 3] = [
    code::UNAVAILABLE,
    code::DEADLINE_EXCEEDED,
    code::FAILED_PRECONDITION,
];

/// How one batch ended.
#[derive(Debug, Clone, PartialEq)]
pub enum SendOutcome {
    /// Stored: where each of its messages is, in order.
    Stored(StoredBatch),
    /// The shard refused it, or the call failed: the gRPC status code and message.
    Refused { code: i32, message: String },
    /// The route has no such queue (after a fresh lookup).
    NoSuchQueue { queue_id: i32, queues: usize },
    /// The producer stopped before the batch could be sent.
    Closed,
}

impl SendOutcome {
    pub fn refused(code: i32, message: impl Into<String>) -> Self {
        SendOutcome::Refused {
            code,
            message: message.into(),
        }
    }

    /// Whether trying again later may store the batch.
    pub fn retryable(&self) -> bool {
        matches!(self, SendOutcome::Refused { code, .. } if RETRYABLE.contains(code))
    }
}

/// One outcome per batch of a `SendBatchesResponse`, for batches of `counts` messages
/// each, in order. A malformed answer, or one with the wrong number of answers or of
/// results in an answer, fails the batches it concerns rather than storing them blind.
pub fn answers(raw: &[u8], counts: &[usize]) -> Vec<SendOutcome> {
    let malformed = |what: &str| SendOutcome::refused(code::UNKNOWN, what);
    let Some(read) = read_answers(raw) else {
        let outcome = malformed("the broker's SendBatches answer is malformed");
        return vec![outcome; counts.len()];
    };
    if read.len() != counts.len() {
        let outcome = malformed("the broker answered SendBatches with a wrong count");
        return vec![outcome; counts.len()];
    }
    read.into_iter()
        .zip(counts)
        .map(|(answer, &count)| match answer {
            ReadAnswer::Refused { code, message } => SendOutcome::refused(code, message),
            ReadAnswer::Stored(columns) => stored_outcome(columns, count),
        })
        .collect()
}

fn stored_outcome(stored: StoredColumns, count: usize) -> SendOutcome {
    let wrong_count = || {
        SendOutcome::refused(
            code::UNKNOWN,
            "the broker answered a batch with a wrong count",
        )
    };
    let complete = [
        stored.queue_offsets.len(),
        stored.commitlog_offsets.len(),
        stored.store_timestamps.len(),
    ]
    .iter()
    .all(|&length| length == count);
    if !complete {
        return wrong_count();
    }
    // Ids come either one per message or as the host they are all derived from.
    let store_host = if stored.msg_ids.is_empty() && count > 0 {
        match stored.store_host.parse() {
            Ok(host) => Some(host),
            Err(_) => {
                return SendOutcome::refused(
                    code::UNKNOWN,
                    "the broker answered a batch with neither msgIds nor a valid store host",
                )
            }
        }
    } else if stored.msg_ids.len() == count {
        None
    } else {
        return wrong_count();
    };
    SendOutcome::Stored(StoredBatch {
        columns: stored,
        store_host,
    })
}

/// A stored batch's answer: each message's queue offset, commit-log offset and store
/// timestamp, and its msgId, given or derived from the store host.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredBatch {
    pub columns: StoredColumns,
    /// Set when the answer named the host instead of listing the ids.
    store_host: Option<SocketAddr>,
}

impl StoredBatch {
    /// Message `index`'s msgId, None past the batch's end.
    pub fn msg_id(&self, index: usize) -> Option<String> {
        match &self.store_host {
            Some(host) => Some(create_msg_id(
                host,
                *self.columns.commitlog_offsets.get(index)?,
            )),
            None => self.columns.msg_ids.get(index).cloned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message as _;
    use rmqproto::v1::{
        send_stream_response, Error, SendBatchesResponse, SendResponse, SendStreamResponse,
    };

    fn stored(count: usize) -> SendResponse {
        SendResponse {
            msg_ids: (0..count).map(|i| format!("id{i}")).collect(),
            commitlog_offsets: vec![7; count],
            queue_offsets: (0..count as i64).collect(),
            store_timestamps: vec![1; count],
            ..SendResponse::default()
        }
    }

    fn response(outcomes: Vec<Option<send_stream_response::Outcome>>) -> Vec<u8> {
        SendBatchesResponse {
            answers: outcomes
                .into_iter()
                .map(|outcome| SendStreamResponse {
                    sequence: 0,
                    outcome,
                })
                .collect(),
        }
        .encode_to_vec()
    }

    /// The outcome of an answer that lists its ids.
    fn listed(response: SendResponse) -> SendOutcome {
        SendOutcome::Stored(StoredBatch {
            columns: StoredColumns {
                msg_ids: response.msg_ids,
                commitlog_offsets: response.commitlog_offsets,
                queue_offsets: response.queue_offsets,
                store_timestamps: response.store_timestamps,
                store_host: response.store_host,
            },
            store_host: None,
        })
    }

    fn result(response: SendResponse) -> Option<send_stream_response::Outcome> {
        Some(send_stream_response::Outcome::Result(response))
    }

    #[test]
    fn each_batch_gets_its_own_answer_in_order() {
        let raw = response(vec![
            Some(send_stream_response::Outcome::Result(stored(2))),
            Some(send_stream_response::Outcome::Error(Error {
                code: 3,
                message: "bad tags".into(),
            })),
            Some(send_stream_response::Outcome::Result(stored(3))),
        ]);
        let outcomes = answers(&raw, &[2, 1, 2]);
        assert_eq!(outcomes[0], listed(stored(2)));
        assert_eq!(outcomes[1], SendOutcome::refused(3, "bad tags"));
        assert!(!outcomes[1].retryable());
        // Three results for a batch of two: not stored blind.
        assert!(matches!(
            outcomes[2],
            SendOutcome::Refused {
                code: code::UNKNOWN,
                ..
            }
        ));
    }

    #[test]
    fn a_wrong_number_of_answers_or_garbage_fails_every_batch() {
        let raw = response(vec![None]);
        assert_eq!(answers(&raw, &[0]), vec![listed(stored(0))]);
        for outcome in answers(&raw, &[1, 1])
            .into_iter()
            .chain(answers(b"\x0a\x05ab", &[1]))
        {
            assert!(matches!(
                outcome,
                SendOutcome::Refused {
                    code: code::UNKNOWN,
                    ..
                }
            ));
        }
    }

    #[test]
    fn ids_are_derived_from_a_named_store_host_and_each_offset() {
        let host: SocketAddr = "10.1.2.3:10911".parse().unwrap();
        let named = SendResponse {
            msg_ids: Vec::new(),
            commitlog_offsets: vec![0, 4096],
            store_host: host.to_string(),
            ..stored(2)
        };
        let [SendOutcome::Stored(batch)] = &answers(&response(vec![result(named)]), &[2])[..]
        else {
            panic!("a batch named by its host is stored");
        };
        assert_eq!(batch.msg_id(0), Some(create_msg_id(&host, 0)));
        assert_eq!(batch.msg_id(1), Some(create_msg_id(&host, 4096)));
        assert_eq!(batch.msg_id(2), None);
        assert_eq!(
            listed(stored(1)),
            answers(&response(vec![result(stored(1))]), &[1])[0]
        );
    }

    #[test]
    fn an_answer_without_ids_or_a_valid_host_is_not_stored_blind() {
        let no_ids = |store_host: &str| SendResponse {
            msg_ids: Vec::new(),
            store_host: store_host.into(),
            ..stored(2)
        };
        let one_id_short = SendResponse {
            msg_ids: vec!["id0".into()],
            ..stored(2)
        };
        for answer in [no_ids(""), no_ids("not a host"), one_id_short] {
            assert!(matches!(
                answers(&response(vec![result(answer)]), &[2])[0],
                SendOutcome::Refused {
                    code: code::UNKNOWN,
                    ..
                }
            ));
        }
    }

    #[test]
    fn only_transient_refusals_are_retried() {
        for code in RETRYABLE {
            assert!(SendOutcome::refused(code, "").retryable());
        }
        assert!(!SendOutcome::refused(code::INVALID_ARGUMENT, "").retryable());
        assert!(!SendOutcome::Closed.retryable());
    }
}
