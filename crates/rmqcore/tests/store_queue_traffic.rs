//! `Store::queue_traffic`: each queue's messages and body bytes in and out, in both forms
//! of consume queue, agreeing with the store-wide counters, and counting only what a put
//! stored and a pull handed out.

use rmqcore::consume_queue::TrafficSnapshot;
use rmqcore::tag_filter::TagFilter;
use rmqcore::{ConsumeQueueType, MessageDraft, PullQuery, Store, StoreOptions};

fn open(root: &std::path::Path, form: ConsumeQueueType) -> Store {
    let options = StoreOptions {
        consume_queue_type: Some(form),
        max_message_size: 1024,
        ..StoreOptions::default()
    };
    Store::open(root, options).unwrap()
}

fn draft<'a>(body: &'a [u8], tags: &str) -> MessageDraft<'a> {
    MessageDraft {
        body,
        tags: Some(tags.to_string().into()),
        ..MessageDraft::default()
    }
}

fn traffic(store: &Store) -> Vec<(String, i32, TrafficSnapshot)> {
    store
        .queue_traffic()
        .into_iter()
        .map(|queue| (queue.topic, queue.queue_id, queue.traffic))
        .collect()
}

fn counts(messages_in: u64, bytes_in: u64, messages_out: u64, bytes_out: u64) -> TrafficSnapshot {
    TrafficSnapshot {
        messages_in,
        bytes_in,
        messages_out,
        bytes_out,
    }
}

fn check_form(form: ConsumeQueueType) {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), form);
    let body = [7u8; 100];
    // "orders": 5 messages of 100 bytes on queue 0 (tags a, b, a, b, a), one of 3 on 1.
    let batch: Vec<MessageDraft<'_>> = (0..5)
        .map(|i| draft(&body, if i % 2 == 0 { "a" } else { "b" }))
        .collect();
    store.put_batch("orders", 0, &batch).unwrap();
    store.put("orders", 1, &draft(b"abc", "a")).unwrap();
    // "audit": 2 messages of 10 bytes.
    store
        .put_batch("audit", 0, &[draft(&[1; 10], "x"), draft(&[2; 10], "x")])
        .unwrap();
    // A put the store refuses counts nothing.
    let too_big = [0u8; 2048];
    assert!(store.put("audit", 0, &draft(&too_big, "x")).is_err());

    // Reads: 2 from orders/0, then the rest of it filtered to tag "a" (offsets 2 and 4),
    // an empty poll at its end, and one read of audit capped at 15 bytes (one message).
    assert_eq!(
        store
            .pull(PullQuery::new("orders", 0, 0, 2))
            .unwrap()
            .messages
            .len(),
        2
    );
    let only_a = TagFilter::new(["a"]).unwrap();
    let filtered = store
        .pull(PullQuery::new("orders", 0, 2, 32).with_filter(Some(&only_a)))
        .unwrap();
    assert_eq!(filtered.messages.len(), 2);
    assert!(store
        .pull(PullQuery::new("orders", 0, 5, 32))
        .unwrap()
        .messages
        .is_empty());
    let capped = store
        .pull(PullQuery::new("audit", 0, 0, 32).with_max_bytes(Some(15)))
        .unwrap();
    assert_eq!(capped.messages.len(), 1);

    assert_eq!(
        traffic(&store),
        vec![
            ("audit".to_string(), 0, counts(2, 20, 1, 10)),
            ("orders".to_string(), 0, counts(5, 500, 4, 400)),
            ("orders".to_string(), 1, counts(1, 3, 0, 0)),
        ],
        "{form:?}"
    );
    // The queues' counters add up to the store's.
    let metrics = store.metrics();
    assert_eq!((metrics.messages_put, metrics.body_bytes_put), (8, 523));
    assert_eq!((metrics.messages_read, metrics.body_bytes_read), (5, 410));

    // Counters count since open: a reopened store lists its queues at zero.
    store.close().unwrap();
    let store = open(dir.path(), form);
    let after: Vec<TrafficSnapshot> = traffic(&store).into_iter().map(|(_, _, t)| t).collect();
    assert_eq!(after, vec![TrafficSnapshot::default(); 3], "{form:?}");
    store.close().unwrap();
}

#[test]
fn file_queues_count_their_traffic() {
    check_form(ConsumeQueueType::File);
}

#[test]
fn rocksdb_queues_count_their_traffic() {
    check_form(ConsumeQueueType::RocksDb);
}
