//! Appending: a batch of messages to one queue, all or nothing, dispatched to its
//! consume queue and the key index under the write lock.

use crate::clock::now_millis;
use crate::dispatch::{Dispatcher, WrittenRecord};
use crate::error::{Error, Result};
use crate::options::FlushMode;
use crate::record::message::{MessageDraft, PreparedMessage, PutResult};
use crate::record::RecordInput;
use crate::topic::{validate_topic, validate_v1_topic};
use smallvec::SmallVec;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::{validate_queue_id, Store, StoreInner};

/// Where each message of one append went; inline for a single put.
type PutResults = SmallVec<[PutResult; 1]>;

impl Store {
    /// Append one message.
    pub fn put(&self, topic: &str, queue_id: i32, draft: &MessageDraft<'_>) -> Result<PutResult> {
        let mut results = self.append_drafts(topic, queue_id, std::slice::from_ref(draft))?;
        Ok(results.pop().expect("one result per message"))
    }

    /// Append messages to one queue as a unit: all are written or none.
    pub fn put_batch(
        &self,
        topic: &str,
        queue_id: i32,
        drafts: &[MessageDraft<'_>],
    ) -> Result<Vec<PutResult>> {
        self.append_drafts(topic, queue_id, drafts)
            .map(SmallVec::into_vec)
    }

    /// `put_batch`, its working lists (and its results) held inline for one message: a
    /// single put allocates nothing of its own.
    fn append_drafts(
        &self,
        topic: &str,
        queue_id: i32,
        drafts: &[MessageDraft<'_>],
    ) -> Result<PutResults> {
        let started = std::time::Instant::now();
        self.check_writable()?;
        self.validate_written_topic(topic)?;
        validate_queue_id(queue_id)?;
        if drafts.is_empty() {
            return Err(Error::invalid("messages", "the batch is empty"));
        }
        let options = &self.inner.options;
        // Every message's properties in one buffer: one allocation per batch (room for a
        // tag, a key and the record CRC each, so a typical batch does not grow it).
        let mut encoded = Vec::with_capacity(drafts.len() * 64);
        // A loop rather than `collect::<Result<Vec<_>>>()`, which moves each prepared
        // message through an error-shunting adapter.
        let mut prepared: SmallVec<[PreparedMessage<'_>; 1]> =
            SmallVec::with_capacity(drafts.len());
        for draft in drafts {
            prepared.push(draft.prepare(
                options.max_message_size,
                options.append_record_crc,
                &mut encoded,
            )?);
        }
        let mut inputs: SmallVec<[RecordInput<'_>; 1]> = prepared
            .iter()
            .map(|message| RecordInput {
                topic,
                queue_id,
                flag: message.flag,
                body: message.body,
                body_crc: message.body_crc,
                body_crc32: Some(message.body_crc32),
                properties: message.properties(&encoded),
                sys_flag: 0,
                // Set under the lock for a message given none (below).
                born_timestamp: message.born_timestamp.unwrap_or_default(),
                born_host: message.born_host.unwrap_or(options.store_host),
                store_host: options.store_host,
                reconsume_times: 0,
                prepared_transaction_offset: 0,
            })
            .collect();
        for input in &inputs {
            let length = crate::record::record_length(input);
            if length > self.inner.commit_log.max_record_length() {
                return Err(Error::invalid(
                    "body",
                    format!(
                        "the record needs {length} bytes, more than a {}-byte segment holds",
                        options.commitlog_segment_size
                    ),
                ));
            }
        }

        let body_bytes = drafts.iter().map(|draft| draft.body.len()).sum();
        let (results, end) = {
            let writer = self.inner.write_guard();
            self.check_writable()?;
            self.inner.ensure_topic(topic, queue_id + 1)?;
            let queue = self.inner.queues.get_or_create(topic, queue_id)?;
            let first_queue_offset = queue.writer_bounds().max();
            let store_timestamp = now_millis();
            // A message given no born time is born when it is stored: one clock read per
            // put instead of two (each read is a few percent of a 100 B put).
            for (input, message) in inputs.iter_mut().zip(&prepared) {
                if message.born_timestamp.is_none() {
                    input.born_timestamp = store_timestamp;
                }
            }
            let log_end_before = self.inner.commit_log.write_offset();
            let appended = self
                .inner
                .commit_log
                .append(&inputs, first_queue_offset, store_timestamp)
                .map_err(|error| self.inner.explain_disk_full(error))?;
            // Queue and index entries come from what each record was encoded from (the
            // encoder placed it; no second decode), through the dispatcher recovery and
            // rebuild use, so the derived files are the ones a rebuild from the log gives
            // (tests/dispatch_rebuild_identity.rs). A put's records continue one queue, so
            // they form one run.
            let mut dispatcher = Dispatcher::new(self.inner.queues.as_ref(), &self.inner.index)
                .with_warmer(self.inner.commit_log.warmer())
                .with_queue(queue_id, Arc::clone(&queue), drafts.len());
            let dispatched = appended
                .records
                .iter()
                .zip(drafts)
                .zip(first_queue_offset..)
                .try_for_each(|((placed, draft), queue_offset)| {
                    dispatcher
                        .dispatch_written(&WrittenRecord {
                            topic,
                            queue_id,
                            queue_offset,
                            physical_offset: placed.physical_offset as i64,
                            total_size: placed.size,
                            store_timestamp,
                            tags: draft.tags.as_deref().filter(|tags| !tags.is_empty()),
                            uniq_key: draft.uniq_key(),
                            keys: &draft.keys,
                        })
                        .map(drop)
                })
                .and_then(|()| dispatcher.finish());
            if let Err(error) = dispatched {
                // All or nothing: a batch whose queue or index entries cannot be written
                // (a full disk) is taken back out of the log. Index entries already
                // written point at offsets that later records reuse; key queries compare
                // each record's topic and keys, so they never return a wrong message.
                queue.truncate_from_physical(log_end_before as i64)?;
                self.inner.commit_log.roll_back(log_end_before)?;
                return Err(self.inner.explain_disk_full(error));
            }
            let mut results = PutResults::with_capacity(appended.records.len());
            for (index, placed) in appended.records.iter().enumerate() {
                results.push(PutResult {
                    store_host: options.store_host,
                    commitlog_offset: placed.physical_offset as i64,
                    queue_offset: first_queue_offset + index as i64,
                    store_timestamp,
                    store_size: placed.size as i32,
                });
            }
            let end = self.inner.commit_log.write_offset();
            self.inner.dispatched_offset.store(end, Ordering::Release);
            self.inner
                .last_store_timestamp
                .store(store_timestamp, Ordering::Release);
            // Counted once the records are in the log and the queue, under the write
            // lock that lets the queue's counters do without atomic adds.
            queue.traffic().stored(&writer, drafts.len(), body_bytes);
            (results, end)
        };
        if options.flush_mode == FlushMode::Sync {
            self.inner
                .flush
                .wait_flushed(end, Duration::from_millis(options.sync_flush_timeout_ms))?;
        }
        self.inner
            .metrics
            .put(drafts.len(), body_bytes, started.elapsed());
        Ok(results)
    }

    /// A topic that records are written for: a valid name, and short enough for V1
    /// when the store keeps RocketMQ 4.9 readers (longer topics get V2 records).
    pub(super) fn validate_written_topic(&self, topic: &str) -> Result<()> {
        validate_topic(topic)?;
        if self.inner.options.v1_records_only {
            validate_v1_topic(topic)?;
        }
        Ok(())
    }
}

impl StoreInner {
    /// A new segment that cannot be allocated (ENOSPC, EDQUOT) becomes the same
    /// `DiskFull` error the usage threshold gives, naming the store, the usage and the
    /// threshold, and the store refuses writes until usage falls.
    pub(super) fn explain_disk_full(&self, error: Error) -> Error {
        let Error::Io { source, .. } = &error else {
            return error;
        };
        if !matches!(source.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT)) {
            return error;
        }
        let threshold = self.options.retention.disk_space_warning_level_ratio;
        let usage = self.disk.refresh().map_or(1.0, |usage| usage.ratio);
        Error::DiskFull {
            path: self.root.clone(),
            usage,
            threshold,
        }
    }
}
