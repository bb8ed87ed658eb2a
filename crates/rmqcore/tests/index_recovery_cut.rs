//! After an unclean shutdown the index equals a rebuild from the valid log: entries past
//! a cut log are removed (in sealed files too, whose later files are deleted), entries
//! below the checkpoint survive, and a torn entry makes the index re-dispatch from the
//! record before it.

use std::fs;
use std::path::Path;

use rmqcore::config::checkpoint::Checkpoint;
use rmqcore::index::index_keys;
use rmqcore::index::layout::{IndexGeometry, ENTRY_SIZE, HEADER_SIZE, SLOT_SIZE};
use rmqcore::lookup::KeyQuery;
use rmqcore::{MessageDraft, Store, StoreOptions};

mod support;
use support::copy_dir;

const SLOTS: usize = 11;
const ENTRIES: usize = 40;

fn options() -> StoreOptions {
    StoreOptions {
        commitlog_segment_size: 1 << 20,
        index_slot_count: SLOTS,
        index_entry_count: ENTRIES,
        ..StoreOptions::default()
    }
}

/// A store image as a crash leaves it: copied while open (`abort` present).
fn crashed_image(live: &Path, image: &Path, messages: usize) -> Vec<i64> {
    let store = Store::open(live, options()).unwrap();
    store.index().set_compaction_paused(true);
    let mut offsets = Vec::new();
    for n in 0..messages {
        let keys = [format!("k{}", n % 9).into(), format!("m{n}").into()]
            .into_iter()
            .collect();
        let draft = MessageDraft {
            body: &[7u8; 40],
            keys,
            ..MessageDraft::default()
        };
        offsets.push(store.put("T", 0, &draft).unwrap().commitlog_offset);
    }
    copy_dir(live, image);
    store.close().unwrap();
    offsets
}

fn set_checkpoint(root: &Path, flushed_offset: i64) {
    let mut checkpoint = Checkpoint::load(root).unwrap();
    checkpoint.flushed_offset = Some(flushed_offset);
    checkpoint.store(root).unwrap();
}

fn zero_log_from(root: &Path, offset: u64) {
    let segment = root.join("commitlog").join(format!("{:020}", 0));
    let mut bytes = fs::read(&segment).unwrap();
    bytes[offset as usize..].fill(0);
    fs::write(&segment, bytes).unwrap();
}

fn assert_index_matches_log(store: &Store) {
    let report = store.verify_index().unwrap();
    assert!(report.is_clean(), "{:#?}", report.differences);
    for n in 0..9 {
        let key = format!("k{n}");
        let mut expected = Vec::new();
        store
            .commit_log()
            .scan(0, false, |offset, view| {
                if index_keys(view).contains(&key) {
                    expected.push(offset as i64);
                }
                Ok(None)
            })
            .unwrap();
        expected.reverse();
        let found: Vec<i64> = store
            .query_by_key(&KeyQuery::new("T", &key, 10_000))
            .unwrap()
            .iter()
            .map(|m| m.commitlog_offset)
            .collect();
        assert_eq!(found, expected, "key {key}");
    }
}

#[test]
fn entries_past_a_cut_log_are_removed_across_sealed_files() {
    let dir = tempfile::tempdir().unwrap();
    let (live, image) = (dir.path().join("live"), dir.path().join("image"));
    // 2 keys per message, 39 entries per file: 100 messages fill 5+ files.
    let offsets = crashed_image(&live, &image, 100);
    assert!(fs::read_dir(image.join("index")).unwrap().count() >= 5);
    // The checkpoint vouches for the first 30 records; the log is cut after 45, so the
    // cut falls inside a sealed file and every later file must go.
    set_checkpoint(&image, offsets[30]);
    zero_log_from(&image, offsets[45] as u64);
    let store = Store::open(&image, options()).unwrap();
    assert_eq!(store.recovery_report().valid_end_offset, offsets[45] as u64);
    assert_eq!(store.commit_log().write_offset(), offsets[45] as u64);
    assert_index_matches_log(&store);
    let entries: u32 = store.index().files().iter().map(|file| file.entries).sum();
    assert_eq!(entries, 90);
    // Writing goes on in the repaired file, and a reopen changes nothing.
    for n in 0..30 {
        store
            .put(
                "T",
                0,
                &MessageDraft {
                    body: b"y",
                    keys: [format!("k{}", n % 9).into()].into_iter().collect(),
                    ..MessageDraft::default()
                },
            )
            .unwrap();
    }
    assert_index_matches_log(&store);
    store.close().unwrap();
    let store = Store::open(&image, options()).unwrap();
    assert_index_matches_log(&store);
}

#[test]
fn a_torn_entry_below_the_checkpoint_is_rebuilt_from_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let (live, image) = (dir.path().join("live"), dir.path().join("image"));
    let offsets = crashed_image(&live, &image, 16);
    // One file holds all 32 entries. Zero entries 11.. as if their page never reached
    // the disk while the slot table did: slots now point at lost entries.
    let index_file = fs::read_dir(image.join("index"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut bytes = fs::read(&index_file).unwrap();
    let geometry = IndexGeometry {
        slot_count: SLOTS as u32,
        entry_count: ENTRIES as u32,
    };
    assert_eq!(bytes.len() as u64, geometry.file_size());
    let from = HEADER_SIZE + SLOTS * SLOT_SIZE + 11 * ENTRY_SIZE;
    bytes[from..].fill(0);
    fs::write(&index_file, bytes).unwrap();
    set_checkpoint(&image, offsets[12]);
    let store = Store::open(&image, options()).unwrap();
    assert_eq!(
        store.recovery_report().valid_end_offset,
        store.commit_log().write_offset()
    );
    assert_index_matches_log(&store);
}
