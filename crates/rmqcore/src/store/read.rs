//! Reading: pulls by queue offset, lookups by key, msgId and time, and queue bounds.

use crate::commit_log::{LogCursor, RecordOwner};
use crate::consume_queue::{ConsumeQueue, EntryCursor};
use crate::error::{Error, Result};
use crate::lookup::KeyQuery;
use crate::options::FlushMode;
use crate::record::message::StoredMessage;
use crate::record::RecordView;
use crate::topic::validate_topic;

use super::pull_query::{PullQuery, PullResult, Pulled};
use super::{validate_queue_id, Store};

/// What `pull_each` did with one record it read.
enum Step {
    Took,
    /// Its tag does not match the filter.
    Skip,
    /// It would pass the byte limit.
    Stop,
}

impl Store {
    /// The end of what readers may see: under sync flush only flushed records.
    pub(super) fn readable_end(&self) -> u64 {
        match self.inner.options.flush_mode {
            FlushMode::Sync if !self.inner.options.read_only => self.inner.flush.flushed_offset(),
            _ => self.inner.commit_log.write_offset(),
        }
    }

    pub(super) fn known_topic(&self, topic: &str) -> Result<()> {
        validate_topic(topic)?;
        // The topic table is in memory; a RocksDB consume queue answers with a seek.
        if self.inner.topics().get(topic).is_some() || self.inner.queues.contains_topic(topic) {
            Ok(())
        } else {
            Err(Error::NotFound(format!("topic {topic:?} does not exist")))
        }
    }

    /// Read messages of a queue, copied out (see `PullQuery` for what it may ask).
    pub fn pull(&self, query: PullQuery<'_>) -> Result<PullResult> {
        let mut messages = Vec::new();
        let pulled = self.pull_each(query, |view| {
            messages.push(StoredMessage::from_record(view));
        })?;
        Ok(PullResult {
            messages,
            next_offset: pulled.next_offset,
            min_offset: pulled.min_offset,
            max_offset: pulled.max_offset,
        })
    }

    /// `pull`, handing each record to `visit` as it is read instead of collecting copies
    /// (the broker encodes them for the wire straight from the log).
    pub fn pull_each(
        &self,
        query: PullQuery<'_>,
        mut visit: impl FnMut(&RecordView<'_>),
    ) -> Result<Pulled> {
        self.pull_each_owned(query, |view, _| visit(view))
    }

    /// `pull_each`, handing `visit` with each record what owns its bytes: a reader that
    /// keeps the owner (a mapped segment, usually one for a whole pull) keeps the record
    /// readable without copying it, whatever retention deletes meanwhile.
    pub fn pull_each_owned(
        &self,
        query: PullQuery<'_>,
        mut visit: impl FnMut(&RecordView<'_>, &RecordOwner),
    ) -> Result<Pulled> {
        let PullQuery {
            topic,
            queue_id,
            offset,
            max_count,
            filter,
            max_bytes,
        } = query;
        let started = std::time::Instant::now();
        self.check_open()?;
        self.known_topic(topic)?;
        validate_queue_id(queue_id)?;
        if offset < 0 {
            return Err(Error::invalid("offset", format!("{offset} is negative")));
        }
        if max_count == 0 {
            return Err(Error::invalid("max_count", "must be at least 1"));
        }
        let Some(queue) = self.inner.queues.get(topic, queue_id) else {
            return if offset == 0 {
                Ok(Pulled {
                    count: 0,
                    next_offset: 0,
                    min_offset: 0,
                    max_offset: 0,
                })
            } else {
                Err(Error::OffsetOutOfRange {
                    what: "queue",
                    offset,
                    min: 0,
                    max: 0,
                })
            };
        };
        let (min, max) = (queue.min_offset(), queue.max_offset());
        if offset < min || offset > max {
            return Err(Error::OffsetOutOfRange {
                what: "queue",
                offset,
                min,
                max,
            });
        }
        // Passing over non-matching entries is bounded so one pull cannot scan a whole
        // queue (RocketMQ bounds it the same way).
        const MAX_FILTERED_ENTRIES: i64 = 16_000;
        let readable_end = self.readable_end() as i64;
        let mut count = 0usize;
        let mut bytes = 0usize;
        let mut next = offset;
        let mut entries = EntryCursor::new(queue.as_ref(), offset, max_count);
        let mut log = LogCursor::new(&self.inner.commit_log);
        while next < max
            && count < max_count
            && next - offset < MAX_FILTERED_ENTRIES + max_count as i64
        {
            let entry = match entries.next_entry() {
                Ok(Some(entry)) => entry,
                Ok(None) => break,
                // An evicted queue file the tier cannot serve now: the records before it
                // are returned; a pull starting in it reports why.
                Err(_) if count > 0 => break,
                Err(error) => return Err(error.at_queue_offset(next)),
            };
            if entry.commitlog_end() > readable_end {
                break;
            }
            if next == offset {
                self.inner.read_ahead.before_pull(
                    &self.inner.commit_log,
                    &queue,
                    offset,
                    entry.commitlog_offset,
                );
            }
            if entry.is_placeholder()
                || filter.is_some_and(|filter| !filter.matches_code(entry.tags_code))
            {
                next += 1;
                continue;
            }
            // The record is decoded and checked once, in the segment the cursor keeps.
            let step = log.visit(entry.commitlog_offset as u64, true, |view, owner| {
                if filter.is_some_and(|filter| !filter.matches_tag(view.tags())) {
                    return Step::Skip;
                }
                if max_bytes.is_some_and(|limit| count > 0 && bytes + view.body.len() > limit) {
                    return Step::Stop;
                }
                bytes += view.body.len();
                visit(view, owner);
                Step::Took
            });
            match step {
                Ok(Step::Took) => {}
                Ok(Step::Skip) => {
                    next += 1;
                    continue;
                }
                Ok(Step::Stop) => break,
                // Retention deleted the segment after the entry was read: the queue's
                // minimum has moved past this offset.
                Err(Error::OffsetOutOfRange { .. }) if count == 0 => {
                    return Err(Error::OffsetOutOfRange {
                        what: "queue",
                        offset,
                        min: queue.min_offset().max(next + 1),
                        max: queue.max_offset(),
                    });
                }
                Err(Error::OffsetOutOfRange { .. }) => break,
                // A damaged record, a changed tier object or an unreachable tier ends
                // the read before it, so that the records ahead of it are returned; a
                // read starting at it reports it.
                Err(
                    Error::Corrupt { .. } | Error::TierObjectChanged { .. } | Error::Tier { .. },
                ) if next > offset => break,
                Err(error) => {
                    let at = entry.commitlog_offset as u64;
                    let error = self.with_resume_offset(error, queue.as_ref(), next, at);
                    return Err(error.at_queue_offset(next));
                }
            }
            count += 1;
            next += 1;
        }
        queue.traffic().read(count, bytes);
        self.inner.metrics.pulled(count, bytes, started.elapsed());
        Ok(Pulled {
            count,
            next_offset: next,
            min_offset: min,
            max_offset: max,
        })
    }

    /// The messages a key lookup finds (see `KeyQuery` and `lookup.rs`).
    pub fn query_by_key(&self, query: &KeyQuery<'_>) -> Result<Vec<StoredMessage>> {
        let mut found = Vec::new();
        self.visit_by_key(query, |view| found.push(StoredMessage::from_record(view)))?;
        Ok(found)
    }

    /// `query_by_key`'s records as views of the log, handed to `visit` (see `lookup.rs`);
    /// returns how many.
    pub fn visit_by_key(
        &self,
        query: &KeyQuery<'_>,
        visit: impl FnMut(&RecordView<'_>),
    ) -> Result<usize> {
        self.check_open()?;
        self.known_topic(query.topic)?;
        crate::lookup::visit_by_key(
            &self.inner.commit_log,
            &self.inner.index,
            self.readable_end(),
            query,
            visit,
        )
    }

    /// The message a msgId names (see `lookup.rs`).
    pub fn get_by_msg_id(&self, msg_id: &str) -> Result<StoredMessage> {
        self.check_open()?;
        crate::lookup::get_by_msg_id(&self.inner.commit_log, self.readable_end(), msg_id)
    }

    /// The first queue offset stored at or after `timestamp` (see `lookup.rs`).
    pub fn offset_for_time(&self, topic: &str, queue_id: i32, timestamp: i64) -> Result<i64> {
        self.check_open()?;
        self.known_topic(topic)?;
        validate_queue_id(queue_id)?;
        let queue = self.inner.queues.get(topic, queue_id);
        crate::lookup::offset_for_time(
            &self.inner.commit_log,
            queue.as_deref(),
            self.readable_end(),
            timestamp,
        )
    }

    /// The record at a commit-log offset.
    pub fn read_at(&self, commitlog_offset: i64) -> Result<StoredMessage> {
        self.check_open()?;
        let offset = u64::try_from(commitlog_offset)
            .map_err(|_| Error::invalid("commitlog_offset", "is negative"))?;
        if offset >= self.readable_end() && offset < self.inner.commit_log.write_offset() {
            return Err(Error::OffsetOutOfRange {
                what: "commit-log",
                offset: commitlog_offset,
                min: self.inner.commit_log.min_offset() as i64,
                max: self.readable_end() as i64,
            });
        }
        let record = self.inner.commit_log.read(offset, true)?;
        Ok(StoredMessage::from_record(&record.view()))
    }

    pub fn min_offset(&self, topic: &str, queue_id: i32) -> Result<i64> {
        self.queue_bound(topic, queue_id, |queue| queue.min_offset())
    }

    pub fn max_offset(&self, topic: &str, queue_id: i32) -> Result<i64> {
        self.queue_bound(topic, queue_id, |queue| queue.max_offset())
    }

    /// One bound of a queue of a known topic; 0 for a queue nothing was written to.
    fn queue_bound(
        &self,
        topic: &str,
        queue_id: i32,
        bound: impl FnOnce(&dyn ConsumeQueue) -> i64,
    ) -> Result<i64> {
        self.check_open()?;
        self.known_topic(topic)?;
        validate_queue_id(queue_id)?;
        Ok(self
            .inner
            .queues
            .get(topic, queue_id)
            .map_or(0, |queue| bound(queue.as_ref())))
    }
}
