//! A record that does not fit (with the 8-byte blank) closes its segment with a blank and
//! goes to offset 0 of the next one.

use rmqcore::big_endian::read_i32;
use rmqcore::record::{record_length, BLANK_MAGIC};
use rmqcore::{MessageDraft, PullQuery, Store, StoreOptions};

fn options() -> StoreOptions {
    StoreOptions {
        commitlog_segment_size: 4096,
        ..StoreOptions::default()
    }
}

fn put_body(store: &Store, body: &[u8]) -> rmqcore::PutResult {
    let draft = MessageDraft {
        body,
        ..Default::default()
    };
    store.put("T", 0, &draft).unwrap()
}

fn body_for_record_length(store: &Store, topic: &str, length: usize) -> Vec<u8> {
    let draft = MessageDraft {
        body: b"",
        ..Default::default()
    };
    let mut encoded = Vec::new();
    let prepared = draft.prepare(1 << 20, true, &mut encoded).unwrap();
    let input = rmqcore::record::RecordInput {
        topic,
        queue_id: 0,
        flag: 0,
        body: b"",
        body_crc: 0,
        body_crc32: None,
        properties: prepared.properties(&encoded),
        sys_flag: 0,
        born_timestamp: 0,
        born_host: store.options().store_host,
        store_host: store.options().store_host,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    };
    vec![b'x'; length - record_length(&input)]
}

#[test]
fn a_record_that_exactly_does_not_fit_forces_a_blank() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), options()).unwrap();
    let first = body_for_record_length(&store, "T", 4096 - 200);
    put_body(&store, &first);
    // 200 bytes remain: a 193-byte record leaves 7 < 8 for the blank, so it must roll.
    let second = body_for_record_length(&store, "T", 193);
    let result = put_body(&store, &second);
    assert_eq!(result.commitlog_offset, 4096);
    let segment = std::fs::read(dir.path().join("commitlog").join("00000000000000000000")).unwrap();
    assert_eq!(
        read_i32(&segment, 3896),
        200,
        "blank TOTALSIZE is the remaining length"
    );
    assert_eq!(read_i32(&segment, 3900), BLANK_MAGIC);
    assert!(
        segment[3904..].iter().all(|b| *b == 0),
        "only the blank's 8 bytes are written"
    );

    // 192 bytes leave exactly 8: that fits in the same segment.
    let third_dir = tempfile::tempdir().unwrap();
    let store = Store::open(third_dir.path(), options()).unwrap();
    put_body(&store, &first);
    let fits = body_for_record_length(&store, "T", 192);
    let result = put_body(&store, &fits);
    assert_eq!(result.commitlog_offset, 3896);
}

#[test]
fn messages_survive_reopening_across_rolls() {
    let dir = tempfile::tempdir().unwrap();
    let bodies: Vec<Vec<u8>> = (0..200)
        .map(|i| vec![(i % 251) as u8; i * 7 % 300])
        .collect();
    {
        let store = Store::open(dir.path(), options()).unwrap();
        for body in &bodies {
            store
                .put(
                    "Roll",
                    1,
                    &MessageDraft {
                        body,
                        ..Default::default()
                    },
                )
                .unwrap();
        }
        store.close().unwrap();
    }
    let store = Store::open(dir.path(), options()).unwrap();
    assert!(store.commit_log().segments().segments().len() > 5);
    let pulled = store.pull(PullQuery::new("Roll", 1, 0, 1000)).unwrap();
    let read: Vec<Vec<u8>> = pulled.messages.into_iter().map(|m| m.body).collect();
    assert_eq!(read, bodies);
}
