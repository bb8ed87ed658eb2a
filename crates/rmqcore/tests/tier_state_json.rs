//! `tier/state.json` (format §7.2) as an earlier rmq wrote it: a store opened by this
//! version reads it and writes it back byte for byte, so that a downgrade, a diff or an
//! operator's script sees the same file.

use rmqcore::tier::TierState;

/// A state with one of each kind of entry, as `persist` wrote it before the tier state
/// took the compacted index header's type for an index file's fields.
const EXISTING: &str = r#"{
  "url": "s3://bucket/shards/shard-0",
  "endpoint": "http://127.0.0.1:9000",
  "segments": {
    "0": {
      "startOffset": 0,
      "size": 1073741824,
      "crc32": 3419374632,
      "lastModifiedMs": 1795575916256,
      "local": false
    }
  },
  "indexFiles": {
    "20261127023000000": {
      "size": 184,
      "crc32": 1440113714,
      "beginTimestamp": 10100,
      "endTimestamp": 10600,
      "beginPhyOffset": 100,
      "endPhyOffset": 600,
      "slotCount": 3,
      "entryCount": 6,
      "local": false
    }
  },
  "consumeQueues": {
    "orders/0/00000000000000000000": {
      "topic": "orders",
      "queueId": 0,
      "startOffset": 0,
      "size": 6000000,
      "crc32": 7,
      "lastCommitlogEnd": 1073741824,
      "local": true
    }
  }
}"#;

#[test]
fn an_existing_state_is_read_and_written_back_unchanged() {
    let before = tempfile::tempdir().unwrap();
    let path = TierState::path(before.path());
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, EXISTING).unwrap();
    let state = TierState::load(before.path()).unwrap();
    let index_file = &state.index_files["20261127023000000"];
    assert_eq!((index_file.size, index_file.crc32), (184, 1_440_113_714));
    let header = index_file.header;
    assert_eq!(
        (header.begin_timestamp, header.end_timestamp),
        (10_100, 10_600)
    );
    assert_eq!((header.begin_phy_offset, header.end_phy_offset), (100, 600));
    assert_eq!((header.slot_count, header.entry_count), (3, 6));
    assert!(!state.segments[&0].local && state.consume_queues.len() == 1);

    let after = tempfile::tempdir().unwrap();
    state.persist(after.path()).unwrap();
    let written = std::fs::read_to_string(TierState::path(after.path())).unwrap();
    assert_eq!(written, EXISTING);
}
