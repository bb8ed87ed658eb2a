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

/// What `entries` must return: the trait's one-entry-at-a-time reading.
fn entries_one_by_one(queue: &FileConsumeQueue, from: i64, max: usize) -> Vec<CqEntry> {
    (from..)
        .take(max)
        .map_while(|offset| queue.entry(offset).unwrap())
        .collect()
}

#[test]
fn entries_read_a_file_at_a_time_equal_entries_read_one_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let queue = FileConsumeQueue::load(dir.path(), "T", 0, 4, true, None).unwrap();
    // Starts past zero (placeholders before 6) and spans four files of four entries.
    for n in 6..17 {
        queue.append(n, entry(n * 100)).unwrap();
    }
    let mut nonempty = 0;
    for from in -2..20 {
        for max in [0, 1, 2, 3, 4, 5, 9, 64] {
            let got = queue.entries(from, max).unwrap();
            assert_eq!(
                got,
                entries_one_by_one(&queue, from, max),
                "from {from} max {max}"
            );
            nonempty += usize::from(!got.is_empty());
        }
    }
    assert!(
        nonempty > 50,
        "the comparison covered reads that return entries"
    );
    assert_eq!(queue.entries(6, 64).unwrap().len(), 11);
    assert_eq!(
        queue.entries(5, 64).unwrap(),
        Vec::new(),
        "below the first offset"
    );
    assert_eq!(
        queue.entries(15, 64).unwrap(),
        vec![entry(1500), entry(1600)]
    );
}

#[test]
fn entries_stop_at_entries_past_the_log_end_once_truncated() {
    let dir = tempfile::tempdir().unwrap();
    let queue = FileConsumeQueue::load(dir.path(), "T", 0, 4, true, None).unwrap();
    for n in 0..10 {
        queue.append(n, entry(n * 100)).unwrap();
    }
    queue.truncate_from_physical(450).unwrap();
    let expected: Vec<CqEntry> = (0..4).map(|n| entry(n * 100)).collect();
    assert_eq!(queue.entries(0, 64).unwrap(), expected);
    assert_eq!(queue.entries(3, 64).unwrap(), vec![entry(300)]);
    assert_eq!(queue.entries(4, 64).unwrap(), Vec::new());
}
