//! The one table from what the data plane refuses to gRPC status codes: the engine's
//! errors, and what the shard checks itself before the engine sees a request (a malformed
//! request, a topic it does not know, a queue it does not serve). It is the same table as
//! the Python broker's (`rmq.broker.status`); a test in tests/test_native_data_plane.py
//! compares the two, so they cannot drift.

use rmqcore::Error;

/// The response field (beside `grpc-status`) carrying a DATA_LOSS answer's resume offset:
/// the first queue offset past a lost tier segment (`Refusal::resume_offset`). The client
/// (`client::channels::CallError`) reads it into its exception's `resume_offset`.
pub const RESUME_OFFSET_HEADER: &str = "rmq-resume-offset";

/// Why the shard answers a request with an error status.
#[derive(Debug)]
pub enum Refusal {
    /// The engine refused it (its checks of topics, queues and messages, or a store error).
    Engine(Error),
    /// Bytes that are not the request they claim to be (INVALID_ARGUMENT); a stream of
    /// requests ends at one.
    Malformed(String),
    /// Bad input the shard names itself (a limit of the broker, a negative offset).
    InvalidArgument(String),
    /// The topic has no layout in this process (`NotFoundError` in Python).
    TopicNotFound(String),
    /// A pull past the end of its queue (`OffsetOutOfRangeError`), in the broker's words.
    OffsetOutOfRange(String),
    /// The queue id is not one of the topic's queues (`QueueOutOfRangeError`).
    QueueOutOfRange(String),
    /// Another shard process serves the queue: the client's route is stale
    /// (`QueueNotHostedError`).
    QueueNotHosted(String),
    /// The request lacks the broker's token (`UnauthenticatedError`).
    Unauthenticated(String),
    /// A failure that is a bug (a panic): Python's answer to an error outside its table.
    Internal(String),
}

impl Refusal {
    /// The gRPC status code the client receives.
    pub fn code(&self) -> i32 {
        match self {
            Refusal::Engine(error) => code_for(error),
            Refusal::Malformed(_) | Refusal::InvalidArgument(_) => 3,
            Refusal::TopicNotFound(_) => 5,
            Refusal::OffsetOutOfRange(_) | Refusal::QueueOutOfRange(_) => 11,
            Refusal::QueueNotHosted(_) => 9,
            Refusal::Unauthenticated(_) => 16,
            Refusal::Internal(_) => 13,
        }
    }

    /// Where a reader goes on past lost data (a tier segment gone), sent beside the
    /// status as `RESUME_OFFSET_HEADER`; None for every other refusal.
    pub fn resume_offset(&self) -> Option<i64> {
        match self {
            Refusal::Engine(error) => error.resume_offset(),
            _ => None,
        }
    }

    /// The status message the client receives.
    pub fn message(&self) -> String {
        match self {
            Refusal::Engine(error) => error.to_string(),
            Refusal::Malformed(text)
            | Refusal::InvalidArgument(text)
            | Refusal::TopicNotFound(text)
            | Refusal::OffsetOutOfRange(text)
            | Refusal::QueueOutOfRange(text)
            | Refusal::QueueNotHosted(text)
            | Refusal::Unauthenticated(text)
            | Refusal::Internal(text) => text.clone(),
        }
    }
}

impl From<Error> for Refusal {
    fn from(error: Error) -> Self {
        Refusal::Engine(error)
    }
}

/// The gRPC status code for `error`.
pub fn code_for(error: &Error) -> i32 {
    match error {
        Error::InvalidArgument { .. } => 3,
        Error::NotFound(_) => 5,
        Error::OffsetOutOfRange { .. } => 11,
        // A changed tier object is lost data, as a damaged record is; an unreachable tier
        // (Tier) is worth retrying.
        Error::Corrupt { .. } | Error::TierObjectChanged { .. } => 15,
        Error::DiskFull { .. } => 8,
        Error::Closed | Error::FlushFailed(_) | Error::Tier { .. } => 14,
        Error::Locked { .. } | Error::ReadOnly => 9,
        Error::Io { .. } => 13,
    }
}

/// The table by the name of the Python exception class each refusal becomes (the binding
/// raises `rmq.errors.<name>` for engine errors), for the test that compares it with the
/// Python table.
pub const CODES_BY_CLASS: &[(&str, i32)] = &[
    ("InvalidArgumentError", 3),
    ("NotFoundError", 5),
    ("OffsetOutOfRangeError", 11),
    ("CorruptRecordError", 15),
    ("DiskFullError", 8),
    ("StoreClosedError", 14),
    ("FlushFailedError", 14),
    ("TierError", 14),
    ("TierObjectChangedError", 15),
    ("StoreLockedError", 9),
    ("ReadOnlyError", 9),
    ("QueueOutOfRangeError", 11),
    ("QueueNotHostedError", 9),
    ("UnauthenticatedError", 16),
];
