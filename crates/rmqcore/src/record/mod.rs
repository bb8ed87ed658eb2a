//! Commit-log records (format §1.2–§1.3): encoding into a mapped segment and decoding
//! from any byte slice. A record is self-delimiting; its first 4 bytes give its length.
//!
//! Field positions up to the born host are fixed; the rest shift by 12 bytes for each
//! IPv6 host, so they are computed from the sys flag rather than named as constants.

pub mod body_crc;
mod crc32_clmul;
pub mod crc_property;
pub mod crc_shift;
pub mod host;
pub mod message;
pub mod message_rules;
pub mod msg_id;
pub mod properties;
pub mod property_format;
mod view;

pub use view::{decode_record, stored_text, DecodeError, Decoded, RecordView};

use std::net::SocketAddr;

use crate::big_endian::{write_i16, write_i32, write_i64};
use crate::record::crc_property::KnownBody;
use crate::record::host::{encode_host, encoded_length, IPV4_HOST_LENGTH};

pub const MAGIC_V1: i32 = 0xDAA3_20A7_u32 as i32;
pub const MAGIC_V2: i32 = 0xDAA3_20AB_u32 as i32;
pub const BLANK_MAGIC: i32 = 0xCBD4_3194_u32 as i32;
/// The blank that ends a full segment is exactly this long on disk (size + magic).
pub const END_FILE_MIN_BLANK_LENGTH: usize = 8;

pub const TOTAL_SIZE_POSITION: usize = 0;
pub const MAGIC_POSITION: usize = TOTAL_SIZE_POSITION + 4;
pub const BODY_CRC_POSITION: usize = MAGIC_POSITION + 4;
pub const QUEUE_ID_POSITION: usize = BODY_CRC_POSITION + 4;
pub const FLAG_POSITION: usize = QUEUE_ID_POSITION + 4;
pub const QUEUE_OFFSET_POSITION: usize = FLAG_POSITION + 4;
pub const PHYSICAL_OFFSET_POSITION: usize = QUEUE_OFFSET_POSITION + 8;
pub const SYS_FLAG_POSITION: usize = PHYSICAL_OFFSET_POSITION + 8;
pub const BORN_TIMESTAMP_POSITION: usize = SYS_FLAG_POSITION + 4;
pub const BORN_HOST_POSITION: usize = BORN_TIMESTAMP_POSITION + 8;
/// Store timestamp position when the born host is IPv4 (RocketMQ's named constant).
pub const STORE_TIMESTAMP_POSITION_V4: usize = BORN_HOST_POSITION + IPV4_HOST_LENGTH;
/// Bytes before the body length with both hosts IPv4.
pub const FIXED_PART_V4: usize = STORE_TIMESTAMP_POSITION_V4 + 8 + IPV4_HOST_LENGTH + 4 + 8;

const _: () = assert!(QUEUE_OFFSET_POSITION == 20);
const _: () = assert!(PHYSICAL_OFFSET_POSITION == 28);
const _: () = assert!(SYS_FLAG_POSITION == 36);
const _: () = assert!(STORE_TIMESTAMP_POSITION_V4 == 56);
const _: () = assert!(FIXED_PART_V4 + 4 == 88);

/// SYSFLAG bits (format §1.3).
pub mod sys_flag {
    pub const COMPRESSED: i32 = 0x1;
    pub const MULTI_TAGS: i32 = 0x2;
    pub const TRANSACTION_MASK: i32 = 0xC;
    pub const TRANSACTION_NOT_TYPE: i32 = 0x0;
    pub const TRANSACTION_PREPARED: i32 = 0x4;
    pub const TRANSACTION_COMMIT: i32 = 0x8;
    pub const TRANSACTION_ROLLBACK: i32 = 0xC;
    pub const BORN_HOST_V6: i32 = 0x10;
    pub const STORE_HOST_V6: i32 = 0x20;
    pub const INNER_BATCH: i32 = 0x80;
}

/// Topics longer than this need the V2 layout's 2-byte length.
pub const MAX_V1_TOPIC_LENGTH: usize = 127;

/// Everything a record holds except what the store assigns at append time (queue offset,
/// physical offset, store timestamp).
#[derive(Debug, Clone)]
pub struct RecordInput<'a> {
    pub topic: &'a str,
    pub queue_id: i32,
    pub flag: i32,
    pub body: &'a [u8],
    pub body_crc: i32,
    /// The body's CRC-32 before masking, when the writer has it: the record CRC then
    /// shifts past the body instead of reading it a second time.
    pub body_crc32: Option<u32>,
    pub properties: &'a [u8],
    /// Bits other than the host-width bits, which `encode_record` derives from the hosts.
    pub sys_flag: i32,
    pub born_timestamp: i64,
    pub born_host: SocketAddr,
    pub store_host: SocketAddr,
    pub reconsume_times: i32,
    pub prepared_transaction_offset: i64,
}

/// What the store assigns while holding the write lock.
#[derive(Debug, Clone, Copy)]
pub struct Placement {
    pub queue_offset: i64,
    pub physical_offset: i64,
    pub store_timestamp: i64,
}

fn topic_length_width(topic_length: usize) -> usize {
    if topic_length > MAX_V1_TOPIC_LENGTH {
        2
    } else {
        1
    }
}

/// TOTALSIZE per the format's size formula.
pub fn record_length(input: &RecordInput<'_>) -> usize {
    FIXED_PART_V4 - 2 * IPV4_HOST_LENGTH
        + encoded_length(&input.born_host)
        + encoded_length(&input.store_host)
        + 4
        + input.body.len()
        + topic_length_width(input.topic.len())
        + input.topic.len()
        + 2
        + input.properties.len()
}

fn full_sys_flag(input: &RecordInput<'_>) -> i32 {
    let mut flag = input.sys_flag & !(sys_flag::BORN_HOST_V6 | sys_flag::STORE_HOST_V6);
    if input.born_host.is_ipv6() {
        flag |= sys_flag::BORN_HOST_V6;
    }
    if input.store_host.is_ipv6() {
        flag |= sys_flag::STORE_HOST_V6;
    }
    flag
}

/// Write one record into `buf`, which must be exactly `record_length(input)` bytes.
/// V1 layout unless the topic needs V2.
pub fn encode_record(buf: &mut [u8], input: &RecordInput<'_>, placement: Placement) {
    let length = buf.len();
    debug_assert_eq!(length, record_length(input));
    let v2 = input.topic.len() > MAX_V1_TOPIC_LENGTH;
    write_i32(
        buf,
        TOTAL_SIZE_POSITION,
        i32::try_from(length).expect("record length checked by caller"),
    );
    write_i32(buf, MAGIC_POSITION, if v2 { MAGIC_V2 } else { MAGIC_V1 });
    write_i32(buf, BODY_CRC_POSITION, input.body_crc);
    write_i32(buf, QUEUE_ID_POSITION, input.queue_id);
    write_i32(buf, FLAG_POSITION, input.flag);
    write_i64(buf, QUEUE_OFFSET_POSITION, placement.queue_offset);
    write_i64(buf, PHYSICAL_OFFSET_POSITION, placement.physical_offset);
    write_i32(buf, SYS_FLAG_POSITION, full_sys_flag(input));
    write_i64(buf, BORN_TIMESTAMP_POSITION, input.born_timestamp);
    let mut at = BORN_HOST_POSITION + encode_host(buf, BORN_HOST_POSITION, &input.born_host);
    write_i64(buf, at, placement.store_timestamp);
    at += 8;
    at += encode_host(buf, at, &input.store_host);
    write_i32(buf, at, input.reconsume_times);
    at += 4;
    write_i64(buf, at, input.prepared_transaction_offset);
    at += 8;
    write_i32(
        buf,
        at,
        i32::try_from(input.body.len()).expect("body length checked by caller"),
    );
    at += 4;
    let body = input.body_crc32.map(|crc32| KnownBody {
        start: at,
        length: input.body.len(),
        crc32,
    });
    buf[at..at + input.body.len()].copy_from_slice(input.body);
    at += input.body.len();
    if v2 {
        write_i16(
            buf,
            at,
            i16::try_from(input.topic.len()).expect("topic length checked by caller"),
        );
        at += 2;
    } else {
        buf[at] = input.topic.len() as u8;
        at += 1;
    }
    buf[at..at + input.topic.len()].copy_from_slice(input.topic.as_bytes());
    at += input.topic.len();
    write_i16(
        buf,
        at,
        i16::try_from(input.properties.len()).expect("properties length checked by caller"),
    );
    at += 2;
    buf[at..at + input.properties.len()].copy_from_slice(input.properties);
    debug_assert_eq!(at + input.properties.len(), length);
    // Last, because the CRC property covers every byte before it (format §1.5).
    crate::record::crc_property::fill_crc_property(buf, input.properties.len(), body);
}

/// Write the end-of-segment blank: only its size and magic (format §1.2).
pub fn encode_blank(buf: &mut [u8], remaining_in_segment: usize) {
    write_i32(
        buf,
        TOTAL_SIZE_POSITION,
        i32::try_from(remaining_in_segment).expect("segment size fits i32"),
    );
    write_i32(buf, MAGIC_POSITION, BLANK_MAGIC);
}
