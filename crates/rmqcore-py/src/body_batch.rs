//! `rmq._rmqcore.BodyBatch`: the bodies of one read from a queue (`Store.read_bodies`),
//! copied into one buffer with their end positions beside them, in Apache Arrow's
//! large-binary layout. A bulk reader asks for no `rmq.Message` and no Python object per
//! field: it iterates the batch for each body as `bytes`, or wraps `offsets` and `data` as
//! an Arrow array without a copy (measured: a `Message` per body cost more than reading
//! the queue itself).
//!
//! Bodies are handed out as `bytes`, not as `memoryview` slices of `data`: under callgrind
//! a slice cost about 700 instructions (an index object each end, a slice object, a view
//! registered with its buffer, a garbage-collected object), a copy into `bytes` about 200
//! at 100 B and 1 KiB alike, and `bytes` is what every key-value store's cursor gives.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use rmqcore::record::RecordView;

use crate::column_buffer::PyColumnBuffer;

/// Collects the bodies of a read as the store hands its records out (without the GIL).
pub struct BodyColumns {
    data: Vec<u8>,
    offsets: Vec<i64>,
    queue_offsets: Vec<i64>,
    expected: usize,
}

impl BodyColumns {
    pub fn with_capacity(messages: usize) -> Self {
        // Reserving for a huge `max_count` would be a waste; a read grows as it goes.
        let messages = messages.min(4096);
        let mut offsets = Vec::with_capacity(messages + 1);
        offsets.push(0);
        BodyColumns {
            data: Vec::new(),
            offsets,
            queue_offsets: Vec::with_capacity(messages),
            expected: messages,
        }
    }

    pub fn push(&mut self, view: &RecordView<'_>) {
        if self.data.is_empty() {
            // A queue's bodies are mostly alike in size: room for as many as the first,
            // rather than growing (and copying) the buffer a dozen times.
            self.data.reserve(view.body.len() * self.expected);
        }
        self.data.extend_from_slice(view.body);
        self.offsets.push(self.data.len() as i64);
        self.queue_offsets.push(view.queue_offset);
    }
}

#[pyclass(name = "BodyBatch", module = "rmq._rmqcore", frozen)]
pub struct PyBodyBatch {
    /// Every body, one after the other.
    #[pyo3(get)]
    data: Py<PyColumnBuffer>,
    /// i64 positions in `data`: body `i` is `data[offsets[i]:offsets[i + 1]]`.
    #[pyo3(get)]
    offsets: Py<PyColumnBuffer>,
    /// i64 queue offset of each message (not consecutive when a tag filter skipped some).
    #[pyo3(get)]
    queue_offsets: Py<PyColumnBuffer>,
    #[pyo3(get)]
    next_offset: i64,
    #[pyo3(get)]
    min_offset: i64,
    #[pyo3(get)]
    max_offset: i64,
    count: usize,
}

impl PyBodyBatch {
    pub fn new(py: Python<'_>, columns: BodyColumns, end: &rmqcore::Pulled) -> PyResult<Self> {
        Ok(PyBodyBatch {
            count: columns.queue_offsets.len(),
            data: PyColumnBuffer::of_bytes(py, columns.data)?,
            offsets: PyColumnBuffer::of_i64(py, columns.offsets)?,
            queue_offsets: PyColumnBuffer::of_i64(py, columns.queue_offsets)?,
            next_offset: end.next_offset,
            min_offset: end.min_offset,
            max_offset: end.max_offset,
        })
    }

    /// Body `index` as `bytes` (the caller checked `index < count`).
    fn body<'py>(&self, py: Python<'py>, index: usize) -> Bound<'py, PyBytes> {
        let offsets = self.offsets.get().i64_values();
        let (start, end) = (offsets[index] as usize, offsets[index + 1] as usize);
        PyBytes::new(py, &self.data.get().bytes()[start..end])
    }
}

#[pymethods]
impl PyBodyBatch {
    fn __len__(&self) -> usize {
        self.count
    }

    /// Body `index` (negative counts from the end) as `bytes`.
    fn __getitem__<'py>(&self, py: Python<'py>, index: isize) -> PyResult<Bound<'py, PyBytes>> {
        let count = self.count as isize;
        let at = if index < 0 { index + count } else { index };
        if !(0..count).contains(&at) {
            return Err(pyo3::exceptions::PyIndexError::new_err(format!(
                "body {index} of a batch of {count}"
            )));
        }
        Ok(self.body(py, at as usize))
    }

    /// The bodies in order, as `bytes`: made in one call into a list, whose own iterator
    /// then costs a reader a few instructions a body rather than a call into this module.
    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let bodies = PyList::new(py, (0..self.count).map(|index| self.body(py, index)))?;
        Ok(bodies.try_iter()?.into_any())
    }

    fn __repr__(&self) -> String {
        format!(
            "BodyBatch(count={}, bytes={}, next_offset={})",
            self.count,
            self.offsets.get().i64_values().last().copied().unwrap_or(0),
            self.next_offset
        )
    }
}
