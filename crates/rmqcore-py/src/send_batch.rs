//! `rmq._rmqcore.SendBatch`: a shard's Send request decoded by `rmqnet::codec::send`
//! without a Python object per message, for the Python shard's fast path. `parse` returns
//! `None` for anything that codec leaves to the checked path.

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rmqcore::MessageDraft;
use rmqnet::codec::send::{decode_request, MessageSpans};

#[pyclass(name = "SendBatch", module = "rmq._rmqcore", frozen)]
pub struct PySendBatch {
    raw: Py<PyBytes>,
    #[pyo3(get)]
    topic: String,
    #[pyo3(get)]
    queue_id: i32,
    #[pyo3(get)]
    sequence: u64,
    messages: Vec<MessageSpans>,
}

impl PySendBatch {
    pub fn topic(&self) -> &str {
        &self.topic
    }

    pub fn queue_id(&self) -> i32 {
        self.queue_id
    }

    pub fn sequence(&self) -> u64 {
        self.sequence
    }

    /// The messages as engine drafts; bodies are borrowed from the request bytes.
    pub fn drafts<'a>(
        &'a self,
        py: Python<'a>,
        born_host: Option<std::net::SocketAddr>,
    ) -> Vec<MessageDraft<'a>> {
        let raw = self.raw.bind(py).as_bytes();
        self.messages
            .iter()
            .map(|message| message.draft(raw, born_host))
            .collect()
    }
}

#[pymethods]
impl PySendBatch {
    /// Decode a serialized `SendRequest`, or `None` when the Python path must take it.
    #[staticmethod]
    #[pyo3(signature = (raw, *, max_body_bytes, max_batch_messages, max_batch_bytes))]
    fn parse(
        raw: Bound<'_, PyBytes>,
        max_body_bytes: usize,
        max_batch_messages: usize,
        max_batch_bytes: usize,
    ) -> Option<Self> {
        let decoded = decode_request(raw.as_bytes())?;
        let (topic, queue_id, sequence, messages) = decoded;
        let body_bytes: usize = messages.iter().map(|m| m.body.1 - m.body.0).sum();
        let largest_body = messages
            .iter()
            .map(|m| m.body.1 - m.body.0)
            .max()
            .unwrap_or(0);
        let acceptable = !messages.is_empty()
            && messages.len() <= max_batch_messages
            && body_bytes <= max_batch_bytes
            && largest_body <= max_body_bytes;
        acceptable.then(|| PySendBatch {
            raw: raw.unbind(),
            topic,
            queue_id,
            sequence,
            messages,
        })
    }

    fn __len__(&self) -> usize {
        self.messages.len()
    }

    fn __repr__(&self) -> String {
        let body_bytes: usize = self.messages.iter().map(|m| m.body.1 - m.body.0).sum();
        format!(
            "SendBatch(topic={:?}, queue_id={}, messages={}, body_bytes={body_bytes})",
            self.topic,
            self.queue_id,
            self.messages.len(),
        )
    }
}
