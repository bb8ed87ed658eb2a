//! The engine's errors as gRPC status codes, for what the data plane answers itself.
//! It is the same table as the Python broker's (`rmq.broker.status`); a test in
//! tests/test_native_data_plane.py compares the two, so they cannot drift.

use rmqcore::Error;

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

/// The table by the name of the Python exception class each error becomes (the binding
/// raises `rmq.errors.<name>`), for the test that compares it with the Python table.
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
];
