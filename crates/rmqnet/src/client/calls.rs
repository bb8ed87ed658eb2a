//! Unary gRPC calls for everything a client does besides producing: routes, topic admin,
//! lookups, offsets and the consumer's long-polling pulls. Requests and answers are bytes
//! the caller encodes and decodes; the connections are `ShardChannels`' (one HTTP/2
//! connection per endpoint, plaintext or TLS, the token on every call), on a runtime of
//! their own.
//!
//! Two forms: `call` waits for the answer; `start` returns at once and hands the answer
//! to a completion function on the runtime's thread, so that many pulls can be in flight
//! from one caller.

use std::sync::mpsc;
use std::time::Duration;

use bytes::Bytes;
use http::uri::PathAndQuery;
use tokio::runtime::{Handle, Runtime};
use tokio::task::AbortHandle;
use tonic::Code;

use super::channels::{CallError, ShardChannels};
use super::tls::Tls;

/// A client's connections and the runtime its calls run on.
pub struct UnaryCalls {
    /// Always Some until dropped (see `Drop`).
    runtime: Option<Runtime>,
    channels: std::sync::Arc<ShardChannels>,
}

/// A call started by `UnaryCalls::start`; `cancel` drops it (its completion never runs).
pub struct CallHandle(AbortHandle);

impl CallHandle {
    pub fn cancel(&self) {
        self.0.abort();
    }
}

fn method_path(method: &str) -> Result<PathAndQuery, CallError> {
    PathAndQuery::try_from(method.to_owned()).map_err(|error| CallError {
        code: Code::InvalidArgument as i32,
        message: format!("bad method path {method:?}: {error}"),
        resume_offset: None,
    })
}

impl UnaryCalls {
    /// Calls bounded by `timeout` unless they name their own, carrying `metadata` (the
    /// token), over TLS when `tls` is given.
    pub fn new(
        timeout: Duration,
        metadata: &[(String, String)],
        tls: Option<Tls>,
    ) -> Result<Self, String> {
        let channels = ShardChannels::new(timeout, metadata, tls)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("rmq-calls")
            .enable_all()
            .build()
            .map_err(|error| format!("cannot start the client's calls: {error}"))?;
        Ok(UnaryCalls {
            runtime: Some(runtime),
            channels: std::sync::Arc::new(channels),
        })
    }

    fn handle(&self) -> &Handle {
        self.runtime
            .as_ref()
            .expect("the runtime lives as long as the calls")
            .handle()
    }

    /// Call `method` (such as `/rmq.v1.Route/GetRoute`) on `endpoint` and hand its answer
    /// to `done` on the runtime's thread, unless the call is cancelled first. `timeout`
    /// (default: the one given to `new`) bounds the whole call.
    pub fn start<F>(
        &self,
        endpoint: &str,
        method: &str,
        body: Bytes,
        timeout: Option<Duration>,
        done: F,
    ) -> Result<CallHandle, CallError>
    where
        F: FnOnce(Result<Bytes, CallError>) + Send + 'static,
    {
        let path = method_path(method)?;
        let channels = std::sync::Arc::clone(&self.channels);
        let timeout = timeout.unwrap_or_else(|| channels.timeout());
        let endpoint = endpoint.to_owned();
        let task = self.handle().spawn(async move {
            done(channels.unary_within(&endpoint, path, body, timeout).await);
        });
        Ok(CallHandle(task.abort_handle()))
    }

    /// Call `method` on `endpoint` and wait for the answer. Not from the runtime's thread.
    pub fn call(
        &self,
        endpoint: &str,
        method: &str,
        body: Bytes,
        timeout: Option<Duration>,
    ) -> Result<Bytes, CallError> {
        let (answer, received) = mpsc::sync_channel(1);
        self.start(endpoint, method, body, timeout, move |result| {
            let _ = answer.send(result);
        })?;
        received.recv().unwrap_or_else(|_| {
            Err(CallError {
                code: Code::Cancelled as i32,
                message: "the call was dropped".into(),
                resume_offset: None,
            })
        })
    }
}

impl Drop for UnaryCalls {
    /// The last owner may let go on one of the runtime's own threads (a completion that
    /// held it), where a runtime cannot wait for its threads: then it ends in the
    /// background.
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            if Handle::try_current().is_ok() {
                runtime.shutdown_background();
            } else {
                drop(runtime);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn calls() -> UnaryCalls {
        UnaryCalls::new(Duration::from_secs(5), &[], None).expect("calls")
    }

    #[test]
    fn nobody_listening_is_unavailable() {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let answer = calls().call(&format!("127.0.0.1:{port}"), "/a.B/C", Bytes::new(), None);
        assert_eq!(answer.expect_err("refused").code, Code::Unavailable as i32);
    }

    #[test]
    fn a_silent_server_exceeds_the_deadline_and_a_started_call_can_be_cancelled() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
        let endpoint = listener.local_addr().expect("address").to_string();
        let calls = calls();
        let short = Some(Duration::from_millis(200));
        let answer = calls.call(&endpoint, "/a.B/C", Bytes::new(), short);
        assert_eq!(
            answer.expect_err("silent").code,
            Code::DeadlineExceeded as i32
        );
        let (ended, received) = mpsc::channel();
        let handle = calls
            .start(&endpoint, "/a.B/C", Bytes::new(), short, move |_| {
                let _ = ended.send(());
            })
            .expect("started");
        handle.cancel();
        assert!(received.recv_timeout(Duration::from_millis(600)).is_err());
    }

    #[test]
    fn a_path_that_is_not_one_is_refused_before_calling() {
        let answer = calls().start(
            "127.0.0.1:1",
            "no spaces allowed",
            Bytes::new(),
            None,
            |_| {},
        );
        assert_eq!(
            answer.err().map(|error| error.code),
            Some(Code::InvalidArgument as i32)
        );
    }
}
