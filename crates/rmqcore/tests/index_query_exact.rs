//! Key queries through the store equal a brute-force scan of the log: colliding keys,
//! other topics' keys, multi-key messages, UNIQ_KEY, shared keys across rolled files,
//! max_count and time bounds.

use rmqcore::index::index_keys;
use rmqcore::lookup::KeyQuery;
use rmqcore::{MessageDraft, Store, StoreOptions};

fn options() -> StoreOptions {
    StoreOptions {
        commitlog_segment_size: 64 * 1024,
        index_slot_count: 7,
        index_entry_count: 20,
        ..StoreOptions::default()
    }
}

/// Offsets of the records a query should return, newest first.
fn brute_force(
    store: &Store,
    topic: &str,
    key: &str,
    begin: i64,
    end: i64,
    max: usize,
) -> Vec<i64> {
    let mut found = Vec::new();
    store
        .commit_log()
        .scan(store.commit_log().min_offset(), false, |offset, view| {
            let in_range = (begin..=end).contains(&view.store_timestamp);
            if view.topic == topic.as_bytes()
                && in_range
                && index_keys(view).iter().any(|k| k == key)
            {
                found.push(offset as i64);
            }
            Ok(None)
        })
        .unwrap();
    found.reverse();
    found.truncate(max);
    found
}

fn query(
    store: &Store,
    topic: &str,
    key: &str,
    begin: i64,
    end: Option<i64>,
    max: usize,
) -> Vec<i64> {
    store
        .query_by_key(&KeyQuery::new(topic, key, max).stored_between(begin, end))
        .unwrap()
        .iter()
        .map(|m| m.commitlog_offset)
        .collect()
}

#[test]
fn queries_equal_a_scan_of_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), options()).unwrap();
    let keys_for = |n: usize| -> Vec<String> {
        let mut keys = vec![format!("k{}", n % 13)];
        if n.is_multiple_of(3) {
            keys.push(if n.is_multiple_of(2) {
                "Aa".into()
            } else {
                "BB".into()
            });
        }
        if n.is_multiple_of(5) {
            keys.push("shared".into());
        }
        keys
    };
    for n in 0..120 {
        let topic = if n % 4 == 0 { "Other" } else { "T" };
        let mut draft = MessageDraft {
            body: b"body",
            keys: keys_for(n).into_iter().map(Into::into).collect(),
            ..MessageDraft::default()
        };
        if n % 7 == 0 {
            draft.properties.push(("UNIQ_KEY".into(), format!("U{n}")));
        }
        store.put(topic, (n % 3) as i32, &draft).unwrap();
    }
    let files = store.index().files();
    assert!(files.len() >= 5, "small files must roll: {files:?}");
    assert!(store
        .index()
        .wait_for_compaction(std::time::Duration::from_secs(20)));
    assert_eq!(store.index().last_compaction_error(), None);

    let mut probes: Vec<String> = (0..14).map(|n| format!("k{n}")).collect();
    probes.extend(["Aa", "BB", "shared", "U0", "U7", "U14", "missing"].map(String::from));
    for topic in ["T", "Other"] {
        for key in &probes {
            for max in [1, 3, 64, 1000] {
                let expected = brute_force(&store, topic, key, 0, i64::MAX, max);
                assert_eq!(
                    query(&store, topic, key, 0, None, max),
                    expected,
                    "{topic}#{key} max {max}"
                );
            }
        }
    }
    // "Aa" and "BB" share a hash and slot; neither query returns the other's messages.
    let aa = store.query_by_key(&KeyQuery::new("T", "Aa", 1000)).unwrap();
    assert!(
        !aa.is_empty()
            && aa
                .iter()
                .all(|m| m.keys.contains(&"Aa".to_string()) && m.topic == "T")
    );

    // Time bounds are inclusive and exact to the millisecond.
    let all = store
        .query_by_key(&KeyQuery::new("T", "shared", 1000))
        .unwrap();
    let times: Vec<i64> = all.iter().map(|m| m.store_timestamp).collect();
    for &edge in &[times[0], times[times.len() / 2], *times.last().unwrap()] {
        for (begin, end) in [
            (edge, edge),
            (edge + 1, i64::MAX),
            (0, edge - 1),
            (edge - 1000, edge + 1000),
        ] {
            let expected = brute_force(&store, "T", "shared", begin, end, 1000);
            assert_eq!(
                query(&store, "T", "shared", begin, Some(end), 1000),
                expected,
                "[{begin}, {end}]"
            );
        }
    }
    let report = store.verify_index().unwrap();
    assert!(report.is_clean(), "{:?}", report.differences);
    assert!(report.entries_checked > 120);
}

#[test]
fn bad_queries_are_errors_not_empty_answers() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), options()).unwrap();
    store
        .put(
            "T",
            0,
            &MessageDraft {
                body: b"x",
                keys: ["a".into()].into_iter().collect(),
                ..MessageDraft::default()
            },
        )
        .unwrap();
    assert!(matches!(
        store.query_by_key(&KeyQuery::new("Unknown", "a", 5)),
        Err(rmqcore::Error::NotFound(_))
    ));
    assert!(matches!(
        store.query_by_key(&KeyQuery::new("T", "", 5)),
        Err(rmqcore::Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        store.query_by_key(&KeyQuery::new("T", "a", 0)),
        Err(rmqcore::Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        store.query_by_key(&KeyQuery::new("T", "a", 5).stored_between(10, Some(5))),
        Err(rmqcore::Error::InvalidArgument { .. })
    ));
    assert_eq!(
        store.query_by_key(&KeyQuery::new("T", "b", 5)).unwrap(),
        vec![]
    );
}
