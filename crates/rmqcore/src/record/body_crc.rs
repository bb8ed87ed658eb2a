//! RocketMQ's body checksum (format §1.5): CRC-32/IEEE, as zlib and `java.util.zip.CRC32`
//! compute it, masked to 31 bits so that Java stores it as a non-negative int.

pub fn body_crc(body: &[u8]) -> i32 {
    masked_crc(body_crc32(body))
}

/// The CRC-32 before masking: what the record CRC is extended from (`crc_shift`).
pub fn body_crc32(body: &[u8]) -> u32 {
    crc32(body)
}

/// CRC-32/IEEE of `bytes`.
pub fn crc32(bytes: &[u8]) -> u32 {
    if let Some(crc) = crc32_clmul_update(0, bytes) {
        return crc;
    }
    // `crc32fast::hash` detects the CPU's features on every call (about 40 instructions,
    // twice per record written); this clones a hasher that detected them once.
    static DETECTED: std::sync::OnceLock<crc32fast::Hasher> = std::sync::OnceLock::new();
    let mut hasher = DETECTED.get_or_init(crc32fast::Hasher::new).clone();
    hasher.update(bytes);
    hasher.finalize()
}

/// The CRC-32/IEEE of the bytes whose CRC is `crc` followed by `bytes`.
pub fn crc32_update(crc: u32, bytes: &[u8]) -> u32 {
    if let Some(crc) = crc32_clmul_update(crc, bytes) {
        return crc;
    }
    let mut hasher = crc32fast::Hasher::new_with_initial(crc);
    hasher.update(bytes);
    hasher.finalize()
}

/// Whether `crc32` takes the 512-bit carry-less multiply on this CPU (from 64 bytes):
/// what is cheaper than re-reading bytes depends on it.
pub(crate) fn crc32_is_wide() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        crate::record::crc32_clmul::available()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The 512-bit carry-less multiply's CRC where the CPU has it and `bytes` are long enough
/// for it to pay (at 100 B it takes about two thirds of crc32fast's time, at 1 KiB half:
/// crc32fast folds 128 bits at a time below 2 KiB).
#[cfg(target_arch = "x86_64")]
fn crc32_clmul_update(crc: u32, bytes: &[u8]) -> Option<u32> {
    use crate::record::crc32_clmul::{available, crc32_update, MIN_LENGTH};
    if bytes.len() >= MIN_LENGTH && available() {
        // SAFETY: the CPU has the features (`available`) and the length is checked.
        Some(unsafe { crc32_update(crc, bytes) })
    } else {
        None
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn crc32_clmul_update(_crc: u32, _bytes: &[u8]) -> Option<u32> {
    None
}

pub fn masked_crc(crc32: u32) -> i32 {
    i32::try_from(crc32 & 0x7FFF_FFFF).expect("masked to 31 bits")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_format_test_vectors() {
        assert_eq!(body_crc(b""), 0);
        assert_eq!(body_crc(b"123456789"), 0x4BF4_3926);
        assert_eq!(body_crc(b"Hello RocketMQ"), 1_774_740_973);
        let long: Vec<u8> = (0..5000u32).map(|n| (n * 31) as u8).collect();
        assert_eq!(crc32(&long), crc32fast::hash(&long));
    }

    proptest::proptest! {
        // Every length the kernels split differently (under 64 bytes, one to three
        // registers, four-register steps, 1..15 trailing bytes), at every alignment.
        #[test]
        fn equals_crc32fast_at_any_length_and_alignment(
            seed in proptest::prelude::any::<u64>(),
            length in 0usize..10_000,
            start in 0usize..64,
            initial in proptest::prelude::any::<u32>(),
        ) {
            let mut state = seed | 1;
            let buffer: Vec<u8> = (0..length + start)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state as u8
                })
                .collect();
            let bytes = &buffer[start..];
            proptest::prop_assert_eq!(crc32(bytes), crc32fast::hash(bytes));
            let mut expected = crc32fast::Hasher::new_with_initial(initial);
            expected.update(bytes);
            proptest::prop_assert_eq!(crc32_update(initial, bytes), expected.finalize());
        }
    }
}
