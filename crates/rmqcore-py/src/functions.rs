//! Module-level helpers exposing format primitives (useful for tests and tools).

use pyo3::prelude::*;

#[pyfunction]
pub fn java_string_hash(text: &str) -> i32 {
    rmqcore::java_hash::java_string_hash(text)
}

#[pyfunction]
pub fn body_crc(body: &[u8]) -> i32 {
    rmqcore::record::body_crc::body_crc(body)
}

/// The engine's topic-name rules, so that the broker checks names in one place.
#[pyfunction]
pub fn validate_topic(py: Python<'_>, topic: &str) -> PyResult<()> {
    rmqcore::topic::validate_topic(topic).map_err(|error| crate::errors::to_py_err(py, error))
}

/// The engine's consumer-group-name rules.
#[pyfunction]
pub fn validate_group(py: Python<'_>, group: &str) -> PyResult<()> {
    rmqcore::topic::validate_group(group).map_err(|error| crate::errors::to_py_err(py, error))
}
