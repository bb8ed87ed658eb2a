//! `rmq._rmqcore.LeaseBook`: the RocketMQ v2 lease book of one store directory
//! (`rmqnet::rocketmq::lease_book`), for the Python path of a shard process. The same
//! book object is handed to the process's native data plane (`ShardServer`), so both
//! paths claim, ack and extend on one state.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rmqcore::tag_filter::TagFilter;
use rmqcore::Store;
use rmqnet::rocketmq::claim::{claim, Claim};
use rmqnet::rocketmq::lease_book::LeaseBook;
use rmqnet::rocketmq::outgoing::delivered;
use rmqnet::rocketmq::receipt::Receipt;
use rmqnet::rocketmq::receive::now_ms;

use crate::errors::without_gil;
use crate::message::PyMessage;
use crate::store::PyStore;

#[pyclass(name = "LeaseBook", module = "rmq._rmqcore", frozen)]
pub struct PyLeaseBook {
    pub(crate) book: Arc<LeaseBook>,
    store: Arc<Store>,
}

/// A message due again with no delivery attempt left: `(offset, attempt, message)`.
type Exhausted = (i64, i32, PyMessage);

#[pymethods]
impl PyLeaseBook {
    #[new]
    fn new(store: PyRef<'_, PyStore>) -> PyResult<Self> {
        let book = LeaseBook::open(std::path::Path::new(&store.path))
            .map_err(|error| pyo3::exceptions::PyOSError::new_err(error.to_string()))?;
        Ok(PyLeaseBook {
            book: Arc::new(book),
            store: Arc::clone(&store.inner),
        })
    }

    /// Claim up to `room` messages of the queue for `group`: the received messages,
    /// each an encoded `apache.rocketmq.v2.Message` with its receipt handle, and the
    /// messages out of attempts (left leased for the caller to dead-letter and settle).
    #[pyo3(signature = (group, topic, queue_id, room, tags, invisible_ms, max_attempts))]
    #[expect(clippy::too_many_arguments, reason = "the claim's fields")]
    fn claim(
        &self,
        py: Python<'_>,
        group: &str,
        topic: &str,
        queue_id: i32,
        room: usize,
        tags: Option<Vec<String>>,
        invisible_ms: i64,
        max_attempts: i32,
    ) -> PyResult<(Vec<Py<PyBytes>>, Vec<Exhausted>)> {
        let filter = tags.and_then(TagFilter::new);
        let (found, exhausted) = without_gil(py, || {
            let ask = Claim {
                group,
                topic,
                queue_id,
                room,
                filter: filter.as_ref(),
                invisible_ms,
                max_attempts,
                now_ms: now_ms(),
            };
            // Messages lost with a tier object are passed over (and logged) in `claim`.
            let claimed = claim(&self.book, &self.store, &ask)?;
            let (found, exhausted) = (claimed.deliveries, claimed.exhausted);
            let encoded: Vec<Vec<u8>> = found
                .into_iter()
                .map(|delivery| prost::Message::encode_to_vec(&delivered(delivery, invisible_ms)))
                .collect();
            Ok((encoded, exhausted))
        })?;
        let found = found
            .into_iter()
            .map(|bytes| PyBytes::new(py, &bytes).unbind())
            .collect();
        let exhausted = exhausted
            .into_iter()
            .map(|e| {
                let offset = e.message.queue_offset;
                (offset, e.attempt, PyMessage::from_stored(py, e.message))
            })
            .collect();
        Ok((found, exhausted))
    }

    /// Ack the delivery `attempt` of `offset`; False when it is not the one out.
    fn ack(&self, group: &str, topic: &str, queue_id: i32, offset: i64, attempt: i32) -> bool {
        self.book
            .with_existing(group, topic, queue_id, |queue| queue.ack(offset, attempt))
            .unwrap_or(false)
    }

    /// Keep the delivery `attempt` of `offset` invisible for `invisible_ms` from now; its
    /// new receipt handle, or None when that delivery is not the one out.
    fn extend(
        &self,
        group: &str,
        topic: &str,
        queue_id: i32,
        offset: i64,
        attempt: i32,
        invisible_ms: i64,
    ) -> Option<String> {
        let deadline_ms = now_ms() + invisible_ms;
        let extended = self.book.with_existing(group, topic, queue_id, |queue| {
            queue.extend(offset, attempt, deadline_ms)
        });
        (extended == Some(true)).then(|| {
            Receipt {
                topic: topic.to_owned(),
                queue_id,
                offset,
                attempt,
                deadline_ms,
            }
            .encode()
        })
    }

    /// Done with `offset` (moved to the dead-letter topic).
    fn settle(
        &self,
        py: Python<'_>,
        group: &str,
        topic: &str,
        queue_id: i32,
        offset: i64,
    ) -> PyResult<()> {
        without_gil(py, || {
            self.book
                .hold(&self.store, group, topic, queue_id)?
                .queue()
                .settle(offset);
            Ok(())
        })
    }

    /// Commit each group's acked edge as its consumer offset and write the book if it
    /// changed; whether it wrote.
    fn save(&self, py: Python<'_>) -> PyResult<bool> {
        py.detach(|| self.book.save(&self.store))
            .map_err(|error| pyo3::exceptions::PyOSError::new_err(error.to_string()))
    }
}

/// `(topic, queue_id, offset, attempt, deadline_ms)` of a receipt handle, None when it is
/// not one of this broker's.
#[pyfunction]
pub fn decode_receipt(handle: &str) -> Option<(String, i32, i64, i32, i64)> {
    let r = Receipt::decode(handle)?;
    Some((r.topic, r.queue_id, r.offset, r.attempt, r.deadline_ms))
}
