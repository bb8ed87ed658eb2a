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
            return Filling::new(
                kept.unwrap_or_else(new_pooled_buffer),
                Some(Arc::clone(self)),
            );
        }
        let expected = usize::try_from(expected).unwrap_or(usize::MAX);
        let capacity = expected.div_ceil(block).max(1).saturating_mul(block);
        Filling::new(Vec::with_capacity(capacity), None)
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

/// A buffer being filled with a body's bytes; never grown past its first capacity. The
/// bytes filled so far can be handed out as shared slices while the rest is still being
/// filled (`take_filled`), so that a reader waiting for one block of a large GET waits for
/// that block, not for the whole buffer holding it.
#[derive(Debug)]
pub struct Filling {
    memory: Arc<Memory>,
    /// Bytes written from the buffer's start.
    filled: usize,
    /// Bytes handed out as slices from the buffer's start (`<= filled`), never written again.
    handed: usize,
}

impl Filling {
    fn new(bytes: Vec<u8>, pool: Option<Arc<ReceiveBuffers>>) -> Self {
        let mut bytes = std::mem::ManuallyDrop::new(bytes);
        Filling {
            memory: Arc::new(Memory {
                base: bytes.as_mut_ptr(),
                capacity: bytes.capacity(),
                pool,
            }),
            filled: 0,
            handed: 0,
        }
    }

    pub fn capacity(&self) -> usize {
        self.memory.capacity
    }

    pub fn is_full(&self) -> bool {
        self.filled == self.memory.capacity
    }

    /// Copy as much of `bytes` as there is room for; how many bytes that was.
    pub fn push(&mut self, bytes: &[u8]) -> usize {
        let n = bytes.len().min(self.memory.capacity - self.filled);
        // Safe: `filled + n` is within the allocation, and no slice handed out reaches
        // past `handed <= filled`, so nothing reads the bytes written here.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.memory.base.add(self.filled), n);
        }
        self.filled += n;
        n
    }

    /// The bytes filled since the last call, up to the last multiple of `unit` bytes from
    /// the buffer's start (all of them when `unit` is 0), as one shared slice of the
    /// buffer; None when there are none. The buffer goes back to its pool once the filling
    /// and every slice of it are dropped.
    pub fn take_filled(&mut self, unit: usize) -> Option<Bytes> {
        let upto = match unit {
            0 => self.filled,
            unit => self.filled / unit * unit,
        };
        if upto <= self.handed {
            return None;
        }
        let slice = Slice {
            memory: Arc::clone(&self.memory),
            start: self.handed,
            len: upto - self.handed,
        };
        self.handed = upto;
        Some(Bytes::from_owner(slice))
    }
}

/// A buffer's allocation, shared by the filling and the slices handed out of it.
#[derive(Debug)]
struct Memory {
    base: *mut u8,
    capacity: usize,
    /// Where it goes back to once nothing holds it; None for one of its own.
    pool: Option<Arc<ReceiveBuffers>>,
}

// Safe: the allocation is owned by `Memory` alone; its one writer (the `Filling`) writes
// only bytes no slice covers, and each slice's bytes were written before the slice was
// made and are never written again.
unsafe impl Send for Memory {}
unsafe impl Sync for Memory {}

impl Drop for Memory {
    fn drop(&mut self) {
        // Safe: `base` and `capacity` are a `Vec<u8>`'s, taken apart in `Filling::new`.
        let buffer = unsafe { Vec::from_raw_parts(self.base, 0, self.capacity) };
        if let Some(pool) = &self.pool {
            pool.give_back(buffer);
        }
    }
}

/// Filled bytes of a buffer, owned by the `Bytes` sliced from them.
struct Slice {
    memory: Arc<Memory>,
    start: usize,
    len: usize,
}

impl AsRef<[u8]> for Slice {
    fn as_ref(&self) -> &[u8] {
        // Safe: within the allocation, written before the slice was made, and never
        // written again (`Filling::take_filled`).
        unsafe { std::slice::from_raw_parts(self.memory.base.add(self.start), self.len) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// All a filling's bytes filled so far, as one slice.
    fn filled(filling: &mut Filling) -> Bytes {
        filling.take_filled(0).unwrap_or_default()
    }

    #[test]
    fn a_pooled_buffer_is_reused_once_the_filling_and_every_slice_of_it_are_dropped() {
        let pool = ReceiveBuffers::new();
        let mut filling = pool.filling(8 << 20, 64 << 10);
        assert_eq!(filling.capacity(), RECEIVE_BUFFER_BYTES);
        assert_eq!(filling.push(b"abc"), 3);
        let bytes = filled(&mut filling);
        let slice = bytes.slice(1..3);
        assert_eq!(&slice[..], b"bc");
        let at = bytes.as_ptr();
        drop(bytes);
        drop(filling);
        assert_eq!(pool.free_buffers(), 0, "a slice still holds it");
        drop(slice);
        assert_eq!(pool.free_buffers(), 1);
        let mut again = pool.filling(RECEIVE_BUFFER_BYTES as u64, 64 << 10);
        assert_eq!(pool.free_buffers(), 0);
        again.push(b"xyz");
        let bytes = filled(&mut again);
        assert_eq!(bytes.as_ptr(), at, "the same buffer");
        assert_eq!(&bytes[..], b"xyz");
        drop(bytes);
        assert_eq!(pool.free_buffers(), 0, "the filling still holds it");
        drop(again);
        assert_eq!(pool.free_buffers(), 1);
    }

    #[test]
    fn filled_bytes_are_handed_out_in_whole_units_while_the_rest_fills() {
        let pool = ReceiveBuffers::new();
        let mut filling = pool.filling(8 << 20, 4096);
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        filling.push(&data[..4000]);
        assert!(filling.take_filled(4096).is_none(), "no whole unit yet");
        filling.push(&data[4000..6000]);
        let first = filling.take_filled(4096).unwrap();
        assert_eq!(&first[..], &data[..4096]);
        assert!(filling.take_filled(4096).is_none(), "handed once");
        filling.push(&data[6000..]);
        let second = filling.take_filled(4096).unwrap();
        assert_eq!(&second[..], &data[4096..8192]);
        // The bytes written after a slice was handed out leave it as it was.
        assert_eq!(&first[..], &data[..4096]);
        let rest = filled(&mut filling);
        assert_eq!(&rest[..], &data[8192..]);
        assert_eq!(second.as_ptr() as usize - first.as_ptr() as usize, 4096);
        assert_eq!(rest.as_ptr() as usize - first.as_ptr() as usize, 8192);
    }

    #[test]
    fn a_pooled_buffer_fills_to_its_capacity_and_no_further() {
        let pool = ReceiveBuffers::new();
        let mut filling = pool.filling(u64::MAX, 4096);
        let data = vec![5u8; RECEIVE_BUFFER_BYTES + 10];
        assert_eq!(filling.push(&data), RECEIVE_BUFFER_BYTES);
        assert!(filling.is_full());
        assert_eq!(filling.push(&data), 0);
        assert_eq!(filled(&mut filling).len(), RECEIVE_BUFFER_BYTES);
    }

    #[test]
    fn a_small_body_gets_a_buffer_of_its_own_in_whole_blocks() {
        let pool = ReceiveBuffers::new();
        let mut small = pool.filling(5000, 4096);
        assert_eq!(small.capacity(), 8192);
        assert_eq!(pool.filling(0, 4096).capacity(), 4096);
        // A block size that does not divide the pooled buffer is never pooled.
        assert_eq!(pool.filling(8 << 20, 3000).capacity(), 2797 * 3000);
        small.push(b"abc");
        drop(filled(&mut small));
        drop(small);
        assert_eq!(pool.free_buffers(), 0);
    }

    #[test]
    fn the_pool_keeps_a_bounded_number_of_free_buffers() {
        let pool = ReceiveBuffers::new();
        let held: Vec<Bytes> = (0..KEPT_FREE + 3)
            .map(|_| {
                let mut filling = pool.filling(u64::MAX, 4096);
                filling.push(b"x");
                filled(&mut filling)
            })
            .collect();
        drop(held);
        assert_eq!(pool.free_buffers(), KEPT_FREE);
    }
}
