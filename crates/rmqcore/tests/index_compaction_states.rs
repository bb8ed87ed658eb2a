//! Sealed index files are compacted in the background; queries give the same answers
//! whether a file is chained or compacted, and an interrupted or damaged compaction
//! leaves a usable index (the RocketMQ-format file is never touched).

use std::fs;
use std::path::Path;
use std::time::Duration;

use rmqcore::index::compacted::CompactedIndexFile;
use rmqcore::index::file::IndexFile;
use rmqcore::index::layout::IndexGeometry;
use rmqcore::lookup::KeyQuery;
use rmqcore::{MessageDraft, Store, StoreOptions};

mod support;
use support::copy_dir;

const GEOMETRY: IndexGeometry = IndexGeometry {
    slot_count: 5,
    entry_count: 25,
};

fn options() -> StoreOptions {
    StoreOptions {
        index_slot_count: GEOMETRY.slot_count as usize,
        index_entry_count: GEOMETRY.entry_count as usize,
        commitlog_segment_size: 64 * 1024,
        ..StoreOptions::default()
    }
}

fn answers(store: &Store) -> Vec<Vec<i64>> {
    (0..12)
        .map(|n| {
            store
                .query_by_key(&KeyQuery::new("T", &format!("k{n}"), 1000))
                .unwrap()
                .iter()
                .map(|m| m.commitlog_offset)
                .collect()
        })
        .collect()
}

fn fill(root: &Path) -> Store {
    let store = Store::open(root, options()).unwrap();
    store.index().set_compaction_paused(true);
    for n in 0..150 {
        let draft = MessageDraft {
            body: b"payload",
            keys: [format!("k{}", n % 11).into()].into_iter().collect(),
            ..MessageDraft::default()
        };
        store.put("T", 0, &draft).unwrap();
    }
    store
}

#[test]
fn queries_agree_before_and_after_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let store = fill(dir.path());
    let files = store.index().files();
    assert_eq!(files.len(), 7, "150 entries at 24 per file");
    assert!(files.iter().all(|file| !file.compacted));
    let chained = answers(&store);
    assert_eq!(chained[3].len(), 14);

    store.index().set_compaction_paused(false);
    assert!(store.index().wait_for_compaction(Duration::from_secs(20)));
    let files = store.index().files();
    assert_eq!(
        files.iter().filter(|file| file.compacted).count(),
        6,
        "all but the active file"
    );
    assert_eq!(answers(&store), chained);
    assert!(store.verify_index().unwrap().is_clean());

    // The compacted file holds the chained file's entries, each slot's run newest first.
    let sealed = &files[2];
    let compacted =
        CompactedIndexFile::open(&dir.path().join("index_compacted").join(&sealed.name)).unwrap();
    compacted.verify().unwrap();
    let source = IndexFile::open(
        &dir.path().join("index").join(&sealed.name),
        GEOMETRY,
        false,
    )
    .unwrap();
    assert_eq!(compacted.header().entry_count, 24);
    assert_eq!(compacted.header().source_index_count, 25);
    for slot in 0..GEOMETRY.slot_count as i32 {
        let mut chain = Vec::new();
        source.walk_chain(slot, |_, entry| {
            chain.push((entry.key_hash, entry.commitlog_offset));
            std::ops::ControlFlow::Continue(())
        });
        let run: Vec<_> = compacted
            .run(slot)
            .unwrap()
            .map(|entry| (entry.key_hash, entry.commitlog_offset))
            .collect();
        assert_eq!(run, chain, "slot {slot}");
    }
}

#[test]
fn interrupted_and_damaged_compactions_leave_a_usable_index() {
    let dir = tempfile::tempdir().unwrap();
    let store = fill(dir.path());
    let expected = answers(&store);
    store.index().set_compaction_paused(false);
    assert!(store.index().wait_for_compaction(Duration::from_secs(20)));
    store.close().unwrap();
    drop(store);

    let compacted_dir = dir.path().join("index_compacted");
    let mut names: Vec<String> = fs::read_dir(&compacted_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    // A crash mid-compaction leaves a partial temporary file; a damaged compacted file
    // fails its size check; another compacted file is simply missing.
    fs::write(compacted_dir.join(format!("{}.tmp", names[0])), b"partial").unwrap();
    let damaged = compacted_dir.join(&names[1]);
    let length = fs::metadata(&damaged).unwrap().len();
    fs::OpenOptions::new()
        .write(true)
        .open(&damaged)
        .unwrap()
        .set_len(length - 16)
        .unwrap();
    fs::remove_file(compacted_dir.join(&names[2])).unwrap();

    let store = Store::open(dir.path(), options()).unwrap();
    assert_eq!(answers(&store), expected);
    assert!(store.index().wait_for_compaction(Duration::from_secs(20)));
    assert!(!compacted_dir.join(format!("{}.tmp", names[0])).exists());
    assert_eq!(
        store
            .index()
            .files()
            .iter()
            .filter(|file| file.compacted)
            .count(),
        6
    );
    assert_eq!(answers(&store), expected);
    assert!(store.verify_index().unwrap().is_clean());
}

#[test]
fn a_file_that_fills_during_recovery_is_compacted_too() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("image");
    let store = Store::open(&dir.path().join("live"), options()).unwrap();
    store.index().set_compaction_paused(true);
    let mut offsets = Vec::new();
    // 48 keys: exactly two full files, and no third (files roll when the next key comes).
    for n in 0..48 {
        let draft = MessageDraft {
            body: b"p",
            keys: [format!("k{}", n % 11).into()].into_iter().collect(),
            ..MessageDraft::default()
        };
        offsets.push(store.put("T", 0, &draft).unwrap().commitlog_offset);
    }
    store.flush().unwrap();
    let expected = answers(&store);
    copy_dir(&dir.path().join("live"), &image);
    store.close().unwrap();
    // The checkpoint vouches only for the first 30 records: recovery cuts the second file
    // and dispatch fills it again.
    let mut checkpoint = rmqcore::config::checkpoint::Checkpoint::load(&image).unwrap();
    checkpoint.flushed_offset = Some(offsets[30]);
    checkpoint.store(&image).unwrap();

    let store = Store::open(&image, options()).unwrap();
    assert_eq!(store.recovery_report().mode.as_str(), "abnormal");
    assert!(store.index().wait_for_compaction(Duration::from_secs(20)));
    let files = store.index().files();
    assert_eq!(files.len(), 2);
    assert!(
        files.iter().all(|file| file.full && file.compacted),
        "{files:?}"
    );
    assert_eq!(answers(&store), expected);
    assert!(store.verify_index().unwrap().is_clean());
}
