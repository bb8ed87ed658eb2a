//! `rmq.v1.Shard/QueueOffsets` and `FetchOffsets` answered straight from the engine: a
//! queue's bounds, and a group's committed offsets. A consumer asks both of every queue
//! before its first pull; through the process's Python server those calls took 3-35 ms
//! of a 50,000-message read of 30-90 ms (2 shards, 8 queues), waiting on its threads
//! while the shard wrote back what was just produced. The checks and their words are the
//! Python server's (`ShardHandler.queue_offsets` and `fetch_offsets`): the group, then
//! each queue as `Shard::locate` finds it.

use http::Response;
use prost::Message as _;
use rmqproto::v1::{
    FetchOffsetsRequest, FetchOffsetsResponse, QueueOffset, QueueOffsetsRequest,
    QueueOffsetsResponse,
};

use crate::grpc::{self, Body};
use crate::shard::{refused, Shard};
use crate::status::Refusal;

impl Shard {
    pub fn queue_offsets(&self, raw: &[u8]) -> Response<Body> {
        match self.queue_offsets_checked(raw) {
            Ok(answer) => grpc::ok_message(&answer),
            Err(refusal) => refused(&refusal),
        }
    }

    pub fn fetch_offsets(&self, raw: &[u8]) -> Response<Body> {
        match self.fetch_offsets_checked(raw) {
            Ok(answer) => grpc::ok_message(&answer),
            Err(refusal) => refused(&refusal),
        }
    }

    fn queue_offsets_checked(&self, raw: &[u8]) -> Result<QueueOffsetsResponse, Refusal> {
        let request = QueueOffsetsRequest::decode(raw).map_err(|error| {
            Refusal::Malformed(format!("malformed QueueOffsetsRequest: {error}"))
        })?;
        let (topic, queue_id) = (request.topic.as_str(), request.queue_id);
        let (_, store) = self.locate(topic, queue_id)?;
        Ok(QueueOffsetsResponse {
            min_offset: store.min_offset(topic, queue_id)?,
            max_offset: store.max_offset(topic, queue_id)?,
        })
    }

    fn fetch_offsets_checked(&self, raw: &[u8]) -> Result<FetchOffsetsResponse, Refusal> {
        let request = FetchOffsetsRequest::decode(raw).map_err(|error| {
            Refusal::Malformed(format!("malformed FetchOffsetsRequest: {error}"))
        })?;
        rmqcore::topic::validate_group(&request.group)?;
        let mut offsets = Vec::new();
        for &queue_id in &request.queue_ids {
            let (_, store) = self.locate(&request.topic, queue_id)?;
            if let Some(offset) =
                store.committed_offset(&request.group, &request.topic, queue_id)?
            {
                offsets.push(QueueOffset { queue_id, offset });
            }
        }
        Ok(FetchOffsetsResponse { offsets })
    }
}
