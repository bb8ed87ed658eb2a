//! The iterator of a `BodyBatch` (`for body in batch`): each body copied into `bytes` when
//! it is asked for, not all of a batch's bodies into a list first.
//!
//! A body over 512 bytes is not in Python's small-object allocator but in the C library's
//! `malloc`. A list of 1,024 bodies of 1 KiB had every block alive at once and then freed
//! together, and `malloc` and `free` cost about 600 instructions a body under callgrind
//! (carving each block out of the heap, merging them back); one body at a time, the block
//! a reader has just dropped is handed out again, at a few dozen. The type is made with
//! the C API like `BodyView` (`batch_child.rs`): its `next` is a plain C function,
//! cheaper than a list iterator's step plus building the list.

use std::ffi::c_void;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

use crate::batch_child::{self, BatchChild};
use crate::body_places::BodyPlaces;

/// The object's layout: the batch it keeps alive, its bodies, where it is.
#[repr(C)]
struct BodyIteratorObject {
    child: BatchChild,
    /// The batch's bodies: inside the batch object, which is frozen and outlives this.
    bodies: *const BodyPlaces,
    next: usize,
}

static BODY_ITERATOR_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

unsafe extern "C" fn next(object: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: CPython calls this with a `BodyIteratorObject`, holding the GIL; `bodies`
    // points into the batch it keeps alive, whose bodies lie in segments the batch keeps
    // mapped. Null without an exception set ends the iteration.
    unsafe {
        let iterator = object.cast::<BodyIteratorObject>();
        let bodies = &*(*iterator).bodies;
        let index = (*iterator).next;
        if index >= bodies.len() {
            return std::ptr::null_mut();
        }
        (*iterator).next = index + 1;
        let body = bodies.body(index);
        ffi::PyBytes_FromStringAndSize(body.as_ptr().cast(), body.len() as ffi::Py_ssize_t)
    }
}

/// Make the type (once, at import). It is not a module attribute: only `iter(batch)`
/// makes one.
pub fn make_type(py: Python<'_>) -> PyResult<()> {
    BODY_ITERATOR_TYPE.get_or_try_init(py, || {
        let slots = [
            ffi::PyType_Slot {
                slot: ffi::Py_tp_iter,
                pfunc: ffi::PyObject_SelfIter as *mut c_void,
            },
            ffi::PyType_Slot {
                slot: ffi::Py_tp_iternext,
                pfunc: next as *mut c_void,
            },
        ];
        batch_child::make_type::<BodyIteratorObject>(py, c"rmq._rmqcore.BodyIterator", &slots)
    })?;
    Ok(())
}

/// An iterator over `bodies` as `bytes`, from the first, keeping `batch` (the `BodyBatch`
/// they belong to) alive.
///
/// # Safety
/// `bodies` must stay where it is, unchanged, as long as `batch` lives (they are inside the
/// frozen batch), and so must the bytes they point at (in the segments it holds mapped).
pub unsafe fn new_iterator<'py>(
    batch: &Bound<'py, PyAny>,
    bodies: &BodyPlaces,
) -> PyResult<Bound<'py, PyAny>> {
    let kind = BODY_ITERATOR_TYPE
        .get(batch.py())
        .expect("BodyIterator is made when the module is imported");
    // SAFETY: the type was made for `BodyIteratorObject`, and every field after the
    // `BatchChild` is set; the caller keeps `bodies` where it is while the batch lives.
    unsafe {
        batch_child::new_child::<BodyIteratorObject>(kind, batch, |iterator| {
            (*iterator).bodies = bodies;
            (*iterator).next = 0;
        })
    }
}
