//! Reading a segment one record at a time: what starts at a byte position (a valid record
//! or the reason there is none, `Step`) and the iterator over a range built on it. Every
//! other reader of the decoder goes through `read_at`, so the validation (the record's
//! own offset, the blank's length, trailing zeros, the CRCs) is written once, and an
//! invalid record is described the same way wherever it is met.

use std::path::Path;

use crate::big_endian::read_i32;
use crate::error::Error;
use crate::record::body_crc::body_crc;
use crate::record::crc_property::check_crc_property;
use crate::record::{decode_record, DecodeError, Decoded, RecordView, TOTAL_SIZE_POSITION};

use super::SegmentDecoder;

/// Why reading stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SegmentEnd {
    /// The next record starts at or past the requested limit.
    Limit,
    /// The end-of-segment blank: the log continues in the next segment.
    Blank,
    /// Zero bytes where a record would start: the end of written data.
    EndOfData,
    /// The last record ended exactly at the end of the file.
    EndOfFile,
    /// Bytes that are not a valid record.
    Invalid(InvalidRecord),
}

/// A record that failed validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidRecord {
    /// Byte position in the file.
    pub position: usize,
    pub reason: String,
    /// Every byte after the record's declared extent is zero: the shape a write torn by a
    /// crash (or still in progress) leaves at the end of the last segment.
    pub nothing_after: bool,
}

impl InvalidRecord {
    pub fn to_error(&self, file: &Path) -> Error {
        Error::corrupt(file, self.position as u64, self.reason.clone())
    }
}

/// One valid record and where it starts in the file.
#[derive(Debug, Clone)]
pub struct SegmentRecord<'a> {
    pub position: usize,
    pub view: RecordView<'a>,
    /// `None` when CRCs were not verified; otherwise whether the body CRC matches and, if
    /// the record carries RocketMQ 5's CRC property (format §1.5), whether that matches too.
    pub crc_ok: Option<bool>,
}

/// The outcome of reading at one position.
#[derive(Debug, Clone)]
// Returned by value for every record read; boxing the record would allocate each time.
#[allow(clippy::large_enum_variant)]
pub enum Step<'a> {
    Record(SegmentRecord<'a>),
    End(SegmentEnd),
}

impl SegmentDecoder {
    /// Read what starts at `position`: a record, or the reason there is none. `limit` is
    /// where the caller's range ends (records must start before it).
    pub fn read_at(&self, position: usize, limit: usize, verify_crc: bool) -> Step<'_> {
        let file = self.bytes();
        if position >= file.len() {
            return Step::End(SegmentEnd::EndOfFile);
        }
        if position >= limit {
            return Step::End(SegmentEnd::Limit);
        }
        let bytes = &file[position..];
        let invalid =
            |reason: String| Step::End(SegmentEnd::Invalid(self.invalid(position, reason)));
        match decode_record(bytes, false) {
            Ok(Decoded::Record(view)) => {
                let expected = self.start_offset + position as u64;
                if u64::try_from(view.physical_offset).ok() != Some(expected) {
                    return invalid(format!(
                        "PHYSICALOFFSET says {} but the record is at commit-log offset {expected}",
                        view.physical_offset
                    ));
                }
                let crc_ok = verify_crc.then(|| crc_matches(&view, &bytes[..view.total_size]));
                Step::Record(SegmentRecord {
                    position,
                    view,
                    crc_ok,
                })
            }
            Ok(Decoded::Blank) => {
                let declared = read_i32(bytes, TOTAL_SIZE_POSITION);
                if usize::try_from(declared).ok() == Some(bytes.len()) {
                    Step::End(SegmentEnd::Blank)
                } else {
                    invalid(format!(
                        "end-of-segment blank says {declared} bytes but {} remain in the file",
                        bytes.len()
                    ))
                }
            }
            Ok(Decoded::End) => Step::End(SegmentEnd::EndOfData),
            Err(DecodeError::Truncated { .. }) if bytes.iter().all(|b| *b == 0) => {
                Step::End(SegmentEnd::EndOfData)
            }
            Err(error) => invalid(error.to_string()),
        }
    }

    fn invalid(&self, position: usize, reason: String) -> InvalidRecord {
        let bytes = &self.bytes()[position..];
        let declared = if bytes.len() >= 4 {
            usize::try_from(read_i32(bytes, TOTAL_SIZE_POSITION)).unwrap_or(0)
        } else {
            0
        };
        let extent = if (8..=bytes.len()).contains(&declared) {
            declared
        } else {
            bytes.len().min(8)
        };
        InvalidRecord {
            position,
            reason: format!(
                "{reason} (commit-log offset {})",
                self.start_offset + position as u64
            ),
            nothing_after: bytes[extent..].iter().all(|b| *b == 0),
        }
    }

    /// Iterate the valid records starting in `[from, limit)`; `Records::end` then says why
    /// the iteration stopped.
    pub fn records(&self, from: usize, limit: usize, verify_crc: bool) -> Records<'_> {
        Records {
            decoder: self,
            position: from,
            limit,
            verify_crc,
            end: None,
        }
    }
}

/// The body CRC (skipped for an empty body, as RocketMQ does) and, when present, the
/// whole-record CRC property.
fn crc_matches(view: &RecordView<'_>, record_bytes: &[u8]) -> bool {
    let body_ok = view.body.is_empty() || body_crc(view.body) == view.body_crc;
    body_ok && check_crc_property(view, record_bytes).unwrap_or(true)
}

/// Valid records of a range, in order. See `SegmentDecoder::records`.
pub struct Records<'a> {
    decoder: &'a SegmentDecoder,
    position: usize,
    limit: usize,
    verify_crc: bool,
    end: Option<SegmentEnd>,
}

impl Records<'_> {
    /// Why the iteration stopped; `None` until it has.
    pub fn end(&self) -> Option<&SegmentEnd> {
        self.end.as_ref()
    }

    /// Where the next record would start.
    pub fn position(&self) -> usize {
        self.position
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = SegmentRecord<'a>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.end.is_some() {
            return None;
        }
        match self
            .decoder
            .read_at(self.position, self.limit, self.verify_crc)
        {
            Step::Record(record) => {
                self.position += record.view.total_size;
                Some(record)
            }
            Step::End(end) => {
                self.end = Some(end);
                None
            }
        }
    }
}
