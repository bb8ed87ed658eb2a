//! `store.verify()`'s answer.

use pyo3::prelude::*;
use rmqcore::verify::VerifyReport;

#[pyclass(name = "VerifyReport", module = "rmq._rmqcore", frozen, get_all)]
pub struct PyVerifyReport {
    records_checked: u64,
    entries_checked: u64,
    difference_count: u64,
    differences: Vec<(String, String)>,
}

impl From<VerifyReport> for PyVerifyReport {
    fn from(report: VerifyReport) -> Self {
        PyVerifyReport {
            records_checked: report.records_checked,
            entries_checked: report.entries_checked,
            difference_count: report.difference_count,
            differences: report
                .differences
                .into_iter()
                .map(|d| (d.kind.to_string(), d.detail))
                .collect(),
        }
    }
}

#[pymethods]
impl PyVerifyReport {
    #[getter]
    fn clean(&self) -> bool {
        self.difference_count == 0
    }

    fn __repr__(&self) -> String {
        format!(
            "VerifyReport(clean={}, records_checked={}, entries_checked={}, difference_count={})",
            self.difference_count == 0,
            self.records_checked,
            self.entries_checked,
            self.difference_count
        )
    }
}
