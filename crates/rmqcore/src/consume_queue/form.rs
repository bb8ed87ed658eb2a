//! Which form a store's consume queues take, chosen when the store is created and kept
//! in `config/storeConfig.json` (format §0.2, §6) so that a reopen cannot switch it silently.
//! A store without that file (one RocketMQ wrote) is told by its files: RocksDB keeps a
//! `CURRENT` file in `consumequeue/`, the file form a directory per topic.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::json_file::{load_json_config, persist_json_config};
use crate::consume_queue::file_store::FileConsumeQueueStore;
use crate::consume_queue::rocksdb::RocksDbConsumeQueueStore;
use crate::consume_queue::ConsumeQueueStore;
use crate::error::{Error, Result};
use crate::options::{ConsumeQueueType, StoreOptions};

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct StoreConfig {
    /// "file" or "rocksdb"; empty in a file that predates the choice.
    consume_queue_type: String,
}

fn config_path(root: &Path) -> PathBuf {
    root.join("config").join("storeConfig.json")
}

/// The form the files under `consumequeue/` have, if they show one.
fn form_on_disk(root: &Path) -> Option<ConsumeQueueType> {
    if RocksDbConsumeQueueStore::exists(root) {
        return Some(ConsumeQueueType::RocksDb);
    }
    let dir = FileConsumeQueueStore::dir(root);
    let has_topic_dirs = std::fs::read_dir(&dir)
        .map(|entries| entries.flatten().any(|entry| entry.path().is_dir()))
        .unwrap_or(false);
    has_topic_dirs.then_some(ConsumeQueueType::File)
}

/// The store's form: what it was created with, checked against what the caller asked
/// for; a new store takes the requested form (the file form by default) and records it.
pub fn choose(root: &Path, options: &StoreOptions) -> Result<ConsumeQueueType> {
    let recorded: StoreConfig = load_json_config(&config_path(root))?;
    let recorded = match recorded.consume_queue_type.as_str() {
        "" => None,
        name => Some(ConsumeQueueType::parse(name).map_err(|_| {
            Error::corrupt(
                config_path(root),
                0,
                format!("unknown consumeQueueType {name:?}"),
            )
        })?),
    };
    let on_disk = form_on_disk(root);
    if let (Some(recorded), Some(on_disk)) = (recorded, on_disk) {
        if recorded != on_disk {
            return Err(Error::corrupt(
                config_path(root),
                0,
                format!(
                    "the store was created with {} consume queues, but consumequeue/ holds \
                     the {} form",
                    recorded.name(),
                    on_disk.name()
                ),
            ));
        }
    }
    let existing = recorded.or(on_disk);
    let chosen = match (existing, options.consume_queue_type) {
        (Some(existing), Some(asked)) if existing != asked => {
            return Err(Error::invalid(
                "consume_queue_type",
                format!(
                    "the store at {} was created with consume_queue_type={:?}; it cannot be \
                     opened as {:?} (leave the option out to open it as it is)",
                    root.display(),
                    existing.name(),
                    asked.name()
                ),
            ));
        }
        (Some(existing), _) => existing,
        (None, asked) => asked.unwrap_or(ConsumeQueueType::File),
    };
    if recorded.is_none() && !options.read_only {
        persist_json_config(
            &config_path(root),
            &StoreConfig {
                consume_queue_type: chosen.name().to_string(),
            },
        )?;
    }
    Ok(chosen)
}

/// Open the consume queues of the store at `root` in `form`. `log_has_records` tells a
/// RocksDB consume queue that went missing from one never created.
pub fn open(
    root: &Path,
    form: ConsumeQueueType,
    options: &StoreOptions,
    commitlog_min: i64,
    log_has_records: bool,
    remote: Option<std::sync::Arc<dyn crate::consume_queue::remote::RemoteQueueFiles>>,
) -> Result<Box<dyn ConsumeQueueStore>> {
    let writable = !options.read_only;
    let rebuild = options.rebuild_consume_queues && writable;
    Ok(match form {
        ConsumeQueueType::File => Box::new(FileConsumeQueueStore::load(
            root,
            options.consume_queue_entries_per_file,
            writable,
            remote,
        )?),
        ConsumeQueueType::RocksDb => {
            let dir = RocksDbConsumeQueueStore::dir(root);
            if rebuild {
                // Recreated from the log after opening: whatever is there goes.
                if dir.exists() {
                    std::fs::remove_dir_all(&dir).map_err(|error| Error::io(&dir, error))?;
                }
            } else if log_has_records && !RocksDbConsumeQueueStore::exists(root) {
                return Err(Error::corrupt(
                    &dir,
                    0,
                    "the store's RocksDB consume queue is missing; open it with \
                     rebuild_consume_queues=True (`rmq rebuild PATH`) to recreate it from the \
                     commit log",
                ));
            }
            Box::new(RocksDbConsumeQueueStore::open(
                root,
                writable,
                commitlog_min,
            )?)
        }
    })
}
