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

/// What a lookup walks the files for: a key's hash and a store-time window (ms).
#[derive(Debug, Clone, Copy)]
pub(super) struct Probe {
    pub key_hash: i32,
    pub begin: i64,
    pub end: i64,
}

impl Probe {
    /// Whether a file whose entries span `[file_begin, file_end]` can hold an answer.
    pub(super) fn overlaps(&self, file_begin: i64, file_end: i64) -> bool {
        file_begin <= self.end && file_end >= self.begin
    }

    /// Whether an entry stored in the second starting at `earliest` is older than the
    /// window, so that (newest first) no later entry of the walk can be in it.
    fn passed(&self, earliest: i64) -> bool {
        earliest.saturating_add(999) < self.begin
    }

    /// Whether an entry is a candidate: the key's hash, and not newer than the window.
    fn wants(&self, key_hash: i32, earliest: i64) -> bool {
        key_hash == self.key_hash && earliest <= self.end
    }
}

pub(super) fn visit_chained(
    file: &IndexFile,
    probe: Probe,
    visit: &mut impl FnMut(i64) -> Result<ControlFlow<()>>,
) -> Result<ControlFlow<()>> {
    let header = file.header();
    if header.index_count <= 1 || !probe.overlaps(header.begin_timestamp, header.end_timestamp) {
        return Ok(ControlFlow::Continue(()));
    }
    let mut outcome = Ok(ControlFlow::Continue(()));
    file.walk_chain(probe.key_hash, |number, entry| {
        // Entry 1's difference is measured from the previous file's end (format §3.4).
        let earliest = if number == 1 {
            header.begin_timestamp
        } else {
            entry_time(header.begin_timestamp, entry.time_diff)
        };
        if probe.passed(earliest) {
            return ControlFlow::Break(());
        }
        if !probe.wants(entry.key_hash, earliest) {
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
    probe: Probe,
    visit: &mut impl FnMut(i64) -> Result<ControlFlow<()>>,
) -> Result<ControlFlow<()>> {
    let header = file.header();
    if header.entry_count == 0 || !probe.overlaps(header.begin_timestamp, header.end_timestamp) {
        return Ok(ControlFlow::Continue(()));
    }
    visit_run(header, file.run(probe.key_hash)?, probe, visit)
}

/// Walk a slot's run (newest first) as a chain: stop at the first entry older than
/// `begin`, pass over other keys' entries and those newer than `end`.
pub(super) fn visit_run(
    header: &CompactedHeader,
    run: impl Iterator<Item = CompactedEntry>,
    probe: Probe,
    visit: &mut impl FnMut(i64) -> Result<ControlFlow<()>>,
) -> Result<ControlFlow<()>> {
    for entry in run {
        let earliest = entry_time(header.begin_timestamp, entry.time_diff);
        if probe.passed(earliest) {
            break;
        }
        if !probe.wants(entry.key_hash, earliest) {
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
        let probe = Probe {
            key_hash: index_key_hash(topic, key),
            begin,
            end,
        };
        for handle in self.shared.files().iter().rev() {
            let flow = if let Some(compacted) = handle.compacted.get() {
                visit_compacted(compacted, probe, &mut visit)?
            } else if let Some(file) = handle.chained() {
                visit_chained(&file, probe, &mut visit)?
            } else {
                ControlFlow::Continue(())
            };
            if flow.is_break() {
                return Ok(());
            }
        }
        // Files only the tier holds are older than every local one.
        self.visit_remote(probe, &mut visit)
    }
}
