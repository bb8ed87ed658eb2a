//! Dispatch: derive consume-queue and index entries from commit-log records, as
//! RocketMQ's reput service does. Appends, recovery and rebuild all go through one
//! `Dispatcher`, so the derived files are always what a rebuild from the log would give.
//! Recovery hands it decoded records (`dispatch`); the append path hands it what the
//! encoder already knew about each record it wrote (`dispatch_written`), so a put does not
//! decode its own records again. Both end in the same queue and index writes, and
//! `tests/dispatch_rebuild_identity.rs` checks that the files they give are the same bytes.
//!
//! A dispatcher holds the index writer's lock for its lifetime and gathers the entries of
//! a batch into one run per queue, appended together when it finishes, so a batch pays for
//! one lookup per queue, one index lock and (RocksDB form) one write, not one per record.

use std::borrow::Cow;
use std::sync::Arc;

use smallvec::SmallVec;

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

/// A record the append path has just written, described by the draft and placement it
/// was encoded from: the fields dispatch would otherwise decode from its bytes. The
/// record is a plain message (sys flag 0: queued and indexed), its properties are the
/// draft's (tags, then the keys joined by spaces, then user properties), and the draft
/// passed `prepare`, so no key is empty or holds a space and the tags are not empty.
#[derive(Debug, Clone, Copy)]
pub struct WrittenRecord<'r> {
    pub topic: &'r str,
    pub queue_id: i32,
    pub queue_offset: i64,
    pub physical_offset: i64,
    pub total_size: usize,
    pub store_timestamp: i64,
    pub tags: Option<&'r str>,
    /// The last `UNIQ_KEY` user property, the one a decoder finds.
    pub uniq_key: Option<&'r str>,
    /// The `KEYS` tokens, in order.
    pub keys: &'r [Cow<'r, str>],
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
    /// writing in transactions (RocksDB) writes a batch over many queues in one. Inline
    /// for one queue (a put's), so that a single put allocates only its run's entries.
    runs: SmallVec<[QueueRun; 1]>,
    /// The topic and queue id of each run, by position; the known queue's run has no
    /// topic copy (it is found by `known_run`).
    run_keys: SmallVec<[(Vec<u8>, i32); 1]>,
    /// The run the last record went to: the next one most likely continues it.
    current: usize,
    pending_entries: usize,
    /// A queue the caller already holds (the append path's): its records open their run
    /// without a second lookup in the queue table, which hashes the topic name, and
    /// without copying the topic.
    known_queue: Option<KnownQueue>,
}

/// The append path's queue, with how many records it is about to receive.
struct KnownQueue {
    queue_id: i32,
    queue: Arc<dyn ConsumeQueue>,
    records: usize,
    /// The position of its pending run, once it has one.
    run: Option<usize>,
}

impl<'a> Dispatcher<'a> {
    pub fn new(queues: &'a dyn ConsumeQueueStore, index: &'a IndexService) -> Self {
        Dispatcher {
            queues,
            index: index.batch(),
            warmer: None,
            runs: SmallVec::new(),
            run_keys: SmallVec::new(),
            current: 0,
            pending_entries: 0,
            known_queue: None,
        }
    }

    /// The records' queue, which the caller looked up already (the append path: one
    /// queue per put), and how many records it will dispatch (its run's entries are
    /// sized for them). Only its id is compared, so it must be the queue of every record
    /// of that id dispatched here, topic included.
    pub fn with_queue(
        mut self,
        queue_id: i32,
        queue: Arc<dyn ConsumeQueue>,
        records: usize,
    ) -> Self {
        self.known_queue = Some(KnownQueue {
            queue_id,
            queue,
            records,
            run: None,
        });
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

    /// `dispatch` for a record the caller just wrote, from what it wrote it from.
    pub fn dispatch_written(&mut self, record: &WrittenRecord<'_>) -> Result<Dispatched> {
        // A record with no key has nothing to index: the index is not asked (it would
        // hash the topic for no entry, about 100 instructions a message of a 100 B
        // bodies-only batch: callgrind). Its mark of how far it is complete stays at the
        // last keyed record, which only ever lets a replay skip less.
        if record.uniq_key.is_some() || !record.keys.is_empty() {
            self.index.dispatch_keys(
                record.topic.as_bytes(),
                record.physical_offset,
                record.total_size,
                record.store_timestamp,
                |visit| {
                    if let Some(uniq) = record.uniq_key {
                        visit(uniq)?;
                    }
                    record.keys.iter().try_for_each(|key| visit(key))
                },
            )?;
        }
        let entry = CqEntry {
            commitlog_offset: record.physical_offset,
            size: i32::try_from(record.total_size).expect("record sizes fit i32"),
            tags_code: record
                .tags
                .map_or(0, |tags| i64::from(java_string_hash(tags))),
            store_timestamp: record.store_timestamp,
        };
        self.queue_entry(
            record.topic.as_bytes(),
            record.queue_id,
            record.queue_offset,
            || entry,
        )
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
        self.queue_entry(view.topic, view.queue_id, view.queue_offset, || {
            queue_entry_of(view)
        })
    }

    /// Add the entry of the record at `queue_offset` of `topic`/`queue_id` to its run;
    /// `entry` is made only when the queue lacks it.
    fn queue_entry(
        &mut self,
        topic: &[u8],
        queue_id: i32,
        queue_offset: i64,
        entry: impl FnOnce() -> CqEntry,
    ) -> Result<Dispatched> {
        if self.pending_entries >= MAX_PENDING_ENTRIES {
            self.append_pending()?;
        }
        let run = match self.run_of(topic, queue_id) {
            Some(run) => run,
            None => {
                if self.runs.len() >= MAX_PENDING_QUEUES {
                    self.append_pending()?;
                }
                let run = self.runs.len();
                let (queue, key, capacity) = match &mut self.known_queue {
                    Some(known) if known.queue_id == queue_id => {
                        known.run = Some(run);
                        (Arc::clone(&known.queue), Vec::new(), known.records)
                    }
                    _ => (
                        self.queues
                            .get_or_create(&String::from_utf8_lossy(topic), queue_id)?,
                        topic.to_vec(),
                        0,
                    ),
                };
                let assigned = queue.writer_bounds();
                let first_offset = assigned.max();
                let empty = first_offset == assigned.min();
                // A queue that starts past zero (its older entries expired) may start at
                // any record.
                let first_offset = if empty && queue_offset > first_offset {
                    queue_offset
                } else {
                    first_offset
                };
                self.runs.push(QueueRun {
                    queue,
                    first_offset,
                    entries: SmallVec::with_capacity(capacity.min(MAX_PENDING_ENTRIES)),
                });
                self.run_keys.push((key, queue_id));
                run
            }
        };
        self.current = run;
        let run = &mut self.runs[run];
        let end = run.end_offset();
        if queue_offset < end {
            return Ok(Dispatched::AlreadyPresent);
        }
        let entry = entry();
        if queue_offset > end {
            return Err(Error::corrupt(
                run.queue.location(),
                0,
                format!(
                    "record at commit-log offset {} has queue offset {queue_offset} but queue {}/{queue_id} ends at {end}",
                    entry.commitlog_offset,
                    String::from_utf8_lossy(topic),
                ),
            ));
        }
        run.entries.push(entry);
        self.pending_entries += 1;
        Ok(Dispatched::Appended)
    }

    /// The position of the pending run of the record's queue.
    #[inline]
    fn run_of(&self, topic: &[u8], queue_id: i32) -> Option<usize> {
        if let Some(known) = &self.known_queue {
            if known.queue_id == queue_id {
                return known.run;
            }
        }
        let is_its_queue = |key: &(Vec<u8>, i32)| key.1 == queue_id && key.0.as_slice() == topic;
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
        if let Some(known) = &mut self.known_queue {
            known.run = None;
        }
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
