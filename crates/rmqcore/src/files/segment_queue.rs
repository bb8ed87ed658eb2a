//! An ordered list of contiguous segments (RocketMQ's `MappedFileQueue`): the commit log
//! is one, and so is each consume queue.
//!
//! Thread safety: the list sits behind an `RwLock`; lookups clone the `Arc` of a segment
//! and release the lock at once, so readers never hold it while reading bytes.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use crate::error::{Error, IoContext, Result};
use crate::files::segment::{parse_segment_file_name, Segment};

#[derive(Debug)]
pub struct SegmentQueue {
    dir: PathBuf,
    segment_size: usize,
    writable: bool,
    /// Disk blocks are reserved this many bytes ahead of writes (0: never).
    allocation_chunk: usize,
    segments: RwLock<Vec<Arc<Segment>>>,
}

impl SegmentQueue {
    /// Load the segments in `dir` (which may not exist yet). Their size is taken from the
    /// files themselves when there are any, so a store written with other settings (or by
    /// RocketMQ) opens as it is; `configured_size` applies to new stores.
    pub fn load(
        dir: &Path,
        configured_size: usize,
        writable: bool,
        allocation_chunk: usize,
    ) -> Result<Self> {
        let mut found: Vec<(u64, PathBuf, u64)> = Vec::new();
        if dir.is_dir() {
            for entry in fs::read_dir(dir).at(dir)? {
                let entry = entry.at(dir)?;
                let path = entry.path();
                let metadata = entry.metadata().at(&path)?;
                if metadata.is_dir() {
                    continue;
                }
                let Some(start) = entry.file_name().to_str().and_then(parse_segment_file_name)
                else {
                    continue;
                };
                found.push((start, path, metadata.len()));
            }
        }
        found.sort_by_key(|(start, _, _)| *start);
        // A zero-length last file is an interrupted creation; RocketMQ 5 deletes it too.
        if writable && found.last().is_some_and(|(_, _, length)| *length == 0) {
            let (_, path, _) = found.pop().expect("checked non-empty");
            fs::remove_file(&path).at(&path)?;
        }
        let segment_size = match found.first() {
            Some((_, path, length)) => usize::try_from(*length)
                .ok()
                .filter(|size| *size > 0)
                .ok_or_else(|| Error::corrupt(path, 0, "segment file is empty"))?,
            None => configured_size,
        };
        let mut segments = Vec::with_capacity(found.len());
        let mut expected_start: Option<u64> = None;
        for (start, path, _) in found {
            if let Some(expected) = expected_start {
                if start != expected {
                    return Err(Error::corrupt(
                        &path,
                        0,
                        format!("segments are not contiguous: expected one starting at {expected}"),
                    ));
                }
            }
            if start % segment_size as u64 != 0 {
                return Err(Error::corrupt(
                    &path,
                    0,
                    format!("start {start} is not a multiple of the segment size {segment_size}"),
                ));
            }
            segments.push(Arc::new(
                Segment::open(&path, start, segment_size, writable)?
                    .with_allocation_chunk(allocation_chunk),
            ));
            expected_start = Some(start + segment_size as u64);
        }
        Ok(SegmentQueue {
            dir: dir.to_path_buf(),
            segment_size,
            writable,
            allocation_chunk,
            segments: RwLock::new(segments),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn writable(&self) -> bool {
        self.writable
    }

    pub fn segment_size(&self) -> usize {
        self.segment_size
    }

    pub fn segments(&self) -> Vec<Arc<Segment>> {
        self.segments.read().expect("segment list lock").clone()
    }

    pub fn is_empty(&self) -> bool {
        self.segments.read().expect("segment list lock").is_empty()
    }

    pub fn first(&self) -> Option<Arc<Segment>> {
        self.segments
            .read()
            .expect("segment list lock")
            .first()
            .cloned()
    }

    pub fn last(&self) -> Option<Arc<Segment>> {
        self.segments
            .read()
            .expect("segment list lock")
            .last()
            .cloned()
    }

    /// The segment holding `offset`.
    pub fn find(&self, offset: u64) -> Option<Arc<Segment>> {
        let segments = self.segments.read().expect("segment list lock");
        let first = segments.first()?.start_offset();
        if offset < first {
            return None;
        }
        let index = usize::try_from((offset - first) / self.segment_size as u64).ok()?;
        segments
            .get(index)
            .filter(|segment| segment.contains(offset))
            .cloned()
    }

    /// Create the segment that starts at `start` (the end of the current last one, or
    /// the aligned start of a new queue).
    pub fn create(&self, start: u64) -> Result<Arc<Segment>> {
        if !self.writable {
            return Err(Error::ReadOnly);
        }
        let mut segments = self.segments.write().expect("segment list lock");
        if let Some(last) = segments.last() {
            assert_eq!(last.end_offset(), start, "segments must stay contiguous");
        }
        fs::create_dir_all(&self.dir).at(&self.dir)?;
        let segment = Arc::new(Segment::create(
            &self.dir,
            start,
            self.segment_size,
            self.allocation_chunk,
        )?);
        segments.push(Arc::clone(&segment));
        Ok(segment)
    }

    /// Delete every segment that starts at or after `offset` (recovery truncation).
    pub fn remove_from(&self, offset: u64) -> Result<usize> {
        let mut segments = self.segments.write().expect("segment list lock");
        let keep = segments
            .iter()
            .take_while(|segment| segment.start_offset() < offset)
            .count();
        let removed: Vec<_> = segments.drain(keep..).collect();
        for segment in &removed {
            fs::remove_file(segment.path()).at(segment.path())?;
        }
        Ok(removed.len())
    }

    /// Delete the oldest segment if it is the one starting at `start` (retention), so
    /// a plan made earlier never deletes a different file. Readers holding it keep it
    /// mapped until they drop it.
    pub fn remove_first_if(&self, start: u64) -> Result<Option<Arc<Segment>>> {
        let mut segments = self.segments.write().expect("segment list lock");
        if segments.len() < 2 || segments[0].start_offset() != start {
            return Ok(None);
        }
        let segment = segments.remove(0);
        fs::remove_file(segment.path()).at(segment.path())?;
        Ok(Some(segment))
    }

    /// Delete the oldest segment, returning it (retention). Readers holding it keep it
    /// mapped until they drop it.
    pub fn remove_first(&self) -> Result<Option<Arc<Segment>>> {
        let mut segments = self.segments.write().expect("segment list lock");
        if segments.is_empty() {
            return Ok(None);
        }
        let segment = segments.remove(0);
        fs::remove_file(segment.path()).at(segment.path())?;
        Ok(Some(segment))
    }

    pub fn flush_all(&self) -> Result<()> {
        for segment in self.segments() {
            segment.flush()?;
        }
        Ok(())
    }
}
