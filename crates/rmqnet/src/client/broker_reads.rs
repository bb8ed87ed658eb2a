//! What a stream reader of a running broker asks it, as plain Rust (the JVM stream of
//! `format("rmq")`, crates/rmqjvm, adapts this over JNI): a topic's queues and their
//! offsets from the supervisor (`Route.DescribeTopic`), a queue's offset for a time, and a
//! queue range pulled (`Shard.Pull`, no waiting) straight into column buffers.
//!
//! Calls are retried while their status is retryable (a restarting shard), with a fresh
//! description of the topic in case the queue moved, until the reader's retry time is up:
//! the Python client's behaviour (python/rmq/client/client.py).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::Bytes;
use prost::Message as _;
use rmqcore::segment_decoder::ColumnBatch;
use rmqproto::v1::{
    DescribeTopicRequest, DescribeTopicResponse, OffsetForTimeRequest, OffsetForTimeResponse,
    PullRequest, QueueOffsetsRequest, QueueOffsetsResponse,
};

use super::calls::UnaryCalls;
use super::channels::CallError;
use super::outcome::{code, RETRYABLE};
use super::pull_columns::{append_pull_columns, RowFilter};

const DESCRIBE_TOPIC: &str = "/rmq.v1.Route/DescribeTopic";
const PULL: &str = "/rmq.v1.Shard/Pull";
const QUEUE_OFFSETS: &str = "/rmq.v1.Shard/QueueOffsets";
const OFFSET_FOR_TIME: &str = "/rmq.v1.Shard/OffsetForTime";
/// Each call's own bound, as the Python client's default.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// The most body bytes one pull asks for (as python/rmq/spark/broker_queues.py).
const MAX_PULL_BYTES: i64 = 8 << 20;

/// One queue of a topic as the supervisor describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueInfo {
    pub queue_id: i32,
    /// The shard directory's index (`shard-N`).
    pub shard: i32,
    /// host:port of the shard process serving the queue.
    pub endpoint: String,
    pub min_offset: i64,
    /// The next offset to be written.
    pub max_offset: i64,
}

/// The rows of one range read, and where the read stopped.
pub struct PulledRange {
    pub columns: ColumnBatch,
    /// The offset the next read of the range starts at.
    pub next_offset: i64,
}

/// A broker's supervisor and the connections to its shards.
pub struct BrokerReads {
    supervisor: String,
    calls: UnaryCalls,
    retry_for: Duration,
    /// Per topic, where each queue is served (refreshed when a shard does not answer).
    shards: Mutex<HashMap<String, Vec<String>>>,
}

fn malformed(what: &str) -> CallError {
    CallError {
        code: code::UNKNOWN,
        message: format!("{what}: malformed answer"),
        resume_offset: None,
    }
}

impl BrokerReads {
    /// Calls to the broker whose supervisor is at `supervisor`, with `token` (if any) on
    /// every call, retried for up to `retry_for` while retryable.
    pub fn new(supervisor: &str, token: Option<&str>, retry_for: Duration) -> Result<Self, String> {
        let metadata: Vec<(String, String)> = token
            .map(|token| vec![("authorization".to_owned(), format!("Bearer {token}"))])
            .unwrap_or_default();
        Ok(BrokerReads {
            supervisor: supervisor.to_owned(),
            calls: UnaryCalls::new(CALL_TIMEOUT, &metadata, None)?,
            retry_for,
            shards: Mutex::new(HashMap::new()),
        })
    }

    pub fn supervisor(&self) -> &str {
        &self.supervisor
    }

    /// `call` until it succeeds, fails for good, or the retry time is up; errors name
    /// `what` as the Python client's do ("what: message").
    fn retrying<T>(
        &self,
        what: &str,
        mut call: impl FnMut(bool) -> Result<T, CallError>,
    ) -> Result<T, CallError> {
        let deadline = Instant::now() + self.retry_for;
        let mut pause = Duration::from_millis(50);
        let mut retried = false;
        loop {
            match call(retried) {
                Ok(value) => return Ok(value),
                Err(error) => {
                    if !RETRYABLE.contains(&error.code) || Instant::now() + pause > deadline {
                        return Err(CallError {
                            message: format!("{what}: {}", error.message),
                            ..error
                        });
                    }
                }
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_secs(1));
            retried = true;
        }
    }

    /// The topic's queues, in queue id order.
    pub fn describe(&self, topic: &str) -> Result<Vec<QueueInfo>, CallError> {
        let what = format!("describe topic {topic:?}");
        let request = Bytes::from(
            DescribeTopicRequest {
                topic: topic.to_owned(),
            }
            .encode_to_vec(),
        );
        let raw = self.retrying(&what, |_| {
            self.calls
                .call(&self.supervisor, DESCRIBE_TOPIC, request.clone(), None)
        })?;
        let answer = DescribeTopicResponse::decode(raw).map_err(|_| malformed(&what))?;
        let mut queues: Vec<QueueInfo> = answer
            .queues
            .into_iter()
            .map(|queue| QueueInfo {
                queue_id: queue.queue_id,
                shard: queue.shard,
                endpoint: queue.endpoint,
                min_offset: queue.min_offset,
                max_offset: queue.max_offset,
            })
            .collect();
        queues.sort_by_key(|queue| queue.queue_id);
        let endpoints = queues.iter().map(|queue| queue.endpoint.clone()).collect();
        self.lock_shards().insert(topic.to_owned(), endpoints);
        Ok(queues)
    }

    fn lock_shards(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<String>>> {
        self.shards
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Where `queue_id` of `topic` is served; `refresh` asks the supervisor again.
    fn shard_of(&self, topic: &str, queue_id: i32, refresh: bool) -> Result<String, CallError> {
        if !refresh {
            if let Some(endpoint) = self
                .lock_shards()
                .get(topic)
                .and_then(|endpoints| endpoints.get(queue_id as usize))
            {
                return Ok(endpoint.clone());
            }
        }
        let queues = self.describe(topic)?;
        queues
            .into_iter()
            .find(|queue| queue.queue_id == queue_id)
            .map(|queue| queue.endpoint)
            .ok_or_else(|| CallError {
                code: 11, // OUT_OF_RANGE, as the broker answers for a queue it lacks
                message: format!("topic {topic:?} has no queue {queue_id}"),
                resume_offset: None,
            })
    }

    /// A call on the shard serving `queue_id`, retried with a fresh route.
    fn on_queue(
        &self,
        what: &str,
        topic: &str,
        queue_id: i32,
        method: &'static str,
        request: Bytes,
    ) -> Result<Bytes, CallError> {
        self.retrying(what, |retried| {
            let shard = self.shard_of(topic, queue_id, retried)?;
            self.calls.call(&shard, method, request.clone(), None)
        })
    }

    /// (first offset, next offset to be written) of one queue, asked of its shard.
    pub fn queue_offsets(&self, topic: &str, queue_id: i32) -> Result<(i64, i64), CallError> {
        let what = format!("offsets of {topic}/{queue_id}");
        let request = QueueOffsetsRequest {
            topic: topic.to_owned(),
            queue_id,
        };
        let raw = self.on_queue(
            &what,
            topic,
            queue_id,
            QUEUE_OFFSETS,
            request.encode_to_vec().into(),
        )?;
        let answer = QueueOffsetsResponse::decode(raw).map_err(|_| malformed(&what))?;
        Ok((answer.min_offset, answer.max_offset))
    }

    /// The first offset of the queue stored at or after `timestamp_ms`.
    pub fn offset_for_time(
        &self,
        topic: &str,
        queue_id: i32,
        timestamp_ms: i64,
    ) -> Result<i64, CallError> {
        let what = format!("offset for time {timestamp_ms} of {topic}/{queue_id}");
        let request = OffsetForTimeRequest {
            topic: topic.to_owned(),
            queue_id,
            timestamp: timestamp_ms,
        };
        let raw = self.on_queue(
            &what,
            topic,
            queue_id,
            OFFSET_FOR_TIME,
            request.encode_to_vec().into(),
        )?;
        Ok(OffsetForTimeResponse::decode(raw)
            .map_err(|_| malformed(&what))?
            .offset)
    }

    /// The messages of `queue_id` from `offset` on, below `filter.end_offset`, at most
    /// `max_rows` of them (fewer if the end comes first), with `tags` (any, if empty)
    /// and the filter's keys: pull after pull into one batch. A pull that fails after
    /// rows were gathered ends the batch there (the next read meets the error).
    pub fn pull_range(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_rows: usize,
        tags: &[String],
        filter: &RowFilter<'_>,
    ) -> Result<PulledRange, CallError> {
        let mut columns = ColumnBatch::default();
        let mut at = offset;
        while at < filter.end_offset && columns.rows() < max_rows {
            let wanted = (max_rows - columns.rows()) as i64;
            let request = PullRequest {
                topic: topic.to_owned(),
                queue_id,
                offset: at,
                max_messages: wanted.min(filter.end_offset - at).min(i32::MAX as i64) as i32,
                max_bytes: MAX_PULL_BYTES,
                tags: tags.to_vec(),
                wait_ms: 0,
            };
            let what = format!("pull {topic}/{queue_id} at {at}");
            let raw =
                match self.on_queue(&what, topic, queue_id, PULL, request.encode_to_vec().into()) {
                    Ok(raw) => raw,
                    Err(error) if at == offset => return Err(error),
                    Err(_) => break,
                };
            let next =
                append_pull_columns(&raw, filter, &mut columns).map_err(|_| malformed(&what))?;
            if next <= at {
                // Nothing came: the caller decides what that means (an error below the end).
                break;
            }
            at = next;
        }
        Ok(PulledRange {
            columns,
            next_offset: at,
        })
    }
}
