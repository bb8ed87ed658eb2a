//! `rmq._rmqcore.ColumnBuffer`: one column of decoded messages, owned by Rust and handed
//! to Python through the buffer protocol, so that `pyarrow.Array.from_buffers` wraps it
//! without a copy. The segment decoder, broker pulls decoded for Spark and body batches
//! all return their columns in these.

use std::ffi::{c_int, c_void};

use pyo3::ffi;
use pyo3::prelude::*;

/// One column buffer, owned by Rust and exposed read-only through the buffer protocol.
#[pyclass(name = "ColumnBuffer", module = "rmq._rmqcore", frozen)]
pub struct PyColumnBuffer {
    values: Values,
}

pub(crate) enum Values {
    Bytes(Vec<u8>),
    I32(Vec<i32>),
    I64(Vec<i64>),
}

impl Values {
    fn as_bytes(&self) -> &[u8] {
        fn cast<T>(values: &[T]) -> &[u8] {
            // SAFETY: the integer types used here have no padding and any byte is a valid
            // u8; the slice borrows `values`, so the memory outlives it.
            unsafe {
                std::slice::from_raw_parts(
                    values.as_ptr().cast::<u8>(),
                    std::mem::size_of_val(values),
                )
            }
        }
        match self {
            Values::Bytes(values) => values,
            Values::I32(values) => cast(values),
            Values::I64(values) => cast(values),
        }
    }
}

#[pymethods]
impl PyColumnBuffer {
    fn __len__(&self) -> usize {
        self.values.as_bytes().len()
    }

    /// # Safety
    /// Called by Python with a valid `Py_buffer` to fill.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        let bytes = slf.get().values.as_bytes();
        let length =
            ffi::Py_ssize_t::try_from(bytes.len()).expect("a buffer is smaller than isize::MAX");
        // SAFETY: `view` comes from Python; the bytes live as long as `slf`, which the
        // view keeps a reference to, and are never written (the buffer is read-only).
        let status = unsafe {
            ffi::PyBuffer_FillInfo(
                view,
                slf.as_ptr(),
                bytes.as_ptr().cast_mut().cast::<c_void>(),
                length,
                1,
                flags,
            )
        };
        if status == -1 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }
}

pub(crate) fn buffer(py: Python<'_>, values: Values) -> PyResult<Py<PyColumnBuffer>> {
    Py::new(py, PyColumnBuffer { values })
}

impl PyColumnBuffer {
    /// A buffer of bytes (a binary column's data), for other modules' columns.
    pub(crate) fn of_bytes(py: Python<'_>, values: Vec<u8>) -> PyResult<Py<Self>> {
        buffer(py, Values::Bytes(values))
    }

    /// A buffer of i64 (offsets or positions), for other modules' columns.
    pub(crate) fn of_i64(py: Python<'_>, values: Vec<i64>) -> PyResult<Py<Self>> {
        buffer(py, Values::I64(values))
    }
}
