//! The store's side of the tier (`tier/`): opening it, and the uploader thread that
//! moves sealed files along. Retention in two levels is in `tier_retention.rs`, the
//! status in `tier_status.rs`.

use std::sync::Arc;
use std::time::Duration;

use crate::clock::now_millis;
use crate::commit_log::CommitLog;
use crate::error::{Error, Result};
use crate::files::segment::Segment;
use crate::index::compacted::CompactedIndexFile;
use crate::options::TierOptions;
use crate::tier::remote_log::RemoteLog;
use crate::tier::uploader::Uploader;
use crate::tier::{ObjectClient, TierEndpoint, TierLocation, TierState};

use super::{Store, StoreInner};

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
    let uploader = Arc::new(Uploader::new(remote));
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
    pub(super) fn tier_options(&self) -> Option<&TierOptions> {
        self.options.tier.as_ref()
    }

    /// Every local segment but the one being written.
    pub(super) fn sealed_segments(&self) -> Vec<Arc<Segment>> {
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
}

impl Store {
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
