//! How Python calls `Store.put`: a C method that matches keyword names by pointer.
//!
//! pyo3's generated method finds each keyword argument by comparing its name with every
//! parameter's as strings, about 640 instructions of a 100 B put with three keywords
//! (callgrind). Python interns the keyword names written at a call site, so comparing the
//! name objects with the interned parameter names finds them with no string compare. This
//! method replaces the generated one on the type (same name, same text signature) and
//! hands every call it does not recognise (other positional counts, a name it does not
//! know by pointer, a value of a type the parameter refuses) to the generated method,
//! which parses it again and raises pyo3's own errors: the Python API and its errors
//! stay exactly the generated method's.

use std::ffi::CString;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use pyo3::exceptions::PyRuntimeError;
use pyo3::ffi;
use pyo3::panic::PanicException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString, PyTuple};

use super::PyStore;

/// `put`'s keyword-only parameters, in its signature's order.
const KEYWORDS: [&std::ffi::CStr; 7] = [
    c"queue_id",
    c"tags",
    c"keys",
    c"properties",
    c"flag",
    c"born_timestamp",
    c"born_host",
];

/// What the fast method needs from the module's set-up: the interned keyword names and
/// the generated method to hand other calls to.
struct PutCall {
    keywords: [Py<PyString>; 7],
    generated: Py<PyAny>,
}

static PUT_CALL: OnceLock<PutCall> = OnceLock::new();

/// Replace `Store.put` with the fast method (once `PyStore` is on the module).
pub(crate) fn install(py: Python<'_>) -> PyResult<()> {
    let store_type = py.get_type::<PyStore>();
    let generated = store_type.getattr("put")?;
    let keywords = KEYWORDS.map(|name| {
        // SAFETY: `name` is a NUL-terminated string; the result is a new reference.
        let interned = unsafe { ffi::PyUnicode_InternFromString(name.as_ptr()) };
        // SAFETY: a new reference (or null with an error set, which `from_owned_ptr_or_err`
        // returns).
        unsafe { Bound::from_owned_ptr_or_err(py, interned) }
            .and_then(|object| Ok(object.cast_into::<PyString>()?.unbind()))
    });
    let keywords = match keywords {
        [Ok(a), Ok(b), Ok(c), Ok(d), Ok(e), Ok(f), Ok(g)] => [a, b, c, d, e, f, g],
        _ => {
            return Err(PyRuntimeError::new_err(
                "could not intern put's keyword names",
            ))
        }
    };
    // Its text signature (which `inspect.signature` and the stub check read) and its
    // docstring, in the form CPython parses `__text_signature__` from.
    let signature: String = generated.getattr("__text_signature__")?.extract()?;
    let doc: Option<String> = generated.getattr("__doc__")?.extract()?;
    let doc = CString::new(format!("put{signature}\n--\n\n{}", doc.unwrap_or_default()))
        .map_err(|_| PyRuntimeError::new_err("put's docstring holds a NUL"))?;
    let _ = PUT_CALL.set(PutCall {
        keywords,
        generated: generated.unbind(),
    });
    // The method's definition lives as long as the type that points at it: for ever.
    let definition = Box::leak(Box::new(ffi::PyMethodDef {
        ml_name: c"put".as_ptr(),
        ml_meth: ffi::PyMethodDefPointer {
            PyCFunctionFastWithKeywords: put,
        },
        ml_flags: ffi::METH_FASTCALL | ffi::METH_KEYWORDS,
        ml_doc: doc.into_raw().cast_const(),
    }));
    // SAFETY: `store_type` is a type object and `definition` outlives it.
    let descriptor = unsafe { ffi::PyDescr_NewMethod(store_type.as_type_ptr(), definition) };
    // SAFETY: a new reference, or null with an error set.
    let descriptor = unsafe { Bound::from_owned_ptr_or_err(py, descriptor) }?;
    store_type.setattr("put", descriptor)
}

/// The C method: `put(self, *args[:nargs], **dict(zip(kwnames, args[nargs:])))`.
unsafe extern "C" fn put(
    slf: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls a method with the GIL held.
    let py = unsafe { Python::assume_attached() };
    let called = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: the METH_FASTCALL | METH_KEYWORDS calling convention's arguments.
        unsafe { call(py, slf, args, nargs, kwnames) }
    }));
    let result = match called {
        Ok(result) => result,
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|text| text.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panic in Store.put".to_string());
            Err(PanicException::new_err(message))
        }
    };
    match result {
        Ok(object) => object.into_ptr(),
        Err(error) => {
            error.restore(py);
            std::ptr::null_mut()
        }
    }
}

/// # Safety
/// `slf`, `args`, `nargs` and `kwnames` as CPython passes them to a METH_FASTCALL |
/// METH_KEYWORDS method, with the GIL held.
unsafe fn call<'py>(
    py: Python<'py>,
    slf: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> PyResult<Bound<'py, PyAny>> {
    let Some(put_call) = PUT_CALL.get() else {
        return Err(PyRuntimeError::new_err(
            "Store.put called before it was installed",
        ));
    };
    // SAFETY: `slf` is the object the method was called on, borrowed for the call.
    let slf = unsafe { Bound::from_borrowed_ptr(py, slf) };
    let names: Option<Bound<'py, PyTuple>> = (!kwnames.is_null()).then(|| {
        // SAFETY: `kwnames` is a tuple of strings, borrowed for the call.
        unsafe { Bound::from_borrowed_ptr(py, kwnames).cast_into_unchecked::<PyTuple>() }
    });
    let positional_count = usize::try_from(nargs).unwrap_or(0);
    let total = positional_count + names.as_ref().map_or(0, |names| names.len());
    let values: &[*mut ffi::PyObject] = if total == 0 {
        &[]
    } else {
        // SAFETY: `args` holds the positional then the keyword values, `total` in all,
        // each borrowed for the call.
        unsafe { std::slice::from_raw_parts(args, total) }
    };
    if let Some(result) = fast(py, put_call, &slf, positional_count, values, names.as_ref()) {
        return result;
    }
    // Anything else is the generated method's to parse (and refuse).
    // SAFETY: each value is borrowed for the call.
    let value = |pointer: &*mut ffi::PyObject| unsafe { Bound::from_borrowed_ptr(py, *pointer) };
    let positional: Vec<Bound<'py, PyAny>> = std::iter::once(slf)
        .chain(values[..positional_count].iter().map(value))
        .collect();
    let positional = PyTuple::new(py, positional)?;
    let keywords = match &names {
        None => None,
        Some(names) => {
            let dict = PyDict::new(py);
            for (name, pointer) in names.iter().zip(&values[positional_count..]) {
                dict.set_item(name, value(pointer))?;
            }
            Some(dict)
        }
    };
    put_call
        .generated
        .bind(py)
        .call(positional, keywords.as_ref())
}

/// The call as Python code writes it (`put(topic, body, queue_id=..., tags=..., ...)`):
/// its result, or None when the generated method must parse it.
fn fast<'py>(
    py: Python<'py>,
    put_call: &PutCall,
    slf: &Bound<'py, PyAny>,
    positional_count: usize,
    values: &[*mut ffi::PyObject],
    names: Option<&Bound<'py, PyTuple>>,
) -> Option<PyResult<Bound<'py, PyAny>>> {
    if positional_count != 2 {
        return None;
    }
    let mut keyword_values: [*mut ffi::PyObject; 7] = [std::ptr::null_mut(); 7];
    if let Some(names) = names {
        for (index, &value) in values[2..].iter().enumerate() {
            // SAFETY: `index` is below the tuple's length; the name is borrowed from it.
            let name = unsafe { ffi::PyTuple_GetItem(names.as_ptr(), index as ffi::Py_ssize_t) };
            let slot = put_call
                .keywords
                .iter()
                .position(|keyword| keyword.as_ptr() == name)?;
            if !keyword_values[slot].is_null() {
                return None;
            }
            keyword_values[slot] = value;
        }
    }
    // SAFETY: every non-null pointer is an argument, borrowed for the call.
    let bound = |pointer: *mut ffi::PyObject| {
        (!pointer.is_null()).then(|| unsafe { Borrowed::from_ptr(py, pointer) })
    };
    let [queue_id, tags, keys, properties, flag, born_timestamp, born_host] =
        keyword_values.map(bound);
    let (topic, body) = (bound(values[0])?, bound(values[1])?);
    let store = slf.cast::<PyStore>().ok()?.get();
    let topic: &str = topic.extract().ok()?;
    let body = body.cast::<PyBytes>().ok()?;
    let queue_id: i64 = queue_id.map_or(Some(0), |value| value.extract().ok())?;
    let tags: Option<&str> = optional(tags.as_deref())?;
    let keys = keys.as_deref().filter(|value| !value.is_none());
    let properties = properties.as_deref().filter(|value| !value.is_none());
    let flag: i64 = flag.map_or(Some(0), |value| value.extract().ok())?;
    let born_timestamp: Option<i64> = optional(born_timestamp.as_deref())?;
    let born_host: Option<&str> = optional(born_host.as_deref())?;
    let result = store.put_message(
        py,
        topic,
        &body,
        queue_id,
        tags,
        keys,
        properties,
        flag,
        born_timestamp,
        born_host,
    );
    Some(result.and_then(|result| Ok(Bound::new(py, result)?.into_any())))
}

/// An `Option<T>` parameter's value: None when absent or None, None of None when the
/// generated method must refuse it.
fn optional<'a, 'py, T: FromPyObject<'a, 'py>>(
    value: Option<&'a Bound<'py, PyAny>>,
) -> Option<Option<T>> {
    match value {
        None => Some(None),
        Some(value) if value.is_none() => Some(None),
        Some(value) => value.extract().ok().map(Some),
    }
}
