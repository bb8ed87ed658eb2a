//! Verification: compare the consume queues with what a rebuild from the valid commit
//! log would produce, and check every record's CRC, reporting each difference. Reads
//! only; safe on a read-only store.
//!
//! A record whose layout is damaged cannot say where the next one starts, but records
//! never cross segment boundaries, so verification resumes at the next segment.

use std::collections::HashMap;

use crate::commit_log::CommitLog;
use crate::consume_queue::ConsumeQueueStore;
use crate::dispatch::tags_code_of;
use crate::error::Result;
use crate::record::{decode_record, DecodeError, Decoded};

/// At most this many differences are listed; all are counted.
pub const MAX_LISTED_DIFFERENCES: usize = 1000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// `corrupt_record`, `missing_entry`, `wrong_entry`, `extra_entries`, `unknown_queue`.
    pub kind: &'static str,
    pub detail: String,
}

#[derive(Debug, Clone, Default)]
pub struct VerifyReport {
    pub records_checked: u64,
    pub entries_checked: u64,
    pub difference_count: u64,
    pub differences: Vec<Difference>,
}

impl VerifyReport {
    pub fn is_clean(&self) -> bool {
        self.difference_count == 0
    }

    fn add(&mut self, kind: &'static str, detail: String) {
        self.difference_count += 1;
        if self.differences.len() < MAX_LISTED_DIFFERENCES {
            self.differences.push(Difference { kind, detail });
        }
    }
}

pub fn verify(
    commit_log: &CommitLog,
    queues: &dyn ConsumeQueueStore,
    end: u64,
) -> Result<VerifyReport> {
    let mut report = VerifyReport::default();
    // Per queue: the next queue offset expected from the log, and the first one seen.
    let mut seen: HashMap<(String, i32), (i64, i64)> = HashMap::new();
    for segment in commit_log.segments().segments() {
        if segment.start_offset() >= end {
            break;
        }
        let mut position = 0usize;
        while segment.start_offset() + (position as u64) < end {
            let offset = segment.start_offset() + position as u64;
            let bytes = segment.bytes_from(position);
            let view = match decode_record(bytes, true) {
                Ok(Decoded::Record(view)) => view,
                Ok(Decoded::Blank | Decoded::End) => break,
                Err(
                    error @ (DecodeError::BodyCrcMismatch { .. } | DecodeError::RecordCrcMismatch),
                ) => {
                    report.add(
                        "corrupt_record",
                        format!(
                            "{} offset {position} (log offset {offset}): {error}",
                            segment.path().display()
                        ),
                    );
                    // The layout is intact, so its queue entry can still be checked.
                    match decode_record(bytes, false) {
                        Ok(Decoded::Record(view)) => view,
                        _ => break,
                    }
                }
                Err(error) => {
                    report.add(
                        "corrupt_record",
                        format!("{} offset {position} (log offset {offset}): {error}; the rest of this segment is unchecked", segment.path().display()),
                    );
                    break;
                }
            };
            report.records_checked += 1;
            position += view.total_size;
            if view.physical_offset != offset as i64 {
                report.add(
                    "corrupt_record",
                    format!(
                        "record at log offset {offset} says it is at {}",
                        view.physical_offset
                    ),
                );
                continue;
            }
            if !view.is_dispatched_to_consume_queue() {
                continue;
            }
            let topic = view.topic_str().into_owned();
            let Some(queue) = queues.get(&topic, view.queue_id) else {
                report.add("unknown_queue", format!("record at log offset {offset} belongs to {topic}/{}, which has no consume queue", view.queue_id));
                continue;
            };
            let expected_next = seen
                .entry((topic.clone(), view.queue_id))
                .or_insert((view.queue_offset, view.queue_offset));
            if view.queue_offset != expected_next.1 {
                report.add(
                    "wrong_entry",
                    format!("{topic}/{}: record at log offset {offset} has queue offset {}, expected {}", view.queue_id, view.queue_offset, expected_next.1),
                );
            }
            expected_next.1 = view.queue_offset + 1;
            report.entries_checked += 1;
            match queue.entry(view.queue_offset)? {
                None if view.queue_offset >= queue.min_offset() => report.add(
                    "missing_entry",
                    format!(
                        "{topic}/{} has no entry {} for the record at log offset {offset}",
                        view.queue_id, view.queue_offset
                    ),
                ),
                None => {}
                Some(entry) => {
                    let expected = (offset as i64, view.total_size as i32, tags_code_of(&view));
                    let found = (entry.commitlog_offset, entry.size, entry.tags_code);
                    if found != expected {
                        report.add(
                            "wrong_entry",
                            format!("{topic}/{} entry {}: (offset, size, tags code) is {found:?}, the log says {expected:?}", view.queue_id, view.queue_offset),
                        );
                    }
                }
            }
        }
    }
    for queue in queues.all() {
        let key = (queue.topic().to_string(), queue.queue_id());
        let log_end = seen.get(&key).map_or(queue.min_offset(), |(_, next)| *next);
        if queue.max_offset() > log_end {
            report.add(
                "extra_entries",
                format!(
                    "{}/{}: entries {}..{} point at no record of the valid log",
                    queue.topic(),
                    queue.queue_id(),
                    log_end,
                    queue.max_offset()
                ),
            );
        }
    }
    Ok(report)
}
