//! A ranged GET of an object the tier recorded, checked against that record (its size
//! and the CRC32 kept with it as metadata) before its body is read, and the body cut into
//! the block cache's blocks as it arrives, slices of the HTTP client's own buffers.

use bytes::Bytes;
use object_store::aws::AmazonS3;
use object_store::path::Path as ObjectPath;
use object_store::{Attribute, Attributes, GetOptions, GetResult, ObjectStore};
use std::ops::Range;

use super::block_cache::{BufferId, FetchedBlock};

/// The metadata key holding a segment's CRC32 (lowercase hex).
pub(super) const CRC_METADATA: &str = "rmq-crc32";

/// The CRC32 an upload recorded in the object's metadata; None for an object rmq did not
/// write.
pub(super) fn recorded_crc(attributes: &Attributes) -> Option<u32> {
    attributes
        .get(&Attribute::Metadata(CRC_METADATA.into()))
        .and_then(|value| u32::from_str_radix(value.as_ref(), 16).ok())
}

/// What `get_checked` found: the answer to read the body from, or why the object is not
/// the one recorded.
pub(super) type Checked<T> =
    std::result::Result<std::result::Result<T, String>, object_store::Error>;

/// One ranged GET of a recorded object, checked against its record before its body is
/// read: Ok(Err(why)) when the object is gone or its size or CRC32 (as the GET answers
/// them) is not the one recorded at upload.
pub(super) async fn get_checked(
    store: &AmazonS3,
    object: &ObjectPath,
    range: Range<u64>,
    size: u64,
    crc32: u32,
) -> Checked<GetResult> {
    let options = GetOptions {
        range: Some(range.into()),
        ..GetOptions::default()
    };
    let result = match store.get_opts(object, options).await {
        Ok(result) => result,
        Err(object_store::Error::NotFound { .. }) => {
            return Ok(Err(
                "it is gone from the bucket (deleted behind the store's back)".into(),
            ))
        }
        Err(error) => return Err(error),
    };
    let found_size = result.meta.size;
    let found_crc = recorded_crc(&result.attributes);
    if found_size != size || found_crc != Some(crc32) {
        return Ok(Err(format!(
            "it was uploaded as {size} bytes with CRC32 {crc32:08x}; the bucket now has \
             {found_size} bytes with CRC32 {}",
            found_crc.map_or("(none recorded)".into(), |c| format!("{c:08x}"))
        )));
    }
    Ok(Ok(result))
}

/// `get_checked`, then its body cut into `block`-byte blocks as it arrives.
pub(super) async fn get_blocks(
    store: &AmazonS3,
    object: &ObjectPath,
    range: Range<u64>,
    (size, crc32): (u64, u32),
    block: usize,
) -> Checked<Vec<FetchedBlock>> {
    match get_checked(store, object, range, size, crc32).await? {
        Ok(result) => collect_blocks(result.into_stream(), block).await.map(Ok),
        Err(reason) => Ok(Err(reason)),
    }
}

/// A GET's body, as it arrives, cut into `block`-byte blocks (the last shorter at the
/// body's end). A block inside one piece of the body as the HTTP client hands it over
/// (a slice of the buffer the socket was read into) is a slice of that piece: no copy.
/// Only a block crossing from one piece into the next is copied, into its own buffer.
///
/// Why: copying every fetched byte into blocks was 29 % of a one-queue tier read's
/// instructions (callgrind); the pieces are far larger than a block on a loopback
/// connection, so few blocks cross one. Each block names the piece it keeps alive
/// (`FetchedBlock::buffer`), so that the cache counts a piece's bytes for as long as any
/// block of it is cached, not just the block's own.
pub async fn collect_blocks<S, E>(mut body: S, block: usize) -> Result<Vec<FetchedBlock>, E>
where
    S: futures::Stream<Item = Result<Bytes, E>> + Unpin,
{
    use futures::StreamExt;
    let mut blocks = Vec::new();
    // The start of a block that the last piece ended in, not copied yet: it is sliced
    // if the body ends there, copied if the next piece carries the rest of it.
    let mut tail: Option<(Bytes, BufferId)> = None;
    // A block crossing pieces, being copied.
    let mut crossing: Vec<u8> = Vec::new();
    while let Some(piece) = body.next().await {
        let mut rest = piece?;
        let buffer = BufferId::new(rest.len() as u64);
        if let Some((head, _)) = tail.take() {
            crossing.reserve_exact(block);
            crossing.extend_from_slice(&head);
        }
        if !crossing.is_empty() {
            let take = (block - crossing.len()).min(rest.len());
            crossing.extend_from_slice(&rest.split_to(take));
            if crossing.len() < block {
                continue;
            }
            blocks.push(FetchedBlock::copied(std::mem::take(&mut crossing)));
        }
        while rest.len() >= block {
            blocks.push(FetchedBlock {
                bytes: rest.split_to(block),
                buffer,
            });
        }
        if !rest.is_empty() {
            tail = Some((rest, buffer));
        }
    }
    if let Some((bytes, buffer)) = tail {
        blocks.push(FetchedBlock { bytes, buffer });
    } else if !crossing.is_empty() {
        blocks.push(FetchedBlock::copied(crossing));
    }
    Ok(blocks)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(
        pieces: Vec<Result<Bytes, &'static str>>,
        block: usize,
    ) -> Result<Vec<FetchedBlock>, &'static str> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(collect_blocks(futures::stream::iter(pieces), block))
    }

    #[test]
    fn a_body_is_cut_into_blocks_whatever_its_pieces() {
        let body: Vec<u8> = (0..20_000u32).map(|i| i as u8).collect();
        let ranges = [
            0..1,
            1..4000,
            4000..4096,
            4096..9999,
            9999..10_000,
            10_000..20_000,
        ];
        let pieces: Vec<Bytes> = ranges
            .iter()
            .map(|range| Bytes::copy_from_slice(&body[range.clone()]))
            .collect();
        let blocks = collect(pieces.iter().cloned().map(Ok).collect(), 4096).unwrap();
        let lengths: Vec<usize> = blocks.iter().map(|b| b.bytes.len()).collect();
        assert_eq!(lengths, vec![4096, 4096, 4096, 4096, 20_000 - 4 * 4096]);
        let joined: Vec<u8> = blocks.iter().flat_map(|b| b.bytes.to_vec()).collect();
        assert_eq!(joined, body);
        // Blocks 2 and 3 (8192..16384) lie inside the last piece (10000..20000)? Only
        // 12288..16384 does: it is a slice of that piece, not a copy.
        let last_piece = &pieces[5];
        let inside = |b: &FetchedBlock| {
            let start = last_piece.as_ptr() as usize;
            let at = b.bytes.as_ptr() as usize;
            at >= start && at < start + last_piece.len()
        };
        assert!(!inside(&blocks[2]), "8192..12288 crosses pieces: copied");
        assert!(
            inside(&blocks[3]) && inside(&blocks[4]),
            "sliced, not copied"
        );
        assert_eq!(
            blocks[3].buffer, blocks[4].buffer,
            "both keep the same piece alive"
        );
        assert_eq!(blocks[3].buffer.bytes, 10_000);
        assert_eq!(blocks[2].buffer.bytes, 4096, "a copy is its own buffer");
        assert_ne!(blocks[0].buffer, blocks[1].buffer);
    }

    #[test]
    fn a_body_cut_short_is_an_error_not_fewer_blocks() {
        let failed = vec![Ok(Bytes::from_static(b"x")), Err("cut")];
        assert!(matches!(collect(failed, 4096), Err("cut")));
        let one = collect(vec![Ok(Bytes::from_static(b"abc"))], 4096).unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(&one[0].bytes[..], b"abc");
    }
}
