//! Message properties (format §1.6): `name 0x01 value 0x02` for each entry, UTF-8.

use crate::error::{Error, Result};
use crate::record::message_rules::check_property_text;

pub use super::property_format::{
    KEY_SEPARATOR, MAX_PROPERTIES_LENGTH, NAME_VALUE_SEPARATOR, PROPERTY_KEYS, PROPERTY_SEPARATOR,
    PROPERTY_TAGS, PROPERTY_UNIQ_KEY,
};

/// Encode entries in the given order. Names must be non-empty and values non-empty:
/// RocketMQ's parser drops anything else, so storing it would lose it silently.
pub fn encode_properties<'a>(
    entries: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    encode_properties_into(&mut out, entries)?;
    Ok(out)
}

/// `encode_properties`, appending to `out` (which then must not exceed the limit).
pub fn encode_properties_into<'a>(
    out: &mut Vec<u8>,
    entries: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<()> {
    for (name, value) in entries {
        if name.is_empty() {
            return Err(Error::invalid("properties", "a property name is empty"));
        }
        if value.is_empty() {
            return Err(Error::invalid(
                "properties",
                format!("property {name:?} has an empty value"),
            ));
        }
        check_property_text("properties", "property name", name)?;
        check_property_text("properties", "property value", value)?;
        out.extend_from_slice(name.as_bytes());
        out.push(NAME_VALUE_SEPARATOR);
        out.extend_from_slice(value.as_bytes());
        out.push(PROPERTY_SEPARATOR);
    }
    if out.len() > MAX_PROPERTIES_LENGTH {
        return Err(Error::invalid(
            "properties",
            format!(
                "encoded properties are {} bytes, more than {MAX_PROPERTIES_LENGTH}",
                out.len()
            ),
        ));
    }
    Ok(())
}

/// Decode as RocketMQ does: split on 0x02, the first 0x01 separates name from value,
/// entries with an empty name or value are dropped, a repeated name keeps the later value.
pub fn decode_properties(bytes: &[u8]) -> Vec<(String, String)> {
    let mut decoded: Vec<(String, String)> = Vec::new();
    for (name, value) in property_entries(bytes) {
        let name = String::from_utf8_lossy(name).into_owned();
        let value = String::from_utf8_lossy(value).into_owned();
        match decoded.iter_mut().find(|(existing, _)| *existing == name) {
            Some(entry) => entry.1 = value,
            None => decoded.push((name, value)),
        }
    }
    decoded
}

/// The entries of encoded properties as `(name, value)` byte slices, in order, skipping
/// what RocketMQ's parser drops (no 0x01, empty name or value). A repeated name is
/// yielded each time.
pub fn property_entries(bytes: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    bytes
        .split(|b| *b == PROPERTY_SEPARATOR)
        .filter_map(|part| {
            let split = part.iter().position(|b| *b == NAME_VALUE_SEPARATOR)?;
            (split > 0 && split + 1 < part.len()).then(|| (&part[..split], &part[split + 1..]))
        })
}

/// Find one property's value in encoded bytes without decoding the rest. A repeated name
/// yields its last value, as in RocketMQ's map.
pub fn find_property<'a>(bytes: &'a [u8], wanted: &str) -> Option<&'a [u8]> {
    property_entries(bytes)
        .filter(|(name, _)| *name == wanted.as_bytes())
        .last()
        .map(|(_, value)| value)
}

/// The properties that dispatch needs (the consume queue's tags code and the index's
/// keys), found in one pass instead of one search each.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DispatchProperties<'a> {
    pub tags: Option<&'a [u8]>,
    pub keys: Option<&'a [u8]>,
    pub uniq_key: Option<&'a [u8]>,
}

/// The record CRC property's region (format §1.5), spelled here: taking it from
/// `crc_property` would close a module circle (that module reads `RecordView`, which
/// uses this one).
const CRC_REGION_START: &[u8] = b"__CRC32#\x01";
const CRC_REGION_LENGTH: usize = CRC_REGION_START.len() + 10 + 1;

impl<'a> DispatchProperties<'a> {
    /// Same rules as `find_property` (an entry's name ends at its first 0x01; empty
    /// values are dropped; the later of two wins), written as one loop because it runs
    /// for every record dispatched.
    pub fn scan(bytes: &'a [u8]) -> Self {
        let mut found = DispatchProperties::default();
        // A record with no tag, key or property holds only the record CRC's region
        // (`__CRC32#`, 0x01, ten digits, 0x02): nothing to find, and the check is cheaper
        // than the loop (about a tenth of a bodies-only put).
        if bytes.len() == CRC_REGION_LENGTH
            && bytes.starts_with(CRC_REGION_START)
            && bytes[CRC_REGION_LENGTH - 1] == PROPERTY_SEPARATOR
            && !bytes[CRC_REGION_START.len()..CRC_REGION_LENGTH - 1]
                .iter()
                .any(|byte| *byte == NAME_VALUE_SEPARATOR || *byte == PROPERTY_SEPARATOR)
        {
            return found;
        }
        let mut rest = bytes;
        while !rest.is_empty() {
            let end = memchr::memchr(PROPERTY_SEPARATOR, rest).unwrap_or(rest.len());
            let part = &rest[..end];
            let value_of = |name: &[u8]| part.strip_prefix(name).filter(|v| !v.is_empty());
            if let Some(value) = value_of(b"TAGS\x01") {
                found.tags = Some(value);
            } else if let Some(value) = value_of(b"KEYS\x01") {
                found.keys = Some(value);
            } else if let Some(value) = value_of(b"UNIQ_KEY\x01") {
                found.uniq_key = Some(value);
            }
            rest = rest.get(end + 1..).unwrap_or_default();
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_the_format_example() {
        let encoded = encode_properties([
            ("TAGS", "TagA"),
            ("KEYS", "k1 k2"),
            ("UNIQ_KEY", "7F0000010C3A18B4AAC2A1B2C3D40000"),
            ("WAIT", "true"),
        ])
        .unwrap();
        assert_eq!(encoded.len(), 73);
        assert_eq!(
            decode_properties(&encoded)[1],
            ("KEYS".to_string(), "k1 k2".to_string())
        );
        assert_eq!(find_property(&encoded, "WAIT"), Some(&b"true"[..]));
        assert_eq!(find_property(&encoded, "DELAY"), None);
    }

    #[test]
    fn dispatch_scan_agrees_with_find_property() {
        let samples: [&[u8]; 9] = [
            b"",
            b"TAGS\x01a\x02KEYS\x01k1 k2\x02UNIQ_KEY\x01u\x02",
            b"TAGS\x01a\x02TAGS\x01b\x02",
            b"TAGS\x01\x02KEYS\x02\x01x\x02UNIQ_KEY\x01u",
            b"__CRC32#\x010000000000\x02",
            b"\x01TAGS\x02TAGSX\x01y\x02KEYS\x01\x01z\x02",
            // CRC regions: well formed, and damaged into holding a tag or a key.
            b"__CRC32#\x011234567890\x02",
            b"__CRC32#\x01\x02TAGS\x01abc\x02",
            b"__CRC32#\x01\x02KEYS\x01k1\x02\x02",
        ];
        for bytes in samples {
            let scanned = DispatchProperties::scan(bytes);
            assert_eq!(scanned.tags, find_property(bytes, PROPERTY_TAGS));
            assert_eq!(scanned.keys, find_property(bytes, PROPERTY_KEYS));
            assert_eq!(scanned.uniq_key, find_property(bytes, PROPERTY_UNIQ_KEY));
        }
        let both = DispatchProperties::scan(samples[2]);
        assert_eq!(both.tags, Some(&b"b"[..]), "the later value wins");
    }

    #[test]
    fn rejects_separators_and_empty_parts() {
        assert!(encode_properties([("a\u{1}b", "v")]).is_err());
        assert!(encode_properties([("a", "v\u{2}")]).is_err());
        assert!(encode_properties([("", "v")]).is_err());
        assert!(encode_properties([("a", "")]).is_err());
    }

    #[test]
    fn decoding_is_lenient_like_java() {
        let decoded = decode_properties(b"a\x01x\x02\x01y\x02b\x01\x02a\x01z\x01w\x02junk");
        assert_eq!(decoded, vec![("a".to_string(), "z\u{1}w".to_string())]);
    }
}
