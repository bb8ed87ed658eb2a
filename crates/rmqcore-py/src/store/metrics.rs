//! `rmq.Store.metrics()` and `queue_traffic()`: the engine's counters, for the broker's
//! metrics.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use rmqcore::store::HistogramSnapshot;

use super::PyStore;

fn histogram<'py>(py: Python<'py>, snapshot: &HistogramSnapshot) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("bounds", &snapshot.bounds)?;
    dict.set_item("counts", &snapshot.counts)?;
    dict.set_item("sum", snapshot.sum)?;
    Ok(dict)
}

#[pymethods]
impl PyStore {
    /// Counters since the store was opened and the log's extent (see the stub).
    fn metrics(&self, py: Python<'_>) -> PyResult<Py<PyDict>> {
        let m = self.inner.metrics();
        let dict = PyDict::new(py);
        dict.set_item("messages_put", m.messages_put)?;
        dict.set_item("body_bytes_put", m.body_bytes_put)?;
        dict.set_item("messages_read", m.messages_read)?;
        dict.set_item("body_bytes_read", m.body_bytes_read)?;
        dict.set_item("retention_runs", m.retention_runs)?;
        dict.set_item("segments_deleted", m.segments_deleted)?;
        dict.set_item("segments_evicted", m.segments_evicted)?;
        dict.set_item("put_latency_us", histogram(py, &m.put_latency_us)?)?;
        dict.set_item("pull_latency_us", histogram(py, &m.pull_latency_us)?)?;
        dict.set_item("flush_latency_us", histogram(py, &m.flush_latency_us)?)?;
        dict.set_item("flush_bytes", histogram(py, &m.flush_bytes)?)?;
        dict.set_item("commitlog_min_offset", m.commitlog_min_offset)?;
        dict.set_item("commitlog_max_offset", m.commitlog_max_offset)?;
        dict.set_item("flushed_offset", m.flushed_offset)?;
        dict.set_item("dispatch_lag_bytes", m.dispatch_lag_bytes)?;
        Ok(dict.unbind())
    }

    /// Each queue's traffic since the store was opened, as tuples (see the stub): the
    /// broker sums them by topic on a scrape.
    fn queue_traffic(&self, py: Python<'_>) -> Vec<(String, i32, u64, u64, u64, u64)> {
        // The RocksDB form lists its queues with a scan: let the shard's threads run.
        let store = &self.inner;
        py.detach(|| store.queue_traffic())
            .into_iter()
            .map(|queue| {
                let t = queue.traffic;
                (
                    queue.topic,
                    queue.queue_id,
                    t.messages_in,
                    t.bytes_in,
                    t.messages_out,
                    t.bytes_out,
                )
            })
            .collect()
    }
}
