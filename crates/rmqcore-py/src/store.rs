//! `rmq.Store`: argument conversion around `rmqcore::Store`. Every call that touches
//! files or waits runs with the GIL released.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};
use rmqcore::options::RetentionOptions;
use rmqcore::record::host::parse_host;
use rmqcore::tag_filter::TagFilter;
use rmqcore::{ConsumeQueueType, FlushMode, MessageDraft, Store, StoreOptions};

use crate::errors::{invalid, to_py_err, without_gil};
use crate::message::{checked_i32, extract_keys, extract_properties, PyMessage, PyPutResult};
use crate::pull_encoding::PullEncoder;
use crate::recovery_report::PyRecoveryReport;
use crate::retention_report::{PyDiskUsage, PyRetentionReport};
use crate::send_batch::{encode_send_response, PySendBatch};
use crate::verify_report::PyVerifyReport;

#[pyclass(name = "Store", module = "rmq._rmqcore", frozen)]
pub struct PyStore {
    pub(crate) inner: Arc<Store>,
    path: String,
}

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

fn usize_option(py: Python<'_>, argument: &'static str, value: i64) -> PyResult<usize> {
    usize::try_from(value).map_err(|_| invalid(py, argument, format!("{value} is negative")))
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

fn messages_to_list(py: Python<'_>, messages: Vec<rmqcore::StoredMessage>) -> PyResult<Py<PyList>> {
    let objects = messages
        .into_iter()
        .map(|message| Py::new(py, PyMessage::from_stored(py, message)))
        .collect::<PyResult<Vec<_>>>()?;
    Ok(PyList::new(py, objects)?.unbind())
}

#[pymethods]
impl PyStore {
    #[new]
    #[pyo3(signature = (
        path,
        *,
        commitlog_segment_size = 1_073_741_824,
        consume_queue_entries_per_file = 300_000,
        store_host = "127.0.0.1:10911",
        max_message_size = 4_194_304,
        default_queue_count = 8,
        read_only = false,
        flush_disk_type = "ASYNC_FLUSH",
        flush_interval_ms = 500,
        flush_least_pages = 4,
        flush_thorough_interval_ms = 10_000,
        sync_flush_timeout_ms = 5_000,
        index_slot_count = 5_000_000,
        index_entry_count = 20_000_000,
        file_reserved_time_ms = 259_200_000,
        delete_when = "04",
        disk_max_used_space_ratio = 0.75,
        disk_space_clean_forcibly_ratio = 0.85,
        disk_space_warning_level_ratio = 0.90,
        delete_files_batch_max = 10,
        delete_interval_ms = 100,
        retention_check_interval_ms = 10_000,
        append_record_crc = true,
        warm_ahead_bytes = 8_388_608,
        v1_records_only = false,
        consume_queue_type = None,
        rebuild_consume_queues = false,
        tier_url = None,
        tier_endpoint = None,
        tier_region = None,
        local_retention_bytes = None,
        local_retention_hours = None,
        tier_retention_hours = None,
    ))]
    #[expect(
        clippy::too_many_arguments,
        reason = "mirrors the Python keyword arguments"
    )]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        commitlog_segment_size: i64,
        consume_queue_entries_per_file: i64,
        store_host: &str,
        max_message_size: i64,
        default_queue_count: i64,
        read_only: bool,
        flush_disk_type: &str,
        flush_interval_ms: i64,
        flush_least_pages: i64,
        flush_thorough_interval_ms: i64,
        sync_flush_timeout_ms: i64,
        index_slot_count: i64,
        index_entry_count: i64,
        file_reserved_time_ms: i64,
        delete_when: &str,
        disk_max_used_space_ratio: f64,
        disk_space_clean_forcibly_ratio: f64,
        disk_space_warning_level_ratio: f64,
        delete_files_batch_max: i64,
        delete_interval_ms: i64,
        retention_check_interval_ms: i64,
        append_record_crc: bool,
        warm_ahead_bytes: i64,
        v1_records_only: bool,
        consume_queue_type: Option<&str>,
        rebuild_consume_queues: bool,
        tier_url: Option<String>,
        tier_endpoint: Option<String>,
        tier_region: Option<String>,
        local_retention_bytes: Option<u64>,
        local_retention_hours: Option<f64>,
        tier_retention_hours: Option<f64>,
    ) -> PyResult<Self> {
        let tier = crate::store_tier::tier_options(
            py,
            tier_url,
            tier_endpoint,
            tier_region,
            local_retention_bytes,
            local_retention_hours,
            tier_retention_hours,
        )?;
        let retention = RetentionOptions {
            file_reserved_time_ms: usize_option(py, "file_reserved_time_ms", file_reserved_time_ms)?
                as u64,
            delete_when: RetentionOptions::parse_delete_when(delete_when)
                .map_err(|error| to_py_err(py, error))?,
            disk_max_used_space_ratio,
            disk_space_clean_forcibly_ratio,
            disk_space_warning_level_ratio,
            delete_files_batch_max: usize_option(
                py,
                "delete_files_batch_max",
                delete_files_batch_max,
            )?,
            delete_interval_ms: usize_option(py, "delete_interval_ms", delete_interval_ms)? as u64,
            check_interval_ms: usize_option(
                py,
                "retention_check_interval_ms",
                retention_check_interval_ms,
            )? as u64,
        };
        let options = StoreOptions {
            commitlog_segment_size: usize_option(
                py,
                "commitlog_segment_size",
                commitlog_segment_size,
            )?,
            consume_queue_entries_per_file: usize_option(
                py,
                "consume_queue_entries_per_file",
                consume_queue_entries_per_file,
            )?,
            store_host: parse_host("store_host", store_host)
                .map_err(|error| to_py_err(py, error))?,
            max_message_size: usize_option(py, "max_message_size", max_message_size)?,
            default_queue_count: checked_i32(py, "default_queue_count", default_queue_count)?,
            read_only,
            flush_mode: FlushMode::parse(flush_disk_type).map_err(|error| to_py_err(py, error))?,
            flush_interval_ms: usize_option(py, "flush_interval_ms", flush_interval_ms)? as u64,
            flush_least_pages: usize_option(py, "flush_least_pages", flush_least_pages)?,
            flush_thorough_interval_ms: usize_option(
                py,
                "flush_thorough_interval_ms",
                flush_thorough_interval_ms,
            )? as u64,
            sync_flush_timeout_ms: usize_option(py, "sync_flush_timeout_ms", sync_flush_timeout_ms)?
                as u64,
            index_slot_count: usize_option(py, "index_slot_count", index_slot_count)?,
            index_entry_count: usize_option(py, "index_entry_count", index_entry_count)?,
            retention,
            append_record_crc,
            warm_ahead_bytes: usize_option(py, "warm_ahead_bytes", warm_ahead_bytes)?,
            v1_records_only,
            consume_queue_type: consume_queue_type
                .map(ConsumeQueueType::parse)
                .transpose()
                .map_err(|error| to_py_err(py, error))?,
            rebuild_consume_queues,
            tier,
        };
        let display = path.display().to_string();
        let store = without_gil(py, || Store::open(&path, options))?;
        Ok(PyStore {
            inner: Arc::new(store),
            path: display,
        })
    }

    #[getter]
    fn path(&self) -> &str {
        &self.path
    }

    /// "file" or "rocksdb": the form the store's consume queues were created in.
    #[getter]
    fn consume_queue_type(&self) -> &'static str {
        self.inner.consume_queue_type().name()
    }

    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_closed()
    }

    #[getter]
    fn read_only(&self) -> bool {
        self.inner.options().read_only
    }

    #[getter]
    fn recovery_report(&self) -> PyRecoveryReport {
        PyRecoveryReport::from(self.inner.recovery_report().clone())
    }

    #[pyo3(signature = (topic, body, *, queue_id = 0, tags = None, keys = None, properties = None, flag = 0, born_timestamp = None, born_host = None))]
    #[expect(
        clippy::too_many_arguments,
        reason = "mirrors the Python keyword arguments"
    )]
    fn put(
        &self,
        py: Python<'_>,
        topic: &str,
        body: Bound<'_, PyBytes>,
        queue_id: i64,
        tags: Option<String>,
        keys: Option<&Bound<'_, PyAny>>,
        properties: Option<&Bound<'_, PyAny>>,
        flag: i64,
        born_timestamp: Option<i64>,
        born_host: Option<&str>,
    ) -> PyResult<PyPutResult> {
        let queue_id = checked_i32(py, "queue_id", queue_id)?;
        let draft = MessageDraft {
            body: body.as_bytes(),
            tags,
            keys: extract_keys(py, keys)?,
            properties: extract_properties(py, properties)?,
            flag: checked_i32(py, "flag", flag)?,
            born_timestamp,
            born_host: born_host
                .map(|host| parse_host("born_host", host))
                .transpose()
                .map_err(|error| to_py_err(py, error))?,
        };
        let store = &self.inner;
        without_gil(py, || store.put(topic, queue_id, &draft)).map(PyPutResult::from)
    }

    #[pyo3(signature = (topic, queue_id, messages, *, born_host = None))]
    fn put_batch(
        &self,
        py: Python<'_>,
        topic: &str,
        queue_id: i64,
        messages: &Bound<'_, PyAny>,
        born_host: Option<&str>,
    ) -> PyResult<Vec<PyPutResult>> {
        let queue_id = checked_i32(py, "queue_id", queue_id)?;
        let born_host = born_host
            .map(|host| parse_host("born_host", host))
            .transpose()
            .map_err(|error| to_py_err(py, error))?;
        let items: Vec<Bound<'_, PyAny>> = messages
            .try_iter()
            .map_err(|_| invalid(py, "messages", "must be a sequence of bytes or rmq.Message"))?
            .collect::<PyResult<_>>()?;
        let mut bodies: Vec<Bound<'_, PyBytes>> = Vec::with_capacity(items.len());
        let mut metadata: Vec<Option<Bound<'_, PyMessage>>> = Vec::with_capacity(items.len());
        for item in &items {
            if let Ok(bytes) = item.cast::<PyBytes>() {
                bodies.push(bytes.clone());
                metadata.push(None);
            } else if let Ok(message) = item.cast::<PyMessage>() {
                bodies.push(message.get().body.bind(py).clone());
                metadata.push(Some(message.clone()));
            } else {
                return Err(invalid(
                    py,
                    "messages",
                    "each message must be bytes or rmq.Message",
                ));
            }
        }
        let drafts: Vec<MessageDraft<'_>> = bodies
            .iter()
            .zip(&metadata)
            .map(|(body, message)| match message {
                None => MessageDraft {
                    body: body.as_bytes(),
                    born_host,
                    ..Default::default()
                },
                Some(message) => {
                    let message = message.get();
                    MessageDraft {
                        body: body.as_bytes(),
                        tags: message.tags.clone(),
                        keys: message.keys.clone(),
                        properties: message.properties.clone(),
                        flag: message.flag,
                        born_timestamp: (message.born_timestamp != 0)
                            .then_some(message.born_timestamp),
                        born_host,
                    }
                }
            })
            .collect();
        let store = &self.inner;
        let results = without_gil(py, || store.put_batch(topic, queue_id, &drafts))?;
        Ok(results.into_iter().map(PyPutResult::from).collect())
    }

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
        let result = self.pull_inner(py, topic, queue_id, offset, max_count, tags, None)?;
        messages_to_list(py, result.messages)
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
        let result = self.pull_inner(py, topic, queue_id, offset, max_count, tags, max_bytes)?;
        Ok(PyPullResult {
            next_offset: result.next_offset,
            min_offset: result.min_offset,
            max_offset: result.max_offset,
            messages: messages_to_list(py, result.messages)?,
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

    /// Store a Send request decoded by `SendBatch.parse` and return the serialized
    /// `SendResponse`: the broker's fast path, with no Python object per message.
    #[pyo3(signature = (batch, *, born_host = None))]
    fn put_send_batch(
        &self,
        py: Python<'_>,
        batch: &Bound<'_, PySendBatch>,
        born_host: Option<&str>,
    ) -> PyResult<Py<PyBytes>> {
        let born_host = born_host
            .map(|host| parse_host("born_host", host))
            .transpose()
            .map_err(|error| to_py_err(py, error))?;
        let batch = batch.get();
        let drafts = batch.drafts(py, born_host);
        let (topic, queue_id, sequence) = (batch.topic(), batch.queue_id(), batch.sequence());
        let store = &self.inner;
        let encoded = without_gil(py, || {
            let results = store.put_batch(topic, queue_id, &drafts)?;
            Ok(encode_send_response(&results, sequence))
        })?;
        Ok(PyBytes::new(py, &encoded).unbind())
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
        let messages = without_gil(py, || store.query_by_key(topic, key, begin, end, max_count))?;
        messages_to_list(py, messages)
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

    /// Test hook: the index files, oldest first, as (name, entries, full, compacted).
    fn _index_files(&self) -> Vec<(String, u32, bool, bool)> {
        self.inner
            .index()
            .files()
            .into_iter()
            .map(|file| (file.name, file.entries, file.full, file.compacted))
            .collect()
    }

    /// Test hook: compare the index with a rebuild from the log: (entries, differences).
    fn _verify_index(&self, py: Python<'_>) -> PyResult<(u64, Vec<String>)> {
        let store = &self.inner;
        let report = without_gil(py, || store.verify_index())?;
        Ok((report.entries_checked, report.differences))
    }

    /// Test hook: hold back or resume compaction of sealed index files.
    fn _pause_index_compaction(&self, paused: bool) {
        self.inner.index().set_compaction_paused(paused);
    }

    /// Test hook: wait until no index file waits for compaction; false on timeout.
    fn _wait_index_compaction(&self, py: Python<'_>, timeout_s: f64) -> bool {
        let index = self.inner.index();
        let timeout = std::time::Duration::from_secs_f64(timeout_s.max(0.0));
        py.detach(|| index.wait_for_compaction(timeout))
    }

    fn min_offset(&self, py: Python<'_>, topic: &str, queue_id: i64) -> PyResult<i64> {
        let queue_id = checked_i32(py, "queue_id", queue_id)?;
        let store = &self.inner;
        without_gil(py, || store.min_offset(topic, queue_id))
    }

    fn max_offset(&self, py: Python<'_>, topic: &str, queue_id: i64) -> PyResult<i64> {
        let queue_id = checked_i32(py, "queue_id", queue_id)?;
        let store = &self.inner;
        without_gil(py, || store.max_offset(topic, queue_id))
    }

    fn topics(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let store = &self.inner;
        without_gil(py, || store.topics())
    }

    #[pyo3(signature = (topic, queues = 8))]
    fn create_topic(&self, py: Python<'_>, topic: &str, queues: i64) -> PyResult<()> {
        let queues = checked_i32(py, "queues", queues)?;
        let store = &self.inner;
        without_gil(py, || store.create_topic(topic, queues))
    }

    fn delete_topic(&self, py: Python<'_>, topic: &str) -> PyResult<()> {
        let store = &self.inner;
        without_gil(py, || store.delete_topic(topic))
    }

    fn queue_count(&self, py: Python<'_>, topic: &str) -> PyResult<i32> {
        let store = &self.inner;
        without_gil(py, || store.queue_count(topic))
    }

    fn commit_offset(
        &self,
        py: Python<'_>,
        group: &str,
        topic: &str,
        queue_id: i64,
        offset: i64,
    ) -> PyResult<()> {
        let queue_id = checked_i32(py, "queue_id", queue_id)?;
        let store = &self.inner;
        without_gil(py, || store.commit_offset(group, topic, queue_id, offset))
    }

    fn committed_offset(
        &self,
        py: Python<'_>,
        group: &str,
        topic: &str,
        queue_id: i64,
    ) -> PyResult<Option<i64>> {
        let queue_id = checked_i32(py, "queue_id", queue_id)?;
        let store = &self.inner;
        without_gil(py, || store.committed_offset(group, topic, queue_id))
    }

    fn commitlog_min_offset(&self) -> u64 {
        self.inner.commit_log().min_offset()
    }

    fn commitlog_max_offset(&self) -> u64 {
        self.inner.commit_log().write_offset()
    }

    fn flushed_offset(&self) -> u64 {
        self.inner.flushed_offset()
    }

    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        let store = &self.inner;
        without_gil(py, || store.flush())
    }

    #[pyo3(signature = (now_ms = None))]
    fn run_retention(&self, py: Python<'_>, now_ms: Option<i64>) -> PyResult<PyRetentionReport> {
        let store = &self.inner;
        without_gil(py, || store.run_retention(now_ms)).map(PyRetentionReport::from)
    }

    fn disk_usage(&self, py: Python<'_>) -> PyResult<PyDiskUsage> {
        let store = &self.inner;
        without_gil(py, || store.disk_usage()).map(PyDiskUsage::from)
    }

    /// Test hook: make the store see `ratio` as its disk usage (`None` to stop).
    fn _set_disk_usage(&self, py: Python<'_>, ratio: Option<f64>) -> PyResult<PyDiskUsage> {
        let store = &self.inner;
        without_gil(py, || store.set_disk_usage_override(ratio)).map(PyDiskUsage::from)
    }

    fn verify(&self, py: Python<'_>) -> PyResult<PyVerifyReport> {
        let store = &self.inner;
        without_gil(py, || store.verify()).map(PyVerifyReport::from)
    }

    fn rebuild(&self, py: Python<'_>) -> PyResult<u64> {
        let store = &self.inner;
        without_gil(py, || store.rebuild())
    }

    /// Test hook: the next flush fails as a disk error would.
    fn _inject_flush_failure(&self, message: &str) {
        self.inner.inject_flush_failure(message);
    }

    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let store = &self.inner;
        without_gil(py, || store.close())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<()> {
        self.close(py)
    }

    fn __repr__(&self) -> String {
        format!(
            "Store({:?}{})",
            self.path,
            if self.inner.is_closed() {
                ", closed"
            } else {
                ""
            }
        )
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
    ) -> PyResult<rmqcore::PullResult> {
        let PullArguments {
            queue_id,
            max_count,
            max_bytes,
            filter,
        } = PullArguments::convert(py, queue_id, max_count, tags, max_bytes)?;
        let store = &self.inner;
        without_gil(py, || {
            store.pull(
                topic,
                queue_id,
                offset,
                max_count,
                filter.as_ref(),
                max_bytes,
            )
        })
    }
}
