//! The engine's errors as `apache.rocketmq.v2` codes, for the sends the data plane stores,
//! and the statuses of the protocol's own refusals. It is the Python table (`python/rmq/rocketmq/status.py`, where the most specific
//! class in the exception's MRO wins); a test in tests/test_rocketmq_native_send.py
//! compares the two, so they cannot drift.

use rmqcore::Error;
use rmqproto::rocketmq_v2::{Code, Status};

/// The v2 code for `error`.
pub fn code_for(error: &Error) -> Code {
    match error {
        Error::InvalidArgument { .. } => Code::BadRequest,
        Error::NotFound(_) => Code::NotFound,
        Error::OffsetOutOfRange { .. } => Code::IllegalOffset,
        Error::Corrupt { .. } | Error::TierObjectChanged { .. } => Code::MessageCorrupted,
        Error::FlushFailed(_) => Code::MasterPersistenceTimeout,
        Error::ReadOnly => Code::Forbidden,
        // The binding raises an OSError for the rest of Io; Python's table has no entry
        // for it and answers INTERNAL_SERVER_ERROR too.
        Error::DiskFull { .. }
        | Error::Closed
        | Error::Tier { .. }
        | Error::Locked { .. }
        | Error::Io { .. } => Code::InternalServerError,
    }
}

/// The status a client receives for `error`.
pub fn status_for(error: &Error) -> Status {
    Status {
        code: code_for(error) as i32,
        message: error.to_string(),
    }
}

/// A refusal the protocol words itself (a message's own fields, not an engine error).
pub fn refused(code: Code, message: impl Into<String>) -> Status {
    Status {
        code: code as i32,
        message: message.into(),
    }
}

pub fn ok() -> Status {
    Status {
        code: Code::Ok as i32,
        message: "OK".to_owned(),
    }
}

/// The table by the name of the Python exception class each error becomes (the binding
/// raises `rmq.errors.<name>`), for the test that compares it with the Python table.
pub const CODES_BY_CLASS: &[(&str, Code)] = &[
    ("InvalidArgumentError", Code::BadRequest),
    ("NotFoundError", Code::NotFound),
    ("OffsetOutOfRangeError", Code::IllegalOffset),
    ("CorruptRecordError", Code::MessageCorrupted),
    ("DiskFullError", Code::InternalServerError),
    ("StoreClosedError", Code::InternalServerError),
    ("FlushFailedError", Code::MasterPersistenceTimeout),
    ("TierError", Code::InternalServerError),
    ("TierObjectChangedError", Code::MessageCorrupted),
    ("StoreLockedError", Code::InternalServerError),
    ("ReadOnlyError", Code::Forbidden),
];
