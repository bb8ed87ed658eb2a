//! The S3-compatible bucket, through the `object_store` crate, as blocking calls: the
//! engine's threads are plain threads, so the client keeps a small runtime of its own and
//! blocks on it.
//!
//! Integrity: every request is signed with SigV4 over the payload's SHA-256, which the
//! server checks before it stores the bytes, and an upload carries the whole file's CRC32
//! as object metadata (`x-amz-meta-rmq-crc32`), so that
//! a later reader and a restarted uploader can tell the object is the file.

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::TryStreamExt;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path as ObjectPath;
use object_store::{
    Attribute, Attributes, ClientOptions, GetOptions, MultipartUpload, ObjectStore,
    PutMultipartOptions, PutPayload, RetryConfig,
};
use tokio::runtime::Runtime;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::block_cache::FetchedBlock;
use super::location::TierLocation;
use super::object_errors::tier_error;
use super::receive_buffers::ReceiveBuffers;
use super::recorded_get::{
    get_blocks, get_blocks_as_they_arrive, get_checked, recorded_crc, CRC_METADATA,
};
use crate::error::{Error, Result};

/// Multipart part size: S3's minimum part is 5 MiB.
const PART_SIZE: usize = 8 << 20;

/// Where the bucket is and how to reach it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TierEndpoint {
    /// `http://host:port` of an S3-compatible server; None for AWS itself.
    pub endpoint: Option<String>,
    /// None: `AWS_REGION`, else `us-east-1`.
    pub region: Option<String>,
}

/// What a background GET hands over as its body arrives.
#[derive(Debug)]
pub enum Arrival {
    /// The next blocks of the body, in order.
    Blocks(Vec<FetchedBlock>),
    /// The body's end: whether all of it arrived and the GET's answer was the object
    /// recorded.
    End(bool),
}

/// What the bucket says about an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObjectInfo {
    pub size: u64,
    /// The CRC32 recorded at upload; None for an object rmq did not write.
    pub crc32: Option<u32>,
}

pub struct ObjectClient {
    location: TierLocation,
    store: AmazonS3,
    runtime: Runtime,
    /// Parts in flight, over every upload at once (`parts_in_flight`).
    part_permits: Arc<Semaphore>,
    /// What ranged GETs' bodies are copied into (`receive_buffers.rs`).
    buffers: Arc<ReceiveBuffers>,
}

impl std::fmt::Debug for ObjectClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectClient")
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl ObjectClient {
    /// A client for `location`; credentials come from the `AWS_*` environment variables.
    /// Makes no request (see `check`).
    pub fn new(
        location: TierLocation,
        endpoint: &TierEndpoint,
        parts_in_flight: usize,
    ) -> Result<Self> {
        let mut builder = AmazonS3Builder::from_env()
            .with_bucket_name(&location.bucket)
            // The uploader retries on its own schedule and reports why it waits; one
            // quick retry here rides out a dropped connection.
            .with_retry(RetryConfig {
                max_retries: 1,
                retry_timeout: Duration::from_secs(10),
                ..RetryConfig::default()
            })
            .with_client_options(
                ClientOptions::new()
                    .with_connect_timeout(Duration::from_secs(3))
                    .with_timeout(Duration::from_secs(60)),
            );
        // The client options above replace what `from_env` read for plain HTTP, so the
        // endpoint (given, or from the environment) decides it here.
        let url = endpoint
            .endpoint
            .clone()
            .or_else(|| std::env::var("AWS_ENDPOINT_URL").ok())
            .or_else(|| std::env::var("AWS_ENDPOINT").ok());
        if let Some(url) = &url {
            builder = builder
                .with_endpoint(url)
                .with_allow_http(url.starts_with("http://"))
                .with_virtual_hosted_style_request(false);
        }
        let region = endpoint
            .region
            .clone()
            .or_else(|| std::env::var("AWS_REGION").ok())
            .or_else(|| std::env::var("AWS_DEFAULT_REGION").ok())
            .unwrap_or_else(|| "us-east-1".into());
        builder = builder.with_region(region);
        let store = builder
            .build()
            .map_err(|error| Error::tier(location.url(), error.to_string()))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(parts_in_flight.clamp(1, 4))
            .thread_name("rmq-tier-io")
            .enable_all()
            .build()
            .map_err(|error| Error::tier(location.url(), error.to_string()))?;
        Ok(ObjectClient {
            location,
            store,
            runtime,
            part_permits: Arc::new(Semaphore::new(parts_in_flight.max(1))),
            buffers: ReceiveBuffers::new(),
        })
    }

    pub fn location(&self) -> &TierLocation {
        &self.location
    }

    fn failed(&self, object: &ObjectPath, error: object_store::Error) -> Error {
        tier_error(self.location.describe(object), &error)
    }

    /// One listing under the prefix: wrong credentials or a missing bucket fail here
    /// with the server's reason, at open rather than at the first upload.
    pub fn check(&self) -> Result<()> {
        let prefix = self.location.segments_prefix();
        self.runtime
            .block_on(self.store.list_with_delimiter(Some(&prefix)))
            .map(drop)
            .map_err(|error| tier_error(self.location.url(), &error))
    }

    /// Upload `pieces`, one after another, as `object`: in parts of `PART_SIZE` (the last
    /// one takes the remainder, so no part is a few KB), at most `parts_in_flight` parts
    /// at a time over all uploads, so that two uploads at once (one finishing while the
    /// next starts) share them. Each part is a list of slices of the pieces, never a
    /// copy: a queue-grouped segment goes up straight from the segment's mapping.
    pub fn upload(&self, object: &ObjectPath, pieces: &[Bytes], crc32: u32) -> Result<()> {
        let mut attributes = Attributes::new();
        attributes.insert(
            Attribute::Metadata(CRC_METADATA.into()),
            format!("{crc32:08x}").into(),
        );
        let mut parts = cut_into_parts(pieces, PART_SIZE);
        if parts.len() <= 1 {
            let put = object_store::PutOptions {
                attributes,
                ..object_store::PutOptions::default()
            };
            let payload = parts.pop().unwrap_or_default();
            return self
                .runtime
                .block_on(self.store.put_opts(object, payload, put))
                .map(drop)
                .map_err(|error| self.failed(object, error));
        }
        let options = PutMultipartOptions {
            attributes,
            ..PutMultipartOptions::default()
        };
        self.runtime
            .block_on(async {
                let mut upload = self.store.put_multipart_opts(object, options).await?;
                let sent = send_parts(upload.as_mut(), parts, &self.part_permits).await;
                match sent {
                    Ok(()) => upload.complete().await.map(drop),
                    Err(error) => {
                        // The parts already sent are dropped with the upload; a failed
                        // abort leaves them to the bucket's own cleanup.
                        let _ = upload.abort().await;
                        Err(error)
                    }
                }
            })
            .map_err(|error| self.failed(object, error))
    }

    /// The object's size and recorded CRC32; None when there is no such object.
    pub fn head(&self, object: &ObjectPath) -> Result<Option<ObjectInfo>> {
        let options = GetOptions {
            head: true,
            ..GetOptions::default()
        };
        match self.runtime.block_on(self.store.get_opts(object, options)) {
            Ok(result) => Ok(Some(ObjectInfo {
                size: result.meta.size,
                crc32: recorded_crc(&result.attributes),
            })),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(error) => Err(self.failed(object, error)),
        }
    }

    /// The bytes in `range`; a range past the object's end comes back short.
    pub fn get_range(&self, object: &ObjectPath, range: Range<u64>) -> Result<Bytes> {
        self.runtime
            .block_on(self.store.get_range(object, range))
            .map_err(|error| self.failed(object, error))
    }

    /// The bytes in `range` of an object the store recorded with `size` bytes and CRC32
    /// `crc32`: the GET's own answer (the object's size and the CRC32 kept with it) must
    /// still say so, at no extra request, or the read fails as `TierObjectChanged`; so
    /// does an object that is gone. A changed object's bytes are never returned.
    pub fn get_recorded(
        &self,
        object: &ObjectPath,
        range: Range<u64>,
        size: u64,
        crc32: u32,
    ) -> Result<Bytes> {
        let offset = range.start;
        let fetched = self.runtime.block_on(async {
            match get_checked(&self.store, object, range, size, crc32).await? {
                Ok(result) => result.bytes().await.map(Ok),
                Err(reason) => Ok(Err(reason)),
            }
        });
        self.settled(object, offset, fetched)
    }

    /// `get_recorded`, its body cut into `block`-byte blocks as it arrives (the last one
    /// shorter at the range's end), slices of receive buffers reused from a pool
    /// (`recorded_get::collect_blocks`).
    pub fn get_recorded_blocks(
        &self,
        object: &ObjectPath,
        range: Range<u64>,
        (size, crc32): (u64, u32),
        block: usize,
    ) -> Result<Vec<FetchedBlock>> {
        let offset = range.start;
        let fetched = self.runtime.block_on(get_blocks(
            &self.store,
            &self.buffers,
            object,
            range,
            (size, crc32),
            block,
        ));
        self.settled(object, offset, fetched)
    }

    fn settled<T>(
        &self,
        object: &ObjectPath,
        offset: u64,
        fetched: std::result::Result<std::result::Result<T, String>, object_store::Error>,
    ) -> Result<T> {
        match fetched {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(reason)) => Err(Error::tier_object_changed(
                self.location.describe(object),
                offset,
                reason,
            )),
            Err(error) => Err(self.failed(object, error)),
        }
    }

    /// `get_recorded_blocks` in the background, each block handed to
    /// `on` as soon as they arrive (`recorded_get::get_blocks_as_they_arrive`), then
    /// whether the whole body did (false on any failure: read-ahead, a reader that wants
    /// the blocks not handed over fetches them itself and sees why).
    pub fn spawn_get_recorded_blocks(
        &self,
        object: ObjectPath,
        range: Range<u64>,
        recorded: (u64, u32),
        block: usize,
        mut on: impl FnMut(Arrival) + Send + 'static,
    ) {
        let store = self.store.clone();
        let buffers = Arc::clone(&self.buffers);
        self.runtime.spawn(async move {
            let fetched = get_blocks_as_they_arrive(
                &store,
                &buffers,
                &object,
                range,
                recorded,
                block,
                |blocks| on(Arrival::Blocks(blocks)),
            )
            .await;
            on(Arrival::End(matches!(fetched, Ok(Ok(())))));
        });
    }

    pub fn delete(&self, object: &ObjectPath) -> Result<()> {
        match self.runtime.block_on(self.store.delete(object)) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(error) => Err(self.failed(object, error)),
        }
    }

    /// Every object under `prefix`, with its size.
    pub fn list(&self, prefix: &ObjectPath) -> Result<Vec<(ObjectPath, u64)>> {
        self.runtime
            .block_on(
                self.store
                    .list(Some(prefix))
                    .map_ok(|meta| (meta.location, meta.size))
                    .try_collect(),
            )
            .map_err(|error| tier_error(self.location.describe(prefix), &error))
    }
}

/// Send `parts` in order, each while it holds one of `permits`.
async fn send_parts(
    upload: &mut dyn MultipartUpload,
    parts: Vec<PutPayload>,
    permits: &Arc<Semaphore>,
) -> object_store::Result<()> {
    let mut sending = JoinSet::new();
    for part in parts {
        let permit = loop {
            // A finished part gives its permit back, and its failure ends the upload.
            while let Some(sent) = sending.try_join_next() {
                joined(Some(sent))?;
            }
            tokio::select! {
                permit = Arc::clone(permits).acquire_owned() => {
                    break permit.expect("the part permits are never closed");
                }
                sent = sending.join_next(), if !sending.is_empty() => joined(sent)?,
            }
        };
        let put = upload.put_part(part);
        sending.spawn(async move {
            let sent = put.await;
            drop(permit);
            sent
        });
    }
    while let Some(sent) = sending.join_next().await {
        joined(Some(sent))?;
    }
    Ok(())
}

fn joined(
    sent: Option<std::result::Result<object_store::Result<()>, tokio::task::JoinError>>,
) -> object_store::Result<()> {
    match sent {
        Some(Ok(result)) => result,
        Some(Err(error)) => Err(object_store::Error::JoinError { source: error }),
        None => Ok(()),
    }
}

/// `pieces`, one after another, cut into payloads of `part_size` bytes, the last one
/// taking what remains (between `part_size` and twice that), each a list of slices of
/// the pieces. S3 wants every part but the last to be at least 5 MiB.
fn cut_into_parts(pieces: &[Bytes], part_size: usize) -> Vec<PutPayload> {
    let size: usize = pieces.iter().map(Bytes::len).sum();
    let count = (size / part_size).max(1);
    let mut parts = Vec::with_capacity(count);
    let mut part: Vec<Bytes> = Vec::new();
    let mut room = if count == 1 { size } else { part_size };
    for piece in pieces {
        let mut piece = piece.clone();
        while !piece.is_empty() {
            let taken = piece.split_to(room.min(piece.len()));
            room -= taken.len();
            part.push(taken);
            if room == 0 {
                parts.push(part.drain(..).collect::<PutPayload>());
                room = if parts.len() + 1 == count {
                    size - parts.len() * part_size
                } else {
                    part_size
                };
            }
        }
    }
    if !part.is_empty() || parts.is_empty() {
        parts.push(part.into_iter().collect());
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lengths(parts: &[PutPayload]) -> Vec<usize> {
        parts.iter().map(PutPayload::content_length).collect()
    }

    fn joined_bytes(parts: &[PutPayload]) -> Vec<u8> {
        parts
            .iter()
            .flat_map(|part| part.iter().flat_map(|chunk| chunk.to_vec()))
            .collect()
    }

    #[test]
    fn parts_are_full_but_the_last_which_takes_the_remainder() {
        let whole: Vec<u8> = (0..=255u8).cycle().take(10 * 7 + 3).collect();
        let whole = Bytes::from(whole);
        // Pieces of uneven lengths, crossing part boundaries.
        let pieces = vec![whole.slice(0..5), whole.slice(5..31), whole.slice(31..73)];
        let parts = cut_into_parts(&pieces, 10);
        assert_eq!(lengths(&parts), vec![10, 10, 10, 10, 10, 10, 13]);
        assert_eq!(joined_bytes(&parts), whole.to_vec());
    }

    #[test]
    fn a_small_upload_is_one_part_and_an_exact_multiple_has_no_empty_part() {
        let whole = Bytes::from(vec![7u8; 20]);
        assert_eq!(lengths(&cut_into_parts(&[whole.slice(0..6)], 10)), vec![6]);
        assert_eq!(
            lengths(&cut_into_parts(std::slice::from_ref(&whole), 10)),
            vec![10, 10]
        );
        assert_eq!(lengths(&cut_into_parts(&[], 10)), vec![0]);
    }
}
