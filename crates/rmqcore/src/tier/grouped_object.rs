//! The queue-grouped segment object (format §7.1.1): a sealed segment's records reordered
//! so that each queue's records lie back to back, and a footer mapping each run of one
//! queue's records from its place in the segment to its place in the object.
//!
//! A reader of one queue among many then fetches its own records in dense ranges instead
//! of every other queue's records between them. The record bytes are the segment's own,
//! unchanged; only their order differs, so a reader maps a commit-log position through the
//! footer and decodes what it finds as it would from the segment.
//!
//! Queues are placed in the order of their first record in the segment; within a queue
//! records keep log order. What is not a message (the blank that ends a full segment, the
//! zeros past the written end, bytes that do not decode) is one last run from the first
//! such byte to the segment's end, in place order: it names no queue, and a scan reading
//! the segment back in log order gets it where it was.

use std::collections::HashMap;

use crate::big_endian::{read_i32, read_i64};
use crate::record::{decode_record, Decoded};

/// The trailer's last four bytes: "RMQG".
pub const FOOTER_MAGIC: u32 = 0x524D_5147;
pub const FOOTER_VERSION: u32 = 1;
/// A run in the footer: its log position, object position and length, each a u64.
pub const RUN_BYTES: usize = 24;
/// segment size u64, run count u32, CRC32 u32, version u32, magic u32.
pub const TRAILER_BYTES: usize = 24;

/// Bytes `length` long at `log_position` of the segment, at `object_position` of the
/// object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    pub log_position: u64,
    pub object_position: u64,
    pub length: u64,
}

/// Where a segment's bytes are in its object: runs in log order, covering the segment.
/// An object written before the grouped layout is the segment byte for byte: one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    segment_size: u64,
    runs: Vec<Run>,
}

impl Layout {
    /// The object is the segment itself.
    pub fn identity(segment_size: u64) -> Self {
        Layout {
            segment_size,
            runs: vec![Run {
                log_position: 0,
                object_position: 0,
                length: segment_size,
            }],
        }
    }

    /// The grouped layout of `segment` (its whole file).
    pub fn group(segment: &[u8]) -> Self {
        let size = segment.len() as u64;
        // Runs in log order, each with the index of its queue (in first-seen order).
        let mut in_log: Vec<(usize, u64, u64)> = Vec::new();
        let mut queues: HashMap<(&[u8], i32), usize> = HashMap::new();
        let mut position = 0usize;
        while position < segment.len() {
            let Ok(Decoded::Record(view)) = decode_record(&segment[position..], false) else {
                break;
            };
            let count = queues.len();
            let queue = *queues.entry((view.topic, view.queue_id)).or_insert(count);
            match in_log.last_mut() {
                Some((last, _, length)) if *last == queue => *length += view.total_size as u64,
                _ => in_log.push((queue, position as u64, view.total_size as u64)),
            }
            position += view.total_size;
        }
        let no_queue = queues.len();
        if (position as u64) < size {
            in_log.push((no_queue, position as u64, size - position as u64));
        }
        let mut by_queue: Vec<usize> = (0..in_log.len()).collect();
        by_queue.sort_by_key(|&index| in_log[index].0);
        let mut runs = vec![
            Run {
                log_position: 0,
                object_position: 0,
                length: 0
            };
            in_log.len()
        ];
        let mut object_position = 0;
        for index in by_queue {
            let (_, log_position, length) = in_log[index];
            runs[index] = Run {
                log_position,
                object_position,
                length,
            };
            object_position += length;
        }
        Layout {
            segment_size: size,
            runs,
        }
    }

    pub fn segment_size(&self) -> u64 {
        self.segment_size
    }

    pub fn runs(&self) -> &[Run] {
        &self.runs
    }

    /// The footer's bytes in memory: what a cache of layouts counts.
    pub fn footprint(&self) -> usize {
        self.runs.len() * RUN_BYTES + TRAILER_BYTES
    }

    /// Where the segment's byte at `log_position` is in the object, and how many bytes
    /// from there on follow it in both (to the end of its run); None past the segment.
    pub fn map(&self, log_position: u64) -> Option<(u64, u64)> {
        if log_position >= self.segment_size {
            return None;
        }
        let after = self
            .runs
            .partition_point(|run| run.log_position <= log_position);
        let run = self.runs[after.checked_sub(1)?];
        let within = log_position - run.log_position;
        Some((run.object_position + within, run.length - within))
    }

    /// The object ranges, as (object position, length), holding the segment's `length`
    /// bytes at `log_position` (fewer at the segment's end), in log order.
    pub fn pieces(&self, log_position: u64, length: u64) -> Vec<(u64, u64)> {
        let end = (log_position + length).min(self.segment_size);
        let mut pieces = Vec::new();
        let mut at = log_position;
        while at < end {
            let Some((object_position, left)) = self.map(at) else {
                break;
            };
            let take = left.min(end - at);
            pieces.push((object_position, take));
            at += take;
        }
        pieces
    }

    /// The segment's bytes in object order (what is uploaded before the footer).
    pub fn object_order<'a>(&self, segment: &'a [u8]) -> Vec<&'a [u8]> {
        let mut runs = self.runs.clone();
        runs.sort_by_key(|run| run.object_position);
        runs.iter()
            .map(|run| {
                &segment[run.log_position as usize..(run.log_position + run.length) as usize]
            })
            .collect()
    }

    /// The segment back in log order from its object's first `segment_size` bytes.
    pub fn log_order(&self, object: &[u8]) -> Vec<u8> {
        let mut segment = vec![0u8; self.segment_size as usize];
        for run in &self.runs {
            let from = run.object_position as usize;
            let to = run.log_position as usize;
            let length = run.length as usize;
            segment[to..to + length].copy_from_slice(&object[from..from + length]);
        }
        segment
    }

    /// The footer: the runs in log order, then the trailer (format §7.1).
    pub fn encode_footer(&self) -> Vec<u8> {
        let mut footer = Vec::with_capacity(self.footprint());
        for run in &self.runs {
            footer.extend_from_slice(&run.log_position.to_be_bytes());
            footer.extend_from_slice(&run.object_position.to_be_bytes());
            footer.extend_from_slice(&run.length.to_be_bytes());
        }
        footer.extend_from_slice(&self.segment_size.to_be_bytes());
        footer.extend_from_slice(&(self.runs.len() as u32).to_be_bytes());
        let crc32 = crc32fast::hash(&footer);
        footer.extend_from_slice(&crc32.to_be_bytes());
        footer.extend_from_slice(&FOOTER_VERSION.to_be_bytes());
        footer.extend_from_slice(&FOOTER_MAGIC.to_be_bytes());
        footer
    }

    /// The layout a footer describes, for a segment of `segment_size` bytes; why not when
    /// the footer is truncated, corrupt or does not cover the segment exactly once.
    pub fn decode_footer(footer: &[u8], segment_size: u64) -> Result<Self, String> {
        if footer.len() < TRAILER_BYTES || !(footer.len() - TRAILER_BYTES).is_multiple_of(RUN_BYTES)
        {
            return Err(format!(
                "its footer is {} bytes, not a trailer after whole runs",
                footer.len()
            ));
        }
        let trailer = footer.len() - TRAILER_BYTES;
        let magic = read_i32(footer, trailer + 20) as u32;
        let version = read_i32(footer, trailer + 16) as u32;
        if magic != FOOTER_MAGIC || version != FOOTER_VERSION {
            return Err(format!(
                "its footer ends with magic {magic:08x} version {version}, not a \
                 queue-grouped footer (magic {FOOTER_MAGIC:08x} version {FOOTER_VERSION})"
            ));
        }
        let stored_crc = read_i32(footer, trailer + 12) as u32;
        let crc32 = crc32fast::hash(&footer[..trailer + 12]);
        if crc32 != stored_crc {
            return Err(format!(
                "its footer's CRC32 is {crc32:08x}, {stored_crc:08x} recorded in it"
            ));
        }
        let recorded_size = read_i64(footer, trailer) as u64;
        let count = read_i32(footer, trailer + 8) as u32 as usize;
        if recorded_size != segment_size || count * RUN_BYTES != trailer {
            return Err(format!(
                "its footer says {count} runs of a {recorded_size}-byte segment; it holds \
                 {} runs of a {segment_size}-byte segment",
                trailer / RUN_BYTES
            ));
        }
        let runs: Vec<Run> = footer[..trailer]
            .chunks_exact(RUN_BYTES)
            .map(|run| Run {
                log_position: read_i64(run, 0) as u64,
                object_position: read_i64(run, 8) as u64,
                length: read_i64(run, 16) as u64,
            })
            .collect();
        let mut next = 0u64;
        for run in &runs {
            let in_object = run.object_position.checked_add(run.length);
            if run.log_position != next
                || run.length == 0
                || in_object.is_none_or(|end| end > segment_size)
            {
                return Err(format!(
                    "its footer's run {run:?} does not follow on at {next}"
                ));
            }
            next += run.length;
        }
        if next != segment_size {
            return Err(format!(
                "its footer's runs cover {next} bytes of a {segment_size}-byte segment"
            ));
        }
        Ok(Layout { segment_size, runs })
    }

    /// The layout of a whole object read without its tier state (Spark's reads): a
    /// grouped object ends with a footer whose magic and CRC32 hold; any other object is
    /// the segment itself (written before the grouped layout). Err: an object ending with
    /// the footer magic whose footer does not hold.
    pub fn of_object(object: &[u8]) -> Result<Self, String> {
        let size = object.len();
        if size < TRAILER_BYTES || read_i32(object, size - 4) as u32 != FOOTER_MAGIC {
            return Ok(Layout::identity(size as u64));
        }
        let trailer = size - TRAILER_BYTES;
        let segment_size = read_i64(object, trailer) as u64;
        let count = read_i32(object, trailer + 8) as u32 as u64;
        let holds = count
            .checked_mul(RUN_BYTES as u64)
            .and_then(|runs| segment_size.checked_add(runs))
            .is_some_and(|end| end == trailer as u64);
        if !holds {
            return Err(format!(
                "its footer names {count} runs of a {segment_size}-byte segment, not what a \
                 {size}-byte object holds"
            ));
        }
        let footer_start = segment_size;
        Self::decode_footer(&object[footer_start as usize..], segment_size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{encode_record, record_length, Placement, RecordInput};

    fn record_bytes(topic: &str, queue_id: i32, offset: i64) -> Vec<u8> {
        let host = "127.0.0.1:10911".parse().expect("address");
        let input = RecordInput {
            topic,
            queue_id,
            flag: 0,
            body: b"body",
            body_crc: 0,
            body_crc32: None,
            properties: b"",
            sys_flag: 0,
            born_timestamp: 1,
            born_host: host,
            store_host: host,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
        };
        let mut bytes = vec![0; record_length(&input)];
        let placement = Placement {
            queue_offset: 0,
            physical_offset: offset,
            store_timestamp: 1,
        };
        encode_record(&mut bytes, &input, placement);
        bytes
    }

    fn segment(queues: &[(&str, i32)], tail: usize) -> Vec<u8> {
        let mut segment = Vec::new();
        for &(topic, queue_id) in queues {
            let offset = segment.len() as i64;
            segment.extend(record_bytes(topic, queue_id, offset));
        }
        segment.resize(segment.len() + tail, 0);
        segment
    }

    #[test]
    fn queues_are_grouped_in_first_seen_order_and_the_tail_goes_last() {
        let bytes = segment(
            &[("A", 0), ("A", 0), ("A", 1), ("B", 0), ("A", 0), ("A", 1)],
            100,
        );
        let layout = Layout::group(&bytes);
        let object: Vec<u8> = layout.object_order(&bytes).concat();
        assert_eq!(object.len(), bytes.len());
        assert_eq!(layout.runs().len(), 6, "{:?}", layout.runs());
        assert_eq!(layout.log_order(&object), bytes);
        // Queue A/0's three records first, back to back.
        let record = (bytes.len() - 100) / 6;
        let starts: Vec<u64> = layout
            .runs()
            .iter()
            .map(|run| run.object_position)
            .collect();
        assert_eq!(starts[0], 0);
        assert_eq!(
            starts[3],
            (2 * record) as u64,
            "A/0's third record follows its first two"
        );
        assert_eq!(layout.map(layout.segment_size()), None);
        let pieces = layout.pieces(0, bytes.len() as u64);
        assert_eq!(pieces.len(), 6);
        assert_eq!(
            pieces.iter().map(|piece| piece.1).sum::<u64>(),
            bytes.len() as u64
        );
    }

    #[test]
    fn the_footer_round_trips_and_any_damage_is_refused() {
        let bytes = segment(&[("A", 0), ("B", 0), ("A", 0)], 64);
        let layout = Layout::group(&bytes);
        let footer = layout.encode_footer();
        assert_eq!(footer.len(), 4 * RUN_BYTES + TRAILER_BYTES);
        assert_eq!(
            Layout::decode_footer(&footer, bytes.len() as u64),
            Ok(layout.clone())
        );
        let mut object: Vec<u8> = layout.object_order(&bytes).concat();
        object.extend(&footer);
        assert_eq!(Layout::of_object(&object), Ok(layout.clone()));
        assert_eq!(
            Layout::of_object(&bytes),
            Ok(Layout::identity(bytes.len() as u64))
        );
        for at in 0..footer.len() {
            let mut damaged = footer.clone();
            damaged[at] ^= 0x40;
            assert!(
                Layout::decode_footer(&damaged, bytes.len() as u64).is_err(),
                "byte {at}"
            );
        }
        assert!(Layout::decode_footer(&footer[RUN_BYTES..], bytes.len() as u64).is_err());
        assert!(Layout::decode_footer(&footer, bytes.len() as u64 + 1).is_err());
    }
}
