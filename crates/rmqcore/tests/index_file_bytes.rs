//! The bytes of a small index file, checked by hand against format §3: header fields,
//! slot values and the chains of colliding keys; and the format's Java hash vectors.

use rmqcore::index::layout::{index_hash, index_key_hash, IndexGeometry};

use rmqcore::index::file::IndexFile;

const T0: i64 = 1_700_000_000_000;

fn i32_at(bytes: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(bytes[at..at + 4].try_into().unwrap())
}

fn i64_at(bytes: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(bytes[at..at + 8].try_into().unwrap())
}

#[test]
fn java_hash_vectors_of_the_format_reference() {
    // "TopicTest#key1": hashCode −1655984460 → stored 1655984460 → slot 984460.
    assert_eq!(index_hash("TopicTest#key1"), 1_655_984_460);
    assert_eq!(index_key_hash("TopicTest", "key1"), 1_655_984_460);
    assert_eq!(
        IndexGeometry::default().slot_of(index_hash("TopicTest#key1")),
        984_460
    );
    // Integer.MIN_VALUE has no absolute value in an int: stored as 0.
    assert_eq!(index_hash("polygenelubricants"), 0);
    // Hashes run over UTF-16 units: 'é' is one unit, '😀' two.
    assert_eq!(index_hash("é"), 0xE9);
    assert_eq!(index_key_hash("t", "😀"), index_hash("t#😀"));
}

#[test]
fn a_hand_checked_file_has_the_documented_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let geometry = IndexGeometry {
        slot_count: 8,
        entry_count: 6,
    };
    let path = dir.path().join("20231114221320000");
    let file = IndexFile::create(&path, geometry, None).unwrap();
    // "T#Aa" and "T#BB" collide (2538191, slot 7); "T#key1" hashes to −1854506879,
    // stored 1854506879, also slot 7; "T#k2" is 2539446, slot 6.
    let aa = index_key_hash("T", "Aa");
    let bb = index_key_hash("T", "BB");
    let key1 = index_key_hash("T", "key1");
    let k2 = index_key_hash("T", "k2");
    assert_eq!(
        (aa, bb, key1, k2),
        (2_538_191, 2_538_191, 1_854_506_879, 2_539_446)
    );
    assert!(file.put_key(aa, 1000, T0));
    assert!(file.put_key(bb, 2000, T0 + 1500));
    assert!(file.put_key(k2, 3000, T0 + 4000));
    assert!(file.put_key(key1, 4000, T0 + 4999));
    file.flush().unwrap();

    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes.len(), 40 + 8 * 4 + 6 * 20);
    // Header.
    assert_eq!(
        i64_at(&bytes, 0),
        T0,
        "beginTimestamp: the first entry's store time"
    );
    assert_eq!(i64_at(&bytes, 8), T0 + 4999, "endTimestamp");
    assert_eq!(i64_at(&bytes, 16), 1000, "beginPhyOffset");
    assert_eq!(i64_at(&bytes, 24), 4000, "endPhyOffset");
    assert_eq!(
        i32_at(&bytes, 32),
        2,
        "hashSlotCount counts slots in use, not puts"
    );
    assert_eq!(i32_at(&bytes, 36), 5, "indexCount is entries + 1");
    // Slot table: slot 6 → entry 3, slot 7 → entry 4, the rest empty.
    let slots: Vec<i32> = (0..8).map(|slot| i32_at(&bytes, 40 + 4 * slot)).collect();
    assert_eq!(slots, vec![0, 0, 0, 0, 0, 0, 3, 4]);
    // Entries (hash, offset, timeDiff in seconds, prev); entry 0 is never written.
    let entry = |number: usize| {
        let at = 40 + 8 * 4 + 20 * number;
        (
            i32_at(&bytes, at),
            i64_at(&bytes, at + 4),
            i32_at(&bytes, at + 12),
            i32_at(&bytes, at + 16),
        )
    };
    assert_eq!(entry(0), (0, 0, 0, 0));
    assert_eq!(entry(1), (2_538_191, 1000, 0, 0));
    assert_eq!(entry(2), (2_538_191, 2000, 1, 1));
    assert_eq!(entry(3), (2_539_446, 3000, 4, 0));
    assert_eq!(entry(4), (1_854_506_879, 4000, 4, 2));
    assert_eq!(entry(5), (0, 0, 0, 0));

    // One more entry fits (the file holds entry_count − 1); then it is full.
    assert!(file.put_key(k2, 5000, T0 + 9000));
    assert!(file.is_full());
    assert!(!file.put_key(k2, 6000, T0 + 9000));
    assert_eq!(file.header().index_count, 6);
}

#[test]
fn a_new_file_starts_from_the_previous_files_end() {
    let dir = tempfile::tempdir().unwrap();
    let geometry = IndexGeometry {
        slot_count: 4,
        entry_count: 4,
    };
    let path = dir.path().join("20231114221320001");
    let file = IndexFile::create(&path, geometry, Some((7000, T0))).unwrap();
    file.flush().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!((i64_at(&bytes, 0), i64_at(&bytes, 8)), (T0, T0));
    assert_eq!((i64_at(&bytes, 16), i64_at(&bytes, 24)), (7000, 7000));
    assert_eq!(i32_at(&bytes, 36), 1);
    // The first entry's time difference is measured from the previous end (format §3.4
    // "first-entry quirk"), then the begin fields become its own.
    assert!(file.put_key(3, 8000, T0 + 12_345));
    let bytes = {
        file.flush().unwrap();
        std::fs::read(&path).unwrap()
    };
    assert_eq!(i32_at(&bytes, 40 + 16 + 20 + 12), 12);
    assert_eq!((i64_at(&bytes, 0), i64_at(&bytes, 16)), (T0 + 12_345, 8000));
}
