//! `apache.rocketmq.v2.MessagingService/SendMessage`, answered from the engine for every
//! request: each message checked (`check.rs`: the protocol's refusals, gzip bodies), its
//! queue chosen (a message group's always the same one, the others in turn over the
//! topic's queues in this process), stored, and answered with its own status. A refused
//! message is not stored and does not keep the others from being stored; the response's
//! status is the first refusal's, or OK.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use http::Response;
use prost::Message as _;
use rmqcore::topic::validate_topic;
use rmqcore::Store;
use rmqproto::rocketmq_v2::{
    Code, Message, SendMessageRequest, SendMessageResponse, SendResultEntry, Status,
};

use super::check::{check, Checked, Refused};
use super::put::{store, Batch, Plan};
use super::python_text::repr;
use super::status::refused;
use crate::grpc::{self, Body};
use crate::shard::{waits_for_flush, Shard};

/// The SendMessage handler of a shard process.
pub struct MessageSender {
    shard: Arc<Shard>,
    /// Round robin over a topic's local queues, shared by every topic.
    turn: AtomicU64,
}

/// A topic's queues in this process, with their stores (`Shard::local_queues`).
type LocalQueues = Vec<(i32, Arc<Store>)>;

impl MessageSender {
    pub fn new(shard: Arc<Shard>) -> Self {
        MessageSender {
            shard,
            turn: AtomicU64::new(0),
        }
    }

    pub async fn send(&self, raw: Bytes, peer: SocketAddr) -> Response<Body> {
        let request = match SendMessageRequest::decode(raw) {
            Ok(request) => request,
            // What a gRPC server answers a request it cannot deserialize.
            Err(error) => {
                let text = format!("malformed SendMessageRequest: {error}");
                return grpc::status(grpc::INTERNAL, &text);
            }
        };
        if request.messages.is_empty() {
            let response = SendMessageResponse {
                status: Some(refused(Code::BadRequest, "the request has no messages")),
                entries: Vec::new(),
            };
            return grpc::ok_message(&response);
        }
        let plan = self.plan(request.messages);
        // Under async flush a put only copies into the mapped log under the write lock
        // (microseconds): done on this worker, it spares the two thread hand-offs (to a
        // blocking thread and back) that cost more than the put itself. A put that waits
        // for its flush goes to a blocking thread, so the workers keep serving.
        let stored = if plan.batches.iter().all(|b| !waits_for_flush(&b.store)) {
            Ok(store(plan, peer))
        } else {
            tokio::task::spawn_blocking(move || store(plan, peer)).await
        };
        let Ok((response, stored)) = stored else {
            return grpc::status(grpc::INTERNAL, "a send failed unexpectedly");
        };
        for (topic, queue_id) in &stored {
            self.shard.signals.notify(topic, *queue_id);
        }
        grpc::ok_message(&response)
    }

    /// Each message checked and, when accepted, given its queue.
    fn plan(&self, messages: Vec<Message>) -> Plan {
        let max_body_bytes = self.shard.limits().max_body_bytes;
        let count = messages.len();
        let mut checked: Vec<Option<Checked>> = Vec::with_capacity(count);
        let mut entries: Vec<Option<SendResultEntry>> = vec![None; count];
        // The topics of the request with their local queues: almost always one, so a
        // short list searched in place rather than a map built per request.
        let mut local: Vec<(String, Result<LocalQueues, Status>)> = Vec::with_capacity(1);
        let mut homes: Vec<usize> = Vec::with_capacity(count);
        for (index, message) in messages.into_iter().enumerate() {
            let accepted = check(message, max_body_bytes).and_then(|message| {
                let position = match local.iter().position(|(known, _)| *known == message.topic) {
                    Some(position) => position,
                    None => {
                        let queues = self.local_queues(&message.topic);
                        local.push((message.topic.clone(), queues));
                        local.len() - 1
                    }
                };
                match &local[position].1 {
                    Ok(_) => Ok((message, position)),
                    Err(status) => Err(Refused {
                        message_id: message.message_id,
                        status: status.clone(),
                    }),
                }
            });
            match accepted {
                Ok((message, position)) => {
                    checked.push(Some(message));
                    homes.push(position);
                }
                Err(refusal) => {
                    checked.push(None);
                    homes.push(usize::MAX);
                    entries[index] = Some(SendResultEntry {
                        status: Some(refusal.status),
                        message_id: refusal.message_id,
                        ..Default::default()
                    });
                }
            }
        }
        // One turn per accepted message without a group, taken at once for the request.
        let ungrouped = checked
            .iter()
            .flatten()
            .filter(|m| m.group.is_none())
            .count() as u64;
        let mut turn = self.turn.fetch_add(ungrouped, Ordering::Relaxed);
        let mut batches: Vec<Batch> = Vec::new();
        for (index, message) in checked.iter().enumerate() {
            let (Some(message), Some((_, Ok(queues)))) = (message, local.get(homes[index])) else {
                continue;
            };
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
        Plan {
            checked,
            entries,
            batches,
        }
    }

    /// The topic's queues in this process, or why none takes a message: a malformed
    /// topic name, an unknown topic, a topic whose queues all live elsewhere.
    fn local_queues(&self, topic: &str) -> Result<LocalQueues, Status> {
        validate_topic(topic).map_err(|error| refused(Code::IllegalTopic, error.to_string()))?;
        let Some(queues) = self.shard.local_queues(topic) else {
            let text = format!("topic {} does not exist", repr(topic));
            return Err(refused(Code::TopicNotFound, text));
        };
        if queues.is_empty() {
            let text = format!(
                "no queue of topic {} lives in this shard process; refresh the route",
                repr(topic)
            );
            return Err(refused(Code::BadRequest, text));
        }
        Ok(queues)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rocketmq::status::ok;
    use crate::shard_limits::Limits;
    use http_body_util::BodyExt;
    use rmqproto::rocketmq_v2::{Encoding, MessageType, Resource, SystemProperties};

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

    async fn send(sender: &MessageSender, messages: Vec<Message>) -> SendMessageResponse {
        let raw = SendMessageRequest { messages }.encode_to_vec();
        let peer = "127.0.0.1:4321".parse().unwrap();
        let response = sender.send(Bytes::from(raw), peer).await;
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let message = grpc::unframe(&body).expect("one message");
        SendMessageResponse::decode(message).unwrap()
    }

    #[tokio::test]
    async fn a_request_is_stored_per_queue_and_answered_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let (sender, store) = sender(dir.path());
        let mut refused = message("refused", None);
        refused.body = Bytes::new();
        let answer = send(&sender, vec![refused]).await;
        assert_eq!(answer.status.unwrap().code, Code::MessageBodyEmpty as i32);
        let group_queue = [0, 2][crc32fast::hash(b"g") as usize % 2];
        let ids = ["m1", "m2", "g1", "m3", "g2"];
        let messages = ids
            .iter()
            .map(|id| message(id, id.strip_prefix('g').map(|_| "g")))
            .collect();
        let response = send(&sender, messages).await;
        assert_eq!(response.status, Some(ok()));
        let answered: Vec<_> = response
            .entries
            .iter()
            .map(|e| (e.message_id.as_str(), e.offset))
            .collect();
        // Turns start at 1 (the refused message took none):
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
        let stored = store
            .pull(rmqcore::PullQuery::new("t", group_queue, 0, 10))
            .unwrap();
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
        let response = send(&sender, vec![message("m1", None), message("m2", None)]).await;
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

    #[tokio::test]
    async fn a_message_the_engine_refuses_is_answered_alone_and_the_others_stored() {
        let dir = tempfile::tempdir().unwrap();
        let (sender, store) = sender(dir.path());
        let mut crc = message("crc", Some("g"));
        crc.user_properties.insert("__CRC32#".into(), "1".into());
        let messages = vec![message("g1", Some("g")), crc, message("g2", Some("g"))];
        let response = send(&sender, messages).await;
        let answered: Vec<_> = response
            .entries
            .iter()
            .map(|e| {
                (
                    e.message_id.as_str(),
                    e.status.as_ref().unwrap().code,
                    e.offset,
                )
            })
            .collect();
        let (good, bad) = (Code::Ok as i32, Code::BadRequest as i32);
        assert_eq!(
            answered,
            [("g1", good, 0), ("crc", bad, 0), ("g2", good, 1)]
        );
        assert_eq!(response.status.unwrap().code, bad);
        let group_queue = [0, 2][crc32fast::hash(b"g") as usize % 2];
        assert_eq!(store.max_offset("t", group_queue).unwrap(), 2);
    }

    #[tokio::test]
    async fn an_empty_request_and_an_unknown_topic_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (sender, _store) = sender(dir.path());
        let empty = send(&sender, Vec::new()).await;
        assert_eq!(empty.status.unwrap().code, Code::BadRequest as i32);
        assert!(empty.entries.is_empty());
        let mut elsewhere = message("m", None);
        elsewhere.topic.as_mut().unwrap().name = "nowhere".into();
        let response = send(&sender, vec![elsewhere]).await;
        let status = response.entries[0].status.clone().unwrap();
        assert_eq!(
            status,
            refused(Code::TopicNotFound, "topic 'nowhere' does not exist")
        );
    }
}
