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

/// The engine's rules for one message's tags, keys and user properties
/// (`rmqcore::record::message_rules`), so that the broker checks messages in one place.
#[pyfunction]
#[pyo3(signature = (tags, keys, properties))]
pub fn validate_message_fields(
    py: Python<'_>,
    tags: Option<&str>,
    keys: Vec<String>,
    properties: Vec<(String, String)>,
) -> PyResult<()> {
    rmqcore::record::message_rules::check_message_fields(
        tags,
        keys.iter().map(String::as_str),
        properties
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str())),
    )
    .map_err(|error| crate::errors::to_py_err(py, error))
}
