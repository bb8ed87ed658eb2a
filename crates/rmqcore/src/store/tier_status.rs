//! What `Store::tier_status` reports: each segment's place in its lifecycle, the
//! uploader's progress, the tier's read counters and its consume-queue files.

use crate::error::Result;
use crate::tier::uploader::UploadStatus;

use super::Store;

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
            .map(|segment| {
                (
                    segment.start_offset,
                    segment.log_size(),
                    SegmentTier::Evicted,
                )
            })
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
}
