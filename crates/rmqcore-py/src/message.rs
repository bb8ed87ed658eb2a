//! `rmq.Message` and `rmq.PutResult`.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};
use rmqcore::{PutResult, StoredMessage};

use crate::errors::invalid;

#[pyclass(name = "Message", module = "rmq._rmqcore", frozen, freelist = 4096)]
pub struct PyMessage {
    #[pyo3(get)]
    pub topic: String,
    #[pyo3(get)]
    pub queue_id: i32,
    #[pyo3(get)]
    pub queue_offset: i64,
    #[pyo3(get)]
    pub commitlog_offset: i64,
    #[pyo3(get)]
    pub store_size: i32,
    pub body: Py<PyBytes>,
    #[pyo3(get)]
    pub tags: Option<String>,
    pub keys: Vec<String>,
    pub properties: Vec<(String, String)>,
    #[pyo3(get)]
    pub born_timestamp: i64,
    #[pyo3(get)]
    pub store_timestamp: i64,
    #[pyo3(get)]
    pub born_host: String,
    #[pyo3(get)]
    pub store_host: String,
    #[pyo3(get)]
    pub msg_id: String,
    #[pyo3(get)]
    pub flag: i32,
    #[pyo3(get)]
    pub sys_flag: i32,
    #[pyo3(get)]
    pub reconsume_times: i32,
}

/// `keys` as Python passes it: a sequence of keys, or one string of space-separated keys.
pub fn extract_keys(py: Python<'_>, keys: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<String>> {
    let Some(keys) = keys.filter(|keys| !keys.is_none()) else {
        return Ok(Vec::new());
    };
    let not_strings = || invalid(py, "keys", "must be a string or a sequence of strings");
    // Type checks first: a failed `extract` builds an exception, which costs more than
    // the rest of constructing a message.
    if let Ok(text) = keys.cast::<PyString>() {
        return Ok(text
            .to_str()?
            .split(' ')
            .filter(|key| !key.is_empty())
            .map(str::to_owned)
            .collect());
    }
    if let Ok(list) = keys.cast::<PyList>() {
        return list
            .iter()
            .map(|key| key.extract::<String>().map_err(|_| not_strings()))
            .collect();
    }
    keys.extract::<Vec<String>>().map_err(|_| not_strings())
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
        Ok(PyMessage {
            topic: String::new(),
            queue_id: -1,
            queue_offset: -1,
            commitlog_offset: -1,
            store_size: 0,
            body: body.unbind(),
            tags,
            keys: extract_keys(py, keys)?,
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
        })
    }

    #[getter]
    fn body(&self, py: Python<'_>) -> Py<PyBytes> {
        self.body.clone_ref(py)
    }

    #[getter]
    fn keys<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, &self.keys)
    }

    #[getter]
    fn properties<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        for (name, value) in &self.properties {
            dict.set_item(name, value)?;
        }
        Ok(dict)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "Message(topic={:?}, queue_id={}, queue_offset={}, commitlog_offset={}, tags={:?}, keys={:?}, body=<{} bytes>)",
            self.topic,
            self.queue_id,
            self.queue_offset,
            self.commitlog_offset,
            self.tags,
            self.keys,
            self.body.bind(py).as_bytes().len()
        )
    }
}

impl PyMessage {
    pub fn from_stored(py: Python<'_>, message: StoredMessage) -> Self {
        PyMessage {
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
        }
    }
}

#[pyclass(name = "PutResult", module = "rmq._rmqcore", frozen, freelist = 4096)]
pub struct PyPutResult {
    result: PutResult,
}

impl From<PutResult> for PyPutResult {
    fn from(result: PutResult) -> Self {
        PyPutResult { result }
    }
}

#[pymethods]
impl PyPutResult {
    #[getter]
    fn msg_id(&self) -> String {
        self.result.msg_id()
    }

    #[getter]
    fn commitlog_offset(&self) -> i64 {
        self.result.commitlog_offset
    }

    #[getter]
    fn queue_offset(&self) -> i64 {
        self.result.queue_offset
    }

    #[getter]
    fn store_timestamp(&self) -> i64 {
        self.result.store_timestamp
    }

    #[getter]
    fn store_size(&self) -> i32 {
        self.result.store_size
    }

    fn __repr__(&self) -> String {
        format!(
            "PutResult(msg_id={:?}, commitlog_offset={}, queue_offset={}, store_timestamp={})",
            self.result.msg_id(),
            self.result.commitlog_offset,
            self.result.queue_offset,
            self.result.store_timestamp
        )
    }
}
