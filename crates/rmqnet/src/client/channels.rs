//! Unary gRPC calls whose request and answer are bytes the producer encodes and decodes
//! itself, over HTTP/2 connections (plaintext or TLS) that Python never touches.
//!
//! The producer's batches go through here (`sender.rs`) rather than through grpcio:
//! grpcio runs every answer through Python, so on a machine this busy the next batch for
//! a queue waited for the GIL (measured: a median of 3.8 ms from the shard's answer to
//! the producer seeing it, against 1 ms for the shard to store the batch).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes};
use http::uri::PathAndQuery;
use http_body_util::{BodyExt, Full};
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::metadata::{MetadataKey, MetadataValue};
use tonic::transport::{Channel, Endpoint};

use super::tls::{Connector, Tls};
use crate::grpc::FRAME_PREFIX;
use tonic::{Code, Request, Status};

/// How long connecting to a shard may take before the call fails as unavailable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// HTTP/2 flow-control windows large enough for a full batch (1 MiB by default) to go
/// out without waiting for a window update.
const STREAM_WINDOW: u32 = 4 << 20;
const CONNECTION_WINDOW: u32 = 16 << 20;
/// The largest HTTP/2 frame the shards may send us (the shards accept the same from us).
/// With the protocol's default of 16 KiB a pull's answer of about 1 MiB came as 64 frames,
/// and the connection read it about 8 KiB per system call (143 reads per pull at 1 KiB a
/// message); a frame is read whole, so larger frames mean fewer, larger reads.
const MAX_FRAME: u32 = 1 << 20;
/// The largest request or answer, as the broker's servers allow (a pull of many messages).
const MAX_MESSAGE: usize = 64 << 20;

/// Passes bytes through: requests are encoded and answers decoded by the caller.
#[derive(Clone, Copy, Default)]
struct RawBytes;

impl Codec for RawBytes {
    type Encode = Bytes;
    type Decode = Bytes;
    type Encoder = RawBytes;
    type Decoder = RawBytes;

    fn encoder(&mut self) -> Self::Encoder {
        RawBytes
    }

    fn decoder(&mut self) -> Self::Decoder {
        RawBytes
    }
}

impl Encoder for RawBytes {
    type Item = Bytes;
    type Error = Status;

    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put(item);
        Ok(())
    }
}

impl Decoder for RawBytes {
    type Item = Bytes;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}

/// A shard's channel whose requests leave as one body chunk that ends the stream.
///
/// tonic streams a unary request's body: HTTP/2 sent its HEADERS, its DATA and an empty
/// DATA frame ending the stream as three writes (37 bytes, the batches, 9 bytes; strace),
/// each a loopback delivery and a wake-up of the shard. Given the encoded message whole,
/// hyper sends one DATA frame that ends the stream: about 1.5 writes per call (the
/// HEADERS of calls in flight together go in one write before their DATA).
#[derive(Clone)]
struct WholeBody(Channel);

impl tower_service::Service<http::Request<tonic::body::Body>> for WholeBody {
    type Response = http::Response<tonic::body::Body>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.0.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        // The channel made ready is the one that must take the call.
        let fresh = self.0.clone();
        let mut ready = std::mem::replace(&mut self.0, fresh);
        Box::pin(async move {
            let (mut parts, body) = request.into_parts();
            let whole = match parts.extensions.remove::<Framed>() {
                // tonic's frame of the empty stand-in is dropped unread.
                Some(Framed(framed)) => framed,
                // The body of a unary request is one encoded message, ready at once.
                None => body.collect().await?.to_bytes(),
            };
            let request =
                http::Request::from_parts(parts, tonic::body::Body::new(Full::new(whole)));
            Ok(ready.call(request).await?)
        })
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A request message already behind its gRPC frame prefix (`grpc::frame_in_place`).
/// It rides to `WholeBody` in the request's extensions, with an empty message standing in
/// for tonic to encode, and goes out as the body as it is: tonic would copy every message
/// into a frame buffer of its own, 128 KiB a call for a producer's batch of 1 KiB bodies.
#[derive(Clone)]
pub struct Framed(pub Bytes);

/// Why a call failed: its gRPC status code (as `grpc.StatusCode` numbers it) and message;
/// for a pull that met a lost tier segment, the queue offset past it
/// (`status::RESUME_OFFSET_HEADER`).
#[derive(Debug, Clone)]
pub struct CallError {
    pub code: i32,
    pub message: String,
    pub resume_offset: Option<i64>,
}

impl From<Status> for CallError {
    fn from(status: Status) -> Self {
        CallError {
            code: status.code() as i32,
            message: status.message().to_owned(),
            resume_offset: status
                .metadata()
                .get(crate::status::RESUME_OFFSET_HEADER)
                .and_then(|value| value.to_str().ok()?.parse().ok()),
        }
    }
}

/// One HTTP/2 connection per shard endpoint, opened on first use and reopened by the
/// transport after the shard restarts. Calls must run on a Tokio runtime.
pub struct ShardChannels {
    channels: Mutex<HashMap<String, Channel>>,
    timeout: Duration,
    tls: Option<Connector>,
    metadata: Vec<(
        MetadataKey<tonic::metadata::Ascii>,
        MetadataValue<tonic::metadata::Ascii>,
    )>,
}

impl ShardChannels {
    /// `timeout` bounds each call; `metadata` (such as the token's `authorization`) goes
    /// with every call; `tls`, when given, secures every connection. Errors name a
    /// metadata entry that cannot be sent as a header.
    pub fn new(
        timeout: Duration,
        metadata: &[(String, String)],
        tls: Option<Tls>,
    ) -> Result<Self, String> {
        let metadata = metadata
            .iter()
            .map(|(key, value)| {
                let parsed_key = MetadataKey::from_bytes(key.as_bytes())
                    .map_err(|_| format!("metadata key {key:?} is not a valid header name"))?;
                let parsed_value = MetadataValue::try_from(value.as_str())
                    .map_err(|_| format!("metadata value for {key:?} is not valid ASCII"))?;
                Ok((parsed_key, parsed_value))
            })
            .collect::<Result<Vec<_>, String>>()?;
        let tls = tls.as_ref().map(Connector::new).transpose()?;
        Ok(ShardChannels {
            channels: Mutex::new(HashMap::new()),
            timeout,
            tls,
            metadata,
        })
    }

    fn channel(&self, endpoint: &str) -> Result<Channel, CallError> {
        let mut channels = self
            .channels
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(channel) = channels.get(endpoint) {
            return Ok(channel.clone());
        }
        // Over TLS too the URI says http: the connector does the TLS, and tonic refuses
        // an https URI it would have to secure itself.
        let settings = Endpoint::from_shared(format!("http://{endpoint}"))
            .map_err(|error| CallError {
                code: Code::InvalidArgument as i32,
                message: format!("bad endpoint {endpoint:?}: {error}"),
                resume_offset: None,
            })?
            .connect_timeout(CONNECT_TIMEOUT)
            .tcp_nodelay(true)
            .initial_stream_window_size(Some(STREAM_WINDOW))
            .initial_connection_window_size(Some(CONNECTION_WINDOW))
            .max_frame_size(Some(MAX_FRAME));
        let channel = match &self.tls {
            Some(connector) => settings.connect_with_connector_lazy(connector.clone()),
            None => settings.connect_lazy(),
        };
        channels.insert(endpoint.to_owned(), channel.clone());
        Ok(channel)
    }

    /// Call `path` on `endpoint` with `body`, within `timeout` (a long-polling pull waits
    /// longer than an admin call).
    ///
    /// Fails as grpcio would: DEADLINE_EXCEEDED when the timeout passes, UNAVAILABLE when
    /// the connection cannot be made or breaks (a restarting shard), so the producer
    /// retries exactly what it retries with grpcio.
    pub async fn unary_within(
        &self,
        endpoint: &str,
        path: PathAndQuery,
        body: Bytes,
        timeout: Duration,
    ) -> Result<Bytes, CallError> {
        self.call(endpoint, path, Request::new(body), timeout).await
    }

    /// Call `path` (such as `/rmq.v1.Shard/SendBatches`) on `endpoint` with a request
    /// already framed, within the channels' timeout; it fails as `unary_within` does.
    pub async fn unary_framed(
        &self,
        endpoint: &str,
        path: &'static str,
        framed: Framed,
    ) -> Result<Bytes, CallError> {
        let message_length = framed.0.len().saturating_sub(FRAME_PREFIX);
        if message_length > MAX_MESSAGE {
            // What tonic says of a message it would not encode.
            return Err(CallError {
                code: Code::OutOfRange as i32,
                message: format!(
                    "Error, encoded message length too large: found {message_length} bytes, \
                     the limit is: {MAX_MESSAGE} bytes"
                ),
                resume_offset: None,
            });
        }
        let mut request = Request::new(Bytes::new());
        request.extensions_mut().insert(framed);
        self.call(
            endpoint,
            PathAndQuery::from_static(path),
            request,
            self.timeout,
        )
        .await
    }

    async fn call(
        &self,
        endpoint: &str,
        path: PathAndQuery,
        mut request: Request<Bytes>,
        timeout: Duration,
    ) -> Result<Bytes, CallError> {
        let unreachable = |error: &dyn std::fmt::Display| CallError {
            code: Code::Unavailable as i32,
            message: format!("connection to {endpoint} failed: {error}"),
            resume_offset: None,
        };
        let call = async {
            let mut client = tonic::client::Grpc::new(WholeBody(self.channel(endpoint)?))
                .max_decoding_message_size(MAX_MESSAGE)
                .max_encoding_message_size(MAX_MESSAGE);
            client.ready().await.map_err(|error| unreachable(&error))?;
            request.set_timeout(timeout);
            for (key, value) in &self.metadata {
                request.metadata_mut().insert(key.clone(), value.clone());
            }
            match client.unary(request, path, RawBytes).await {
                Ok(answer) => Ok(answer.into_inner()),
                // The call's own deadline (its grpc-timeout, which the channel enforces
                // too) passed before an answer: as grpcio says it.
                Err(status) if timed_out(&status) => Err(no_answer(endpoint, timeout)),
                // A status the server sent has no source; one with a source is the
                // transport's own (refused, reset, closed).
                Err(status) if std::error::Error::source(&status).is_some() => {
                    Err(unreachable(&status.message()))
                }
                Err(status) => Err(status.into()),
            }
        };
        tokio::time::timeout(timeout, call)
            .await
            .unwrap_or_else(|_| Err(no_answer(endpoint, timeout)))
    }

    /// The timeout of a call that names none.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }
}

/// DEADLINE_EXCEEDED, as grpcio words it.
fn no_answer(endpoint: &str, timeout: Duration) -> CallError {
    CallError {
        code: Code::DeadlineExceeded as i32,
        message: format!("no answer from {endpoint} within {timeout:?}"),
        resume_offset: None,
    }
}

/// Whether `status` is the channel's "timeout expired" rather than an answer.
fn timed_out(status: &Status) -> bool {
    let mut source = std::error::Error::source(status);
    while let Some(error) = source {
        if error.is::<tonic::TimeoutExpired>() {
            return true;
        }
        source = error.source();
    }
    false
}
