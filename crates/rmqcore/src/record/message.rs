//! Messages as the store's callers see them: a draft to append, and a stored message read
//! back with every field of its record.

use std::borrow::Cow;
use std::net::SocketAddr;

use crate::error::{Error, Result};
use crate::record::body_crc::{body_crc32, masked_crc};
use crate::record::crc_property::{CRC_PROPERTY_NAME, CRC_PROPERTY_PLACEHOLDER};
use crate::record::message_rules::check_message_fields;
use crate::record::msg_id::create_msg_id;
use crate::record::properties::{
    decode_properties, KEY_SEPARATOR, MAX_PROPERTIES_LENGTH, NAME_VALUE_SEPARATOR, PROPERTY_KEYS,
    PROPERTY_SEPARATOR, PROPERTY_TAGS, PROPERTY_UNIQ_KEY,
};
use crate::record::RecordView;

/// A draft's keys: one is held inline, so that a batch of one-key messages allocates
/// nothing per message for them (a `Vec` per message cost a malloc and a free, about 400
/// instructions a message of a 100 B batch with keys: callgrind). More spill to the heap.
pub type DraftKeys<'a> = smallvec::SmallVec<[Cow<'a, str>; 1]>;

/// A message to append. The body, tags and keys may be borrowed so that a binding can
/// pass its buffers and strings without copying them (a batch's copies and frees of its
/// tags and keys cost it more than encoding the records).
#[derive(Debug, Clone, Default)]
pub struct MessageDraft<'a> {
    pub body: &'a [u8],
    pub tags: Option<Cow<'a, str>>,
    pub keys: DraftKeys<'a>,
    /// User properties; `TAGS` and `KEYS` come from the fields above.
    pub properties: Vec<(String, String)>,
    pub flag: i32,
    pub born_timestamp: Option<i64>,
    pub born_host: Option<SocketAddr>,
}

/// A draft checked and encoded, ready to be written under the write lock.
#[derive(Debug, Clone)]
pub struct PreparedMessage<'a> {
    pub body: &'a [u8],
    pub body_crc: i32,
    /// `body_crc` before masking, which the record CRC extends.
    pub body_crc32: u32,
    pub properties: PreparedProperties,
    pub flag: i32,
    pub born_timestamp: Option<i64>,
    pub born_host: Option<SocketAddr>,
}

/// Where a prepared message's encoded properties are: a batch encodes them all into one
/// buffer (one allocation per batch, not one per message).
#[derive(Debug, Clone)]
pub enum PreparedProperties {
    /// Nothing but the record CRC's placeholder, or nothing at all.
    Fixed(&'static [u8]),
    /// This range of the batch's buffer.
    Encoded(std::ops::Range<usize>),
}

impl PreparedMessage<'_> {
    /// The encoded properties, given the buffer `prepare` wrote into.
    pub fn properties<'b>(&'b self, encoded: &'b [u8]) -> &'b [u8] {
        match &self.properties {
            PreparedProperties::Fixed(bytes) => bytes,
            PreparedProperties::Encoded(range) => &encoded[range.clone()],
        }
    }
}

impl<'a> MessageDraft<'a> {
    /// The `UNIQ_KEY` user property a reader of the record finds (the last one given).
    pub fn uniq_key(&self) -> Option<&str> {
        self.properties
            .iter()
            .rev()
            .find(|(name, _)| name == PROPERTY_UNIQ_KEY)
            .map(|(_, value)| value.as_str())
    }

    /// Validate and encode; everything that can be rejected is rejected here, before the
    /// store takes its lock or writes a byte. The properties are appended to `encoded`.
    /// With `with_record_crc`, the properties end with the placeholder of RocketMQ 5's
    /// whole-record CRC property, filled in when the record is encoded.
    pub fn prepare(
        &self,
        max_message_size: usize,
        with_record_crc: bool,
        encoded: &mut Vec<u8>,
    ) -> Result<PreparedMessage<'a>> {
        if self.body.len() > max_message_size {
            return Err(Error::invalid(
                "body",
                format!("the body is {} bytes, more than the maximum of {max_message_size} (max_message_size)", self.body.len()),
            ));
        }
        // An empty `tags` means none to the embedded API; the wire refuses it earlier.
        let tags = self.tags.as_deref().filter(|tags| !tags.is_empty());
        check_message_fields(
            tags,
            self.keys.iter().map(AsRef::as_ref),
            self.properties
                .iter()
                .map(|(name, value)| (name.as_str(), value.as_str())),
        )?;
        let user_properties = self
            .properties
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()));
        // The checks above are the encoder's too (no separator in any name or value, none
        // empty), so the text is written as is, in one allocation of the final size: name,
        // value and two separators per entry, the keys joined by spaces in place.
        let keys_length = match self.keys.len() {
            0 => 0,
            count => self.keys.iter().map(|key| key.len()).sum::<usize>() + count - 1,
        };
        let capacity = tags.map_or(0, |tags| PROPERTY_TAGS.len() + tags.len() + 2)
            + if keys_length == 0 {
                0
            } else {
                PROPERTY_KEYS.len() + keys_length + 2
            }
            + user_properties
                .clone()
                .map(|(name, value)| name.len() + value.len() + 2)
                .sum::<usize>();
        let properties = if capacity == 0 {
            PreparedProperties::Fixed(if with_record_crc {
                &CRC_PROPERTY_PLACEHOLDER[..]
            } else {
                &[][..]
            })
        } else {
            let crc_length = if with_record_crc {
                CRC_PROPERTY_PLACEHOLDER.len()
            } else {
                0
            };
            let total = capacity + crc_length;
            if total > MAX_PROPERTIES_LENGTH {
                return Err(Error::invalid(
                    "properties",
                    format!(
                        "encoded properties are {total} bytes{}, more than {MAX_PROPERTIES_LENGTH}",
                        if with_record_crc {
                            " with the record CRC"
                        } else {
                            ""
                        }
                    ),
                ));
            }
            let start = encoded.len();
            let properties = encoded;
            properties.reserve(total);
            // Written piece by piece, not through a helper taking each value as a list of
            // parts: the fixed pieces (names, separators) become plain moves and only the
            // tag and key text is copied by length; the helper cost about 70 instructions
            // a message of a 100 B batch with a tag and a key (callgrind).
            if let Some(tags) = tags {
                properties.extend_from_slice(PROPERTY_TAGS.as_bytes());
                properties.push(NAME_VALUE_SEPARATOR);
                properties.extend_from_slice(tags.as_bytes());
                properties.push(PROPERTY_SEPARATOR);
            }
            if let Some((first, more)) = self.keys.split_first() {
                properties.extend_from_slice(PROPERTY_KEYS.as_bytes());
                properties.push(NAME_VALUE_SEPARATOR);
                properties.extend_from_slice(first.as_bytes());
                for key in more {
                    properties.push(KEY_SEPARATOR as u8);
                    properties.extend_from_slice(key.as_bytes());
                }
                properties.push(PROPERTY_SEPARATOR);
            }
            for (name, value) in user_properties {
                properties.extend_from_slice(name.as_bytes());
                properties.push(NAME_VALUE_SEPARATOR);
                properties.extend_from_slice(value.as_bytes());
                properties.push(PROPERTY_SEPARATOR);
            }
            if with_record_crc {
                properties.extend_from_slice(CRC_PROPERTY_PLACEHOLDER);
            }
            debug_assert_eq!(properties.len() - start, total);
            PreparedProperties::Encoded(start..start + total)
        };
        let body_crc32 = body_crc32(self.body);
        Ok(PreparedMessage {
            body: self.body,
            body_crc: masked_crc(body_crc32),
            body_crc32,
            properties,
            flag: self.flag,
            born_timestamp: self.born_timestamp,
            born_host: self.born_host,
        })
    }
}

/// A message read back from the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMessage {
    pub topic: String,
    pub queue_id: i32,
    pub queue_offset: i64,
    pub commitlog_offset: i64,
    pub store_size: i32,
    pub body: Vec<u8>,
    pub body_crc: i32,
    pub tags: Option<String>,
    pub keys: Vec<String>,
    pub properties: Vec<(String, String)>,
    pub born_timestamp: i64,
    pub store_timestamp: i64,
    pub born_host: SocketAddr,
    pub store_host: SocketAddr,
    pub msg_id: String,
    pub flag: i32,
    pub sys_flag: i32,
    pub reconsume_times: i32,
    pub prepared_transaction_offset: i64,
}

/// A record's properties as a reader sees them: the tag, the keys, and the rest (the
/// record CRC property hidden: it is storage integrity, not the producer's, like the
/// header fields).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MessageProperties {
    pub tags: Option<String>,
    pub keys: Vec<String>,
    pub properties: Vec<(String, String)>,
}

impl MessageProperties {
    pub fn decode(raw: &[u8]) -> Self {
        let mut out = MessageProperties::default();
        for (name, value) in decode_properties(raw) {
            match name.as_str() {
                PROPERTY_TAGS => out.tags = Some(value),
                CRC_PROPERTY_NAME => {}
                PROPERTY_KEYS => {
                    out.keys = value
                        .split(KEY_SEPARATOR)
                        .filter(|k| !k.is_empty())
                        .map(str::to_owned)
                        .collect()
                }
                _ => out.properties.push((name, value)),
            }
        }
        out
    }
}

impl StoredMessage {
    pub fn from_record(view: &RecordView<'_>) -> Self {
        let MessageProperties {
            tags,
            keys,
            properties,
        } = MessageProperties::decode(view.properties);
        StoredMessage {
            topic: view.topic_str().into_owned(),
            queue_id: view.queue_id,
            queue_offset: view.queue_offset,
            commitlog_offset: view.physical_offset,
            store_size: i32::try_from(view.total_size).unwrap_or(i32::MAX),
            body: view.body.to_vec(),
            body_crc: view.body_crc,
            tags,
            keys,
            properties,
            born_timestamp: view.born_timestamp,
            store_timestamp: view.store_timestamp,
            born_host: view.born_host,
            store_host: view.store_host,
            msg_id: create_msg_id(&view.store_host, view.physical_offset),
            flag: view.flag,
            sys_flag: view.sys_flag,
            reconsume_times: view.reconsume_times,
            prepared_transaction_offset: view.prepared_transaction_offset,
        }
    }
}

/// Where `put` stored a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PutResult {
    /// The host in the message id (the store's address).
    pub store_host: SocketAddr,
    pub commitlog_offset: i64,
    pub queue_offset: i64,
    pub store_timestamp: i64,
    pub store_size: i32,
}

impl PutResult {
    /// RocketMQ's offset message id (format §1.4), formed on demand: most callers of a
    /// batch put never look at it.
    pub fn msg_id(&self) -> String {
        create_msg_id(&self.store_host, self.commitlog_offset)
    }
}
