//! Reading many records of the log in one go (a pull): the segment last read from is kept,
//! so that records in the same segment cost no segment lookup, and each record is decoded
//! and CRC-checked once and handed to the caller as a view of the mapping, not copied,
//! with what owns its bytes (a caller may keep the owner to keep the bytes).

use crate::error::{Error, Result};
use crate::record::RecordView;

use super::{CommitLog, RecordOwner};

/// A reader of records at offsets the caller chooses (a queue's entries), each checked as
/// `CommitLog::read` checks it.
pub struct LogCursor<'log> {
    log: &'log CommitLog,
    /// The segment last read from, kept mapped while the cursor lives, even if retention
    /// deletes its file meanwhile: the records in it were readable when the read began.
    segment: Option<RecordOwner>,
    min_offset: u64,
}

impl<'log> LogCursor<'log> {
    pub fn new(log: &'log CommitLog) -> Self {
        LogCursor {
            log,
            segment: None,
            min_offset: log.min_offset(),
        }
    }

    /// Decode the record at `offset` (CRC checked when `check_crc`) and give its view and
    /// its bytes' owner to `visit`; errors are those of `CommitLog::read`.
    pub fn visit<R>(
        &mut self,
        offset: u64,
        check_crc: bool,
        visit: impl FnOnce(&RecordView<'_>, &RecordOwner) -> R,
    ) -> Result<R> {
        let end = self.log.write_offset();
        if offset < self.min_offset || offset >= end {
            return Err(Error::OffsetOutOfRange {
                what: "commit-log",
                offset: offset as i64,
                min: self.min_offset as i64,
                max: end as i64,
            });
        }
        let holds = |owner: &RecordOwner| match owner {
            RecordOwner::Mapped(segment) => segment.contains(offset),
            RecordOwner::Fetched(_) => false,
        };
        if !self.segment.as_ref().is_some_and(holds) {
            self.segment = self.log.segments.find(offset).map(RecordOwner::Mapped);
        }
        match &self.segment {
            Some(owner @ RecordOwner::Mapped(segment)) => {
                let view = CommitLog::decode_in(segment, offset, end, check_crc)?;
                Ok(visit(&view, owner))
            }
            // An evicted segment: the tier's copy, record by record.
            _ => {
                let record = self.log.read(offset, check_crc)?;
                Ok(visit(&record.view(), &record.owner()))
            }
        }
    }
}
