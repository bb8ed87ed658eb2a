//! `rmq._rmqcore.ShardServer`: the native data plane of a shard process (`rmqnet`),
//! started by `rmq.cluster.shard` in front of the process's Python gRPC server. Python
//! tells it the topics' layouts and shares its long-poll wake-ups; it never calls Python.

use std::collections::HashMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rmqnet::codec::batches;
use rmqnet::counts::RequestCounts;
use rmqnet::rocketmq::receive::Consumption;
use rmqnet::shard::refused_answer;
use rmqnet::signals::QueueSignals;
use rmqnet::status::Refusal;
use rmqnet::{Limits, Settings, Shard, ShardServer};

use crate::errors::to_py_err;
use crate::lease_book::PyLeaseBook;
use crate::store::PyStore;

#[pyclass(name = "ShardServer", module = "rmq._rmqcore", frozen)]
pub struct PyShardServer {
    server: Mutex<Option<ShardServer>>,
    shard: Arc<Shard>,
    signals: Arc<QueueSignals>,
    counts: Arc<RequestCounts>,
    #[pyo3(get)]
    port: u16,
}

fn address(host: &str, port: u16) -> PyResult<SocketAddr> {
    (host, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut found| found.next())
        .ok_or_else(|| PyValueError::new_err(format!("cannot resolve {host}:{port}")))
}

fn limit(limits: &HashMap<String, u64>, name: &str) -> PyResult<usize> {
    limits
        .get(name)
        .map(|&value| value as usize)
        .ok_or_else(|| PyValueError::new_err(format!("limits has no {name}")))
}

#[pymethods]
impl PyShardServer {
    #[new]
    #[pyo3(signature = (host, port, internal_port, stores, limits, *, token = None, rocketmq = false, leases = None, max_delivery_attempts = 16, tls_cert = None, tls_key = None))]
    #[expect(
        clippy::too_many_arguments,
        reason = "the Python constructor's keywords"
    )]
    fn new(
        py: Python<'_>,
        host: &str,
        port: u16,
        internal_port: u16,
        stores: Vec<(i32, PyRef<'_, PyStore>)>,
        limits: HashMap<String, u64>,
        token: Option<String>,
        rocketmq: bool,
        leases: Option<Vec<(i32, PyRef<'_, PyLeaseBook>)>>,
        max_delivery_attempts: i32,
        tls_cert: Option<&[u8]>,
        tls_key: Option<&[u8]>,
    ) -> PyResult<Self> {
        let tls = match (tls_cert, tls_key) {
            (Some(cert), Some(key)) => {
                Some(rmqnet::server_tls::server_config(cert, key).map_err(PyValueError::new_err)?)
            }
            (None, None) => None,
            _ => {
                return Err(PyValueError::new_err(
                    "TLS needs both a certificate and its key",
                ))
            }
        };
        let consumption = leases.map(|books| {
            Arc::new(Consumption {
                books: books
                    .iter()
                    .map(|(shard, book)| (*shard, Arc::clone(&book.book)))
                    .collect(),
                max_attempts: max_delivery_attempts,
            })
        });
        let stores = stores
            .iter()
            .map(|(shard, store)| (*shard, Arc::clone(&store.inner)))
            .collect();
        let shard = Shard::new(
            stores,
            Limits {
                max_body_bytes: limit(&limits, "max_body_bytes")?,
                max_batch_messages: limit(&limits, "max_batch_messages")?,
                max_batch_bytes: limit(&limits, "max_batch_bytes")?,
                default_pull_messages: limit(&limits, "default_pull_messages")?,
                max_pull_messages: limit(&limits, "max_pull_messages")?,
                default_pull_bytes: limit(&limits, "default_pull_bytes")?,
                max_pull_bytes: limit(&limits, "max_pull_bytes")?,
                max_wait_ms: limit(&limits, "max_wait_ms")? as u64,
            },
        );
        let settings = Settings {
            bind: address(host, port)?,
            internal: address("127.0.0.1", internal_port)?,
            token,
            max_request_bytes: limit(&limits, "max_request_bytes")?,
            rocketmq,
            consumption,
            tls,
        };
        let server = py
            .detach(|| ShardServer::start(settings, shard))
            .map_err(|error| {
                PyOSError::new_err(format!("cannot listen on {host}:{port}: {error}"))
            })?;
        Ok(PyShardServer {
            port: server.local_addr.port(),
            shard: Arc::clone(&server.shard),
            signals: Arc::clone(&server.shard.signals),
            counts: Arc::clone(&server.counts),
            server: Mutex::new(Some(server)),
        })
    }

    /// Queue `i` of `topic` lives in shard directory `shards[i]`.
    fn host_topic(&self, topic: &str, shards: Vec<i32>) {
        self.shard.host_topic(topic, shards);
    }

    /// Create the files of this process's queues of `topic` from `first_queue` on that
    /// their first put would create, so the data plane does not (a topic just created
    /// or grown); without the GIL.
    fn prepare_queues(&self, py: Python<'_>, topic: &str, first_queue: i32) {
        py.detach(|| self.shard.prepare_queues(topic, first_queue));
    }

    fn drop_topic(&self, topic: &str) {
        self.shard.drop_topic(topic);
    }

    /// A send through the Python path stored messages in this queue: wake its pulls.
    fn notify(&self, topic: &str, queue_id: i32) {
        self.signals.notify(topic, queue_id);
    }

    fn version(&self, topic: &str, queue_id: i32) -> u64 {
        self.signals.version(topic, queue_id)
    }

    /// Block (without the GIL) until the queue's version is no longer `version`, or
    /// `timeout` seconds; whether it changed.
    fn wait(&self, py: Python<'_>, topic: &str, queue_id: i32, version: u64, timeout: f64) -> bool {
        let timeout = Duration::from_secs_f64(timeout.max(0.0));
        let signals = Arc::clone(&self.signals);
        py.detach(|| signals.wait_blocking(topic, queue_id, version, timeout))
    }

    /// One `SendRequest` of the Python server's `SendStream`, stored by the shard's one
    /// send function (`Shard::store_request`, as `Send` and `SendBatches` here): the
    /// encoded `SendStreamResponse`, stored or refused with its status. Raises
    /// `InvalidArgumentError` for bytes that are not a `SendRequest` (the stream ends).
    #[pyo3(signature = (raw, born_host = None))]
    fn answer_send<'py>(
        &self,
        py: Python<'py>,
        raw: &[u8],
        born_host: Option<&str>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let peer = born_host.and_then(|host| host.parse::<SocketAddr>().ok());
        let shard = Arc::clone(&self.shard);
        let answer = py.detach(|| match shard.store_request(raw, peer) {
            Ok(response) => Ok(batches::stored_answer(&response).unwrap_or_default()),
            Err(Refusal::Malformed(text)) => Err(text),
            Err(refusal) => Ok(refused_answer(raw, &refusal)),
        });
        match answer {
            Ok(answer) => Ok(PyBytes::new(py, &answer)),
            Err(text) => Err(to_py_err(py, rmqcore::Error::invalid("request", text))),
        }
    }

    /// `(method, answered, declined)` for each method the data plane may answer: how many
    /// requests it answered itself and how many it passed to the Python server.
    fn request_counts(&self) -> Vec<(&'static str, u64, u64)> {
        self.counts.snapshot()
    }

    /// Stop listening and drop every connection.
    fn close(&self, py: Python<'_>) {
        let server = self
            .server
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(mut server) = server {
            py.detach(move || server.stop());
        }
    }
}

/// The data plane's table of status codes, by the `rmq.errors` class of each engine
/// error and shard refusal (tests compare it with the Python broker's `rmq.broker.status` table).
#[pyfunction]
pub fn native_status_codes() -> HashMap<&'static str, i32> {
    rmqnet::status::CODES_BY_CLASS.iter().copied().collect()
}

/// The data plane's table of `apache.rocketmq.v2` codes for engine errors, by `rmq.errors`
/// class (tests compare it with `rmq.rocketmq.status`).
#[pyfunction]
pub fn native_rocketmq_status_codes() -> HashMap<&'static str, i32> {
    rmqnet::rocketmq::status::CODES_BY_CLASS
        .iter()
        .map(|(class, code)| (*class, *code as i32))
        .collect()
}

/// The properties both v2 paths refuse as user properties (the Python path's
/// `rmq.rocketmq.message_codec.SYSTEM_PROPERTIES` is this list).
#[pyfunction]
pub fn native_rocketmq_system_properties() -> Vec<&'static str> {
    rmqnet::rocketmq::properties::SYSTEM_PROPERTIES.to_vec()
}
