//! Inflating what a client compressed (a gzip message body, a gRPC frame compressed with
//! gzip or deflate) with a bound: reading stops one byte past `limit`, so input that
//! inflates without end (a zip bomb) costs no more than the limit before it is refused.

use std::io::Read;

use flate2::read::{MultiGzDecoder, ZlibDecoder};

/// Why compressed bytes were not inflated.
#[derive(Debug)]
pub enum Inflate {
    /// The bytes are not a valid stream of their format.
    Corrupt(std::io::Error),
    /// They inflate to more than the limit.
    TooLarge,
}

/// The inflated bytes of a gzip stream, every member of it (as gzip tools and Python's
/// gzip module read them).
pub fn gunzip(compressed: &[u8], limit: usize) -> Result<Vec<u8>, Inflate> {
    bounded(MultiGzDecoder::new(compressed), limit)
}

/// The inflated bytes of a zlib stream (gRPC's "deflate" encoding).
pub fn unzlib(compressed: &[u8], limit: usize) -> Result<Vec<u8>, Inflate> {
    bounded(ZlibDecoder::new(compressed), limit)
}

fn bounded(reader: impl Read, limit: usize) -> Result<Vec<u8>, Inflate> {
    let bound = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    let mut inflated = Vec::new();
    reader
        .take(bound)
        .read_to_end(&mut inflated)
        .map_err(Inflate::Corrupt)?;
    if inflated.len() > limit {
        return Err(Inflate::TooLarge);
    }
    Ok(inflated)
}
