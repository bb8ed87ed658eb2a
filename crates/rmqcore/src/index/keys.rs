//! The keys a record is indexed under (format §3.4) and the exact match that filters
//! hash collisions out of query results.

use crate::error::Result;
use crate::record::properties::KEY_SEPARATOR;
use crate::record::{stored_text, sys_flag, RecordView};

/// Visit the keys a record is indexed under, in RocketMQ's order: `UNIQ_KEY`, then each
/// non-empty `KEYS` token. None for ROLLBACK records, which are never indexed.
pub(super) fn visit_index_keys(
    view: &RecordView<'_>,
    mut visit: impl FnMut(&str) -> Result<()>,
) -> Result<()> {
    if view.transaction_type() == sys_flag::TRANSACTION_ROLLBACK {
        return Ok(());
    }
    let properties = view.dispatch_properties();
    if let Some(uniq) = properties.uniq_key.filter(|uniq| !uniq.is_empty()) {
        visit(&stored_text(uniq))?;
    }
    if let Some(raw) = properties.keys {
        for key in stored_text(raw).split(KEY_SEPARATOR) {
            if !key.is_empty() {
                visit(key)?;
            }
        }
    }
    Ok(())
}

/// The keys a record is indexed under (see `visit_index_keys`).
pub fn index_keys(view: &RecordView<'_>) -> Vec<String> {
    let mut keys = Vec::new();
    visit_index_keys(view, |key| {
        keys.push(key.to_owned());
        Ok(())
    })
    .expect("collecting keys cannot fail");
    keys
}

/// Whether a query for `topic`/`key` should return this record: the exact test that
/// filters out hash collisions and other topics' keys.
pub fn record_matches_key(view: &RecordView<'_>, topic: &str, key: &str) -> bool {
    if view.topic != topic.as_bytes() {
        return false;
    }
    // Without collecting the keys into strings: this runs once per lookup answer.
    let mut found = false;
    visit_index_keys(view, |indexed| {
        found |= indexed == key;
        Ok(())
    })
    .expect("matching keys cannot fail");
    found
}
