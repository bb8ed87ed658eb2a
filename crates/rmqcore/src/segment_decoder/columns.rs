//! Decoded records as columns: one plain vector per field, laid out as Apache Arrow lays
//! out its arrays so that a binding can hand the vectors over without converting them.
//!
//! - Variable-length values (text, bytes): `offsets` (i32, `rows + 1` of them, starting
//!   at 0) and `data`; value `i` is `data[offsets[i]..offsets[i + 1]]`.
//! - Lists and maps: `offsets` into a child column (for maps, two child columns).
//! - Booleans and validity: bitmaps, least-significant bit first.
//!
//! Text is UTF-8; invalid sequences become U+FFFD, as Java's decoding does. The values
//! follow `StoredMessage::from_record`: `TAGS` and `KEYS` are lifted out of the
//! properties, keys are split on spaces, and a repeated property keeps its later value.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::ops::Range;

use crate::record::properties::{
    NAME_VALUE_SEPARATOR, PROPERTY_KEYS, PROPERTY_SEPARATOR, PROPERTY_TAGS,
};

use super::arrow::{Bitmap, ListColumn, MapColumn, VarColumn};
use super::SegmentRecord;

/// The text of the last address seen, since a segment holds few distinct hosts.
#[derive(Debug, Clone, Default)]
struct HostText {
    address: Option<SocketAddr>,
    text: String,
}

impl HostText {
    fn text(&mut self, address: SocketAddr) -> &[u8] {
        if self.address != Some(address) {
            self.text.clear();
            write!(self.text, "{address}").expect("writing to a String cannot fail");
            self.address = Some(address);
        }
        self.text.as_bytes()
    }
}

/// Which of the costlier columns to fill. An unselected column still has a value per
/// row (empty text, an empty list or map, no tag), so every column stays well formed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColumnSelection {
    pub msg_id: bool,
    /// `tags`, `keys` and `properties`, which one pass over the properties fills.
    pub properties: bool,
    pub body: bool,
    /// `born_host` and `store_host`.
    pub hosts: bool,
}

impl ColumnSelection {
    pub const ALL: ColumnSelection = ColumnSelection {
        msg_id: true,
        properties: true,
        body: true,
        hosts: true,
    };
}

impl Default for ColumnSelection {
    fn default() -> Self {
        ColumnSelection::ALL
    }
}

/// One column per field of the Spark schema (except the shard name, which the reader
/// knows); timestamps in milliseconds since the epoch.
#[derive(Debug, Clone, Default)]
pub struct ColumnBatch {
    pub topic: VarColumn,
    pub queue_id: Vec<i32>,
    pub queue_offset: Vec<i64>,
    pub commitlog_offset: Vec<i64>,
    pub msg_id: VarColumn,
    pub tags: VarColumn,
    /// Unset where a record has no (non-empty) `TAGS` property.
    pub tags_valid: Bitmap,
    pub keys: ListColumn,
    pub properties: MapColumn,
    pub body: VarColumn,
    pub body_size: Vec<i32>,
    pub born_timestamp: Vec<i64>,
    pub store_timestamp: Vec<i64>,
    pub born_host: VarColumn,
    pub store_host: VarColumn,
    pub sys_flag: Vec<i32>,
    pub flag: Vec<i32>,
    pub reconsume_times: Vec<i32>,
    pub crc_ok: Bitmap,
    /// Unset where CRCs were not verified.
    pub crc_checked: Bitmap,
    record_bytes: usize,
    selection: ColumnSelection,
    born_host_text: HostText,
    store_host_text: HostText,
    /// Name and value ranges of the current record's properties, reused between rows.
    scratch: Vec<(Range<usize>, Range<usize>)>,
}

impl ColumnBatch {
    /// An empty batch with room for about `rows` rows of `record_bytes` in total, so that
    /// filling it does not reallocate (and copy) its columns as they grow.
    pub fn with_capacity(rows: usize, record_bytes: usize, selection: ColumnSelection) -> Self {
        let text = |bytes_per_row: usize| VarColumn::with_capacity(rows, rows * bytes_per_row);
        ColumnBatch {
            topic: text(16),
            queue_id: Vec::with_capacity(rows),
            queue_offset: Vec::with_capacity(rows),
            commitlog_offset: Vec::with_capacity(rows),
            msg_id: text(32),
            tags: text(8),
            body: VarColumn::with_capacity(rows, if selection.body { record_bytes } else { 0 }),
            body_size: Vec::with_capacity(rows),
            born_timestamp: Vec::with_capacity(rows),
            store_timestamp: Vec::with_capacity(rows),
            born_host: text(24),
            store_host: text(24),
            sys_flag: Vec::with_capacity(rows),
            flag: Vec::with_capacity(rows),
            reconsume_times: Vec::with_capacity(rows),
            selection,
            ..ColumnBatch::default()
        }
    }

    pub fn rows(&self) -> usize {
        self.queue_id.len()
    }

    /// Total size of the records decoded into this batch.
    pub fn record_bytes(&self) -> usize {
        self.record_bytes
    }

    pub fn push(&mut self, record: &SegmentRecord<'_>) {
        let view = &record.view;
        let selection = self.selection;
        self.topic.push_text(view.topic);
        self.queue_id.push(view.queue_id);
        self.queue_offset.push(view.queue_offset);
        self.commitlog_offset.push(view.physical_offset);
        if selection.msg_id {
            push_msg_id(&mut self.msg_id, &view.store_host, view.physical_offset);
        } else {
            self.msg_id.push_bytes(b"");
        }
        self.push_properties(if selection.properties {
            view.properties
        } else {
            b""
        });
        self.body
            .push_bytes(if selection.body { view.body } else { b"" });
        self.body_size
            .push(i32::try_from(view.body.len()).expect("a record's length is an i32"));
        self.born_timestamp.push(view.born_timestamp);
        self.store_timestamp.push(view.store_timestamp);
        if selection.hosts {
            self.born_host
                .push_bytes(self.born_host_text.text(view.born_host));
            self.store_host
                .push_bytes(self.store_host_text.text(view.store_host));
        } else {
            self.born_host.push_bytes(b"");
            self.store_host.push_bytes(b"");
        }
        self.sys_flag.push(view.sys_flag);
        self.flag.push(view.flag);
        self.reconsume_times.push(view.reconsume_times);
        self.crc_ok.push(record.crc_ok.unwrap_or(false));
        self.crc_checked.push(record.crc_ok.is_some());
        self.record_bytes += view.total_size;
    }

    /// Split the properties (format §1.6) into tags, keys and the rest in one pass.
    fn push_properties(&mut self, properties: &[u8]) {
        let mut tags: Option<Range<usize>> = None;
        let mut keys: Option<Range<usize>> = None;
        self.scratch.clear();
        let mut start = 0;
        loop {
            let end = properties[start..]
                .iter()
                .position(|b| *b == PROPERTY_SEPARATOR)
                .map_or(properties.len(), |at| start + at);
            let entry = &properties[start..end];
            if let Some(split) = entry.iter().position(|b| *b == NAME_VALUE_SEPARATOR) {
                let name = start..start + split;
                let value = start + split + 1..end;
                if !name.is_empty() && !value.is_empty() {
                    match &properties[name.clone()] {
                        n if n == PROPERTY_TAGS.as_bytes() => tags = Some(value),
                        n if n == PROPERTY_KEYS.as_bytes() => keys = Some(value),
                        // Storage integrity, hidden as `rmq.Store` hides it.
                        n if n == crate::record::crc_property::CRC_PROPERTY_NAME.as_bytes() => {}
                        n => match self
                            .scratch
                            .iter_mut()
                            .find(|(seen, _)| &properties[seen.clone()] == n)
                        {
                            Some(existing) => existing.1 = value,
                            None => self.scratch.push((name, value)),
                        },
                    }
                }
            }
            if end == properties.len() {
                break;
            }
            start = end + 1;
        }
        match tags {
            Some(range) => {
                self.tags.push_text(&properties[range]);
                self.tags_valid.push(true);
            }
            None => {
                self.tags.push_bytes(b"");
                self.tags_valid.push(false);
            }
        }
        if let Some(range) = keys {
            for key in properties[range]
                .split(|b| *b == b' ')
                .filter(|key| !key.is_empty())
            {
                self.keys.values.push_text(key);
            }
        }
        self.keys.close_row();
        for (name, value) in &self.scratch {
            self.properties.names.push_text(&properties[name.clone()]);
            self.properties.values.push_text(&properties[value.clone()]);
        }
        self.properties.close_row();
    }
}

/// The offset message id (format §1.4), written straight into the column.
fn push_msg_id(column: &mut VarColumn, store_host: &SocketAddr, physical_offset: i64) {
    crate::record::msg_id::push_msg_id_hex(&mut column.data, store_host, physical_offset);
    column.close_value();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::msg_id::create_msg_id;

    #[test]
    fn msg_ids_match_the_engine() {
        for host in ["192.168.0.10:10911", "[2001:db8::1]:9876"] {
            let host: SocketAddr = host.parse().unwrap();
            let mut column = VarColumn::default();
            push_msg_id(&mut column, &host, 0x1234);
            assert_eq!(column.value(0), create_msg_id(&host, 0x1234).as_bytes());
        }
    }

    #[test]
    fn bitmaps_are_least_significant_bit_first() {
        let mut bitmap = Bitmap::default();
        for bit in [true, false, false, true, false, false, false, false, true] {
            bitmap.push(bit);
        }
        assert_eq!(bitmap.bytes, vec![0b0000_1001, 0b1]);
        assert_eq!(bitmap.len, 9);
        assert_eq!(bitmap.count_ones(), 3);
        assert!(bitmap.get(8));
    }

    #[test]
    fn properties_split_like_the_stored_message() {
        let mut batch = ColumnBatch::default();
        batch.push_properties(b"a\x01x\x02TAGS\x01t\xC3\xA9\x02\x01y\x02KEYS\x01k1  k2\x02a\x01z\x01w\x02b\x01\x02junk");
        assert_eq!(batch.tags.value(0), "té".as_bytes());
        assert!(batch.tags_valid.get(0));
        assert_eq!(batch.keys.offsets, vec![0, 2]);
        assert_eq!(batch.keys.values.value(1), b"k2");
        assert_eq!(batch.properties.offsets, vec![0, 1]);
        assert_eq!(batch.properties.names.value(0), b"a");
        assert_eq!(batch.properties.values.value(0), b"z\x01w");

        batch.push_properties(b"");
        assert!(!batch.tags_valid.get(1));
        assert_eq!(batch.keys.offsets, vec![0, 2, 2]);
        assert_eq!(batch.properties.offsets, vec![0, 1, 1]);
    }

    #[test]
    fn invalid_utf8_becomes_replacement_characters() {
        let mut column = VarColumn::default();
        column.push_text(b"ok\xFF");
        assert_eq!(column.value(0), "ok\u{FFFD}".as_bytes());
    }
}
