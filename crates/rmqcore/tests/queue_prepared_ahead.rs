//! `Store::prepare_queue`: a new queue's directory and first file, made before its first
//! put, are the ones that put would have made; the queue stays empty (also across a
//! reopen), and a queue that already has files is left alone.

use std::path::{Path, PathBuf};

use rmqcore::{MessageDraft, Store, StoreOptions};

fn queue_file(root: &Path, queue_id: i32) -> PathBuf {
    root.join("consumequeue")
        .join("T")
        .join(queue_id.to_string())
        .join("00000000000000000000")
}

fn put_two(store: &Store, queue_id: i32) {
    let drafts = [b"one".as_slice(), b"two".as_slice()].map(|body| MessageDraft {
        body,
        tags: Some("TagA".into()),
        born_timestamp: Some(1_700_000_000_000),
        ..MessageDraft::default()
    });
    let results = store.put_batch("T", queue_id, &drafts).unwrap();
    let offsets: Vec<_> = results.iter().map(|r| r.queue_offset).collect();
    assert_eq!(offsets, [0, 1]);
}

#[test]
fn a_prepared_queue_is_empty_and_its_first_put_writes_what_an_unprepared_one_does() {
    let prepared = tempfile::tempdir().unwrap();
    let plain = tempfile::tempdir().unwrap();
    let store = Store::open(prepared.path(), StoreOptions::default()).unwrap();
    store.create_topic("T", 2).unwrap();
    store.prepare_queue("T", 1).unwrap();
    assert!(queue_file(prepared.path(), 1).exists());
    assert!(
        !queue_file(prepared.path(), 0).exists(),
        "only the queue asked"
    );
    assert_eq!(store.max_offset("T", 1).unwrap(), 0);
    // Empty across a close and a reopen.
    store.close().unwrap();
    let store = Store::open(prepared.path(), StoreOptions::default()).unwrap();
    assert_eq!(store.max_offset("T", 1).unwrap(), 0);
    put_two(&store, 1);
    store.close().unwrap();

    let other = Store::open(plain.path(), StoreOptions::default()).unwrap();
    other.create_topic("T", 2).unwrap();
    put_two(&other, 1);
    other.close().unwrap();
    let bytes = |root: &Path| std::fs::read(queue_file(root, 1)).unwrap();
    assert!(
        bytes(prepared.path()) == bytes(plain.path()),
        "the same queue file"
    );
}

#[test]
fn a_queue_with_entries_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
    put_two(&store, 0);
    let before = std::fs::read(queue_file(dir.path(), 0)).unwrap();
    store.prepare_queue("T", 0).unwrap();
    assert_eq!(std::fs::read(queue_file(dir.path(), 0)).unwrap(), before);
    assert_eq!(store.max_offset("T", 0).unwrap(), 2);
    assert!(store.prepare_queue("T", -1).is_err());
    store.close().unwrap();
}
