//! Checking and repairing the derived files: verify against the log, rebuild from it.

use crate::dispatch::{Dispatched, Dispatcher};
use crate::error::Result;
use crate::index::IndexService;

use super::Store;

impl Store {
    pub fn index(&self) -> &IndexService {
        &self.inner.index
    }

    /// Compare the index with a rebuild from the valid log; see `index/verify.rs`.
    pub fn verify_index(&self) -> Result<crate::index::verify::IndexVerification> {
        self.check_open()?;
        crate::index::verify::verify_index(
            &self.inner.index,
            &self.inner.commit_log,
            self.readable_end(),
        )
    }

    /// Compare the consume queues with a rebuild from the valid log; see `verify.rs`.
    /// Entries that recovery of a read-only store had to hide count as differences.
    pub fn verify(&self) -> Result<crate::verify::VerifyReport> {
        self.check_open()?;
        let mut report = crate::verify::verify(
            &self.inner.commit_log,
            self.inner.queues.as_ref(),
            self.readable_end(),
        )?;
        let hidden = self.inner.recovery_report.consume_queue_entries_removed;
        if self.inner.options.read_only && hidden > 0 {
            report.difference_count += hidden;
            report.differences.push(crate::verify::Difference {
                kind: "extra_entries",
                detail: format!("{hidden} consume-queue entries point past the end of the valid log (recovery would remove them)"),
            });
        }
        let index = self.verify_index()?;
        report.difference_count += index.difference_count;
        for detail in index.differences {
            if report.differences.len() < crate::verify::MAX_LISTED_DIFFERENCES {
                report.differences.push(crate::verify::Difference {
                    kind: "index",
                    detail,
                });
            }
        }
        Ok(report)
    }

    /// Delete every consume queue and index entry and dispatch the whole log again.
    pub fn rebuild(&self) -> Result<u64> {
        self.check_writable()?;
        let _writer = self.inner.write_guard();
        for topic in self.inner.queues.topics() {
            self.inner.queues.remove_topic(&topic)?;
        }
        let start = self.inner.commit_log.min_offset();
        // Cutting the index at the log's first record empties it.
        let record_at = |offset: i64| {
            let record = self
                .inner
                .commit_log
                .read(u64::try_from(offset).ok()?, false)
                .ok()?;
            let view = record.view();
            Some((view.store_timestamp, view.total_size as i64))
        };
        self.inner.index.recover(start as i64, false, record_at)?;
        let mut dispatched = 0u64;
        let mut dispatcher = Dispatcher::new(self.inner.queues.as_ref(), &self.inner.index);
        self.inner.commit_log.scan(start, false, |_, view| {
            if dispatcher.dispatch(view)? == Dispatched::Appended {
                dispatched += 1;
            }
            Ok(None)
        })?;
        dispatcher.finish()?;
        self.inner.checkpoint()?;
        Ok(dispatched)
    }
}
