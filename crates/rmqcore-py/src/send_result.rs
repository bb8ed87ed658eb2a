//! `rmq._rmqcore.SendResult` (re-exported as `rmq.client.SendResult`): where the broker
//! stored one message a producer sent. Made here, when a `SendFuture` is asked for its
//! result, so the binding needs no Python class to build it.

use pyo3::prelude::*;
use pyo3::types::PyString;

/// Where the broker stored one message.
#[pyclass(
    frozen,
    eq,
    hash,
    get_all,
    module = "rmq._rmqcore",
    name = "SendResult"
)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PySendResult {
    pub topic: String,
    pub queue_id: i32,
    pub queue_offset: i64,
    pub msg_id: String,
    pub commitlog_offset: i64,
    pub store_timestamp: i64,
}

#[pymethods]
impl PySendResult {
    #[new]
    #[pyo3(signature = (topic, queue_id, queue_offset, msg_id, commitlog_offset, store_timestamp))]
    fn new(
        topic: String,
        queue_id: i32,
        queue_offset: i64,
        msg_id: String,
        commitlog_offset: i64,
        store_timestamp: i64,
    ) -> Self {
        PySendResult {
            topic,
            queue_id,
            queue_offset,
            msg_id,
            commitlog_offset,
            store_timestamp,
        }
    }

    /// As the dataclass it replaces printed it (strings in Python's quoting).
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let topic = PyString::new(py, &self.topic).repr()?;
        let msg_id = PyString::new(py, &self.msg_id).repr()?;
        Ok(format!(
            "SendResult(topic={topic}, queue_id={}, queue_offset={}, msg_id={msg_id}, \
             commitlog_offset={}, store_timestamp={})",
            self.queue_id, self.queue_offset, self.commitlog_offset, self.store_timestamp
        ))
    }
}
