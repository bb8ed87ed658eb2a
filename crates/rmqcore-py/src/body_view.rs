//! `rmq._rmqcore.BodyView`: one body of a `BodyBatch` without a copy, read-only through
//! the buffer protocol (`memoryview(view)`, `bytes(view)`, `pyarrow.py_buffer(view)`) and
//! sized by `len(view)`. It keeps its batch alive, and the batch keeps the mapped segments
//! alive, so a view stays readable after the batch object, the store or the segment's file
//! is gone.
//!
//! The type is made with the C API's `PyType_FromSpec` (`batch_child.rs`) rather than
//! `#[pyclass]`: a scan makes one view per body, and a pyclass instance is a
//! garbage-collected object whose creation, `len()` and collection cost about 700
//! instructions under callgrind, as much as copying a 1 KiB body into `bytes`. A view
//! holds no object but its batch (which holds no view), so it cannot be part of a cycle
//! and needs no collector; its slots are plain C functions.

use std::ffi::{c_int, c_void};

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

use crate::batch_child::{self, BatchChild};

/// The object's layout: the batch it keeps alive (whose segments hold the bytes), and the
/// body's bytes.
#[repr(C)]
struct BodyViewObject {
    child: BatchChild,
    data: *const u8,
    length: ffi::Py_ssize_t,
}

static BODY_VIEW_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

unsafe extern "C" fn length(object: *mut ffi::PyObject) -> ffi::Py_ssize_t {
    // SAFETY: CPython calls this with a `BodyViewObject`.
    unsafe { (*object.cast::<BodyViewObject>()).length }
}

unsafe extern "C" fn get_buffer(
    object: *mut ffi::PyObject,
    buffer: *mut ffi::Py_buffer,
    flags: c_int,
) -> c_int {
    // SAFETY: CPython calls this with a `BodyViewObject` and a `Py_buffer` to fill. The
    // bytes are a published record's body in a segment the batch keeps mapped; the buffer
    // holds a reference to the view, which holds the batch. They are never written again
    // (the buffer is read-only).
    unsafe {
        let view = object.cast::<BodyViewObject>();
        ffi::PyBuffer_FillInfo(
            buffer,
            object,
            (*view).data.cast_mut().cast::<c_void>(),
            (*view).length,
            1,
            flags,
        )
    }
}

/// Make the type and add it to the module (once, at import).
pub fn add_type(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    let kind = BODY_VIEW_TYPE.get_or_try_init(py, || {
        let slots = [
            ffi::PyType_Slot {
                slot: ffi::Py_sq_length,
                pfunc: length as *mut c_void,
            },
            ffi::PyType_Slot {
                slot: ffi::Py_bf_getbuffer,
                pfunc: get_buffer as *mut c_void,
            },
            ffi::PyType_Slot {
                slot: ffi::Py_tp_doc,
                pfunc: c"One body of a BodyBatch, read-only and without a copy (buffer protocol)."
                    .as_ptr()
                    .cast_mut()
                    .cast::<c_void>(),
            },
        ];
        batch_child::make_type::<BodyViewObject>(py, c"rmq._rmqcore.BodyView", &slots)
    })?;
    module.add("BodyView", kind.bind(py))
}

/// A view of `body`, which `batch` (the `BodyBatch` it comes from) keeps readable.
///
/// # Safety
/// `body` must stay valid and unchanged as long as `batch` lives (a batch's bodies lie in
/// the segments it holds mapped).
pub unsafe fn new_view<'py>(batch: &Bound<'py, PyAny>, body: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    let kind = BODY_VIEW_TYPE
        .get(batch.py())
        .expect("BodyView is made when the module is imported");
    // SAFETY: the type was made for `BodyViewObject`, and every field after the
    // `BatchChild` is set; the caller keeps `body` valid while the batch lives.
    unsafe {
        batch_child::new_child::<BodyViewObject>(kind, batch, |view| {
            (*view).data = body.as_ptr();
            (*view).length = body.len() as ffi::Py_ssize_t;
        })
    }
}
