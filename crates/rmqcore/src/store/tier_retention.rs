//! Retention with a tier, in two levels: segments older than the tier retention leave
//! the store (bucket and local copy); uploaded segments' local copies go while they
//! exceed the local retention or the disk is too full. Index and queue files follow the
//! segments they point into.

use crate::error::{Error, Result};
use crate::retention::{RetentionReport, SegmentDecision};
use crate::tier::remote_log::RemoteLog;

use super::StoreInner;

impl StoreInner {
    /// Index files go with the segments they point into: a local copy once every
    /// segment it covers is evicted, the object once they all expired. Returns how many
    /// were evicted and expired.
    fn tier_index_files(&self, remote: &RemoteLog) -> Result<(u64, u64)> {
        let local_min = self.commit_log.local_min_offset() as i64;
        let min = self.commit_log.min_offset() as i64;
        let (mut evicted, mut expired) = (0, 0);
        for (name, file) in remote.state().index_files {
            if file.header.end_phy_offset < min {
                let client = remote.client();
                self.index.evict_file(&name)?;
                client.delete(&client.location().index_file(&name))?;
                remote.update(|state| {
                    state.index_files.remove(&name);
                })?;
                expired += 1;
            } else if file.local && file.header.end_phy_offset < local_min {
                remote.update(|state| {
                    if let Some(tiered) = state.index_files.get_mut(&name) {
                        tiered.local = false;
                    }
                })?;
                self.index.evict_file(&name)?;
                evicted += 1;
            }
        }
        Ok((evicted, expired))
    }

    /// Retention with a tier: segments older than the tier retention leave the store
    /// (bucket and local copy); then uploaded segments' local copies go, oldest first,
    /// while they exceed the local retention or the disk is fuller than its max-used
    /// ratio. A segment not yet uploaded is never deleted here.
    pub(super) fn run_tier_retention(&self, now_ms: i64) -> Result<RetentionReport> {
        let _one_run = self.retention_lock.lock().expect("retention lock");
        let (Some(uploader), Some(options)) = (&self.tier, self.tier_options()) else {
            return Err(Error::invalid("tier_url", "the store has no tier"));
        };
        let remote = uploader.remote();
        let retention = &self.options.retention;
        let tier_retention = options
            .tier_retention_ms
            .unwrap_or(retention.file_reserved_time_ms) as i64;
        let mut deleted = Vec::new();
        for segment in remote.state().segments.values() {
            let age = now_ms - segment.last_modified_ms;
            if age < tier_retention {
                break;
            }
            let start = segment.start_offset;
            if segment.local {
                remote.update(|state| {
                    if let Some(tiered) = state.segments.get_mut(&start) {
                        tiered.local = false;
                    }
                })?;
                if self.commit_log.segments().remove_first_if(start)?.is_none() {
                    break;
                }
            }
            let client = remote.client();
            client.delete(&client.location().segment(start))?;
            remote.update(|state| {
                state.segments.remove(&start);
            })?;
            remote.forget_cached(start);
            deleted.push(SegmentDecision {
                path: remote.segment_object_name(segment),
                start_offset: start,
                reason: format!(
                    "expired: last written {} h ago, tier retention {} h",
                    age / 3_600_000,
                    tier_retention / 3_600_000
                ),
            });
        }
        let usage = self.disk.usage()?;
        let pressure = usage.ratio > retention.disk_max_used_space_ratio;
        let sealed = self.sealed_segments();
        let state = remote.state();
        let mut uploaded_local: u64 = sealed
            .iter()
            .filter(|segment| state.segments.contains_key(&segment.start_offset()))
            .map(|segment| segment.size() as u64)
            .sum();
        let mut evicted = Vec::new();
        let mut kept = Vec::new();
        for segment in &sealed {
            let start = segment.start_offset();
            let keep = |reason: &str| SegmentDecision {
                path: segment.path().to_path_buf(),
                start_offset: start,
                reason: reason.to_string(),
            };
            if !state.segments.contains_key(&start) {
                kept.push(keep("not uploaded yet: a local copy is the only one"));
                break;
            }
            let age = now_ms - crate::retention::last_modified_ms(segment);
            let reason = if options
                .local_retention_bytes
                .is_some_and(|limit| uploaded_local > limit)
            {
                "uploaded; local copies exceed the local retention bytes"
            } else if options
                .local_retention_ms
                .is_some_and(|ms| age >= ms as i64)
            {
                "uploaded; older than the local retention"
            } else if pressure {
                "uploaded; the disk is fuller than its max-used ratio"
            } else {
                kept.push(keep("uploaded; within the local retention"));
                break;
            };
            remote.update(|state| {
                if let Some(tiered) = state.segments.get_mut(&start) {
                    tiered.local = false;
                }
            })?;
            let path = segment.path().to_path_buf();
            if self.commit_log.segments().remove_first_if(start)?.is_none() {
                break;
            }
            uploaded_local -= segment.size() as u64;
            evicted.push(SegmentDecision {
                path,
                start_offset: start,
                reason: reason.to_string(),
            });
        }
        let commitlog_min_offset = self.commit_log.min_offset();
        let (mut consume_queue_files_deleted, mut index_files_deleted) = (0, 0);
        if !deleted.is_empty() {
            let _writer = self.write_guard();
            consume_queue_files_deleted = self.queues.drop_below(commitlog_min_offset as i64)?;
            index_files_deleted = self.index.delete_files_below(commitlog_min_offset as i64)?;
        }
        index_files_deleted += self.tier_index_files(remote)?.1;
        self.tier_queue_files(remote)?;
        Ok(RetentionReport {
            deleted,
            evicted,
            kept,
            commitlog_min_offset,
            consume_queue_files_deleted,
            index_files_deleted,
            disk_usage: self.disk.refresh()?,
        })
    }
}
