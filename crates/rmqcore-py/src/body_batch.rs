//! `rmq._rmqcore.BodyBatch`: the bodies of one read from a queue (`Store.read_bodies`),
//! left where they are in the mapped commit log. The batch holds the segments (usually one)
//! the bodies lie in, which stay mapped while it lives even once retention or the tier
//! deletes their files, and each body's place in them; every record's CRC was checked when
//! the batch was built. A bulk reader asks for no `rmq.Message` and no Python object per
//! field: iterating gives each body as `bytes` copied straight from the mapping (the one
//! copy) as it is asked for (`body_iterator.rs`), `views()` gives zero-copy views
//! (`BodyView`), and `offsets` / `data` give Apache Arrow's large-binary layout (copied
//! into one buffer the first time they are asked for).
//!
//! Bodies are handed out as `bytes` by default, not as `memoryview` slices: under callgrind
//! a slice cost about 700 instructions (an index object each end, a slice object, a view
//! registered with its buffer, a garbage-collected object), a copy into `bytes` about 200
//! at 100 B and 1 KiB alike, and `bytes` is what every key-value store's cursor gives.

use std::sync::OnceLock;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use crate::body_iterator::new_iterator;
use crate::body_places::BodyPlaces;
use crate::body_view::new_view;
use crate::column_buffer::PyColumnBuffer;

#[pyclass(name = "BodyBatch", module = "rmq._rmqcore", frozen)]
pub struct PyBodyBatch {
    bodies: BodyPlaces,
    /// i64 queue offset of each message (not consecutive when a tag filter skipped some).
    #[pyo3(get)]
    queue_offsets: Py<PyColumnBuffer>,
    #[pyo3(get)]
    next_offset: i64,
    #[pyo3(get)]
    min_offset: i64,
    #[pyo3(get)]
    max_offset: i64,
    /// `data` and `offsets`, made the first time either is asked for.
    arrow: OnceLock<(Py<PyColumnBuffer>, Py<PyColumnBuffer>)>,
}

impl PyBodyBatch {
    pub fn new(py: Python<'_>, mut bodies: BodyPlaces, end: &rmqcore::Pulled) -> PyResult<Self> {
        let queue_offsets = bodies.take_queue_offsets();
        Ok(PyBodyBatch {
            bodies,
            queue_offsets: PyColumnBuffer::of_i64(py, queue_offsets)?,
            next_offset: end.next_offset,
            min_offset: end.min_offset,
            max_offset: end.max_offset,
            arrow: OnceLock::new(),
        })
    }

    pub fn count(&self) -> usize {
        self.bodies.len()
    }

    /// A `BodyView` of body `index` (the caller checked `index < count`).
    fn view_of<'py>(slf: &Bound<'py, Self>, index: usize) -> PyResult<Bound<'py, PyAny>> {
        let body = slf.get().bodies.body(index);
        // SAFETY: the body lies in a segment the batch holds mapped (its owners never
        // change: the batch is frozen), in a published record no writer touches again.
        unsafe { new_view(slf.as_any(), body) }
    }

    /// Body `index` as `bytes` (the caller checked `index < count`).
    fn body<'py>(&self, py: Python<'py>, index: usize) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.bodies.body(index))
    }

    fn checked_index(&self, index: isize) -> PyResult<usize> {
        let count = self.count() as isize;
        let at = if index < 0 { index + count } else { index };
        if !(0..count).contains(&at) {
            return Err(pyo3::exceptions::PyIndexError::new_err(format!(
                "body {index} of a batch of {count}"
            )));
        }
        Ok(at as usize)
    }

    /// The bodies copied into one buffer, with their end positions beside them.
    fn arrow(&self, py: Python<'_>) -> PyResult<&(Py<PyColumnBuffer>, Py<PyColumnBuffer>)> {
        if let Some(columns) = self.arrow.get() {
            return Ok(columns);
        }
        let total = self.bodies.total_length();
        let mut data = Vec::with_capacity(total);
        let mut offsets = Vec::with_capacity(self.count() + 1);
        offsets.push(0i64);
        for index in 0..self.count() {
            data.extend_from_slice(self.bodies.body(index));
            offsets.push(data.len() as i64);
        }
        let columns = (
            PyColumnBuffer::of_bytes(py, data)?,
            PyColumnBuffer::of_i64(py, offsets)?,
        );
        // Under the GIL no other thread made them meanwhile; if one did, theirs is kept.
        let _ = self.arrow.set(columns);
        Ok(self.arrow.get().expect("set just now"))
    }
}

#[pymethods]
impl PyBodyBatch {
    fn __len__(&self) -> usize {
        self.count()
    }

    /// Body `index` (negative counts from the end) as `bytes`.
    fn __getitem__<'py>(&self, py: Python<'py>, index: isize) -> PyResult<Bound<'py, PyBytes>> {
        Ok(self.body(py, self.checked_index(index)?))
    }

    /// The bodies in order, as `bytes`, each copied when the iterator reaches it.
    fn __iter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        // SAFETY: the bodies are inside the batch, which is frozen: they stay where they
        // are, unchanged, while the batch lives.
        unsafe { new_iterator(slf.as_any(), &slf.get().bodies) }
    }

    /// The bodies in order as zero-copy `BodyView`s into the mapped log, each keeping the
    /// batch (and so its segments) alive.
    fn views<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let views = (0..slf.get().count())
            .map(|index| Self::view_of(slf, index))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(PyList::new(slf.py(), views)?.try_iter()?.into_any())
    }

    /// Body `index` (negative counts from the end) as a zero-copy `BodyView`.
    fn view<'py>(slf: &Bound<'py, Self>, index: isize) -> PyResult<Bound<'py, PyAny>> {
        Self::view_of(slf, slf.get().checked_index(index)?)
    }

    /// Every body, one after the other (copied once, when first asked for).
    #[getter]
    fn data(&self, py: Python<'_>) -> PyResult<Py<PyColumnBuffer>> {
        Ok(self.arrow(py)?.0.clone_ref(py))
    }

    /// i64 positions in `data`: body `i` is `data[offsets[i]:offsets[i + 1]]`.
    #[getter]
    fn offsets(&self, py: Python<'_>) -> PyResult<Py<PyColumnBuffer>> {
        Ok(self.arrow(py)?.1.clone_ref(py))
    }

    fn __repr__(&self) -> String {
        let bytes: usize = self.bodies.total_length();
        format!(
            "BodyBatch(count={}, bytes={bytes}, next_offset={})",
            self.count(),
            self.next_offset
        )
    }
}
