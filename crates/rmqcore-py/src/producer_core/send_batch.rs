//! `ProducerCore.send_batch`, one call per batch of messages (as RocketMQ's
//! `send(Collection<Message>)`): one crossing from Python, one check pass, one encoding
//! pass and one lock for the whole batch, and one future. The messages go to one queue as
//! a batch of their own (`Core::push_whole`), so the shard stores all of them or none.
//!
//! A batch is refused before anything is queued when a message breaks the engine's own
//! rules for tags, keys and properties (`message_rules`, the rules the shard applies), or
//! when it is larger than the producer's batch limits; the error names the message or the
//! limit. The broker's body size limit is the shard's to apply: it refuses the batch
//! whole, naming the message.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rmqcore::record::message_rules::check_message_fields;
use rmqnet::client::encode::{put_full_message, request_headroom};

use crate::errors::invalid;
use crate::message::Metadata;
use crate::send_batch_future::PySendBatchFuture;
use crate::send_future::Answer;
use crate::store::columns::{batch_items, read_messages, Columns};

use super::send::MESSAGE_OVERHEAD;
use super::PyProducerCore;

/// One message of the batch: its body and, unless it is a bare body, its fields.
struct Item<'py, 'a> {
    body: Bound<'py, PyBytes>,
    metadata: Option<Metadata<'a>>,
}

/// The first message that breaks the engine's field rules, as the error naming it.
fn check_items(py: Python<'_>, items: &[Item<'_, '_>]) -> PyResult<()> {
    for (index, item) in items.iter().enumerate() {
        let Some(metadata) = &item.metadata else {
            continue;
        };
        let checked = check_message_fields(
            metadata.tags.as_deref(),
            metadata.keys.iter().map(AsRef::as_ref),
            metadata
                .properties
                .iter()
                .map(|(name, value)| (name.as_str(), value.as_str())),
        );
        if let Err(error) = checked {
            return Err(invalid(py, "messages", format!("message {index}: {error}")));
        }
    }
    Ok(())
}

/// Every message's `messages` field of a `SendRequest`, one after the other, after
/// `headroom` free bytes (`Batch::set_encoded`).
fn encode(items: &[Item<'_, '_>], headroom: usize) -> Vec<u8> {
    let bodies: usize = items.iter().map(|item| item.body.as_bytes().len()).sum();
    let mut encoded = Vec::with_capacity(headroom + bodies + items.len() * 48);
    encoded.resize(headroom, 0);
    for item in items {
        match &item.metadata {
            None => {
                put_full_message::<&str>(&mut encoded, item.body.as_bytes(), None, &[], &[], 0, 0)
            }
            Some(metadata) => put_full_message(
                &mut encoded,
                item.body.as_bytes(),
                metadata.tags.as_deref(),
                &metadata.keys,
                &metadata.properties,
                metadata.flag,
                metadata.born_timestamp,
            ),
        }
    }
    encoded
}

#[pymethods]
impl PyProducerCore {
    /// Bytes a message counts against `batch_max_bytes` besides its body, so that a
    /// caller splitting its own batches (`rmq produce`) can split them to fit.
    #[classattr]
    const MESSAGE_OVERHEAD: usize = MESSAGE_OVERHEAD;

    /// Queue a batch of messages for one queue, sent as one request; the future resolves
    /// once the broker stored all of them (or failed them all).
    #[pyo3(signature = (topic, messages, *, tags=None, keys=None, sharding_key=None, queue_id=None))]
    #[allow(clippy::too_many_arguments)]
    fn send_batch(
        &self,
        py: Python<'_>,
        topic: &str,
        messages: &Bound<'_, PyAny>,
        tags: Option<&Bound<'_, PyAny>>,
        keys: Option<&Bound<'_, PyAny>>,
        sharding_key: Option<&Bound<'_, PyAny>>,
        queue_id: Option<i32>,
    ) -> PyResult<Py<PySendBatchFuture>> {
        if self.core.lock().closed {
            return Err(crate::errors::rmq_error(
                py,
                "StoreClosedError",
                "the producer is closed",
            ));
        }
        let objects = batch_items(py, messages)?;
        let count = objects.len();
        if count == 0 {
            return Err(invalid(py, "messages", "the batch has no messages"));
        }
        let columns = Columns::extract(py, count, tags, keys)?;
        let (bodies, metadata) = read_messages(py, &objects, &columns)?;
        let items: Vec<Item<'_, '_>> = bodies
            .into_iter()
            .zip(metadata)
            .map(|(body, metadata)| Item { body, metadata })
            .collect();
        check_items(py, &items)?;
        let size: usize = items
            .iter()
            .map(|item| item.body.as_bytes().len() + MESSAGE_OVERHEAD)
            .sum();
        let limits = self.core.lock().limits;
        if count > limits.batch_max_messages {
            return Err(invalid(
                py,
                "messages",
                format!(
                    "the batch has {count} messages, more than the producer's \
                     batch_max_messages of {}: split it, or raise the limit",
                    limits.batch_max_messages
                ),
            ));
        }
        if size > limits.batch_max_bytes {
            return Err(invalid(
                py,
                "messages",
                format!(
                    "the batch counts {size} bytes ({MESSAGE_OVERHEAD} per message besides \
                     its body), more than the producer's batch_max_bytes of {}: split it, \
                     or raise the limit",
                    limits.batch_max_bytes
                ),
            ));
        }
        let headroom = request_headroom(topic);
        let encoded = encode(&items, headroom);
        drop(items);
        let queue = match self.choose_queue(py, topic, sharding_key, queue_id)? {
            Ok(queue) => queue,
            Err(error) => {
                let failed = self.new_outcome(py, topic, queue_id.unwrap_or(-1));
                failed.finish(py, Answer::Failed(error));
                return PySendBatchFuture::create(py, failed, count);
            }
        };
        if self.core.lock().must_wait(size, count) {
            // As for `send`: lingering batches leave at once while this waits for room.
            self.core.begin_flush();
            let waited = self.wait_until(py, None, |state| state.room_after_wait(size, count));
            self.core.end_flush();
            waited?;
        }
        let outcome = self.new_outcome(py, topic, queue);
        let key = (topic.to_owned(), queue);
        let ready =
            self.core
                .push_whole(&key, encoded, headroom, count, size, Arc::clone(&outcome));
        let future = PySendBatchFuture::create(py, outcome, count)?;
        if let Some(batch) = ready {
            self.dispatch(batch);
        }
        Ok(future)
    }
}
