//! Reading many records of the log in one go (a pull): the segment last read from is kept,
//! so that records in the same segment cost no segment lookup, and each record is decoded
//! and CRC-checked once and handed to the caller as a view of the mapping, not copied,
//! with what owns its bytes (a caller may keep the owner to keep the bytes).

use crate::error::{Error, Result};
use crate::record::RecordView;

use super::tiered::RemoteSegmentAt;
use super::{CommitLog, RecordOwner};

/// A reader of records at offsets the caller chooses (a queue's entries), each checked as
/// `CommitLog::read` checks it.
pub struct LogCursor<'log> {
    log: &'log CommitLog,
    /// The segment last read from, kept mapped while the cursor lives, even if retention
    /// deletes its file meanwhile: the records in it were readable when the read began.
    segment: Option<RecordOwner>,
    /// The evicted segment last read from, likewise, with the bytes its last read gave:
    /// the next records in it cost no lookup of their segment (each read asked of the
    /// tier still checks the tier lists it), those in the kept bytes no read at all.
    remote: Option<RemoteSegmentAt>,
    min_offset: u64,
}

impl<'log> LogCursor<'log> {
    pub fn new(log: &'log CommitLog) -> Self {
        LogCursor {
            log,
            segment: None,
            remote: None,
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
        let mut visit = Some(visit);
        if let (Some(at), Some(remote)) = (
            self.remote.as_mut().filter(|at| at.contains(offset)),
            self.log.remote.get(),
        ) {
            // Decoded and checked once, and handed over as it is.
            let read =
                self.log
                    .remote_record(remote.as_ref(), at, offset, check_crc, |view, bytes| {
                        let visit = visit.take().expect("visited once");
                        visit(view, &RecordOwner::Fetched(bytes.clone()))
                    });
            match read {
                Ok(result) => return Ok(result),
                // The segment left the tier since: read as a first read is, which answers
                // for an offset no segment holds any more as it always has.
                Err(Error::NotFound(_)) => self.remote = None,
                Err(error) => return Err(error),
            }
        }
        let visit = visit.take().expect("not visited yet");
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
                self.remote = self
                    .log
                    .remote
                    .get()
                    .and_then(|remote| RemoteSegmentAt::holding(remote.as_ref(), offset));
                Ok(visit(&record.view(), &record.owner()))
            }
        }
    }
}
