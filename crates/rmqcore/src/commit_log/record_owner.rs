//! What keeps a record's bytes readable after the read that found it returns: the mapped
//! segment holding it (mapped while any owner lives, even once retention or the tier's
//! eviction has deleted its file), or the bytes fetched from the tier. A reader that keeps
//! records past a pull (a body batch handing out views) holds their owners instead of
//! copying the records.

use std::sync::Arc;

use bytes::Bytes;

use crate::files::segment::Segment;

#[derive(Debug, Clone)]
pub enum RecordOwner {
    Mapped(Arc<Segment>),
    /// One record's bytes from an evicted segment (a slice of a cached tier block, which
    /// it keeps alive).
    Fetched(Bytes),
}

impl RecordOwner {
    /// Whether both hold the same bytes (a queue's records mostly share one segment: a
    /// reader keeps one owner for all of them).
    pub fn is_same(&self, other: &RecordOwner) -> bool {
        match (self, other) {
            (RecordOwner::Mapped(a), RecordOwner::Mapped(b)) => Arc::ptr_eq(a, b),
            (RecordOwner::Fetched(a), RecordOwner::Fetched(b)) => {
                a.as_ptr() == b.as_ptr() && a.len() == b.len()
            }
            _ => false,
        }
    }

    fn base(&self) -> *const u8 {
        match self {
            RecordOwner::Mapped(segment) => segment.bytes(0, 0).as_ptr(),
            RecordOwner::Fetched(bytes) => bytes.as_ptr(),
        }
    }

    /// Where `part`, a slice of a record this owner holds (a view's body), starts in it.
    pub fn position_of(&self, part: &[u8]) -> usize {
        let position = (part.as_ptr() as usize).wrapping_sub(self.base() as usize);
        debug_assert!(position.saturating_add(part.len()) <= self.len());
        position
    }

    fn len(&self) -> usize {
        match self {
            RecordOwner::Mapped(segment) => segment.size(),
            RecordOwner::Fetched(bytes) => bytes.len(),
        }
    }

    /// Bytes `[position, position + length)`, which a read found as part of a record
    /// (published bytes: the writer never writes them again). Panics out of bounds.
    pub fn bytes(&self, position: usize, length: usize) -> &[u8] {
        match self {
            RecordOwner::Mapped(segment) => segment.bytes(position, length),
            RecordOwner::Fetched(bytes) => &bytes[position..position + length],
        }
    }
}
