//! A writable store creates the segment its first record goes to when it opens (so the
//! warming thread can fault its pages in before the first put), and a clean close deletes
//! it again if nothing was written to it.

use std::path::Path;

use rmqcore::{MessageDraft, Store, StoreOptions};

fn options(warm_ahead_bytes: usize) -> StoreOptions {
    StoreOptions {
        commitlog_segment_size: 1 << 20,
        warm_ahead_bytes,
        ..StoreOptions::default()
    }
}

fn first_segment(root: &Path) -> std::path::PathBuf {
    root.join("commitlog").join("00000000000000000000")
}

#[test]
fn an_unwritten_store_has_its_first_segment_while_open_and_not_after_closing() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), options(8 << 20)).unwrap();
    assert!(first_segment(dir.path()).exists());
    store.close().unwrap();
    assert!(!first_segment(dir.path()).exists());
    // Reopened, it is the same empty store.
    let store = Store::open(dir.path(), options(8 << 20)).unwrap();
    assert_eq!(store.commit_log().write_offset(), 0);
    store.close().unwrap();
}

#[test]
fn a_written_segment_is_kept_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), options(8 << 20)).unwrap();
    let draft = MessageDraft {
        body: b"kept",
        ..Default::default()
    };
    let put = store.put("T", 0, &draft).unwrap();
    store.close().unwrap();
    assert!(first_segment(dir.path()).exists());
    let store = Store::open(dir.path(), options(8 << 20)).unwrap();
    let record = store
        .commit_log()
        .read(put.commitlog_offset as u64, true)
        .unwrap();
    assert_eq!(record.view().body, b"kept");
    store.close().unwrap();
}

#[test]
fn without_warming_the_first_segment_waits_for_the_first_put() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), options(0)).unwrap();
    assert!(!first_segment(dir.path()).exists());
    store.close().unwrap();
}
