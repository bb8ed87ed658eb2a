//! `put_batch`'s columns: the tags and keys of a batch of bytes bodies given beside them
//! (`tags=`, `keys=`), so that a bulk writer builds no `rmq.Message` per message (building
//! one costs about as much as storing it).

use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};

use crate::errors::invalid;
use crate::message::{extract_keys, Metadata};

pub struct Columns {
    tags: Tags,
    keys: Option<Vec<Vec<String>>>,
}

enum Tags {
    None,
    All(String),
    Each(Vec<Option<String>>),
}

impl Columns {
    /// `tags`: one tag for every message, or one (or None) per message; `keys`: per
    /// message, what `Store.put`'s `keys` takes (or None). Both as long as the batch.
    pub fn extract(
        py: Python<'_>,
        count: usize,
        tags: Option<&Bound<'_, PyAny>>,
        keys: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let tags = match tags.filter(|tags| !tags.is_none()) {
            None => Tags::None,
            Some(tag) if tag.is_instance_of::<PyString>() => Tags::All(tag.extract()?),
            Some(column) => {
                let column = sequence(py, "tags", column, count)?;
                Tags::Each(
                    column
                        .iter()
                        .map(|tag| {
                            tag.extract::<Option<String>>().map_err(|_| {
                                invalid(py, "tags", "each tag must be a string or None")
                            })
                        })
                        .collect::<PyResult<_>>()?,
                )
            }
        };
        let keys = match keys.filter(|keys| !keys.is_none()) {
            None => None,
            Some(column) => Some(
                sequence(py, "keys", column, count)?
                    .iter()
                    .map(|keys| extract_keys(py, Some(keys)))
                    .collect::<PyResult<_>>()?,
            ),
        };
        Ok(Columns { tags, keys })
    }

    pub fn given(&self) -> bool {
        !matches!(self.tags, Tags::None) || self.keys.is_some()
    }

    /// Message `index`'s fields, moved out of the columns (each index is taken once).
    pub fn take(&mut self, index: usize) -> Option<Metadata> {
        if !self.given() {
            return None;
        }
        let tags = match &mut self.tags {
            Tags::None => None,
            Tags::All(tag) => Some(tag.clone()),
            Tags::Each(tags) => tags[index].take(),
        };
        let keys = self
            .keys
            .as_mut()
            .map(|keys| std::mem::take(&mut keys[index]))
            .unwrap_or_default();
        Some(Metadata {
            tags,
            keys,
            ..Metadata::default()
        })
    }
}

/// A list or tuple of exactly `count` items (a string is not a column).
fn sequence<'py>(
    py: Python<'py>,
    argument: &'static str,
    column: &Bound<'py, PyAny>,
    count: usize,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let items: Vec<Bound<'py, PyAny>> = if let Ok(list) = column.cast::<PyList>() {
        list.iter().collect()
    } else if let Ok(tuple) = column.cast::<PyTuple>() {
        tuple.iter().collect()
    } else {
        return Err(invalid(
            py,
            argument,
            "must be a list or tuple with one entry per message",
        ));
    };
    if items.len() != count {
        return Err(invalid(
            py,
            argument,
            format!("has {} entries for {count} messages", items.len()),
        ));
    }
    Ok(items)
}
