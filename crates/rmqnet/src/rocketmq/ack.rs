//! `AckMessage` and `ChangeInvisibleDuration` answered from the engine, as
//! `python/rmq/rocketmq/shard_backend.py` (`ack`, `change_invisible`) answers them, on the
//! lease book both paths share: an ack or a new deadline is taken only for the delivery
//! the receipt names; a receipt of an earlier delivery (acked already, or delivered again
//! since) is refused with `INVALID_RECEIPT_HANDLE`.
//!
//! A request with anything unusual (a malformed receipt, one for another topic, a queue
//! this process does not serve, an invisible duration out of bounds) is declined whole,
//! before anything changes, to the Python path, which explains it precisely.

use std::sync::Arc;

use prost::Message as _;
use rmqproto::rocketmq_v2::{
    AckMessageRequest, AckMessageResponse, AckMessageResultEntry, ChangeInvisibleDurationRequest,
    ChangeInvisibleDurationResponse, Code, Status,
};

use super::lease_book::LeaseBook;
use super::outgoing::millis;
use super::receipt::Receipt;
use super::receive::{now_ms, Consumption, MAX_INVISIBLE_MS};
use super::status::ok;
use crate::grpc;
use crate::shard::{Outcome, Shard};

pub struct Acker {
    shard: Arc<Shard>,
    consumption: Arc<Consumption>,
}

fn stale(receipt: &Receipt) -> Status {
    Status {
        code: Code::InvalidReceiptHandle as i32,
        message: format!(
            "offset {} of queue {} is not out on this receipt (acked already, or delivered \
             again since)",
            receipt.offset, receipt.queue_id
        ),
    }
}

impl Acker {
    pub fn new(shard: Arc<Shard>, consumption: Arc<Consumption>) -> Self {
        Acker { shard, consumption }
    }

    /// The group, topic and decoded receipt, with the book of the receipt's queue, when
    /// all are as expected.
    fn locate(&self, group: &str, topic: &str, handle: &str) -> Option<(Receipt, Arc<LeaseBook>)> {
        rmqcore::topic::validate_group(group).ok()?;
        let receipt = Receipt::decode(handle).filter(|r| r.topic == topic)?;
        let (shard, _) = self.shard.locate(topic, receipt.queue_id).ok()?;
        let book = Arc::clone(self.consumption.books.get(&shard)?);
        Some((receipt, book))
    }

    pub fn ack(&self, raw: &[u8]) -> Outcome {
        let Ok(request) = AckMessageRequest::decode(raw) else {
            return Outcome::Decline;
        };
        let (Some(group), Some(topic)) = (request.group, request.topic) else {
            return Outcome::Decline;
        };
        let located: Option<Vec<_>> = request
            .entries
            .iter()
            .map(|entry| self.locate(&group.name, &topic.name, &entry.receipt_handle))
            .collect();
        let Some(located) = located else {
            return Outcome::Decline;
        };
        let mut entries = Vec::with_capacity(located.len());
        for (entry, (receipt, book)) in request.entries.into_iter().zip(located) {
            let acked = book.with_existing(&group.name, &topic.name, receipt.queue_id, |q| {
                q.ack(receipt.offset, receipt.attempt)
            });
            let status = if acked == Some(true) {
                ok()
            } else {
                stale(&receipt)
            };
            entries.push(AckMessageResultEntry {
                message_id: entry.message_id,
                receipt_handle: entry.receipt_handle,
                status: Some(status),
            });
        }
        let response = AckMessageResponse {
            status: Some(overall(&entries)),
            entries,
        };
        Outcome::Answer(grpc::ok_message(&response))
    }

    pub fn change_invisible(&self, raw: &[u8]) -> Outcome {
        let Ok(request) = ChangeInvisibleDurationRequest::decode(raw) else {
            return Outcome::Decline;
        };
        let (Some(group), Some(topic), Some(duration)) =
            (request.group, request.topic, request.invisible_duration)
        else {
            return Outcome::Decline;
        };
        let invisible_ms = millis(&duration);
        if !(0..=MAX_INVISIBLE_MS).contains(&invisible_ms) {
            return Outcome::Decline;
        }
        let Some((receipt, book)) = self.locate(&group.name, &topic.name, &request.receipt_handle)
        else {
            return Outcome::Decline;
        };
        let deadline_ms = now_ms() + invisible_ms;
        let extended = book.with_existing(&group.name, &topic.name, receipt.queue_id, |q| {
            q.extend(receipt.offset, receipt.attempt, deadline_ms)
        });
        let response = if extended == Some(true) {
            let renewed = Receipt {
                deadline_ms,
                ..receipt
            };
            ChangeInvisibleDurationResponse {
                status: Some(ok()),
                receipt_handle: renewed.encode(),
            }
        } else {
            ChangeInvisibleDurationResponse {
                status: Some(stale(&receipt)),
                receipt_handle: String::new(),
            }
        };
        Outcome::Answer(grpc::ok_message(&response))
    }
}

/// The response's status from its entries' (`servicer._overall`): OK when all are, the
/// one code when they share it, else MULTIPLE_RESULTS.
fn overall(entries: &[AckMessageResultEntry]) -> Status {
    let mut codes: Vec<i32> = entries
        .iter()
        .filter_map(|e| e.status.as_ref().map(|s| s.code))
        .collect();
    codes.sort_unstable();
    codes.dedup();
    match codes.as_slice() {
        [] => ok(),
        [code] if *code == Code::Ok as i32 => ok(),
        [_] => entries[0].status.clone().unwrap_or_else(ok),
        _ => Status {
            code: Code::MultipleResults as i32,
            message: "some entries failed; see each entry's status".to_owned(),
        },
    }
}
