//! The append path dispatches from what it encoded each record from, not from the record
//! bytes (`Dispatcher::dispatch_written`); recovery dispatches from the bytes. Both must
//! write the same files: a store whose consume queues and index are deleted and rebuilt
//! from its log by recovery ends with byte-identical queue files and index contents.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use rmqcore::config::checkpoint::Checkpoint;
use rmqcore::{MessageDraft, Store, StoreOptions};

mod support;
use support::copy_dir;

fn options() -> StoreOptions {
    StoreOptions {
        commitlog_segment_size: 1 << 20,
        // Room for every key of the test in one file, so nothing seals and compacts.
        index_slot_count: 97,
        index_entry_count: 4_000,
        ..StoreOptions::default()
    }
}

/// Every file under `dir`, by path relative to it.
fn files_under(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let relative = path.strip_prefix(root).unwrap().to_path_buf();
                out.insert(relative, fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// The index files' contents in name (creation) order: a rebuild names its files by the
/// time it runs, so only the order and the bytes can match.
fn index_contents(root: &Path) -> Vec<Vec<u8>> {
    files_under(&root.join("index")).into_values().collect()
}

fn owned_properties(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect()
}

/// Message `n`: every shape the put path encodes (no fields, tags, empty tags, one key,
/// several, UNIQ_KEY given twice, other properties, text beyond ASCII).
fn draft(n: usize, body: &[u8]) -> MessageDraft<'_> {
    let mut draft = MessageDraft {
        body,
        ..MessageDraft::default()
    };
    match n % 7 {
        0 => {}
        1 => draft.tags = Some(format!("Tag{}", n % 4).into()),
        2 => {
            draft.tags = Some("".into());
            draft.keys = [format!("order-{n}").into()].into_iter().collect();
        }
        3 => {
            draft.tags = Some("标签é".into());
            draft.keys = [
                format!("k{}", n % 5).into(),
                format!("ключ-{n}").into(),
                "shared".into(),
            ]
            .into_iter()
            .collect();
        }
        4 => {
            draft.properties = owned_properties(&[
                ("UNIQ_KEY", "first"),
                ("color", "red"),
                ("UNIQ_KEY", &format!("uniq-{n}")),
            ]);
            draft.keys = [format!("order-{n}").into()].into_iter().collect();
        }
        5 => {
            draft.tags = Some("TagA".into());
            draft.properties = owned_properties(&[("UNIQ_KEY", &format!("u{n}"))]);
        }
        _ => draft.properties = owned_properties(&[("WAIT", "true")]),
    }
    draft.flag = (n % 3) as i32;
    draft
}

#[test]
fn queues_and_index_rebuilt_from_the_log_are_the_files_the_puts_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let written = dir.path().join("written");
    let rebuilt = dir.path().join("rebuilt");
    let long_topic = "L".repeat(200); // V2 records (2-byte topic length)
    let bodies: Vec<Vec<u8>> = (0..64).map(|n| vec![n as u8; 20 + n * 7]).collect();
    {
        let store = Store::open(&written, options()).unwrap();
        store.index().set_compaction_paused(true);
        let mut n = 0;
        for round in 0..30 {
            for (topic, queue_id) in [("Orders", 0), ("Orders", 3), (long_topic.as_str(), 1)] {
                let count = 1 + (round * 5 + queue_id as usize) % 17;
                let drafts: Vec<MessageDraft<'_>> = (0..count)
                    .map(|i| draft(n + i, &bodies[(n + i) % bodies.len()]))
                    .collect();
                n += count;
                if count == 1 {
                    store.put(topic, queue_id, &drafts[0]).unwrap();
                } else {
                    store.put_batch(topic, queue_id, &drafts).unwrap();
                }
            }
        }
        store.close().unwrap();
    }
    copy_dir(&written, &rebuilt);
    fs::remove_dir_all(rebuilt.join("consumequeue")).unwrap();
    fs::remove_dir_all(rebuilt.join("index")).unwrap();
    // Without the flushed offset, recovery of a store with no queues scans from the log's
    // first segment and dispatches every record again.
    let mut checkpoint = Checkpoint::load(&rebuilt).unwrap();
    checkpoint.flushed_offset = None;
    checkpoint.store(&rebuilt).unwrap();
    {
        let store = Store::open(&rebuilt, options()).unwrap();
        store.index().set_compaction_paused(true);
        assert!(store.recovery_report().records_redispatched > 300);
        store.close().unwrap();
    }

    let queues_written = files_under(&written.join("consumequeue"));
    let queues_rebuilt = files_under(&rebuilt.join("consumequeue"));
    assert_eq!(queues_written.len(), 3, "one file per queue");
    assert_eq!(
        queues_written.keys().collect::<Vec<_>>(),
        queues_rebuilt.keys().collect::<Vec<_>>()
    );
    for (path, bytes) in &queues_written {
        assert!(bytes == &queues_rebuilt[path], "{} differs", path.display());
    }
    let index_written = index_contents(&written);
    let index_rebuilt = index_contents(&rebuilt);
    assert_eq!(index_written.len(), 1);
    assert_eq!(index_rebuilt.len(), 1);
    assert!(
        index_written[0] == index_rebuilt[0],
        "the rebuilt index file differs"
    );
}
