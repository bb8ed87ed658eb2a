//! Wake-ups for long polling, shared by the native data plane (async waits) and the
//! Python side of the shard process (blocking waits from its threads): every send through
//! either bumps its queue's version and wakes both kinds of waiter. A waiter remembers the
//! version before it looks at the queue and waits only while it is unchanged, which
//! closes the race between "nothing there" and "started waiting".

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

type Key = (String, i32);

#[derive(Default)]
struct Entry {
    version: u64,
    notify: Arc<Notify>,
}

#[derive(Default)]
pub struct QueueSignals {
    entries: Mutex<HashMap<Key, Entry>>,
    changed: Condvar,
}

impl QueueSignals {
    fn lock(&self) -> MutexGuard<'_, HashMap<Key, Entry>> {
        self.entries
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn version(&self, topic: &str, queue_id: i32) -> u64 {
        self.lock()
            .get(&(topic.to_owned(), queue_id))
            .map_or(0, |entry| entry.version)
    }

    pub fn notify(&self, topic: &str, queue_id: i32) {
        let mut entries = self.lock();
        let entry = entries.entry((topic.to_owned(), queue_id)).or_default();
        entry.version += 1;
        entry.notify.notify_waiters();
        drop(entries);
        self.changed.notify_all();
    }

    /// Wait (async) until the queue's version is no longer `version`, or `timeout`;
    /// whether it changed.
    pub async fn wait(&self, topic: &str, queue_id: i32, version: u64, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        let notify = {
            let mut entries = self.lock();
            Arc::clone(
                &entries
                    .entry((topic.to_owned(), queue_id))
                    .or_default()
                    .notify,
            )
        };
        loop {
            let notified = notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.version(topic, queue_id) != version {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return self.version(topic, queue_id) != version;
            }
        }
    }

    /// Wait (blocking the calling thread) as `wait` does.
    pub fn wait_blocking(
        &self,
        topic: &str,
        queue_id: i32,
        version: u64,
        timeout: Duration,
    ) -> bool {
        let deadline = Instant::now() + timeout;
        let key = (topic.to_owned(), queue_id);
        let mut entries = self.lock();
        loop {
            let current = entries.get(&key).map_or(0, |entry| entry.version);
            if current != version {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            entries = self
                .changed
                .wait_timeout(entries, deadline - now)
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_send_wakes_an_async_waiter() {
        let signals = Arc::new(QueueSignals::default());
        let version = signals.version("t", 0);
        let waker = Arc::clone(&signals);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            waker.notify("t", 0);
        });
        assert!(signals.wait("t", 0, version, Duration::from_secs(5)).await);
        assert!(!signals.wait("t", 1, 0, Duration::from_millis(10)).await);
    }

    #[test]
    fn a_send_wakes_a_blocked_thread() {
        let signals = Arc::new(QueueSignals::default());
        let version = signals.version("t", 0);
        let waker = Arc::clone(&signals);
        let thread = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            waker.notify("t", 0);
        });
        assert!(signals.wait_blocking("t", 0, version, Duration::from_secs(5)));
        thread.join().unwrap();
        assert!(!signals.wait_blocking("t", 0, version + 1, Duration::from_millis(10)));
    }
}
