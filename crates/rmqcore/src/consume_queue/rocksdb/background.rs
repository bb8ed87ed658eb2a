//! The RocksDB consume queue's writer thread. An append hands its staged batch over and
//! returns: the memtable inserts (about half a microsecond per entry) run on another core
//! while the store's writer appends the next records, as RocketMQ's
//! `RocksGroupCommitService` takes them off its reput thread.
//!
//! Jobs that queue up while a write runs are merged into the next write (group commit).
//!
//! Readers never see the difference: a queue whose writer has assigned offsets that are
//! not yet written waits for them (`WriteProgress::wait_for`) before it answers, so a
//! message can be read as soon as its put returns. A failed write fails every later
//! append and flush with its reason; the commit log still holds the records, and the next
//! open dispatches them again.

use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::database::{Batch, Database};
use super::queue::{RocksDbConsumeQueue, StagedRun};
use crate::error::{Error, Result};

/// Batches handed over and not yet written, at most: enough to keep the thread busy, and
/// a bound on memory when it falls behind.
const QUEUED_BATCHES: usize = 64;

/// One append's writes, and the queues whose readers may see them once written.
pub(super) struct Job {
    pub(super) batch: Batch,
    pub(super) runs: Vec<(Arc<RocksDbConsumeQueue>, StagedRun)>,
    pub(super) dispatched_end: i64,
    pub(super) seq: u64,
}

/// The thread and the channel to it; stopped (after the last job) by `stop` or drop.
pub(super) struct BackgroundWriter {
    database: Arc<Database>,
    sender: Mutex<Option<SyncSender<Job>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl BackgroundWriter {
    pub(super) fn start(database: &Arc<Database>) -> Result<Self> {
        let (sender, receiver) = mpsc::sync_channel(QUEUED_BATCHES);
        let thread_database = Arc::clone(database);
        let thread = std::thread::Builder::new()
            .name("rmq-rocksdb-cq".into())
            .spawn(move || write_jobs(&thread_database, &receiver))
            .map_err(|error| Error::io(&database.path, error))?;
        Ok(BackgroundWriter {
            database: Arc::clone(database),
            sender: Mutex::new(Some(sender)),
            thread: Mutex::new(Some(thread)),
        })
    }

    /// A sequence number for a job about to be handed over; the queues it touches record
    /// it before `submit`, so a reader that sees their new assigned offsets waits for it.
    pub(super) fn reserve(&self) -> Result<u64> {
        self.database.progress.next_seq(&self.database.path)
    }

    pub(super) fn submit(&self, job: Job) -> Result<()> {
        let seq = job.seq;
        let sender = self.sender.lock().expect("writer channel lock");
        match sender.as_ref().map(|sender| sender.send(job)) {
            Some(Ok(())) => Ok(()),
            _ => {
                // The thread is gone: the store is closing. Nobody must wait for the job.
                self.database
                    .progress
                    .finished(seq, Some("the store is closed".into()));
                Err(Error::Closed)
            }
        }
    }

    pub(super) fn drain(&self) -> Result<()> {
        self.database.progress.drain(&self.database.path)
    }

    /// Write what is queued, then end the thread.
    pub(super) fn stop(&self) {
        self.sender.lock().expect("writer channel lock").take();
        if let Some(thread) = self.thread.lock().expect("writer thread lock").take() {
            let _ = thread.join();
        }
    }
}

impl std::fmt::Debug for BackgroundWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackgroundWriter")
            .field("database", &self.database.path)
            .finish_non_exhaustive()
    }
}

impl Drop for BackgroundWriter {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Jobs merged into one write at most: what queued up while the last write ran (group
/// commit), so single puts share a write the way batches do.
const MERGED_JOBS: usize = 64;

fn write_jobs(database: &Database, jobs: &Receiver<Job>) {
    while let Ok(first) = jobs.recv() {
        let Job {
            mut batch,
            mut runs,
            mut dispatched_end,
            mut seq,
        } = first;
        for next in jobs.try_iter().take(MERGED_JOBS - 1) {
            batch.extend(next.batch);
            runs.extend(next.runs);
            dispatched_end = dispatched_end.max(next.dispatched_end);
            seq = next.seq;
        }
        if database.progress.has_failed() {
            // After a lost batch, later ones would leave gaps in their queues.
            database.progress.finished(seq, None);
            continue;
        }
        let dispatched = dispatched_end.max(database.dispatched_end());
        database.put_dispatched_end(&mut batch, dispatched);
        let failure = match database.write(batch) {
            Ok(()) => {
                database
                    .dispatched
                    .store(dispatched, std::sync::atomic::Ordering::Release);
                for (queue, run) in &runs {
                    queue.publish(run);
                }
                None
            }
            Err(error) => Some(error.to_string()),
        };
        database.progress.finished(seq, failure);
    }
}
