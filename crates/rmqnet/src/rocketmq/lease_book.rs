//! Every consumer group's leases (`queue_leases.rs`) in one store directory, kept in
//! `config/rocketmqLeases.json` there, so that a restarted shard neither forgets what
//! was acked nor hands out again what is still invisible.
//!
//! One book per store serves both RocketMQ v2 paths of a shard process: the native data
//! plane (`receive.rs`) and the Python one (through the binding's `LeaseBook`), so the two
//! can never disagree about a delivery. The file's format is the one the Python broker
//! wrote before the book moved here: `{group: {topic: {queue id: {"low", "next",
//! "acked": [offsets], "leased": {offset: [attempt, deadline ms, ordered]}}}}}`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use rmqcore::Store;
use serde_json::{json, Map, Value};

use super::queue_leases::{Lease, QueueLeases};

pub const FILE_NAME: &str = "rocketmqLeases.json";

/// (group, topic, queue id)
pub type Key = (String, String, i32);

#[derive(Default)]
struct State {
    queues: HashMap<Key, QueueLeases>,
    dirty: bool,
}

pub struct LeaseBook {
    path: PathBuf,
    state: Mutex<State>,
}

/// What the book holds of one queue while a caller works on it (the book stays locked).
pub struct Held<'a> {
    guard: MutexGuard<'a, State>,
    key: Key,
}

impl Held<'_> {
    pub fn queue(&mut self) -> &mut QueueLeases {
        self.guard.dirty = true;
        self.guard
            .queues
            .get_mut(&self.key)
            .expect("held queues exist")
    }
}

impl LeaseBook {
    /// The book of the store directory `store_dir`, as last saved there.
    pub fn open(store_dir: &Path) -> std::io::Result<LeaseBook> {
        let path = store_dir.join("config").join(FILE_NAME);
        let mut state = State::default();
        match std::fs::read(&path) {
            Ok(data) => {
                let value: Value = serde_json::from_slice(&data).map_err(invalid)?;
                state.queues = parse(&value)
                    .ok_or_else(|| invalid(format!("{} is not a lease book", path.display())))?;
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(error),
        }
        Ok(LeaseBook {
            path,
            state: Mutex::new(state),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The group's leases of a queue, begun at the group's committed offset (or the
    /// queue's first) when the group never received from it.
    pub fn hold(
        &self,
        store: &Store,
        group: &str,
        topic: &str,
        queue_id: i32,
    ) -> rmqcore::Result<Held<'_>> {
        let key = (group.to_owned(), topic.to_owned(), queue_id);
        let mut guard = self.lock();
        if !guard.queues.contains_key(&key) {
            let low = match store.committed_offset(group, topic, queue_id)? {
                Some(committed) => committed,
                None => store.min_offset(topic, queue_id)?,
            };
            guard.queues.insert(key.clone(), QueueLeases::new(low));
            guard.dirty = true;
        }
        Ok(Held { guard, key })
    }

    /// Ack or extend on a queue the group has leases of; `None` when it has none.
    pub fn with_existing<T>(
        &self,
        group: &str,
        topic: &str,
        queue_id: i32,
        change: impl FnOnce(&mut QueueLeases) -> T,
    ) -> Option<T> {
        let mut guard = self.lock();
        let key = (group.to_owned(), topic.to_owned(), queue_id);
        let answer = change(guard.queues.get_mut(&key)?);
        guard.dirty = true;
        Some(answer)
    }

    /// Commit each group's acked edge as its consumer offset (batched here: the store
    /// writes its offsets file at every commit), then write the book if it changed;
    /// whether it wrote.
    pub fn save(&self, store: &Store) -> std::io::Result<bool> {
        let (edges, document) = {
            let mut state = self.lock();
            let edges: Vec<(Key, i64)> = state
                .queues
                .iter()
                .map(|(key, queue)| (key.clone(), queue.low()))
                .collect();
            let document = state.dirty.then(|| render(&state.queues));
            state.dirty = false;
            (edges, document)
        };
        for ((group, topic, queue_id), low) in edges {
            let committed = store.committed_offset(&group, &topic, queue_id);
            if committed.map_err(other)? != Some(low) {
                store
                    .commit_offset(&group, &topic, queue_id, low)
                    .map_err(other)?;
            }
        }
        let Some(document) = document else {
            return Ok(false);
        };
        if let Err(error) = write_atomically(&self.path, &document) {
            self.lock().dirty = true; // tried again at the next save
            return Err(error);
        }
        Ok(true)
    }
}

fn invalid(error: impl ToString) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, error.to_string())
}

fn other(error: rmqcore::Error) -> std::io::Error {
    std::io::Error::other(error.to_string())
}

fn parse(value: &Value) -> Option<HashMap<Key, QueueLeases>> {
    let mut queues = HashMap::new();
    for (group, topics) in value.as_object()? {
        for (topic, by_queue) in topics.as_object()? {
            for (queue_id, data) in by_queue.as_object()? {
                let number = |name: &str| data.get(name)?.as_i64();
                let acked: BTreeSet<i64> = data
                    .get("acked")?
                    .as_array()?
                    .iter()
                    .map(Value::as_i64)
                    .collect::<Option<_>>()?;
                let mut leased = BTreeMap::new();
                for (offset, lease) in data.get("leased")?.as_object()? {
                    let [attempt, deadline, ordered] = lease.as_array()?.as_slice() else {
                        return None;
                    };
                    let lease = Lease {
                        attempt: i32::try_from(attempt.as_i64()?).ok()?,
                        deadline_ms: deadline.as_i64()?,
                        ordered: ordered.as_bool()?,
                    };
                    leased.insert(offset.parse().ok()?, lease);
                }
                let queue = QueueLeases::restored(number("low")?, number("next")?, acked, leased);
                let key = (group.clone(), topic.clone(), queue_id.parse().ok()?);
                queues.insert(key, queue);
            }
        }
    }
    Some(queues)
}

fn render(queues: &HashMap<Key, QueueLeases>) -> Value {
    let mut groups = Map::new();
    for ((group, topic, queue_id), queue) in queues {
        let leased: Map<String, Value> = queue
            .leased
            .iter()
            .map(|(offset, lease)| {
                let entry = json!([lease.attempt, lease.deadline_ms, lease.ordered]);
                (offset.to_string(), entry)
            })
            .collect();
        let entry = json!({
            "low": queue.low,
            "next": queue.next,
            "acked": queue.acked.iter().collect::<Vec<_>>(),
            "leased": leased,
        });
        let topics = groups
            .entry(group.clone())
            .or_insert_with(|| Value::Object(Map::new()));
        let by_queue = topics
            .as_object_mut()
            .expect("built as objects")
            .entry(topic.clone())
            .or_insert_with(|| Value::Object(Map::new()));
        by_queue
            .as_object_mut()
            .expect("built as objects")
            .insert(queue_id.to_string(), entry);
    }
    Value::Object(groups)
}

/// A crash leaves either the old file or the new one: temporary file, fsync, rename,
/// fsync the directory.
fn write_atomically(path: &Path, document: &Value) -> std::io::Result<()> {
    let directory = path.parent().expect("the book lives in config/");
    std::fs::create_dir_all(directory)?;
    let temporary = directory.join(format!(".{FILE_NAME}.tmp"));
    let mut data = serde_json::to_vec_pretty(document).map_err(invalid)?;
    data.push(b'\n');
    let mut file = std::fs::File::create(&temporary)?;
    file.write_all(&data)?;
    file.sync_all()?;
    std::fs::rename(&temporary, path)?;
    std::fs::File::open(directory)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_book_reads_back_and_commits_the_acked_edge() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), Default::default()).unwrap();
        store.create_topic("t", 2).unwrap();
        let book = LeaseBook::open(dir.path()).unwrap();
        {
            let mut held = book.hold(&store, "g", "t", 1).unwrap();
            let queue = held.queue();
            queue.lease(0, 1, 1_000, false);
            queue.lease(1, 2, 2_000, true);
            queue.lease(2, 1, 3_000, false);
            assert!(queue.ack(0, 1));
            queue.settle(2);
        }
        assert!(book.save(&store).unwrap());
        assert!(!book.save(&store).unwrap(), "nothing changed since");
        assert_eq!(store.committed_offset("g", "t", 1).unwrap(), Some(1));
        let reopened = LeaseBook::open(dir.path()).unwrap();
        let mut held = reopened.hold(&store, "g", "t", 1).unwrap();
        let queue = held.queue();
        assert_eq!((queue.low(), queue.next()), (1, 3));
        assert_eq!(
            queue.lease_of(1),
            Some(Lease {
                attempt: 2,
                deadline_ms: 2_000,
                ordered: true
            })
        );
        assert!(queue.blocked(1_999));
        assert!(queue.ack(1, 2));
        assert_eq!(queue.low(), 3, "offset 2 was acked before the restart");
    }

    #[test]
    fn the_python_brokers_file_reads() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("config")).unwrap();
        let written = r#"{"g": {"t": {"0": {"acked": [7], "leased": {"5": [3, 99, false]},
            "low": 5, "next": 8}}}}"#;
        std::fs::write(dir.path().join("config").join(FILE_NAME), written).unwrap();
        let book = LeaseBook::open(dir.path()).unwrap();
        let answer = book.with_existing("g", "t", 0, |queue| {
            assert_eq!(queue.due(99).len(), 1);
            queue.ack(5, 3)
        });
        assert_eq!(answer, Some(true));
        let low = book.with_existing("g", "t", 0, |queue| queue.low());
        assert_eq!(low, Some(6), "6 is still out; 7 was acked");
        assert_eq!(book.with_existing("g", "t", 1, |_| ()), None);
    }
}
