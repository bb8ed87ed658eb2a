//! The hot-path methods of `rmq.v1.Shard` answered straight from the engine: `Send`,
//! `SendBatches` and `Pull`. Each either answers or *declines*; a declined request goes
//! to the Python server unchanged (see `proxy.rs`), which answers it with the broker's
//! checks and precise errors. Nothing is stored before a request is accepted whole, so a
//! declined request is never stored twice.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Response;
use prost::Message as _;
use rmqcore::Store;

use crate::codec::pull::{response_tail, PullEncoder};
use crate::codec::send::{decode_request, encode_send_response, DecodedRequest};
use crate::codec::{batches, send::MessageSpans};
use crate::grpc::{self, Body};
use crate::signals::QueueSignals;
use crate::status::code_for;

/// The bounds the Python broker enforces (`rmq.broker.validation.Limits`).
#[derive(Debug, Clone)]
pub struct Limits {
    pub max_body_bytes: usize,
    pub max_batch_messages: usize,
    pub max_batch_bytes: usize,
    pub default_pull_messages: usize,
    pub max_pull_messages: usize,
    pub default_pull_bytes: usize,
    pub max_pull_bytes: usize,
    pub max_wait_ms: u64,
}

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
}

impl Shard {
    pub fn new(stores: HashMap<i32, Arc<Store>>, limits: Limits) -> Self {
        Shard {
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

    pub fn drop_topic(&self, topic: &str) {
        let mut layouts = self.layouts.write().unwrap_or_else(|p| p.into_inner());
        layouts.remove(topic);
    }

    /// The store of a queue this process serves; None sends the request to the Python
    /// path, which explains what is wrong (unknown topic, queue out of range, elsewhere).
    fn store_for(&self, topic: &str, queue_id: i32) -> Option<Arc<Store>> {
        let layouts = self.layouts.read().unwrap_or_else(|p| p.into_inner());
        let shard = *layouts.get(topic)?.get(usize::try_from(queue_id).ok()?)?;
        self.stores.get(&shard).cloned()
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

    /// The store of a queue this process serves, with its shard directory.
    pub(crate) fn placement(&self, topic: &str, queue_id: i32) -> Option<(i32, Arc<Store>)> {
        let layouts = self.layouts.read().unwrap_or_else(|p| p.into_inner());
        let shard = *layouts.get(topic)?.get(usize::try_from(queue_id).ok()?)?;
        Some((shard, Arc::clone(self.stores.get(&shard)?)))
    }

    pub(crate) fn limits(&self) -> &Limits {
        &self.limits
    }

    /// A decoded request the fast path takes as it is, with its store.
    fn accept(&self, raw: &[u8]) -> Option<(DecodedRequest, Arc<Store>)> {
        let decoded = decode_request(raw)?;
        let (topic, queue_id, _, messages) = &decoded;
        let body_bytes: usize = messages.iter().map(|m| m.body.1 - m.body.0).sum();
        let largest = messages
            .iter()
            .map(|m| m.body.1 - m.body.0)
            .max()
            .unwrap_or(0);
        let limits = &self.limits;
        let acceptable = !messages.is_empty()
            && messages.len() <= limits.max_batch_messages
            && body_bytes <= limits.max_batch_bytes
            && largest <= limits.max_body_bytes;
        let store = acceptable.then(|| self.store_for(topic, *queue_id))??;
        Some((decoded, store))
    }

    pub async fn send(&self, raw: Bytes, peer: SocketAddr) -> Outcome {
        let Some((decoded, store)) = self.accept(&raw) else {
            return Outcome::Decline;
        };
        let (topic, queue_id, sequence) = (decoded.0.clone(), decoded.1, decoded.2);
        let stored = tokio::task::spawn_blocking(move || {
            let drafts: Vec<_> = decoded
                .3
                .iter()
                .map(|m| m.draft(&raw, Some(peer)))
                .collect();
            store.put_batch(&decoded.0, decoded.1, &drafts)
        })
        .await;
        match stored {
            Ok(Ok(results)) => {
                self.signals.notify(&topic, queue_id);
                Outcome::Answer(grpc::ok(&encode_send_response(&results, sequence)))
            }
            Ok(Err(error)) => Outcome::Answer(grpc::status(code_for(&error), &error.to_string())),
            Err(panic) => Outcome::Answer(grpc::status(grpc::INTERNAL, &panic.to_string())),
        }
    }

    pub async fn send_batches(&self, raw: Bytes, peer: SocketAddr) -> Outcome {
        let Some(parts) = batches::split(&raw) else {
            return Outcome::Decline;
        };
        let mut accepted = Vec::with_capacity(parts.len());
        for part in parts {
            let Some((decoded, store)) = self.accept(part) else {
                return Outcome::Decline;
            };
            let start = part.as_ptr() as usize - raw.as_ptr() as usize;
            accepted.push((raw.slice(start..start + part.len()), decoded, store));
        }
        let stored = tokio::task::spawn_blocking(move || {
            accepted
                .into_iter()
                .map(|(part, (topic, queue_id, sequence, messages), store)| {
                    (
                        topic.clone(),
                        queue_id,
                        store_part(&store, &part, &topic, queue_id, sequence, &messages, peer),
                    )
                })
                .collect::<Vec<_>>()
        })
        .await;
        let Ok(stored) = stored else {
            return Outcome::Answer(grpc::status(grpc::INTERNAL, "a send failed unexpectedly"));
        };
        for (topic, queue_id, _) in &stored {
            self.signals.notify(topic, *queue_id);
        }
        let response = batches::response(stored.iter().map(|(_, _, answer)| answer.as_slice()));
        Outcome::Answer(grpc::ok(&response))
    }

    pub async fn pull(&self, raw: &[u8], time_left: Option<Duration>) -> Outcome {
        let Ok(request) = rmqproto::v1::PullRequest::decode(raw) else {
            return Outcome::Decline;
        };
        let limits = &self.limits;
        let bounded = |value: i64, default: usize, max: usize| match value {
            0 => Some(default),
            v if v < 0 => None,
            v => Some((v as u64).min(max as u64) as usize),
        };
        let (Some(max_messages), Some(max_bytes), Some(wait_ms)) = (
            bounded(
                i64::from(request.max_messages),
                limits.default_pull_messages,
                limits.max_pull_messages,
            ),
            bounded(
                request.max_bytes,
                limits.default_pull_bytes,
                limits.max_pull_bytes,
            ),
            bounded(i64::from(request.wait_ms), 0, limits.max_wait_ms as usize),
        ) else {
            return Outcome::Decline;
        };
        if request.offset < 0 {
            return Outcome::Decline;
        }
        let Some(store) = self.store_for(&request.topic, request.queue_id) else {
            return Outcome::Decline;
        };
        let mut wait = Duration::from_millis(wait_ms as u64);
        if let Some(left) = time_left {
            wait = wait.min(left.saturating_sub(Duration::from_millis(200)));
        }
        let deadline = Instant::now() + wait;
        let filter = rmqcore::tag_filter::TagFilter::new(request.tags.clone());
        let (topic, queue_id) = (request.topic.clone(), request.queue_id);
        let mut offset = request.offset;
        loop {
            let version = self.signals.version(&topic, queue_id);
            let Ok(max_offset) = store.max_offset(&topic, queue_id) else {
                return Outcome::Decline;
            };
            if offset > max_offset {
                return Outcome::Decline; // the Python path says which offsets exist
            }
            if offset < max_offset {
                let (reader, topic_owned, filter) =
                    (Arc::clone(&store), topic.clone(), filter.clone());
                let pulled = tokio::task::spawn_blocking(move || {
                    let mut encoder = PullEncoder::default();
                    let pulled = reader.pull_each(
                        &topic_owned,
                        queue_id,
                        offset,
                        max_messages,
                        filter.as_ref(),
                        Some(max_bytes),
                        |view| encoder.push(view),
                    )?;
                    Ok::<_, rmqcore::Error>((pulled, encoder.finish()))
                })
                .await;
                let Ok(Ok((pulled, mut encoded))) = pulled else {
                    return Outcome::Decline; // corrupt records and the like: the Python path
                };
                if pulled.count > 0 || Instant::now() >= deadline {
                    encoded.extend(response_tail(
                        pulled.next_offset,
                        pulled.min_offset,
                        pulled.max_offset,
                    ));
                    return Outcome::Answer(grpc::ok(&encoded));
                }
                offset = pulled.next_offset; // only entries the tag filter passed over
                continue;
            }
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero()
                || !self
                    .signals
                    .wait(&topic, queue_id, version, remaining)
                    .await
            {
                let Ok(min_offset) = store.min_offset(&topic, queue_id) else {
                    return Outcome::Decline;
                };
                return Outcome::Answer(grpc::ok(&response_tail(offset, min_offset, max_offset)));
            }
        }
    }
}

/// One batch of a `SendBatches` stored; its encoded answer.
fn store_part(
    store: &Store,
    raw: &[u8],
    topic: &str,
    queue_id: i32,
    sequence: u64,
    messages: &[MessageSpans],
    peer: SocketAddr,
) -> Vec<u8> {
    let drafts: Vec<_> = messages.iter().map(|m| m.draft(raw, Some(peer))).collect();
    match store.put_batch(topic, queue_id, &drafts) {
        Ok(results) => {
            batches::stored_answer(&encode_send_response(&results, sequence)).unwrap_or_default()
        }
        Err(error) => batches::refused_answer(sequence, code_for(&error), &error.to_string()),
    }
}
