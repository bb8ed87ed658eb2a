//! RocketMQ's JSON config files (format §4.4): read leniently (fastjson's unquoted integer
//! keys), falling back to the backup; written atomically (`files/atomic_file.rs`).

use std::path::Path;

use crate::error::Result;
use crate::files::atomic_file::{read_with_backup, write_atomically};

/// Load one of RocketMQ's JSON config files (fastjson's unquoted integer keys accepted),
/// falling back to its backup. A missing file is the default value; a file that neither
/// it nor its backup can be parsed from is an error, never silently replaced.
pub fn load_json_config<T: serde::de::DeserializeOwned + Default>(path: &Path) -> Result<T> {
    let parsed = read_with_backup(path, |text| {
        serde_json::from_str(&super::lenient_json::quote_bare_integer_keys(text)).ok()
    })?;
    match parsed {
        Some(value) => Ok(value),
        None if path.exists() => Err(crate::error::Error::corrupt(
            path,
            0,
            format!("{} and its backup are unreadable", path.display()),
        )),
        None => Ok(T::default()),
    }
}

/// Persist a config value pretty-printed, atomically (see `write_atomically`).
pub fn persist_json_config<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(value).expect("config values serialize");
    write_atomically(path, text.as_bytes())
}
