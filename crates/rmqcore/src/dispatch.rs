//! Dispatch: derive consume-queue and index entries from commit-log records, as
//! RocketMQ's reput service does. Appends, recovery and rebuild all go through one
//! `Dispatcher`, so the derived files are always what a rebuild from the log would give.
//!
//! A dispatcher holds the index writer's lock for its lifetime and gathers the entries of
//! consecutive records of one queue into a run that is appended in one call, so a batch
//! pays for one queue-file lookup and one index lock, not one per record.

use std::sync::Arc;

use crate::consume_queue::{ConsumeQueue, ConsumeQueueStore, CqEntry};
use crate::error::{Error, Result};
use crate::files::page_warmer::PageWarmer;
use crate::index::{IndexBatch, IndexService};
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

/// Entries gathered before a run is appended (bounds memory in a long recovery scan).
const MAX_RUN: usize = 4096;

/// Consecutive entries of one queue, not yet appended.
struct QueueRun {
    queue: Arc<dyn ConsumeQueue>,
    topic: Vec<u8>,
    queue_id: i32,
    first_offset: i64,
    entries: Vec<CqEntry>,
}

impl QueueRun {
    fn continues(&self, view: &RecordView<'_>) -> bool {
        self.entries.len() < MAX_RUN
            && view.queue_id == self.queue_id
            && view.queue_offset == self.first_offset + self.entries.len() as i64
            && view.topic == self.topic.as_slice()
    }
}

pub struct Dispatcher<'a> {
    queues: &'a dyn ConsumeQueueStore,
    index: IndexBatch<'a>,
    /// Faults in consume-queue pages ahead of the writer (the append path only).
    warmer: Option<&'a PageWarmer>,
    run: Option<QueueRun>,
}

impl<'a> Dispatcher<'a> {
    pub fn new(queues: &'a dyn ConsumeQueueStore, index: &'a IndexService) -> Self {
        Dispatcher {
            queues,
            index: index.batch(),
            warmer: None,
            run: None,
        }
    }

    pub fn with_warmer(mut self, warmer: Option<&'a PageWarmer>) -> Self {
        self.warmer = warmer;
        self
    }

    /// Index the record's keys and give it its consume-queue entry.
    pub fn dispatch(&mut self, view: &RecordView<'_>) -> Result<Dispatched> {
        self.index(view)?;
        self.to_queue(view)
    }

    /// Index the record's keys only (records the index has are passed over).
    pub fn index(&mut self, view: &RecordView<'_>) -> Result<()> {
        self.index.dispatch(view)
    }

    /// Give the record its consume-queue entry; a replayed record whose entry the queue
    /// has already is passed over, and one that would leave a gap is an error.
    pub fn to_queue(&mut self, view: &RecordView<'_>) -> Result<Dispatched> {
        if !view.is_dispatched_to_consume_queue() {
            return Ok(Dispatched::NotQueued);
        }
        if let Some(run) = self.run.as_mut().filter(|run| run.continues(view)) {
            run.entries.push(queue_entry_of(view));
            return Ok(Dispatched::Appended);
        }
        self.append_run()?;
        let queue = self
            .queues
            .get_or_create(&view.topic_str(), view.queue_id)?;
        let max = queue.max_offset();
        if view.queue_offset < max {
            return Ok(Dispatched::AlreadyPresent);
        }
        if view.queue_offset > max && max > queue.min_offset() {
            return Err(Error::corrupt(
                queue.location(),
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
        self.run = Some(QueueRun {
            queue,
            topic: view.topic.to_vec(),
            queue_id: view.queue_id,
            first_offset: view.queue_offset,
            entries: vec![queue_entry_of(view)],
        });
        Ok(Dispatched::Appended)
    }

    fn append_run(&mut self) -> Result<()> {
        match self.run.take() {
            Some(run) => run
                .queue
                .append_all(run.first_offset, &run.entries, self.warmer),
            None => Ok(()),
        }
    }

    /// Append what is gathered and release the index.
    pub fn finish(mut self) -> Result<()> {
        self.append_run()
    }
}

pub fn tags_code_of(view: &RecordView<'_>) -> i64 {
    match view.tags() {
        Some(tags) if !tags.is_empty() => {
            i64::from(java_string_hash(&String::from_utf8_lossy(tags)))
        }
        _ => 0,
    }
}

/// The consume-queue entry that stands for a record.
pub fn queue_entry_of(view: &RecordView<'_>) -> CqEntry {
    CqEntry {
        commitlog_offset: view.physical_offset,
        size: i32::try_from(view.total_size).expect("record sizes fit i32"),
        tags_code: tags_code_of(view),
        store_timestamp: view.store_timestamp,
    }
}
