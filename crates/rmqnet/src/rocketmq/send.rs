//! `apache.rocketmq.v2.MessagingService/SendMessage` answered from the engine, the way
//! `python/rmq/rocketmq/shard_backend.py` (`send`) answers it: each message checked as
//! `message_codec.incoming()` checks it (`check.rs`), its queue chosen as `_queue_for`
//! chooses it, stored with the same properties, and answered with the same
//! `SendMessageResponse`. A request is taken only when every message in it is plainly
//! acceptable; otherwise it is declined whole, before anything is stored, and the Python
//! path answers it with its precise codes.

use std::borrow::Cow;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use prost::Message as _;
use rmqcore::record::crc_property::CRC_PROPERTY_LENGTH;
use rmqcore::record::message_rules::check_message_fields;
use rmqcore::record::properties::MAX_PROPERTIES_LENGTH;
use rmqcore::{FlushMode, MessageDraft, PutResult, Store};
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

/// A topic's queues in this process, with their stores (`Shard::local_queues`).
type LocalQueues = Vec<(i32, Arc<Store>)>;

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
        // Under async flush a put only copies into the mapped log under the write lock
        // (microseconds): done on this worker, it spares the two thread hand-offs (to a
        // blocking thread and back) that cost more than the put itself. A put that waits
        // for its flush goes to a blocking thread, so the workers keep serving.
        let stored = if batches.iter().all(|b| !waits_for_flush(&b.store)) {
            Ok(store(checked, batches, peer))
        } else {
            tokio::task::spawn_blocking(move || store(checked, batches, peer)).await
        };
        let Ok((response, stored)) = stored else {
            return Outcome::Answer(grpc::status(grpc::INTERNAL, "a send failed unexpectedly"));
        };
        for (topic, queue_id) in &stored {
            self.shard.signals.notify(topic, *queue_id);
        }
        Outcome::Answer(grpc::ok_message(&response))
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
        // The topics of the request with their local queues: almost always one, so a
        // short list searched in place rather than a map built per request.
        let mut local: Vec<(&str, LocalQueues)> = Vec::with_capacity(1);
        for message in &checked {
            let topic = message.topic.as_str();
            let queues = match local.iter().position(|(known, _)| *known == topic) {
                Some(position) => &local[position].1,
                None => {
                    local.push((topic, self.shard.local_queues(topic)?));
                    &local[local.len() - 1].1
                }
            };
            let length = properties_length(message)?;
            // Each distinct store once (a process's queues mostly share one).
            let fit = queues.iter().enumerate().all(|(position, (_, store))| {
                queues[..position]
                    .iter()
                    .any(|(_, earlier)| Arc::ptr_eq(earlier, store))
                    || fits(message, length, store)
            });
            if queues.is_empty() || !fit {
                return None;
            }
        }
        // Everything is accepted: only now take turns, so a declined request takes none.
        let ungrouped = checked.iter().filter(|m| m.group.is_none()).count() as u64;
        let mut turn = self.turn.fetch_add(ungrouped, Ordering::Relaxed);
        let mut batches: Vec<Batch> = Vec::new();
        for (index, message) in checked.iter().enumerate() {
            let topic = message.topic.as_str();
            // Found: every topic of the request was looked up above.
            let (_, queues) = local.iter().find(|(known, _)| *known == topic)?;
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

/// Whether a put to `store` returns only once its bytes are flushed (sync flush).
fn waits_for_flush(store: &Store) -> bool {
    store.options().flush_mode == FlushMode::Sync
}

/// What `MessageDraft::prepare` refuses whatever the store: the message rules of the
/// record format (`message_rules`, the engine's one copy). `Some` with the length of the
/// encoded properties (without the record CRC's placeholder) when they pass. The Python
/// path gives a refused message its own error; here the whole request is declined so
/// that it can.
fn properties_length(message: &Checked) -> Option<usize> {
    check_message_fields(
        message.tag.as_deref(),
        message.keys.iter().map(String::as_str),
        message
            .properties
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str())),
    )
    .ok()?;
    let entry = |name: &str, value: &str| name.len() + value.len() + 2;
    let mut length = message.tag.as_ref().map_or(0, |tag| entry("TAGS", tag));
    if !message.keys.is_empty() {
        // The keys joined by spaces, as the engine stores them.
        let keys: usize = message.keys.iter().map(String::len).sum();
        length += "KEYS".len() + keys + message.keys.len() - 1 + 2;
    }
    length += message
        .properties
        .iter()
        .map(|(name, value)| entry(name, value))
        .sum::<usize>();
    Some(length)
}

/// Whether `store` takes a message whose properties passed `properties_length`: its own
/// body bound, and the properties with the record CRC's placeholder within the format's.
fn fits(message: &Checked, properties_length: usize, store: &Store) -> bool {
    let options = store.options();
    let crc = if options.append_record_crc {
        CRC_PROPERTY_LENGTH
    } else {
        0
    };
    message.body.len() <= options.max_message_size
        && properties_length + crc <= MAX_PROPERTIES_LENGTH
}

/// Store each batch with one `put_batch` (on a blocking thread); the response in request
/// order, and the queues that received messages.
fn store(
    mut checked: Vec<Checked>,
    batches: Vec<Batch>,
    peer: SocketAddr,
) -> (SendMessageResponse, Vec<(String, i32)>) {
    // The ids move into the answer (nothing stores them from here: UNIQ_KEY has its copy).
    let mut ids: Vec<String> = checked
        .iter_mut()
        .map(|m| std::mem::take(&mut m.message_id))
        .collect();
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
                tags: tags.map(Cow::Owned),
                keys: keys.into_iter().map(Cow::Owned).collect(),
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
            let message_id = std::mem::take(&mut ids[index]);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shard::Limits;
    use http_body_util::BodyExt;
    use rmqproto::rocketmq_v2::{
        Code, Encoding, Message, MessageType, Resource, Status, SystemProperties,
    };

    fn sender(dir: &std::path::Path) -> (MessageSender, Arc<Store>) {
        let store = Arc::new(Store::open(dir, Default::default()).unwrap());
        store.create_topic("t", 4).unwrap();
        let limits = Limits {
            max_body_bytes: 1024,
            max_batch_messages: 64,
            max_batch_bytes: 1 << 20,
            default_pull_messages: 32,
            max_pull_messages: 1024,
            default_pull_bytes: 1 << 20,
            max_pull_bytes: 1 << 20,
            max_wait_ms: 1000,
        };
        let shard = Shard::new([(7, Arc::clone(&store))].into_iter().collect(), limits);
        shard.host_topic("t", vec![7, 8, 7, 8]); // queues 0 and 2 live here
        (MessageSender::new(Arc::new(shard)), store)
    }

    fn message(id: &str, group: Option<&str>) -> Message {
        Message {
            topic: Some(Resource {
                resource_namespace: String::new(),
                name: "t".into(),
            }),
            user_properties: [("z".to_owned(), "1".to_owned()), ("a".into(), "2".into())]
                .into_iter()
                .collect(),
            system_properties: Some(SystemProperties {
                message_id: id.into(),
                message_type: if group.is_some() {
                    MessageType::Fifo
                } else {
                    MessageType::Normal
                } as i32,
                body_encoding: Encoding::Identity as i32,
                message_group: group.map(str::to_owned),
                ..Default::default()
            }),
            body: Bytes::from_static(b"body"),
        }
    }

    async fn send(sender: &MessageSender, messages: Vec<Message>) -> Option<SendMessageResponse> {
        let raw = SendMessageRequest { messages }.encode_to_vec();
        let peer = "127.0.0.1:4321".parse().unwrap();
        match sender.send(Bytes::from(raw), peer).await {
            Outcome::Decline => None,
            Outcome::Answer(response) => {
                let body = response.into_body().collect().await.unwrap().to_bytes();
                let message = grpc::unframe(&body).expect("one message");
                Some(SendMessageResponse::decode(message).unwrap())
            }
        }
    }

    #[tokio::test]
    async fn a_request_is_stored_per_queue_and_answered_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let (sender, store) = sender(dir.path());
        let mut gzip = message("declined", None);
        gzip.system_properties.as_mut().unwrap().body_encoding = Encoding::Gzip as i32;
        assert!(send(&sender, vec![message("m0", None), gzip])
            .await
            .is_none());
        let group_queue = [0, 2][crc32fast::hash(b"g") as usize % 2];
        let ids = ["m1", "m2", "g1", "m3", "g2"];
        let messages = ids
            .iter()
            .map(|id| message(id, id.strip_prefix('g').map(|_| "g")))
            .collect();
        let response = send(&sender, messages).await.unwrap();
        assert_eq!(response.status, Some(ok()));
        let answered: Vec<_> = response
            .entries
            .iter()
            .map(|e| (e.message_id.as_str(), e.offset))
            .collect();
        // Turns start at 1, as the Python path's (the declined request took none):
        // m1 -> queue 2, m2 -> queue 0, m3 -> queue 2; the group's two stay together.
        let group_offsets = if group_queue == 0 { [1, 2] } else { [2, 3] };
        let expected = [
            ("m1", 0),
            ("m2", 0),
            ("g1", group_offsets[0]),
            ("m3", 1),
            ("g2", group_offsets[1]),
        ];
        assert_eq!(answered, expected);
        let stored = store.pull("t", group_queue, 0, 10, None, None).unwrap();
        let last = stored.messages.last().unwrap();
        let names: Vec<_> = last.properties.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a", "z", "UNIQ_KEY", "__SHARDINGKEY"]);
        assert_eq!(last.born_host, "127.0.0.1:4321".parse().unwrap());
        assert_eq!(
            store.max_offset("t", 1).unwrap(),
            0,
            "queue 1 lives elsewhere"
        );
    }

    #[tokio::test]
    async fn an_engine_error_after_acceptance_is_answered_for_each_message() {
        let dir = tempfile::tempdir().unwrap();
        let (sender, store) = sender(dir.path());
        store.close().unwrap();
        let response = send(&sender, vec![message("m1", None), message("m2", None)])
            .await
            .unwrap();
        let failed = Status {
            code: Code::InternalServerError as i32,
            message: "the store is closed".into(),
        };
        assert_eq!(response.status.as_ref(), Some(&failed));
        for (entry, id) in response.entries.iter().zip(["m1", "m2"]) {
            assert_eq!(
                (entry.message_id.as_str(), entry.status.as_ref()),
                (id, Some(&failed))
            );
        }
    }
}
