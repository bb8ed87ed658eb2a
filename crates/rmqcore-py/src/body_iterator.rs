//! The iterator of a `BodyBatch` (`for body in batch`): each body copied into `bytes` when
//! it is asked for, not all of a batch's bodies into a list first.
//!
//! A body over 512 bytes is not in Python's small-object allocator but in the C library's
//! `malloc`. A list of 1,024 bodies of 1 KiB had every block alive at once and then freed
//! together, and `malloc` and `free` cost about 600 instructions a body under callgrind
//! (carving each block out of the heap, merging them back); one body at a time, the block
//! a reader has just dropped is handed out again, at a few dozen. The type is made with
//! the C API like `BodyView` (see there why): its `next` is a plain C function, cheaper
//! than a list iterator's step plus building the list.

use std::ffi::{c_int, c_void};

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

use crate::body_places::BodyPlaces;

/// The object's layout: the header, the batch it keeps alive, its bodies, where it is.
#[repr(C)]
struct BodyIteratorObject {
    header: ffi::PyObject,
    /// A strong reference to the `BodyBatch`.
    batch: *mut ffi::PyObject,
    /// The batch's bodies: inside the batch object, which is frozen and outlives this.
    bodies: *const BodyPlaces,
    next: usize,
}

static BODY_ITERATOR_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

unsafe extern "C" fn dealloc(object: *mut ffi::PyObject) {
    // SAFETY: CPython calls this with a `BodyIteratorObject` whose count reached zero.
    unsafe {
        let iterator = object.cast::<BodyIteratorObject>();
        let kind = ffi::Py_TYPE(object);
        ffi::Py_DECREF((*iterator).batch);
        ffi::PyObject_Free(object.cast::<c_void>());
        // Instances of a heap type hold a reference to it.
        ffi::Py_DECREF(kind.cast::<ffi::PyObject>());
    }
}

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
        let mut slots = [
            ffi::PyType_Slot {
                slot: ffi::Py_tp_dealloc,
                pfunc: dealloc as *mut c_void,
            },
            ffi::PyType_Slot {
                slot: ffi::Py_tp_iter,
                pfunc: ffi::PyObject_SelfIter as *mut c_void,
            },
            ffi::PyType_Slot {
                slot: ffi::Py_tp_iternext,
                pfunc: next as *mut c_void,
            },
            ffi::PyType_Slot::default(),
        ];
        let mut spec = ffi::PyType_Spec {
            // Static: a heap type keeps pointing at its spec's name.
            name: c"rmq._rmqcore.BodyIterator".as_ptr(),
            basicsize: std::mem::size_of::<BodyIteratorObject>() as c_int,
            itemsize: 0,
            flags: (ffi::Py_TPFLAGS_DEFAULT | ffi::Py_TPFLAGS_DISALLOW_INSTANTIATION) as _,
            slots: slots.as_mut_ptr(),
        };
        // SAFETY: the spec and its slots are valid for the call, which copies the slots.
        let kind = unsafe { ffi::PyType_FromSpec(&mut spec) };
        // SAFETY: a new reference, or null with the error set.
        let kind = unsafe { Bound::from_owned_ptr_or_err(py, kind)? };
        Ok::<_, PyErr>(kind.cast_into::<PyType>()?.unbind())
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
    let py = batch.py();
    let kind = BODY_ITERATOR_TYPE
        .get(py)
        .expect("BodyIterator is made when the module is imported");
    // SAFETY: memory for one `BodyIteratorObject`, initialised as an instance of the type
    // (which `PyObject_Init` counts a reference to) before any field is read; the batch
    // reference is a new strong one, released by `dealloc`, and keeps `bodies` where it
    // is (the caller's promise).
    unsafe {
        let object =
            ffi::PyObject_Malloc(std::mem::size_of::<BodyIteratorObject>()).cast::<ffi::PyObject>();
        if object.is_null() {
            return Err(PyErr::fetch(py));
        }
        ffi::PyObject_Init(object, kind.as_ptr().cast::<ffi::PyTypeObject>());
        let iterator = object.cast::<BodyIteratorObject>();
        ffi::Py_INCREF(batch.as_ptr());
        (*iterator).batch = batch.as_ptr();
        (*iterator).bodies = bodies;
        (*iterator).next = 0;
        Ok(Bound::from_owned_ptr(py, object))
    }
}
