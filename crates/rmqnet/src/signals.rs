//! Wake-ups for long polling, shared by the native data plane (async waits) and the
//! Python side of the shard process (blocking waits from its threads): every send through
//! either bumps its queue's version and wakes both kinds of waiter. A waiter remembers the
//! version before it looks at the queue and waits only while it is unchanged, which
//! closes the race between "nothing there" and "started waiting".

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

#[derive(Default)]
struct Entry {
    version: u64,
    notify: Arc<Notify>,
}

/// The queues' entries by topic, then queue (looked up by `&str`: a send allocates
/// nothing), and how many threads wait blocking.
#[derive(Default)]
struct State {
    topics: HashMap<String, HashMap<i32, Entry>>,
    blocked: usize,
}

impl State {
    fn version(&self, topic: &str, queue_id: i32) -> u64 {
        self.topics
            .get(topic)
            .and_then(|queues| queues.get(&queue_id))
            .map_or(0, |entry| entry.version)
    }

    fn entry(&mut self, topic: &str, queue_id: i32) -> &mut Entry {
        if !self.topics.contains_key(topic) {
            self.topics.insert(topic.to_owned(), HashMap::new());
        }
        let queues = self.topics.get_mut(topic).expect("inserted above");
        queues.entry(queue_id).or_default()
    }
}

#[derive(Default)]
pub struct QueueSignals {
    state: Mutex<State>,
    changed: Condvar,
}

impl QueueSignals {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn version(&self, topic: &str, queue_id: i32) -> u64 {
        self.lock().version(topic, queue_id)
    }

    pub fn notify(&self, topic: &str, queue_id: i32) {
        let mut state = self.lock();
        let entry = state.entry(topic, queue_id);
        entry.version += 1;
        entry.notify.notify_waiters();
        // The condition variable's wake is a system call even with no one waiting, and
        // this runs for every send: only when a thread does wait.
        let blocked = state.blocked > 0;
        drop(state);
        if blocked {
            self.changed.notify_all();
        }
    }

    /// Wait (async) until the queue's version is no longer `version`, or `timeout`;
    /// whether it changed.
    pub async fn wait(&self, topic: &str, queue_id: i32, version: u64, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        let notify = Arc::clone(&self.lock().entry(topic, queue_id).notify);
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
        let mut state = self.lock();
        loop {
            if state.version(topic, queue_id) != version {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            // Counted under the lock a notifier takes, so no wake falls between the
            // version check and the wait.
            state.blocked += 1;
            state = self
                .changed
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
            state.blocked -= 1;
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
