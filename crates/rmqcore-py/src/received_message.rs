//! `rmq._rmqcore.ReceivedMessage`: a message a consumer pulled, read from the Pull
//! response's bytes, and `decode_pull_response`, which makes them.
//!
//! A consumer receives hundreds of thousands of messages a second. Through the generated
//! classes each cost a protobuf object, a wrapper, and both tracked by Python's cycle
//! collector, whose passes over a consumer's buffers measured a quarter of its time. Here
//! a message is one untracked object (it holds only the response's bytes, which cannot be
//! in a cycle) with its scalar fields decoded and the places of its strings and body;
//! Python objects for those are made when asked for. Keys and properties are found again
//! in the message's bytes when asked for.
//!
//! The consumer hands over its pull's answer as the transport received it
//! (`decode_pull_response(pending_call)`): the messages share those bytes, where copying
//! them into a Python `bytes` first cost a buffer of a few MiB per pull, its pages faulted
//! in, and a copy of every body.

use std::ops::Range;

use bytes::Bytes;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString, PyTuple};

use rmqproto::fields::pull_response::MESSAGES as PULL_RESPONSE_MESSAGES;
use rmqproto::fields::stored_message as stored;
use rmqproto::wire::{WireReader, WireValue};

use rmqproto::fields::pull_response as response;
use rmqproto::stored_view::{put_property, StoredView};

use crate::transport::PyPendingCall;

/// A consumer makes and drops these by the hundred thousand a second. Every object of a
/// class with the GC flag (all PyO3 classes have it) counts toward the cycle collector's
/// next pass, untracked or not: a 50,000-message read counted some 70 young passes and
/// brought on a full one, 7-28 ms over the whole heap, in most rounds of `bench grpc`
/// (its produce had just promoted 50,000 key lists). Objects reused from the free list do
/// not count: the same read now runs 0-8 young passes and no full one. It keeps up to
/// 16,384 freed objects (240 bytes each, their answers released): what a consumer holds
/// at once, two pulls of 1,024 per queue of 8 and a poll's 4,096 handed out.
#[pyclass(
    frozen,
    freelist = 16384,
    module = "rmq._rmqcore",
    name = "ReceivedMessage"
)]
pub struct PyReceivedMessage {
    /// The bytes the message was read from (a whole Pull response, shared).
    raw: Bytes,
    /// Where this `StoredMessage` lies in `raw`.
    message: Range<usize>,
    topic: Range<usize>,
    body: Range<usize>,
    tags: Option<Range<usize>>,
    born_host: Range<usize>,
    store_host: Range<usize>,
    msg_id: Range<usize>,
    queue_id: i32,
    queue_offset: i64,
    commitlog_offset: i64,
    store_size: i32,
    born_timestamp: i64,
    store_timestamp: i64,
    flag: i32,
    sys_flag: i32,
    reconsume_times: i32,
}

fn malformed() -> PyErr {
    PyValueError::new_err("malformed rmq.v1.StoredMessage")
}

/// Where `part` (a slice of `whole`) lies in `whole`.
fn span(whole: &[u8], part: &[u8]) -> Range<usize> {
    let start = part.as_ptr() as usize - whole.as_ptr() as usize;
    start..start + part.len()
}

/// protobuf's int64 is a two's complement varint.
fn int64(value: u64) -> i64 {
    value as i64
}

impl PyReceivedMessage {
    /// Decode the `StoredMessage` at `message` in `raw`.
    fn decode(raw: &Bytes, message: Range<usize>) -> PyResult<Self> {
        let whole = raw.as_ref();
        let view =
            StoredView::parse(&whole[message.clone()], |_| Ok(())).map_err(|_| malformed())?;
        // A field the message leaves out is an empty slice from elsewhere, not in `whole`.
        let start = message.start;
        let at = |part: &[u8]| match part.is_empty() {
            true => start..start,
            false => span(whole, part),
        };
        Ok(PyReceivedMessage {
            raw: raw.clone(),
            message,
            topic: at(view.topic),
            body: at(view.body),
            tags: view.tags.map(at),
            born_host: at(view.born_host),
            store_host: at(view.store_host),
            msg_id: at(view.msg_id),
            queue_id: view.queue_id,
            queue_offset: view.queue_offset,
            commitlog_offset: view.commitlog_offset,
            store_size: view.store_size,
            born_timestamp: view.born_timestamp,
            store_timestamp: view.store_timestamp,
            flag: view.flag,
            sys_flag: view.sys_flag,
            reconsume_times: view.reconsume_times,
        })
    }

    fn create(py: Python<'_>, decoded: Self) -> PyResult<Py<Self>> {
        let message = Py::new(py, decoded)?;
        // SAFETY: a live object of a type with the GC flag; untracking keeps it out of
        // the collector's lists only (see the module comment), and PyO3's deallocator
        // untracks again, which is allowed.
        unsafe { pyo3::ffi::PyObject_GC_UnTrack(message.as_ptr().cast()) };
        Ok(message)
    }

    fn bytes(&self, at: &Range<usize>) -> &[u8] {
        &self.raw[at.clone()]
    }

    fn text<'py>(&self, py: Python<'py>, at: &Range<usize>) -> PyResult<Bound<'py, PyString>> {
        let text = std::str::from_utf8(self.bytes(at))
            .map_err(|_| PyValueError::new_err("a StoredMessage string is not UTF-8"))?;
        Ok(PyString::new(py, text))
    }

    /// The length-delimited values of `field` in this message, in order.
    fn repeated(&self, field: u32) -> PyResult<Vec<&[u8]>> {
        let mut reader = WireReader::new(self.bytes(&self.message));
        let mut found = Vec::new();
        while let Some((number, value)) = reader.next_field().ok_or_else(malformed)? {
            if let (true, WireValue::Bytes(bytes)) = (number == field, value) {
                found.push(bytes);
            }
        }
        Ok(found)
    }

    fn keys_vec(&self) -> PyResult<Vec<String>> {
        self.repeated(stored::KEYS)?
            .into_iter()
            .map(|key| {
                String::from_utf8(key.to_vec())
                    .map_err(|_| PyValueError::new_err("a key is not UTF-8"))
            })
            .collect()
    }

    /// Map entries in order; a later entry for the same name wins, as in protobuf.
    fn properties_vec(&self) -> PyResult<Vec<(String, String)>> {
        let mut entries = Vec::new();
        for entry in self.repeated(stored::PROPERTIES)? {
            put_property(&mut entries, entry).map_err(|_| malformed())?;
        }
        let text = |bytes: &[u8]| {
            String::from_utf8(bytes.to_vec())
                .map_err(|_| PyValueError::new_err("a property is not UTF-8"))
        };
        entries
            .into_iter()
            .map(|(name, value)| Ok((text(name)?, text(value)?)))
            .collect()
    }

    fn same_fields(&self, other: &Self) -> PyResult<bool> {
        let scalars = |m: &Self| {
            (
                m.queue_id,
                m.queue_offset,
                m.commitlog_offset,
                m.store_size,
                m.born_timestamp,
                m.store_timestamp,
                m.flag,
                m.sys_flag,
                m.reconsume_times,
            )
        };
        let texts = |m: &Self| -> Vec<Option<Vec<u8>>> {
            [&m.topic, &m.body, &m.born_host, &m.store_host, &m.msg_id]
                .into_iter()
                .map(|at| Some(m.bytes(at).to_vec()))
                .chain([m.tags.as_ref().map(|at| m.bytes(at).to_vec())])
                .collect()
        };
        let sorted = |mut entries: Vec<(String, String)>| {
            entries.sort();
            entries
        };
        Ok(scalars(self) == scalars(other)
            && texts(self) == texts(other)
            && self.keys_vec()? == other.keys_vec()?
            && sorted(self.properties_vec()?) == sorted(other.properties_vec()?))
    }
}

#[pymethods]
impl PyReceivedMessage {
    /// The message a generated `rmq.v1.StoredMessage` holds (lookups answer with those).
    #[staticmethod]
    fn from_proto(py: Python<'_>, message: &Bound<'_, PyAny>) -> PyResult<Py<Self>> {
        let raw = message
            .call_method0("SerializeToString")?
            .cast_into::<PyBytes>()
            .map_err(PyErr::from)?;
        let raw = Bytes::copy_from_slice(raw.as_bytes());
        let length = raw.len();
        Self::create(py, Self::decode(&raw, 0..length)?)
    }

    #[getter]
    fn topic<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyString>> {
        self.text(py, &self.topic)
    }
    #[getter]
    fn queue_id(&self) -> i32 {
        self.queue_id
    }
    #[getter]
    fn queue_offset(&self) -> i64 {
        self.queue_offset
    }
    #[getter]
    fn commitlog_offset(&self) -> i64 {
        self.commitlog_offset
    }
    #[getter]
    fn store_size(&self) -> i32 {
        self.store_size
    }
    #[getter]
    fn body<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.bytes(&self.body))
    }
    #[getter]
    fn tags<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyString>>> {
        self.tags.as_ref().map(|at| self.text(py, at)).transpose()
    }
    #[getter]
    fn keys<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.keys_vec()?)
    }
    #[getter]
    fn properties<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        for (name, value) in self.properties_vec()? {
            dict.set_item(name, value)?;
        }
        Ok(dict)
    }
    #[getter]
    fn born_timestamp(&self) -> i64 {
        self.born_timestamp
    }
    #[getter]
    fn store_timestamp(&self) -> i64 {
        self.store_timestamp
    }
    #[getter]
    fn born_host<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyString>> {
        self.text(py, &self.born_host)
    }
    #[getter]
    fn store_host<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyString>> {
        self.text(py, &self.store_host)
    }
    #[getter]
    fn msg_id<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyString>> {
        self.text(py, &self.msg_id)
    }
    #[getter]
    fn flag(&self) -> i32 {
        self.flag
    }
    #[getter]
    fn sys_flag(&self) -> i32 {
        self.sys_flag
    }
    #[getter]
    fn reconsume_times(&self) -> i32 {
        self.reconsume_times
    }

    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match other.cast::<PyReceivedMessage>() {
            Ok(other) => Ok(self
                .same_fields(other.get())?
                .into_pyobject(py)?
                .to_owned()
                .into_any()
                .unbind()),
            Err(_) => Ok(py.NotImplemented()),
        }
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "ReceivedMessage(topic={}, queue_id={}, queue_offset={}, msg_id={}, tags={}, \
             keys={}, body=<{} bytes>)",
            self.topic(py)?.repr()?,
            self.queue_id,
            self.queue_offset,
            self.msg_id(py)?.repr()?,
            match self.tags(py)? {
                Some(tags) => tags.repr()?.to_string(),
                None => "None".to_owned(),
            },
            self.keys(py)?.repr()?,
            self.body.len(),
        ))
    }
}

/// An encoded `rmq.v1.PullResponse`: a pull's answer as the transport received it, or
/// bytes.
#[derive(FromPyObject)]
pub enum PullAnswer<'py> {
    Call(PyRef<'py, PyPendingCall>),
    Bytes(Bound<'py, PyBytes>),
}

/// The messages of an encoded `rmq.v1.PullResponse` and its `next_offset`,
/// `min_offset` and `max_offset`. A failed call raises as its `result()` does.
///
/// The answer is read without the GIL (the consumer's thread goes on handing out
/// messages meanwhile); only the objects are made with it.
#[pyfunction]
pub fn decode_pull_response(
    py: Python<'_>,
    raw: PullAnswer<'_>,
) -> PyResult<(Vec<Py<PyReceivedMessage>>, i64, i64, i64)> {
    let raw = match raw {
        PullAnswer::Call(call) => call.answer(py)?,
        PullAnswer::Bytes(bytes) => Bytes::copy_from_slice(bytes.as_bytes()),
    };
    let (decoded, next, min, max) = py.detach(|| read_pull_response(&raw))?;
    let messages = decoded
        .into_iter()
        .map(|message| PyReceivedMessage::create(py, message))
        .collect::<PyResult<_>>()?;
    Ok((messages, next, min, max))
}

/// The messages of a `PullResponse` and its `next_offset`, `min_offset`, `max_offset`.
fn read_pull_response(raw: &Bytes) -> PyResult<(Vec<PyReceivedMessage>, i64, i64, i64)> {
    let whole = raw.as_ref();
    let mut messages = Vec::new();
    let (mut next, mut min, mut max) = (0, 0, 0);
    let mut reader = WireReader::new(whole);
    let malformed_response = || PyValueError::new_err("malformed rmq.v1.PullResponse");
    while let Some((field, value)) = reader.next_field().ok_or_else(malformed_response)? {
        match (field, value) {
            (PULL_RESPONSE_MESSAGES, WireValue::Bytes(message)) => {
                messages.push(PyReceivedMessage::decode(raw, span(whole, message))?);
            }
            (response::NEXT_OFFSET, WireValue::Varint(value)) => next = int64(value),
            (response::MIN_OFFSET, WireValue::Varint(value)) => min = int64(value),
            (response::MAX_OFFSET, WireValue::Varint(value)) => max = int64(value),
            _ => {}
        }
    }
    Ok((messages, next, min, max))
}
