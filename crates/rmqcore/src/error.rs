//! The engine's typed errors. The binding maps each variant to one Python exception class
//! and the broker maps those to gRPC status codes; nothing here knows about either.

use std::io;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bytes on disk failed validation (magic, length, CRC, entry bounds). A record read
    /// through a consume queue also names the queue offset that points at it.
    #[error(
        "corrupt data in {} at offset {offset}{}: {reason}",
        file.display(),
        queue_offset.map(|at| format!(" (queue offset {at})")).unwrap_or_default()
    )]
    Corrupt {
        file: PathBuf,
        offset: u64,
        queue_offset: Option<i64>,
        reason: String,
    },

    /// A queue or commit-log offset outside `[min, max]`.
    #[error("{what} offset {offset} is out of range: the store holds [{min}, {max})")]
    OffsetOutOfRange {
        what: &'static str,
        offset: i64,
        min: i64,
        max: i64,
    },

    /// A caller-supplied argument is malformed; nothing was written.
    #[error("invalid {argument}: {reason}")]
    InvalidArgument {
        argument: &'static str,
        reason: String,
    },

    #[error("not found: {0}")]
    NotFound(String),

    #[error("I/O error on {}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },

    #[error("the store is closed")]
    Closed,

    #[error("the store at {} is locked by another process", path.display())]
    Locked { path: PathBuf },

    #[error("disk full: {} is {:.1}% used, above the {:.1}% threshold; writes resume when usage falls", path.display(), usage * 100.0, threshold * 100.0)]
    DiskFull {
        path: PathBuf,
        usage: f64,
        threshold: f64,
    },

    /// A flush failed; the store refuses writes from then on because it can no longer
    /// tell which acknowledged bytes are durable.
    #[error("flush failed, the store refuses writes until reopened: {0}")]
    FlushFailed(String),

    #[error("the store was opened read-only")]
    ReadOnly,

    /// The object-storage tier refused or could not serve a request; `object` names the
    /// bucket, prefix or object.
    /// `unreachable`: the server could not be reached or did not answer in time (as
    /// opposed to answering with a refusal), so a reader may go on without it.
    #[error("object storage {object}: {reason}")]
    Tier {
        object: String,
        reason: String,
        unreachable: bool,
    },

    /// An object in the tier is no longer the one uploaded: its size or recorded CRC32
    /// differs from what the store's state says, or it is gone from the bucket (changed
    /// or deleted behind the store's back). Its bytes are never served; restoring the
    /// object makes the reads work again. A record read through a queue also names the
    /// queue offset that points at it and, when the object is a commit-log segment or a
    /// consume-queue file, the first queue offset past what it held (`resume_offset`): a
    /// reader that accepts the loss goes on there in one step instead of one record at a
    /// time.
    #[error(
        "object storage {object}{}: the object changed in the bucket: {reason}{}",
        queue_offset.map(|at| format!(" (queue offset {at})")).unwrap_or_default(),
        resume_offset.map(|at| format!("; the queue's records past the object start at offset {at}")).unwrap_or_default()
    )]
    TierObjectChanged {
        object: String,
        offset: u64,
        queue_offset: Option<i64>,
        resume_offset: Option<i64>,
        reason: String,
    },
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    pub fn invalid(argument: &'static str, reason: impl Into<String>) -> Self {
        Error::InvalidArgument {
            argument,
            reason: reason.into(),
        }
    }

    pub fn corrupt(file: impl Into<PathBuf>, offset: u64, reason: impl Into<String>) -> Self {
        Error::Corrupt {
            file: file.into(),
            offset,
            queue_offset: None,
            reason: reason.into(),
        }
    }

    pub fn tier(object: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::Tier {
            object: object.into(),
            reason: reason.into(),
            unreachable: false,
        }
    }

    /// A tier error whose server could not be reached or did not answer in time.
    pub fn tier_unreachable(object: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::Tier {
            object: object.into(),
            reason: reason.into(),
            unreachable: true,
        }
    }

    /// An object in the tier that is not the one uploaded (changed or gone).
    pub fn tier_object_changed(
        object: impl Into<String>,
        offset: u64,
        reason: impl Into<String>,
    ) -> Self {
        Error::TierObjectChanged {
            object: object.into(),
            offset,
            queue_offset: None,
            resume_offset: None,
            reason: reason.into(),
        }
    }

    /// A corrupt record found through a queue: say which queue offset points at it.
    pub fn at_queue_offset(self, queue_offset: i64) -> Self {
        match self {
            Error::TierObjectChanged {
                object,
                offset,
                resume_offset,
                reason,
                ..
            } => Error::TierObjectChanged {
                object,
                offset,
                queue_offset: Some(queue_offset),
                resume_offset,
                reason,
            },
            Error::Corrupt {
                file,
                offset,
                reason,
                ..
            } => Error::Corrupt {
                file,
                offset,
                queue_offset: Some(queue_offset),
                reason,
            },
            other => other,
        }
    }

    /// A lost tier object met by a pull: say where the queue's records past it start.
    pub fn resuming_at(self, resume: i64) -> Self {
        match self {
            Error::TierObjectChanged {
                object,
                offset,
                queue_offset,
                reason,
                ..
            } => Error::TierObjectChanged {
                object,
                offset,
                queue_offset,
                resume_offset: Some(resume),
                reason,
            },
            other => other,
        }
    }

    /// Where a reader that accepts the loss of a tier object goes on (`resuming_at`).
    pub fn resume_offset(&self) -> Option<i64> {
        match self {
            Error::TierObjectChanged { resume_offset, .. } => *resume_offset,
            _ => None,
        }
    }
}

/// Attach a path to an `io::Result`.
pub trait IoContext<T> {
    fn at(self, path: &std::path::Path) -> Result<T>;
}

impl<T> IoContext<T> for io::Result<T> {
    fn at(self, path: &std::path::Path) -> Result<T> {
        self.map_err(|source| Error::io(path, source))
    }
}
