//! Everything the data plane does not answer itself goes, unchanged, to the shard
//! process's Python gRPC server on a loopback port: the other `rmq.v1.Shard` methods,
//! health, the RocketMQ v2 service, and hot-path requests it declines (which the Python
//! path answers with its precise errors). Streams pass through both ways, trailers too.

use std::net::SocketAddr;

use http::{HeaderValue, Request, Response, Uri};
use http_body_util::BodyExt;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use crate::grpc::{self, Body};

/// Names the client's address for the Python server, which sees only the proxy's.
pub const PEER_HEADER: &str = "x-rmq-peer";

#[derive(Clone)]
pub struct Forward {
    client: Client<HttpConnector, Body>,
    base: String,
}

impl Forward {
    pub fn new(internal: SocketAddr) -> Self {
        let mut connector = HttpConnector::new();
        // Without it, small forwarded calls wait ~40 ms on delayed acknowledgements.
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            .http2_only(true)
            .http2_initial_stream_window_size(4 << 20)
            .http2_initial_connection_window_size(16 << 20)
            .build(connector);
        Forward {
            client,
            base: format!("http://{internal}"),
        }
    }

    pub async fn send(&self, request: Request<Body>, peer: SocketAddr) -> Response<Body> {
        let (mut parts, body) = request.into_parts();
        let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        parts.uri = match format!("{}{path}", self.base).parse::<Uri>() {
            Ok(uri) => uri,
            Err(_) => return grpc::status(grpc::INTERNAL, "cannot forward this path"),
        };
        // Never trust a client's own claim of where it is.
        parts.headers.remove(PEER_HEADER);
        if let Ok(value) = HeaderValue::from_str(&peer.to_string()) {
            parts.headers.insert(PEER_HEADER, value);
        }
        match self.client.request(Request::from_parts(parts, body)).await {
            Ok(response) => response.map(|body| body.boxed_unsync()),
            Err(error) => grpc::status(
                grpc::UNAVAILABLE,
                &format!("the shard process's Python server does not answer: {error}"),
            ),
        }
    }
}
