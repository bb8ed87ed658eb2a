//! Finding messages without knowing their queue offset: by message key through the
//! index, by msgId through the commit-log offset it embeds, and by store time through a
//! binary search of a consume queue. `Store` checks that it is open and that the topic
//! exists, then calls these.
//!
//! Every answer is exact or an error: key lookups compare the records they find with
//! the query, so hash collisions and other topics' keys never come back, and a record
//! that cannot be read raises its error rather than being left out.

use std::collections::HashSet;
use std::ops::ControlFlow;

use crate::commit_log::CommitLog;
use crate::consume_queue::ConsumeQueue;
use crate::error::{Error, Result};
use crate::index::{record_matches_key, IndexService};
use crate::record::message::StoredMessage;
use crate::record::msg_id::{create_msg_id, decode_msg_id};
use crate::record::RecordView;

/// A key lookup: messages of `topic` stored in `[begin, end]` whose `KEYS` tokens or
/// `UNIQ_KEY` include `key`, newest first, at most `max_count`.
#[derive(Debug, Clone, Copy)]
pub struct KeyQuery<'a> {
    pub topic: &'a str,
    pub key: &'a str,
    pub begin: i64,
    pub end: i64,
    pub max_count: usize,
}

impl<'a> KeyQuery<'a> {
    /// Whenever they were stored.
    pub fn new(topic: &'a str, key: &'a str, max_count: usize) -> Self {
        KeyQuery {
            topic,
            key,
            begin: 0,
            end: i64::MAX,
            max_count,
        }
    }

    /// Only those stored in `[begin, end]`; no `end`: up to now.
    pub fn stored_between(self, begin: i64, end: Option<i64>) -> Self {
        let end = end.unwrap_or(i64::MAX);
        KeyQuery { begin, end, ..self }
    }
}

/// The records answering `query`, handed to `visit` as views of the log (CRC checked), so
/// a reader that wants few of a message's fields copies and decodes only those. Records
/// below `readable_end` only (under sync flush, unflushed ones are not visible yet);
/// records removed by retention are gone and not reported. Returns how many were visited.
pub fn visit_by_key(
    commit_log: &CommitLog,
    index: &IndexService,
    readable_end: u64,
    query: &KeyQuery<'_>,
    mut visit: impl FnMut(&RecordView<'_>),
) -> Result<usize> {
    let &KeyQuery {
        topic,
        key,
        begin,
        end,
        max_count,
    } = query;
    if key.is_empty() {
        return Err(Error::invalid("key", "is empty"));
    }
    if max_count == 0 {
        return Err(Error::invalid("max_count", "must be at least 1"));
    }
    if begin > end {
        return Err(Error::invalid(
            "begin",
            format!("{begin} is after end {end}"),
        ));
    }
    let log_min = commit_log.min_offset();
    let mut seen = SeenOffsets::default();
    let mut count = 0;
    index.visit_candidates(topic, key, begin, end, |offset| {
        // A record with the key twice (KEYS and UNIQ_KEY) has two entries.
        if !seen.insert(offset) {
            return Ok(ControlFlow::Continue(()));
        }
        let Ok(position) = u64::try_from(offset) else {
            return Ok(ControlFlow::Continue(()));
        };
        if position < log_min || position >= readable_end {
            return Ok(ControlFlow::Continue(()));
        }
        let answered = commit_log.visit(position, true, |view| {
            let wanted = (begin..=end).contains(&view.store_timestamp)
                && record_matches_key(view, topic, key);
            if wanted {
                visit(view);
            }
            wanted
        })?;
        if answered {
            count += 1;
            if count >= max_count {
                return Ok(ControlFlow::Break(()));
            }
        }
        Ok(ControlFlow::Continue(()))
    })?;
    Ok(count)
}

/// The commit-log offsets a lookup has already looked at. Most lookups see one or two
/// candidates: a short list, searched in place, costs no allocation and no hashing;
/// past `INLINE` candidates (a crowded slot) a set keeps the test constant-time.
#[derive(Default)]
struct SeenOffsets {
    inline: [i64; SeenOffsets::INLINE],
    len: usize,
    spilled: HashSet<i64>,
}

impl SeenOffsets {
    const INLINE: usize = 8;

    /// Whether `offset` is new (and now remembered).
    fn insert(&mut self, offset: i64) -> bool {
        if self.inline[..self.len].contains(&offset) {
            return false;
        }
        if self.len < Self::INLINE {
            self.inline[self.len] = offset;
            self.len += 1;
            return true;
        }
        self.spilled.insert(offset)
    }
}

/// The message a msgId names: the record at the commit-log offset in the id, which must
/// exist and carry the same id (same store host). A malformed id is an invalid argument;
/// an id that names no record is not found; a record there that fails its CRC is corrupt.
pub fn get_by_msg_id(
    commit_log: &CommitLog,
    readable_end: u64,
    msg_id: &str,
) -> Result<StoredMessage> {
    let (_, offset) = decode_msg_id(msg_id)?;
    let absent = |why: String| Error::NotFound(format!("message {msg_id}: {why}"));
    let position =
        u64::try_from(offset).map_err(|_| absent(format!("its offset {offset} is negative")))?;
    let min = commit_log.min_offset();
    if position < min || position >= readable_end {
        return Err(absent(format!(
            "commit-log offset {offset} is outside [{min}, {readable_end})"
        )));
    }
    let record = match commit_log.read(position, false) {
        Ok(record) => record,
        Err(Error::Corrupt { .. } | Error::OffsetOutOfRange { .. }) => {
            return Err(absent(format!(
                "no record starts at commit-log offset {offset}"
            )));
        }
        Err(error) => return Err(error),
    };
    let stored_id = create_msg_id(&record.view().store_host, offset);
    if !stored_id.eq_ignore_ascii_case(msg_id) {
        return Err(absent(format!(
            "the record at offset {offset} has id {stored_id}"
        )));
    }
    let record = commit_log.read(position, true)?;
    Ok(StoredMessage::from_record(&record.view()))
}

/// The first queue offset whose message was stored at or after `timestamp` (ms).
///
/// - empty or absent queue: its max offset (which equals its min offset; 0 if absent);
/// - `timestamp` at or before the first message: the min offset (the first entry whose
///   record retention has not removed);
/// - `timestamp` after the last message: the max offset (where the next message goes).
///
/// A binary search over the queue reading each probed record's store time; store times
/// within a queue are taken to be non-decreasing, as RocketMQ does.
pub fn offset_for_time(
    commit_log: &CommitLog,
    queue: Option<&dyn ConsumeQueue>,
    readable_end: u64,
    timestamp: i64,
) -> Result<i64> {
    let Some(queue) = queue else {
        return Ok(0);
    };
    let (min, max) = (queue.min_offset(), queue.max_offset());
    let log_min = commit_log.min_offset() as i64;
    let entry_at = |offset: i64| {
        queue.entry(offset)?.ok_or_else(|| {
            Error::corrupt(
                queue.location(),
                (offset.max(0) as u64) * 20,
                format!("queue entry {offset} missing inside [{min}, {max})"),
            )
        })
    };
    // Entries whose records retention removed sort before every time.
    let (mut low, mut high) = (min, max);
    while low < high {
        let middle = low + (high - low) / 2;
        if entry_at(middle)?.commitlog_offset >= log_min {
            high = middle;
        } else {
            low = middle + 1;
        }
    }
    high = max;
    while low < high {
        let middle = low + (high - low) / 2;
        let entry = entry_at(middle)?;
        let stored_at = if entry.commitlog_end() > readable_end as i64 {
            i64::MAX
        } else {
            commit_log
                .read(entry.commitlog_offset as u64, false)?
                .view()
                .store_timestamp
        };
        if stored_at >= timestamp {
            high = middle;
        } else {
            low = middle + 1;
        }
    }
    Ok(low)
}

#[cfg(test)]
mod seen_offsets_tests {
    use super::SeenOffsets;

    #[test]
    fn each_offset_is_new_once_before_and_after_the_inline_list_fills() {
        let mut seen = SeenOffsets::default();
        for offset in 0..3 * SeenOffsets::INLINE as i64 {
            assert!(seen.insert(offset * 100), "{offset} refused the first time");
        }
        for offset in (0..3 * SeenOffsets::INLINE as i64).rev() {
            assert!(!seen.insert(offset * 100), "{offset} accepted twice");
        }
        assert!(seen.insert(1));
    }
}
