//! Dispatch: derive consume-queue (and index) entries from commit-log records, as
//! RocketMQ's reput service does. The append path and recovery both go through here, so
//! derived files can always be rebuilt from the log.

use crate::consume_queue::{ConsumeQueue, CqEntry};
use crate::consume_queue_table::ConsumeQueueTable;
use crate::error::{Error, Result};
use crate::java_hash::java_string_hash;
use crate::record::RecordView;

/// What dispatching one record did to its consume queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dispatched {
    Appended,
    /// The queue already had the entry (replay after a restart).
    AlreadyPresent,
    /// Transaction PREPARED/ROLLBACK records have no queue entry.
    NotQueued,
}

pub fn tags_code_of(view: &RecordView<'_>) -> i64 {
    match view.tags() {
        Some(tags) if !tags.is_empty() => {
            i64::from(java_string_hash(&String::from_utf8_lossy(tags)))
        }
        _ => 0,
    }
}

pub fn dispatch_to_consume_queue(
    queues: &ConsumeQueueTable,
    view: &RecordView<'_>,
) -> Result<Dispatched> {
    if !view.is_dispatched_to_consume_queue() {
        return Ok(Dispatched::NotQueued);
    }
    let queue = queues.get_or_create(&view.topic_str(), view.queue_id)?;
    dispatch_to_queue(&queue, view)
}

/// Dispatch to `queue`, the record's own (replay: entries already present are skipped).
fn dispatch_to_queue(queue: &ConsumeQueue, view: &RecordView<'_>) -> Result<Dispatched> {
    if !view.is_dispatched_to_consume_queue() {
        return Ok(Dispatched::NotQueued);
    }
    let max = queue.max_offset();
    if view.queue_offset < max {
        return Ok(Dispatched::AlreadyPresent);
    }
    if view.queue_offset > max && max > queue.min_offset() {
        return Err(Error::corrupt(
            queue.dir(),
            0,
            format!(
                "record at commit-log offset {} has queue offset {} but queue {}/{} ends at {max}",
                view.physical_offset,
                view.queue_offset,
                view.topic_str(),
                view.queue_id
            ),
        ));
    }
    queue.append(view.queue_offset, queue_entry_of(view))?;
    Ok(Dispatched::Appended)
}

/// The consume-queue entry that stands for a record.
pub fn queue_entry_of(view: &RecordView<'_>) -> CqEntry {
    CqEntry {
        commitlog_offset: view.physical_offset,
        size: i32::try_from(view.total_size).expect("record sizes fit i32"),
        tags_code: tags_code_of(view),
    }
}
