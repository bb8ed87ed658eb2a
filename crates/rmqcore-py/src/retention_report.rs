//! `store.run_retention()` and `store.disk_usage()` answers.

use pyo3::prelude::*;
use rmqcore::disk_usage::DiskUsage;
use rmqcore::retention::RetentionReport;

#[pyclass(name = "DiskUsage", module = "rmq._rmqcore", frozen, get_all)]
pub struct PyDiskUsage {
    path: String,
    total_bytes: u64,
    used_bytes: u64,
    ratio: f64,
    overridden: bool,
}

impl From<DiskUsage> for PyDiskUsage {
    fn from(usage: DiskUsage) -> Self {
        PyDiskUsage {
            path: usage.path.display().to_string(),
            total_bytes: usage.total_bytes,
            used_bytes: usage.used_bytes,
            ratio: usage.ratio,
            overridden: usage.overridden,
        }
    }
}

#[pymethods]
impl PyDiskUsage {
    fn __repr__(&self) -> String {
        format!(
            "DiskUsage(path={:?}, ratio={:.4}, used_bytes={}, total_bytes={}, overridden={})",
            self.path, self.ratio, self.used_bytes, self.total_bytes, self.overridden
        )
    }
}

/// `(path, start offset, reason)` for one segment.
type Decision = (String, u64, String);

#[pyclass(name = "RetentionReport", module = "rmq._rmqcore", frozen, get_all)]
pub struct PyRetentionReport {
    deleted: Vec<Decision>,
    /// With a tier: uploaded segments whose local copy went; their messages stay.
    evicted: Vec<Decision>,
    kept: Vec<Decision>,
    commitlog_min_offset: u64,
    consume_queue_files_deleted: u64,
    index_files_deleted: u64,
    disk_usage: Py<PyDiskUsage>,
}

impl From<RetentionReport> for PyRetentionReport {
    fn from(report: RetentionReport) -> Self {
        let decisions = |list: Vec<rmqcore::retention::SegmentDecision>| {
            list.into_iter()
                .map(|d| (d.path.display().to_string(), d.start_offset, d.reason))
                .collect()
        };
        let disk_usage = Python::attach(|py| Py::new(py, PyDiskUsage::from(report.disk_usage)))
            .expect("allocating a DiskUsage");
        PyRetentionReport {
            deleted: decisions(report.deleted),
            evicted: decisions(report.evicted),
            kept: decisions(report.kept),
            commitlog_min_offset: report.commitlog_min_offset,
            consume_queue_files_deleted: report.consume_queue_files_deleted,
            index_files_deleted: report.index_files_deleted,
            disk_usage,
        }
    }
}

#[pymethods]
impl PyRetentionReport {
    fn __repr__(&self) -> String {
        format!(
            "RetentionReport(deleted={}, evicted={}, kept={}, commitlog_min_offset={})",
            self.deleted.len(),
            self.evicted.len(),
            self.kept.len(),
            self.commitlog_min_offset
        )
    }
}
