//! Module-level helpers exposing format primitives (useful for tests and tools).

use pyo3::prelude::*;

#[pyfunction]
pub fn java_string_hash(text: &str) -> i32 {
    rmqcore::java_hash::java_string_hash(text)
}

#[pyfunction]
pub fn body_crc(body: &[u8]) -> i32 {
    rmqcore::body_crc::body_crc(body)
}
