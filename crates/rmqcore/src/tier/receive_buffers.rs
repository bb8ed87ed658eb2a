//! The buffers a tier GET's body is copied into as it arrives, kept and reused once the
//! block cache lets go of every block sliced from one.
//!
//! The HTTP client reads the socket into buffers it allocates as it goes; kept as cache
//! blocks, every fetched page was fresh memory, faulted in by the kernel (31k page faults
//! for 135 MB fetched, most of the receiving thread's CPU beside the socket copy). Copied
//! out at once, the client's buffer is free again for its next read, and the copy lands
//! in a buffer whose pages are already mapped once the cache, full, gives buffers back.
//! (Transparent huge pages for new buffers cost more than they saved on this machine's
//! VM: fresh huge pages were zeroed at 41 % of the process's CPU samples, perf.)

use std::sync::{Arc, Mutex};

use bytes::Bytes;

/// Bytes per pooled buffer: a whole number of cache blocks (32 of 64 KiB).
pub const RECEIVE_BUFFER_BYTES: usize = 2 << 20;

/// Free buffers kept for the next GETs (16 MiB): two GETs of 8 MiB in flight at once,
/// filled while the cache gives back what their blocks push out. Buffers given back
/// beyond this are freed.
const KEPT_FREE: usize = 8;

/// A new pooled buffer, its pages mapped in one call (`MADV_POPULATE_WRITE`) rather than
/// faulted in one by one as the body's copy reaches them.
fn new_pooled_buffer() -> Vec<u8> {
    let buffer: Vec<u8> = Vec::with_capacity(RECEIVE_BUFFER_BYTES);
    #[cfg(target_os = "linux")]
    {
        let page = 4096usize;
        let start = (buffer.as_ptr() as usize).div_ceil(page) * page;
        let end = (buffer.as_ptr() as usize + RECEIVE_BUFFER_BYTES) / page * page;
        if end > start {
            // A hint only: on a kernel without it the pages fault in as before. Safe: the
            // range lies within the buffer's own allocation, and populating keeps what
            // its pages hold.
            unsafe {
                libc::madvise(
                    start as *mut libc::c_void,
                    end - start,
                    libc::MADV_POPULATE_WRITE,
                )
            };
        }
    }
    buffer
}

/// The free buffers, shared by a tier's GETs.
#[derive(Debug, Default)]
pub struct ReceiveBuffers {
    free: Mutex<Vec<Vec<u8>>>,
}

impl ReceiveBuffers {
    pub fn new() -> Arc<Self> {
        Arc::new(ReceiveBuffers::default())
    }

    /// An empty buffer to copy up to `expected` more bytes of a body into: a pooled one
    /// when they fill at least half of it, else one of its own, `expected` rounded up to
    /// whole `block`s (so that every buffer but a body's last holds whole blocks).
    pub fn filling(self: &Arc<Self>, expected: u64, block: usize) -> Filling {
        let block = block.max(1);
        let pooled = RECEIVE_BUFFER_BYTES.is_multiple_of(block)
            && expected >= (RECEIVE_BUFFER_BYTES / 2) as u64;
        if pooled {
            let kept = self.free.lock().unwrap_or_else(|e| e.into_inner()).pop();
            return Filling {
                bytes: kept.unwrap_or_else(new_pooled_buffer),
                pool: Some(Arc::clone(self)),
            };
        }
        let expected = usize::try_from(expected).unwrap_or(usize::MAX);
        let capacity = expected.div_ceil(block).max(1).saturating_mul(block);
        Filling {
            bytes: Vec::with_capacity(capacity),
            pool: None,
        }
    }

    fn give_back(&self, mut buffer: Vec<u8>) {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        if free.len() < KEPT_FREE {
            buffer.clear();
            free.push(buffer);
        }
    }

    #[cfg(test)]
    pub fn free_buffers(&self) -> usize {
        self.free.lock().unwrap().len()
    }
}

/// A buffer being filled with a body's bytes; never grown past its first capacity.
#[derive(Debug)]
pub struct Filling {
    bytes: Vec<u8>,
    /// Where it goes back to once no slice of it is left; None for one of its own.
    pool: Option<Arc<ReceiveBuffers>>,
}

impl Filling {
    pub fn capacity(&self) -> usize {
        self.bytes.capacity()
    }

    pub fn is_full(&self) -> bool {
        self.bytes.len() == self.bytes.capacity()
    }

    /// Copy as much of `bytes` as there is room for; how many bytes that was.
    pub fn push(&mut self, bytes: &[u8]) -> usize {
        let n = bytes.len().min(self.bytes.capacity() - self.bytes.len());
        self.bytes.extend_from_slice(&bytes[..n]);
        n
    }

    /// The bytes copied so far, shared; a pooled buffer goes back to its pool when the
    /// last slice of them is dropped.
    pub fn freeze(self) -> Bytes {
        match self.pool {
            Some(pool) => Bytes::from_owner(Filled {
                bytes: self.bytes,
                pool,
            }),
            None => Bytes::from(self.bytes),
        }
    }
}

/// A pooled buffer's filled bytes, owned by the `Bytes` sliced from them.
struct Filled {
    bytes: Vec<u8>,
    pool: Arc<ReceiveBuffers>,
}

impl AsRef<[u8]> for Filled {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for Filled {
    fn drop(&mut self) {
        self.pool.give_back(std::mem::take(&mut self.bytes));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pooled_buffer_is_reused_once_every_slice_of_it_is_dropped() {
        let pool = ReceiveBuffers::new();
        let mut filling = pool.filling(8 << 20, 64 << 10);
        assert_eq!(filling.capacity(), RECEIVE_BUFFER_BYTES);
        assert_eq!(filling.push(b"abc"), 3);
        let bytes = filling.freeze();
        let slice = bytes.slice(1..3);
        assert_eq!(&slice[..], b"bc");
        let at = bytes.as_ptr();
        drop(bytes);
        assert_eq!(pool.free_buffers(), 0, "a slice still holds it");
        drop(slice);
        assert_eq!(pool.free_buffers(), 1);
        let mut again = pool.filling(RECEIVE_BUFFER_BYTES as u64, 64 << 10);
        assert_eq!(pool.free_buffers(), 0);
        again.push(b"xyz");
        let bytes = again.freeze();
        assert_eq!(bytes.as_ptr(), at, "the same buffer");
        assert_eq!(&bytes[..], b"xyz");
    }

    #[test]
    fn a_pooled_buffer_fills_to_its_capacity_and_no_further() {
        let pool = ReceiveBuffers::new();
        let mut filling = pool.filling(u64::MAX, 4096);
        let data = vec![5u8; RECEIVE_BUFFER_BYTES + 10];
        assert_eq!(filling.push(&data), RECEIVE_BUFFER_BYTES);
        assert!(filling.is_full());
        assert_eq!(filling.push(&data), 0);
        assert_eq!(filling.freeze().len(), RECEIVE_BUFFER_BYTES);
    }

    #[test]
    fn a_small_body_gets_a_buffer_of_its_own_in_whole_blocks() {
        let pool = ReceiveBuffers::new();
        let small = pool.filling(5000, 4096);
        assert_eq!(small.capacity(), 8192);
        assert_eq!(pool.filling(0, 4096).capacity(), 4096);
        // A block size that does not divide the pooled buffer is never pooled.
        assert_eq!(pool.filling(8 << 20, 3000).capacity(), 2797 * 3000);
        drop(small.freeze());
        assert_eq!(pool.free_buffers(), 0);
    }

    #[test]
    fn the_pool_keeps_a_bounded_number_of_free_buffers() {
        let pool = ReceiveBuffers::new();
        let held: Vec<Bytes> = (0..KEPT_FREE + 3)
            .map(|_| pool.filling(u64::MAX, 4096).freeze())
            .collect();
        drop(held);
        assert_eq!(pool.free_buffers(), KEPT_FREE);
    }
}
