//! Cutting a segment into parts of about a given size for parallel readers (one Spark
//! partition each). A cut must fall on a record's start, and finding one must not cost a
//! decode, so this follows only the chain of record lengths in the headers; the readers
//! of the parts do the validation.

use crate::big_endian::{read_i32, read_i64};
use crate::record::{
    MAGIC_POSITION, MAGIC_V1, MAGIC_V2, PHYSICAL_OFFSET_POSITION, TOTAL_SIZE_POSITION,
};

use super::SegmentDecoder;

impl SegmentDecoder {
    /// Positions at which to cut the file into parts of about `part_size` bytes, each
    /// starting on a record: always `[0, ...]`, increasing. Follows the chain of record
    /// lengths from the start (it reads each record's header, not its body), so a cut is
    /// never placed inside a record. Stops cutting where the chain ends or breaks; the
    /// reader of the last part meets and reports whatever is there.
    pub fn split_points(&self, part_size: usize) -> Vec<usize> {
        let bytes = self.bytes();
        let mut points = vec![0];
        if part_size == 0 {
            return points;
        }
        let mut next_cut = part_size;
        let mut position = 0;
        while position + PHYSICAL_OFFSET_POSITION + 8 <= bytes.len() {
            let header = &bytes[position..];
            let magic = read_i32(header, MAGIC_POSITION);
            let Ok(length) = usize::try_from(read_i32(header, TOTAL_SIZE_POSITION)) else {
                break;
            };
            let at = read_i64(header, PHYSICAL_OFFSET_POSITION);
            if (magic != MAGIC_V1 && magic != MAGIC_V2)
                || length <= PHYSICAL_OFFSET_POSITION
                || length > header.len()
                || u64::try_from(at).ok() != Some(self.start_offset + position as u64)
            {
                break;
            }
            if position >= next_cut {
                points.push(position);
                next_cut = position + part_size;
            }
            position += length;
        }
        points
    }
}
