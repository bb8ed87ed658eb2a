//! Queries: the candidate records of a key, newest first, over chained and compacted
//! files whose time range overlaps the query's.

use crate::error::Result;
use crate::index::compacted::{CompactedEntry, CompactedHeader, CompactedIndexFile};
use crate::index::file::IndexFile;
use crate::index::layout::index_key_hash;
use std::ops::ControlFlow;

use super::IndexService;

/// The earliest store time an entry can stand for, given its file's begin time.
pub(super) fn entry_time(begin_timestamp: i64, time_diff: i32) -> i64 {
    begin_timestamp.saturating_add(i64::from(time_diff) * 1000)
}

pub(super) fn overlaps(file_begin: i64, file_end: i64, begin: i64, end: i64) -> bool {
    file_begin <= end && file_end >= begin
}

pub(super) fn visit_chained(
    file: &IndexFile,
    key_hash: i32,
    begin: i64,
    end: i64,
    visit: &mut impl FnMut(i64) -> Result<ControlFlow<()>>,
) -> Result<ControlFlow<()>> {
    let header = file.header();
    if header.index_count <= 1
        || !overlaps(header.begin_timestamp, header.end_timestamp, begin, end)
    {
        return Ok(ControlFlow::Continue(()));
    }
    let mut outcome = Ok(ControlFlow::Continue(()));
    file.walk_chain(key_hash, |number, entry| {
        // Entry 1's difference is measured from the previous file's end (format §3.4).
        let earliest = if number == 1 {
            header.begin_timestamp
        } else {
            entry_time(header.begin_timestamp, entry.time_diff)
        };
        if earliest.saturating_add(999) < begin {
            return ControlFlow::Break(());
        }
        if entry.key_hash != key_hash || earliest > end {
            return ControlFlow::Continue(());
        }
        match visit(entry.commitlog_offset) {
            Ok(ControlFlow::Continue(())) => ControlFlow::Continue(()),
            other => {
                outcome = other;
                ControlFlow::Break(())
            }
        }
    });
    outcome
}

pub(super) fn visit_compacted(
    file: &CompactedIndexFile,
    key_hash: i32,
    begin: i64,
    end: i64,
    visit: &mut impl FnMut(i64) -> Result<ControlFlow<()>>,
) -> Result<ControlFlow<()>> {
    let header = file.header();
    if header.entry_count == 0
        || !overlaps(header.begin_timestamp, header.end_timestamp, begin, end)
    {
        return Ok(ControlFlow::Continue(()));
    }
    visit_run(header, file.run(key_hash)?, key_hash, begin, end, visit)
}

/// Walk a slot's run (newest first) as a chain: stop at the first entry older than
/// `begin`, pass over other keys' entries and those newer than `end`.
pub(super) fn visit_run(
    header: &CompactedHeader,
    run: impl Iterator<Item = CompactedEntry>,
    key_hash: i32,
    begin: i64,
    end: i64,
    visit: &mut impl FnMut(i64) -> Result<ControlFlow<()>>,
) -> Result<ControlFlow<()>> {
    for entry in run {
        let earliest = entry_time(header.begin_timestamp, entry.time_diff);
        if earliest.saturating_add(999) < begin {
            break;
        }
        if entry.key_hash != key_hash || earliest > end {
            continue;
        }
        if visit(entry.commitlog_offset)?.is_break() {
            return Ok(ControlFlow::Break(()));
        }
    }
    Ok(ControlFlow::Continue(()))
}

impl IndexService {
    /// Candidate commit-log offsets for `topic#key` with store times in `[begin, end]`,
    /// newest first, file by file, until `visit` breaks. Candidates are prefiltered by
    /// hash and by the entry's time (second resolution, so conservative); the caller
    /// checks the record itself. Within a file the walk stops at the first entry older
    /// than `begin`, which assumes store times do not go backwards (RocketMQ's rule).
    pub fn visit_candidates(
        &self,
        topic: &str,
        key: &str,
        begin: i64,
        end: i64,
        mut visit: impl FnMut(i64) -> Result<ControlFlow<()>>,
    ) -> Result<()> {
        let key_hash = index_key_hash(topic, key);
        for handle in self.shared.files().iter().rev() {
            let flow = if let Some(compacted) = handle.compacted.get() {
                visit_compacted(compacted, key_hash, begin, end, &mut visit)?
            } else if let Some(file) = handle.chained() {
                visit_chained(&file, key_hash, begin, end, &mut visit)?
            } else {
                ControlFlow::Continue(())
            };
            if flow.is_break() {
                return Ok(());
            }
        }
        // Files only the tier holds are older than every local one.
        self.visit_remote(key_hash, begin, end, &mut visit)
    }
}
