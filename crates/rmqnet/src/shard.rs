//! The hot-path methods of `rmq.v1.Shard` answered straight from the engine: `Send` and
//! `SendBatches` here, `Pull` in `shard_pull.rs`. Every request is answered: stored, or
//! refused with the broker's precise status (`status.rs`, the one table) before anything
//! of it is stored. `store_request` is the shard's one send function: every transport
//! (these calls, and the Python server's `SendStream` through the binding) stores with it.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, RwLock};

use bytes::Bytes;
use http::Response;
use rmqcore::{FlushMode, Store};

use crate::codec::batches;
use crate::codec::send::{decode_request, encode_send_response, DecodedRequest};
use crate::grpc::{self, Body};
use crate::send_check::check_batch;
use crate::shard_limits::Limits;
use crate::signals::QueueSignals;
use crate::status::Refusal;

/// Whether a put to `store` returns only once its bytes are flushed (sync flush): such a
/// put runs on a blocking thread, so that the data plane's worker keeps serving.
pub(crate) fn waits_for_flush(store: &Store) -> bool {
    store.options().flush_mode == FlushMode::Sync
}

/// What a handler that may leave a request to the Python server does with it (the
/// RocketMQ v2 consume side); rmq.v1's sends and pulls are always answered.
pub enum Outcome {
    Answer(Response<Body>),
    Decline,
}

/// A shard process's stores and what it knows of the topics' layouts.
pub struct Shard {
    stores: HashMap<i32, Arc<Store>>,
    /// topic -> the shard directory of each queue (from the supervisor, via Python).
    layouts: RwLock<HashMap<String, Vec<i32>>>,
    pub signals: Arc<QueueSignals>,
    limits: Limits,
    /// Sends are stored on the runtime's thread rather than the blocking pool: no store
    /// waits for a flush (all flush asynchronously), so a put only copies and indexes
    /// (about a tenth of a millisecond for 128 messages), less than the two thread
    /// switches of a hand-off to the pool and back.
    inline_puts: bool,
}

impl Shard {
    pub fn new(stores: HashMap<i32, Arc<Store>>, limits: Limits) -> Self {
        let inline_puts = stores.values().all(|store| !waits_for_flush(store));
        Shard {
            inline_puts,
            stores,
            layouts: RwLock::new(HashMap::new()),
            signals: Arc::new(QueueSignals::default()),
            limits,
        }
    }

    pub fn host_topic(&self, topic: &str, shards: Vec<i32>) {
        let mut layouts = self.layouts.write().unwrap_or_else(|p| p.into_inner());
        layouts.insert(topic.to_owned(), shards);
    }

    /// Create the files of this process's queues of `topic` from `first_queue` on that
    /// their first put would create (`Store::prepare_queue`): a new topic's queues then
    /// cost their first batch no file creation on the data plane. A queue that cannot be
    /// prepared is left as it is: its first put creates its files, or says why not.
    pub fn prepare_queues(&self, topic: &str, first_queue: i32) {
        for (queue_id, store) in self.local_queues(topic).unwrap_or_default() {
            if queue_id >= first_queue {
                let _ = store.prepare_queue(topic, queue_id);
            }
        }
    }

    pub fn drop_topic(&self, topic: &str) {
        let mut layouts = self.layouts.write().unwrap_or_else(|p| p.into_inner());
        layouts.remove(topic);
    }

    /// The store of a queue this process serves, or why a request for it is refused, in
    /// the broker's words: a malformed or unknown topic, a queue id out of range, a queue
    /// another shard process serves.
    pub fn locate(&self, topic: &str, queue_id: i32) -> Result<(i32, Arc<Store>), Refusal> {
        rmqcore::topic::validate_topic(topic)?;
        let layouts = self.layouts.read().unwrap_or_else(|p| p.into_inner());
        let Some(layout) = layouts.get(topic) else {
            return Err(Refusal::TopicNotFound(format!(
                "topic '{topic}' does not exist"
            )));
        };
        if queue_id < 0 {
            return Err(Refusal::InvalidArgument(format!(
                "queue_id {queue_id} is negative"
            )));
        }
        let count = layout.len();
        let Some(&shard) = layout.get(queue_id as usize) else {
            return Err(Refusal::QueueOutOfRange(format!(
                "queue {queue_id} does not exist; topic '{topic}' has {count} queues (0 to {})",
                count as i64 - 1
            )));
        };
        match self.stores.get(&shard) {
            Some(store) => Ok((shard, Arc::clone(store))),
            None => Err(Refusal::QueueNotHosted(format!(
                "queue {queue_id} of topic '{topic}' lives on shard {shard}, which this \
                 process does not serve; refresh the route"
            ))),
        }
    }

    /// The queues of `topic` whose store this process holds, ascending, with their stores
    /// (`ShardHandler.local_queues`); `None` for a topic it does not know.
    pub(crate) fn local_queues(&self, topic: &str) -> Option<Vec<(i32, Arc<Store>)>> {
        let layouts = self.layouts.read().unwrap_or_else(|p| p.into_inner());
        let layout = layouts.get(topic)?;
        Some(
            layout
                .iter()
                .enumerate()
                .filter_map(|(queue_id, shard)| {
                    let store = self.stores.get(shard)?;
                    Some((i32::try_from(queue_id).ok()?, Arc::clone(store)))
                })
                .collect(),
        )
    }

    /// The shard directory whose store `store` is.
    pub(crate) fn shard_of(&self, store: &Arc<Store>) -> Option<i32> {
        self.stores
            .iter()
            .find(|(_, held)| Arc::ptr_eq(held, store))
            .map(|(&shard, _)| shard)
    }

    pub(crate) fn limits(&self) -> &Limits {
        &self.limits
    }

    /// A Send request decoded and checked, with the store of its queue; or why it is
    /// refused. Nothing is stored before a request is accepted whole. The drafts borrow
    /// `raw` and name `peer` as their born host.
    fn accept<'a>(
        &self,
        raw: &'a [u8],
        peer: Option<SocketAddr>,
    ) -> Result<(DecodedRequest<'a>, Arc<Store>), Refusal> {
        let mut decoded = decode_request(raw)
            .map_err(|reason| Refusal::Malformed(format!("malformed SendRequest: {reason}")))?;
        let (topic, queue_id, _, messages) = &mut decoded;
        let (_, store) = self.locate(topic, *queue_id)?;
        check_batch(messages, &self.limits)?;
        for draft in messages.iter_mut() {
            draft.born_host = peer;
        }
        Ok((decoded, store))
    }

    /// One `SendRequest` decoded, checked and stored, on the calling thread (it may wait
    /// for a flush): the encoded `SendResponse`, or why not. The one send function of the
    /// shard: `Send` and `SendBatches` call it on the blocking pool, and the Python
    /// server's `SendStream` through the binding.
    pub fn store_request(&self, raw: &[u8], peer: Option<SocketAddr>) -> Result<Vec<u8>, Refusal> {
        let ((topic, queue_id, sequence, drafts), store) = self.accept(raw, peer)?;
        let results = store.put_batch(topic, queue_id, &drafts)?;
        self.signals.notify(topic, queue_id);
        Ok(encode_send_response(&results, sequence))
    }

    /// Run `work` (a put) where it costs least: on the calling runtime thread when no
    /// put of the shard waits for a flush (`inline_puts`), else on the blocking pool, where
    /// a put may wait for its flush. Either way a panic is caught, as the reason (the
    /// call's INTERNAL status), rather than ending the connection's task.
    async fn storing<T: Send + 'static>(
        self: &Arc<Self>,
        work: impl FnOnce(&Shard) -> T + Send + 'static,
    ) -> Result<T, String> {
        if self.inline_puts {
            return catch_unwind(AssertUnwindSafe(|| work(self))).map_err(|panic| {
                let reason = panic
                    .downcast_ref::<&str>()
                    .map(|text| (*text).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned());
                format!("a send panicked: {}", reason.unwrap_or_default())
            });
        }
        let shard = Arc::clone(self);
        tokio::task::spawn_blocking(move || work(&shard))
            .await
            .map_err(|panic| panic.to_string())
    }

    /// The request is decoded, checked and stored (see `storing`): its drafts borrow the
    /// request's bytes.
    pub async fn send(self: &Arc<Self>, raw: Bytes, peer: SocketAddr) -> Response<Body> {
        let stored = self
            .storing(move |shard| shard.store_request(&raw, Some(peer)))
            .await;
        match stored {
            Ok(Ok(response)) => grpc::ok(&response),
            Ok(Err(refusal)) => refused(&refusal),
            Err(panic) => grpc::status(grpc::INTERNAL, &panic),
        }
    }

    /// Each batch of a `SendBatchesRequest` answered on its own: stored, or refused with
    /// its status (the others are stored all the same).
    pub async fn send_batches(self: &Arc<Self>, raw: Bytes, peer: SocketAddr) -> Response<Body> {
        let stored = self
            .storing(move |shard| {
                let parts = batches::split(&raw)?;
                let answers = parts
                    .into_iter()
                    .map(|part| match shard.store_request(part, Some(peer)) {
                        Ok(response) => batches::stored_answer(&response).unwrap_or_default(),
                        Err(refusal) => refused_answer(part, &refusal),
                    })
                    .collect::<Vec<_>>();
                Some(answers)
            })
            .await;
        match stored {
            Ok(Some(answers)) => grpc::ok(&batches::response(answers.iter().map(Vec::as_slice))),
            Ok(None) => refused(&Refusal::Malformed(
                "malformed SendBatchesRequest".to_owned(),
            )),
            Err(_) => grpc::status(grpc::INTERNAL, "a send failed unexpectedly"),
        }
    }
}

/// The answer of a refused batch, with the sequence of its request when it has one.
pub fn refused_answer(raw: &[u8], refusal: &Refusal) -> Vec<u8> {
    let sequence = decode_request(raw).map_or(0, |(_, _, sequence, _)| sequence);
    batches::refused_answer(sequence, refusal.code(), &refusal.message())
}

/// A refusal as the call's gRPC status.
pub fn refused(refusal: &Refusal) -> Response<Body> {
    let mut response = grpc::status(refusal.code(), &refusal.message());
    if let Some(resume) = refusal.resume_offset() {
        response.headers_mut().insert(
            crate::status::RESUME_OFFSET_HEADER,
            http::HeaderValue::from(resume),
        );
    }
    response
}
