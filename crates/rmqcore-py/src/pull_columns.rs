//! `rmq._rmqcore.decode_pull_columns`: an encoded `rmq.v1.PullResponse` straight into the
//! column buffers `SegmentDecoder.decode` hands out (Arrow's layouts), for the Spark
//! stream source reading from a broker. `decode_pull_response` makes a Python object per
//! message, and the source then made Python lists per column from them: per row that cost
//! more than the rest of a micro-batch. Here no Python object is made per message.

use std::collections::HashSet;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use rmqcore::segment_decoder::ColumnBatch;
use rmqproto::fields::map_entry::{KEY as MAP_KEY, VALUE as MAP_VALUE};
use rmqproto::fields::pull_response as response;
use rmqproto::fields::stored_message as stored;
use rmqproto::wire::{WireReader, WireValue};

use crate::decoder::columns_dict;

/// The rows of one Pull response that `decode_pull_columns` kept, as Arrow buffers.
#[pyclass(name = "PulledColumns", module = "rmq._rmqcore", frozen)]
pub struct PyPulledColumns {
    #[pyo3(get)]
    num_rows: usize,
    /// The response's `next_offset` (where the next pull starts, filters aside).
    #[pyo3(get)]
    next_offset: i64,
    /// As `DecodedBatch.columns`; `body_crc_ok` is all null (a pull does not report it).
    #[pyo3(get)]
    columns: Py<PyDict>,
}

#[pymethods]
impl PyPulledColumns {
    fn __len__(&self) -> usize {
        self.num_rows
    }

    fn __repr__(&self) -> String {
        format!(
            "PulledColumns(num_rows={}, next_offset={})",
            self.num_rows, self.next_offset
        )
    }
}

fn malformed() -> PyErr {
    PyValueError::new_err("malformed rmq.v1.PullResponse")
}

fn int32(value: u64) -> i32 {
    value as i32
}
fn int64(value: u64) -> i64 {
    value as i64
}

/// One `StoredMessage`'s fields, borrowed from the response.
#[derive(Default)]
struct Stored<'a> {
    topic: &'a [u8],
    queue_id: i32,
    queue_offset: i64,
    commitlog_offset: i64,
    body: &'a [u8],
    tags: Option<&'a [u8]>,
    keys: Vec<&'a [u8]>,
    /// Map entries in order; a later entry for a name replaces the earlier one and moves
    /// to the end, as `ReceivedMessage.properties` builds its dict.
    properties: Vec<(&'a [u8], &'a [u8])>,
    born_timestamp: i64,
    store_timestamp: i64,
    born_host: &'a [u8],
    store_host: &'a [u8],
    msg_id: &'a [u8],
    flag: i32,
    sys_flag: i32,
    reconsume_times: i32,
}

fn map_entry(entry: &[u8]) -> PyResult<(&[u8], &[u8])> {
    let (mut name, mut value): (&[u8], &[u8]) = (b"", b"");
    let mut reader = WireReader::new(entry);
    while let Some((field, part)) = reader.next_field().ok_or_else(malformed)? {
        if let WireValue::Bytes(bytes) = part {
            match field {
                MAP_KEY => name = bytes,
                MAP_VALUE => value = bytes,
                _ => {}
            }
        }
    }
    Ok((name, value))
}

/// Parse one `StoredMessage` into `into`, whose lists are reused between messages. Every
/// field starts at its default: protobuf leaves zeros and empty strings out.
fn parse_stored<'a>(bytes: &'a [u8], into: &mut Stored<'a>) -> PyResult<()> {
    let (mut keys, mut properties) = (
        std::mem::take(&mut into.keys),
        std::mem::take(&mut into.properties),
    );
    keys.clear();
    properties.clear();
    *into = Stored {
        keys,
        properties,
        ..Stored::default()
    };
    let mut reader = WireReader::new(bytes);
    while let Some((field, value)) = reader.next_field().ok_or_else(malformed)? {
        match value {
            WireValue::Varint(value) => match field {
                stored::QUEUE_ID => into.queue_id = int32(value),
                stored::QUEUE_OFFSET => into.queue_offset = int64(value),
                stored::COMMITLOG_OFFSET => into.commitlog_offset = int64(value),
                stored::BORN_TIMESTAMP => into.born_timestamp = int64(value),
                stored::STORE_TIMESTAMP => into.store_timestamp = int64(value),
                stored::FLAG => into.flag = int32(value),
                stored::SYS_FLAG => into.sys_flag = int32(value),
                stored::RECONSUME_TIMES => into.reconsume_times = int32(value),
                _ => {}
            },
            WireValue::Bytes(bytes) => match field {
                stored::TOPIC => into.topic = bytes,
                stored::BODY => into.body = bytes,
                stored::TAGS => into.tags = Some(bytes),
                stored::KEYS => into.keys.push(bytes),
                stored::PROPERTIES => {
                    let (name, value) = map_entry(bytes)?;
                    into.properties.retain(|(seen, _)| *seen != name);
                    into.properties.push((name, value));
                }
                stored::BORN_HOST => into.born_host = bytes,
                stored::STORE_HOST => into.store_host = bytes,
                stored::MSG_ID => into.msg_id = bytes,
                _ => {}
            },
            WireValue::Fixed => {}
        }
    }
    Ok(())
}

fn push_row(batch: &mut ColumnBatch, message: &Stored<'_>) {
    batch.topic.push_text(message.topic);
    batch.queue_id.push(message.queue_id);
    batch.queue_offset.push(message.queue_offset);
    batch.commitlog_offset.push(message.commitlog_offset);
    batch.msg_id.push_text(message.msg_id);
    match message.tags {
        Some(tags) => batch.tags.push_text(tags),
        None => batch.tags.push_bytes(b""),
    }
    batch.tags_valid.push(message.tags.is_some());
    for key in &message.keys {
        batch.keys.values.push_text(key);
    }
    batch.keys.close_row();
    for (name, value) in &message.properties {
        batch.properties.names.push_text(name);
        batch.properties.values.push_text(value);
    }
    batch.properties.close_row();
    batch.body.push_bytes(message.body);
    batch
        .body_size
        .push(i32::try_from(message.body.len()).expect("a message body is under 2 GiB"));
    batch.born_timestamp.push(message.born_timestamp);
    batch.store_timestamp.push(message.store_timestamp);
    batch.born_host.push_text(message.born_host);
    batch.store_host.push_text(message.store_host);
    batch.sys_flag.push(message.sys_flag);
    batch.flag.push(message.flag);
    batch.reconsume_times.push(message.reconsume_times);
    batch.crc_ok.push(false);
    batch.crc_checked.push(false);
}

/// The messages of an encoded `rmq.v1.PullResponse` whose queue offset is below
/// `end_offset` and, when `keys` is not empty, that carry one of them, as column buffers
/// (see `PulledColumns`). Text that is not UTF-8 becomes U+FFFD, as in the segment decoder.
#[pyfunction]
#[pyo3(signature = (raw, *, end_offset = i64::MAX, keys = Vec::new()))]
pub fn decode_pull_columns(
    py: Python<'_>,
    raw: &Bound<'_, PyBytes>,
    end_offset: i64,
    keys: Vec<String>,
) -> PyResult<PyPulledColumns> {
    let whole = raw.as_bytes();
    let wanted: HashSet<&[u8]> = keys.iter().map(|key| key.as_bytes()).collect();
    let decode = || -> PyResult<(ColumnBatch, i64)> {
        let mut batch = ColumnBatch::default();
        let mut next_offset = 0;
        let mut message = Stored::default();
        let mut reader = WireReader::new(whole);
        while let Some((field, value)) = reader.next_field().ok_or_else(malformed)? {
            match (field, value) {
                (response::MESSAGES, WireValue::Bytes(bytes)) => {
                    parse_stored(bytes, &mut message)?;
                    let in_range = message.queue_offset < end_offset;
                    let has_key =
                        wanted.is_empty() || message.keys.iter().any(|key| wanted.contains(key));
                    if in_range && has_key {
                        push_row(&mut batch, &message);
                    }
                }
                (response::NEXT_OFFSET, WireValue::Varint(value)) => next_offset = int64(value),
                _ => {}
            }
        }
        Ok((batch, next_offset))
    };
    let (batch, next_offset) = py.detach(decode)?;
    Ok(PyPulledColumns {
        num_rows: batch.rows(),
        next_offset,
        columns: columns_dict(py, batch)?,
    })
}
