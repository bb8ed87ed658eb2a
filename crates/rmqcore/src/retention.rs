//! Deciding which commit-log segments to delete (format §5.5): expired ones at the
//! configured hours, at any hour once the disk passes the max-used ratio, or when asked;
//! the oldest ones even unexpired above the clean-forcibly ratio. Always oldest first,
//! never the segment being written, at most a batch per run. The store carries the
//! plan out (`Store::run_retention`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use crate::disk_usage::DiskUsage;
use crate::files::segment::Segment;
use crate::options::RetentionOptions;

#[derive(Debug, Clone, PartialEq)]
pub struct SegmentDecision {
    pub path: PathBuf,
    pub start_offset: u64,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RetentionReport {
    pub deleted: Vec<SegmentDecision>,
    /// With a tier: uploaded segments whose local copy went (their messages stay).
    pub evicted: Vec<SegmentDecision>,
    pub kept: Vec<SegmentDecision>,
    pub commitlog_min_offset: u64,
    pub consume_queue_files_deleted: u64,
    pub index_files_deleted: u64,
    pub disk_usage: DiskUsage,
}

/// Why this run may delete expired segments, if it may.
fn time_trigger(
    options: &RetentionOptions,
    usage: f64,
    now_ms: i64,
    requested: bool,
) -> Option<String> {
    if requested {
        return Some("deletion was requested".to_string());
    }
    if usage > options.disk_max_used_space_ratio {
        return Some(format!(
            "disk usage {:.1}% is above disk_max_used_space_ratio {:.1}%",
            usage * 100.0,
            options.disk_max_used_space_ratio * 100.0
        ));
    }
    let hour = local_hour(now_ms);
    options
        .delete_when
        .contains(&hour)
        .then(|| format!("{hour:02}:00 is a deletion hour (delete_when)"))
}

/// Last write time of a segment, from the filesystem (RocketMQ uses the file's mtime).
pub fn last_modified_ms(segment: &Segment) -> i64 {
    std::fs::metadata(segment.path())
        .and_then(|metadata| metadata.modified())
        .ok()
        .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |elapsed| elapsed.as_millis() as i64)
}

fn seconds(ms: i64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

pub fn plan(
    segments: &[Arc<Segment>],
    options: &RetentionOptions,
    usage: f64,
    now_ms: i64,
    requested: bool,
) -> (Vec<(Arc<Segment>, String)>, Vec<SegmentDecision>) {
    let trigger = time_trigger(options, usage, now_ms, requested);
    let forcibly = usage > options.disk_space_clean_forcibly_ratio;
    let reserved = options.file_reserved_time_ms as i64;
    let mut delete = Vec::new();
    let mut kept = Vec::new();
    let mut stopped: Option<String> = None;
    for (index, segment) in segments.iter().enumerate() {
        let keep = |reason: String| SegmentDecision {
            path: segment.path().to_path_buf(),
            start_offset: segment.start_offset(),
            reason,
        };
        if index + 1 == segments.len() {
            kept.push(keep(
                "the active segment (being written) is never deleted".to_string(),
            ));
            continue;
        }
        if let Some(reason) = &stopped {
            kept.push(keep(reason.clone()));
            continue;
        }
        if delete.len() >= options.delete_files_batch_max {
            let reason = format!(
                "batch limit of {} deletions per run reached",
                options.delete_files_batch_max
            );
            kept.push(keep(reason.clone()));
            stopped = Some(reason);
            continue;
        }
        let age = now_ms - last_modified_ms(segment);
        let expired = age >= reserved;
        match (&trigger, expired, forcibly) {
            (Some(trigger), true, _) => delete.push((
                Arc::clone(segment),
                format!(
                    "expired: last written {} ago, reserved for {}; {trigger}",
                    seconds(age),
                    seconds(reserved)
                ),
            )),
            (_, _, true) => delete.push((
                Arc::clone(segment),
                format!(
                    "disk usage {:.1}% is above disk_space_clean_forcibly_ratio {:.1}%",
                    usage * 100.0,
                    options.disk_space_clean_forcibly_ratio * 100.0
                ),
            )),
            (None, true, false) => {
                let reason = format!(
                    "expired, but deletion runs at hours {:?} (delete_when), on request, or above {:.0}% disk usage",
                    options.delete_when,
                    options.disk_max_used_space_ratio * 100.0
                );
                kept.push(keep(reason));
                stopped =
                    Some("a newer segment than one kept: deletion is oldest-first".to_string());
            }
            (_, false, false) => {
                kept.push(keep(format!(
                    "not expired: last written {} ago, reserved for {}",
                    seconds(age),
                    seconds(reserved)
                )));
                stopped =
                    Some("newer than an unexpired segment: deletion is oldest-first".to_string());
            }
        }
    }
    (delete, kept)
}

/// The local hour of day of a timestamp (RocketMQ's `deleteWhen` is in local time).
pub fn local_hour(now_ms: i64) -> u32 {
    let seconds = (now_ms / 1000) as libc::time_t;
    // SAFETY: localtime_r writes into the provided struct; zeroed is a valid start.
    let mut broken_down: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointers for the duration of the call.
    let result = unsafe { libc::localtime_r(&seconds, &mut broken_down) };
    if result.is_null() {
        return ((now_ms / 3_600_000) % 24) as u32;
    }
    broken_down.tm_hour as u32
}

pub fn pause_between_deletions(options: &RetentionOptions) {
    if options.delete_interval_ms > 0 {
        std::thread::sleep(Duration::from_millis(options.delete_interval_ms));
    }
}
