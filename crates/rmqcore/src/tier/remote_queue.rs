//! Entries of consume-queue files only the tier holds (format §7.5). A read fetches the
//! whole file in one GET and checks its size and CRC32 against the state before any
//! entry is used: an entry has no checksum of its own, and a changed object would
//! otherwise point readers at the wrong records. Checked files are kept (within a
//! quarter of the read cache's bytes), so a consumer going through a file fetches it once.

use std::sync::Arc;

use bytes::Bytes;

use super::remote_log::RemoteLog;
use super::state::TieredQueueFile;
use crate::consume_queue::remote::RemoteQueueFiles;
use crate::error::{Error, Result};

impl RemoteLog {
    /// The last failed read of an evicted queue file, if any.
    pub fn queue_read_failure(&self) -> Option<String> {
        self.queue_read_failure
            .lock()
            .expect("queue read failure lock")
            .clone()
    }
}

impl RemoteQueueFiles for RemoteLog {
    fn first_start(&self, topic: &str, queue_id: i32) -> Option<u64> {
        let prefix = format!("{topic}/{queue_id}/");
        let state = self.state.read().expect("tier state lock");
        let first = state
            .consume_queues
            .range(prefix.clone()..)
            .take_while(|(key, _)| key.starts_with(&prefix))
            .find(|(_, file)| !file.local)
            .map(|(_, file)| file.start_offset);
        first
    }

    /// One ordered lookup per entry read (keys end in 20-digit offsets, so they sort as
    /// the offsets do): no scan of the queue's files.
    fn holding(&self, topic: &str, queue_id: i32, logical: u64) -> Option<u64> {
        let prefix = format!("{topic}/{queue_id}/");
        let key = TieredQueueFile::key(topic, queue_id, logical);
        let state = self.state.read().expect("tier state lock");
        let found = state
            .consume_queues
            .range(prefix.clone()..=key)
            .next_back()
            .filter(|(key, file)| {
                key.starts_with(&prefix) && !file.local && logical < file.start_offset + file.size
            })
            .map(|(_, file)| file.start_offset);
        found
    }

    fn state_version(&self) -> u64 {
        RemoteLog::state_version(self)
    }

    fn read_file(&self, topic: &str, queue_id: i32, start: u64) -> Result<Arc<Bytes>> {
        let key = TieredQueueFile::key(topic, queue_id, start);
        if let Some(bytes) = self.queue_files.lock().expect("queue file lock").get(&key) {
            self.reads
                .cache_hits
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return Ok(bytes);
        }
        let file = self
            .state
            .read()
            .expect("tier state lock")
            .consume_queues
            .get(&key)
            .cloned()
            .ok_or_else(|| Error::NotFound(format!("queue file {key} is no longer in the tier")))?;
        let object = self.client.location().queue_file(&key);
        let bytes = self.counted_get(&object, 0..file.size, (file.size, file.crc32))?;
        if bytes.len() as u64 != file.size || crc32fast::hash(&bytes) != file.crc32 {
            return Err(Error::tier_object_changed(
                self.client.location().describe(&object),
                0,
                format!(
                    "its bytes differ from the consume-queue file uploaded ({} bytes, CRC32 \
                     {:08x}); its entries are not served",
                    file.size, file.crc32
                ),
            ));
        }
        let bytes = Arc::new(bytes);
        self.queue_files
            .lock()
            .expect("queue file lock")
            .insert(key, Arc::clone(&bytes));
        Ok(bytes)
    }

    fn recorded_file_size(&self, topic: &str, queue_id: i32) -> Option<u64> {
        let prefix = format!("{topic}/{queue_id}/");
        let state = self.state.read().expect("tier state lock");
        let size = state
            .consume_queues
            .range(prefix.clone()..)
            .take_while(|(key, _)| key.starts_with(&prefix))
            .map(|(_, file)| file.size)
            .max();
        size
    }

    fn note_read_failure(&self, error: &Error) {
        *self
            .queue_read_failure
            .lock()
            .expect("queue read failure lock") = Some(error.to_string());
    }
}
