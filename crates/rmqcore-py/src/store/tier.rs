//! The tier's part of `rmq.Store`: its options, its status and an upload on demand.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use rmqcore::options::TierOptions;

use super::PyStore;
use crate::errors::{invalid, without_gil};

const HOUR_MS: f64 = 3_600_000.0;

fn hours_to_ms(py: Python<'_>, name: &'static str, hours: Option<f64>) -> PyResult<Option<u64>> {
    match hours {
        None => Ok(None),
        Some(hours) if hours.is_finite() && hours >= 0.0 => Ok(Some((hours * HOUR_MS) as u64)),
        Some(hours) => Err(invalid(
            py,
            name,
            format!("{hours} is not a number of hours >= 0"),
        )),
    }
}

/// The store's tier options from `rmq.Store`'s keywords; None without `tier_url`.
pub fn tier_options(
    py: Python<'_>,
    url: Option<String>,
    endpoint: Option<String>,
    region: Option<String>,
    local_retention_bytes: Option<u64>,
    local_retention_hours: Option<f64>,
    tier_retention_hours: Option<f64>,
) -> PyResult<Option<TierOptions>> {
    let Some(url) = url else {
        let stray = [
            ("tier_endpoint", endpoint.is_some()),
            ("tier_region", region.is_some()),
            ("local_retention_bytes", local_retention_bytes.is_some()),
            ("local_retention_hours", local_retention_hours.is_some()),
            ("tier_retention_hours", tier_retention_hours.is_some()),
        ];
        if let Some((name, _)) = stray.iter().find(|(_, given)| *given) {
            return Err(invalid(py, name, "only applies to a store with a tier_url"));
        }
        return Ok(None);
    };
    let mut options = TierOptions::new(url);
    options.endpoint = endpoint;
    options.region = region;
    options.local_retention_bytes = local_retention_bytes;
    options.local_retention_ms = hours_to_ms(py, "local_retention_hours", local_retention_hours)?;
    options.tier_retention_ms = hours_to_ms(py, "tier_retention_hours", tier_retention_hours)?;
    Ok(Some(options))
}

#[pymethods]
impl PyStore {
    /// Where each segment is (active, pending, uploaded, evicted) and how uploads go;
    /// None for a store without a tier.
    fn tier_status(&self, py: Python<'_>) -> PyResult<Option<Py<PyDict>>> {
        let store = &self.inner;
        let Some(status) = without_gil(py, || store.tier_status())? else {
            return Ok(None);
        };
        let segments = PyList::empty(py);
        for (start_offset, size, tier) in &status.segments {
            let segment = PyDict::new(py);
            segment.set_item("start_offset", start_offset)?;
            segment.set_item("size", size)?;
            segment.set_item("state", tier.name())?;
            segments.append(segment)?;
        }
        let upload = PyDict::new(py);
        let u = &status.upload;
        upload.set_item("failing", &u.failing)?;
        upload.set_item("failing_since_ms", u.failing_since_ms)?;
        upload.set_item("failed_attempts", u.failed_attempts)?;
        upload.set_item("in_progress", u.in_progress)?;
        upload.set_item("uploaded_segments", u.uploaded_segments)?;
        upload.set_item("uploaded_bytes", u.uploaded_bytes)?;
        upload.set_item("upload_seconds", u.upload_seconds)?;
        let reads = PyDict::new(py);
        reads.set_item("range_reads", status.reads.range_reads)?;
        reads.set_item("bytes_fetched", status.reads.bytes_fetched)?;
        reads.set_item("cache_hits", status.reads.cache_hits)?;
        let r = &status.reads;
        reads.set_item("read_ahead_bytes", r.read_ahead_bytes)?;
        reads.set_item("read_ahead_peak_bytes", r.read_ahead_peak_bytes)?;
        reads.set_item("read_ahead_limit_bytes", r.read_ahead_limit_bytes)?;
        reads.set_item(
            "read_ahead_evicted_unread_bytes",
            r.read_ahead_evicted_unread_bytes,
        )?;
        reads.set_item("read_ahead_released_bytes", r.read_ahead_released_bytes)?;
        reads.set_item("cache_held_bytes", r.cache_held_bytes)?;
        reads.set_item("queue_read_failure", &status.queue_read_failure)?;
        let consume_queues = PyList::empty(py);
        for (file, size, local) in &status.consume_queues {
            let entry = PyDict::new(py);
            entry.set_item("file", file)?;
            entry.set_item("size", size)?;
            entry.set_item("state", if *local { "uploaded" } else { "evicted" })?;
            consume_queues.append(entry)?;
        }
        let answer = PyDict::new(py);
        answer.set_item("consume_queues", consume_queues)?;
        answer.set_item("reads", reads)?;
        answer.set_item("url", &status.url)?;
        answer.set_item("segments", segments)?;
        answer.set_item("upload", upload)?;
        Ok(Some(answer.unbind()))
    }

    /// Upload every sealed segment now (the uploader thread does it every second);
    /// returns how many segments were uploaded.
    fn upload_to_tier(&self, py: Python<'_>) -> PyResult<usize> {
        let store = &self.inner;
        without_gil(py, || store.upload_to_tier())
    }
}
