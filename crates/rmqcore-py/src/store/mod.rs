//! `rmq.Store`: argument conversion around `rmqcore::Store`. Every call that touches
//! files or waits runs with the GIL released.
//!
//! Here is what makes a `Store` object: its constructor (every keyword of `rmq.Store`
//! turned into `StoreOptions`), its properties and its closing. Its methods are grouped
//! by what they do to the store, each group in its own file: `write.rs`, `read.rs`,
//! `admin.rs`, `test_hooks.rs`, `tier.rs` (its options, status and uploads) and
//! `metrics.rs`.

mod admin;
pub(crate) mod columns;
mod metrics;
pub(crate) mod put_fast_call;
mod read;
mod test_hooks;
mod tier;
mod write;

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use rmqcore::options::RetentionOptions;
use rmqcore::record::host::parse_host;
use rmqcore::{ConsumeQueueType, FlushMode, Store, StoreOptions};

use crate::errors::{invalid, to_py_err, without_gil};
use crate::message::checked_i32;
use crate::recovery_report::PyRecoveryReport;

pub use read::{PyEncodedPull, PyPullResult};

#[pyclass(name = "Store", module = "rmq._rmqcore", frozen)]
pub struct PyStore {
    pub(crate) inner: Arc<Store>,
    pub(crate) path: String,
}

fn usize_option(py: Python<'_>, argument: &'static str, value: i64) -> PyResult<usize> {
    usize::try_from(value).map_err(|_| invalid(py, argument, format!("{value} is negative")))
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
        warm_ahead_bytes = 67_108_864,
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
        let tier = tier::tier_options(
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
