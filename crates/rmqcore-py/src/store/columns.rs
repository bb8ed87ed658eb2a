//! `put_batch`'s columns: the tags and keys of a batch of bytes bodies given beside them
//! (`tags=`, `keys=`), so that a bulk writer builds no `rmq.Message` per message (building
//! one costs about as much as storing it).

use std::borrow::Cow;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

use rmqcore::DraftKeys;

use crate::errors::invalid;
use crate::message::{extract_keys, keys_of_text, DraftParts, Metadata, PyMessage};

/// A batch's bodies, and beside them each message's fields (None for a bare body).
pub type BodiesAndFields<'py, 'a> = (Vec<Bound<'py, PyBytes>>, Vec<Option<Metadata<'a>>>);

/// A batch call's `messages` argument as its items. A list (what a bulk writer passes)
/// is read directly: the generic iterator protocol cost about 90 instructions a message
/// of a 100 B batch (callgrind), more than the rest of reading its item.
pub fn batch_items<'py>(
    py: Python<'py>,
    messages: &Bound<'py, PyAny>,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    match messages.cast::<PyList>() {
        Ok(list) => Ok(list.iter().collect()),
        Err(_) => messages
            .try_iter()
            .map_err(|_| invalid(py, "messages", "must be a sequence of bytes or rmq.Message"))?
            .collect(),
    }
}

/// A batch call's messages (`Store.put_batch`, `Producer.send_batch`) read in one pass:
/// each body, and each message's fields unless it is a bare body with no columns beside
/// it. Bytes bodies take their tags and keys from `columns`; an `rmq.Message` carries its
/// own, so columns given with messages are refused.
pub fn read_messages<'a, 'py>(
    py: Python<'py>,
    items: &[Bound<'py, PyAny>],
    columns: &'a Columns<'py>,
) -> PyResult<BodiesAndFields<'py, 'a>> {
    let mut bodies = Vec::with_capacity(items.len());
    let mut metadata = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        if let Ok(bytes) = item.cast::<PyBytes>() {
            bodies.push(bytes.clone());
            metadata.push(columns.take(py, index)?);
        } else if let Ok(message) = item.cast::<PyMessage>() {
            let parts = checked_parts(py, message, columns)?;
            bodies.push(parts.body.bind(py).clone());
            metadata.push(Some(parts.metadata));
        } else {
            return Err(not_a_message(py, index));
        }
    }
    Ok((bodies, metadata))
}

/// An `rmq.Message`'s body and fields, refused when columns were given: it carries its own.
fn checked_parts<'a>(
    py: Python<'_>,
    message: &Bound<'_, PyMessage>,
    columns: &Columns<'_>,
) -> PyResult<DraftParts<'a>> {
    if columns.given() {
        return Err(invalid(
            py,
            "messages",
            "tags= and keys= go with bytes bodies; an rmq.Message carries its own",
        ));
    }
    Ok(message.get().draft_parts(py))
}

/// The error for item `index` of a batch that is neither bytes nor an `rmq.Message`.
fn not_a_message(py: Python<'_>, index: usize) -> PyErr {
    invalid(
        py,
        "messages",
        format!("message {index}: must be bytes or rmq.Message"),
    )
}

/// The `rmq.Message`s of a batch call, in order, each split into its body and fields
/// (bytes bodies are not here: a draft borrows them from the call's items). Checked as
/// `read_messages` checks: columns go with bytes bodies only.
pub struct MessageParts<'py, 'a> {
    pub bodies: Vec<Bound<'py, PyBytes>>,
    pub metadata: Vec<Metadata<'a>>,
}

pub fn message_parts<'py, 'a>(
    py: Python<'py>,
    items: &[Bound<'py, PyAny>],
    columns: &Columns<'py>,
) -> PyResult<MessageParts<'py, 'a>> {
    let mut parts = MessageParts {
        bodies: Vec::new(),
        metadata: Vec::new(),
    };
    for (index, item) in items.iter().enumerate() {
        if item.is_instance_of::<PyBytes>() {
            continue;
        }
        let Ok(message) = item.cast::<PyMessage>() else {
            return Err(not_a_message(py, index));
        };
        let message = checked_parts(py, message, columns)?;
        parts.bodies.push(message.body.into_bound(py));
        parts.metadata.push(message.metadata);
    }
    Ok(parts)
}

/// The columns as Python gave them, checked for shape and type; each message's strings
/// are borrowed from them when its draft is made.
///
/// A column is held as a tuple: a list is copied into one in a single call, which takes
/// a reference to each item for the column's lifetime (another thread may change the list
/// while the GIL is released), and items are then borrowed from it. Collecting each item
/// as a `Bound` of its own cost about 50 instructions per message and column of a 100 B
/// batch (callgrind).
pub struct Columns<'py> {
    /// Messages in the batch: the length of each column.
    count: usize,
    tags: Tags<'py>,
    keys: Option<Bound<'py, PyTuple>>,
    /// The keys of the messages whose `keys` is a list or tuple of strings, each held
    /// here so that its text can be borrowed (a list may change once Python runs again;
    /// a string cannot): where each message's are, by message (None: not such a
    /// sequence). Copying each key into a `String` of its own was an allocation and a
    /// free per message.
    key_spans: Vec<Option<(usize, usize)>>,
    key_strings: Vec<Bound<'py, PyString>>,
}

/// Hold the keys of `item` if it is a list or tuple of strings: their span in `held`.
fn hold_key_sequence<'py>(
    item: &Bound<'py, PyAny>,
    held: &mut Vec<Bound<'py, PyString>>,
) -> Option<(usize, usize)> {
    let start = held.len();
    let mut hold = |key: Bound<'py, PyAny>| match key.cast_into::<PyString>() {
        Ok(key) => {
            held.push(key);
            true
        }
        Err(_) => false,
    };
    let all_strings = if let Ok(list) = item.cast::<PyList>() {
        list.iter().all(&mut hold)
    } else if let Ok(tuple) = item.cast::<PyTuple>() {
        tuple.iter().all(&mut hold)
    } else {
        false
    };
    if all_strings {
        Some((start, held.len()))
    } else {
        held.truncate(start);
        None
    }
}

enum Tags<'py> {
    None,
    All(Bound<'py, PyString>),
    /// Each a `str` or None.
    Each(Bound<'py, PyTuple>),
}

impl<'py> Columns<'py> {
    /// `tags`: one tag for every message, or one (or None) per message; `keys`: per
    /// message, what `Store.put`'s `keys` takes (or None). Both as long as the batch.
    pub fn extract(
        py: Python<'py>,
        count: usize,
        tags: Option<&Bound<'py, PyAny>>,
        keys: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Self> {
        let tags = match tags.filter(|tags| !tags.is_none()) {
            None => Tags::None,
            Some(tag) if tag.is_instance_of::<PyString>() => {
                Tags::All(tag.cast::<PyString>()?.clone())
            }
            Some(column) => {
                let column = sequence(py, "tags", column, count)?;
                for tag in column.iter() {
                    if !tag.is_none() && !tag.is_instance_of::<PyString>() {
                        return Err(invalid(py, "tags", "each tag must be a string or None"));
                    }
                }
                Tags::Each(column)
            }
        };
        let keys = match keys.filter(|keys| !keys.is_none()) {
            None => None,
            Some(column) => Some(sequence(py, "keys", column, count)?),
        };
        let mut key_spans = Vec::new();
        let mut key_strings = Vec::new();
        if let Some(column) = &keys {
            key_spans.reserve(count);
            for item in column.iter() {
                key_spans.push(hold_key_sequence(&item, &mut key_strings));
            }
        }
        Ok(Columns {
            count,
            tags,
            keys,
            key_spans,
            key_strings,
        })
    }

    pub fn given(&self) -> bool {
        !matches!(self.tags, Tags::None) || self.keys.is_some()
    }

    /// Message `index`'s fields, borrowing the columns' strings.
    pub fn take(&self, py: Python<'_>, index: usize) -> PyResult<Option<Metadata<'_>>> {
        if !self.given() {
            return Ok(None);
        }
        Ok(Some(Metadata {
            tags: self.tag(py, index)?,
            keys: self.keys(py, index)?,
            ..Metadata::default()
        }))
    }

    /// Message `index`'s tag, borrowed from the column.
    #[inline]
    pub fn tag(&self, py: Python<'_>, index: usize) -> PyResult<Option<Cow<'_, str>>> {
        Ok(match &self.tags {
            Tags::None => None,
            Tags::All(tag) => Some(Cow::Borrowed(tag.to_str()?)),
            // Checked by `extract`: not a string, so None.
            Tags::Each(tags) => self.column_str(py, tags, index)?.map(Cow::Borrowed),
        })
    }

    /// Message `index`'s keys, borrowed from the column where they are one string.
    #[inline]
    pub fn keys(&self, py: Python<'_>, index: usize) -> PyResult<DraftKeys<'_>> {
        let Some(keys) = &self.keys else {
            return Ok(DraftKeys::new());
        };
        if let Some(text) = self.column_str(py, keys, index)? {
            return Ok(keys_of_text(text));
        }
        if let Some(Some((start, end))) = self.key_spans.get(index) {
            return self.key_strings[*start..*end]
                .iter()
                .map(|key| {
                    key.to_str().map(Cow::Borrowed).map_err(|_| {
                        invalid(py, "keys", "must be a string or a sequence of strings")
                    })
                })
                .collect();
        }
        // Another sequence of keys (copied) or None.
        let item = keys.get_item(index)?;
        let owned = extract_keys(py, Some(&item))?
            .into_iter()
            .map(|key| Cow::Owned(key.into_owned()))
            .collect();
        Ok(owned)
    }

    /// Item `index` of a column as text borrowed from the column, or None when it is not
    /// a `str`. The column's tuple holds a reference to the string, and a string keeps
    /// its UTF-8 form once made, so the text lives as long as the column.
    #[inline]
    fn column_str<'a>(
        &self,
        py: Python<'_>,
        column: &'a Bound<'_, PyTuple>,
        index: usize,
    ) -> PyResult<Option<&'a str>> {
        assert!(index < self.count, "message {index} of {}", self.count);
        // SAFETY: every column holds exactly `count` items (`sequence`) and is a tuple,
        // which cannot change length.
        let item = unsafe { column.get_borrowed_item_unchecked(index) };
        if !item.is_instance_of::<PyString>() {
            return Ok(None);
        }
        let mut length: ffi::Py_ssize_t = 0;
        // SAFETY: `item` is a live `str` (checked above) held by `column`; the GIL is held.
        let data = unsafe { ffi::PyUnicode_AsUTF8AndSize(item.as_ptr(), &mut length) };
        if data.is_null() {
            return Err(PyErr::fetch(py));
        }
        // SAFETY: CPython returns `length` bytes of valid UTF-8 that live as long as the
        // string, which `column` keeps alive for `'a`.
        let text = unsafe {
            std::str::from_utf8_unchecked(std::slice::from_raw_parts(
                data.cast::<u8>(),
                usize::try_from(length).unwrap_or(0),
            ))
        };
        Ok(Some(text))
    }
}

/// A list or tuple of exactly `count` items (a string is not a column), as a tuple.
fn sequence<'py>(
    py: Python<'py>,
    argument: &'static str,
    column: &Bound<'py, PyAny>,
    count: usize,
) -> PyResult<Bound<'py, PyTuple>> {
    let items = if let Ok(list) = column.cast::<PyList>() {
        list.to_tuple()
    } else if let Ok(tuple) = column.cast::<PyTuple>() {
        tuple.clone()
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
