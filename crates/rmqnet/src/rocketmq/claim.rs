//! Handing out one queue's messages to a consumer group: first what is due again (its
//! invisible time over, not acked), then messages never handed out, each leased for the
//! receive's invisible duration. The one copy of this rule: the native `ReceiveMessage`
//! (`receive.rs`) and the Python path (through the binding) both claim here.

use rmqcore::record::message::StoredMessage;
use rmqcore::tag_filter::TagFilter;
use rmqcore::{PullQuery, Store};

use super::lease_book::LeaseBook;
use super::properties::MESSAGE_GROUP;

/// What a receive asks of one queue.
pub struct Claim<'a> {
    pub group: &'a str,
    pub topic: &'a str,
    pub queue_id: i32,
    pub room: usize,
    pub filter: Option<&'a TagFilter>,
    pub invisible_ms: i64,
    /// Deliveries after which a message goes to the group's dead-letter topic.
    pub max_attempts: i32,
    pub now_ms: i64,
}

/// A message handed out, with the delivery it is.
pub struct Delivery {
    pub message: StoredMessage,
    pub attempt: i32,
    pub deadline_ms: i64,
}

/// Offsets `from..to` of a queue, lost with a tier object and passed over for the group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lost {
    pub queue_id: i32,
    pub from: i64,
    pub to: i64,
}

/// What a claim hands out, and what it passed over.
#[derive(Default)]
pub struct Claimed {
    pub deliveries: Vec<Delivery>,
    /// Due again but out of attempts: for the dead-letter topic.
    pub exhausted: Vec<Exhausted>,
    /// Ranges lost with a tier object: the group went on past them.
    pub lost: Vec<Lost>,
}

/// At most this many lost objects are passed over in one claim (each pass moves forward,
/// so the bound only keeps one claim short).
const MOST_LOST_PER_CLAIM: usize = 64;

/// A message due again that has been delivered `attempt` times, the most allowed: it stays
/// leased until whoever claimed moves it to the dead-letter topic and settles it.
pub struct Exhausted {
    pub message: StoredMessage,
    pub attempt: i32,
}

pub fn is_ordered(message: &StoredMessage) -> bool {
    message
        .properties
        .iter()
        .any(|(name, _)| name == MESSAGE_GROUP)
}

/// Whether the group has a message of the queue that is due and out of attempts (the
/// native path leaves dead letters to the Python one, which can send them elsewhere).
pub fn has_exhausted(book: &LeaseBook, claim: &Claim<'_>) -> bool {
    book.with_existing(claim.group, claim.topic, claim.queue_id, |queue| {
        queue
            .due(claim.now_ms)
            .iter()
            .any(|(_, lease)| lease.attempt >= claim.max_attempts)
    })
    .unwrap_or(false)
}

/// Claim up to `claim.room` messages of the queue for the group. Messages lost with a
/// tier object (the engine's error names where the queue goes on) are passed over: the
/// group's position moves past them, the count is logged, and `Claimed::lost` says so.
pub fn claim(book: &LeaseBook, store: &Store, claim: &Claim<'_>) -> rmqcore::Result<Claimed> {
    let (topic, queue_id, now) = (claim.topic, claim.queue_id, claim.now_ms);
    let deadline_ms = now + claim.invisible_ms;
    let mut out = Vec::new();
    let mut exhausted = Vec::new();
    let mut lost = Vec::new();
    if claim.room == 0 {
        return Ok(Claimed::default());
    }
    let min_offset = store.min_offset(topic, queue_id)?;
    let mut held = book.hold(store, claim.group, topic, queue_id)?;
    let queue = held.queue();
    queue.skip_to(min_offset);
    for (offset, lease) in queue.due(now) {
        if out.len() >= claim.room {
            break;
        }
        let Some(message) = message_at(store, topic, queue_id, offset)? else {
            queue.settle(offset);
            continue;
        };
        if lease.attempt >= claim.max_attempts {
            exhausted.push(Exhausted {
                message,
                attempt: lease.attempt,
            });
            continue;
        }
        let attempt = lease.attempt + 1;
        queue.lease(offset, attempt, deadline_ms, is_ordered(&message));
        out.push(Delivery {
            message,
            attempt,
            deadline_ms,
        });
    }
    if !queue.blocked(now) && out.len() < claim.room {
        let mut start = queue.next();
        let pulled = loop {
            let query = PullQuery::new(topic, queue_id, start, claim.room - out.len());
            match store.pull(query.with_filter(claim.filter)) {
                Ok(pulled) => break pulled,
                Err(error) => match error.resume_offset() {
                    Some(resume) if resume > start && lost.len() < MOST_LOST_PER_CLAIM => {
                        eprintln!(
                            "WARNING rmq RocketMQ consume: group {} skips {} messages of \
                             {topic}/{queue_id} (offsets {start}..{resume}) lost with a tier \
                             object: {error}",
                            claim.group,
                            resume - start,
                        );
                        queue.pass_lost(start, resume);
                        lost.push(Lost {
                            queue_id,
                            from: start,
                            to: resume,
                        });
                        start = resume;
                    }
                    _ => return Err(error),
                },
            }
        };
        let mut taken = std::collections::HashSet::new();
        for message in pulled.messages {
            taken.insert(message.queue_offset);
            queue.lease(message.queue_offset, 1, deadline_ms, is_ordered(&message));
            out.push(Delivery {
                message,
                attempt: 1,
                deadline_ms,
            });
        }
        // What the pull passed over is not for this group's filter: done with it.
        for offset in start..pulled.next_offset {
            if !taken.contains(&offset) && !queue.is_leased(offset) {
                queue.settle(offset);
            }
        }
    }
    Ok(Claimed {
        deliveries: out,
        exhausted,
        lost,
    })
}

/// The message at `offset`, `None` when retention has removed it or it was lost with a
/// tier object (the engine then names where the queue goes on).
pub fn message_at(
    store: &Store,
    topic: &str,
    queue_id: i32,
    offset: i64,
) -> rmqcore::Result<Option<StoredMessage>> {
    match store.pull(PullQuery::new(topic, queue_id, offset, 1)) {
        Ok(pulled) => Ok(pulled
            .messages
            .into_iter()
            .next()
            .filter(|m| m.queue_offset == offset)),
        Err(rmqcore::Error::OffsetOutOfRange { .. }) => Ok(None),
        Err(error) if error.resume_offset().is_some() => Ok(None),
        Err(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmqcore::MessageDraft;

    fn put(store: &Store, body: &[u8], properties: Vec<(String, String)>) {
        let draft = MessageDraft {
            body,
            tags: None,
            keys: Default::default(),
            properties,
            flag: 0,
            born_timestamp: None,
            born_host: None,
        };
        store.put_batch("t", 0, &[draft]).unwrap();
    }

    fn ask(now_ms: i64) -> Claim<'static> {
        Claim {
            group: "g",
            topic: "t",
            queue_id: 0,
            room: 10,
            filter: None,
            invisible_ms: 100,
            max_attempts: 2,
            now_ms,
        }
    }

    #[test]
    fn unacked_messages_come_again_until_their_attempts_run_out() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), Default::default()).unwrap();
        store.create_topic("t", 1).unwrap();
        let book = LeaseBook::open(dir.path()).unwrap();
        put(&store, b"a", vec![]);
        put(&store, b"b", vec![]);
        let first = claim(&book, &store, &ask(0)).unwrap().deliveries;
        assert_eq!(first.len(), 2);
        assert!(claim(&book, &store, &ask(50))
            .unwrap()
            .deliveries
            .is_empty());
        book.with_existing("g", "t", 0, |q| assert!(q.ack(0, 1)));
        let again = claim(&book, &store, &ask(100)).unwrap().deliveries;
        let seen: Vec<_> = again
            .iter()
            .map(|d| (d.message.queue_offset, d.attempt))
            .collect();
        assert_eq!(seen, [(1, 2)]);
        assert!(!has_exhausted(&book, &ask(199)));
        assert!(has_exhausted(&book, &ask(200)));
        let claimed = claim(&book, &store, &ask(200)).unwrap();
        assert!(claimed.deliveries.is_empty());
        assert_eq!(claimed.exhausted.len(), 1);
        assert_eq!(claimed.exhausted[0].attempt, 2);
    }

    #[test]
    fn a_message_group_is_handed_out_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), Default::default()).unwrap();
        store.create_topic("t", 1).unwrap();
        let book = LeaseBook::open(dir.path()).unwrap();
        let grouped = vec![(MESSAGE_GROUP.to_owned(), "g1".to_owned())];
        put(&store, b"a", grouped.clone());
        let first = claim(&book, &store, &ask(0)).unwrap().deliveries;
        put(&store, b"b", grouped);
        assert_eq!(first.len(), 1);
        assert!(
            claim(&book, &store, &ask(10))
                .unwrap()
                .deliveries
                .is_empty(),
            "blocked"
        );
        book.with_existing("g", "t", 0, |q| assert!(q.ack(0, 1)));
        let next = claim(&book, &store, &ask(20)).unwrap().deliveries;
        assert_eq!(next[0].message.body, b"b");
    }
}
