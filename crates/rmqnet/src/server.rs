//! The shard process's public gRPC endpoint: an HTTP/2 server on its own small tokio
//! runtime that answers `Send`, `SendBatches`, `Pull`, and the consumer's `QueueOffsets`
//! and `FetchOffsets` (`shard_offsets.rs`) from the engine (`shard.rs`), and
//! RocketMQ 5's `SendMessage`, `ReceiveMessage`, `AckMessage` and `ChangeInvisibleDuration`
//! (`rocketmq/`), and passes every other call to the Python server behind it (`proxy.rs`).
//! Python keeps supervising the process, the routes and the admin calls; the hot path
//! never enters it. With TLS (`server_tls.rs`) the handshake ends here too.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use http::{Request, Response};
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio::runtime::Runtime;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

use crate::coalesce::{Coalescing, InFlight, HOLD};
use crate::counts::RequestCounts;
use crate::grpc::{self, Body, FrameProblem};
use crate::proxy::Forward;
use crate::rocketmq::ack::Acker;
use crate::rocketmq::receive::{Consumption, Receiver};
use crate::rocketmq::send::MessageSender;
use crate::shard::{refused, Outcome, Shard};
use crate::status::Refusal;

const SEND: &str = "/rmq.v1.Shard/Send";
const SEND_BATCHES: &str = "/rmq.v1.Shard/SendBatches";
const PULL: &str = "/rmq.v1.Shard/Pull";
const QUEUE_OFFSETS: &str = "/rmq.v1.Shard/QueueOffsets";
const FETCH_OFFSETS: &str = "/rmq.v1.Shard/FetchOffsets";
const ROCKETMQ_SEND: &str = "/apache.rocketmq.v2.MessagingService/SendMessage";
const ROCKETMQ_RECEIVE: &str = "/apache.rocketmq.v2.MessagingService/ReceiveMessage";
const ROCKETMQ_ACK: &str = "/apache.rocketmq.v2.MessagingService/AckMessage";
/// The Python server's words for a call without the token (`rmq.broker.auth`).
const MISSING_TOKEN: &str = "missing or wrong token: send metadata 'authorization: Bearer <token>'";
const ROCKETMQ_CHANGE_INVISIBLE: &str =
    "/apache.rocketmq.v2.MessagingService/ChangeInvisibleDuration";

/// What the server needs besides the shard.
pub struct Settings {
    pub bind: SocketAddr,
    /// The Python gRPC server of the same process.
    pub internal: SocketAddr,
    /// The broker's token: rmq.v1 calls without it are refused here, others go to the
    /// Python server, which refuses them.
    pub token: Option<String>,
    /// Larger request bodies are refused (RESOURCE_EXHAUSTED), as gRPC refuses them.
    pub max_request_bytes: usize,
    /// Whether the process serves RocketMQ 5 clients (`apache.rocketmq.v2`): without, their
    /// calls go to the Python server, which does not know the service either.
    pub rocketmq: bool,
    /// The lease books and policy the Python path's RocketMQ consumers use too; without,
    /// receives and acks go to the Python server.
    pub consumption: Option<Arc<Consumption>>,
    /// TLS on the public port (`server_tls::server_config`); None: plain HTTP/2.
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

pub struct ShardServer {
    runtime: Option<Runtime>,
    stop: watch::Sender<bool>,
    pub local_addr: SocketAddr,
    pub shard: Arc<Shard>,
    pub counts: Arc<RequestCounts>,
}

struct Context {
    shard: Arc<Shard>,
    rocketmq: MessageSender,
    /// The consume side, when the process has lease books.
    consume: Option<(Receiver, Acker)>,
    counts: Arc<RequestCounts>,
    forward: Forward,
    authorization: Option<String>,
    max_request_bytes: usize,
    rocketmq_enabled: bool,
}

impl ShardServer {
    pub fn start(settings: Settings, shard: Shard) -> std::io::Result<ShardServer> {
        // One worker: a shard process per core already spreads the load, and a second
        // worker mostly woke up to steal a connection's task, then wrote its answers one
        // at a time (a futex wake, a context switch and a socket write per request).
        // Blocking work (puts that wait for a flush, pulls, claims) goes to blocking
        // threads, so the worker keeps serving.
        crate::freed_memory::keep_freed_memory();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("rmq-data-plane")
            .enable_all()
            .build()?;
        let listener = runtime.block_on(TcpListener::bind(settings.bind))?;
        let local_addr = listener.local_addr()?;
        let shard = Arc::new(shard);
        let counts = Arc::new(RequestCounts::default());
        let context = Arc::new(Context {
            shard: Arc::clone(&shard),
            rocketmq: MessageSender::new(Arc::clone(&shard)),
            consume: settings.consumption.map(|consumption| {
                (
                    Receiver::new(Arc::clone(&shard), Arc::clone(&consumption)),
                    Acker::new(Arc::clone(&shard), consumption),
                )
            }),
            counts: Arc::clone(&counts),
            forward: runtime.block_on(async { Forward::new(settings.internal) }),
            authorization: settings.token.map(|token| format!("Bearer {token}")),
            max_request_bytes: settings.max_request_bytes,
            rocketmq_enabled: settings.rocketmq,
        });
        let (stop, stopped) = watch::channel(false);
        let tls = settings.tls.map(TlsAcceptor::from);
        runtime.spawn(accept(listener, tls, context, stopped));
        Ok(ShardServer {
            runtime: Some(runtime),
            stop,
            local_addr,
            shard,
            counts,
        })
    }

    /// Stop listening and drop every connection.
    pub fn stop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(std::time::Duration::from_secs(2));
        }
    }
}

impl Drop for ShardServer {
    fn drop(&mut self) {
        self.stop();
    }
}

async fn accept(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    context: Arc<Context>,
    mut stopped: watch::Receiver<bool>,
) {
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(_) => continue,
            },
            _ = stopped.changed() => return,
        };
        let _ = stream.set_nodelay(true);
        let context = Arc::clone(&context);
        let tls = tls.clone();
        tokio::spawn(async move {
            match tls {
                // A failed handshake ends only this connection, as a reset would.
                Some(tls) => {
                    if let Ok(stream) = tls.accept(stream).await {
                        serve(stream, context, peer).await;
                    }
                }
                None => serve(stream, context, peer).await,
            }
        });
    }
}

/// Serve one connection's HTTP/2 streams until it closes.
async fn serve<IO>(stream: IO, context: Arc<Context>, peer: SocketAddr)
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let in_flight = Arc::new(InFlight::default());
    let stream = Coalescing::new(stream, Arc::clone(&in_flight), HOLD);
    // Called on the connection's task as each request's headers arrive, so a request
    // counts as in flight before any answer that is held for it is written.
    let service = service_fn(move |request: Request<Incoming>| {
        let context = Arc::clone(&context);
        let answering = answered_at_once(request.uri().path()).then(|| in_flight.begin());
        async move {
            let response = route(&context, request, peer).await;
            drop(answering);
            Ok::<_, Infallible>(response)
        }
    });
    let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
        // No `date` header: gRPC answers do not need one, and every client would decode
        // and keep it as metadata on each answer.
        .auto_date_header(false)
        .initial_stream_window_size(4 << 20)
        .initial_connection_window_size(16 << 20)
        .max_frame_size(1 << 20)
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

/// The calls answered as soon as they are stored: answers held for them come soon. Long
/// polls (pulls, receives) and calls passed to the Python server do not hold others.
fn answered_at_once(path: &str) -> bool {
    matches!(
        path,
        SEND | SEND_BATCHES | ROCKETMQ_SEND | ROCKETMQ_ACK | ROCKETMQ_CHANGE_INVISIBLE
    )
}

async fn route(context: &Context, request: Request<Incoming>, peer: SocketAddr) -> Response<Body> {
    let path = request.uri().path();
    // rmq.v1's sends, pulls and a consumer's positions are always answered here; RocketMQ
    // v2's calls when the process serves them (its consume side may leave a request to
    // the Python server).
    let always = matches!(
        path,
        SEND | SEND_BATCHES | PULL | QUEUE_OFFSETS | FETCH_OFFSETS
    );
    let served = always
        || match path {
            ROCKETMQ_SEND => context.rocketmq_enabled,
            ROCKETMQ_RECEIVE | ROCKETMQ_ACK | ROCKETMQ_CHANGE_INVISIBLE => {
                context.rocketmq_enabled && context.consume.is_some()
            }
            _ => false,
        };
    let authorized = authorized(context, &request);
    if always && !authorized {
        context.counts.count(path, true);
        return refused(&Refusal::Unauthenticated(MISSING_TOKEN.to_owned()));
    }
    if !served || !authorized {
        let request = request.map(|body| body.boxed_unsync());
        return context.forward.send(request, peer).await;
    }
    let (parts, body) = request.into_parts();
    let collected = match Limited::new(body, context.max_request_bytes)
        .collect()
        .await
    {
        Ok(collected) => collected,
        Err(error) if error.downcast_ref::<LengthLimitError>().is_some() => {
            let limit = context.max_request_bytes;
            context.counts.count(parts.uri.path(), true);
            return grpc::status(
                grpc::RESOURCE_EXHAUSTED,
                &format!("received message larger than max (more than {limit} bytes)"),
            );
        }
        Err(_) => return grpc::status(grpc::UNAVAILABLE, "the request body did not arrive whole"),
    };
    let raw = collected.to_bytes();
    let path = parts.uri.path();
    let outcome = match grpc::request_message(&raw, &parts.headers, context.max_request_bytes) {
        Err(FrameProblem::NotOneMessage) if always => Outcome::Answer(refused(
            &Refusal::Malformed("the request is not one gRPC message".to_owned()),
        )),
        Err(FrameProblem::NotOneMessage) => Outcome::Decline,
        Err(problem) => Outcome::Answer(problem.status()),
        Ok(message) => match path {
            SEND => Outcome::Answer(context.shard.send(message, peer).await),
            SEND_BATCHES => Outcome::Answer(context.shard.send_batches(message, peer).await),
            PULL => Outcome::Answer(
                context
                    .shard
                    .pull(&message, grpc::timeout(&parts.headers))
                    .await,
            ),
            QUEUE_OFFSETS => Outcome::Answer(context.shard.queue_offsets(&message)),
            FETCH_OFFSETS => Outcome::Answer(context.shard.fetch_offsets(&message)),
            ROCKETMQ_SEND => Outcome::Answer(context.rocketmq.send(message, peer).await),
            _ => consume(context, path, &message, &parts.headers).await,
        },
    };
    let answered = matches!(outcome, Outcome::Answer(_));
    context.counts.count(path, answered);
    match outcome {
        Outcome::Answer(response) => response,
        Outcome::Decline => {
            let body = Full::new(raw)
                .map_err(|never| match never {})
                .boxed_unsync();
            context
                .forward
                .send(Request::from_parts(parts, body), peer)
                .await
        }
    }
}

async fn consume(
    context: &Context,
    path: &str,
    message: &[u8],
    headers: &http::HeaderMap,
) -> Outcome {
    let Some((receiver, acker)) = &context.consume else {
        return Outcome::Decline;
    };
    match path {
        ROCKETMQ_RECEIVE => receiver.receive(message, headers).await,
        ROCKETMQ_ACK => acker.ack(message),
        _ => acker.change_invisible(message),
    }
}

fn authorized(context: &Context, request: &Request<Incoming>) -> bool {
    match &context.authorization {
        None => true,
        Some(expected) => request
            .headers()
            .get("authorization")
            .is_some_and(|value| value.as_bytes() == expected.as_bytes()),
    }
}
