//! `config/topics.json` (format §4.4): the topics a store knows and their queue counts,
//! in the layout RocketMQ's broker loads.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::json_file::{load_json_config, persist_json_config};
use crate::error::Result;

/// Read and write permission, RocketMQ's default `perm`.
pub const PERM_READ_WRITE: i32 = 6;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicConfig {
    pub topic_name: String,
    pub read_queue_nums: i32,
    pub write_queue_nums: i32,
    pub perm: i32,
    pub topic_filter_type: String,
    pub topic_sys_flag: i32,
    pub order: bool,
    pub attributes: BTreeMap<String, String>,
}

impl Default for TopicConfig {
    fn default() -> Self {
        TopicConfig {
            topic_name: String::new(),
            read_queue_nums: 0,
            write_queue_nums: 0,
            perm: PERM_READ_WRITE,
            topic_filter_type: "SINGLE_TAG".to_string(),
            topic_sys_flag: 0,
            order: false,
            attributes: BTreeMap::new(),
        }
    }
}

impl TopicConfig {
    pub fn new(topic: &str, queues: i32) -> Self {
        TopicConfig {
            topic_name: topic.to_string(),
            read_queue_nums: queues,
            write_queue_nums: queues,
            ..Default::default()
        }
    }

    pub fn queue_count(&self) -> i32 {
        self.read_queue_nums.max(self.write_queue_nums)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DataVersion {
    pub counter: i64,
    pub state_version: i64,
    pub timestamp: i64,
}

impl Default for DataVersion {
    fn default() -> Self {
        DataVersion {
            counter: 0,
            state_version: 0,
            timestamp: crate::clock::now_millis(),
        }
    }
}

impl DataVersion {
    pub fn bump(&mut self) {
        self.counter += 1;
        self.timestamp = crate::clock::now_millis();
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct TopicsFile {
    topic_config_table: BTreeMap<String, TopicConfig>,
    data_version: DataVersion,
}

#[derive(Debug)]
pub struct TopicConfigTable {
    path: PathBuf,
    file: TopicsFile,
}

impl TopicConfigTable {
    pub fn file_path(root: &Path) -> PathBuf {
        root.join("config").join("topics.json")
    }

    pub fn load(root: &Path) -> Result<Self> {
        let path = Self::file_path(root);
        let file = load_json_config(&path)?;
        Ok(TopicConfigTable { path, file })
    }

    pub fn get(&self, topic: &str) -> Option<&TopicConfig> {
        self.file.topic_config_table.get(topic)
    }

    pub fn topics(&self) -> impl Iterator<Item = &TopicConfig> {
        self.file.topic_config_table.values()
    }

    /// Make sure `topic` has at least `queues` queues; returns whether anything changed.
    pub fn ensure(&mut self, topic: &str, queues: i32) -> bool {
        match self.file.topic_config_table.get_mut(topic) {
            Some(config) if config.queue_count() >= queues => false,
            Some(config) => {
                config.read_queue_nums = queues;
                config.write_queue_nums = queues;
                self.file.data_version.bump();
                true
            }
            None => {
                self.file
                    .topic_config_table
                    .insert(topic.to_string(), TopicConfig::new(topic, queues));
                self.file.data_version.bump();
                true
            }
        }
    }

    pub fn remove(&mut self, topic: &str) -> bool {
        let removed = self.file.topic_config_table.remove(topic).is_some();
        if removed {
            self.file.data_version.bump();
        }
        removed
    }

    pub fn persist(&self) -> Result<()> {
        persist_json_config(&self.path, &self.file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_rocketmq_written_topics_json() {
        let dir = tempfile::tempdir().unwrap();
        let path = TopicConfigTable::file_path(dir.path());
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(
            &path,
            "{\n\t\"dataVersion\":{\"counter\":3,\"timestamp\":1700000000000},\n\t\"topicConfigTable\":{\n\t\t\"TopicTest\":{\"order\":false,\"perm\":6,\"readQueueNums\":4,\"topicFilterType\":\"SINGLE_TAG\",\"topicName\":\"TopicTest\",\"topicSysFlag\":0,\"writeQueueNums\":4,\"unknownField\":1}\n\t}\n}",
        )
        .unwrap();
        let mut table = TopicConfigTable::load(dir.path()).unwrap();
        assert_eq!(table.get("TopicTest").unwrap().queue_count(), 4);
        assert!(table.ensure("Other", 8));
        assert!(!table.ensure("TopicTest", 2));
        table.persist().unwrap();
        let reloaded = TopicConfigTable::load(dir.path()).unwrap();
        assert_eq!(reloaded.get("Other").unwrap().write_queue_nums, 8);
    }
}
