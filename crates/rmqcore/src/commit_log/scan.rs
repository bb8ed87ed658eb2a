//! Walking the log record by record regardless of `write_offset`, for the readers that
//! must find out where the valid data ends rather than trust a recorded end: recovery,
//! verify and rebuild. It validates what it walks (offsets, blanks, room for the closing
//! blank) and says why it stopped (`ScanEnd`) instead of failing, since an invalid
//! record is the expected end of a log cut short by a crash; segments only the tier holds
//! are fetched whole, as such a scan reads everything anyway.

use crate::error::Result;
use crate::record::{decode_record, DecodeError, Decoded, RecordView, END_FILE_MIN_BLANK_LENGTH};

use super::tiered::SegmentBytes;
use super::CommitLog;

/// Why a scan stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScanEnd {
    /// Zero bytes where the next record would start.
    EndOfData,
    /// The last segment ended with a blank; the next record starts a new segment.
    EndOfSegments,
    /// Bytes that are not a valid record, at `offset`.
    Invalid { offset: u64, reason: String },
}

impl CommitLog {
    /// Walk records from `from` (a record boundary) until the data ends or a record is
    /// invalid, calling `visit` for each valid one; `visit` may reject a record (with a
    /// reason), which ends the scan there. Ignores `write_offset`, so recovery can find
    /// the end of the log. Returns the offset just past the last accepted record.
    pub fn scan(
        &self,
        from: u64,
        check_crc: bool,
        mut visit: impl FnMut(u64, &RecordView<'_>) -> Result<Option<String>>,
    ) -> Result<(u64, ScanEnd)> {
        let mut offset = from;
        loop {
            // A local segment is walked in place; one only the tier holds is fetched
            // whole (scans are verify and rebuild, which read everything anyway).
            let held = match self.segments.find(offset) {
                Some(segment) => SegmentBytes::Mapped(segment),
                None => match self.remote_segment_bytes(offset)? {
                    Some((start, bytes)) => SegmentBytes::Fetched(start, bytes),
                    None => return Ok((offset, ScanEnd::EndOfSegments)),
                },
            };
            let (segment_start, segment_bytes) = (held.start_offset(), held.bytes());
            let segment_end = segment_start + segment_bytes.len() as u64;
            while offset < segment_end {
                let position = (offset - segment_start) as usize;
                let bytes = &segment_bytes[position..];
                match decode_record(bytes, check_crc) {
                    Ok(Decoded::Record(view)) => {
                        if view.physical_offset != offset as i64 {
                            let reason = format!("PHYSICALOFFSET says {}", view.physical_offset);
                            return Ok((offset, ScanEnd::Invalid { offset, reason }));
                        }
                        if view.total_size + END_FILE_MIN_BLANK_LENGTH > bytes.len() {
                            let reason =
                                "record leaves no room for the end-of-segment blank".to_string();
                            return Ok((offset, ScanEnd::Invalid { offset, reason }));
                        }
                        if let Some(reason) = visit(offset, &view)? {
                            return Ok((offset, ScanEnd::Invalid { offset, reason }));
                        }
                        offset += view.total_size as u64;
                    }
                    Ok(Decoded::Blank) => {
                        let declared = crate::big_endian::read_i32(bytes, 0);
                        if usize::try_from(declared).ok() != Some(bytes.len()) {
                            let reason = format!(
                                "blank record says {declared} bytes but {} remain in the segment",
                                bytes.len()
                            );
                            return Ok((offset, ScanEnd::Invalid { offset, reason }));
                        }
                        offset = segment_end;
                    }
                    Ok(Decoded::End) => return Ok((offset, ScanEnd::EndOfData)),
                    Err(DecodeError::Truncated { .. }) if bytes.iter().all(|b| *b == 0) => {
                        return Ok((offset, ScanEnd::EndOfData));
                    }
                    Err(error) => {
                        return Ok((
                            offset,
                            ScanEnd::Invalid {
                                offset,
                                reason: error.to_string(),
                            },
                        ))
                    }
                }
            }
        }
    }
}
