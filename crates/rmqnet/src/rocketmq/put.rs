//! A planned SendMessage put into the store: one `put_batch` per queue, each message
//! answered in request order (`send.rs` checks the messages and plans the queues).

use std::borrow::Cow;
use std::net::SocketAddr;
use std::sync::Arc;

use rmqcore::{MessageDraft, PutResult, Store};
use rmqproto::rocketmq_v2::{Code, SendMessageResponse, SendResultEntry};

use super::check::Checked;
use super::status::{ok, status_for};

/// The messages of one request that go to one queue, in request order.
pub(super) struct Batch {
    pub topic: String,
    pub queue_id: i32,
    pub store: Arc<Store>,
    pub members: Vec<usize>,
}

/// A request's messages: each either accepted (with the queues of its topic) or answered.
pub(super) struct Plan {
    pub checked: Vec<Option<Checked>>,
    pub entries: Vec<Option<SendResultEntry>>,
    pub batches: Vec<Batch>,
}

/// The engine's draft of an accepted message: its fields move into it (the message id
/// stays, for the answer; `UNIQ_KEY` has its copy).
fn draft(message: &mut Checked, peer: SocketAddr) -> MessageDraft<'_> {
    let tags = message.tag.take();
    let keys = std::mem::take(&mut message.keys);
    let properties = std::mem::take(&mut message.properties);
    MessageDraft {
        body: &message.body,
        tags: tags.map(Cow::Owned),
        keys: keys.into_iter().map(Cow::Owned).collect(),
        properties,
        flag: 0,
        born_timestamp: message.born_timestamp,
        born_host: Some(peer),
    }
}

/// Store each batch with one `put_batch`; the response in request order, and the queues
/// that received messages. The engine checks a batch whole before it writes any of it,
/// so when it refuses one, each of its messages is put alone: the one it refuses gets
/// the engine's error, and the others are stored.
pub(super) fn store(plan: Plan, peer: SocketAddr) -> (SendMessageResponse, Vec<(String, i32)>) {
    let Plan {
        mut checked,
        mut entries,
        batches,
    } = plan;
    let mut ids: Vec<String> = checked
        .iter_mut()
        .map(|m| {
            m.as_mut()
                .map(|m| std::mem::take(&mut m.message_id))
                .unwrap_or_default()
        })
        .collect();
    let mut drafts: Vec<Option<MessageDraft<'_>>> = checked
        .iter_mut()
        .map(|message| message.as_mut().map(|message| draft(message, peer)))
        .collect();
    let mut stored = Vec::new();
    for batch in batches {
        let batch_drafts: Vec<MessageDraft<'_>> = batch
            .members
            .iter()
            .filter_map(|&index| drafts[index].take())
            .collect();
        let put = |drafts: &[MessageDraft<'_>]| -> Result<Vec<PutResult>, rmqcore::Error> {
            batch.store.put_batch(&batch.topic, batch.queue_id, drafts)
        };
        let results: Vec<Result<PutResult, rmqcore::Error>> = match put(&batch_drafts) {
            Ok(results) => results.into_iter().map(Ok).collect(),
            Err(_) => batch_drafts
                .iter()
                .map(|draft| put(std::slice::from_ref(draft)).map(|mut one| one.remove(0)))
                .collect(),
        };
        if results.iter().any(Result::is_ok) {
            stored.push((batch.topic.clone(), batch.queue_id));
        }
        for (result, &index) in results.iter().zip(&batch.members) {
            let message_id = std::mem::take(&mut ids[index]);
            entries[index] = Some(match result {
                Ok(result) => SendResultEntry {
                    status: Some(ok()),
                    message_id,
                    offset: result.queue_offset,
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
        .filter_map(|entry| entry.status.as_ref())
        .find(|status| status.code != Code::Ok as i32)
        .cloned();
    let response = SendMessageResponse {
        status: Some(first_failure.unwrap_or_else(ok)),
        entries,
    };
    (response, stored)
}
