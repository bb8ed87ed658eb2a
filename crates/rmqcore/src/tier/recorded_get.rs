//! A ranged GET of an object the tier recorded, checked against that record (its size
//! and the CRC32 kept with it as metadata) before its body is read, and the body cut into
//! the block cache's blocks as it arrives, in buffers reused from a pool.

use bytes::Bytes;
use object_store::aws::AmazonS3;
use object_store::path::Path as ObjectPath;
use object_store::{Attribute, Attributes, GetOptions, GetResult, ObjectStore};
use std::ops::Range;
use std::sync::Arc;

use super::cached_block::{BufferId, FetchedBlock};
use super::receive_buffers::{Filling, ReceiveBuffers};

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

/// `get_checked`, then its body copied into receive buffers as it arrives and cut into
/// `block`-byte blocks.
pub(super) async fn get_blocks(
    store: &AmazonS3,
    buffers: &Arc<ReceiveBuffers>,
    object: &ObjectPath,
    range: Range<u64>,
    recorded: (u64, u32),
    block: usize,
) -> Checked<Vec<FetchedBlock>> {
    let mut blocks = Vec::new();
    let checked =
        get_blocks_as_they_arrive(store, buffers, object, range, recorded, block, |arrived| {
            blocks.extend(arrived)
        })
        .await?;
    Ok(checked.map(|()| blocks))
}

/// `get_blocks`, each block handed to `arrived` as soon as it is whole (in the body's
/// order; the last one at the body's end), so that a reader waiting for the first blocks
/// of a large GET need not wait for all of it. What
/// `arrived` was handed is the object's bytes whatever happens to the rest of the body:
/// the GET's answer was checked against the record first, and the HTTP client checks that
/// it answers the range asked for.
pub(super) async fn get_blocks_as_they_arrive(
    store: &AmazonS3,
    buffers: &Arc<ReceiveBuffers>,
    object: &ObjectPath,
    range: Range<u64>,
    (size, crc32): (u64, u32),
    block: usize,
    arrived: impl FnMut(Vec<FetchedBlock>),
) -> Checked<()> {
    let length = range.end - range.start;
    match get_checked(store, object, range, size, crc32).await? {
        Ok(result) => collect_blocks(result.into_stream(), length, block, buffers, arrived)
            .await
            .map(Ok),
        Err(reason) => Ok(Err(reason)),
    }
}

/// A GET's body of about `length` bytes, as it arrives, copied into receive buffers
/// (`receive_buffers.rs`) and cut into `block`-byte blocks (the last shorter at the
/// body's end), each a slice of one buffer: every buffer but the body's last holds whole
/// blocks. Each block is handed to `arrived` as soon as it is whole (those a piece of the
/// body completes together, in one call), not when its whole buffer is: a reader that
/// caught up with a GET waits for its own block, not for the 2 MiB holding it. Each piece
/// the HTTP client hands over is dropped once copied, so that it reads the socket into
/// the same memory again. Each block names its buffer, so that the cache counts the
/// buffer's bytes for as long as any block of it is cached. A body cut short is an
/// error; the part of a block it was filling is dropped.
pub async fn collect_blocks<S, E>(
    mut body: S,
    length: u64,
    block: usize,
    buffers: &Arc<ReceiveBuffers>,
    mut arrived: impl FnMut(Vec<FetchedBlock>),
) -> Result<(), E>
where
    S: futures::Stream<Item = Result<Bytes, E>> + Unpin,
{
    use futures::StreamExt;
    let block = block.max(1);
    let mut remaining = length;
    let mut filling: Option<(Filling, BufferId)> = None;
    while let Some(piece) = body.next().await {
        let piece = piece?;
        let mut rest = &piece[..];
        let mut whole = Vec::new();
        while !rest.is_empty() {
            let (current, buffer) = filling.get_or_insert_with(|| {
                let filling = buffers.filling(remaining, block);
                let buffer = BufferId::new(filling.capacity() as u64);
                (filling, buffer)
            });
            let copied = current.push(rest);
            rest = &rest[copied..];
            remaining = remaining.saturating_sub(copied as u64);
            cut(current.take_filled(block), *buffer, block, &mut whole);
            if current.is_full() {
                filling = None;
            }
        }
        if !whole.is_empty() {
            arrived(whole);
        }
    }
    if let Some((mut last, buffer)) = filling {
        let mut tail = Vec::new();
        cut(last.take_filled(0), buffer, block, &mut tail);
        if !tail.is_empty() {
            arrived(tail);
        }
    }
    Ok(())
}

/// `bytes` of the buffer `buffer`, cut into blocks of `block` bytes (the last shorter)
/// added to `blocks`.
fn cut(bytes: Option<Bytes>, buffer: BufferId, block: usize, blocks: &mut Vec<FetchedBlock>) {
    let Some(mut bytes) = bytes else {
        return;
    };
    while !bytes.is_empty() {
        let take = block.min(bytes.len());
        blocks.push(FetchedBlock::within(bytes.split_to(take), buffer));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tier::receive_buffers::RECEIVE_BUFFER_BYTES;

    fn collect(
        pieces: Vec<Result<Bytes, &'static str>>,
        length: u64,
        block: usize,
        buffers: &Arc<ReceiveBuffers>,
    ) -> Result<Vec<FetchedBlock>, &'static str> {
        collect_arrivals(pieces, length, block, buffers).map(|arrivals| arrivals.concat())
    }

    /// What `collect_blocks` handed over, one entry per handing.
    fn collect_arrivals(
        pieces: Vec<Result<Bytes, &'static str>>,
        length: u64,
        block: usize,
        buffers: &Arc<ReceiveBuffers>,
    ) -> Result<Vec<Vec<FetchedBlock>>, &'static str> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let mut arrivals = Vec::new();
        runtime
            .block_on(collect_blocks(
                futures::stream::iter(pieces),
                length,
                block,
                buffers,
                |blocks| arrivals.push(blocks),
            ))
            .map(|()| arrivals)
    }

    fn joined(blocks: &[FetchedBlock]) -> Vec<u8> {
        let mut joined = Vec::new();
        for block in blocks {
            block.block.extend_into(0, block.len(), &mut joined);
        }
        joined
    }

    #[test]
    fn a_body_is_cut_into_blocks_whatever_its_pieces() {
        let buffers = ReceiveBuffers::new();
        let block = 64 << 10;
        let length = 2 * RECEIVE_BUFFER_BYTES + 100_000;
        let body: Vec<u8> = (0..length as u32)
            .map(|i| (i * 7 + i / 251) as u8)
            .collect();
        // Pieces of every size, one crossing the first buffer's end.
        let mut pieces = Vec::new();
        let mut at = 0;
        for size in [1, 4000, 96, 400_000, 1 << 20, 700_000, 3].iter().cycle() {
            if at == length {
                break;
            }
            let end = (at + size).min(length);
            pieces.push(Ok(Bytes::copy_from_slice(&body[at..end])));
            at = end;
        }
        let blocks = collect(pieces, length as u64, block, &buffers).unwrap();
        assert_eq!(joined(&blocks), body);
        let lengths: Vec<usize> = blocks.iter().map(FetchedBlock::len).collect();
        let whole = length / block;
        assert_eq!(lengths[..whole], vec![block; whole][..]);
        assert_eq!(lengths[whole..], [length % block]);
        // Each block is a slice of one buffer: two pooled ones of 32 blocks, then the
        // rest (100,000 bytes, less than half a pooled buffer) in one of its own.
        let per_buffer = RECEIVE_BUFFER_BYTES / block;
        for (i, fetched) in blocks.iter().enumerate() {
            let buffer = fetched.buffer;
            let first = &blocks[i / per_buffer * per_buffer];
            assert_eq!(buffer, first.buffer, "block {i}");
            let expected = if i < 2 * per_buffer {
                RECEIVE_BUFFER_BYTES as u64
            } else {
                2 * block as u64
            };
            assert_eq!(buffer.bytes, expected, "block {i}");
        }
        assert_ne!(blocks[0].buffer, blocks[per_buffer].buffer);
        let first = blocks[0].block.slice(0, block);
        let second = blocks[1].block.slice(0, block);
        assert_eq!(
            second.as_ptr() as usize - first.as_ptr() as usize,
            block,
            "slices of one buffer, not copies"
        );
        drop((first, second));
        drop(blocks);
        assert_eq!(buffers.free_buffers(), 2, "both pooled buffers came back");
    }

    #[test]
    fn a_body_longer_than_expected_still_comes_in_whole_blocks() {
        let buffers = ReceiveBuffers::new();
        let body: Vec<u8> = (0..10_000u32).map(|i| (i * 13) as u8).collect();
        let pieces = vec![
            Ok(Bytes::copy_from_slice(&body[..6000])),
            Ok(Bytes::copy_from_slice(&body[6000..])),
        ];
        let blocks = collect(pieces, 5000, 4096, &buffers).unwrap();
        let lengths: Vec<usize> = blocks.iter().map(FetchedBlock::len).collect();
        assert_eq!(lengths, vec![4096, 4096, 10_000 - 8192]);
        assert_eq!(joined(&blocks), body);
    }

    #[test]
    fn each_block_is_handed_over_as_soon_as_it_is_whole() {
        let buffers = ReceiveBuffers::new();
        let block = 64 << 10;
        let length = 2 * RECEIVE_BUFFER_BYTES + 5;
        let body: Vec<u8> = (0..length as u32).map(|i| (i % 253) as u8).collect();
        let piece = 300_000;
        let pieces: Vec<Result<Bytes, &'static str>> = body
            .chunks(piece)
            .map(|piece| Ok(Bytes::copy_from_slice(piece)))
            .collect();
        let count = pieces.len();
        let arrivals = collect_arrivals(pieces, length as u64, block, &buffers).unwrap();
        // One handing per piece (each completes a block), with every block it completed,
        // then the body's last 5 bytes.
        assert_eq!(arrivals.len(), count + 1);
        let mut handed = 0;
        for (k, arrival) in arrivals[..count].iter().enumerate() {
            handed += arrival.len();
            let received = ((k + 1) * piece).min(length);
            assert_eq!(handed, received / block, "after piece {k}");
        }
        let tail: Vec<usize> = arrivals[count].iter().map(FetchedBlock::len).collect();
        assert_eq!(tail, [5]);
        assert_eq!(joined(&arrivals.concat()), body);
    }

    #[test]
    fn a_body_cut_short_hands_over_its_whole_blocks_only() {
        let buffers = ReceiveBuffers::new();
        let block = 64 << 10;
        let body = vec![7u8; RECEIVE_BUFFER_BYTES + 101_000];
        let pieces = vec![
            Ok(Bytes::copy_from_slice(&body[..RECEIVE_BUFFER_BYTES + 1000])),
            Ok(Bytes::copy_from_slice(&body[RECEIVE_BUFFER_BYTES + 1000..])),
            Err("cut"),
        ];
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let mut arrived = Vec::new();
        let outcome = runtime.block_on(collect_blocks(
            futures::stream::iter(pieces),
            2 * RECEIVE_BUFFER_BYTES as u64,
            block,
            &buffers,
            |blocks| arrived.extend(blocks),
        ));
        assert_eq!(outcome, Err("cut"));
        let whole = RECEIVE_BUFFER_BYTES / block + 1;
        assert_eq!(
            arrived.len(),
            whole,
            "the whole blocks, not the part after them"
        );
        assert_eq!(joined(&arrived), body[..whole * block]);
    }

    #[test]
    fn a_body_cut_short_is_an_error_not_fewer_blocks() {
        let buffers = ReceiveBuffers::new();
        let failed = vec![Ok(Bytes::from_static(b"x")), Err("cut")];
        assert!(matches!(collect(failed, 4096, 4096, &buffers), Err("cut")));
        let one = collect(vec![Ok(Bytes::from_static(b"abc"))], 3, 4096, &buffers).unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(&one[0].block.slice(0, 3)[..], b"abc");
        assert!(collect(vec![], 0, 4096, &buffers).unwrap().is_empty());
    }
}
