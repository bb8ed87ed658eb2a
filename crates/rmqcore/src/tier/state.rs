//! What the store knows of its tier (format §7.2): the segments whose upload was
//! confirmed, and whether each still has a local copy. Written atomically after every
//! change, so a crash leaves either the old or the new list; what the list misses (an
//! upload confirmed just before a crash) the uploader finds again in the bucket.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::json_file::{load_json_config, persist_json_config};
use crate::error::Result;
use crate::index::compacted::CompactedHeader;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TieredSegment {
    pub start_offset: u64,
    /// The object's size and CRC32, as uploaded and confirmed.
    pub size: u64,
    pub crc32: u32,
    /// The segment's own size when its object is queue-grouped (its records reordered by
    /// queue, then the footer: `grouped_object.rs`); absent for an object that is the
    /// segment byte for byte (uploaded before the grouped layout), still read as such.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segment_size: Option<u64>,
    /// The local file's modification time at upload: retention ages the segment by it,
    /// as RocketMQ ages local segments by theirs.
    pub last_modified_ms: i64,
    /// False once the local copy is evicted: reads go to the bucket.
    pub local: bool,
}

impl TieredSegment {
    /// The segment's size in the log (the object's is `size`).
    pub fn log_size(&self) -> u64 {
        self.segment_size.unwrap_or(self.size)
    }

    pub fn end_offset(&self) -> u64 {
        self.start_offset + self.log_size()
    }
}

/// A compacted index file (format §3.7) in the tier, with the header fields a query
/// needs, so that a lookup reads only its slot and run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TieredIndexFile {
    pub size: u64,
    pub crc32: u32,
    /// Its fields inline in the JSON, between `crc32` and `local`; the source index count
    /// and body CRC are not kept (read back as 0).
    #[serde(flatten)]
    pub header: CompactedHeader,
    pub local: bool,
}

/// A sealed consume-queue file (file form, format §2) in the tier, keyed in the state by
/// its path under `consumequeue/` (`<topic>/<queueId>/<20-digit start offset>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TieredQueueFile {
    pub topic: String,
    pub queue_id: i32,
    /// Logical byte offset of its first entry (its file name).
    pub start_offset: u64,
    pub size: u64,
    pub crc32: u32,
    /// The commit-log end of its last entry: the file follows the segments below it
    /// (evicted once they all are, expired once they all expired).
    pub last_commitlog_end: i64,
    pub local: bool,
}

impl TieredQueueFile {
    /// Its key in the state, and its path under `consumequeue/`, locally and in the tier.
    ///
    /// Built by hand, not with `format!`: a reader of an evicted queue file builds this
    /// key twice per entry, and `format!`'s zero padding (one write per pad character)
    /// made up most of the 38 % of such a read's instructions spent on keys (callgrind).
    pub fn key(topic: &str, queue_id: i32, start_offset: u64) -> String {
        use std::fmt::Write;
        let mut key = String::with_capacity(topic.len() + 33);
        key.push_str(topic);
        let _ = write!(key, "/{queue_id}/");
        let mut digits = [b'0'; 20];
        let mut rest = start_offset;
        for digit in digits.iter_mut().rev() {
            *digit = b'0' + (rest % 10) as u8;
            rest /= 10;
        }
        key.push_str(std::str::from_utf8(&digits).expect("ASCII digits"));
        key
    }
}

#[cfg(test)]
mod key_tests {
    use super::TieredQueueFile;

    #[test]
    fn a_queue_file_key_is_the_topic_the_queue_and_twenty_digits() {
        for (queue_id, start) in [(0, 0), (3, 6_000_000), (-1, 12_345), (7, u64::MAX)] {
            assert_eq!(
                TieredQueueFile::key("Topic-A", queue_id, start),
                format!("Topic-A/{queue_id}/{start:020}")
            );
        }
    }
}

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TierState {
    /// The tier's URL when the list was written: a store is not moved between buckets
    /// without saying so.
    pub url: String,
    /// The server and region it was opened with (never credentials), so that a store
    /// whose segments are in the bucket opens with its tier without being told again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    pub segments: BTreeMap<u64, TieredSegment>,
    /// Compacted index files uploaded, by name (names sort in log order).
    #[serde(default)]
    pub index_files: BTreeMap<String, TieredIndexFile>,
    /// Consume-queue files uploaded, by `TieredQueueFile::key` (a queue's files sort in
    /// offset order).
    #[serde(default)]
    pub consume_queues: BTreeMap<String, TieredQueueFile>,
}

impl TierState {
    pub fn path(root: &Path) -> PathBuf {
        root.join("tier").join("state.json")
    }

    pub fn load(root: &Path) -> Result<Self> {
        load_json_config(&Self::path(root))
    }

    pub fn persist(&self, root: &Path) -> Result<()> {
        let path = Self::path(root);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|error| crate::error::Error::io(dir, error))?;
        }
        persist_json_config(&path, self)
    }

    /// The end of the newest uploaded segment: queue files whose entries all point
    /// below it may go to the tier.
    pub fn uploaded_end(&self) -> u64 {
        self.segments
            .values()
            .next_back()
            .map_or(0, TieredSegment::end_offset)
    }

    /// Segments with no local copy, oldest first.
    pub fn remote_only(&self) -> impl Iterator<Item = &TieredSegment> {
        self.segments.values().filter(|segment| !segment.local)
    }

    /// The segment holding `offset`, among those with no local copy.
    pub fn remote_holding(&self, offset: u64) -> Option<&TieredSegment> {
        self.segments
            .range(..=offset)
            .next_back()
            .map(|(_, segment)| segment)
            .filter(|segment| !segment.local && offset < segment.end_offset())
    }
}
