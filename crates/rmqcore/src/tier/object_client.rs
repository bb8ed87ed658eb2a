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
    Attribute, Attributes, ClientOptions, GetOptions, ObjectStore, PutMultipartOptions, PutPayload,
    RetryConfig, WriteMultipart,
};
use tokio::runtime::Runtime;

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

    /// Upload `pieces`, one after another, as `object` in parts, `parts_in_flight` at a
    /// time (pieces, so that a queue-grouped segment is uploaded from the segment's own
    /// bytes without first being copied whole into its new order).
    pub fn upload(
        &self,
        object: &ObjectPath,
        pieces: &[&[u8]],
        crc32: u32,
        parts_in_flight: usize,
    ) -> Result<()> {
        let mut attributes = Attributes::new();
        attributes.insert(
            Attribute::Metadata(CRC_METADATA.into()),
            format!("{crc32:08x}").into(),
        );
        let options = PutMultipartOptions {
            attributes,
            ..PutMultipartOptions::default()
        };
        self.runtime
            .block_on(async {
                let size: usize = pieces.iter().map(|piece| piece.len()).sum();
                if size <= PART_SIZE {
                    let put = object_store::PutOptions {
                        attributes: options.attributes,
                        ..object_store::PutOptions::default()
                    };
                    let payload = PutPayload::from(Bytes::from(pieces.concat()));
                    return self.store.put_opts(object, payload, put).await.map(drop);
                }
                let upload = self.store.put_multipart_opts(object, options).await?;
                let mut writer = WriteMultipart::new_with_chunk_size(upload, PART_SIZE);
                for part in pieces.iter().flat_map(|piece| piece.chunks(PART_SIZE)) {
                    writer.wait_for_capacity(parts_in_flight.max(1)).await?;
                    writer.write(part);
                }
                writer.finish().await.map(drop)
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

    /// `get_recorded_blocks` in the background, each receive buffer's blocks handed to
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
