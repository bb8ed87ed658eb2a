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
use rmqproto::fields::pull_response as response;
use rmqproto::stored_view::{put_property, Repeated, StoredView};
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

/// Read one `StoredMessage`; `keys` and `properties` are cleared and refilled, so that
/// their allocations serve every message of a response.
fn int64(value: u64) -> i64 {
    value as i64
}

fn parse_stored<'a>(
    bytes: &'a [u8],
    keys: &mut Vec<&'a [u8]>,
    properties: &mut Vec<(&'a [u8], &'a [u8])>,
) -> PyResult<StoredView<'a>> {
    keys.clear();
    properties.clear();
    StoredView::parse(bytes, |field| match field {
        Repeated::Key(key) => {
            keys.push(key);
            Ok(())
        }
        Repeated::Property(entry) => put_property(properties, entry),
    })
    .map_err(|_| malformed())
}

fn push_row(
    batch: &mut ColumnBatch,
    message: &StoredView<'_>,
    keys: &[&[u8]],
    properties: &[(&[u8], &[u8])],
) {
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
    for key in keys {
        batch.keys.values.push_text(key);
    }
    batch.keys.close_row();
    for (name, value) in properties {
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
        let (mut message_keys, mut properties) = (Vec::new(), Vec::new());
        let mut reader = WireReader::new(whole);
        while let Some((field, value)) = reader.next_field().ok_or_else(malformed)? {
            match (field, value) {
                (response::MESSAGES, WireValue::Bytes(bytes)) => {
                    let message = parse_stored(bytes, &mut message_keys, &mut properties)?;
                    let in_range = message.queue_offset < end_offset;
                    let has_key =
                        wanted.is_empty() || message_keys.iter().any(|key| wanted.contains(key));
                    if in_range && has_key {
                        push_row(&mut batch, &message, &message_keys, &properties);
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
