//! `rmq._rmqcore.SegmentDecoder`: the read-only segment decoder, handing its columns to
//! Python as buffers (`ColumnBuffer`, which supports the buffer protocol) in Apache Arrow's
//! layout, so that `pyarrow.Array.from_buffers` wraps them without a copy and without a
//! Python object per message. Decoding runs with the GIL released.

use std::collections::HashSet;
use std::ffi::{c_int, c_void};
use std::path::PathBuf;
use std::sync::Arc;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rmqcore::segment_decoder::{
    BatchOptions, Bitmap, ColumnBatch, ColumnSelection, RecordFilter, SegmentDecoder, SegmentEnd,
    VarColumn,
};

use crate::errors::{invalid, to_py_err, without_gil};

/// Batches stay below this so that every column's i32 offsets fit.
const MAX_BATCH_BYTES: i64 = 1 << 30;

/// One column buffer, owned by Rust and exposed read-only through the buffer protocol.
#[pyclass(name = "ColumnBuffer", module = "rmq._rmqcore", frozen)]
pub struct PyColumnBuffer {
    values: Values,
}

enum Values {
    Bytes(Vec<u8>),
    I32(Vec<i32>),
    I64(Vec<i64>),
}

impl Values {
    fn as_bytes(&self) -> &[u8] {
        fn cast<T>(values: &[T]) -> &[u8] {
            // SAFETY: the integer types used here have no padding and any byte is a valid
            // u8; the slice borrows `values`, so the memory outlives it.
            unsafe {
                std::slice::from_raw_parts(
                    values.as_ptr().cast::<u8>(),
                    std::mem::size_of_val(values),
                )
            }
        }
        match self {
            Values::Bytes(values) => values,
            Values::I32(values) => cast(values),
            Values::I64(values) => cast(values),
        }
    }
}

#[pymethods]
impl PyColumnBuffer {
    fn __len__(&self) -> usize {
        self.values.as_bytes().len()
    }

    /// # Safety
    /// Called by Python with a valid `Py_buffer` to fill.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        let bytes = slf.get().values.as_bytes();
        let length =
            ffi::Py_ssize_t::try_from(bytes.len()).expect("a buffer is smaller than isize::MAX");
        // SAFETY: `view` comes from Python; the bytes live as long as `slf`, which the
        // view keeps a reference to, and are never written (the buffer is read-only).
        let status = unsafe {
            ffi::PyBuffer_FillInfo(
                view,
                slf.as_ptr(),
                bytes.as_ptr().cast_mut().cast::<c_void>(),
                length,
                1,
                flags,
            )
        };
        if status == -1 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }
}

fn buffer(py: Python<'_>, values: Values) -> PyResult<Py<PyColumnBuffer>> {
    Py::new(py, PyColumnBuffer { values })
}

impl PyColumnBuffer {
    /// A buffer of bytes (a binary column's data), for other modules' columns.
    pub(crate) fn of_bytes(py: Python<'_>, values: Vec<u8>) -> PyResult<Py<Self>> {
        buffer(py, Values::Bytes(values))
    }

    /// A buffer of i64 (offsets or positions), for other modules' columns.
    pub(crate) fn of_i64(py: Python<'_>, values: Vec<i64>) -> PyResult<Py<Self>> {
        buffer(py, Values::I64(values))
    }

    /// The buffer's bytes, whatever its values' type.
    pub(crate) fn bytes(&self) -> &[u8] {
        self.values.as_bytes()
    }

    /// The buffer's i64 values, if it holds them.
    pub(crate) fn i64_values(&self) -> &[i64] {
        match &self.values {
            Values::I64(values) => values,
            _ => &[],
        }
    }
}

/// `(length, [validity, offsets, data])` for a text or binary column.
fn var_column(
    py: Python<'_>,
    column: VarColumn,
    validity: Option<Bitmap>,
) -> PyResult<(usize, Vec<Option<Py<PyColumnBuffer>>>)> {
    let length = column.len();
    let validity = validity
        .map(|bitmap| buffer(py, Values::Bytes(bitmap.bytes)))
        .transpose()?;
    Ok((
        length,
        vec![
            validity,
            Some(buffer(py, Values::I32(column.offsets))?),
            Some(buffer(py, Values::Bytes(column.data))?),
        ],
    ))
}

pub(crate) fn columns_dict(py: Python<'_>, batch: ColumnBatch) -> PyResult<Py<PyDict>> {
    let rows = batch.rows();
    let dict = PyDict::new(py);
    let fixed = |values: Values| -> PyResult<(usize, Vec<Option<Py<PyColumnBuffer>>>)> {
        Ok((rows, vec![None, Some(buffer(py, values)?)]))
    };
    dict.set_item("topic", var_column(py, batch.topic, None)?)?;
    dict.set_item("queue_id", fixed(Values::I32(batch.queue_id))?)?;
    dict.set_item("queue_offset", fixed(Values::I64(batch.queue_offset))?)?;
    dict.set_item(
        "commitlog_offset",
        fixed(Values::I64(batch.commitlog_offset))?,
    )?;
    dict.set_item("msg_id", var_column(py, batch.msg_id, None)?)?;
    dict.set_item("tags", var_column(py, batch.tags, Some(batch.tags_valid))?)?;
    dict.set_item("keys", fixed(Values::I32(batch.keys.offsets))?)?;
    dict.set_item("keys.element", var_column(py, batch.keys.values, None)?)?;
    dict.set_item("properties", fixed(Values::I32(batch.properties.offsets))?)?;
    dict.set_item(
        "properties.key",
        var_column(py, batch.properties.names, None)?,
    )?;
    dict.set_item(
        "properties.value",
        var_column(py, batch.properties.values, None)?,
    )?;
    dict.set_item("body", var_column(py, batch.body, None)?)?;
    dict.set_item("body_size", fixed(Values::I32(batch.body_size))?)?;
    dict.set_item("born_timestamp", fixed(Values::I64(batch.born_timestamp))?)?;
    dict.set_item(
        "store_timestamp",
        fixed(Values::I64(batch.store_timestamp))?,
    )?;
    dict.set_item("born_host", var_column(py, batch.born_host, None)?)?;
    dict.set_item("store_host", var_column(py, batch.store_host, None)?)?;
    dict.set_item("sys_flag", fixed(Values::I32(batch.sys_flag))?)?;
    dict.set_item("flag", fixed(Values::I32(batch.flag))?)?;
    dict.set_item(
        "reconsume_times",
        fixed(Values::I32(batch.reconsume_times))?,
    )?;
    let crc = vec![
        Some(buffer(py, Values::Bytes(batch.crc_checked.bytes))?),
        Some(buffer(py, Values::Bytes(batch.crc_ok.bytes))?),
    ];
    dict.set_item("body_crc_ok", (rows, crc))?;
    Ok(dict.unbind())
}

/// The columns `DecodedBatch.columns` holds (children of nested ones aside).
const COLUMN_NAMES: [&str; 18] = [
    "topic",
    "queue_id",
    "queue_offset",
    "commitlog_offset",
    "msg_id",
    "tags",
    "keys",
    "properties",
    "body",
    "body_size",
    "born_timestamp",
    "store_timestamp",
    "born_host",
    "store_host",
    "sys_flag",
    "flag",
    "reconsume_times",
    "body_crc_ok",
];

fn column_selection(py: Python<'_>, names: Option<Vec<String>>) -> PyResult<ColumnSelection> {
    let Some(names) = names else {
        return Ok(ColumnSelection::ALL);
    };
    let mut selection = ColumnSelection {
        msg_id: false,
        properties: false,
        body: false,
        hosts: false,
    };
    for name in &names {
        match name.as_str() {
            "msg_id" => selection.msg_id = true,
            "tags" | "keys" | "properties" => selection.properties = true,
            "body" => selection.body = true,
            "born_host" | "store_host" => selection.hosts = true,
            other if COLUMN_NAMES.contains(&other) => {}
            other => {
                let known = COLUMN_NAMES.join(", ");
                return Err(invalid(
                    py,
                    "columns",
                    format!("{other:?} is not a column; columns are {known}"),
                ));
            }
        }
    }
    Ok(selection)
}

#[pyclass(name = "DecodedBatch", module = "rmq._rmqcore", frozen)]
pub struct PyDecodedBatch {
    #[pyo3(get)]
    num_rows: usize,
    #[pyo3(get)]
    next_position: usize,
    #[pyo3(get)]
    records_scanned: usize,
    #[pyo3(get)]
    end: Option<&'static str>,
    #[pyo3(get)]
    error: Option<Py<PyAny>>,
    #[pyo3(get)]
    nothing_after: bool,
    #[pyo3(get)]
    columns: Py<PyDict>,
}

#[pymethods]
impl PyDecodedBatch {
    fn __repr__(&self) -> String {
        format!(
            "DecodedBatch(num_rows={}, next_position={}, end={:?})",
            self.num_rows, self.next_position, self.end
        )
    }
}

#[pyclass(name = "SegmentDecoder", module = "rmq._rmqcore", frozen)]
pub struct PySegmentDecoder {
    pub(crate) inner: Arc<SegmentDecoder>,
}

fn non_negative(py: Python<'_>, argument: &'static str, value: i64) -> PyResult<usize> {
    usize::try_from(value).map_err(|_| invalid(py, argument, format!("{value} is negative")))
}

#[pymethods]
impl PySegmentDecoder {
    #[new]
    #[pyo3(signature = (path, *, start_offset = None))]
    fn new(py: Python<'_>, path: PathBuf, start_offset: Option<i64>) -> PyResult<Self> {
        let start_offset = start_offset
            .map(|offset| non_negative(py, "start_offset", offset))
            .transpose()?;
        let inner = without_gil(py, || match start_offset {
            Some(offset) => SegmentDecoder::open_at(&path, offset as u64),
            None => SegmentDecoder::open(&path),
        })?;
        Ok(PySegmentDecoder {
            inner: Arc::new(inner),
        })
    }

    #[getter]
    fn path(&self) -> String {
        self.inner.path().display().to_string()
    }

    #[getter]
    fn start_offset(&self) -> u64 {
        self.inner.start_offset()
    }

    #[getter]
    fn size(&self) -> usize {
        self.inner.size()
    }

    fn split_points(&self, py: Python<'_>, part_size: i64) -> PyResult<Vec<usize>> {
        let part_size = non_negative(py, "part_size", part_size)?;
        let inner = Arc::clone(&self.inner);
        without_gil(py, move || Ok(inner.split_points(part_size)))
    }

    #[pyo3(signature = (
        start = 0,
        end = None,
        *,
        verify_crc = true,
        topics = None,
        store_time_min = None,
        store_time_max = None,
        max_rows = 8192,
        max_bytes = 4_194_304,
        columns = None,
    ))]
    #[expect(
        clippy::too_many_arguments,
        reason = "mirrors the Python keyword arguments"
    )]
    fn decode(
        &self,
        py: Python<'_>,
        start: i64,
        end: Option<i64>,
        verify_crc: bool,
        topics: Option<Vec<String>>,
        store_time_min: Option<i64>,
        store_time_max: Option<i64>,
        max_rows: i64,
        max_bytes: i64,
        columns: Option<Vec<String>>,
    ) -> PyResult<PyDecodedBatch> {
        let start = non_negative(py, "start", start)?;
        let limit = match end {
            Some(end) => non_negative(py, "end", end)?,
            None => self.inner.size(),
        };
        if max_rows < 1 {
            return Err(invalid(
                py,
                "max_rows",
                format!("{max_rows} is not positive"),
            ));
        }
        if !(1..=MAX_BATCH_BYTES).contains(&max_bytes) {
            return Err(invalid(
                py,
                "max_bytes",
                format!("{max_bytes} is not in [1, {MAX_BATCH_BYTES}]"),
            ));
        }
        let options = BatchOptions {
            verify_crc,
            filter: RecordFilter {
                topics: topics.map(HashSet::from_iter),
                store_time_min,
                store_time_max,
            },
            max_rows: max_rows as usize,
            max_bytes: max_bytes as usize,
            columns: column_selection(py, columns)?,
        };
        let inner = Arc::clone(&self.inner);
        let decoded = without_gil(py, move || Ok(inner.decode_batch(start, limit, &options)))?;
        let (end, error, nothing_after) = match &decoded.end {
            None => (None, None, false),
            Some(SegmentEnd::Limit) => (Some("limit"), None, false),
            Some(SegmentEnd::Blank) => (Some("blank"), None, false),
            Some(SegmentEnd::EndOfData) => (Some("end_of_data"), None, false),
            Some(SegmentEnd::EndOfFile) => (Some("end_of_file"), None, false),
            Some(SegmentEnd::Invalid(record)) => {
                let error = to_py_err(py, record.to_error(self.inner.path()));
                (
                    Some("invalid"),
                    Some(error.into_value(py).into_any()),
                    record.nothing_after,
                )
            }
        };
        Ok(PyDecodedBatch {
            num_rows: decoded.columns.rows(),
            next_position: decoded.next_position,
            records_scanned: decoded.records_scanned,
            end,
            error,
            nothing_after,
            columns: columns_dict(py, decoded.columns)?,
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "SegmentDecoder(path={:?}, start_offset={}, size={})",
            self.path(),
            self.start_offset(),
            self.size()
        )
    }
}
