//! Consume-queue files in the tier (format §7.5): the file form's sealed queue files
//! follow the segments their entries point into. A file is uploaded once every entry
//! points into an uploaded segment, its local copy goes once every such segment's local
//! copy went (so queue files are evicted exactly when segment eviction reaches them),
//! and its object goes once those segments expired. The RocksDB form stays local.

use crate::consume_queue::remote::SealedQueueFile;
use crate::error::Result;
use crate::tier::remote_log::RemoteLog;
use crate::tier::{TierState, TieredQueueFile};

use super::StoreInner;

/// At open: a queue file the state counts as local but whose file is gone (a crash
/// between recording its eviction and deleting it) is read from the bucket.
pub(super) fn recover_queue_files(root: &std::path::Path, state: &mut TierState) {
    let dir = crate::consume_queue::file_store::FileConsumeQueueStore::dir(root);
    for (key, file) in &mut state.consume_queues {
        if file.local && !dir.join(key).exists() {
            file.local = false;
        }
    }
}

impl StoreInner {
    /// Sealed queue files the tier may take: every entry in an uploaded segment, and not
    /// all of them expired already.
    pub(super) fn queue_files_to_upload(&self, remote: &RemoteLog) -> Vec<SealedQueueFile> {
        let state = remote.state();
        let uploaded_end = state.uploaded_end() as i64;
        let min = self.commit_log.min_offset() as i64;
        self.queues
            .sealed_files()
            .into_iter()
            .filter(|file| file.last_commitlog_end <= uploaded_end && file.last_commitlog_end > min)
            .collect()
    }

    /// Queue files go with the segments they point into: the local copy once every
    /// segment is evicted, the object once they all expired. Returns how many were
    /// evicted and expired.
    pub(super) fn tier_queue_files(&self, remote: &RemoteLog) -> Result<(u64, u64)> {
        let local_min = self.commit_log.local_min_offset() as i64;
        let min = self.commit_log.min_offset() as i64;
        let (mut evicted, mut expired) = (0, 0);
        for (key, file) in remote.state().consume_queues {
            if file.last_commitlog_end <= min {
                // The local copy, if any, goes with the queue's own retention
                // (`drop_below`); the state forgets it only after the object is gone.
                let client = remote.client();
                client.delete(&client.location().queue_file(&key))?;
                remote.update(|state| {
                    state.consume_queues.remove(&key);
                })?;
                expired += 1;
            } else if file.local
                && file.last_commitlog_end <= local_min
                && self.evict_queue_file(remote, &key, &file)?
            {
                evicted += 1;
            } else if !file.local && self.queue_file_path(&key).exists() {
                // A crash between recording the eviction and deleting the file: the
                // upload is confirmed, so the copy left behind goes now.
                self.queues
                    .evict_file(&file.topic, file.queue_id, file.start_offset)?;
            }
        }
        Ok((evicted, expired))
    }

    fn queue_file_path(&self, key: &str) -> std::path::PathBuf {
        crate::consume_queue::file_store::FileConsumeQueueStore::dir(&self.root).join(key)
    }

    /// Record the eviction, then delete the local file; the record is taken back when
    /// the file is not its queue's oldest (an older one is still only local).
    fn evict_queue_file(
        &self,
        remote: &RemoteLog,
        key: &str,
        file: &TieredQueueFile,
    ) -> Result<bool> {
        let set_local = |local: bool| {
            remote.update(|state| {
                if let Some(tiered) = state.consume_queues.get_mut(key) {
                    tiered.local = local;
                }
            })
        };
        set_local(false)?;
        match self
            .queues
            .evict_file(&file.topic, file.queue_id, file.start_offset)
        {
            Ok(true) => Ok(true),
            Ok(false) => {
                set_local(true)?;
                Ok(false)
            }
            // Whether the file went is unknown: the next open finds out (a state entry
            // counted as evicted whose file is still there is read locally all the same).
            Err(error) => Err(error),
        }
    }
}
