//! Topics and consumer-group offsets: the config files behind the store.

use crate::error::{Error, Result};
use crate::options::MAX_QUEUE_ID;
use crate::topic::{validate_group, validate_topic};
use std::collections::BTreeSet;

use super::{validate_queue_id, Store};

impl Store {
    /// Topics the store knows: configured ones and any with a consume queue.
    pub fn topics(&self) -> Result<Vec<String>> {
        self.check_open()?;
        let mut topics: BTreeSet<String> = self.inner.queues.topics().into_iter().collect();
        topics.extend(
            self.inner
                .topics()
                .topics()
                .map(|config| config.topic_name.clone()),
        );
        Ok(topics.into_iter().collect())
    }

    /// Number of queues of a topic: its configured count, or more if queues exist beyond.
    pub fn queue_count(&self, topic: &str) -> Result<i32> {
        self.check_open()?;
        self.known_topic(topic)?;
        let configured = self
            .inner
            .topics()
            .get(topic)
            .map_or(0, |config| config.queue_count());
        let existing = self
            .inner
            .queues
            .queues_of(topic)
            .iter()
            .map(|queue| queue.queue_id() + 1)
            .max()
            .unwrap_or(0);
        Ok(configured.max(existing))
    }

    pub fn create_topic(&self, topic: &str, queues: i32) -> Result<()> {
        self.check_writable()?;
        self.validate_written_topic(topic)?;
        if !(1..=MAX_QUEUE_ID + 1).contains(&queues) {
            return Err(Error::invalid(
                "queues",
                format!("{queues} is not between 1 and {}", MAX_QUEUE_ID + 1),
            ));
        }
        let _writer = self.inner.write_guard();
        let mut table = self.inner.topics();
        if table.ensure(topic, queues) {
            table.persist()?;
        }
        Ok(())
    }

    /// Create the files of queue `queue_id` of `topic` that its first put would create,
    /// if it has none yet (a broker does so as it learns of a new queue): their directory
    /// and file cost that put about 0.3 ms on a shard's data plane (mkdir and create,
    /// under strace), more than a later 128-message put takes. An empty queue file is
    /// what a queue has between its file's creation and its first entry.
    pub fn prepare_queue(&self, topic: &str, queue_id: i32) -> Result<()> {
        self.check_writable()?;
        self.validate_written_topic(topic)?;
        validate_queue_id(queue_id)?;
        let _writer = self.inner.write_guard();
        self.inner
            .queues
            .get_or_create(topic, queue_id)?
            .prepare_first_file()
    }

    pub fn delete_topic(&self, topic: &str) -> Result<()> {
        self.check_writable()?;
        self.known_topic(topic)?;
        let _writer = self.inner.write_guard();
        let mut topics = self.inner.topics();
        if topics.remove(topic) {
            topics.persist()?;
        }
        drop(topics);
        self.inner.queues.remove_topic(topic)?;
        let mut offsets = self.inner.offsets.lock().expect("offset table lock");
        if offsets.remove_topic(topic) {
            offsets.persist()?;
        }
        Ok(())
    }

    pub fn commit_offset(
        &self,
        group: &str,
        topic: &str,
        queue_id: i32,
        offset: i64,
    ) -> Result<()> {
        self.check_writable()?;
        validate_group(group)?;
        validate_topic(topic)?;
        validate_queue_id(queue_id)?;
        if offset < 0 {
            return Err(Error::invalid("offset", format!("{offset} is negative")));
        }
        let mut offsets = self.inner.offsets.lock().expect("offset table lock");
        offsets.set(group, topic, queue_id, offset);
        offsets.persist()
    }

    pub fn committed_offset(&self, group: &str, topic: &str, queue_id: i32) -> Result<Option<i64>> {
        self.check_open()?;
        validate_group(group)?;
        validate_topic(topic)?;
        validate_queue_id(queue_id)?;
        Ok(self
            .inner
            .offsets
            .lock()
            .expect("offset table lock")
            .get(group, topic, queue_id))
    }
}
