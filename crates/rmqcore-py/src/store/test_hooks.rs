//! `rmq.Store`'s test hooks (the underscore-prefixed methods): they reach inside the
//! engine (the index files and their compaction, the disk usage seen, a flush failure)
//! so that tests can set up states that are hard to reach from outside. Kept apart so that
//! nothing else is mistaken for one and nothing else grows to depend on them.

use pyo3::prelude::*;

use crate::errors::without_gil;
use crate::retention_report::PyDiskUsage;

use super::PyStore;

#[pymethods]
impl PyStore {
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

    /// Test hook: make the store see `ratio` as its disk usage (`None` to stop).
    fn _set_disk_usage(&self, py: Python<'_>, ratio: Option<f64>) -> PyResult<PyDiskUsage> {
        let store = &self.inner;
        without_gil(py, || store.set_disk_usage_override(ratio)).map(PyDiskUsage::from)
    }

    /// Test hook: the next flush fails as a disk error would.
    fn _inject_flush_failure(&self, message: &str) {
        self.inner.inject_flush_failure(message);
    }
}
