//! A ranged GET of an object the tier recorded, checked against that record (its size
//! and the CRC32 kept with it as metadata) before its body is read, and the body cut into
//! the block cache's blocks as it arrives, slices of the HTTP client's own buffers.

use bytes::Bytes;
use object_store::aws::AmazonS3;
use object_store::path::Path as ObjectPath;
use object_store::{Attribute, Attributes, GetOptions, GetResult, ObjectStore};
use std::ops::Range;

use super::cached_block::{BufferId, FetchedBlock};

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
        // A range past the end of an object truncated behind the store's back (a
        // grouped object's footer is its last bytes) is refused outright: the object's
        // size tells whether it is still the one recorded. (A server out of reach is
        // not asked again.)
        Err(error) if super::object_errors::could_not_reach(&error) => return Err(error),
        Err(error) => {
            return match store.head(object).await {
                Ok(meta) if meta.size != size => Ok(Err(format!(
                    "it was uploaded as {size} bytes; the bucket now has {} bytes",
                    meta.size
                ))),
                _ => Err(error),
            }
        }
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
/// body's end), as slices of the pieces the HTTP client hands over (each a slice of the
/// buffer it read the socket into): a block inside one piece is one slice of it, a block
/// crossing into the next piece is two (`cached_block.rs`); no byte is copied, but for a
/// block spread over three or more pieces, copied into its own buffer. Each block names
/// the pieces it keeps alive, so that the cache counts a piece's bytes for as long as
/// any block of it is cached, not just the block's own.
pub async fn collect_blocks<S, E>(mut body: S, block: usize) -> Result<Vec<FetchedBlock>, E>
where
    S: futures::Stream<Item = Result<Bytes, E>> + Unpin,
{
    use futures::StreamExt;
    let mut blocks = Vec::new();
    // The start of a block that the pieces so far ended in.
    let mut partial: Option<(Bytes, BufferId)> = None;
    while let Some(piece) = body.next().await {
        let mut rest = piece?;
        let buffer = BufferId::new(rest.len() as u64);
        if let Some((head, head_buffer)) = partial.take() {
            let need = block - head.len();
            if rest.len() < need {
                // This piece does not finish the block either: copy what there is.
                let mut joined = Vec::with_capacity(block);
                joined.extend_from_slice(&head);
                joined.extend_from_slice(&rest);
                let len = joined.len() as u64;
                partial = Some((Bytes::from(joined), BufferId::new(len)));
                continue;
            }
            let tail = rest.split_to(need);
            blocks.push(FetchedBlock::across((head, head_buffer), (tail, buffer)));
        }
        while rest.len() >= block {
            blocks.push(FetchedBlock::within(rest.split_to(block), buffer));
        }
        if !rest.is_empty() {
            partial = Some((rest, buffer));
        }
    }
    if let Some((bytes, buffer)) = partial {
        blocks.push(FetchedBlock::within(bytes, buffer));
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
        let lengths: Vec<usize> = blocks.iter().map(FetchedBlock::len).collect();
        assert_eq!(lengths, vec![4096, 4096, 4096, 4096, 20_000 - 4 * 4096]);
        let mut joined = Vec::new();
        for block in &blocks {
            block.block.extend_into(0, block.len(), &mut joined);
        }
        assert_eq!(joined, body);
        // Block 0 starts in two pieces too small to finish it (copied, 4,000 bytes) and
        // ends in a third (sliced); block 2 likewise (1,807 + 1 bytes copied, then the
        // last piece); blocks 1, 3 and 4 lie within one piece each.
        let sizes = |b: &FetchedBlock| (b.buffers.0.bytes, b.buffers.1.map(|t| t.bytes));
        assert_eq!(sizes(&blocks[0]), (4000, Some(96)));
        assert_eq!(sizes(&blocks[1]), (5903, None));
        assert_eq!(sizes(&blocks[2]), (1808, Some(10_000)));
        assert_eq!(sizes(&blocks[3]), (10_000, None));
        let last = &pieces[5];
        let in_last = |bytes: &Bytes| {
            let start = last.as_ptr() as usize;
            let at = bytes.as_ptr() as usize;
            at >= start && at < start + last.len()
        };
        assert!(in_last(&blocks[3].block.slice_in_part(0, 4096)), "a slice");
        assert_eq!(blocks[2].buffers.1, Some(blocks[3].buffers.0), "one piece");
        assert_eq!(
            blocks[3].buffers.0, blocks[4].buffers.0,
            "one piece, two blocks"
        );
    }

    #[test]
    fn a_block_crossing_two_pieces_is_two_slices() {
        let body: Vec<u8> = (0..10_000u32).map(|i| (i * 7) as u8).collect();
        let pieces = vec![
            Ok(Bytes::copy_from_slice(&body[..6000])),
            Ok(Bytes::copy_from_slice(&body[6000..])),
        ];
        let blocks = collect(pieces, 4096).unwrap();
        assert_eq!(blocks.len(), 3);
        let (head, tail) = blocks[1].buffers;
        assert_eq!((head.bytes, tail.map(|t| t.bytes)), (6000, Some(4000)));
        let part = blocks[1].block.slice_in_part(100, 4096);
        assert_eq!(
            &part[..],
            &body[4196..6000],
            "the head's slice, up to its end"
        );
        assert_eq!(
            blocks[2].buffers.0,
            tail.unwrap(),
            "block 2 keeps the tail's piece"
        );
    }

    #[test]
    fn a_body_cut_short_is_an_error_not_fewer_blocks() {
        let failed = vec![Ok(Bytes::from_static(b"x")), Err("cut")];
        assert!(matches!(collect(failed, 4096), Err("cut")));
        let one = collect(vec![Ok(Bytes::from_static(b"abc"))], 4096).unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(&one[0].block.slice_in_part(0, 3)[..], b"abc");
    }
}
