//! How a decoded batch is described to Java in one `long[]`: a few numbers about the
//! batch, then the address of every column buffer, so that Java reads the columns in
//! place (`Platform.getInt(null, address + 4 * row)` ...) with no call back per row.
//! The slot numbers are mirrored in `java/rmq/spark/BatchLayout.java`; change both.

use rmqcore::segment_decoder::{ColumnBatch, DecodedBatch, SegmentEnd, VarColumn};

pub const ROWS: usize = 0;
pub const NEXT_POSITION: usize = 1;
pub const END: usize = 2;
pub const NOTHING_AFTER: usize = 3;
pub const RECORDS_SCANNED: usize = 4;
/// The first buffer address; the buffers follow in the order `buffer_addresses` lists.
pub const FIRST_BUFFER: usize = 8;
pub const BUFFERS: usize = 32;
pub const SLOTS: usize = FIRST_BUFFER + BUFFERS;

/// `END` values: why decoding stopped (`SegmentEnd`), 0 while more may follow.
pub fn end_code(end: Option<&SegmentEnd>) -> i64 {
    match end {
        None => 0,
        Some(SegmentEnd::Limit) => 1,
        Some(SegmentEnd::Blank) => 2,
        Some(SegmentEnd::EndOfData) => 3,
        Some(SegmentEnd::EndOfFile) => 4,
        Some(SegmentEnd::Invalid(_)) => 5,
    }
}

fn address<T>(values: &[T]) -> i64 {
    values.as_ptr() as i64
}

fn var(column: &VarColumn) -> [i64; 2] {
    [address(&column.offsets), address(&column.data)]
}

/// The slots of `batch`. The addresses stay valid until the batch is freed: the batch is
/// boxed and never changed after decoding.
pub fn describe(batch: &DecodedBatch) -> [i64; SLOTS] {
    let mut slots = describe_columns(&batch.columns, batch.next_position as i64);
    slots[END] = end_code(batch.end.as_ref());
    slots[NOTHING_AFTER] = match &batch.end {
        Some(SegmentEnd::Invalid(invalid)) => i64::from(invalid.nothing_after),
        _ => 0,
    };
    slots[RECORDS_SCANNED] = batch.records_scanned as i64;
    slots
}

/// The slots of columns that did not come from a segment (a broker's pull, where
/// `next_position` is the queue offset the next pull starts at): `END` stays 0.
pub fn describe_columns(columns: &ColumnBatch, next_position: i64) -> [i64; SLOTS] {
    let mut slots = [0i64; SLOTS];
    slots[ROWS] = columns.rows() as i64;
    slots[NEXT_POSITION] = next_position;
    let [topic_offsets, topic_data] = var(&columns.topic);
    let [msg_id_offsets, msg_id_data] = var(&columns.msg_id);
    let [tags_offsets, tags_data] = var(&columns.tags);
    let [key_offsets, key_data] = var(&columns.keys.values);
    let [name_offsets, name_data] = var(&columns.properties.names);
    let [value_offsets, value_data] = var(&columns.properties.values);
    let [body_offsets, body_data] = var(&columns.body);
    let [born_offsets, born_data] = var(&columns.born_host);
    let [store_offsets, store_data] = var(&columns.store_host);
    let buffers: [i64; BUFFERS] = [
        topic_offsets,
        topic_data,
        address(&columns.queue_id),
        address(&columns.queue_offset),
        address(&columns.commitlog_offset),
        msg_id_offsets,
        msg_id_data,
        tags_offsets,
        tags_data,
        address(&columns.tags_valid.bytes),
        address(&columns.keys.offsets),
        key_offsets,
        key_data,
        address(&columns.properties.offsets),
        name_offsets,
        name_data,
        value_offsets,
        value_data,
        body_offsets,
        body_data,
        address(&columns.body_size),
        address(&columns.born_timestamp),
        address(&columns.store_timestamp),
        born_offsets,
        born_data,
        store_offsets,
        store_data,
        address(&columns.sys_flag),
        address(&columns.flag),
        address(&columns.reconsume_times),
        address(&columns.crc_ok.bytes),
        address(&columns.crc_checked.bytes),
    ];
    slots[FIRST_BUFFER..].copy_from_slice(&buffers);
    slots
}
