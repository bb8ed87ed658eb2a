//! `config/consumerOffset.json` (format §4.4): each consumer group's next offset per
//! topic queue, keyed `"<topic>@<group>"`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::json_file::{load_json_config, persist_json_config};
use crate::config::topics::DataVersion;
use crate::error::Result;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct OffsetsFile {
    offset_table: BTreeMap<String, BTreeMap<i32, i64>>,
    data_version: DataVersion,
}

#[derive(Debug)]
pub struct ConsumerOffsetTable {
    path: PathBuf,
    file: OffsetsFile,
}

fn table_key(group: &str, topic: &str) -> String {
    format!("{topic}@{group}")
}

impl ConsumerOffsetTable {
    pub fn file_path(root: &Path) -> PathBuf {
        root.join("config").join("consumerOffset.json")
    }

    pub fn load(root: &Path) -> Result<Self> {
        let path = Self::file_path(root);
        let file = load_json_config(&path)?;
        Ok(ConsumerOffsetTable { path, file })
    }

    pub fn get(&self, group: &str, topic: &str, queue_id: i32) -> Option<i64> {
        self.file
            .offset_table
            .get(&table_key(group, topic))?
            .get(&queue_id)
            .copied()
    }

    pub fn set(&mut self, group: &str, topic: &str, queue_id: i32, offset: i64) {
        self.file
            .offset_table
            .entry(table_key(group, topic))
            .or_default()
            .insert(queue_id, offset);
        self.file.data_version.bump();
    }

    /// Forget every group's offsets of `topic`.
    pub fn remove_topic(&mut self, topic: &str) -> bool {
        let before = self.file.offset_table.len();
        self.file
            .offset_table
            .retain(|key, _| key.rsplit_once('@').map(|(t, _)| t) != Some(topic));
        before != self.file.offset_table.len()
    }

    pub fn persist(&self) -> Result<()> {
        persist_json_config(&self.path, &self.file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_unquoted_integer_keys_and_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let path = ConsumerOffsetTable::file_path(dir.path());
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "{\"offsetTable\":{\"TopicTest@g1\":{0:12,1:3}}}").unwrap();
        let mut table = ConsumerOffsetTable::load(dir.path()).unwrap();
        assert_eq!(table.get("g1", "TopicTest", 1), Some(3));
        table.set("g2", "TopicTest", 0, 9);
        table.persist().unwrap();
        assert_eq!(
            ConsumerOffsetTable::load(dir.path())
                .unwrap()
                .get("g2", "TopicTest", 0),
            Some(9)
        );
    }
}
