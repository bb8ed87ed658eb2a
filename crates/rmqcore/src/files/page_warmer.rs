//! Faulting in the pages just ahead of a writer (the commit log's, each consume queue's),
//! on a thread of its own.
//!
//! The first write to each page of a fresh segment costs a page fault in which the kernel
//! finds and zeroes a page-cache page; measured on the put path that is a third or more
//! of the time of a 1 KiB append. RocketMQ moves the same cost off its writer by
//! allocating and warming the next mapped file in the background
//! (`AllocateMappedFileService`, `warmMapedFileEnable`). rmq keeps a window of pages ahead
//! of the write position populated instead, so the writer mostly finds its pages
//! resident and writable, and the cost lands on another core.
//!
//! When the writer catches up with the warming (memory that is slow to hand out, a busy
//! second core), the thread skips to a little past the writer instead of faulting the
//! page the writer is waiting for: the two then fault different pages side by side
//! rather than one after the other.
//!
//! Warming never changes a byte: populating a page of a file maps what the file holds
//! (zeros past the written end). Disk blocks are reserved before their pages are
//! populated, so a full disk stops the warming rather than risking a SIGBUS; the writer's
//! own reservation then reports the error. Failures are otherwise ignored: warming only
//! ever saves time.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::error::{Error, Result};
use crate::files::segment::Segment;

/// Requests are sent when the writer has moved this fraction of the window past the last
/// request, so the channel sees a few sends per window, not one per append.
const REQUEST_STEPS_PER_WINDOW: usize = 4;
/// Requests waiting for the thread: a few windows' worth for the commit log and for the
/// consume queues being written.
const QUEUED_REQUESTS: usize = 32;
/// Pages are populated this many bytes at a time, so that the thread notices soon when
/// the writer has caught up, or the segment was deleted meanwhile.
const POPULATE_PIECE: usize = 256 << 10;
/// How far past a writer that caught up the warming resumes, at most: the pages in
/// between are the writer's to fault. A window's step (2 MiB of the commit log's default
/// 8 MiB) left 512 pages to the writer each time, and a fresh segment's first request
/// always starts at the writer. One piece leaves it 64 (the writer thread's faults over
/// 51,200 100 B messages in batches of 128, ~2,500 pages of log: about 660 with the
/// step, 280 with two pieces, 230 with one).
const CATCH_UP_LEAD: usize = POPULATE_PIECE;

struct WarmRequest {
    segment: Arc<Segment>,
    from: usize,
    to: usize,
    writer: Arc<WriterPosition>,
    /// How far past a writer that caught up the warming resumes (`WarmCursor::lead`).
    lead: usize,
}

/// Where a writer last said it had written to; read by the warming thread.
#[derive(Debug)]
struct WriterPosition {
    segment: AtomicU64,
    position: AtomicUsize,
}

impl WriterPosition {
    /// How far into `segment` the writer is: 0 before it, `usize::MAX` once past it.
    fn within(&self, segment: &Segment) -> usize {
        let writing = self.segment.load(Ordering::Relaxed);
        match writing.cmp(&segment.start_offset()) {
            std::cmp::Ordering::Less => 0,
            std::cmp::Ordering::Equal => self.position.load(Ordering::Relaxed),
            std::cmp::Ordering::Greater => usize::MAX,
        }
    }
}

/// How far ahead of one writer's position warming was requested: one per file sequence
/// (the commit log, each consume queue), each with its own window.
#[derive(Debug)]
pub struct WarmCursor {
    window: usize,
    step: usize,
    /// How far past a writer that caught up the warming resumes: one step of the window,
    /// at most `CATCH_UP_LEAD`.
    lead: usize,
    /// The segment (by start offset) and the position up to which warming was requested.
    requested_segment: AtomicU64,
    requested_to: AtomicUsize,
    writer: Arc<WriterPosition>,
}

impl WarmCursor {
    pub fn new(window: usize) -> Self {
        let step = (window / REQUEST_STEPS_PER_WINDOW).max(4096);
        WarmCursor {
            window,
            step,
            lead: step.min(CATCH_UP_LEAD),
            requested_segment: AtomicU64::new(u64::MAX),
            requested_to: AtomicUsize::new(0),
            writer: Arc::new(WriterPosition {
                segment: AtomicU64::new(u64::MAX),
                position: AtomicUsize::new(0),
            }),
        }
    }
}

/// The warming thread, shared by every file sequence of a store.
pub struct PageWarmer {
    sender: Mutex<Option<SyncSender<WarmRequest>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for PageWarmer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageWarmer").finish_non_exhaustive()
    }
}

impl PageWarmer {
    pub fn start() -> Result<Self> {
        let (sender, receiver) = sync_channel(QUEUED_REQUESTS);
        let thread = std::thread::Builder::new()
            .name("rmq-warm".into())
            .spawn(move || warm_requests(&receiver))
            .map_err(|error| Error::io("rmq-warm thread", error))?;
        Ok(PageWarmer {
            sender: Mutex::new(Some(sender)),
            thread: Mutex::new(Some(thread)),
        })
    }

    /// The writer behind `cursor` has written `segment` up to `position`: make sure the
    /// pages of the cursor's window past it are being warmed. Never blocks; called by
    /// that sequence's single writer.
    pub fn written_to(&self, cursor: &WarmCursor, segment: &Arc<Segment>, position: usize) {
        cursor.writer.position.store(position, Ordering::Relaxed);
        cursor
            .writer
            .segment
            .store(segment.start_offset(), Ordering::Relaxed);
        let same_segment =
            cursor.requested_segment.load(Ordering::Relaxed) == segment.start_offset();
        let requested = if same_segment {
            cursor.requested_to.load(Ordering::Relaxed)
        } else {
            0
        };
        let target = position.saturating_add(cursor.window).min(segment.size());
        let overtaken = requested <= position;
        if !overtaken && target < requested.saturating_add(cursor.step) {
            return;
        }
        let from = requested.max(position);
        if from >= target {
            return;
        }
        let request = WarmRequest {
            segment: Arc::clone(segment),
            from,
            to: target,
            writer: Arc::clone(&cursor.writer),
            lead: cursor.lead,
        };
        let sent = self
            .sender
            .lock()
            .expect("warmer sender lock")
            .as_ref()
            // When the channel is full the warmer is behind: the writer faults its own
            // pages until it catches up.
            .is_some_and(|sender| sender.try_send(request).is_ok());
        if sent {
            cursor
                .requested_segment
                .store(segment.start_offset(), Ordering::Relaxed);
            cursor.requested_to.store(target, Ordering::Relaxed);
        }
    }

    /// Stop the thread; pending requests are dropped with it.
    pub fn stop(&self) {
        self.sender.lock().expect("warmer sender lock").take();
        if let Some(thread) = self.thread.lock().expect("warmer thread lock").take() {
            let _ = thread.join();
        }
    }
}

impl Drop for PageWarmer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Where warming that reached `position` goes on: there, unless the writer (at
/// `writer_at`) is within half a lead of it; then a lead past the writer, leaving the
/// pages in between to the writer (see the module comment).
fn next_warm_position(position: usize, writer_at: usize, lead: usize) -> usize {
    if writer_at.saturating_add(lead / 2) > position {
        writer_at.saturating_add(lead)
    } else {
        position
    }
}

fn warm_requests(receiver: &Receiver<WarmRequest>) {
    let mut supported = true;
    while let Ok(request) = receiver.recv() {
        let mut position = request.from;
        while supported && position < request.to {
            let writer_at = request.writer.within(&request.segment);
            let next = next_warm_position(position, writer_at, request.lead);
            if next != position {
                position = next;
                continue;
            }
            let end = (position + POPULATE_PIECE).min(request.to);
            if request.segment.ensure_allocated(end).is_err() {
                break;
            }
            match request.segment.populate_for_write(position, end - position) {
                Ok(()) => position = end,
                // A kernel before 5.14 has no MADV_POPULATE_WRITE: nothing to warm with.
                Err(error) if error.raw_os_error() == Some(libc::EINVAL) => supported = false,
                Err(_) => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;
    use std::time::{Duration, Instant};

    fn allocated_bytes(segment: &Segment) -> u64 {
        std::fs::metadata(segment.path()).unwrap().blocks() * 512
    }

    #[test]
    fn warming_resumes_a_lead_past_a_writer_that_caught_up() {
        const MIB: usize = 1 << 20;
        // Well ahead of the writer: go on.
        assert_eq!(next_warm_position(5 * MIB, MIB, 2 * MIB), 5 * MIB);
        // The writer is at or within half a lead of the position: resume a lead past it.
        assert_eq!(next_warm_position(MIB, MIB, 2 * MIB), 3 * MIB);
        assert_eq!(next_warm_position(MIB + MIB / 2, MIB, 2 * MIB), 3 * MIB);
        assert_eq!(next_warm_position(0, 4 * MIB, 2 * MIB), 6 * MIB);
        // A writer in a later segment: nothing here is worth warming.
        assert_eq!(next_warm_position(MIB, usize::MAX, 2 * MIB), usize::MAX);
    }

    #[test]
    fn a_writer_that_caught_up_is_left_at_most_one_piece() {
        // The commit log's default window: its step would leave the writer 2 MiB.
        assert_eq!(WarmCursor::new(8 << 20).lead, POPULATE_PIECE);
        // A consume queue's small window: one step.
        assert_eq!(WarmCursor::new(256 << 10).lead, 64 << 10);
    }

    #[test]
    fn warms_ahead_of_the_writer_without_changing_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let size = 4 << 20;
        let segment = Arc::new(Segment::create(dir.path(), 0, size, 1 << 20).unwrap());
        // SAFETY: the test is the only writer.
        unsafe { segment.bytes_mut(0, 5) }.copy_from_slice(b"hello");
        let warmer = PageWarmer::start().unwrap();
        warmer.written_to(&WarmCursor::new(2 << 20), &segment, 5);
        let deadline = Instant::now() + Duration::from_secs(10);
        while allocated_bytes(&segment) < 2 << 20 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        warmer.stop();
        assert!(
            allocated_bytes(&segment) >= 2 << 20,
            "blocks ahead of the writer were reserved"
        );
        assert_eq!(segment.bytes(0, 5), b"hello");
        assert!(segment.bytes(5, size - 5).iter().all(|b| *b == 0));
    }

    #[test]
    fn requests_follow_the_writer_in_steps_and_across_segments() {
        let dir = tempfile::tempdir().unwrap();
        let first = Arc::new(Segment::create(dir.path(), 0, 1 << 20, 0).unwrap());
        let second = Arc::new(Segment::create(dir.path(), 1 << 20, 1 << 20, 0).unwrap());
        let warmer = PageWarmer::start().unwrap();
        let cursor = WarmCursor::new(256 << 10);
        warmer.written_to(&cursor, &first, 100);
        assert_eq!(
            cursor.requested_to.load(Ordering::Relaxed),
            100 + (256 << 10)
        );
        // Less than a step further: no new request.
        warmer.written_to(&cursor, &first, 200);
        assert_eq!(
            cursor.requested_to.load(Ordering::Relaxed),
            100 + (256 << 10)
        );
        // Near the end of the segment the window is cut at its size.
        warmer.written_to(&cursor, &first, (1 << 20) - 10);
        assert_eq!(cursor.requested_to.load(Ordering::Relaxed), 1 << 20);
        // A new segment starts over from the writer's position.
        warmer.written_to(&cursor, &second, 0);
        assert_eq!(
            cursor.requested_segment.load(Ordering::Relaxed),
            second.start_offset()
        );
        assert_eq!(cursor.requested_to.load(Ordering::Relaxed), 256 << 10);
        warmer.stop();
        // Stopped: nothing is sent any more, and nothing fails.
        warmer.written_to(&cursor, &second, 600 << 10);
        assert_eq!(cursor.requested_to.load(Ordering::Relaxed), 256 << 10);
    }
}
