//! What a message's tags, keys and user properties may hold. These are the only copy of
//! the rules: the engine applies them to every draft it stores, the shard's native data
//! plane asks them before it takes a request, and the Python broker calls them
//! (`rmq._rmqcore.validate_message_fields`) for its precise errors.
//!
//! Each rule protects the record format (format §1.6): properties are `name 0x01 value
//! 0x02` text, keys are joined with spaces into `KEYS`, and RocketMQ's parser drops an
//! empty name or value, so storing one would lose it silently.

use crate::error::{Error, Result};
use crate::record::crc_property::CRC_PROPERTY_NAME;
use crate::record::properties::{
    KEY_SEPARATOR, NAME_VALUE_SEPARATOR, PROPERTY_KEYS, PROPERTY_SEPARATOR, PROPERTY_TAGS,
};

/// Refuse text holding a byte that separates properties in the record.
pub fn check_property_text(argument: &'static str, what: &str, text: &str) -> Result<()> {
    match text
        .bytes()
        .find(|b| *b == NAME_VALUE_SEPARATOR || *b == PROPERTY_SEPARATOR)
    {
        None => Ok(()),
        Some(byte) => Err(Error::invalid(
            argument,
            format!("{what} {text:?} contains the byte 0x{byte:02x}, which separates properties in the record"),
        )),
    }
}

/// Tags as given on the wire: present means non-empty (leave them unset instead).
pub fn check_tags(tags: &str) -> Result<()> {
    if tags.is_empty() {
        return Err(Error::invalid("tags", "tags is empty; leave it unset"));
    }
    check_property_text("tags", "tags", tags)
}

pub fn check_key(key: &str) -> Result<()> {
    if key.is_empty() {
        return Err(Error::invalid("keys", "a key is empty"));
    }
    if key.contains(KEY_SEPARATOR) {
        return Err(Error::invalid(
            "keys",
            format!("key {key:?} contains a space, which separates keys"),
        ));
    }
    check_property_text("keys", "key", key)
}

/// A user property: `TAGS` and `KEYS` come from their own fields, and the record CRC's
/// property is the store's.
pub fn check_user_property(name: &str, value: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::invalid("properties", "a property name is empty"));
    }
    if name == PROPERTY_TAGS || name == PROPERTY_KEYS {
        return Err(Error::invalid(
            "properties",
            format!(
                "property {name:?} is reserved; use the {} field",
                name.to_lowercase()
            ),
        ));
    }
    if name == CRC_PROPERTY_NAME {
        return Err(Error::invalid(
            "properties",
            format!("property {name:?} is reserved for the record CRC"),
        ));
    }
    if value.is_empty() {
        return Err(Error::invalid(
            "properties",
            format!("property {name:?} has an empty value, which the record format cannot keep"),
        ));
    }
    check_property_text("properties", "property name", name)?;
    check_property_text("properties", "property value", value)
}

/// Every rule for one message's tags, keys and user properties; the first broken one.
pub fn check_message_fields<'a>(
    tags: Option<&str>,
    keys: impl IntoIterator<Item = &'a str>,
    properties: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<()> {
    if let Some(tags) = tags {
        check_tags(tags)?;
    }
    for key in keys {
        check_key(key)?;
    }
    for (name, value) in properties {
        check_user_property(name, value)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(result: Result<()>, fragment: &str) {
        let message = result.expect_err("refused").to_string();
        assert!(message.contains(fragment), "{message}");
    }

    #[test]
    fn plain_fields_pass() {
        check_message_fields(Some("TagA"), ["k1", "k2"], [("color", "red")]).unwrap();
        check_message_fields(None, [], []).unwrap();
    }

    #[test]
    fn each_rule_names_what_is_wrong() {
        refused(check_tags(""), "leave it unset");
        refused(check_tags("a\u{1}b"), "separates properties");
        refused(check_key(""), "a key is empty");
        refused(check_key("a b"), "contains a space");
        refused(check_key("a\u{2}"), "0x02");
        refused(check_user_property("", "v"), "name is empty");
        refused(check_user_property("TAGS", "v"), "use the tags field");
        refused(check_user_property("KEYS", "v"), "use the keys field");
        refused(check_user_property(CRC_PROPERTY_NAME, "v"), "record CRC");
        refused(check_user_property("n", ""), "empty value");
        refused(check_user_property("n\u{1}", "v"), "property name");
        refused(check_user_property("n", "v\u{2}"), "property value");
    }
}
