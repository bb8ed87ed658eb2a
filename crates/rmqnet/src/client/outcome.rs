//! How a producer's batch ended, as plain Rust values: the binding turns each into the
//! futures' result or exception (through its one error table), and nothing here knows
//! about Python. `answers` reads a shard's `SendBatchesResponse` into one outcome per
//! batch with the prost types generated from `proto/`: the answer is read once, on the
//! sender's thread, so this costs no extra copy on the hot path.

use prost::Message as _;
use rmqproto::v1::{send_stream_response, SendBatchesResponse, SendResponse};

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
    Stored(SendResponse),
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
    let Ok(response) = SendBatchesResponse::decode(raw) else {
        let outcome = malformed("the broker's SendBatches answer is malformed");
        return vec![outcome; counts.len()];
    };
    if response.answers.len() != counts.len() {
        let outcome = malformed("the broker answered SendBatches with a wrong count");
        return vec![outcome; counts.len()];
    }
    response
        .answers
        .into_iter()
        .zip(counts)
        .map(|(answer, &count)| match answer.outcome {
            Some(send_stream_response::Outcome::Error(error)) => {
                SendOutcome::refused(error.code, error.message)
            }
            // An empty result is a stored batch whose response has every field at default.
            Some(send_stream_response::Outcome::Result(stored)) => stored_outcome(stored, count),
            None => stored_outcome(SendResponse::default(), count),
        })
        .collect()
}

fn stored_outcome(stored: SendResponse, count: usize) -> SendOutcome {
    let complete = [
        stored.msg_ids.len(),
        stored.queue_offsets.len(),
        stored.commitlog_offsets.len(),
        stored.store_timestamps.len(),
    ]
    .iter()
    .all(|&length| length == count);
    if complete {
        SendOutcome::Stored(stored)
    } else {
        SendOutcome::refused(
            code::UNKNOWN,
            "the broker answered a batch with a wrong count",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmqproto::v1::{Error, SendStreamResponse};

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
        assert_eq!(outcomes[0], SendOutcome::Stored(stored(2)));
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
        assert_eq!(answers(&raw, &[0]), vec![SendOutcome::Stored(stored(0))]);
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
    fn only_transient_refusals_are_retried() {
        for code in RETRYABLE {
            assert!(SendOutcome::refused(code, "").retryable());
        }
        assert!(!SendOutcome::refused(code::INVALID_ARGUMENT, "").retryable());
        assert!(!SendOutcome::Closed.retryable());
    }
}
