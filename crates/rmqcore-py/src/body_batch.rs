//! `rmq._rmqcore.BodyBatch`: the bodies of one read from a queue (`Store.read_bodies`),
//! copied into one buffer with their end positions beside them, in Apache Arrow's
//! large-binary layout. A bulk reader asks for no `rmq.Message` and no Python object per
//! field: it iterates the batch for zero-copy `memoryview`s of the bodies, or wraps
//! `offsets` and `data` as an Arrow array without a copy (measured: a `Message` per body
//! cost more than reading the queue itself).

use pyo3::ffi;
use pyo3::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};

use pyo3::types::PyMemoryView;
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

/// Where a read ended, as `PullResult` reports it.
pub struct ReadEnd {
    pub next_offset: i64,
    pub min_offset: i64,
    pub max_offset: i64,
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
    pub fn new(py: Python<'_>, columns: BodyColumns, end: ReadEnd) -> PyResult<Self> {
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

    fn span(&self, index: usize) -> (usize, usize) {
        let offsets = self.offsets.get().i64_values();
        (offsets[index] as usize, offsets[index + 1] as usize)
    }

    /// A view of the whole data buffer: the bodies' views are slices of it, which keep
    /// the buffer (and so this batch's bytes) alive as long as any of them is.
    fn whole<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyMemoryView>> {
        PyMemoryView::from(self.data.bind(py).as_any())
    }
}

/// `whole[start:end]`: a memoryview sharing `whole`'s buffer.
fn slice<'py>(
    whole: &Bound<'py, PyMemoryView>,
    start: usize,
    end: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let py = whole.py();
    // SAFETY: `whole` is a live object; positions come from this batch's own offsets and
    // fit isize (the data is one allocation). The call returns a new reference or NULL
    // with an exception set, which `from_owned_ptr_or_err` turns into an error.
    unsafe {
        let view = ffi::PySequence_GetSlice(whole.as_ptr(), start as isize, end as isize);
        Bound::from_owned_ptr_or_err(py, view)
    }
}

#[pymethods]
impl PyBodyBatch {
    fn __len__(&self) -> usize {
        self.count
    }

    /// Body `index` (negative counts from the end) as a read-only `memoryview`.
    fn __getitem__<'py>(&self, py: Python<'py>, index: isize) -> PyResult<Bound<'py, PyAny>> {
        let count = self.count as isize;
        let at = if index < 0 { index + count } else { index };
        if !(0..count).contains(&at) {
            return Err(pyo3::exceptions::PyIndexError::new_err(format!(
                "body {index} of a batch of {count}"
            )));
        }
        let (start, end) = self.span(at as usize);
        slice(&self.whole(py)?, start, end)
    }

    /// The bodies in order, each a read-only `memoryview` into `data` (no copy), made as
    /// the iteration reaches it (a list of them all would be traversed by the collector).
    fn __iter__(slf: Bound<'_, Self>) -> PyResult<PyBodyIter> {
        let py = slf.py();
        Ok(PyBodyIter {
            whole: slf.get().whole(py)?.unbind(),
            batch: slf.unbind(),
            next: AtomicUsize::new(0),
        })
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

/// Iterator over a `BodyBatch`'s bodies.
#[pyclass(name = "BodyIterator", module = "rmq._rmqcore", frozen)]
pub struct PyBodyIter {
    batch: Py<PyBodyBatch>,
    whole: Py<PyMemoryView>,
    next: AtomicUsize,
}

#[pymethods]
impl PyBodyIter {
    fn __iter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let batch = self.batch.get();
        // The iterator is not shared between threads in any useful way; relaxed order is
        // enough to keep two `next` calls from returning the same body.
        let index = self.next.fetch_add(1, Ordering::Relaxed);
        if index >= batch.count {
            self.next.store(batch.count, Ordering::Relaxed);
            return Ok(None);
        }
        let (start, end) = batch.span(index);
        slice(self.whole.bind(py), start, end).map(Some)
    }
}
