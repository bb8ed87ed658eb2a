//! Where the segment decoder stops and what it reports: the blank, zeros, a corrupt record
//! in the middle (reported, with every record before it returned), a torn tail, range
//! limits, split points and batch limits.

mod records;

use std::collections::HashSet;
use std::path::PathBuf;

use records::record_input;
use rmqcore::files::segment::segment_file_name;
use rmqcore::record::{encode_blank, encode_record, record_length, Placement};
use rmqcore::segment_decoder::{
    BatchOptions, ColumnSelection, RecordFilter, SegmentDecoder, SegmentEnd,
};

const SEGMENT_SIZE: usize = 64 * 1024;

/// Records of `body_length` bytes from position 0 (topics alternate "a", "b"); returns
/// the file bytes and each record's position.
fn records(count: usize, body_length: usize) -> (Vec<u8>, Vec<usize>) {
    let mut file = vec![0u8; SEGMENT_SIZE];
    let mut positions = Vec::new();
    let mut position = 0;
    for index in 0..count {
        let body = vec![index as u8; body_length];
        let input = record_input(if index % 2 == 0 { "a" } else { "b" }, &body, b"");
        let length = record_length(&input);
        let placement = Placement {
            queue_offset: index as i64,
            physical_offset: position as i64,
            store_timestamp: 1000 + index as i64,
        };
        encode_record(&mut file[position..position + length], &input, placement);
        positions.push(position);
        position += length;
    }
    positions.push(position);
    (file, positions)
}

fn write(file: &[u8]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(segment_file_name(0));
    std::fs::write(&path, file).unwrap();
    (dir, path)
}

fn decode_all(decoder: &SegmentDecoder) -> (usize, Option<SegmentEnd>) {
    let batch = decoder.decode_batch(0, decoder.size(), &BatchOptions::default());
    (batch.columns.rows(), batch.end)
}

#[test]
fn zeros_and_the_blank_end_cleanly() {
    let (mut file, positions) = records(10, 100);
    let (_dir, path) = write(&file);
    let decoder = SegmentDecoder::open(&path).unwrap();
    assert_eq!(decode_all(&decoder), (10, Some(SegmentEnd::EndOfData)));

    let end = positions[10];
    encode_blank(&mut file[end..], SEGMENT_SIZE - end);
    let (_dir, path) = write(&file);
    let decoder = SegmentDecoder::open(&path).unwrap();
    assert_eq!(decode_all(&decoder), (10, Some(SegmentEnd::Blank)));
}

#[test]
fn a_corrupt_record_in_the_middle_is_reported_after_the_records_before_it() {
    let (mut file, positions) = records(20, 100);
    file[positions[7] + 4] ^= 0xFF; // the magic code of record 7
    let (_dir, path) = write(&file);
    let decoder = SegmentDecoder::open(&path).unwrap();
    let (rows, end) = decode_all(&decoder);
    assert_eq!(rows, 7);
    let Some(SegmentEnd::Invalid(invalid)) = end else {
        panic!("{end:?}")
    };
    assert_eq!(invalid.position, positions[7]);
    assert!(invalid.reason.contains("magic"), "{}", invalid.reason);
    assert!(!invalid.nothing_after, "records follow it");
    let error = invalid.to_error(decoder.path()).to_string();
    assert!(error.contains(&positions[7].to_string()) && error.contains("00000000000000000000"));
}

#[test]
fn a_wrong_physical_offset_or_length_is_invalid() {
    let (mut file, positions) = records(5, 50);
    file[positions[2] + 35] ^= 1; // PHYSICALOFFSET's last byte
    let (_dir, path) = write(&file);
    let (rows, end) = decode_all(&SegmentDecoder::open(&path).unwrap());
    assert_eq!(rows, 2);
    assert!(matches!(end, Some(SegmentEnd::Invalid(ref i)) if i.reason.contains("PHYSICALOFFSET")));

    let (mut file, positions) = records(5, 50);
    file[positions[3] + 3] += 1; // TOTALSIZE
    let (_dir, path) = write(&file);
    let (rows, end) = decode_all(&SegmentDecoder::open(&path).unwrap());
    assert_eq!(rows, 3);
    assert!(matches!(end, Some(SegmentEnd::Invalid(_))));
}

#[test]
fn a_torn_last_record_says_nothing_follows_it() {
    let (mut file, positions) = records(6, 100);
    file[positions[5] + 60..positions[6]].fill(0);
    let (_dir, path) = write(&file);
    let (rows, end) = decode_all(&SegmentDecoder::open(&path).unwrap());
    assert_eq!(rows, 5);
    let Some(SegmentEnd::Invalid(invalid)) = end else {
        panic!("{end:?}")
    };
    assert!(invalid.nothing_after);
}

#[test]
fn a_body_crc_mismatch_is_a_column_value_not_an_end() {
    let (mut file, positions) = records(3, 100);
    file[positions[1] + 100] ^= 1; // inside the body
    let (_dir, path) = write(&file);
    let decoder = SegmentDecoder::open(&path).unwrap();
    let batch = decoder.decode_batch(0, SEGMENT_SIZE, &BatchOptions::default());
    assert_eq!(batch.columns.rows(), 3);
    let ok: Vec<bool> = (0..3).map(|row| batch.columns.crc_ok.get(row)).collect();
    assert_eq!(ok, [true, false, true]);
}

#[test]
fn split_points_fall_on_record_starts_and_parts_cover_every_record_once() {
    let (file, positions) = records(200, 150);
    let (_dir, path) = write(&file);
    let decoder = SegmentDecoder::open(&path).unwrap();
    let points = decoder.split_points(10_000);
    assert!(points.len() >= 4, "{points:?}");
    assert_eq!(points[0], 0);
    assert!(points.iter().all(|point| positions.contains(point)));
    let mut limits = points[1..].to_vec();
    limits.push(decoder.size());
    let mut offsets = Vec::new();
    for (from, limit) in points.iter().zip(&limits) {
        let mut records = decoder.records(*from, *limit, true);
        offsets.extend(records.by_ref().map(|record| record.position));
        let expected = if *limit == decoder.size() {
            SegmentEnd::EndOfData
        } else {
            SegmentEnd::Limit
        };
        assert_eq!(records.end(), Some(&expected));
    }
    assert_eq!(offsets, positions[..200]);
    assert_eq!(decoder.split_points(0), vec![0]);
    assert_eq!(decoder.split_points(usize::MAX / 2), vec![0]);
}

#[test]
fn batches_respect_row_and_byte_limits_and_resume() {
    let (file, _) = records(100, 200);
    let (_dir, path) = write(&file);
    let decoder = SegmentDecoder::open(&path).unwrap();
    for options in [
        BatchOptions {
            max_rows: 7,
            ..BatchOptions::default()
        },
        BatchOptions {
            max_bytes: 1000,
            ..BatchOptions::default()
        },
        BatchOptions {
            max_bytes: 1,
            ..BatchOptions::default()
        },
    ] {
        let mut position = 0;
        let mut rows = Vec::new();
        loop {
            let batch = decoder.decode_batch(position, SEGMENT_SIZE, &options);
            assert!(batch.columns.rows() <= options.max_rows);
            assert!(batch.columns.rows() == 1 || batch.columns.record_bytes() <= options.max_bytes);
            rows.extend(batch.columns.queue_offset.iter().copied());
            position = batch.next_position;
            if batch.end.is_some() {
                break;
            }
        }
        assert_eq!(rows, (0..100).collect::<Vec<i64>>());
    }
}

#[test]
fn filters_drop_rows_but_not_validation() {
    let (mut file, positions) = records(40, 20);
    file[positions[30] + 4] = 0;
    let (_dir, path) = write(&file);
    let decoder = SegmentDecoder::open(&path).unwrap();
    let filter = RecordFilter {
        topics: Some(HashSet::from(["b".to_string()])),
        store_time_min: Some(1010),
        store_time_max: Some(1019),
    };
    let batch = decoder.decode_batch(
        0,
        SEGMENT_SIZE,
        &BatchOptions {
            filter,
            ..BatchOptions::default()
        },
    );
    assert_eq!(batch.columns.queue_offset, vec![11, 13, 15, 17, 19]);
    assert_eq!(batch.records_scanned, 30);
    assert!(matches!(batch.end, Some(SegmentEnd::Invalid(_))));
}

#[test]
fn empty_and_misnamed_files() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join(segment_file_name(4096));
    std::fs::write(&empty, b"").unwrap();
    let decoder = SegmentDecoder::open(&empty).unwrap();
    assert_eq!(decode_all(&decoder), (0, Some(SegmentEnd::EndOfFile)));
    assert_eq!(decoder.split_points(10), vec![0]);

    let misnamed = dir.path().join("copy.bin");
    std::fs::write(&misnamed, records(2, 10).0).unwrap();
    assert!(SegmentDecoder::open(&misnamed).is_err());
    let decoder = SegmentDecoder::open_at(&misnamed, 0).unwrap();
    assert_eq!(decode_all(&decoder), (2, Some(SegmentEnd::EndOfData)));
    assert!(SegmentDecoder::open(&dir.path().join(segment_file_name(0))).is_err());
}

#[test]
fn columns_left_out_hold_empty_values() {
    let (file, _) = records(3, 40);
    let (_dir, path) = write(&file);
    let decoder = SegmentDecoder::open(&path).unwrap();
    let columns = ColumnSelection {
        msg_id: false,
        properties: false,
        body: false,
        hosts: false,
    };
    let batch = decoder.decode_batch(
        0,
        SEGMENT_SIZE,
        &BatchOptions {
            columns,
            ..BatchOptions::default()
        },
    );
    let batch = batch.columns;
    assert_eq!(batch.rows(), 3);
    assert_eq!(batch.body_size, vec![40, 40, 40]);
    for column in [
        &batch.body,
        &batch.msg_id,
        &batch.born_host,
        &batch.store_host,
    ] {
        assert_eq!(column.offsets, vec![0, 0, 0, 0]);
    }
    assert_eq!(batch.keys.offsets, vec![0, 0, 0, 0]);
    assert_eq!(batch.topic.value(1), b"b");
}
