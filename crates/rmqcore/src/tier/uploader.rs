//! Uploading sealed segments, oldest first, and recording each once the bucket confirms
//! it. An object is trusted only when the bucket reports the file's size and the CRC32
//! recorded with it; a segment found so in the bucket (uploaded just before a crash that
//! kept the state from recording it) is recorded without a second upload.
//!
//! Two segments go up at once, sharing the client's parts in flight, so that the server
//! receives the next segment's parts while it assembles the previous object and while
//! the uploader checks it; each is recorded in order, once the one before it is.
//!
//! Failures are kept for the status (what fails, since when, how often) and retried with
//! a growing pause; appends and reads of local data never wait for the uploader.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::grouped_object::Layout;
use super::remote_log::RemoteLog;
use super::state::{TierState, TieredIndexFile, TieredQueueFile, TieredSegment};
use crate::clock::now_millis;
use crate::consume_queue::remote::SealedQueueFile;
use crate::error::{Error, Result};
use crate::files::segment::Segment;
use crate::index::compacted::{CompactedHeader, CompactedIndexFile};

/// Pauses after a failure: 1 s, doubling, at most 30 s.
const FIRST_RETRY: Duration = Duration::from_secs(1);
const LONGEST_RETRY: Duration = Duration::from_secs(30);

/// Segments uploaded at once: one finishing (the server assembling its object, the
/// uploader checking it) while the next one's parts go.
const SEGMENTS_AT_ONCE: usize = 2;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct UploadStatus {
    /// The last failure's reason while failures go on; None once an upload succeeds.
    pub failing: Option<String>,
    pub failing_since_ms: Option<i64>,
    /// Failures in a row.
    pub failed_attempts: u64,
    /// The oldest segment being uploaded: its start offset and size.
    pub in_progress: Option<(u64, u64)>,
    pub uploaded_segments: u64,
    pub uploaded_bytes: u64,
    /// Seconds during which segments were being uploaded (wall time, two at once
    /// counted once).
    pub upload_seconds: f64,
}

/// The segments being uploaded (start offset -> size), and since when one has been.
#[derive(Debug, Default)]
struct Uploading {
    segments: BTreeMap<u64, u64>,
    since: Option<Instant>,
}

#[derive(Debug)]
pub struct Uploader {
    remote: Arc<RemoteLog>,
    status: Mutex<UploadStatus>,
    uploading: Mutex<Uploading>,
    /// No attempt before this instant (the pause after a failure).
    next_attempt: Mutex<Option<Instant>>,
    /// One upload pass at a time: the thread and `upload_to_tier` must not both upload
    /// the segments neither has recorded yet.
    one_pass: Mutex<()>,
}

impl Uploader {
    pub fn new(remote: Arc<RemoteLog>) -> Self {
        Uploader {
            remote,
            status: Mutex::new(UploadStatus::default()),
            uploading: Mutex::new(Uploading::default()),
            next_attempt: Mutex::new(None),
            one_pass: Mutex::new(()),
        }
    }

    pub fn remote(&self) -> &Arc<RemoteLog> {
        &self.remote
    }

    pub fn status(&self) -> UploadStatus {
        let mut status = self.status.lock().expect("upload status lock").clone();
        let uploading = self.uploading.lock().expect("uploading lock");
        status.in_progress = uploading.segments.first_key_value().map(|(s, n)| (*s, *n));
        status
    }

    /// Record a failure seen outside an upload (the bucket unreachable at open).
    pub fn note_failure(&self, error: &Error) {
        let mut status = self.status.lock().expect("upload status lock");
        status.failing = Some(error.to_string());
        status.failing_since_ms.get_or_insert_with(now_millis);
        status.failed_attempts += 1;
    }

    /// Whether the pause after the last failure is over (`force` ignores it).
    fn may_try(&self, force: bool) -> bool {
        force
            || self
                .next_attempt
                .lock()
                .expect("retry lock")
                .is_none_or(|at| Instant::now() >= at)
    }

    /// Upload every sealed segment in `sealed` that the state lacks, oldest first,
    /// `SEGMENTS_AT_ONCE` at a time; returns how many were recorded. Each is recorded
    /// only after every older one; the first failure ends the pass (recorded in the
    /// status and returned), and a younger segment that went up meanwhile is found in the
    /// bucket by the next pass, not sent again.
    pub fn upload_sealed(&self, sealed: &[Arc<Segment>], force: bool) -> Result<usize> {
        if !self.may_try(force) {
            return Ok(0);
        }
        let _one_pass = self.one_pass.lock().expect("upload pass lock");
        let state = self.remote.state();
        let mut waiting = sealed
            .iter()
            .filter(|segment| !state.segments.contains_key(&segment.start_offset()));
        std::thread::scope(|scope| {
            let mut running = VecDeque::new();
            let mut recorded = 0;
            loop {
                while running.len() < SEGMENTS_AT_ONCE {
                    let Some(segment) = waiting.next() else { break };
                    let upload = std::thread::Builder::new()
                        .name("rmq-tier-segment".into())
                        .spawn_scoped(scope, || self.upload_one(segment));
                    running.push_back(upload.map_err(|error| Error::io(segment.path(), error))?);
                }
                let Some(oldest) = running.pop_front() else {
                    return Ok(recorded);
                };
                let uploaded = oldest.join().expect("a segment upload panicked");
                self.record(uploaded, |state, tiered| {
                    state.segments.insert(tiered.start_offset, tiered);
                })?;
                recorded += 1;
                self.succeeded();
            }
        })
    }

    /// Upload every compacted index file the state lacks, oldest first; returns how
    /// many were recorded.
    pub fn upload_index_files(&self, files: &[(String, Arc<CompactedIndexFile>)]) -> Result<usize> {
        let _one_pass = self.one_pass.lock().expect("upload pass lock");
        let state = self.remote.state();
        let mut recorded = 0;
        for (name, file) in files {
            if state.index_files.contains_key(name) {
                continue;
            }
            self.record(self.upload_index_file(name, file), |state, tiered| {
                state.index_files.insert(name.clone(), tiered);
            })?;
            recorded += 1;
        }
        Ok(recorded)
    }

    /// Upload every queue file in `files` the state lacks (the caller chose them: sealed,
    /// their entries all in uploaded segments); returns how many were recorded.
    pub fn upload_queue_files(&self, files: &[SealedQueueFile]) -> Result<usize> {
        let _one_pass = self.one_pass.lock().expect("upload pass lock");
        let state = self.remote.state();
        let mut recorded = 0;
        for file in files {
            let start = file.segment.start_offset();
            let key = TieredQueueFile::key(&file.topic, file.queue_id, start);
            if state.consume_queues.contains_key(&key) {
                continue;
            }
            let object = self.remote.client().location().queue_file(&key);
            let bytes = file.segment.bytes(0, file.segment.size());
            let uploaded = self.upload_confirmed(&object, &[Bytes::copy_from_slice(bytes)], None);
            self.record(uploaded, |state, crc32| {
                let tiered = TieredQueueFile {
                    topic: file.topic.clone(),
                    queue_id: file.queue_id,
                    start_offset: start,
                    size: bytes.len() as u64,
                    crc32,
                    last_commitlog_end: file.last_commitlog_end,
                    local: true,
                };
                state.consume_queues.insert(key, tiered);
            })?;
            recorded += 1;
        }
        Ok(recorded)
    }

    fn upload_index_file(&self, name: &str, file: &CompactedIndexFile) -> Result<TieredIndexFile> {
        let object = self.remote.client().location().index_file(name);
        let bytes = file.bytes();
        let crc32 = self.upload_confirmed(&object, &[Bytes::copy_from_slice(bytes)], None)?;
        Ok(TieredIndexFile {
            size: bytes.len() as u64,
            crc32,
            // As the state keeps it, so that it reads the same after a restart.
            header: CompactedHeader {
                source_index_count: 0,
                body_crc: 0,
                ..*file.header()
            },
            local: true,
        })
    }

    /// A segment goes up queue-grouped (`grouped_object.rs`): its records reordered by
    /// queue, then the footer. The grouping depends on the segment's bytes alone, so an
    /// object uploaded just before a crash is found again with the same size and CRC32.
    /// The records are sent as slices of the segment's mapping, never copied.
    fn upload_one(&self, segment: &Arc<Segment>) -> Result<TieredSegment> {
        let object = self
            .remote
            .client()
            .location()
            .segment(segment.start_offset());
        let mapped = Bytes::from_owner(MappedSegment(Arc::clone(segment)));
        let bytes = segment.bytes(0, segment.size());
        let layout = Layout::group(bytes);
        let footer = layout.encode_footer();
        let mut pieces: Vec<Bytes> = layout
            .object_order(&mapped)
            .into_iter()
            .map(|run| mapped.slice_ref(run))
            .collect();
        pieces.push(Bytes::copy_from_slice(&footer));
        let crc32 = self.upload_confirmed(&object, &pieces, Some(segment.start_offset()))?;
        self.remote.footers.save(segment.start_offset(), &footer);
        Ok(TieredSegment {
            start_offset: segment.start_offset(),
            size: (bytes.len() + footer.len()) as u64,
            crc32,
            segment_size: Some(bytes.len() as u64),
            last_modified_ms: crate::retention::last_modified_ms(segment),
            local: true,
        })
    }

    /// Make `object` hold `pieces`, one after another: an object the bucket already
    /// reports with their size and CRC32 is kept (uploaded before a crash); otherwise
    /// upload and check the same way. Returns the CRC32. `segment` names the segment
    /// shown as in progress.
    fn upload_confirmed(
        &self,
        object: &object_store::path::Path,
        pieces: &[Bytes],
        segment: Option<u64>,
    ) -> Result<u32> {
        let client = self.remote.client();
        let mut hasher = crc32fast::Hasher::new();
        for piece in pieces {
            hasher.update(piece);
        }
        let crc32 = hasher.finalize();
        let size: u64 = pieces.iter().map(|piece| piece.len() as u64).sum();
        let confirmed = |info: Option<super::object_client::ObjectInfo>| {
            info.is_some_and(|info| info.size == size && info.crc32 == Some(crc32))
        };
        if confirmed(client.head(object)?) {
            return Ok(crc32);
        }
        if let Some(start) = segment {
            self.started_segment(start, size);
        }
        let uploaded = client.upload(object, pieces, crc32);
        if let Some(start) = segment {
            self.ended_segment(start);
        }
        uploaded?;
        let info = client.head(object)?;
        if !confirmed(info) {
            return Err(Error::tier(
                client.location().describe(object),
                format!(
                    "the bucket reports {info:?} after the upload of {size} bytes with CRC32 \
                     {crc32:08x}; the upload is not trusted and will be retried"
                ),
            ));
        }
        let mut status = self.status.lock().expect("upload status lock");
        if segment.is_some() {
            status.uploaded_segments += 1;
        }
        status.uploaded_bytes += size;
        Ok(crc32)
    }

    fn started_segment(&self, start: u64, size: u64) {
        let mut uploading = self.uploading.lock().expect("uploading lock");
        uploading.segments.insert(start, size);
        uploading.since.get_or_insert_with(Instant::now);
    }

    /// The segment's upload ended; the last one running adds the time since the first
    /// started to `upload_seconds`.
    fn ended_segment(&self, start: u64) {
        let mut uploading = self.uploading.lock().expect("uploading lock");
        uploading.segments.remove(&start);
        if uploading.segments.is_empty() {
            if let Some(since) = uploading.since.take() {
                self.status
                    .lock()
                    .expect("upload status lock")
                    .upload_seconds += since.elapsed().as_secs_f64();
            }
        }
    }

    fn succeeded(&self) {
        let mut status = self.status.lock().expect("upload status lock");
        status.failing = None;
        status.failing_since_ms = None;
        status.failed_attempts = 0;
        *self.next_attempt.lock().expect("retry lock") = None;
    }

    /// An upload's outcome: a success is recorded in the tier state (`into_state`), a
    /// failure counted in the status and returned, which ends the pass.
    fn record<T>(
        &self,
        uploaded: Result<T>,
        into_state: impl FnOnce(&mut TierState, T),
    ) -> Result<()> {
        match uploaded {
            Ok(item) => self.remote.update(|state| into_state(state, item)),
            Err(error) => {
                self.failed(&error);
                Err(error)
            }
        }
    }

    fn failed(&self, error: &Error) {
        self.note_failure(error);
        let attempts = self
            .status
            .lock()
            .expect("upload status lock")
            .failed_attempts;
        let pause = FIRST_RETRY
            .saturating_mul(1 << attempts.min(5).saturating_sub(1))
            .min(LONGEST_RETRY);
        *self.next_attempt.lock().expect("retry lock") = Some(Instant::now() + pause);
    }
}

/// A sealed segment's bytes as the owner of a `Bytes`: its mapping lives as long as the
/// `Arc` does (`files/segment.rs`), so parts in flight keep it readable.
struct MappedSegment(Arc<Segment>);

impl AsRef<[u8]> for MappedSegment {
    fn as_ref(&self) -> &[u8] {
        self.0.bytes(0, self.0.size())
    }
}
