//! Reading from `rmq.Store`: `get`, `pull` and `pull_encoded` from a queue, and the
//! lookups of single messages (by commit-log offset, key, msgId, time). `get` and `pull`
//! share one conversion of their arguments and one engine call (`pull_inner`), so that the
//! two cannot drift apart in what they accept; `pull_encoded` encodes each record for the
//! broker's wire while it reads, without a Python object per message; `read_bodies` keeps
//! only the bodies' places in the mapped log (`BodyBatch`).

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};
use rmqcore::lookup::KeyQuery;
use rmqcore::record::RecordView;
use rmqcore::tag_filter::TagFilter;
use rmqcore::PullQuery;

use crate::body_batch::PyBodyBatch;
use crate::body_places::BodyPlaces;
use crate::errors::{invalid, without_gil};
use crate::message::{checked_i32, PyMessage};
use crate::read_records::ReadRecords;
use rmqnet::codec::pull::PullEncoder;

use super::{usize_option, PyStore};

#[pyclass(name = "PullResult", module = "rmq._rmqcore", frozen, get_all)]
pub struct PyPullResult {
    messages: Py<PyList>,
    next_offset: i64,
    min_offset: i64,
    max_offset: i64,
}

/// A pull whose messages are already encoded for the broker's wire (rmqnet's
/// `codec/pull.rs`).
#[pyclass(name = "EncodedPull", module = "rmq._rmqcore", frozen, get_all)]
pub struct PyEncodedPull {
    messages: Py<PyBytes>,
    count: usize,
    next_offset: i64,
    min_offset: i64,
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

/// A queue read's arguments as the engine takes them: the one conversion `get`, `pull`,
/// `pull_encoded` and `read_bodies` share, so that they cannot drift apart in what they
/// accept.
struct PullArguments<'a> {
    topic: &'a str,
    queue_id: i32,
    offset: i64,
    max_count: usize,
    max_bytes: Option<usize>,
    filter: Option<TagFilter>,
}

impl<'a> PullArguments<'a> {
    fn convert(
        py: Python<'_>,
        topic: &'a str,
        queue_id: i64,
        offset: i64,
        max_count: i64,
        tags: Option<&Bound<'_, PyAny>>,
        max_bytes: Option<i64>,
    ) -> PyResult<Self> {
        Ok(PullArguments {
            topic,
            queue_id: checked_i32(py, "queue_id", queue_id)?,
            offset,
            max_count: usize_option(py, "max_count", max_count)?,
            max_bytes: max_bytes
                .map(|limit| usize_option(py, "max_bytes", limit))
                .transpose()?,
            filter: tag_filter(py, tags)?,
        })
    }

    fn query(&self) -> PullQuery<'_> {
        PullQuery::new(self.topic, self.queue_id, self.offset, self.max_count)
            .with_filter(self.filter.as_ref())
            .with_max_bytes(self.max_bytes)
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

/// The reads of a queue that take `pull`'s arguments, declared with that one signature:
/// each converts the arguments once (`PullArguments`) and hands them to the `PyStore`
/// method that reads and answers in its own form.
macro_rules! queue_reads {
    ($($(#[$doc:meta])* fn $name:ident -> $answer:ty = $read:ident;)+) => {
        #[pymethods]
        impl PyStore {
            $(
                $(#[$doc])*
                #[pyo3(signature = (topic, queue_id, offset, max_count = 32, *, tags = None, max_bytes = None))]
                #[expect(
                    clippy::too_many_arguments,
                    reason = "mirrors the Python keyword arguments"
                )]
                fn $name(
                    &self,
                    py: Python<'_>,
                    topic: &str,
                    queue_id: i64,
                    offset: i64,
                    max_count: i64,
                    tags: Option<&Bound<'_, PyAny>>,
                    max_bytes: Option<i64>,
                ) -> PyResult<$answer> {
                    let arguments = PullArguments::convert(
                        py, topic, queue_id, offset, max_count, tags, max_bytes,
                    )?;
                    self.$read(py, &arguments)
                }
            )+
        }
    };
}

queue_reads! {
    fn pull -> PyPullResult = read_pull_result;
    /// The messages already encoded for the broker's wire, without a Python object per
    /// message.
    fn pull_encoded -> PyEncodedPull = read_encoded;
    /// The bodies alone, left in the mapped log (`BodyBatch`): a bulk reader's form of
    /// `pull`.
    fn read_bodies -> PyBodyBatch = read_body_batch;
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
        let arguments = PullArguments::convert(py, topic, queue_id, offset, max_count, tags, None)?;
        let (records, _) = self.pull_into(
            py,
            &arguments,
            ReadRecords::expecting(arguments.max_count),
            ReadRecords::push,
        )?;
        records_to_list(py, records)
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
            let query = KeyQuery::new(topic, key, max_count).stored_between(begin, end);
            store.visit_by_key(&query, |view| records.push(view))?;
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
    fn read_pull_result(
        &self,
        py: Python<'_>,
        arguments: &PullArguments<'_>,
    ) -> PyResult<PyPullResult> {
        let (records, pulled) = self.pull_into(
            py,
            arguments,
            ReadRecords::expecting(arguments.max_count),
            ReadRecords::push,
        )?;
        Ok(PyPullResult {
            messages: records_to_list(py, records)?,
            next_offset: pulled.next_offset,
            min_offset: pulled.min_offset,
            max_offset: pulled.max_offset,
        })
    }

    fn read_encoded(
        &self,
        py: Python<'_>,
        arguments: &PullArguments<'_>,
    ) -> PyResult<PyEncodedPull> {
        let (encoder, pulled) =
            self.pull_into(py, arguments, PullEncoder::default(), PullEncoder::push)?;
        Ok(PyEncodedPull {
            messages: PyBytes::new(py, &encoder.finish()).unbind(),
            count: pulled.count,
            next_offset: pulled.next_offset,
            min_offset: pulled.min_offset,
            max_offset: pulled.max_offset,
        })
    }

    fn read_body_batch(
        &self,
        py: Python<'_>,
        arguments: &PullArguments<'_>,
    ) -> PyResult<PyBodyBatch> {
        let store = &self.inner;
        let query = arguments.query();
        let mut bodies = BodyPlaces::with_capacity(arguments.max_count);
        let pulled = without_gil(py, || {
            store.pull_each_owned(query, |view, owner| bodies.push(view, owner))
        })?;
        PyBodyBatch::new(py, bodies, &pulled)
    }

    /// One engine read of a queue (CRC checked on each record, GIL released), each record
    /// handed to `push` with the collector the caller chose.
    fn pull_into<C: Send>(
        &self,
        py: Python<'_>,
        arguments: &PullArguments<'_>,
        mut collector: C,
        push: impl Fn(&mut C, &RecordView<'_>) + Send,
    ) -> PyResult<(C, rmqcore::Pulled)> {
        let store = &self.inner;
        let query = arguments.query();
        without_gil(py, move || {
            let pulled = store.pull_each(query, |view| push(&mut collector, view))?;
            Ok((collector, pulled))
        })
    }
}
