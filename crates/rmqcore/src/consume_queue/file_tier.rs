//! A file-form queue's side of the tier (format §7.5): its evicted files, read through
//! the store's tier, and its sealed files, offered to the uploader. Evicted files all
//! come before the local ones, so a lookup the local files miss below them goes here.

use std::sync::{Arc, Weak};

use bytes::Bytes;

use super::FileConsumeQueue;
use crate::consume_queue::entry::{CqEntry, ENTRY_SIZE};
use crate::consume_queue::remote::SealedQueueFile;
use crate::error::Result;

/// The evicted file a queue read an entry from last: a reader going through it reads its
/// next entries without looking it up in the tier's state and cache again (two lookups
/// by a formatted key per entry, most of a one-queue tier read's queue work). Trusted
/// only while the tier's state has not changed since (`state_version`: a file expired
/// or replaced is looked up again) and the tier's cache still holds the file (`file` is
/// a `Weak`: remembering a file never keeps it past the cache's bound).
#[derive(Debug, Default)]
pub(super) struct LastRemoteFile(std::sync::Mutex<Option<RemoteFileSeen>>);

#[derive(Debug)]
struct RemoteFileSeen {
    start: u64,
    state_version: u64,
    file: Weak<Bytes>,
}

impl LastRemoteFile {
    /// The entry at `logical` when the file remembered holds it and may still be used.
    fn entry(&self, logical: u64, state_version: u64) -> Option<CqEntry> {
        let seen = self.0.lock().expect("last remote file lock");
        let seen = seen.as_ref()?;
        if seen.state_version != state_version || logical < seen.start {
            return None;
        }
        let file = seen.file.upgrade()?;
        let position = usize::try_from(logical - seen.start).ok()?;
        file.get(position..position + ENTRY_SIZE)
            .map(CqEntry::decode)
    }

    fn remember(&self, start: u64, state_version: u64, file: &Arc<Bytes>) {
        *self.0.lock().expect("last remote file lock") = Some(RemoteFileSeen {
            start,
            state_version,
            file: Arc::downgrade(file),
        });
    }
}

impl FileConsumeQueue {
    pub(super) fn remote_first_start(&self) -> Option<u64> {
        self.remote
            .as_ref()?
            .first_start(&self.topic, self.queue_id)
    }

    /// The entry at `logical` from an evicted file; None when no evicted file holds it.
    /// A file that cannot be read whole and checked (tier unreachable, object changed
    /// or gone) is an error, also kept for the tier's status: "no entry" would read as
    /// the end of the queue.
    pub(super) fn remote_entry(&self, logical: u64) -> Result<Option<CqEntry>> {
        let Some(remote) = self.remote.as_ref() else {
            return Ok(None);
        };
        // Read before the lookups: a change after it makes what is remembered stale.
        let state_version = remote.state_version();
        if let Some(entry) = self.last_remote_file.entry(logical, state_version) {
            return Ok(Some(entry));
        }
        let Some(start) = remote.holding(&self.topic, self.queue_id, logical) else {
            return Ok(None);
        };
        match remote.read_file(&self.topic, self.queue_id, start) {
            Ok(bytes) => {
                self.last_remote_file.remember(start, state_version, &bytes);
                let position = (logical - start) as usize;
                Ok(bytes
                    .get(position..position + ENTRY_SIZE)
                    .map(CqEntry::decode))
            }
            Err(error) => {
                remote.note_read_failure(&error);
                // A file lost from the bucket: its entries are gone, the next file's are
                // not, so a reader that accepts the loss goes on at the next file.
                let past = remote
                    .recorded_file_size(&self.topic, self.queue_id)
                    .map(|size| ((start + size) / ENTRY_SIZE as u64) as i64);
                Err(match past {
                    Some(past) => error.resuming_at(past),
                    None => error,
                })
            }
        }
    }

    /// Every local file but the last (sealed: the writer moved on), with the commit-log
    /// end of its last entry.
    pub fn sealed_files(&self) -> Vec<SealedQueueFile> {
        let mut segments = self.segments.segments();
        segments.pop();
        segments
            .into_iter()
            .map(|segment| {
                let last = CqEntry::decode(segment.bytes(segment.size() - ENTRY_SIZE, ENTRY_SIZE));
                SealedQueueFile {
                    topic: self.topic.clone(),
                    queue_id: self.queue_id,
                    last_commitlog_end: last.commitlog_end(),
                    segment,
                }
            })
            .collect()
    }

    /// Delete the local copy of the oldest file, starting at `start`, once the tier has
    /// it; false when it is not the oldest local file (or the only one).
    pub fn evict_first(&self, start: u64) -> Result<bool> {
        Ok(self.segments.remove_first_if(start)?.is_some())
    }
}
