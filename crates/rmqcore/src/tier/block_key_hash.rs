//! The hash of the block cache's maps: a multiply and a rotate per integer instead of the
//! standard library's SipHash.
//!
//! Why: the cache is looked up once or twice per record a tier reader serves, and SipHash
//! of a (segment, block) key was about 5 % of a one-queue tier read's instructions
//! (callgrind). SipHash guards a map against keys chosen to collide; these keys are
//! segment offsets and block numbers the store itself computes, never a client's input.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// Hashes integers by multiplying with an odd constant (Fibonacci hashing) and folding.
#[derive(Debug, Default, Clone, Copy)]
pub struct BlockKeyHasher {
    hash: u64,
}

const MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;

impl Hasher for BlockKeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.write_u64(u64::from(byte));
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.hash = (self.hash.rotate_left(26) ^ value).wrapping_mul(MULTIPLIER);
    }

    fn finish(&self) -> u64 {
        // The table takes its bucket from the low bits and its tag from the high ones:
        // fold the well-mixed high half into the low.
        self.hash ^ (self.hash >> 32)
    }
}

pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<BlockKeyHasher>>;
pub type FastSet<K> = HashSet<K, BuildHasherDefault<BlockKeyHasher>>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn neighbouring_blocks_spread_over_buckets() {
        let build = BuildHasherDefault::<BlockKeyHasher>::default();
        let buckets: HashSet<u64> = (0..1024u64)
            .map(|index| build.hash_one((64u64 << 20, index)) & 1023)
            .collect();
        assert!(
            buckets.len() > 600,
            "{} of 1024 buckets used",
            buckets.len()
        );
        assert_ne!(build.hash_one((0u64, 1u64)), build.hash_one((1u64, 0u64)));
    }
}
