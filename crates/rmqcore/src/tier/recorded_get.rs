//! A ranged GET of an object the tier recorded, checked against that record (its size
//! and the CRC32 kept with it as metadata) before its body is read, and the body cut into
//! the block cache's pieces as it arrives, each filling a reused buffer (`block_pool.rs`).

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use object_store::aws::AmazonS3;
use object_store::path::Path as ObjectPath;
use object_store::{Attribute, Attributes, GetOptions, GetResult, ObjectStore};

use super::block_pool::BlockPool;

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

/// `get_checked`, then its body cut into the pool's blocks as it arrives.
pub(super) async fn get_blocks(
    store: &AmazonS3,
    object: &ObjectPath,
    range: Range<u64>,
    (size, crc32): (u64, u32),
    pool: &Arc<BlockPool>,
) -> Checked<Vec<Bytes>> {
    match get_checked(store, object, range, size, crc32).await? {
        Ok(result) => collect_blocks(result.into_stream(), pool).await.map(Ok),
        Err(reason) => Ok(Err(reason)),
    }
}

/// A GET's body, as it arrives, cut into the pool's block-sized pieces, each its own
/// buffer (the last shorter at the body's end): each byte is copied once, from the HTTP
/// client's buffers into the piece that keeps it, a buffer taken from the pool (no page
/// faults nor zeroing when one is reused). A piece never shares a buffer with another,
/// so the cache's bound counts what it holds (a slice of one large buffer would keep all
/// of it alive for as long as any one block is cached).
pub async fn collect_blocks<S, E>(mut body: S, pool: &Arc<BlockPool>) -> Result<Vec<Bytes>, E>
where
    S: futures::Stream<Item = Result<Bytes, E>> + Unpin,
{
    use futures::StreamExt;
    let block = pool.block_size();
    let mut blocks = Vec::new();
    let mut current: Vec<u8> = pool.take();
    while let Some(chunk) = body.next().await {
        let chunk = chunk?;
        let mut rest = &chunk[..];
        while !rest.is_empty() {
            let take = (block - current.len()).min(rest.len());
            current.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            if current.len() == block {
                let full = std::mem::replace(&mut current, pool.take());
                blocks.push(pool.seal(full));
            }
        }
    }
    if !current.is_empty() {
        blocks.push(pool.seal(current));
    }
    Ok(blocks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_is_cut_into_blocks_whatever_its_chunks() {
        let body: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
        let chunks: Vec<Result<Bytes, ()>> = [0..1, 1..4000, 4000..4096, 4096..9999, 9999..10_000]
            .into_iter()
            .map(|range| Ok(Bytes::copy_from_slice(&body[range])))
            .collect();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let pool = BlockPool::new(4096, 8);
        let blocks = runtime
            .block_on(collect_blocks(futures::stream::iter(chunks), &pool))
            .unwrap();
        let lengths: Vec<usize> = blocks.iter().map(Bytes::len).collect();
        assert_eq!(lengths, vec![4096, 4096, 10_000 - 8192]);
        assert_eq!(blocks.concat(), body);
        let failed: Vec<Result<Bytes, &str>> = vec![Ok(Bytes::from_static(b"x")), Err("cut")];
        let outcome = runtime.block_on(collect_blocks(futures::stream::iter(failed), &pool));
        assert_eq!(
            outcome,
            Err("cut"),
            "a body cut short is an error, not fewer blocks"
        );
    }
}
