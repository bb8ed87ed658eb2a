//! What `BodyView` and the `BodyBatch` iterator share: a C-API heap type whose instances
//! keep their `BodyBatch` alive with one strong reference and nothing else (so they are
//! never part of a cycle and need no garbage collector), made with `PyType_FromSpec`
//! because a scan makes one per body and a `#[pyclass]` instance costs several times more
//! to create and collect (see `body_view.rs`).

use std::ffi::{c_int, c_void, CStr};

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyType;

/// The first fields of every such object: the header and the batch it keeps alive. An
/// object's struct starts with this (`#[repr(C)]`), so `dealloc` can release any of them.
#[repr(C)]
pub struct BatchChild {
    header: ffi::PyObject,
    /// A strong reference to the `BodyBatch`.
    pub batch: *mut ffi::PyObject,
}

/// The `tp_dealloc` of every such type: releases the batch, the memory and the type.
unsafe extern "C" fn dealloc(object: *mut ffi::PyObject) {
    // SAFETY: CPython calls this with an object of a type made by `make_type`, whose
    // layout starts with `BatchChild`, when its count reached zero.
    unsafe {
        let kind = ffi::Py_TYPE(object);
        ffi::Py_DECREF((*object.cast::<BatchChild>()).batch);
        ffi::PyObject_Free(object.cast::<c_void>());
        // Instances of a heap type hold a reference to it.
        ffi::Py_DECREF(kind.cast::<ffi::PyObject>());
    }
}

/// A heap type named `name` for objects laid out as `T` (which starts with `BatchChild`),
/// with `slots` (without `tp_dealloc` or the terminating empty slot: both are added) and
/// no way to make one from Python.
pub fn make_type<T>(
    py: Python<'_>,
    name: &'static CStr,
    slots: &[ffi::PyType_Slot],
) -> PyResult<Py<PyType>> {
    let mut all: Vec<ffi::PyType_Slot> = Vec::with_capacity(slots.len() + 2);
    all.push(ffi::PyType_Slot {
        slot: ffi::Py_tp_dealloc,
        pfunc: dealloc as *mut c_void,
    });
    all.extend(slots.iter().map(|slot| ffi::PyType_Slot {
        slot: slot.slot,
        pfunc: slot.pfunc,
    }));
    all.push(ffi::PyType_Slot::default());
    let mut spec = ffi::PyType_Spec {
        // Static: a heap type keeps pointing at its spec's name.
        name: name.as_ptr(),
        basicsize: std::mem::size_of::<T>() as c_int,
        itemsize: 0,
        flags: (ffi::Py_TPFLAGS_DEFAULT | ffi::Py_TPFLAGS_DISALLOW_INSTANTIATION) as _,
        slots: all.as_mut_ptr(),
    };
    // SAFETY: the spec and its slots are valid for the call, which copies the slots.
    let kind = unsafe { ffi::PyType_FromSpec(&mut spec) };
    // SAFETY: a new reference, or null with the error set.
    let kind = unsafe { Bound::from_owned_ptr_or_err(py, kind)? };
    Ok(kind.cast_into::<PyType>()?.unbind())
}

/// A new instance of `kind` (made by `make_type::<T>`) holding a new strong reference to
/// `batch`, and `fill` called on it to set the fields after `BatchChild`.
///
/// # Safety
/// `kind` was made by `make_type::<T>`, and `fill` sets every field of `T` after the
/// `BatchChild` before the object is used.
pub unsafe fn new_child<'py, T>(
    kind: &Py<PyType>,
    batch: &Bound<'py, PyAny>,
    fill: impl FnOnce(*mut T),
) -> PyResult<Bound<'py, PyAny>> {
    let py = batch.py();
    // SAFETY: memory for one `T`, initialised as an instance of the type (which
    // `PyObject_Init` counts a reference to) before any field is read; the batch reference
    // is a new strong one, released by `dealloc`; the caller's `fill` sets the rest.
    unsafe {
        let object = ffi::PyObject_Malloc(std::mem::size_of::<T>()).cast::<ffi::PyObject>();
        if object.is_null() {
            return Err(PyErr::fetch(py));
        }
        ffi::PyObject_Init(object, kind.as_ptr().cast::<ffi::PyTypeObject>());
        ffi::Py_INCREF(batch.as_ptr());
        (*object.cast::<BatchChild>()).batch = batch.as_ptr();
        fill(object.cast::<T>());
        Ok(Bound::from_owned_ptr(py, object))
    }
}
