//! Dispatch: derive consume-queue and index entries from commit-log records, as
//! RocketMQ's reput service does. Appends, recovery and rebuild all go through one
//! `Dispatcher`, so the derived files are always what a rebuild from the log would give.
//!
//! A dispatcher holds the index writer's lock for its lifetime and gathers the entries of
//! a batch into one run per queue, appended together when it finishes, so a batch pays for
//! one lookup per queue, one index lock and (RocksDB form) one write, not one per record.

use std::sync::Arc;

use crate::consume_queue::{ConsumeQueue, ConsumeQueueStore, CqEntry, QueueRun};
use crate::error::{Error, Result};
use crate::files::page_warmer::PageWarmer;
use crate::index::{IndexBatch, IndexService};
use crate::java_hash::java_string_hash;
use crate::record::{stored_text, RecordView};

/// What dispatching one record did to its consume queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dispatched {
    Appended,
    /// The queue already had the entry (replay after a restart).
    AlreadyPresent,
    /// Transaction PREPARED/ROLLBACK records have no queue entry.
    NotQueued,
}

/// Entries gathered before the pending runs are appended (bounds memory in a long
/// recovery scan), and queues with a pending run (bounds the search for a record's run).
const MAX_PENDING_ENTRIES: usize = 4096;
const MAX_PENDING_QUEUES: usize = 64;

pub struct Dispatcher<'a> {
    queues: &'a dyn ConsumeQueueStore,
    index: IndexBatch<'a>,
    /// Faults in consume-queue pages ahead of the writer (the append path only).
    warmer: Option<&'a PageWarmer>,
    /// At most one run per queue, appended together by `append_pending` so that a form
    /// writing in transactions (RocksDB) writes a batch over many queues in one.
    runs: Vec<QueueRun>,
    /// The topic and queue id of each run, by position.
    run_keys: Vec<(Vec<u8>, i32)>,
    /// The run the last record went to: the next one most likely continues it.
    current: usize,
    pending_entries: usize,
    /// A queue the caller already holds (the append path's): its records open their run
    /// without a second lookup in the queue table, which hashes the topic name.
    known_queue: Option<(i32, Arc<dyn ConsumeQueue>)>,
}

impl<'a> Dispatcher<'a> {
    pub fn new(queues: &'a dyn ConsumeQueueStore, index: &'a IndexService) -> Self {
        Dispatcher {
            queues,
            index: index.batch(),
            warmer: None,
            runs: Vec::new(),
            run_keys: Vec::new(),
            current: 0,
            pending_entries: 0,
            known_queue: None,
        }
    }

    /// The records' queue, which the caller looked up already (the append path: one
    /// queue per put). Only its id is compared, so it must be the queue of every record
    /// of that id dispatched here, topic included.
    pub fn with_queue(mut self, queue_id: i32, queue: Arc<dyn ConsumeQueue>) -> Self {
        self.known_queue = Some((queue_id, queue));
        self
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
        if self.pending_entries >= MAX_PENDING_ENTRIES {
            self.append_pending()?;
        }
        let run = match self.run_of(view) {
            Some(run) => run,
            None => {
                if self.runs.len() >= MAX_PENDING_QUEUES {
                    self.append_pending()?;
                }
                let queue = match &self.known_queue {
                    Some((queue_id, queue)) if *queue_id == view.queue_id => Arc::clone(queue),
                    _ => self
                        .queues
                        .get_or_create(&view.topic_str(), view.queue_id)?,
                };
                let assigned = queue.writer_bounds();
                let first_offset = assigned.max();
                let empty = first_offset == assigned.min();
                // A queue that starts past zero (its older entries expired) may start at
                // any record.
                let first_offset = if empty && view.queue_offset > first_offset {
                    view.queue_offset
                } else {
                    first_offset
                };
                self.runs.push(QueueRun {
                    queue,
                    first_offset,
                    entries: Vec::new(),
                });
                self.run_keys.push((view.topic.to_vec(), view.queue_id));
                self.runs.len() - 1
            }
        };
        self.current = run;
        let run = &mut self.runs[run];
        let end = run.end_offset();
        if view.queue_offset < end {
            return Ok(Dispatched::AlreadyPresent);
        }
        if view.queue_offset > end {
            return Err(Error::corrupt(
                run.queue.location(),
                0,
                format!(
                    "record at commit-log offset {} has queue offset {} but queue {}/{} ends at {end}",
                    view.physical_offset,
                    view.queue_offset,
                    view.topic_str(),
                    view.queue_id
                ),
            ));
        }
        run.entries.push(queue_entry_of(view));
        self.pending_entries += 1;
        Ok(Dispatched::Appended)
    }

    /// The position of the pending run of the record's queue.
    fn run_of(&self, view: &RecordView<'_>) -> Option<usize> {
        let is_its_queue =
            |key: &(Vec<u8>, i32)| key.1 == view.queue_id && key.0.as_slice() == view.topic;
        if self.run_keys.get(self.current).is_some_and(is_its_queue) {
            return Some(self.current);
        }
        self.run_keys.iter().position(is_its_queue)
    }

    fn append_pending(&mut self) -> Result<()> {
        self.runs.retain(|run| !run.entries.is_empty());
        let appended = self.queues.append_runs(&self.runs, self.warmer);
        self.runs.clear();
        self.run_keys.clear();
        self.current = 0;
        self.pending_entries = 0;
        appended
    }

    /// Append what is gathered and release the index.
    pub fn finish(mut self) -> Result<()> {
        self.append_pending()
    }
}

pub fn tags_code_of(view: &RecordView<'_>) -> i64 {
    match view.tags() {
        Some(tags) if !tags.is_empty() => i64::from(java_string_hash(&stored_text(tags))),
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
