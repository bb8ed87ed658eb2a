//! A message's `keys` and `properties` as the producer takes them from Python (any
//! sequence of strings, any mapping of strings), converted for
//! `rmqnet::client::encode::put_message`.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

/// The strings of a sequence; a lone string is refused (it is a sequence of characters).
pub fn strings<'py>(
    argument: &str,
    value: &Bound<'py, PyAny>,
) -> PyResult<Vec<Bound<'py, PyString>>> {
    if value.is_instance_of::<PyString>() {
        // A string is a sequence of one-character strings: never what was meant.
        return Err(PyTypeError::new_err(format!(
            "{argument} must be a sequence of strings, not a string"
        )));
    }
    value
        .try_iter()?
        .map(|item| {
            item?
                .cast_into::<PyString>()
                .map_err(|_| PyTypeError::new_err(format!("{argument} must be strings")))
        })
        .collect()
}

/// The `(name, value)` pairs of a `properties` mapping.
pub fn property_entries(properties: &Bound<'_, PyAny>) -> PyResult<Vec<(String, String)>> {
    let items = match properties.cast::<PyDict>() {
        Ok(dict) => dict.items().into_any(),
        Err(_) => properties.call_method0("items")?,
    };
    items
        .try_iter()?
        .map(|item| {
            item?
                .extract()
                .map_err(|_| PyTypeError::new_err("properties must map strings to strings"))
        })
        .collect()
}
