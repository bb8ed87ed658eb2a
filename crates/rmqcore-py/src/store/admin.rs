//! Administering `rmq.Store`: topics and their queue counts, queue and commit-log
//! offsets, consumer offsets, flushing, retention, disk usage, verifying and rebuilding.
//! These are the calls of the CLI and the shard's admin service rather than of the
//! message path, each one engine call with the GIL released.

use pyo3::prelude::*;

use crate::errors::without_gil;
use crate::message::checked_i32;
use crate::retention_report::{PyDiskUsage, PyRetentionReport};
use crate::verify_report::PyVerifyReport;

use super::PyStore;

#[pymethods]
impl PyStore {
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

    fn verify(&self, py: Python<'_>) -> PyResult<PyVerifyReport> {
        let store = &self.inner;
        without_gil(py, || store.verify()).map(PyVerifyReport::from)
    }

    fn rebuild(&self, py: Python<'_>) -> PyResult<u64> {
        let store = &self.inner;
        without_gil(py, || store.rebuild())
    }
}
