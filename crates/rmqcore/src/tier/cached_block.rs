//! What the block cache holds per block: its bytes, a slice of the receive buffer a
//! GET's body was copied into (`receive_buffers.rs`), and which buffer that slice keeps
//! alive.
//!
//! Every buffer but a body's last holds whole blocks, so a block is always one slice of
//! one buffer, never a copy of its own (copying every fetched byte into blocks of their
//! own was 29 % of a one-queue tier read's instructions, callgrind).

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

/// A block's bytes.
#[derive(Debug, Clone, Default)]
pub struct Block(Bytes);

impl Block {
    pub fn whole(bytes: Bytes) -> Self {
        Block(bytes)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Bytes `from..to`, clamped to the block: a slice, never a copy. Empty only when
    /// `from` is at the end.
    pub fn slice(&self, from: usize, to: usize) -> Bytes {
        let len = self.0.len();
        let from = from.min(len);
        self.0.slice(from..to.clamp(from, len))
    }

    /// Append bytes `from..to` (clamped to the block) to `out`.
    pub fn extend_into(&self, from: usize, to: usize, out: &mut Vec<u8>) {
        let to = to.min(self.len());
        if from < to {
            out.extend_from_slice(&self.0[from..to]);
        }
    }
}

/// A block as a GET delivered it: its bytes and the buffer they keep alive.
#[derive(Debug, Clone)]
pub struct FetchedBlock {
    pub block: Block,
    pub buffer: BufferId,
}

impl FetchedBlock {
    /// A block within one buffer (`bytes` a slice of it).
    pub fn within(bytes: Bytes, buffer: BufferId) -> Self {
        FetchedBlock {
            block: Block::whole(bytes),
            buffer,
        }
    }

    /// A block in a buffer of its own.
    #[cfg(test)]
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
    fn a_block_is_sliced_and_copied_within_its_bounds() {
        let block = Block::whole(Bytes::from_static(b"abcdefg"));
        assert_eq!(block.len(), 7);
        assert_eq!(&block.slice(1, 6)[..], b"bcdef");
        assert_eq!(&block.slice(5, 99)[..], b"fg");
        assert!(block.slice(7, 9).is_empty(), "empty only at the end");
        assert!(block.slice(9, 3).is_empty());
        let mut out = Vec::new();
        block.extend_into(2, 6, &mut out);
        assert_eq!(out, b"cdef");
        out.clear();
        block.extend_into(5, 99, &mut out);
        assert_eq!(out, b"fg");
        block.extend_into(8, 99, &mut out);
        assert_eq!(out, b"fg", "nothing past the end");
    }
}
