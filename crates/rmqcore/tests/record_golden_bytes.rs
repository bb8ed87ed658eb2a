//! The format reference's worked example (§1.9) encoded byte for byte.

mod records;

use records::record_input;
use rmqcore::big_endian::{read_i16, read_i32, read_i64};
use rmqcore::record::properties::encode_properties;
use rmqcore::record::{
    decode_record, encode_record, record_length, Decoded, Placement, RecordInput, MAGIC_V1,
};

const PROPERTIES: [(&str, &str); 4] = [
    ("TAGS", "TagA"),
    ("KEYS", "k1 k2"),
    ("UNIQ_KEY", "7F0000010C3A18B4AAC2A1B2C3D40000"),
    ("WAIT", "true"),
];

fn example(properties: &[u8]) -> RecordInput<'_> {
    RecordInput {
        queue_id: 3,
        born_timestamp: 1_700_000_000_000,
        born_host: "10.0.0.1:50000".parse().unwrap(),
        store_host: "192.168.0.10:10911".parse().unwrap(),
        ..record_input("TopicTest", b"Hello RocketMQ", properties)
    }
}

#[test]
fn worked_example_has_the_reference_layout() {
    let properties = encode_properties(PROPERTIES).unwrap();
    assert_eq!(properties.len(), 73);
    let input = example(&properties);
    assert_eq!(record_length(&input), 187);
    let mut bytes = vec![0u8; 187];
    let placement = Placement {
        queue_offset: 5,
        physical_offset: 0x1234,
        store_timestamp: 1_700_000_000_123,
    };
    encode_record(&mut bytes, &input, placement);

    assert_eq!(read_i32(&bytes, 0), 187);
    assert_eq!(read_i32(&bytes, 4), MAGIC_V1);
    assert_eq!(&bytes[4..8], &[0xDA, 0xA3, 0x20, 0xA7]);
    assert_eq!(read_i32(&bytes, 8), 1_774_740_973);
    assert_eq!(read_i32(&bytes, 12), 3);
    assert_eq!(read_i64(&bytes, 20), 5);
    assert_eq!(read_i64(&bytes, 28), 0x1234);
    assert_eq!(read_i32(&bytes, 36), 0);
    assert_eq!(read_i64(&bytes, 40), 1_700_000_000_000);
    assert_eq!(&bytes[48..52], &[10, 0, 0, 1]);
    assert_eq!(read_i32(&bytes, 52), 50_000);
    assert_eq!(read_i64(&bytes, 56), 1_700_000_000_123);
    assert_eq!(&bytes[64..68], &[192, 168, 0, 10]);
    assert_eq!(read_i32(&bytes, 68), 10_911);
    assert_eq!(read_i32(&bytes, 84), 14, "BODYLENGTH at 84");
    assert_eq!(&bytes[88..102], b"Hello RocketMQ", "body at 88");
    assert_eq!(bytes[102], 9, "topic length byte at 102");
    assert_eq!(&bytes[103..112], b"TopicTest", "topic at 103");
    assert_eq!(read_i16(&bytes, 112), 73, "PROPERTIESLENGTH at 112");
    assert_eq!(&bytes[114..], &properties[..], "properties at 114");
}

#[test]
fn worked_example_decodes_to_its_fields() {
    let properties = encode_properties(PROPERTIES).unwrap();
    let input = example(&properties);
    let mut bytes = vec![0u8; 187];
    encode_record(
        &mut bytes,
        &input,
        Placement {
            queue_offset: 5,
            physical_offset: 0x1234,
            store_timestamp: 9,
        },
    );
    let Ok(Decoded::Record(view)) = decode_record(&bytes, true) else {
        panic!("example does not decode")
    };
    assert_eq!(view.topic, b"TopicTest");
    assert_eq!(view.tags(), Some(&b"TagA"[..]));
    assert_eq!(view.keys(), vec!["k1".to_string(), "k2".to_string()]);
    assert_eq!(
        view.uniq_key(),
        Some(&b"7F0000010C3A18B4AAC2A1B2C3D40000"[..])
    );
    assert_eq!(view.store_host.to_string(), "192.168.0.10:10911");
}

#[test]
fn ipv6_hosts_shift_later_fields_and_set_sys_flag_bits() {
    let properties = encode_properties(PROPERTIES).unwrap();
    let mut input = example(&properties);
    input.born_host = "[2001:db8::1]:50000".parse().unwrap();
    input.store_host = "[2001:db8::2]:10911".parse().unwrap();
    assert_eq!(record_length(&input), 187 + 24);
    let mut bytes = vec![0u8; 211];
    encode_record(
        &mut bytes,
        &input,
        Placement {
            queue_offset: 0,
            physical_offset: 0,
            store_timestamp: 77,
        },
    );
    assert_eq!(read_i32(&bytes, 36), 0x10 | 0x20);
    assert_eq!(
        read_i64(&bytes, 68),
        77,
        "store timestamp moves by 12 with an IPv6 born host"
    );
    assert_eq!(
        read_i32(&bytes, 84 + 24),
        14,
        "body length moves by 24 with both hosts IPv6"
    );
    let Ok(Decoded::Record(view)) = decode_record(&bytes, true) else {
        panic!("IPv6 record does not decode")
    };
    assert_eq!(view.born_host, input.born_host);
    assert_eq!(view.store_host, input.store_host);
}

#[test]
fn corrupted_bodies_fail_the_crc_check() {
    let properties = encode_properties(PROPERTIES).unwrap();
    let mut bytes = vec![0u8; 187];
    encode_record(
        &mut bytes,
        &example(&properties),
        Placement {
            queue_offset: 0,
            physical_offset: 0,
            store_timestamp: 0,
        },
    );
    bytes[90] ^= 0x01;
    assert!(decode_record(&bytes, true).is_err());
    assert!(
        decode_record(&bytes, false).is_ok(),
        "without the CRC check the layout is still valid"
    );
}
