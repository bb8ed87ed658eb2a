//! Checking the index against the log (reliability promise 3): every entry the index
//! holds must be one a rebuild from the valid log would write, and none may be missing;
//! every chained file must be internally consistent (each slot names its newest entry,
//! each entry links to the previous one of its slot) and every compacted file must pass
//! its CRC. Reads only; changes nothing.

use std::collections::BTreeMap;

use crate::commit_log::CommitLog;
use crate::error::Result;
use crate::index::compacted::CompactedIndexFile;
use crate::index::file::IndexFile;
use crate::index::layout::index_key_hash;
use crate::index::{index_keys, IndexService};

/// At most this many differences are described (all are counted).
const MAX_DESCRIBED: usize = 1000;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexVerification {
    pub files_checked: u32,
    pub entries_checked: u64,
    pub difference_count: u64,
    pub differences: Vec<String>,
}

impl IndexVerification {
    pub fn is_clean(&self) -> bool {
        self.difference_count == 0
    }

    fn differ(&mut self, detail: String) {
        self.difference_count += 1;
        if self.differences.len() < MAX_DESCRIBED {
            self.differences.push(detail);
        }
    }
}

/// Compare the index with a rebuild from the records in `[log min, end)`. Entries for
/// records that retention removed are not differences.
pub fn verify_index(
    index: &IndexService,
    commit_log: &CommitLog,
    end: u64,
) -> Result<IndexVerification> {
    let mut report = IndexVerification::default();
    // (commit-log offset, key hash) → how many entries.
    let mut held: BTreeMap<(i64, i32), i64> = BTreeMap::new();
    for forms in index.file_forms() {
        let (name, chained, compacted) = (forms.name, forms.chained, forms.compacted);
        report.files_checked += 1;
        if let Some(compacted) = compacted {
            if let Err(error) = compacted.verify() {
                report.differ(format!("compacted index file {name}: {error}"));
            }
            collect_compacted(&compacted, &mut held);
        } else if let Some(chained) = chained {
            check_chains(&name, &chained, &mut report);
            for number in 1..=chained.entries() {
                let entry = chained.entry(number);
                *held
                    .entry((entry.commitlog_offset, entry.key_hash))
                    .or_default() += 1;
            }
        }
    }
    let log_min = commit_log.min_offset() as i64;
    held.retain(|(offset, _), _| *offset >= log_min);
    report.entries_checked = held.values().map(|count| *count as u64).sum();

    let mut expected: BTreeMap<(i64, i32), i64> = BTreeMap::new();
    commit_log.scan(commit_log.min_offset(), false, |offset, view| {
        if offset >= end {
            return Ok(Some("end".into()));
        }
        let topic = view.topic_str();
        for key in index_keys(view) {
            *expected
                .entry((view.physical_offset, index_key_hash(&topic, &key)))
                .or_default() += 1;
        }
        Ok(None)
    })?;
    for (key, count) in &expected {
        let have = held.get(key).copied().unwrap_or(0);
        if have != *count {
            report.differ(format!("record at commit-log offset {} has {count} key(s) with hash {} but the index holds {have}", key.0, key.1));
        }
    }
    for (key, count) in &held {
        if !expected.contains_key(key) {
            report.differ(format!("{count} index entr(ies) with hash {} point at commit-log offset {}, which no record of the valid log has", key.1, key.0));
        }
    }
    Ok(report)
}

fn collect_compacted(file: &CompactedIndexFile, held: &mut BTreeMap<(i64, i32), i64>) {
    for slot in 0..file.header().slot_count {
        // Any hash of the slot reads the slot's whole run.
        if let Ok(run) = file.run(slot as i32) {
            for entry in run {
                *held
                    .entry((entry.commitlog_offset, entry.key_hash))
                    .or_default() += 1;
            }
        }
    }
}

fn check_chains(name: &str, file: &IndexFile, report: &mut IndexVerification) {
    let geometry = file.geometry();
    let mut newest = vec![0i32; geometry.slot_count as usize];
    let mut last_offset = i64::MIN;
    for number in 1..=file.entries() {
        let entry = file.entry(number);
        let slot = geometry.slot_of(entry.key_hash) as usize;
        if entry.prev != newest[slot] {
            report.differ(format!("index file {name}: entry {number} links to {}, but the previous entry of its slot is {}", entry.prev, newest[slot]));
        }
        if entry.commitlog_offset < last_offset {
            report.differ(format!(
                "index file {name}: entry {number} points back to offset {}",
                entry.commitlog_offset
            ));
        }
        last_offset = entry.commitlog_offset;
        newest[slot] = number as i32;
    }
    for (slot, expected) in newest.iter().enumerate() {
        let stored = file.slot(slot as u32);
        if stored != *expected {
            report.differ(format!(
                "index file {name}: slot {slot} holds {stored}, its newest entry is {expected}"
            ));
        }
    }
}
