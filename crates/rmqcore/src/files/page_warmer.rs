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
//! The pages are filled by writing zeros through the file (`pwrite`), then mapped with
//! `MADV_POPULATE_WRITE`. Faulting them in through the mapping alone makes the kernel read
//! the hole into fresh page-cache folios, zeroing each one in its read path; on the VMs
//! rmq is measured on that cost 5-9 µs per 4 KiB page whenever the folios came from
//! memory the host had taken back, against 0.6-1 µs for the same pages written by
//! `pwrite` (docs/durability.md has the figures). It was half of a shard's CPU under a
//! steady produce.
//!
//! Writing zeros could destroy a record if it raced with the writer, so the two follow a
//! claim protocol on two atomics per file sequence (`WriterPosition`): the writer raises
//! `claimed` past every byte before it writes it, then waits out a zero-fill in flight that
//! starts below its claim; the warming thread publishes where its zero-fill starts, then
//! reads `claimed` and gives the fill up if the writer claimed past that start. Both sides
//! store then load with sequential consistency, so at least one of them sees the other: a
//! fill never covers a byte the writer may write, and bytes the writer wrote are always
//! below its claim.
//!
//! When the writer catches up with the warming (memory that is slow to hand out, a busy
//! second core), the thread skips to a little past the writer instead of faulting the
//! page the writer is waiting for: the two then fault different pages side by side
//! rather than one after the other.
//!
//! Warming only ever writes zeros where the file reads as zero (past the writer's claim,
//! which is past every byte it wrote). Disk blocks are reserved before their pages are
//! filled, so a full disk stops the warming; the writer's own reservation then reports
//! the error. Failures are otherwise ignored: warming only ever saves time.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::error::{Error, Result};
use crate::files::mapped_file::PAGE;
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
/// Fills that start this far ahead of the writer run to the next multiple of it in the
/// file: one fill and one `MADV_POPULATE_WRITE` per 2 MiB-aligned piece (its zeros still
/// go 256 KiB per `pwrite`, `MappedFile::write_zeros`). The shards' warming at 1 KiB
/// messages went 0.28-0.29 -> 0.19-0.23 µs per message (alternating builds, 2026-11-28).
const LARGE_PIECE: usize = 2 << 20;

struct WarmRequest {
    segment: Arc<Segment>,
    from: usize,
    to: usize,
    writer: Arc<WriterPosition>,
    /// How far past a writer that caught up the warming resumes (`WarmCursor::lead`).
    lead: usize,
}

/// How far past the last change the writer must be before the pages it passed get their
/// read-around back: one `madvise` per this many bytes of log (each one splits or merges
/// the mapping's VMAs under the process's mmap lock). The kernel's read-around window on
/// the machines measured is 8 MiB (`read_ahead_kb`).
const READ_AROUND_STEP: usize = 8 << 20;

/// Where read-around is off in the segment a sequence is writing: from `from` to the
/// segment's end. Only the warming thread touches it.
#[derive(Debug, Default)]
struct ReadAroundBoundary {
    segment: Option<Arc<Segment>>,
    from: usize,
}

impl ReadAroundBoundary {
    /// Keep read-around off past the writer (at `writer_at` in `segment`) and on behind
    /// it, within a step; a segment the writer left gets it back whole.
    fn follow(&mut self, segment: &Arc<Segment>, writer_at: usize) {
        if writer_at == usize::MAX {
            return;
        }
        let page_floor = writer_at / PAGE * PAGE;
        match &self.segment {
            Some(current) if current.start_offset() == segment.start_offset() => {
                if page_floor >= self.from.saturating_add(READ_AROUND_STEP) {
                    current.read_around(self.from, page_floor - self.from, true);
                    self.from = page_floor;
                }
            }
            // A request for a segment the writer already left.
            Some(current) if current.start_offset() > segment.start_offset() => {}
            _ => {
                if let Some(left) = self.segment.take() {
                    left.read_around(self.from, left.size() - self.from, true);
                }
                segment.read_around(page_floor, segment.size() - page_floor, false);
                self.segment = Some(Arc::clone(segment));
                self.from = page_floor;
            }
        }
    }
}

/// What the writer of one file sequence has claimed, and where the zero-fill in flight
/// on the warming thread starts (the module docs give the protocol). Both are logical
/// offsets in the sequence: a segment's start offset plus a position in it.
#[derive(Debug)]
struct WriterPosition {
    /// The writer writes only below this; raised by the writer before it writes, never
    /// lowered (bytes taken back by a roll-back or truncation stay claimed).
    claimed: AtomicU64,
    /// Where the zero-fill in flight starts; `NO_FILL` when none is.
    filling_from: AtomicU64,
    /// For a sequence whose written bytes keep the kernel's read-around (the commit log):
    /// where the warming thread turned it off ahead of the writer. Read-around on a page
    /// past the writer reads the file's hole into fresh page-cache folios 8 MiB at a
    /// time, zeroing them in the kernel's slow path, and each read marks a page whose
    /// first touch starts the next one: a chain that ran ahead of the zero-fills and took
    /// half a shard's CPU at 1 KiB messages. Behind the writer it stays on, for reading
    /// the log back from disk.
    read_around: Option<Mutex<ReadAroundBoundary>>,
}

const NO_FILL: u64 = u64::MAX;

impl WriterPosition {
    /// How far into `segment` the writer's claim reaches: 0 before it, `usize::MAX` once
    /// past it.
    fn within(&self, segment: &Segment) -> usize {
        let claimed = self.claimed.load(Ordering::Relaxed);
        if claimed >= segment.end_offset() {
            usize::MAX
        } else {
            claimed.saturating_sub(segment.start_offset()) as usize
        }
    }

    /// Zero `[from, to)` of `segment` unless the writer claimed past `from` meanwhile;
    /// false when it did (nothing was written).
    fn fill_unclaimed(&self, segment: &Segment, from: usize, to: usize) -> std::io::Result<bool> {
        let start = segment.start_offset() + from as u64;
        self.filling_from.store(start, Ordering::SeqCst);
        if self.claimed.load(Ordering::SeqCst) > start {
            self.filling_from.store(NO_FILL, Ordering::SeqCst);
            return Ok(false);
        }
        let filled = segment.write_zeros(from, to - from);
        self.filling_from.store(NO_FILL, Ordering::SeqCst);
        filled.map(|()| true)
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
                claimed: AtomicU64::new(0),
                filling_from: AtomicU64::new(NO_FILL),
                read_around: None,
            }),
        }
    }

    /// For files read back through their mapping with the kernel's read-around (the
    /// commit log): turn it off only ahead of the writer (`WriterPosition::read_around`).
    #[must_use]
    pub fn keeping_read_around_behind(mut self) -> Self {
        if let Some(writer) = Arc::get_mut(&mut self.writer) {
            writer.read_around = Some(Mutex::new(ReadAroundBoundary::default()));
        }
        self
    }

    /// The writer is about to write `segment` up to `end`: claim it, so that no zero-fill
    /// starts below it, and wait for one already under way there to end. Called by the
    /// sequence's single writer before every write past its last claim; cheap when the
    /// bytes are claimed already.
    pub fn claim(&self, segment: &Segment, end: usize) {
        let claim = segment.start_offset() + end as u64;
        let writer = &self.writer;
        if claim <= writer.claimed.load(Ordering::Relaxed) {
            return;
        }
        writer.claimed.store(claim, Ordering::SeqCst);
        let mut spins = 0u32;
        while writer.filling_from.load(Ordering::SeqCst) < claim {
            // A fill is a few tens of microseconds of `pwrite`.
            if spins < 100 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
            spins = spins.saturating_add(1);
        }
    }
}

/// The warming thread, shared by every file sequence of a store.
pub struct PageWarmer {
    sender: Mutex<Option<SyncSender<WarmRequest>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// Set by `stop`: the thread leaves the fill under way and the requests queued
    /// (a channel hands over what it holds even once its sender is gone).
    stopping: Arc<AtomicBool>,
}

impl std::fmt::Debug for PageWarmer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageWarmer").finish_non_exhaustive()
    }
}

impl PageWarmer {
    pub fn start() -> Result<Self> {
        let (sender, receiver) = sync_channel(QUEUED_REQUESTS);
        let stopping = Arc::new(AtomicBool::new(false));
        let stop_seen = Arc::clone(&stopping);
        let thread = std::thread::Builder::new()
            .name("rmq-warm".into())
            .spawn(move || warm_requests(&receiver, &stop_seen))
            .map_err(|error| Error::io("rmq-warm thread", error))?;
        Ok(PageWarmer {
            sender: Mutex::new(Some(sender)),
            thread: Mutex::new(Some(thread)),
            stopping,
        })
    }

    /// The writer behind `cursor` has written `segment` up to `position`: make sure the
    /// pages of the cursor's window past it are being warmed. Never blocks; called by
    /// that sequence's single writer.
    pub fn written_to(&self, cursor: &WarmCursor, segment: &Arc<Segment>, position: usize) {
        // Everything below `position` is the writer's (written before warming started,
        // when this is the first call), so it must be claimed before any fill is asked for.
        cursor.claim(segment, position);
        let same_segment =
            cursor.requested_segment.load(Ordering::Relaxed) == segment.start_offset();
        let requested = if same_segment {
            cursor.requested_to.load(Ordering::Relaxed)
        } else {
            0
        };
        let mut target = position.saturating_add(cursor.window);
        if cursor.window >= LARGE_PIECE {
            // Whole large pieces (`LARGE_PIECE`), so the next request starts on a boundary.
            target = target.div_ceil(LARGE_PIECE).saturating_mul(LARGE_PIECE);
        }
        let target = target.min(segment.size());
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

    /// Stop the thread within a piece's fill; pending requests are dropped with it.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::Relaxed);
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

/// Where a fill from `position` ends: at the next `LARGE_PIECE` boundary of the file when
/// it starts that far ahead of the writer (at `writer_at`), else a `POPULATE_PIECE` on, so
/// that a writer close behind never waits long for a fill under way.
fn piece_end(position: usize, writer_at: usize) -> usize {
    if position.saturating_sub(writer_at) >= LARGE_PIECE {
        (position / LARGE_PIECE + 1) * LARGE_PIECE
    } else {
        position + POPULATE_PIECE
    }
}

fn warm_requests(receiver: &Receiver<WarmRequest>, stopping: &AtomicBool) {
    let mut supported = true;
    let going_on = || !stopping.load(Ordering::Relaxed);
    while let Ok(request) = receiver.recv() {
        if !going_on() {
            return;
        }
        if let Some(boundary) = &request.writer.read_around {
            boundary
                .lock()
                .expect("read-around boundary lock")
                .follow(&request.segment, request.writer.within(&request.segment));
        }
        let mut position = request.from;
        while supported && position < request.to && going_on() {
            let writer_at = request.writer.within(&request.segment);
            let next = next_warm_position(position, writer_at, request.lead);
            if next != position {
                position = next;
                continue;
            }
            let end = piece_end(position, writer_at).min(request.to);
            if request.segment.ensure_allocated(end).is_err() {
                break;
            }
            match request
                .writer
                .fill_unclaimed(&request.segment, position, end)
            {
                Ok(true) => {}
                // The writer got there first: go on past it.
                Ok(false) => continue,
                Err(_) => break,
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
    fn a_stopped_warmer_leaves_the_window_it_was_filling() {
        // 512 MiB asked for and the warmer stopped at once: stopping waits for the piece
        // under way, not for the window (a store closed right after opening paid for
        // the whole window before).
        let dir = tempfile::tempdir().unwrap();
        let size = 1 << 30;
        let segment = Arc::new(Segment::create(dir.path(), 0, size, 0).unwrap());
        let warmer = PageWarmer::start().unwrap();
        warmer.written_to(&WarmCursor::new(512 << 20), &segment, 0);
        warmer.stop();
        assert!(
            allocated_bytes(&segment) < 64 << 20,
            "{} bytes were filled after the stop",
            allocated_bytes(&segment)
        );
    }

    #[test]
    fn zero_fills_never_reach_bytes_the_writer_wrote() {
        // A writer appending small records of non-zero bytes as fast as it can, with a
        // window smaller than a fill piece and a lead of one page, so that the warming
        // thread's fills start right at the writer's claim over and over. Every byte must
        // read back as written.
        let dir = tempfile::tempdir().unwrap();
        let size = 24 << 20;
        let segment = Arc::new(Segment::create(dir.path(), 0, size, 0).unwrap());
        let warmer = PageWarmer::start().unwrap();
        let mut cursor = WarmCursor::new(64 << 10);
        cursor.lead = 4096;
        let mut position = 0;
        let mut record = 0u32;
        while position < size - 4096 {
            let length = 1 + (record as usize * 7919) % 3000;
            cursor.claim(&segment, position + length);
            // SAFETY: the test is the only writer.
            unsafe { segment.bytes_mut(position, length) }.fill((record % 255 + 1) as u8);
            position += length;
            warmer.written_to(&cursor, &segment, position);
            record += 1;
        }
        warmer.stop();
        let mut at = 0;
        for index in 0..record {
            let length = 1 + (index as usize * 7919) % 3000;
            let expected = (index % 255 + 1) as u8;
            let bytes = segment.bytes(at, length);
            assert!(
                bytes.iter().all(|byte| *byte == expected),
                "record {index} at {at} was overwritten"
            );
            at += length;
        }
        assert!(segment.bytes(at, size - at).iter().all(|byte| *byte == 0));
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
