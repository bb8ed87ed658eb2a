//! Writing to `rmq.Store`: one message (`put`), a batch for one queue (`put_batch`, of
//! `rmq.Message`s, or of bytes with their tags and keys as columns). Each builds the engine's
//! `MessageDraft`s while it holds the GIL (they borrow the Python bytes) and appends them
//! without it.

use std::borrow::Cow;
use std::net::SocketAddr;

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rmqcore::record::host::parse_host;
use rmqcore::MessageDraft;

use crate::errors::{to_py_err, without_gil};
use crate::message::{checked_i32, extract_keys, extract_properties};
use crate::put_result::{PyPutResult, PyPutResults};
use crate::store::columns::{batch_items, message_parts, Columns, MessageParts};

use super::PyStore;

/// `born_host=` as an address: given as `"host:port"`, refused with the engine's words.
fn parsed_born_host(py: Python<'_>, born_host: Option<&str>) -> PyResult<Option<SocketAddr>> {
    born_host
        .map(|host| parse_host("born_host", host))
        .transpose()
        .map_err(|error| to_py_err(py, error))
}

#[pymethods]
impl PyStore {
    // Python calls `put_fast_call::put`, which replaces this method on the type and hands
    // it only the calls it does not take itself (so their errors are pyo3's).
    #[pyo3(signature = (topic, body, *, queue_id = 0, tags = None, keys = None, properties = None, flag = 0, born_timestamp = None, born_host = None))]
    #[expect(
        clippy::too_many_arguments,
        reason = "mirrors the Python keyword arguments"
    )]
    fn put(
        &self,
        py: Python<'_>,
        topic: &str,
        body: Bound<'_, PyBytes>,
        queue_id: i64,
        tags: Option<&str>,
        keys: Option<&Bound<'_, PyAny>>,
        properties: Option<&Bound<'_, PyAny>>,
        flag: i64,
        born_timestamp: Option<i64>,
        born_host: Option<&str>,
    ) -> PyResult<PyPutResult> {
        self.put_message(
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
        )
    }

    #[pyo3(signature = (topic, queue_id, messages, *, tags = None, keys = None, born_host = None))]
    #[expect(
        clippy::too_many_arguments,
        reason = "mirrors the Python keyword arguments"
    )]
    fn put_batch(
        &self,
        py: Python<'_>,
        topic: &str,
        queue_id: i64,
        messages: &Bound<'_, PyAny>,
        tags: Option<&Bound<'_, PyAny>>,
        keys: Option<&Bound<'_, PyAny>>,
        born_host: Option<&str>,
    ) -> PyResult<PyPutResults> {
        let queue_id = checked_i32(py, "queue_id", queue_id)?;
        let born_host = parsed_born_host(py, born_host)?;
        let items = batch_items(py, messages)?;
        let columns = Columns::extract(py, items.len(), tags, keys)?;
        // One pass builds the drafts: a bytes body is borrowed from `items` (which holds
        // it while the GIL is released, whatever Python does to the list), a column's
        // strings from `columns`; only `rmq.Message`s are split up first, their fields
        // copied once, when they leave them. Collecting every body and every message's
        // fields into Vecs of their own first cost about 50 instructions a message of a
        // 100 B bodies-only batch (callgrind).
        let MessageParts { bodies, metadata } = message_parts(py, &items, &columns)?;
        let mut message_bodies = bodies.iter();
        let mut message_metadata = metadata.into_iter();
        let given = columns.given();
        let mut drafts: Vec<MessageDraft<'_>> = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            let (body, metadata) = match item.cast::<PyBytes>() {
                Ok(body) if !given => (body, None),
                Ok(body) => {
                    // The draft takes the columns' tag and keys directly: building a
                    // `Metadata` first and moving its fields over cost about 50
                    // instructions a message of a 100 B batch with tags and keys
                    // (callgrind).
                    drafts.push(MessageDraft {
                        body: body.as_bytes(),
                        tags: columns.tag(py, index)?,
                        keys: columns.keys(py, index)?,
                        born_host,
                        ..Default::default()
                    });
                    continue;
                }
                Err(_) => (
                    message_bodies.next().expect("one body per rmq.Message"),
                    message_metadata.next(),
                ),
            };
            drafts.push(match metadata {
                None => MessageDraft {
                    body: body.as_bytes(),
                    born_host,
                    ..Default::default()
                },
                Some(message) => MessageDraft {
                    body: body.as_bytes(),
                    tags: message.tags,
                    keys: message.keys,
                    properties: message.properties,
                    flag: message.flag,
                    born_timestamp: (message.born_timestamp != 0).then_some(message.born_timestamp),
                    born_host,
                },
            });
        }
        let store = &self.inner;
        let results = without_gil(py, || store.put_batch(topic, queue_id, &drafts))?;
        Ok(PyPutResults::from(results))
    }
}

impl PyStore {
    /// `put` once its arguments are extracted, whichever way they were parsed.
    #[expect(
        clippy::too_many_arguments,
        reason = "mirrors the Python keyword arguments"
    )]
    pub(super) fn put_message(
        &self,
        py: Python<'_>,
        topic: &str,
        body: &Bound<'_, PyBytes>,
        queue_id: i64,
        tags: Option<&str>,
        keys: Option<&Bound<'_, PyAny>>,
        properties: Option<&Bound<'_, PyAny>>,
        flag: i64,
        born_timestamp: Option<i64>,
        born_host: Option<&str>,
    ) -> PyResult<PyPutResult> {
        let queue_id = checked_i32(py, "queue_id", queue_id)?;
        let draft = MessageDraft {
            body: body.as_bytes(),
            tags: tags.map(Cow::Borrowed),
            keys: extract_keys(py, keys)?,
            properties: extract_properties(py, properties)?,
            flag: checked_i32(py, "flag", flag)?,
            born_timestamp,
            born_host: parsed_born_host(py, born_host)?,
        };
        let store = &self.inner;
        without_gil(py, || store.put(topic, queue_id, &draft)).map(PyPutResult::from)
    }
}
