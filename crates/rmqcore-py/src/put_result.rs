//! `rmq.PutResult`: where `put` stored a message; its msgId is formed when asked for.

use pyo3::prelude::*;
use rmqcore::PutResult;

#[pyclass(name = "PutResult", module = "rmq._rmqcore", frozen, freelist = 4096)]
pub struct PyPutResult {
    result: PutResult,
}

impl From<PutResult> for PyPutResult {
    fn from(result: PutResult) -> Self {
        PyPutResult { result }
    }
}

#[pymethods]
impl PyPutResult {
    #[getter]
    fn msg_id(&self) -> String {
        self.result.msg_id()
    }

    #[getter]
    fn commitlog_offset(&self) -> i64 {
        self.result.commitlog_offset
    }

    #[getter]
    fn queue_offset(&self) -> i64 {
        self.result.queue_offset
    }

    #[getter]
    fn store_timestamp(&self) -> i64 {
        self.result.store_timestamp
    }

    #[getter]
    fn store_size(&self) -> i32 {
        self.result.store_size
    }

    fn __repr__(&self) -> String {
        format!(
            "PutResult(msg_id={:?}, commitlog_offset={}, queue_offset={}, store_timestamp={})",
            self.result.msg_id(),
            self.result.commitlog_offset,
            self.result.queue_offset,
            self.result.store_timestamp
        )
    }
}
