//! The segment decoder reads every record layout of format §1.2 into the same values the
//! store reads back: V1 and V2 topics, IPv4 and IPv6 hosts, RocketMQ 5's CRC property.

mod records;

use std::net::SocketAddr;
use std::path::PathBuf;

use records::record_input;
use rmqcore::files::segment::segment_file_name;
use rmqcore::record::body_crc::body_crc;
use rmqcore::record::crc_property::{encode_crc_digits, CRC_PROPERTY_LENGTH, CRC_PROPERTY_NAME};
use rmqcore::record::properties::encode_properties;
use rmqcore::record::{encode_blank, encode_record, record_length, Placement, RecordInput};
use rmqcore::segment_decoder::{BatchOptions, SegmentDecoder, SegmentEnd};
use rmqcore::{MessageDraft, Store, StoreOptions};

const SEGMENT_SIZE: usize = 8192;
const START: u64 = 3 * SEGMENT_SIZE as u64;

struct Spec {
    topic: String,
    body: Vec<u8>,
    properties: Vec<u8>,
    born_host: SocketAddr,
    store_host: SocketAddr,
    /// Append RocketMQ 5's CRC property after encoding.
    crc_property: bool,
}

fn spec(topic: &str, born: &str, store: &str) -> Spec {
    Spec {
        topic: topic.to_string(),
        body: format!("body of {topic}").into_bytes(),
        properties: encode_properties([("TAGS", "TagA"), ("KEYS", "k1 k2"), ("UNIQ_KEY", "U1")])
            .unwrap(),
        born_host: born.parse().unwrap(),
        store_host: store.parse().unwrap(),
        crc_property: false,
    }
}

/// Encode the records one after another from position 0, then a blank.
fn write_segment(specs: &[Spec]) -> (tempfile::TempDir, PathBuf) {
    let mut file = vec![0u8; SEGMENT_SIZE];
    let mut position = 0;
    for (index, spec) in specs.iter().enumerate() {
        let mut properties = spec.properties.clone();
        if spec.crc_property {
            // Reserve the 20-byte region; its digits are filled in once the record is.
            properties.extend_from_slice(CRC_PROPERTY_NAME.as_bytes());
            properties.push(0x01);
            properties.extend_from_slice(b"0000000000");
            properties.push(0x02);
        }
        let input = RecordInput {
            queue_id: index as i32,
            flag: 7,
            born_timestamp: 1_700_000_000_000 + index as i64,
            born_host: spec.born_host,
            store_host: spec.store_host,
            reconsume_times: 2,
            ..record_input(&spec.topic, &spec.body, &properties)
        };
        let length = record_length(&input);
        let placement = Placement {
            queue_offset: 10 + index as i64,
            physical_offset: (START + position as u64) as i64,
            store_timestamp: 1_700_000_001_000 + index as i64,
        };
        let record = &mut file[position..position + length];
        encode_record(record, &input, placement);
        if spec.crc_property {
            let crc = body_crc(&record[..length - CRC_PROPERTY_LENGTH]);
            record[length - 11..length - 1].copy_from_slice(&encode_crc_digits(crc));
        }
        position += length;
    }
    encode_blank(&mut file[position..], SEGMENT_SIZE - position);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(segment_file_name(START));
    std::fs::write(&path, &file).unwrap();
    (dir, path)
}

#[test]
fn every_layout_decodes_to_its_fields() {
    let long_topic = "T".repeat(200);
    let mut with_crc = spec("crc", "10.0.0.1:1", "10.0.0.2:2");
    with_crc.crc_property = true;
    let specs = [
        spec("v1", "10.0.0.1:50000", "192.168.0.10:10911"),
        spec(&long_topic, "10.0.0.1:50000", "192.168.0.10:10911"),
        spec("born6", "[2001:db8::1]:7", "192.168.0.10:10911"),
        spec("store6", "10.0.0.1:50000", "[2001:db8::2]:10911"),
        spec("both6", "[::1]:1", "[fe80::1]:2"),
        with_crc,
    ];
    let (_dir, path) = write_segment(&specs);
    let decoder = SegmentDecoder::open(&path).unwrap();
    assert_eq!(decoder.start_offset(), START);
    assert_eq!(decoder.size(), SEGMENT_SIZE);

    let batch = decoder.decode_batch(0, SEGMENT_SIZE, &BatchOptions::default());
    assert_eq!(batch.end, Some(SegmentEnd::Blank));
    let columns = &batch.columns;
    assert_eq!(columns.rows(), specs.len());
    for (row, spec) in specs.iter().enumerate() {
        assert_eq!(columns.topic.value(row), spec.topic.as_bytes());
        assert_eq!(columns.body.value(row), &spec.body[..]);
        assert_eq!(columns.queue_id[row], row as i32);
        assert_eq!(columns.queue_offset[row], 10 + row as i64);
        assert_eq!(
            columns.born_host.value(row),
            spec.born_host.to_string().as_bytes()
        );
        assert_eq!(
            columns.store_host.value(row),
            spec.store_host.to_string().as_bytes()
        );
        assert_eq!(
            columns.msg_id.value(row),
            rmqcore::record::msg_id::create_msg_id(&spec.store_host, columns.commitlog_offset[row])
                .as_bytes()
        );
        assert_eq!(columns.tags.value(row), b"TagA");
        assert_eq!(columns.keys.values.value(2 * row + 1), b"k2");
        assert!(columns.crc_ok.get(row) && columns.crc_checked.get(row));
        assert_eq!(columns.store_timestamp[row], 1_700_000_001_000 + row as i64);
    }
    let names: Vec<&[u8]> = (0..columns.properties.names.len())
        .map(|i| columns.properties.names.value(i))
        .collect();
    // The CRC property is checked (crc_ok above) but hidden, as `rmq.Store` hides it.
    assert_eq!(
        names.iter().filter(|name| **name == b"__CRC32#").count(),
        0,
        "{names:?}"
    );
}

#[test]
fn a_wrong_crc_property_is_flagged_not_fatal() {
    let mut bad = spec("crc", "10.0.0.1:1", "10.0.0.2:2");
    bad.crc_property = true;
    let (_dir, path) = write_segment(&[bad, spec("next", "10.0.0.1:1", "10.0.0.2:2")]);
    let mut bytes = std::fs::read(&path).unwrap();
    // Change a header byte the CRC property covers but nothing else checks (the flag).
    bytes[19] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let decoder = SegmentDecoder::open(&path).unwrap();
    let batch = decoder.decode_batch(0, SEGMENT_SIZE, &BatchOptions::default());
    assert_eq!(batch.columns.rows(), 2);
    assert!(!batch.columns.crc_ok.get(0));
    assert!(batch.columns.crc_ok.get(1));

    let unchecked = BatchOptions {
        verify_crc: false,
        ..BatchOptions::default()
    };
    let batch = decoder.decode_batch(0, SEGMENT_SIZE, &unchecked);
    assert_eq!(batch.columns.crc_checked.count_ones(), 0);
}

#[test]
fn store_written_segments_decode_to_what_the_store_reads() {
    let dir = tempfile::tempdir().unwrap();
    let options = StoreOptions {
        commitlog_segment_size: 4096,
        ..StoreOptions::default()
    };
    let store = Store::open(dir.path(), options).unwrap();
    let mut offsets = Vec::new();
    for i in 0..60i32 {
        let body = vec![b'a' + (i % 26) as u8; (i as usize * 37) % 300];
        let draft = MessageDraft {
            body: &body,
            tags: (i % 3 != 0).then(|| format!("tag-é{}", i % 4).into()),
            keys: [format!("k{i}").into(), "ключ".into()]
                .into_iter()
                .collect(),
            properties: vec![("p".to_string(), format!("v{i}"))],
            ..Default::default()
        };
        let topic = if i % 2 == 0 { "even" } else { "odd" };
        offsets.push(store.put(topic, i % 4, &draft).unwrap().commitlog_offset);
    }
    store.flush().unwrap();

    let mut decoded = 0;
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.path().join("commitlog"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() > 3, "the test needs segment rolls");
    for file in &files {
        let decoder = SegmentDecoder::open(file).unwrap();
        let batch = decoder.decode_batch(0, decoder.size(), &BatchOptions::default());
        assert!(matches!(
            batch.end,
            Some(SegmentEnd::Blank | SegmentEnd::EndOfData)
        ));
        let columns = &batch.columns;
        for row in 0..columns.rows() {
            let stored = store.read_at(columns.commitlog_offset[row]).unwrap();
            assert_eq!(columns.topic.value(row), stored.topic.as_bytes());
            assert_eq!(columns.body.value(row), &stored.body[..]);
            assert_eq!(columns.msg_id.value(row), stored.msg_id.as_bytes());
            assert_eq!(columns.tags_valid.get(row), stored.tags.is_some());
            if let Some(tags) = &stored.tags {
                assert_eq!(columns.tags.value(row), tags.as_bytes());
            }
            let keys = &columns.keys;
            let key_range = keys.offsets[row] as usize..keys.offsets[row + 1] as usize;
            let keys: Vec<&[u8]> = key_range.map(|i| keys.values.value(i)).collect();
            let expected: Vec<&[u8]> = stored.keys.iter().map(|k| k.as_bytes()).collect();
            assert_eq!(keys, expected);
            let properties = &columns.properties;
            let range = properties.offsets[row] as usize..properties.offsets[row + 1] as usize;
            let pairs: Vec<(String, String)> = range
                .map(|i| {
                    let name = String::from_utf8(properties.names.value(i).to_vec()).unwrap();
                    let value = String::from_utf8(properties.values.value(i).to_vec()).unwrap();
                    (name, value)
                })
                .collect();
            assert_eq!(pairs, stored.properties);
            assert_eq!(columns.queue_offset[row], stored.queue_offset);
            assert_eq!(columns.store_timestamp[row], stored.store_timestamp);
            assert_eq!(
                columns.born_host.value(row),
                stored.born_host.to_string().as_bytes()
            );
        }
        decoded += columns.rows();
    }
    assert_eq!(decoded, offsets.len());
}
