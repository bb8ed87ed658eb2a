//! A record held for reading: in place in a mapped segment (which stays mapped while the
//! reference lives), or in bytes fetched from the tier.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;

use crate::files::segment::Segment;
use crate::record::{decode_record, Decoded, RecordView};

use super::RecordOwner;

#[derive(Debug, Clone)]
enum Backing {
    Mapped {
        segment: Arc<Segment>,
        position: usize,
    },
    /// Exactly the record's bytes, from the object named.
    Fetched {
        bytes: Bytes,
        offset: u64,
        /// Shared by the records of one object (naming it costs a format per record).
        object: Arc<Path>,
    },
}

#[derive(Debug, Clone)]
pub struct RecordRef {
    backing: Backing,
    length: usize,
}

impl RecordRef {
    pub(super) fn mapped(segment: Arc<Segment>, position: usize, length: usize) -> Self {
        RecordRef {
            backing: Backing::Mapped { segment, position },
            length,
        }
    }

    pub(super) fn fetched(bytes: Bytes, offset: u64, object: Arc<Path>) -> Self {
        RecordRef {
            length: bytes.len(),
            backing: Backing::Fetched {
                bytes,
                offset,
                object,
            },
        }
    }

    pub fn offset(&self) -> u64 {
        match &self.backing {
            Backing::Mapped { segment, position } => segment.start_offset() + *position as u64,
            Backing::Fetched { offset, .. } => *offset,
        }
    }

    pub fn bytes(&self) -> &[u8] {
        match &self.backing {
            Backing::Mapped { segment, position } => segment.bytes(*position, self.length),
            Backing::Fetched { bytes, .. } => bytes,
        }
    }

    /// The segment file, or the tier object, the record was read from.
    pub fn segment_path(&self) -> &Path {
        match &self.backing {
            Backing::Mapped { segment, .. } => segment.path(),
            Backing::Fetched { object, .. } => object,
        }
    }

    /// What holds the record's bytes, for a reader that keeps them past this reference.
    pub fn owner(&self) -> RecordOwner {
        match &self.backing {
            Backing::Mapped { segment, .. } => RecordOwner::Mapped(Arc::clone(segment)),
            Backing::Fetched { bytes, .. } => RecordOwner::Fetched(bytes.clone()),
        }
    }

    /// Decode the record (already validated when the `RecordRef` was made).
    pub fn view(&self) -> RecordView<'_> {
        match decode_record(self.bytes(), false) {
            Ok(Decoded::Record(view)) => view,
            other => unreachable!("a RecordRef always holds a valid record, got {other:?}"),
        }
    }
}
