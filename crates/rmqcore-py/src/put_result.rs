//! `rmq.PutResult`: where `put` stored a message; its msgId is formed when asked for.
//! `rmq.PutResults`: `put_batch`'s results, each made when asked for.

use std::sync::atomic::{AtomicUsize, Ordering};

use pyo3::exceptions::PyIndexError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PySlice};
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

/// `rmq.PutResults`: where `put_batch` stored each message, as a read-only sequence whose
/// `PutResult`s are made when indexed or iterated. A bulk writer that looks at none of
/// them pays for none (a `PutResult` per message cost a batch of 100 B messages about a
/// tenth of its time).
#[pyclass(name = "PutResults", module = "rmq._rmqcore", frozen, sequence)]
pub struct PyPutResults {
    results: Vec<PutResult>,
}

impl From<Vec<PutResult>> for PyPutResults {
    fn from(results: Vec<PutResult>) -> Self {
        PyPutResults { results }
    }
}

impl PyPutResults {
    fn at(&self, index: isize) -> PyResult<PyPutResult> {
        let count = self.results.len() as isize;
        let at = if index < 0 { index + count } else { index };
        if !(0..count).contains(&at) {
            return Err(PyIndexError::new_err(format!(
                "result {index} of a batch of {count}"
            )));
        }
        Ok(PyPutResult::from(self.results[at as usize].clone()))
    }
}

#[pymethods]
impl PyPutResults {
    fn __len__(&self) -> usize {
        self.results.len()
    }

    /// Result `index` (negative counts from the end), or a list of them for a slice.
    fn __getitem__(&self, py: Python<'_>, index: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        if let Ok(slice) = index.cast::<PySlice>() {
            let span = slice.indices(self.results.len() as isize)?;
            let picked = (0..span.slicelength)
                .map(|step| self.at(span.start + step as isize * span.step))
                .collect::<PyResult<Vec<_>>>()?;
            return Ok(PyList::new(py, picked)?.into_any().unbind());
        }
        let index: isize = index.extract()?;
        Ok(Py::new(py, self.at(index)?)?.into_any())
    }

    fn __iter__(slf: Bound<'_, Self>) -> PyPutResultIter {
        PyPutResultIter {
            results: slf.unbind(),
            next: AtomicUsize::new(0),
        }
    }

    fn __repr__(&self) -> String {
        format!("PutResults(count={})", self.results.len())
    }
}

/// Iterator over a `PutResults`, making each `PutResult` as it is reached.
#[pyclass(name = "PutResultIterator", module = "rmq._rmqcore", frozen)]
pub struct PyPutResultIter {
    results: Py<PyPutResults>,
    next: AtomicUsize,
}

#[pymethods]
impl PyPutResultIter {
    fn __iter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __next__(&self) -> Option<PyPutResult> {
        let results = &self.results.get().results;
        // Relaxed is enough: it only keeps two `next` calls from taking the same index.
        let index = self.next.fetch_add(1, Ordering::Relaxed);
        if index >= results.len() {
            self.next.store(results.len(), Ordering::Relaxed);
            return None;
        }
        Some(PyPutResult::from(results[index].clone()))
    }
}
