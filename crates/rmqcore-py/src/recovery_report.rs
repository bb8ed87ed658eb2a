//! `store.recovery_report`: what the last open found and did.

use pyo3::prelude::*;
use rmqcore::recovery::RecoveryReport;

#[pyclass(name = "RecoveryReport", module = "rmq._rmqcore", frozen, get_all)]
pub struct PyRecoveryReport {
    mode: String,
    start_reason: String,
    scan_start_offset: u64,
    valid_end_offset: u64,
    records_scanned: u64,
    bytes_truncated: u64,
    stop_reason: Option<String>,
    consume_queue_entries_removed: u64,
    records_redispatched: u64,
    records_not_dispatched: u64,
    duration_ms: f64,
}

impl From<RecoveryReport> for PyRecoveryReport {
    fn from(report: RecoveryReport) -> Self {
        PyRecoveryReport {
            mode: report.mode.as_str().to_string(),
            start_reason: report.start_reason,
            scan_start_offset: report.scan_start_offset,
            valid_end_offset: report.valid_end_offset,
            records_scanned: report.records_scanned,
            bytes_truncated: report.bytes_truncated,
            stop_reason: report.stop_reason,
            consume_queue_entries_removed: report.consume_queue_entries_removed,
            records_redispatched: report.records_redispatched,
            records_not_dispatched: report.records_not_dispatched,
            duration_ms: report.duration_ms,
        }
    }
}

#[pymethods]
impl PyRecoveryReport {
    fn __repr__(&self) -> String {
        format!(
            "RecoveryReport(mode={:?}, scan_start_offset={}, valid_end_offset={}, records_scanned={}, bytes_truncated={}, consume_queue_entries_removed={}, records_redispatched={}, duration_ms={:.3})",
            self.mode,
            self.scan_start_offset,
            self.valid_end_offset,
            self.records_scanned,
            self.bytes_truncated,
            self.consume_queue_entries_removed,
            self.records_redispatched,
            self.duration_ms
        )
    }
}
