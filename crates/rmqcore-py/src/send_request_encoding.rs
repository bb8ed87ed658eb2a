//! The client side of `SendBatch`: a producer encodes each message into its batch's
//! `rmq.v1.SendRequest` bytes as it is sent (`put_message`), and the batch leaves as those
//! bytes, instead of building a protobuf object per message and serializing it again
//! (measured: 2.3 µs per 100-byte message to add one, 0.5 µs to serialize it).

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

use rmqproto::fields::{message, send_request as request};
use rmqproto::wire::{
    field_length, put_bytes_field, put_int_field, put_tag, put_varint, WIRE_LENGTH_DELIMITED,
};

use rmqproto::fields::map_entry::{KEY as MAP_KEY, VALUE as MAP_VALUE};

/// Put a length-delimited field even when it is empty: `tags` is optional (present when
/// set) and repeated strings keep their empty members.
fn put_present(out: &mut Vec<u8>, field: u32, value: &[u8]) {
    put_tag(out, field, WIRE_LENGTH_DELIMITED);
    put_varint(out, value.len() as u64);
    out.extend_from_slice(value);
}

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

/// Append one `messages` field (tag, length, message) to `out`.
pub fn put_message(
    out: &mut Vec<u8>,
    body: &[u8],
    tags: Option<&str>,
    keys: &[&str],
    properties: &[(String, String)],
) {
    let entry_length = |name: &str, value: &str| {
        field_length(MAP_KEY, name.len()) + field_length(MAP_VALUE, value.len())
    };
    let length = if body.is_empty() {
        0
    } else {
        field_length(message::BODY, body.len())
    } + tags.map_or(0, |tags| field_length(message::TAGS, tags.len()))
        + keys
            .iter()
            .map(|key| field_length(message::KEYS, key.len()))
            .sum::<usize>()
        + properties
            .iter()
            .map(|(name, value)| field_length(message::PROPERTIES, entry_length(name, value)))
            .sum::<usize>();
    out.reserve(field_length(request::MESSAGES, length));
    put_tag(out, request::MESSAGES, WIRE_LENGTH_DELIMITED);
    put_varint(out, length as u64);
    put_bytes_field(out, message::BODY, body);
    if let Some(tags) = tags {
        put_present(out, message::TAGS, tags.as_bytes());
    }
    for key in keys {
        put_present(out, message::KEYS, key.as_bytes());
    }
    for (name, value) in properties {
        put_tag(out, message::PROPERTIES, WIRE_LENGTH_DELIMITED);
        put_varint(out, entry_length(name, value) as u64);
        put_present(out, MAP_KEY, name.as_bytes());
        put_present(out, MAP_VALUE, value.as_bytes());
    }
}

/// A whole `rmq.v1.SendRequest`: its head, then `messages` as encoded by `put_message`.
pub fn encode_request<'py>(
    py: Python<'py>,
    topic: &str,
    queue_id: i32,
    messages: &[u8],
) -> PyResult<Bound<'py, PyBytes>> {
    let head = request_head(topic, queue_id);
    PyBytes::new_with(py, head.len() + messages.len(), |buffer| {
        buffer[..head.len()].copy_from_slice(&head);
        buffer[head.len()..].copy_from_slice(messages);
        Ok(())
    })
}

/// The fields of a `SendRequest` before its messages.
pub fn request_head(topic: &str, queue_id: i32) -> Vec<u8> {
    let mut head = Vec::with_capacity(field_length(request::TOPIC, topic.len()) + 11);
    put_bytes_field(&mut head, request::TOPIC, topic.as_bytes());
    put_int_field(&mut head, request::QUEUE_ID, i64::from(queue_id));
    head
}
