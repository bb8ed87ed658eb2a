//! What the block cache holds per block: its bytes as slices of the buffers a GET's body
//! arrived in, and which buffers those slices keep alive.
//!
//! A GET's body comes as pieces, each a slice of the buffer the HTTP client read the
//! socket into (a few hundred KiB on loopback). A block inside one piece is one slice of
//! it; a block crossing from one piece into the next is two slices, head and tail, not a
//! copy (copying every fetched byte into blocks was 29 % of a one-queue tier read's
//! instructions, callgrind). A block spread over three or more pieces (pieces smaller
//! than a block) is copied into a buffer of its own.

use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;

/// The buffer a block's bytes are a slice of: an identity (shared by the blocks sliced
/// from one buffer) and its length, what the cache counts while any of them is cached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferId {
    pub id: u64,
    pub bytes: u64,
}

impl BufferId {
    /// A buffer never seen before, of `bytes` bytes.
    pub fn new(bytes: u64) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        BufferId {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            bytes,
        }
    }
}

/// A block's bytes: `head`, then `tail` (empty unless the block crosses two pieces).
#[derive(Debug, Clone, Default)]
pub struct Block {
    head: Bytes,
    tail: Bytes,
}

impl Block {
    pub fn whole(bytes: Bytes) -> Self {
        Block {
            head: bytes,
            tail: Bytes::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.head.len() + self.tail.len()
    }

    /// Bytes `from..to` (clamped to the block), no further than the end of the part
    /// holding `from`: a slice, never a copy. Empty only when `from` is at the end.
    pub fn slice_in_part(&self, from: usize, to: usize) -> Bytes {
        let split = self.head.len();
        if from < split {
            return self.head.slice(from..to.clamp(from, split));
        }
        let tail = self.tail.len();
        let from = (from - split).min(tail);
        self.tail
            .slice(from..(to.saturating_sub(split)).clamp(from, tail))
    }

    /// Append bytes `from..to` (clamped to the block) to `out`, across its parts.
    pub fn extend_into(&self, from: usize, to: usize, out: &mut Vec<u8>) {
        let split = self.head.len();
        let to = to.min(self.len());
        if from < split {
            out.extend_from_slice(&self.head[from..to.min(split)]);
        }
        if to > split {
            out.extend_from_slice(&self.tail[from.max(split) - split..to - split]);
        }
    }
}

/// A block as a GET delivered it: its bytes and the buffers they keep alive (the tail's
/// only when it has one).
#[derive(Debug, Clone)]
pub struct FetchedBlock {
    pub block: Block,
    pub buffers: (BufferId, Option<BufferId>),
}

impl FetchedBlock {
    /// A block within one buffer (`bytes` a slice of it).
    pub fn within(bytes: Bytes, buffer: BufferId) -> Self {
        FetchedBlock {
            block: Block::whole(bytes),
            buffers: (buffer, None),
        }
    }

    /// A block crossing from one buffer into the next.
    pub fn across(head: (Bytes, BufferId), tail: (Bytes, BufferId)) -> Self {
        FetchedBlock {
            block: Block {
                head: head.0,
                tail: tail.0,
            },
            buffers: (head.1, Some(tail.1)),
        }
    }

    /// A block in a buffer of its own.
    pub fn copied(bytes: Vec<u8>) -> Self {
        let buffer = BufferId::new(bytes.len() as u64);
        FetchedBlock::within(Bytes::from(bytes), buffer)
    }

    pub fn len(&self) -> usize {
        self.block.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_in_two_parts_is_sliced_within_a_part_and_copied_across() {
        let head = (Bytes::from_static(b"abcd"), BufferId::new(4));
        let tail = (Bytes::from_static(b"efg"), BufferId::new(3));
        let fetched = FetchedBlock::across(head, tail);
        let block = &fetched.block;
        assert_eq!(block.len(), 7);
        assert_eq!(
            &block.slice_in_part(1, 6)[..],
            b"bcd",
            "stops at the head's end"
        );
        assert_eq!(&block.slice_in_part(4, 6)[..], b"ef");
        assert_eq!(&block.slice_in_part(5, 99)[..], b"fg");
        assert!(
            block.slice_in_part(7, 9).is_empty(),
            "empty only at the end"
        );
        let mut out = Vec::new();
        block.extend_into(2, 6, &mut out);
        assert_eq!(out, b"cdef");
        out.clear();
        block.extend_into(5, 99, &mut out);
        assert_eq!(out, b"fg");
        out.clear();
        block.extend_into(0, 3, &mut out);
        assert_eq!(out, b"abc");
        let whole = Block::whole(Bytes::from_static(b"xyz"));
        assert_eq!(&whole.slice_in_part(1, 10)[..], b"yz");
    }
}
