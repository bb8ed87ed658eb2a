//! `rmq.v1.Shard/Pull` answered straight from the engine: the messages of one queue from
//! an offset, long-polling up to `wait_ms` for the first to arrive, encoded without a
//! message object each (`codec::pull`). A request the broker refuses is answered with its
//! status and the broker's words (`status.rs`), checked in the broker's order: the topic
//! and queue, the offset, then the bounds.

use std::sync::Arc;
use std::time::{Duration, Instant};

use http::Response;
use prost::Message as _;
use rmqcore::{Error, PullQuery, Store};

use crate::codec::pull::{response_tail, PullEncoder};
use crate::grpc::{self, Body};
use crate::shard::{refused, Shard};
use crate::status::Refusal;

/// 0 means `default`; negative is refused; anything above `max` is capped.
fn bounded(value: i64, default: usize, max: usize, what: &str) -> Result<usize, Refusal> {
    match value {
        0 => Ok(default),
        v if v < 0 => Err(Refusal::InvalidArgument(format!("{what} {v} is negative"))),
        v => Ok((v as u64).min(max as u64) as usize),
    }
}

impl Shard {
    pub async fn pull(&self, raw: &[u8], time_left: Option<Duration>) -> Response<Body> {
        match self.pull_checked(raw, time_left).await {
            Ok(response) => response,
            Err(refusal) => refused(&refusal),
        }
    }

    async fn pull_checked(
        &self,
        raw: &[u8],
        time_left: Option<Duration>,
    ) -> Result<Response<Body>, Refusal> {
        let request = rmqproto::v1::PullRequest::decode(raw)
            .map_err(|error| Refusal::Malformed(format!("malformed PullRequest: {error}")))?;
        let (topic, queue_id) = (request.topic.clone(), request.queue_id);
        let (_, store) = self.locate(&topic, queue_id)?;
        if request.offset < 0 {
            let offset = request.offset;
            return Err(Refusal::InvalidArgument(format!(
                "offset {offset} is negative"
            )));
        }
        let limits = self.limits();
        let max_messages = bounded(
            i64::from(request.max_messages),
            limits.default_pull_messages,
            limits.max_pull_messages,
            "max_messages",
        )?;
        let max_bytes = bounded(
            request.max_bytes,
            limits.default_pull_bytes,
            limits.max_pull_bytes,
            "max_bytes",
        )?;
        let wait_ms = bounded(
            i64::from(request.wait_ms),
            0,
            limits.max_wait_ms as usize,
            "wait_ms",
        )?;
        let mut wait = Duration::from_millis(wait_ms as u64);
        if let Some(left) = time_left {
            wait = wait.min(left.saturating_sub(Duration::from_millis(200)));
        }
        let deadline = Instant::now() + wait;
        let filter = rmqcore::tag_filter::TagFilter::new(request.tags.clone());
        let mut offset = request.offset;
        loop {
            let version = self.signals.version(&topic, queue_id);
            let max_offset = store.max_offset(&topic, queue_id)?;
            if offset > max_offset {
                let min_offset = store.min_offset(&topic, queue_id)?;
                return Err(Refusal::OffsetOutOfRange(format!(
                    "offset {offset} of queue {queue_id} of topic '{topic}' is past the end; \
                     the queue holds offsets {min_offset} to {max_offset}"
                )));
            }
            if offset < max_offset {
                let (reader, topic_owned, filter) =
                    (Arc::clone(&store), topic.clone(), filter.clone());
                let pulled = tokio::task::spawn_blocking(move || {
                    let mut encoder = PullEncoder::after_prefix(grpc::FRAME_PREFIX);
                    let query = PullQuery::new(&topic_owned, queue_id, offset, max_messages)
                        .with_filter(filter.as_ref())
                        .with_max_bytes(Some(max_bytes));
                    let pulled = reader.pull_each(query, |view| encoder.push(view))?;
                    Ok::<_, Error>((pulled, encoder.finish()))
                })
                .await
                .map_err(|panic| Refusal::Internal(format!("internal error: {panic}")))?;
                let (pulled, mut encoded) = match pulled {
                    Ok(pulled) => pulled,
                    // Filtered entries came first: answer up to the damaged record, so
                    // that the next pull starts at it and gets the error.
                    Err(Error::Corrupt { .. } | Error::TierObjectChanged { .. })
                        if offset != request.offset =>
                    {
                        return Ok(tail(&store, &topic, queue_id, offset, max_offset)?);
                    }
                    Err(error) => {
                        if matches!(
                            error,
                            Error::Corrupt { .. } | Error::TierObjectChanged { .. }
                        ) {
                            // Lost data is the operator's business: say so in the process's
                            // log (its stderr), as the shard's Python logging does.
                            eprintln!("ERROR rmq data plane: pull of {topic}/{queue_id}: {error}");
                        }
                        return Err(error.into());
                    }
                };
                if pulled.count > 0 || Instant::now() >= deadline {
                    encoded.extend(response_tail(
                        pulled.next_offset,
                        pulled.min_offset,
                        pulled.max_offset,
                    ));
                    return Ok(grpc::ok_in_place(encoded));
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
                return Ok(tail(&store, &topic, queue_id, offset, max_offset)?);
            }
        }
    }
}

/// A response without messages: where the next pull starts, and the queue's bounds.
fn tail(
    store: &Store,
    topic: &str,
    queue_id: i32,
    next_offset: i64,
    max_offset: i64,
) -> Result<Response<Body>, Error> {
    let min_offset = store.min_offset(topic, queue_id)?;
    Ok(grpc::ok(&response_tail(
        next_offset,
        min_offset,
        max_offset,
    )))
}
