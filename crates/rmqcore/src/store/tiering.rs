//! The store's side of the tier (`tier/`): opening it, the uploader thread, retention in
//! two levels (local copies evicted, segments expired from the tier), and its status.

use std::sync::Arc;
use std::time::Duration;

use crate::clock::now_millis;
use crate::commit_log::CommitLog;
use crate::error::{Error, Result};
use crate::files::segment::Segment;
use crate::index::compacted::CompactedIndexFile;
use crate::options::TierOptions;
use crate::retention::{RetentionReport, SegmentDecision};
use crate::tier::remote_log::RemoteLog;
use crate::tier::uploader::{UploadStatus, Uploader};
use crate::tier::{ObjectClient, TierEndpoint, TierLocation, TierState};

use super::{Store, StoreInner};

/// Where a segment is in its lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentTier {
    /// The segment being written.
    Active,
    /// Sealed, not yet uploaded.
    Pending,
    /// Uploaded; the local copy is kept too.
    Uploaded,
    /// Only in the bucket.
    Evicted,
}

impl SegmentTier {
    pub fn name(self) -> &'static str {
        match self {
            SegmentTier::Active => "active",
            SegmentTier::Pending => "pending",
            SegmentTier::Uploaded => "uploaded",
            SegmentTier::Evicted => "evicted",
        }
    }
}

#[derive(Debug, Clone)]
pub struct TierStatus {
    pub url: String,
    /// Every segment of the log, oldest first: start offset, size, state.
    pub segments: Vec<(u64, u64, SegmentTier)>,
    pub upload: UploadStatus,
    pub reads: crate::tier::remote_log::ReadStats,
    /// Consume-queue files in the tier: path under `consumequeue/`, size, local copy kept.
    pub consume_queues: Vec<(String, u64, bool)>,
    /// The last failed read of an evicted queue file.
    pub queue_read_failure: Option<String>,
}

/// The tier a store opens with: the one asked for, or the one its state records (a
/// store whose segments went to a bucket cannot be read, or kept consistent, without it).
pub(super) fn tier_options_for(
    root: &std::path::Path,
    asked: Option<&TierOptions>,
) -> Result<Option<TierOptions>> {
    if let Some(asked) = asked {
        return Ok(Some(asked.clone()));
    }
    if !TierState::path(root).exists() {
        return Ok(None);
    }
    let state = TierState::load(root)?;
    if state.url.is_empty() {
        return Ok(None);
    }
    let mut options = TierOptions::new(state.url);
    options.endpoint = state.endpoint;
    options.region = state.region;
    Ok(Some(options))
}

/// Open the store's tier: refuse wrong credentials, a missing bucket or a bucket other
/// than the one the store's segments went to; an unreachable server is only noted (the
/// store works on its local data, and uploads start when the server answers).
pub(super) fn open_tier(
    root: &std::path::Path,
    options: &TierOptions,
    commit_log: &CommitLog,
    writable: bool,
) -> Result<Arc<Uploader>> {
    let location = TierLocation::parse(&options.url)?;
    let endpoint = TierEndpoint {
        endpoint: options.endpoint.clone(),
        region: options.region.clone(),
    };
    let client = ObjectClient::new(location.clone(), &endpoint, options.parts_in_flight)?;
    let reachable = client.check();
    let stored = TierState::load(root)?;
    let mut state = stored.clone();
    if !state.url.is_empty() && state.url != location.url() {
        return Err(Error::invalid(
            "tier_url",
            format!(
                "this store's segments were uploaded to {}; open it with that tier_url",
                state.url
            ),
        ));
    }
    state.url = location.url();
    state.endpoint.clone_from(&options.endpoint);
    state.region.clone_from(&options.region);
    // A crash between recording an eviction and deleting the file leaves both; a local
    // copy the state counts on but that is gone is read from the bucket.
    for segment in state.segments.values_mut() {
        let start = segment.start_offset;
        if segment.local && commit_log.segments().find(start).is_none() {
            segment.local = false;
        }
    }
    super::tiering_queues::recover_queue_files(root, &mut state);
    let compacted_dir = root.join(crate::index::COMPACTED_INDEX_DIR);
    for (name, file) in &mut state.index_files {
        if file.local && !compacted_dir.join(name).exists() {
            file.local = false;
        }
    }
    if writable && stored != state {
        // Recorded at once, so the store reopens with its tier even before an upload.
        state.persist(root)?;
    }
    let remote = Arc::new(RemoteLog::new(
        Arc::new(client),
        root,
        state,
        options.read_cache_bytes,
    ));
    commit_log.attach_tier(Arc::clone(&remote) as _);
    let uploader = Arc::new(Uploader::new(remote, options.parts_in_flight));
    match reachable {
        Ok(()) => {}
        // A reader (inspect, status beside a broker) works on local data without the
        // bucket, and says why it could not reach it.
        Err(error) if is_unreachable(&error) || !writable => uploader.note_failure(&error),
        Err(error) => return Err(error),
    }
    Ok(uploader)
}

fn is_unreachable(error: &Error) -> bool {
    matches!(
        error,
        Error::Tier {
            unreachable: true,
            ..
        }
    )
}

impl StoreInner {
    fn tier_options(&self) -> Option<&TierOptions> {
        self.options.tier.as_ref()
    }

    /// Every local segment but the one being written.
    fn sealed_segments(&self) -> Vec<Arc<Segment>> {
        let mut segments = self.commit_log.segments().segments();
        segments.pop();
        segments
    }

    /// The tier thread: upload what is sealed, then apply retention, every interval.
    pub(super) fn tier_loop(&self) {
        let (Some(uploader), Some(options)) = (&self.tier, self.tier_options()) else {
            return;
        };
        let interval = Duration::from_millis(options.upload_interval_ms);
        while !self.wait_stopped(interval) {
            if uploader
                .upload_sealed(&self.sealed_segments(), false)
                .is_ok()
                && uploader
                    .upload_index_files(&self.compacted_index_files())
                    .is_ok()
                && uploader
                    .upload_queue_files(&self.queue_files_to_upload(uploader.remote()))
                    .is_ok()
            {
                // Failures show in the status and the next explicit run's report.
                let _ = self.run_retention(now_millis(), false);
            }
        }
    }

    /// The index files that have their compacted form (the form the tier keeps).
    fn compacted_index_files(&self) -> Vec<(String, Arc<CompactedIndexFile>)> {
        self.index
            .file_forms()
            .into_iter()
            .filter_map(|forms| forms.compacted.map(|file| (forms.name, file)))
            .collect()
    }

    /// Upload every sealed segment and compacted index file now, ignoring the pause
    /// after a failure; returns how many segments were uploaded.
    pub(super) fn upload_now(&self) -> Result<usize> {
        match &self.tier {
            Some(uploader) => {
                let segments = uploader.upload_sealed(&self.sealed_segments(), true)?;
                uploader.upload_index_files(&self.compacted_index_files())?;
                uploader.upload_queue_files(&self.queue_files_to_upload(uploader.remote()))?;
                Ok(segments)
            }
            None => Err(Error::invalid("tier_url", "the store has no tier")),
        }
    }

    /// Index files go with the segments they point into: a local copy once every
    /// segment it covers is evicted, the object once they all expired. Returns how many
    /// were evicted and expired.
    fn tier_index_files(&self, remote: &RemoteLog) -> Result<(u64, u64)> {
        let local_min = self.commit_log.local_min_offset() as i64;
        let min = self.commit_log.min_offset() as i64;
        let (mut evicted, mut expired) = (0, 0);
        for (name, file) in remote.state().index_files {
            if file.end_phy_offset < min {
                let client = remote.client();
                self.index.evict_file(&name)?;
                client.delete(&client.location().index_file(&name))?;
                remote.update(|state| {
                    state.index_files.remove(&name);
                })?;
                expired += 1;
            } else if file.local && file.end_phy_offset < local_min {
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

impl Store {
    /// Where each segment is, and how uploads go; None for a store without a tier.
    pub fn tier_status(&self) -> Result<Option<TierStatus>> {
        self.check_open()?;
        let Some(uploader) = &self.inner.tier else {
            return Ok(None);
        };
        let remote = uploader.remote();
        let state = remote.state();
        let local = self.inner.commit_log.segments().segments();
        let mut segments: Vec<(u64, u64, SegmentTier)> = state
            .remote_only()
            .map(|segment| (segment.start_offset, segment.size, SegmentTier::Evicted))
            .collect();
        for (index, segment) in local.iter().enumerate() {
            let start = segment.start_offset();
            let tier = if index + 1 == local.len() {
                SegmentTier::Active
            } else if state.segments.contains_key(&start) {
                SegmentTier::Uploaded
            } else {
                SegmentTier::Pending
            };
            if !segments.iter().any(|(s, _, _)| *s == start) {
                segments.push((start, segment.size() as u64, tier));
            }
        }
        segments.sort_by_key(|(start, _, _)| *start);
        let upload = uploader.status();
        Ok(Some(TierStatus {
            url: state.url,
            segments,
            upload,
            reads: remote.read_stats(),
            consume_queues: state
                .consume_queues
                .iter()
                .map(|(key, file)| (key.clone(), file.size, file.local))
                .collect(),
            queue_read_failure: remote.queue_read_failure(),
        }))
    }

    /// Upload every sealed segment now (as the uploader thread would), returning how
    /// many were uploaded.
    pub fn upload_to_tier(&self) -> Result<usize> {
        self.check_open()?;
        if self.inner.options.read_only {
            return Err(Error::ReadOnly);
        }
        self.inner.upload_now()
    }
}
