//! Reads of evicted segments by commit-log position: each position is mapped through its
//! object's layout (the footer of a queue-grouped object, `grouped_object.rs`) to the
//! object's bytes, which `ranged_reads.rs` fetches through the block cache. A record lies
//! whole within one run, so a record read is one object range; a read spanning runs is
//! pieced together in log order.
//!
//! A footer is read with the first read of its object, from its local copy
//! (`local_footers.rs`, written at upload) or else from the bucket, checked (CRC32, and
//! that its runs cover the segment exactly), and kept within a budget (`bounded_cache.rs`). A footer that
//! does not hold fails every read of the object as `TierObjectChanged`: its records are
//! never served through a wrong map.

use std::sync::Arc;

use bytes::Bytes;

use super::grouped_object::Layout;
use super::remote_log::RemoteLog;
use super::state::TieredSegment;
use crate::error::{Error, Result};

impl RemoteLog {
    /// Where `segment`'s bytes are in its object.
    pub(super) fn layout(&self, segment: &TieredSegment) -> Result<Arc<Layout>> {
        let Some(segment_size) = segment.segment_size else {
            return Ok(Arc::new(Layout::identity(segment.size)));
        };
        let start = segment.start_offset;
        {
            let last = self.last_layout.lock().expect("layout lock");
            if let Some((at, layout)) = &*last {
                if *at == start {
                    return Ok(Arc::clone(layout));
                }
            }
        }
        let kept = self.layouts.lock().expect("layouts lock").get(&start);
        let layout = match kept {
            Some(layout) => layout,
            None => {
                let layout = Arc::new(self.load_layout(segment, segment_size)?);
                self.layouts
                    .lock()
                    .expect("layouts lock")
                    .insert(start, Arc::clone(&layout));
                layout
            }
        };
        *self.last_layout.lock().expect("layout lock") = Some((start, Arc::clone(&layout)));
        Ok(layout)
    }

    /// The footer of `segment`'s object (its bytes past the segment's), from its local
    /// copy or else fetched (and the copy rewritten), checked either way.
    fn load_layout(&self, segment: &TieredSegment, segment_size: u64) -> Result<Layout> {
        let object = self.client.location().segment(segment.start_offset);
        let changed = |reason: String| {
            Error::tier_object_changed(
                self.client.location().describe(&object),
                segment_size,
                reason,
            )
        };
        if segment_size >= segment.size {
            return Err(changed(format!(
                "the state records a {segment_size}-byte segment in a {}-byte object",
                segment.size
            )));
        }
        let start = segment.start_offset;
        if let Some(kept) = self.footers.load(start) {
            if let Ok(layout) = Layout::decode_footer(&kept, segment_size) {
                return Ok(layout);
            }
        }
        let footer = self.counted_get(
            &object,
            segment_size..segment.size,
            (segment.size, segment.crc32),
        )?;
        let layout = Layout::decode_footer(&footer, segment_size).map_err(changed)?;
        self.footers.save(start, &footer);
        Ok(layout)
    }

    /// Forget what is kept of a segment's object (it left the tier).
    pub(super) fn forget_layout(&self, start_offset: u64) {
        self.footers.remove(start_offset);
        self.layouts
            .lock()
            .expect("layouts lock")
            .forget(&start_offset);
        let mut last = self.last_layout.lock().expect("layout lock");
        if last.as_ref().is_some_and(|(at, _)| *at == start_offset) {
            *last = None;
        }
    }

    /// `length` bytes at commit-log `position` of `segment` (fewer at its end).
    pub(super) fn read_log(
        &self,
        segment: &TieredSegment,
        position: u64,
        length: usize,
    ) -> Result<Bytes> {
        let layout = self.layout(segment)?;
        let pieces = layout.pieces(position, length as u64);
        if let [(at, length)] = pieces[..] {
            return self.read_segment(segment, at, length as usize);
        }
        let mut bytes = Vec::with_capacity(length);
        for (at, length) in pieces {
            bytes.extend_from_slice(&self.read_segment(segment, at, length as usize)?);
        }
        Ok(Bytes::from(bytes))
    }

    /// Up to `length` bytes at commit-log `position` (up to `up_to`, read as far as
    /// `length` reaches: `read_in_block_up_to`), no further than the end of the run (the
    /// bytes after it in the object are another queue's) nor of the cached block holding
    /// them; empty only at the segment's end.
    pub(super) fn read_log_in_block(
        &self,
        segment: &TieredSegment,
        position: u64,
        length: usize,
        up_to: usize,
    ) -> Result<Bytes> {
        let layout = self.layout(segment)?;
        let Some((at, in_run)) = layout.map(position) else {
            return Ok(Bytes::new());
        };
        let within = |bytes: usize| (bytes as u64).min(in_run) as usize;
        self.read_in_block_up_to(segment, at, within(length), within(up_to))
    }

    /// The whole segment in log order, its object fetched in one GET (not cached) and
    /// checked against its recorded size and CRC32: what scans of the whole log read.
    pub fn read_whole_log(&self, segment: &TieredSegment) -> Result<Bytes> {
        let object = self.read_whole_segment(segment)?;
        let Some(segment_size) = segment.segment_size else {
            return Ok(object);
        };
        let name = self.client.location().segment(segment.start_offset);
        let footer = object.get(segment_size as usize..).unwrap_or_default();
        let layout = Layout::decode_footer(footer, segment_size).map_err(|reason| {
            Error::tier_object_changed(self.client.location().describe(&name), segment_size, reason)
        })?;
        Ok(Bytes::from(layout.log_order(&object)))
    }

    /// Records a reader will read soon, as (commit-log offset, size), mapped to where
    /// they are in their objects: (segment, object position, length). Records that lie
    /// back to back in the log (a batch) are mapped as one span, piece by piece of the
    /// object (one per run of the footer it crosses), not record by record: a pull's
    /// hints name thousands of records. A record whose footer cannot be loaded is left
    /// out: its reader loads it and sees why.
    pub(super) fn map_records(&self, records: &[(u64, u32)]) -> Vec<(TieredSegment, u64, u64)> {
        let mut mapped = Vec::new();
        // The segment of the last span, and its layout unless it failed to load (its
        // other records are then left out too, not loaded again one by one).
        let mut current: Option<(TieredSegment, Option<Arc<Layout>>)> = None;
        for (mut offset, mut length) in spans(records) {
            loop {
                let inside = current
                    .as_ref()
                    .is_some_and(|(s, _)| offset >= s.start_offset && offset < s.end_offset());
                if !inside {
                    current = self
                        .segment_holding(offset)
                        .map(|segment| (segment, self.layout(&segment).ok()));
                }
                let Some((segment, Some(layout))) = &current else {
                    break;
                };
                // The part of the span in this segment; the rest goes on in the next.
                let here = length.min(segment.end_offset() - offset);
                for (at, piece) in layout.pieces(offset - segment.start_offset, here.max(1)) {
                    mapped.push((*segment, at, piece));
                }
                if here >= length {
                    break;
                }
                offset += here;
                length -= here;
            }
        }
        mapped
    }
}

/// `records` (ascending commit-log offsets) as spans (offset, length): records that
/// follow each other with no byte between them joined into one.
fn spans(records: &[(u64, u32)]) -> Vec<(u64, u64)> {
    let mut spans: Vec<(u64, u64)> = Vec::new();
    for &(offset, size) in records {
        let size = u64::from(size);
        match spans.last_mut() {
            Some((start, length)) if *start + *length == offset && size > 0 => *length += size,
            _ => spans.push((offset, size)),
        }
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::spans;

    #[test]
    fn records_back_to_back_are_one_span_and_a_gap_starts_another() {
        // An empty record (208, 0) starts a span that the next record grows.
        let records = [(100, 10), (110, 20), (130, 5), (200, 8), (208, 0), (208, 4)];
        assert_eq!(spans(&records), vec![(100, 35), (200, 8), (208, 4)]);
        assert!(spans(&[]).is_empty());
        // Out of order: nothing is joined backwards.
        assert_eq!(spans(&[(50, 10), (40, 10)]), vec![(50, 10), (40, 10)]);
    }
}
