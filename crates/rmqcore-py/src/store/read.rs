//! Reading from `rmq.Store`: `get`, `pull` and `pull_encoded` from a queue, and the
//! lookups of single messages (by commit-log offset, key, msgId, time). `get` and `pull`
//! share one conversion of their arguments and one engine call (`pull_inner`), so that the
//! two cannot drift apart in what they accept; `pull_encoded` encodes each record for the
//! broker's wire while it reads, without a Python object per message; `read_bodies` keeps
//! only the bodies, in one buffer.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};
use rmqcore::record::RecordView;
use rmqcore::tag_filter::TagFilter;

use crate::body_batch::{BodyColumns, PyBodyBatch, ReadEnd};
use crate::errors::{invalid, without_gil};
use crate::message::{checked_i32, PyMessage};
use crate::read_records::ReadRecords;
use rmqnet::codec::pull::PullEncoder;

use super::{usize_option, PyStore};

#[pyclass(name = "PullResult", module = "rmq._rmqcore", frozen)]
pub struct PyPullResult {
    #[pyo3(get)]
    messages: Py<PyList>,
    #[pyo3(get)]
    next_offset: i64,
    #[pyo3(get)]
    min_offset: i64,
    #[pyo3(get)]
    max_offset: i64,
}

/// A pull whose messages are already encoded for the broker's wire (`pull_encoding.rs`).
#[pyclass(name = "EncodedPull", module = "rmq._rmqcore", frozen)]
pub struct PyEncodedPull {
    #[pyo3(get)]
    messages: Py<PyBytes>,
    #[pyo3(get)]
    count: usize,
    #[pyo3(get)]
    next_offset: i64,
    #[pyo3(get)]
    min_offset: i64,
    #[pyo3(get)]
    max_offset: i64,
}

fn tag_filter(py: Python<'_>, tags: Option<&Bound<'_, PyAny>>) -> PyResult<Option<TagFilter>> {
    let Some(tags) = tags.filter(|tags| !tags.is_none()) else {
        return Ok(None);
    };
    if let Ok(text) = tags.extract::<String>() {
        return Ok(TagFilter::new([text]));
    }
    let list: Vec<String> = tags
        .extract()
        .map_err(|_| invalid(py, "tags", "must be a string or a sequence of strings"))?;
    Ok(TagFilter::new(list))
}

/// `pull`'s arguments as the engine takes them.
struct PullArguments {
    queue_id: i32,
    max_count: usize,
    max_bytes: Option<usize>,
    filter: Option<TagFilter>,
}

impl PullArguments {
    fn convert(
        py: Python<'_>,
        queue_id: i64,
        max_count: i64,
        tags: Option<&Bound<'_, PyAny>>,
        max_bytes: Option<i64>,
    ) -> PyResult<Self> {
        Ok(PullArguments {
            queue_id: checked_i32(py, "queue_id", queue_id)?,
            max_count: usize_option(py, "max_count", max_count)?,
            max_bytes: max_bytes
                .map(|limit| usize_option(py, "max_bytes", limit))
                .transpose()?,
            filter: tag_filter(py, tags)?,
        })
    }
}

/// Messages read from a queue: each decodes its record (in the read's shared copy) lazily.
fn records_to_list(py: Python<'_>, records: ReadRecords) -> PyResult<Py<PyList>> {
    let objects = records
        .into_records()
        .map(|record| Py::new(py, PyMessage::from_record(record)))
        .collect::<PyResult<Vec<_>>>()?;
    Ok(PyList::new(py, objects)?.unbind())
}

#[pymethods]
impl PyStore {
    #[pyo3(signature = (topic, queue_id, offset, max_count = 32, *, tags = None))]
    fn get(
        &self,
        py: Python<'_>,
        topic: &str,
        queue_id: i64,
        offset: i64,
        max_count: i64,
        tags: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyList>> {
        let (records, _) = self.pull_inner(py, topic, queue_id, offset, max_count, tags, None)?;
        records_to_list(py, records)
    }

    #[pyo3(signature = (topic, queue_id, offset, max_count = 32, *, tags = None, max_bytes = None))]
    #[expect(
        clippy::too_many_arguments,
        reason = "mirrors the Python keyword arguments"
    )]
    fn pull(
        &self,
        py: Python<'_>,
        topic: &str,
        queue_id: i64,
        offset: i64,
        max_count: i64,
        tags: Option<&Bound<'_, PyAny>>,
        max_bytes: Option<i64>,
    ) -> PyResult<PyPullResult> {
        let (records, pulled) =
            self.pull_inner(py, topic, queue_id, offset, max_count, tags, max_bytes)?;
        Ok(PyPullResult {
            next_offset: pulled.next_offset,
            min_offset: pulled.min_offset,
            max_offset: pulled.max_offset,
            messages: records_to_list(py, records)?,
        })
    }

    #[pyo3(signature = (topic, queue_id, offset, max_count = 32, *, tags = None, max_bytes = None))]
    #[expect(
        clippy::too_many_arguments,
        reason = "mirrors the Python keyword arguments"
    )]
    fn pull_encoded(
        &self,
        py: Python<'_>,
        topic: &str,
        queue_id: i64,
        offset: i64,
        max_count: i64,
        tags: Option<&Bound<'_, PyAny>>,
        max_bytes: Option<i64>,
    ) -> PyResult<PyEncodedPull> {
        let PullArguments {
            queue_id,
            max_count,
            max_bytes,
            filter,
        } = PullArguments::convert(py, queue_id, max_count, tags, max_bytes)?;
        let store = &self.inner;
        let (pulled, encoded) = without_gil(py, || {
            let mut encoder = PullEncoder::default();
            let pulled = store.pull_each(
                topic,
                queue_id,
                offset,
                max_count,
                filter.as_ref(),
                max_bytes,
                |view| encoder.push(view),
            )?;
            Ok((pulled, encoder.finish()))
        })?;
        Ok(PyEncodedPull {
            messages: PyBytes::new(py, &encoded).unbind(),
            count: pulled.count,
            next_offset: pulled.next_offset,
            min_offset: pulled.min_offset,
            max_offset: pulled.max_offset,
        })
    }

    /// The bodies alone, in one buffer (`BodyBatch`): a bulk reader's form of `pull`.
    #[pyo3(signature = (topic, queue_id, offset, max_count = 32, *, tags = None, max_bytes = None))]
    #[expect(
        clippy::too_many_arguments,
        reason = "mirrors the Python keyword arguments"
    )]
    fn read_bodies(
        &self,
        py: Python<'_>,
        topic: &str,
        queue_id: i64,
        offset: i64,
        max_count: i64,
        tags: Option<&Bound<'_, PyAny>>,
        max_bytes: Option<i64>,
    ) -> PyResult<PyBodyBatch> {
        let arguments = PullArguments::convert(py, queue_id, max_count, tags, max_bytes)?;
        let columns = BodyColumns::with_capacity(arguments.max_count);
        let (columns, pulled) =
            self.pull_into(py, topic, offset, arguments, columns, BodyColumns::push)?;
        let end = ReadEnd {
            next_offset: pulled.next_offset,
            min_offset: pulled.min_offset,
            max_offset: pulled.max_offset,
        };
        PyBodyBatch::new(py, columns, end)
    }

    fn get_at(&self, py: Python<'_>, commitlog_offset: i64) -> PyResult<PyMessage> {
        let store = &self.inner;
        let message = without_gil(py, || store.read_at(commitlog_offset))?;
        Ok(PyMessage::from_stored(py, message))
    }

    #[pyo3(signature = (topic, key, *, begin = 0, end = None, max_count = 64))]
    fn query_by_key(
        &self,
        py: Python<'_>,
        topic: &str,
        key: &str,
        begin: i64,
        end: Option<i64>,
        max_count: i64,
    ) -> PyResult<Py<PyList>> {
        let max_count = usize_option(py, "max_count", max_count)?;
        let store = &self.inner;
        // The records are copied as `get` copies them: each message decodes the fields it
        // is asked for, not all of them (a lookup's msgId and properties cost more than
        // finding the record).
        let records = without_gil(py, || {
            let mut records = ReadRecords::default();
            store.visit_by_key(topic, key, begin, end, max_count, |view| records.push(view))?;
            Ok(records)
        })?;
        records_to_list(py, records)
    }

    fn get_by_msg_id(&self, py: Python<'_>, msg_id: &str) -> PyResult<PyMessage> {
        let store = &self.inner;
        let message = without_gil(py, || store.get_by_msg_id(msg_id))?;
        Ok(PyMessage::from_stored(py, message))
    }

    fn offset_for_time(
        &self,
        py: Python<'_>,
        topic: &str,
        queue_id: i64,
        timestamp_ms: i64,
    ) -> PyResult<i64> {
        let queue_id = checked_i32(py, "queue_id", queue_id)?;
        let store = &self.inner;
        without_gil(py, || store.offset_for_time(topic, queue_id, timestamp_ms))
    }
}

impl PyStore {
    #[expect(clippy::too_many_arguments, reason = "shared body of get and pull")]
    fn pull_inner(
        &self,
        py: Python<'_>,
        topic: &str,
        queue_id: i64,
        offset: i64,
        max_count: i64,
        tags: Option<&Bound<'_, PyAny>>,
        max_bytes: Option<i64>,
    ) -> PyResult<(ReadRecords, rmqcore::Pulled)> {
        let arguments = PullArguments::convert(py, queue_id, max_count, tags, max_bytes)?;
        self.pull_into(
            py,
            topic,
            offset,
            arguments,
            ReadRecords::default(),
            ReadRecords::push,
        )
    }

    /// One engine read of a queue (CRC checked on each record, GIL released), each record
    /// handed to `push` with the collector the caller chose.
    fn pull_into<C: Send>(
        &self,
        py: Python<'_>,
        topic: &str,
        offset: i64,
        arguments: PullArguments,
        mut collector: C,
        push: impl Fn(&mut C, &RecordView<'_>) + Send,
    ) -> PyResult<(C, rmqcore::Pulled)> {
        let PullArguments {
            queue_id,
            max_count,
            max_bytes,
            filter,
        } = arguments;
        let store = &self.inner;
        without_gil(py, move || {
            let pulled = store.pull_each(
                topic,
                queue_id,
                offset,
                max_count,
                filter.as_ref(),
                max_bytes,
                |view| push(&mut collector, view),
            )?;
            Ok((collector, pulled))
        })
    }
}
