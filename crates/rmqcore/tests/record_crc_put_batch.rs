//! The record CRC a put writes (format §1.5) is right whichever way the writer computed
//! it: long bodies are not hashed a second time (their CRC is shifted past, from 768 B
//! with the 512-bit CRC, from 256 B without), shorter ones are; a batch mixing sizes switches between the two and between lengths.
//! Every record is checked from the segment file's own bytes.

use rmqcore::record::crc_property::has_crc_property;
use rmqcore::record::{decode_record, Decoded};
use rmqcore::{MessageDraft, Store, StoreOptions};

#[test]
fn records_of_every_size_carry_a_matching_record_crc() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
    let lengths = [
        0usize, 1, 255, 256, 257, 300, 300, 767, 768, 1024, 4096, 300, 100_000, 256,
    ];
    let bodies: Vec<Vec<u8>> = lengths
        .iter()
        .map(|&length| (0..length).map(|i| (i * 31 + length) as u8).collect())
        .collect();
    let keys = ["k1".into()];
    let drafts: Vec<MessageDraft<'_>> = bodies
        .iter()
        .map(|body| MessageDraft {
            body,
            tags: Some("t".into()),
            keys: keys.iter().cloned().collect(),
            ..MessageDraft::default()
        })
        .collect();
    // Twice: the second batch starts with a length the first one ended on.
    let mut placed = store.put_batch("crc", 0, &drafts).unwrap();
    placed.extend(store.put_batch("crc", 0, &drafts).unwrap());
    store.close().unwrap();

    let segment = std::fs::read(dir.path().join("commitlog").join(format!("{:020}", 0))).unwrap();
    for (index, result) in placed.iter().enumerate() {
        let at = result.commitlog_offset as usize;
        let record = &segment[at..at + result.store_size as usize];
        // `decode_record` with its CRC check refuses a record whose CRCs do not match.
        let Ok(Decoded::Record(view)) = decode_record(record, true) else {
            panic!(
                "record {index} ({} B body) does not decode with its CRCs",
                lengths[index % lengths.len()]
            );
        };
        assert!(has_crc_property(&view), "record {index} has the record CRC");
        assert_eq!(view.body, &bodies[index % lengths.len()][..]);
    }
}
