//! `rmq.Message`, and the conversions of its arguments shared with `Store.put`.

use std::borrow::Cow;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};
use rmqcore::record::message::MessageProperties;
use rmqcore::record::message_rules::may_hold_key_separator;
use rmqcore::record::msg_id::create_msg_id;
use rmqcore::record::RecordView;
use rmqcore::{DraftKeys, StoredMessage};

use crate::errors::invalid;
use crate::read_records::Record;

/// `rmq.Message`. One read from a queue keeps a copy of its record and decodes a field
/// only when it is asked for (measured: building every field of every message cost about
/// four times reading the queue); one built by hand, or returned by a lookup, keeps its
/// fields.
#[pyclass(name = "Message", module = "rmq._rmqcore", frozen, freelist = 4096)]
pub struct PyMessage {
    source: Source,
}

enum Source {
    Fields(Box<Fields>),
    Record(Record),
}

pub struct Fields {
    topic: String,
    queue_id: i32,
    queue_offset: i64,
    commitlog_offset: i64,
    store_size: i32,
    body: Py<PyBytes>,
    tags: Option<String>,
    keys: Vec<String>,
    properties: Vec<(String, String)>,
    born_timestamp: i64,
    store_timestamp: i64,
    born_host: String,
    store_host: String,
    msg_id: String,
    flag: i32,
    sys_flag: i32,
    reconsume_times: i32,
}

/// What `put_batch` takes from a message: owned fields, built for the batch's lifetime
/// (`DraftKeys`, a `SmallVec`, is invariant over it and cannot be shortened afterwards).
pub struct DraftParts<'a> {
    pub body: Py<PyBytes>,
    pub metadata: Metadata<'a>,
}

/// A message's fields besides its body, as `put_batch` stores them (`born_timestamp` 0:
/// the store's clock).
/// Tags and keys borrow the caller's Python strings where they can.
#[derive(Default)]
pub struct Metadata<'a> {
    pub tags: Option<Cow<'a, str>>,
    pub keys: DraftKeys<'a>,
    pub properties: Vec<(String, String)>,
    pub flag: i32,
    pub born_timestamp: i64,
}

/// `keys` as Python passes it: a sequence of keys, or one string of space-separated keys.
/// The keys of one string are borrowed from it; those of a sequence are copied.
pub fn extract_keys<'a>(
    py: Python<'_>,
    keys: Option<&'a Bound<'_, PyAny>>,
) -> PyResult<DraftKeys<'a>> {
    let Some(keys) = keys.filter(|keys| !keys.is_none()) else {
        return Ok(DraftKeys::new());
    };
    let not_strings = || invalid(py, "keys", "must be a string or a sequence of strings");
    // Type checks first: a failed `extract` builds an exception, which costs more than
    // the rest of constructing a message.
    if let Ok(text) = keys.cast::<PyString>() {
        return Ok(keys_of_text(text.to_str()?));
    }
    if let Ok(list) = keys.cast::<PyList>() {
        return list
            .iter()
            .map(|key| {
                key.extract::<String>()
                    .map(Cow::Owned)
                    .map_err(|_| not_strings())
            })
            .collect();
    }
    keys.extract::<Vec<String>>()
        .map(|keys| keys.into_iter().map(Cow::Owned).collect())
        .map_err(|_| not_strings())
}

/// The keys of one string of space-separated keys, borrowed from it.
pub fn keys_of_text(text: &str) -> DraftKeys<'_> {
    // One key, the common case: held inline, no allocation, no splitting iterator. The
    // space is looked for eight bytes a step: byte by byte, a 15-byte key cost about 60
    // more instructions (callgrind).
    if !text.is_empty() && !may_hold_key_separator(text) {
        return DraftKeys::from_buf([Cow::Borrowed(text)]);
    }
    text.split(' ')
        .filter(|key| !key.is_empty())
        .map(Cow::Borrowed)
        .collect()
}

pub fn extract_properties(
    py: Python<'_>,
    properties: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<(String, String)>> {
    let Some(properties) = properties.filter(|value| !value.is_none()) else {
        return Ok(Vec::new());
    };
    let items = properties
        .call_method0("items")
        .map_err(|_| invalid(py, "properties", "must be a mapping of str to str"))?;
    let mut out = Vec::new();
    for item in items.try_iter()? {
        let (name, value): (String, String) = item?
            .extract()
            .map_err(|_| invalid(py, "properties", "names and values must be strings"))?;
        out.push((name, value));
    }
    Ok(out)
}

pub fn checked_i32(py: Python<'_>, argument: &'static str, value: i64) -> PyResult<i32> {
    i32::try_from(value).map_err(|_| {
        invalid(
            py,
            argument,
            format!("{value} does not fit a 32-bit integer"),
        )
    })
}

#[pymethods]
impl PyMessage {
    #[new]
    #[pyo3(signature = (body, *, tags=None, keys=None, properties=None, flag=0, born_timestamp=None))]
    fn new(
        py: Python<'_>,
        body: Bound<'_, PyBytes>,
        tags: Option<String>,
        keys: Option<&Bound<'_, PyAny>>,
        properties: Option<&Bound<'_, PyAny>>,
        flag: i64,
        born_timestamp: Option<i64>,
    ) -> PyResult<Self> {
        Ok(PyMessage::fields(Fields {
            topic: String::new(),
            queue_id: -1,
            queue_offset: -1,
            commitlog_offset: -1,
            store_size: 0,
            body: body.unbind(),
            tags,
            keys: extract_keys(py, keys)?
                .into_iter()
                .map(Cow::into_owned)
                .collect(),
            properties: extract_properties(py, properties)?,
            // 0 stands for "not given": the store then uses the time of the put.
            born_timestamp: born_timestamp.unwrap_or(0),
            store_timestamp: 0,
            born_host: String::new(),
            store_host: String::new(),
            msg_id: String::new(),
            flag: checked_i32(py, "flag", flag)?,
            sys_flag: 0,
            reconsume_times: 0,
        }))
    }

    #[getter]
    fn topic(&self) -> String {
        match &self.source {
            Source::Fields(f) => f.topic.clone(),
            Source::Record(r) => r.view().topic_str().into_owned(),
        }
    }

    #[getter]
    fn queue_id(&self) -> i32 {
        self.scalar(|f| f.queue_id, |v| v.queue_id)
    }

    #[getter]
    fn queue_offset(&self) -> i64 {
        self.scalar(|f| f.queue_offset, |v| v.queue_offset)
    }

    #[getter]
    fn commitlog_offset(&self) -> i64 {
        self.scalar(|f| f.commitlog_offset, |v| v.physical_offset)
    }

    #[getter]
    fn store_size(&self) -> i32 {
        self.scalar(
            |f| f.store_size,
            |v| i32::try_from(v.total_size).unwrap_or(i32::MAX),
        )
    }

    #[getter]
    pub fn body(&self, py: Python<'_>) -> Py<PyBytes> {
        match &self.source {
            Source::Fields(f) => f.body.clone_ref(py),
            Source::Record(r) => r.body(py),
        }
    }

    #[getter]
    fn tags(&self) -> Option<String> {
        match &self.source {
            Source::Fields(f) => f.tags.clone(),
            Source::Record(r) => r.properties().tags,
        }
    }

    #[getter]
    fn keys<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        match &self.source {
            Source::Fields(f) => PyList::new(py, &f.keys),
            Source::Record(r) => PyList::new(py, r.properties().keys),
        }
    }

    #[getter]
    fn properties<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        let owned;
        let properties = match &self.source {
            Source::Fields(f) => &f.properties,
            Source::Record(r) => {
                owned = r.properties().properties;
                &owned
            }
        };
        for (name, value) in properties {
            dict.set_item(name, value)?;
        }
        Ok(dict)
    }

    #[getter]
    fn born_timestamp(&self) -> i64 {
        self.scalar(|f| f.born_timestamp, |v| v.born_timestamp)
    }

    #[getter]
    fn store_timestamp(&self) -> i64 {
        self.scalar(|f| f.store_timestamp, |v| v.store_timestamp)
    }

    #[getter]
    fn born_host(&self) -> String {
        match &self.source {
            Source::Fields(f) => f.born_host.clone(),
            Source::Record(r) => r.view().born_host.to_string(),
        }
    }

    #[getter]
    fn store_host(&self) -> String {
        match &self.source {
            Source::Fields(f) => f.store_host.clone(),
            Source::Record(r) => r.view().store_host.to_string(),
        }
    }

    #[getter]
    fn msg_id(&self) -> String {
        match &self.source {
            Source::Fields(f) => f.msg_id.clone(),
            Source::Record(r) => {
                let view = r.view();
                create_msg_id(&view.store_host, view.physical_offset)
            }
        }
    }

    #[getter]
    fn flag(&self) -> i32 {
        self.scalar(|f| f.flag, |v| v.flag)
    }

    #[getter]
    fn sys_flag(&self) -> i32 {
        self.scalar(|f| f.sys_flag, |v| v.sys_flag)
    }

    #[getter]
    fn reconsume_times(&self) -> i32 {
        self.scalar(|f| f.reconsume_times, |v| v.reconsume_times)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Message(topic={:?}, queue_id={}, queue_offset={}, commitlog_offset={}, tags={:?}, keys={:?}, body=<{} bytes>)",
            self.topic(),
            self.queue_id(),
            self.queue_offset(),
            self.commitlog_offset(),
            self.tags(),
            self.keys(py)?.extract::<Vec<String>>()?,
            self.body(py).bind(py).as_bytes().len()
        ))
    }
}

impl PyMessage {
    fn fields(fields: Fields) -> Self {
        PyMessage {
            source: Source::Fields(Box::new(fields)),
        }
    }

    /// A message read from a queue: `record` is a copy of its whole record.
    pub fn from_record(record: Record) -> Self {
        PyMessage {
            source: Source::Record(record),
        }
    }

    fn scalar<T>(&self, field: impl Fn(&Fields) -> T, view: impl Fn(&RecordView<'_>) -> T) -> T {
        match &self.source {
            Source::Fields(f) => field(f),
            Source::Record(r) => view(&r.view()),
        }
    }

    /// The parts of this message that `put_batch` stores.
    pub fn draft_parts<'a>(&self, py: Python<'_>) -> DraftParts<'a> {
        let properties = match &self.source {
            Source::Fields(f) => MessageProperties {
                tags: f.tags.clone(),
                keys: f.keys.clone(),
                properties: f.properties.clone(),
            },
            Source::Record(r) => r.properties(),
        };
        DraftParts {
            body: self.body(py),
            metadata: Metadata {
                tags: properties.tags.map(Cow::Owned),
                keys: properties.keys.into_iter().map(Cow::Owned).collect(),
                properties: properties.properties,
                flag: self.flag(),
                born_timestamp: self.born_timestamp(),
            },
        }
    }

    pub fn from_stored(py: Python<'_>, message: StoredMessage) -> Self {
        PyMessage::fields(Fields {
            topic: message.topic,
            queue_id: message.queue_id,
            queue_offset: message.queue_offset,
            commitlog_offset: message.commitlog_offset,
            store_size: message.store_size,
            body: PyBytes::new(py, &message.body).unbind(),
            tags: message.tags,
            keys: message.keys,
            properties: message.properties,
            born_timestamp: message.born_timestamp,
            store_timestamp: message.store_timestamp,
            born_host: message.born_host.to_string(),
            store_host: message.store_host.to_string(),
            msg_id: message.msg_id,
            flag: message.flag,
            sys_flag: message.sys_flag,
            reconsume_times: message.reconsume_times,
        })
    }
}
