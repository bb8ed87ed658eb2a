//! Lookups without the index: a msgId names its record (and nothing else), and
//! `offset_for_time` equals a linear scan of the queue with the documented edges.

use rmqcore::record::msg_id::create_msg_id;
use rmqcore::{Error, MessageDraft, Store, StoreOptions};

#[test]
fn msg_ids_round_trip_and_wrong_ids_are_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
    let results: Vec<_> = (0..20u8)
        .map(|n| {
            store
                .put(
                    "T",
                    0,
                    &MessageDraft {
                        body: &[n; 9],
                        ..MessageDraft::default()
                    },
                )
                .unwrap()
        })
        .collect();
    for (n, result) in results.iter().enumerate() {
        let message = store.get_by_msg_id(&result.msg_id()).unwrap();
        assert_eq!(
            (message.commitlog_offset, message.body.clone()),
            (result.commitlog_offset, vec![n as u8; 9])
        );
        assert_eq!(
            store
                .get_by_msg_id(&result.msg_id().to_lowercase())
                .unwrap()
                .msg_id,
            result.msg_id()
        );
    }
    let host = store.options().store_host;
    let inside_a_record = create_msg_id(&host, results[3].commitlog_offset + 5);
    let past_the_end = create_msg_id(&host, store.commit_log().write_offset() as i64 + 100);
    let other_host = create_msg_id(
        &"10.0.0.9:10911".parse().unwrap(),
        results[3].commitlog_offset,
    );
    for id in [inside_a_record, past_the_end, other_host] {
        assert!(
            matches!(store.get_by_msg_id(&id), Err(Error::NotFound(_))),
            "{id}"
        );
    }
    for id in ["", "XYZ", "0A", &results[0].msg_id()[..30]] {
        assert!(
            matches!(store.get_by_msg_id(id), Err(Error::InvalidArgument { .. })),
            "{id:?}"
        );
    }
}

#[test]
fn offset_for_time_equals_a_linear_scan() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
    store.create_topic("T", 4).unwrap();
    assert_eq!(
        store.offset_for_time("T", 1, 0).unwrap(),
        0,
        "a queue never written"
    );
    let mut times = Vec::new();
    for n in 0..60 {
        times.push(
            store
                .put(
                    "T",
                    0,
                    &MessageDraft {
                        body: b"x",
                        ..MessageDraft::default()
                    },
                )
                .unwrap()
                .store_timestamp,
        );
        if n % 10 == 0 {
            std::thread::sleep(std::time::Duration::from_millis(3));
        }
    }
    let linear = |timestamp: i64| {
        times
            .iter()
            .position(|time| *time >= timestamp)
            .unwrap_or(times.len()) as i64
    };
    let mut probes = vec![
        0,
        i64::MIN,
        i64::MAX,
        times[0] - 1,
        *times.last().unwrap() + 1,
    ];
    for time in &times {
        probes.extend([time - 1, *time, time + 1]);
    }
    for probe in probes {
        assert_eq!(
            store.offset_for_time("T", 0, probe).unwrap(),
            linear(probe),
            "at {probe}"
        );
    }
    assert_eq!(
        store.offset_for_time("T", 0, 0).unwrap(),
        store.min_offset("T", 0).unwrap()
    );
    assert_eq!(
        store.offset_for_time("T", 0, i64::MAX).unwrap(),
        store.max_offset("T", 0).unwrap()
    );
    assert!(matches!(
        store.offset_for_time("Nope", 0, 0),
        Err(Error::NotFound(_))
    ));
    assert!(matches!(
        store.offset_for_time("T", -1, 0),
        Err(Error::InvalidArgument { .. })
    ));
}
