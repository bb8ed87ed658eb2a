//! Flushing the commit log (format §5.4). In async mode a background thread flushes by
//! interval once enough pages are dirty, and at least every thorough interval. In sync
//! mode writers wait for their end offset to be flushed and the thread flushes
//! everything written so far in one go, so all writers waiting at that moment share one
//! flush (group commit).
//!
//! A failed flush is permanent: every waiter and every later write gets the error,
//! because the store can no longer tell which acknowledged bytes reached the disk.
//!
//! Thread safety: all methods may be called from any thread.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

#[derive(Debug)]
struct FlushState {
    /// Highest end offset a sync writer is waiting for.
    requested: u64,
    flushed: u64,
    failure: Option<String>,
    stopping: bool,
    /// Test hook: the next flush fails with this message.
    injected_failure: Option<String>,
}

#[derive(Debug)]
pub struct FlushService {
    state: Mutex<FlushState>,
    /// Wakes the flush thread.
    work: Condvar,
    /// Wakes writers waiting for a flush.
    done: Condvar,
    /// Set once `failure` is: every put checks the service's health, and a flag read
    /// spares it the state lock, which the flush thread holds meanwhile.
    failed: AtomicBool,
}

impl FlushService {
    pub fn new(flushed: u64) -> Self {
        FlushService {
            state: Mutex::new(FlushState {
                requested: flushed,
                flushed,
                failure: None,
                stopping: false,
                injected_failure: None,
            }),
            work: Condvar::new(),
            done: Condvar::new(),
            failed: AtomicBool::new(false),
        }
    }

    pub fn flushed_offset(&self) -> u64 {
        self.state.lock().expect("flush state lock").flushed
    }

    pub fn failure(&self) -> Option<String> {
        self.state.lock().expect("flush state lock").failure.clone()
    }

    pub fn check_healthy(&self) -> Result<()> {
        if !self.failed.load(Ordering::Acquire) {
            return Ok(());
        }
        match self.failure() {
            Some(reason) => Err(Error::FlushFailed(reason)),
            None => Ok(()),
        }
    }

    pub fn inject_failure(&self, message: String) {
        self.state
            .lock()
            .expect("flush state lock")
            .injected_failure = Some(message);
    }

    /// Block until everything below `end` is flushed (sync mode).
    pub fn wait_flushed(&self, end: u64, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let mut state = self.state.lock().expect("flush state lock");
        if state.requested < end {
            state.requested = end;
            self.work.notify_one();
        }
        loop {
            if let Some(reason) = &state.failure {
                return Err(Error::FlushFailed(reason.clone()));
            }
            if state.flushed >= end {
                return Ok(());
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::FlushFailed(format!(
                    "timed out after {} ms waiting for offset {end} to be flushed",
                    timeout.as_millis()
                )));
            }
            state = self
                .done
                .wait_timeout(state, deadline - now)
                .expect("flush state lock")
                .0;
        }
    }

    /// Flush-thread side: wait until a sync writer asks or `interval` passes. Returns
    /// false once the service is stopping.
    pub fn wait_for_work(&self, interval: Duration) -> bool {
        let state = self.state.lock().expect("flush state lock");
        if state.stopping {
            return false;
        }
        if state.requested > state.flushed {
            return true;
        }
        let state = self
            .work
            .wait_timeout(state, interval)
            .expect("flush state lock")
            .0;
        !state.stopping
    }

    /// Run `flush` (which flushes up to the offset it returns) and publish the result.
    pub fn run_flush(&self, flush: impl FnOnce() -> Result<u64>) -> Result<u64> {
        let injected = {
            let mut state = self.state.lock().expect("flush state lock");
            if let Some(reason) = &state.failure {
                return Err(Error::FlushFailed(reason.clone()));
            }
            state.injected_failure.take()
        };
        let outcome = match injected {
            Some(message) => Err(Error::FlushFailed(message)),
            None => flush(),
        };
        let mut state = self.state.lock().expect("flush state lock");
        match &outcome {
            Ok(offset) => state.flushed = state.flushed.max(*offset),
            Err(error) => {
                state.failure = Some(error.to_string());
                self.failed.store(true, Ordering::Release);
            }
        }
        self.done.notify_all();
        outcome
    }

    /// Reset after recovery or truncation.
    pub fn set_flushed(&self, offset: u64) {
        let mut state = self.state.lock().expect("flush state lock");
        state.flushed = offset;
        state.requested = offset;
    }

    pub fn stop(&self) {
        self.state.lock().expect("flush state lock").stopping = true;
        self.work.notify_all();
        self.done.notify_all();
    }
}
