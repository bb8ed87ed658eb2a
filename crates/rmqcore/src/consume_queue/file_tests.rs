//! Unit tests of `FileConsumeQueue` (file.rs).

use super::*;

fn entry(offset: i64) -> CqEntry {
    CqEntry {
        commitlog_offset: offset,
        size: 100,
        tags_code: 7,
        store_timestamp: 0,
    }
}

#[test]
fn appends_across_files_and_reloads() {
    let dir = tempfile::tempdir().unwrap();
    let queue = FileConsumeQueue::load(dir.path(), "T", 0, 4, true, None).unwrap();
    for n in 0..10 {
        queue.append(n, entry(n * 100)).unwrap();
    }
    assert_eq!(queue.segments().segments().len(), 3);
    let reloaded = FileConsumeQueue::load(dir.path(), "T", 0, 4, true, None).unwrap();
    assert_eq!((reloaded.min_offset(), reloaded.max_offset()), (0, 10));
    assert_eq!(reloaded.entry(9).unwrap(), Some(entry(900)));
    assert_eq!(reloaded.entry(10).unwrap(), None);
}

#[test]
fn truncation_removes_entries_past_the_log_end() {
    let dir = tempfile::tempdir().unwrap();
    let queue = FileConsumeQueue::load(dir.path(), "T", 0, 4, true, None).unwrap();
    for n in 0..10 {
        queue.append(n, entry(n * 100)).unwrap();
    }
    assert_eq!(queue.truncate_from_physical(450).unwrap(), 6);
    assert_eq!(queue.max_offset(), 4);
    assert_eq!(queue.segments().segments().len(), 1);
    let reloaded = FileConsumeQueue::load(dir.path(), "T", 0, 4, true, None).unwrap();
    assert_eq!(reloaded.max_offset(), 4);
    reloaded.append(4, entry(400)).unwrap();
}

#[test]
fn a_queue_starting_past_zero_is_padded_with_placeholders() {
    let dir = tempfile::tempdir().unwrap();
    let queue = FileConsumeQueue::load(dir.path(), "T", 0, 4, true, None).unwrap();
    queue.append(6, entry(600)).unwrap();
    let reloaded = FileConsumeQueue::load(dir.path(), "T", 0, 4, true, None).unwrap();
    assert_eq!((reloaded.min_offset(), reloaded.max_offset()), (6, 7));
}
