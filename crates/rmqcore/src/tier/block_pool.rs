//! Buffers for the block cache's blocks, reused: a block pushed out of the cache gives its
//! buffer back, and the next GET fills it instead of a freshly allocated one.
//!
//! Why: a fresh 64 KiB buffer per block cost a tier reader page faults and the kernel's
//! zeroing of every page it touched (perf: 8 % of a one-queue tier read's client CPU);
//! a reused buffer's pages are already mapped, so a GET's body is copied once, from the
//! HTTP client's buffers into the block, and nothing else touches it.

use std::sync::{Arc, Mutex, Weak};

use bytes::Bytes;

/// Free buffers of `block` bytes' capacity, at most `keep` of them.
#[derive(Debug)]
pub struct BlockPool {
    block: usize,
    keep: usize,
    free: Mutex<Vec<Vec<u8>>>,
}

/// A filled buffer held by the cache as `Bytes`; back to its pool when the last `Bytes`
/// of it goes.
struct PooledBlock {
    bytes: Vec<u8>,
    pool: Weak<BlockPool>,
}

impl AsRef<[u8]> for PooledBlock {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for PooledBlock {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.upgrade() {
            pool.give_back(std::mem::take(&mut self.bytes));
        }
    }
}

impl BlockPool {
    /// A pool of `block`-byte buffers keeping at most `keep` free ones (beyond that a
    /// returned buffer is freed: the cache's bound, not the pool's, is what memory is
    /// sized by).
    pub fn new(block: usize, keep: usize) -> Arc<Self> {
        Arc::new(BlockPool {
            block,
            keep,
            free: Mutex::new(Vec::new()),
        })
    }

    pub fn block_size(&self) -> usize {
        self.block
    }

    /// An empty buffer of `block` bytes' capacity: a returned one when there is one.
    pub fn take(&self) -> Vec<u8> {
        let reused = self.free.lock().expect("block pool lock").pop();
        reused.unwrap_or_else(|| Vec::with_capacity(self.block))
    }

    /// `bytes` (from `take`) as a block; its buffer comes back here when the block goes.
    pub fn seal(self: &Arc<Self>, bytes: Vec<u8>) -> Bytes {
        Bytes::from_owner(PooledBlock {
            bytes,
            pool: Arc::downgrade(self),
        })
    }

    fn give_back(&self, mut bytes: Vec<u8>) {
        if bytes.capacity() != self.block {
            return;
        }
        bytes.clear();
        let mut free = self.free.lock().expect("block pool lock");
        if free.len() < self.keep {
            free.push(bytes);
        }
    }

    /// Free buffers held now.
    pub fn free_buffers(&self) -> usize {
        self.free.lock().expect("block pool lock").len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_block_gives_its_buffer_to_the_next_take() {
        let pool = BlockPool::new(4096, 2);
        let mut bytes = pool.take();
        bytes.extend_from_slice(b"record");
        let address = bytes.as_ptr();
        let block = pool.seal(bytes);
        let slice = block.slice(1..3);
        drop(block);
        assert_eq!(pool.free_buffers(), 0, "a slice still holds the buffer");
        assert_eq!(&slice[..], b"ec");
        drop(slice);
        assert_eq!(pool.free_buffers(), 1);
        let again = pool.take();
        assert_eq!(again.as_ptr(), address, "the same buffer, reused");
        assert!(again.is_empty() && again.capacity() == 4096);
    }

    #[test]
    fn the_pool_keeps_at_most_its_bound() {
        let pool = BlockPool::new(64, 1);
        let blocks: Vec<Bytes> = (0..3).map(|_| pool.seal(pool.take())).collect();
        drop(blocks);
        assert_eq!(pool.free_buffers(), 1);
        let other = pool.seal(Vec::with_capacity(10));
        drop(other);
        assert_eq!(
            pool.free_buffers(),
            1,
            "a buffer of another size is not kept"
        );
    }
}
