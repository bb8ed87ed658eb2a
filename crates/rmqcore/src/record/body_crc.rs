//! RocketMQ's body checksum (format §1.5): CRC-32/IEEE, as zlib and `java.util.zip.CRC32`
//! compute it, masked to 31 bits so that Java stores it as a non-negative int.

pub fn body_crc(body: &[u8]) -> i32 {
    masked_crc(body_crc32(body))
}

/// The CRC-32 before masking: what the record CRC is extended from (`crc_shift`).
pub fn body_crc32(body: &[u8]) -> u32 {
    crc32(body)
}

/// CRC-32/IEEE of `bytes`. `crc32fast::hash` detects the CPU's features on every call
/// (about 40 instructions, twice per record written); this clones a hasher that detected
/// them once.
pub fn crc32(bytes: &[u8]) -> u32 {
    static DETECTED: std::sync::OnceLock<crc32fast::Hasher> = std::sync::OnceLock::new();
    let mut hasher = DETECTED.get_or_init(crc32fast::Hasher::new).clone();
    hasher.update(bytes);
    hasher.finalize()
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
}
