//! `apache.rocketmq.v2.MessagingService/ReceiveMessage` answered from the engine, the
//! way `python/rmq/rocketmq/servicer.py` answers it: the topic's queues in this process
//! (the one asked for first) are claimed for the group (`claim.rs`, on the lease book the
//! Python path shares), waiting up to the long-polling time for a message to arrive, and
//! the answer streams a status, the delivery time, then each message.
//!
//! Anything unusual is declined, before a lease is taken, to the Python path, which
//! answers it precisely: a malformed request, a SQL filter, a topic this process does
//! not serve, and a queue with a message out of delivery attempts (the Python path moves
//! it to the group's dead-letter topic, which may live in another process).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::HeaderMap;
use prost::Message as _;
use rmqcore::tag_filter::TagFilter;
use rmqcore::Store;
use rmqproto::rocketmq_v2::receive_message_response::Content;
use rmqproto::rocketmq_v2::{
    Code, FilterExpression, FilterType, ReceiveMessageRequest, ReceiveMessageResponse, Status,
};

use super::claim::{claim, has_exhausted, Claim, Delivery, Lost};
use super::lease_book::LeaseBook;
use super::outgoing::{delivered, millis, timestamp};
use super::status::{ok, status_for};
use crate::grpc;
use crate::shard::{Outcome, Shard};

/// Bounds of a receive's invisible duration (RocketMQ's proxy: 10 s to 12 h; rmq lets
/// tests and impatient consumers go down to 1 s). The Python path's are the same.
pub const MIN_INVISIBLE_MS: i64 = 1_000;
pub const MAX_INVISIBLE_MS: i64 = 12 * 3600 * 1000;
/// A PushConsumer asks the broker to keep its messages invisible while it works on them.
const AUTO_RENEW_INVISIBLE_MS: i64 = 60_000;
const DEFAULT_WAIT: Duration = Duration::from_secs(20);
const MAX_WAIT: Duration = Duration::from_secs(30);
const MAX_RECEIVE_BATCH: i32 = 1024;
/// Sends wake a waiting receive only for the queue it asked for; the others, and
/// redeliveries, are looked at again at least this often.
const RECHECK: Duration = Duration::from_secs(1);

/// What the consume side of a shard process shares with its Python path: each store's
/// lease book, and the groups' policy.
pub struct Consumption {
    pub books: HashMap<i32, Arc<LeaseBook>>,
    pub max_attempts: i32,
}

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// One queue to claim from: its id, store and book.
type Place = (i32, Arc<Store>, Arc<LeaseBook>);

struct Asked {
    group: String,
    topic: String,
    batch: usize,
    invisible_ms: i64,
    wait: Duration,
    filter: Option<TagFilter>,
    places: Vec<Place>,
}

pub struct Receiver {
    shard: Arc<Shard>,
    consumption: Arc<Consumption>,
}

impl Receiver {
    pub fn new(shard: Arc<Shard>, consumption: Arc<Consumption>) -> Self {
        Receiver { shard, consumption }
    }

    pub async fn receive(&self, raw: &[u8], headers: &HeaderMap) -> Outcome {
        let Some(asked) = self.accept(raw, grpc::timeout(headers)) else {
            return Outcome::Decline;
        };
        let now = now_ms();
        let exhausted = asked.places.iter().any(|(queue_id, _, book)| {
            has_exhausted(book, &asked.claim_of(*queue_id, 0, now, &self.consumption))
        });
        if exhausted {
            return Outcome::Decline;
        }
        let asked = Arc::new(asked);
        let deadline = Instant::now() + asked.wait;
        let first = asked.places[0].0;
        loop {
            let version = self.shard.signals.version(&asked.topic, first);
            let (job, consumption) = (Arc::clone(&asked), Arc::clone(&self.consumption));
            let found = tokio::task::spawn_blocking(move || job.claim_all(&consumption)).await;
            let (found, lost) = match found {
                Ok(Ok(found)) => found,
                Ok(Err(error)) => return answer(vec![status_frame(status_for(&error))]),
                Err(_) => return Outcome::Decline,
            };
            let remaining = deadline.saturating_duration_since(Instant::now());
            if !found.is_empty() || !lost.is_empty() || remaining.is_zero() {
                return answer(frames(&asked, found, &lost));
            }
            let pause = remaining.min(RECHECK);
            self.shard
                .signals
                .wait(&asked.topic, first, version, pause)
                .await;
        }
    }

    /// The request as the Python path reads it (`servicer._receive_request`); `None`
    /// declines it.
    fn accept(&self, raw: &[u8], time_left: Option<Duration>) -> Option<Asked> {
        let request = ReceiveMessageRequest::decode(raw).ok()?;
        let group = request.group?.name;
        rmqcore::topic::validate_group(&group).ok()?;
        let queue = request.message_queue?;
        let topic = queue.topic?.name;
        let invisible_ms = match (&request.invisible_duration, request.auto_renew) {
            (Some(duration), _) => millis(duration),
            (None, true) => AUTO_RENEW_INVISIBLE_MS,
            (None, false) => return None,
        };
        if !(MIN_INVISIBLE_MS..=MAX_INVISIBLE_MS).contains(&invisible_ms) {
            return None;
        }
        let mut wait = match &request.long_polling_timeout {
            Some(duration) => Duration::from_millis(u64::try_from(millis(duration)).ok()?),
            None => DEFAULT_WAIT,
        };
        if let Some(left) = time_left {
            wait = wait.min(left.saturating_sub(Duration::from_millis(500)));
        }
        if !(1..=MAX_RECEIVE_BATCH).contains(&request.batch_size) {
            return None;
        }
        let filter = tag_filter(request.filter_expression.as_ref())?;
        let mut local = self.shard.local_queues(&topic)?;
        if local.is_empty() {
            return None;
        }
        local.sort_by_key(|(queue_id, _)| (*queue_id != queue.id, *queue_id));
        let places = local
            .into_iter()
            .map(|(queue_id, store)| {
                let book = self.consumption.books.get(&self.shard.shard_of(&store)?)?;
                Some((queue_id, store, Arc::clone(book)))
            })
            .collect::<Option<Vec<Place>>>()?;
        Some(Asked {
            group,
            topic,
            batch: request.batch_size as usize,
            invisible_ms,
            wait: wait.min(MAX_WAIT),
            filter,
            places,
        })
    }
}

impl Asked {
    fn claim_of(&self, queue_id: i32, room: usize, now_ms: i64, c: &Consumption) -> Claim<'_> {
        Claim {
            group: &self.group,
            topic: &self.topic,
            queue_id,
            room,
            filter: self.filter.as_ref(),
            invisible_ms: self.invisible_ms,
            max_attempts: c.max_attempts,
            now_ms,
        }
    }

    /// Claim from each queue in turn until the batch is full. A message that runs out of
    /// attempts meanwhile stays leased, due: the next receive is declined to the Python
    /// path for it. Also the ranges passed over as lost with a tier object.
    fn claim_all(&self, consumption: &Consumption) -> rmqcore::Result<(Vec<Delivery>, Vec<Lost>)> {
        let now = now_ms();
        let mut found = Vec::new();
        let mut lost = Vec::new();
        for (queue_id, store, book) in &self.places {
            let room = self.batch - found.len();
            let ask = self.claim_of(*queue_id, room, now, consumption);
            let claimed = claim(book, store, &ask)?;
            found.extend(claimed.deliveries);
            lost.extend(claimed.lost);
            if found.len() >= self.batch {
                break;
            }
        }
        Ok((found, lost))
    }
}

/// The tags a receive asks for (`Some(None)` for all), as `message_codec.tag_filter`
/// reads them; `None` declines SQL and malformed expressions.
fn tag_filter(expression: Option<&FilterExpression>) -> Option<Option<TagFilter>> {
    let Some(expression) = expression else {
        return Some(None);
    };
    if expression.r#type == FilterType::Sql as i32 {
        return None;
    }
    let text = expression.expression.trim();
    if text.is_empty() || text == "*" {
        return Some(None);
    }
    let tags: Vec<&str> = text.split("||").map(str::trim).collect();
    if tags.iter().any(|tag| tag.is_empty() || *tag == "*") {
        return None;
    }
    Some(TagFilter::new(tags))
}

fn status_frame(status: Status) -> Vec<u8> {
    ReceiveMessageResponse {
        content: Some(Content::Status(status)),
    }
    .encode_to_vec()
}

/// The answer's status words say what was passed over as lost: the protocol has no
/// field for it, and the clients log a status's message.
fn lost_words(topic: &str, lost: &[Lost]) -> String {
    let count: i64 = lost.iter().map(|l| l.to - l.from).sum();
    let ranges: Vec<String> = lost
        .iter()
        .map(|l| format!("{topic}/{} offsets {}..{}", l.queue_id, l.from, l.to))
        .collect();
    format!(
        "{count} messages lost with a tier object were skipped ({})",
        ranges.join(", ")
    )
}

fn frames(asked: &Asked, found: Vec<Delivery>, lost: &[Lost]) -> Vec<Vec<u8>> {
    if found.is_empty() {
        let none = Status {
            code: Code::MessageNotFound as i32,
            message: if lost.is_empty() {
                "no new message".to_owned()
            } else {
                format!("no new message; {}", lost_words(&asked.topic, lost))
            },
        };
        return vec![status_frame(none)];
    }
    let mut frames = Vec::with_capacity(found.len() + 2);
    let mut status = ok();
    if !lost.is_empty() {
        status.message = format!("OK; {}", lost_words(&asked.topic, lost));
    }
    frames.push(status_frame(status));
    // When the messages left the broker: the clients measure delivery latency by it.
    let sent_at = ReceiveMessageResponse {
        content: Some(Content::DeliveryTimestamp(timestamp(now_ms()))),
    };
    frames.push(sent_at.encode_to_vec());
    for delivery in found {
        let frame = ReceiveMessageResponse {
            content: Some(Content::Message(delivered(delivery, asked.invisible_ms))),
        };
        frames.push(frame.encode_to_vec());
    }
    frames
}

fn answer(frames: Vec<Vec<u8>>) -> Outcome {
    Outcome::Answer(grpc::ok_stream(frames.into_iter().map(Bytes::from)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expression(kind: FilterType, text: &str) -> FilterExpression {
        FilterExpression {
            r#type: kind as i32,
            expression: text.to_owned(),
        }
    }

    #[test]
    fn tag_expressions_read_as_the_python_path_reads_them() {
        assert!(matches!(tag_filter(None), Some(None)));
        for everything in ["", " * ", "*"] {
            let all = tag_filter(Some(&expression(FilterType::Tag, everything)));
            assert!(matches!(all, Some(None)), "{everything:?}");
        }
        let some = tag_filter(Some(&expression(FilterType::Tag, "a || b"))).unwrap();
        let filter = some.expect("a filter");
        assert!(filter.matches_tag(Some(b"b")) && !filter.matches_tag(Some(b"c")));
        for declined in ["a ||", "a || *", "||"] {
            let answer = tag_filter(Some(&expression(FilterType::Tag, declined)));
            assert!(answer.is_none(), "{declined:?}");
        }
        assert!(tag_filter(Some(&expression(FilterType::Sql, "a > 1"))).is_none());
    }
}
