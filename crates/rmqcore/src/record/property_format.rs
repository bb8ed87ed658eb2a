//! The bytes and names of a record's properties text (format §1.6), apart from the
//! code that encodes it (`properties.rs`) and the rules for what it may hold
//! (`message_rules.rs`), which both use them.

pub const NAME_VALUE_SEPARATOR: u8 = 0x01;
pub const PROPERTY_SEPARATOR: u8 = 0x02;

pub const PROPERTY_TAGS: &str = "TAGS";
pub const PROPERTY_KEYS: &str = "KEYS";
pub const PROPERTY_UNIQ_KEY: &str = "UNIQ_KEY";
pub const KEY_SEPARATOR: char = ' ';

/// Java reads the properties length as a short.
pub const MAX_PROPERTIES_LENGTH: usize = i16::MAX as usize;
