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
        for key in key_tokens(&stored_text(raw)) {
            visit(key)?;
        }
    }
    Ok(())
}

/// The non-empty tokens of a `KEYS` value split on single spaces. Found with a byte
/// search (memchr), which costs a fraction of `str::split(char)`'s char searcher; a space
/// byte is never inside a longer UTF-8 sequence, so the tokens are the same.
fn key_tokens(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(text);
    std::iter::from_fn(move || loop {
        let current = rest?;
        let (token, next) = match memchr::memchr(KEY_SEPARATOR as u8, current.as_bytes()) {
            Some(at) => (&current[..at], Some(&current[at + 1..])),
            None => (current, None),
        };
        rest = next;
        if !token.is_empty() {
            return Some(token);
        }
    })
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

#[cfg(test)]
mod tests {
    use super::key_tokens;

    #[test]
    fn tokens_are_what_splitting_on_the_space_char_gives() {
        for text in [
            "",
            " ",
            "a",
            "a b",
            "  a  b  ",
            "ключ é😀 order-1",
            "a b ",
            " a",
        ] {
            let expected: Vec<&str> = text.split(' ').filter(|key| !key.is_empty()).collect();
            assert_eq!(key_tokens(text).collect::<Vec<_>>(), expected, "{text:?}");
        }
    }
}
