//! `apache.rocketmq.v2.MessagingService/SendMessage` answered from the engine, the way
//! `python/rmq/rocketmq/shard_backend.py` (`send`) answers it: each message checked as
//! `message_codec.incoming()` checks it (`check.rs`), its queue chosen as `_queue_for`
//! chooses it, stored with the same properties, and answered with the same
//! `SendMessageResponse`. A request is taken only when every message in it is plainly
//! acceptable; otherwise it is declined whole, before anything is stored, and the Python
//! path answers it with its precise codes.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use prost::Message as _;
use rmqcore::record::crc_property::CRC_PROPERTY_LENGTH;
use rmqcore::record::message_rules::check_message_fields;
use rmqcore::record::properties::MAX_PROPERTIES_LENGTH;
use rmqcore::{MessageDraft, PutResult, Store};
use rmqproto::rocketmq_v2::{SendMessageRequest, SendMessageResponse, SendResultEntry};

use super::check::{check, Checked};
use super::status::{ok, status_for};
use crate::grpc;
use crate::shard::{Outcome, Shard};

/// The SendMessage handler of a shard process.
pub struct MessageSender {
    shard: Arc<Shard>,
    /// Round robin over a topic's local queues, shared by every topic (as the Python
    /// path's `ShardBackend._turn`).
    turn: AtomicU64,
}

/// The messages of one request that go to one queue, in request order.
struct Batch {
    topic: String,
    queue_id: i32,
    store: Arc<Store>,
    members: Vec<usize>,
}

impl MessageSender {
    pub fn new(shard: Arc<Shard>) -> Self {
        MessageSender {
            shard,
            turn: AtomicU64::new(0),
        }
    }

    pub async fn send(&self, raw: Bytes, peer: SocketAddr) -> Outcome {
        let Some((checked, batches)) = self.plan(raw) else {
            return Outcome::Decline;
        };
        let stored = tokio::task::spawn_blocking(move || store(checked, batches, peer)).await;
        let Ok((response, stored)) = stored else {
            return Outcome::Answer(grpc::status(grpc::INTERNAL, "a send failed unexpectedly"));
        };
        for (topic, queue_id) in &stored {
            self.shard.signals.notify(topic, *queue_id);
        }
        Outcome::Answer(grpc::ok(&response.encode_to_vec()))
    }

    /// The request's messages checked, and the queue each goes to; `None` declines it.
    fn plan(&self, raw: Bytes) -> Option<(Vec<Checked>, Vec<Batch>)> {
        let request = SendMessageRequest::decode(raw).ok()?;
        if request.messages.is_empty() {
            return None;
        }
        let max_body_bytes = self.shard.limits().max_body_bytes;
        let checked = request
            .messages
            .into_iter()
            .map(|message| check(message, max_body_bytes))
            .collect::<Option<Vec<_>>>()?;
        let mut local: HashMap<&str, Vec<(i32, Arc<Store>)>> = HashMap::new();
        for message in &checked {
            if !local.contains_key(message.topic.as_str()) {
                let queues = self.shard.local_queues(&message.topic)?;
                local.insert(&message.topic, queues);
            }
            let queues = &local[message.topic.as_str()];
            if queues.is_empty() || !queues.iter().all(|(_, store)| fits(message, store)) {
                return None;
            }
        }
        // Everything is accepted: only now take turns, so a declined request takes none.
        let ungrouped = checked.iter().filter(|m| m.group.is_none()).count() as u64;
        let mut turn = self.turn.fetch_add(ungrouped, Ordering::Relaxed);
        let mut batches: Vec<Batch> = Vec::new();
        for (index, message) in checked.iter().enumerate() {
            let queues = &local[message.topic.as_str()];
            let slot = match &message.group {
                Some(group) => crc32fast::hash(group.as_bytes()) as u64 % queues.len() as u64,
                None => {
                    turn += 1;
                    turn % queues.len() as u64
                }
            };
            let (queue_id, store) = &queues[slot as usize];
            match batches
                .iter_mut()
                .find(|b| b.queue_id == *queue_id && b.topic == message.topic)
            {
                Some(batch) => batch.members.push(index),
                None => batches.push(Batch {
                    topic: message.topic.clone(),
                    queue_id: *queue_id,
                    store: Arc::clone(store),
                    members: vec![index],
                }),
            }
        }
        Some((checked, batches))
    }
}

/// Whether the engine takes `message` as it is (what `MessageDraft::prepare` refuses):
/// the message rules of the record format (`message_rules`, the engine's one copy), the
/// store's own body bound, and the encoded properties' length with the record CRC's
/// placeholder. The Python path gives a refused message its own error; here the whole
/// request is declined so that it can.
fn fits(message: &Checked, store: &Store) -> bool {
    let options = store.options();
    let fields = check_message_fields(
        message.tag.as_deref(),
        message.keys.iter().map(String::as_str),
        message
            .properties
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str())),
    );
    let entry = |name: &str, value: &str| name.len() + value.len() + 2;
    let mut length = message.tag.as_ref().map_or(0, |tag| entry("TAGS", tag));
    if !message.keys.is_empty() {
        length += entry("KEYS", &message.keys.join(" "));
    }
    length += message
        .properties
        .iter()
        .map(|(name, value)| entry(name, value))
        .sum::<usize>();
    if options.append_record_crc {
        length += CRC_PROPERTY_LENGTH;
    }
    fields.is_ok()
        && message.body.len() <= options.max_message_size
        && length <= MAX_PROPERTIES_LENGTH
}

/// Store each batch with one `put_batch` (on a blocking thread); the response in request
/// order, and the queues that received messages.
fn store(
    mut checked: Vec<Checked>,
    batches: Vec<Batch>,
    peer: SocketAddr,
) -> (SendMessageResponse, Vec<(String, i32)>) {
    let ids: Vec<String> = checked.iter().map(|m| m.message_id.clone()).collect();
    let mut drafts: Vec<Option<MessageDraft<'_>>> = checked
        .iter_mut()
        .map(|message| {
            let tags = message.tag.take();
            let keys = std::mem::take(&mut message.keys);
            let properties = std::mem::take(&mut message.properties);
            let born_timestamp = message.born_timestamp;
            let message: &Checked = message;
            Some(MessageDraft {
                body: &message.body,
                tags,
                keys,
                properties,
                flag: 0,
                born_timestamp,
                born_host: Some(peer),
            })
        })
        .collect();
    let mut entries: Vec<Option<SendResultEntry>> = vec![None; ids.len()];
    let mut stored = Vec::new();
    for batch in batches {
        let batch_drafts: Vec<MessageDraft<'_>> = batch
            .members
            .iter()
            .filter_map(|&index| drafts[index].take())
            .collect();
        let results: Result<Vec<PutResult>, _> =
            batch
                .store
                .put_batch(&batch.topic, batch.queue_id, &batch_drafts);
        if results.is_ok() {
            stored.push((batch.topic.clone(), batch.queue_id));
        }
        for (position, &index) in batch.members.iter().enumerate() {
            let message_id = ids[index].clone();
            entries[index] = Some(match &results {
                Ok(results) => SendResultEntry {
                    status: Some(ok()),
                    message_id,
                    offset: results[position].queue_offset,
                    ..Default::default()
                },
                Err(error) => SendResultEntry {
                    status: Some(status_for(error)),
                    message_id,
                    ..Default::default()
                },
            });
        }
    }
    let entries: Vec<SendResultEntry> = entries.into_iter().flatten().collect();
    let first_failure = entries
        .iter()
        .filter_map(|entry| entry.status.clone())
        .find(|status| status.code != ok().code);
    let response = SendMessageResponse {
        status: Some(first_failure.unwrap_or_else(ok)),
        entries,
    };
    (response, stored)
}
