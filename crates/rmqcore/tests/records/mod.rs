//! What the record-level tests share: a record's input with plain values for every field
//! a test does not care about, which it overrides with struct update syntax.

use rmqcore::record::body_crc::body_crc;
use rmqcore::record::RecordInput;

/// `body` with `properties` (already encoded) to `topic`, queue 0, born at time 0 on
/// loopback hosts, every other field 0; its body CRC is the body's.
pub fn record_input<'a>(topic: &'a str, body: &'a [u8], properties: &'a [u8]) -> RecordInput<'a> {
    RecordInput {
        topic,
        queue_id: 0,
        flag: 0,
        body,
        body_crc: body_crc(body),
        body_crc32: None,
        properties,
        sys_flag: 0,
        born_timestamp: 0,
        born_host: "127.0.0.1:1".parse().unwrap(),
        store_host: "127.0.0.1:10911".parse().unwrap(),
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    }
}
