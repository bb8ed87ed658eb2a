//! Reading a record in place: the decoder and the view it gives (format §1.2), and why
//! bytes are not a record.

use std::cell::OnceCell;
use std::net::SocketAddr;

use crate::big_endian::{read_i16, read_i32, read_i64};
use crate::record::host::{decode_host, IPV4_HOST_LENGTH, IPV6_HOST_LENGTH};
use crate::record::properties::{find_property, DispatchProperties, KEY_SEPARATOR};

use super::{
    sys_flag, BLANK_MAGIC, BODY_CRC_POSITION, BORN_HOST_POSITION, BORN_TIMESTAMP_POSITION,
    FLAG_POSITION, MAGIC_POSITION, MAGIC_V1, MAGIC_V2, PHYSICAL_OFFSET_POSITION, QUEUE_ID_POSITION,
    QUEUE_OFFSET_POSITION, SYS_FLAG_POSITION, TOTAL_SIZE_POSITION,
};

/// A record decoded in place: every field, borrowing body, topic and properties.
#[derive(Debug, Clone)]
pub struct RecordView<'a> {
    pub total_size: usize,
    pub magic: i32,
    pub body_crc: i32,
    pub queue_id: i32,
    pub flag: i32,
    pub queue_offset: i64,
    pub physical_offset: i64,
    pub sys_flag: i32,
    pub born_timestamp: i64,
    pub born_host: SocketAddr,
    pub store_timestamp: i64,
    pub store_host: SocketAddr,
    pub reconsume_times: i32,
    pub prepared_transaction_offset: i64,
    pub body: &'a [u8],
    pub topic: &'a [u8],
    pub properties: &'a [u8],
    /// The whole record (`total_size` bytes): what a reader copies to decode it later.
    pub raw: &'a [u8],
    /// Tags and keys, found in one pass over `properties` the first time any is asked
    /// for: dispatch asks for all three of each record it writes.
    dispatch_properties: OnceCell<DispatchProperties<'a>>,
}

/// Stored text (a topic, tags, keys), invalid UTF-8 replaced as Java's decoder replaces
/// it. Valid text (all a writer of rmq can store) is checked by `from_utf8`, whose ASCII
/// path is several times cheaper than the lossy decoder's; dispatch runs this for every
/// record it indexes.
pub fn stored_text(raw: &[u8]) -> std::borrow::Cow<'_, str> {
    // ASCII (topics, tags and keys nearly always) is checked eight bytes a step; a short
    // string through `from_utf8` cost about as much as the lossy decoder.
    if raw.is_ascii() {
        // SAFETY: ASCII bytes are valid UTF-8.
        return std::borrow::Cow::Borrowed(unsafe { std::str::from_utf8_unchecked(raw) });
    }
    match std::str::from_utf8(raw) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(raw),
    }
}

impl<'a> RecordView<'a> {
    pub fn topic_str(&self) -> std::borrow::Cow<'a, str> {
        stored_text(self.topic)
    }

    pub fn property(&self, name: &str) -> Option<&'a [u8]> {
        find_property(self.properties, name)
    }

    pub fn dispatch_properties(&self) -> DispatchProperties<'a> {
        *self
            .dispatch_properties
            .get_or_init(|| DispatchProperties::scan(self.properties))
    }

    pub fn tags(&self) -> Option<&'a [u8]> {
        self.dispatch_properties().tags
    }

    /// The `KEYS` tokens (split on a single space, empty tokens dropped).
    pub fn keys(&self) -> Vec<String> {
        match self.dispatch_properties().keys {
            Some(raw) => stored_text(raw)
                .split(KEY_SEPARATOR)
                .filter(|key| !key.is_empty())
                .map(str::to_owned)
                .collect(),
            None => Vec::new(),
        }
    }

    pub fn uniq_key(&self) -> Option<&'a [u8]> {
        self.dispatch_properties().uniq_key
    }

    pub fn transaction_type(&self) -> i32 {
        self.sys_flag & sys_flag::TRANSACTION_MASK
    }

    /// PREPARED and ROLLBACK records never reach a consume queue (format §1.3).
    pub fn is_dispatched_to_consume_queue(&self) -> bool {
        !matches!(
            self.transaction_type(),
            sys_flag::TRANSACTION_PREPARED | sys_flag::TRANSACTION_ROLLBACK
        )
    }
}

/// The outcome of reading at a position.
#[derive(Debug, Clone)]
// Returned by value for every record read; boxing the record would allocate each time.
#[allow(clippy::large_enum_variant)]
pub enum Decoded<'a> {
    Record(RecordView<'a>),
    /// End-of-segment blank: the log continues at the next segment.
    Blank,
    /// Zero bytes where a record would start: the end of written data.
    End,
}

/// Why bytes are not a valid record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    Truncated {
        needed: usize,
        available: usize,
    },
    BadMagic(i32),
    BadLength(String),
    LengthMismatch {
        declared: usize,
        computed: usize,
    },
    BodyCrcMismatch {
        stored: i32,
        computed: i32,
    },
    /// The 5.x whole-record CRC property does not match the record's bytes.
    RecordCrcMismatch,
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::Truncated { needed, available } => {
                write!(
                    f,
                    "record is truncated: needs {needed} bytes, {available} remain"
                )
            }
            DecodeError::BadMagic(magic) => write!(f, "bad magic code {:#010x}", *magic as u32),
            DecodeError::BadLength(what) => write!(f, "bad length: {what}"),
            DecodeError::LengthMismatch { declared, computed } => write!(
                f,
                "TOTALSIZE says {declared} bytes but the fields add up to {computed}"
            ),
            DecodeError::BodyCrcMismatch { stored, computed } => {
                write!(f, "body CRC mismatch: stored {stored}, computed {computed}")
            }
            DecodeError::RecordCrcMismatch => {
                write!(
                    f,
                    "record CRC property (__CRC32#) does not match the record"
                )
            }
        }
    }
}

fn need(buf: &[u8], needed: usize) -> Result<(), DecodeError> {
    if buf.len() < needed {
        Err(DecodeError::Truncated {
            needed,
            available: buf.len(),
        })
    } else {
        Ok(())
    }
}

/// Decode the record at the start of `buf` (which runs to the end of its segment).
pub fn decode_record(buf: &[u8], check_body_crc: bool) -> Result<Decoded<'_>, DecodeError> {
    need(buf, 8)?;
    let declared = read_i32(buf, TOTAL_SIZE_POSITION);
    let magic = read_i32(buf, MAGIC_POSITION);
    if declared == 0 && magic == 0 {
        return Ok(Decoded::End);
    }
    if magic == BLANK_MAGIC {
        return Ok(Decoded::Blank);
    }
    if magic != MAGIC_V1 && magic != MAGIC_V2 {
        return Err(DecodeError::BadMagic(magic));
    }
    let declared = usize::try_from(declared)
        .map_err(|_| DecodeError::BadLength(format!("TOTALSIZE {declared} is negative")))?;
    need(buf, declared)?;
    let record = &buf[..declared];
    need(record, BORN_HOST_POSITION)?;
    let sys_flag = read_i32(record, SYS_FLAG_POSITION);
    let born_width = if sys_flag & sys_flag::BORN_HOST_V6 != 0 {
        IPV6_HOST_LENGTH
    } else {
        IPV4_HOST_LENGTH
    };
    let store_width = if sys_flag & sys_flag::STORE_HOST_V6 != 0 {
        IPV6_HOST_LENGTH
    } else {
        IPV4_HOST_LENGTH
    };
    let store_timestamp_at = BORN_HOST_POSITION + born_width;
    let store_host_at = store_timestamp_at + 8;
    let reconsume_at = store_host_at + store_width;
    let body_length_at = reconsume_at + 4 + 8;
    need(record, body_length_at + 4)?;
    let body_length = read_i32(record, body_length_at);
    let body_length = usize::try_from(body_length)
        .map_err(|_| DecodeError::BadLength(format!("body length {body_length} is negative")))?;
    let body_at = body_length_at + 4;
    let topic_length_at = body_at
        .checked_add(body_length)
        .ok_or_else(|| DecodeError::BadLength("body".into()))?;
    let (topic_length, topic_at) = if magic == MAGIC_V2 {
        need(record, topic_length_at + 2)?;
        let length = read_i16(record, topic_length_at);
        let length = usize::try_from(length)
            .map_err(|_| DecodeError::BadLength(format!("topic length {length} is negative")))?;
        (length, topic_length_at + 2)
    } else {
        need(record, topic_length_at + 1)?;
        // Java reads the V1 topic length as a signed byte.
        let length = record[topic_length_at] as i8;
        let length = usize::try_from(length)
            .map_err(|_| DecodeError::BadLength(format!("topic length {length} is negative")))?;
        (length, topic_length_at + 1)
    };
    let properties_length_at = topic_at + topic_length;
    need(record, properties_length_at + 2)?;
    let properties_length = read_i16(record, properties_length_at);
    let properties_length = usize::try_from(properties_length).map_err(|_| {
        DecodeError::BadLength(format!("properties length {properties_length} is negative"))
    })?;
    let properties_at = properties_length_at + 2;
    let computed = properties_at + properties_length;
    if computed != declared {
        return Err(DecodeError::LengthMismatch { declared, computed });
    }
    let body = &record[body_at..body_at + body_length];
    let body_crc = read_i32(record, BODY_CRC_POSITION);
    let properties = &record[properties_at..properties_at + properties_length];
    if check_body_crc {
        check_crcs(record, body, body_crc, properties)?;
    }
    let view = RecordView {
        total_size: declared,
        magic,
        body_crc,
        queue_id: read_i32(record, QUEUE_ID_POSITION),
        flag: read_i32(record, FLAG_POSITION),
        queue_offset: read_i64(record, QUEUE_OFFSET_POSITION),
        physical_offset: read_i64(record, PHYSICAL_OFFSET_POSITION),
        sys_flag,
        born_timestamp: read_i64(record, BORN_TIMESTAMP_POSITION),
        born_host: decode_host(record, BORN_HOST_POSITION, born_width == IPV6_HOST_LENGTH),
        store_timestamp: read_i64(record, store_timestamp_at),
        store_host: decode_host(record, store_host_at, store_width == IPV6_HOST_LENGTH),
        reconsume_times: read_i32(record, reconsume_at),
        prepared_transaction_offset: read_i64(record, reconsume_at + 4),
        body,
        topic: &record[topic_at..topic_at + topic_length],
        properties,
        raw: record,
        dispatch_properties: OnceCell::new(),
    };
    Ok(Decoded::Record(view))
}

/// One CRC pass over the record (format §1.5): the record CRC property when the record
/// has one, since it covers every byte before it (the body and BODYCRC among them, so a
/// changed body or BODYCRC fails it), otherwise the body CRC. RocketMQ's
/// `forceVerifyPropCRC` checks the same way; two passes cost a scan a third of its time.
fn check_crcs(
    record: &[u8],
    body: &[u8],
    body_crc: i32,
    properties: &[u8],
) -> Result<(), DecodeError> {
    match crate::record::crc_property::check_record_crc(properties, record) {
        Some(true) => Ok(()),
        Some(false) => Err(DecodeError::RecordCrcMismatch),
        None if body.is_empty() => Ok(()),
        None => {
            let computed = crate::record::body_crc::body_crc(body);
            if computed == body_crc {
                Ok(())
            } else {
                Err(DecodeError::BodyCrcMismatch {
                    stored: body_crc,
                    computed,
                })
            }
        }
    }
}

#[cfg(test)]
mod stored_text_tests {
    use super::stored_text;

    #[test]
    fn stored_text_equals_the_lossy_decoder_on_valid_and_broken_text() {
        let samples: [&[u8]; 6] = [
            b"",
            b"TagA",
            "caf\u{e9} \u{1F600}".as_bytes(),
            b"bad \xff byte",
            b"cut \xe2\x82",
            b"\xc0\x80 overlong",
        ];
        for raw in samples {
            assert_eq!(stored_text(raw), String::from_utf8_lossy(raw), "{raw:?}");
        }
        assert!(matches!(
            stored_text(b"TagA"),
            std::borrow::Cow::Borrowed("TagA")
        ));
        assert_eq!(stored_text(b"bad \xff byte"), "bad \u{FFFD} byte");
    }
}
