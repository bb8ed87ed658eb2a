//! Message properties (format §1.6): `name 0x01 value 0x02` for each entry, UTF-8.

use crate::error::{Error, Result};

pub const NAME_VALUE_SEPARATOR: u8 = 0x01;
pub const PROPERTY_SEPARATOR: u8 = 0x02;

pub const PROPERTY_TAGS: &str = "TAGS";
pub const PROPERTY_KEYS: &str = "KEYS";
pub const PROPERTY_UNIQ_KEY: &str = "UNIQ_KEY";
pub const KEY_SEPARATOR: char = ' ';

/// Java reads the properties length as a short.
pub const MAX_PROPERTIES_LENGTH: usize = i16::MAX as usize;

/// Reject text that would change the meaning of the encoded properties.
pub fn check_property_text(argument: &'static str, text: &str) -> Result<()> {
    if text
        .bytes()
        .any(|b| b == NAME_VALUE_SEPARATOR || b == PROPERTY_SEPARATOR)
    {
        return Err(Error::invalid(
            argument,
            format!("{text:?} contains a property separator byte (0x01 or 0x02)"),
        ));
    }
    Ok(())
}

/// Encode entries in the given order. Names must be non-empty and values non-empty:
/// RocketMQ's parser drops anything else, so storing it would lose it silently.
pub fn encode_properties<'a>(
    entries: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<Vec<u8>> {
    let mut out = Vec::new();
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
        check_property_text("properties", name)?;
        check_property_text("properties", value)?;
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
    Ok(out)
}

/// Decode as RocketMQ does: split on 0x02, the first 0x01 separates name from value,
/// entries with an empty name or value are dropped, a repeated name keeps the later value.
pub fn decode_properties(bytes: &[u8]) -> Vec<(String, String)> {
    let mut entries: Vec<(String, String)> = Vec::new();
    for part in bytes.split(|b| *b == PROPERTY_SEPARATOR) {
        let Some(split) = part.iter().position(|b| *b == NAME_VALUE_SEPARATOR) else {
            continue;
        };
        let (name, value) = (&part[..split], &part[split + 1..]);
        if name.is_empty() || value.is_empty() {
            continue;
        }
        let name = String::from_utf8_lossy(name).into_owned();
        let value = String::from_utf8_lossy(value).into_owned();
        match entries.iter_mut().find(|(existing, _)| *existing == name) {
            Some(entry) => entry.1 = value,
            None => entries.push((name, value)),
        }
    }
    entries
}

/// Find one property's value in encoded bytes without decoding the rest.
pub fn find_property<'a>(bytes: &'a [u8], wanted: &str) -> Option<&'a [u8]> {
    let mut found = None;
    for part in bytes.split(|b| *b == PROPERTY_SEPARATOR) {
        if let Some(split) = part.iter().position(|b| *b == NAME_VALUE_SEPARATOR) {
            if &part[..split] == wanted.as_bytes() && split + 1 < part.len() {
                found = Some(&part[split + 1..]);
            }
        }
    }
    found
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
