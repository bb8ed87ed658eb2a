//! The producer's sender and its route thread's side: `_start` opens the connections and
//! starts `rmqnet::client::Sender` with a thread resolving its outcomes (`resolve.rs`),
//! `_stop` ends both; the Python route thread waits in `_routes_wanted` for topics to
//! look up and pushes the answers in as data (`_set_route`, `_route_failed`). Apart from
//! the per-message methods because only this part owns threads and connections.

use std::sync::mpsc::channel;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use rmqnet::client::{Batch, Finished, SendOutcome, Sender, ShardChannels, Tls};

use crate::send_future::{Answer, BatchOutcome};

use super::{lock, resolve, seconds, PyProducerCore, SIGNAL_CHECK};

/// A started sender.
pub(super) struct Running {
    sender: Sender<Arc<BatchOutcome>>,
    resolver: JoinHandle<()>,
    /// How long a send waits for a topic's route.
    route_timeout: Duration,
}

impl PyProducerCore {
    pub(super) fn route_timeout(&self) -> Option<Duration> {
        lock(&self.running)
            .as_ref()
            .map(|running| running.route_timeout)
    }

    /// Send a batch that `send` filled; with no sender running, it fails as closed.
    pub(super) fn dispatch(&self, batch: Batch<Arc<BatchOutcome>>) {
        let running = lock(&self.running);
        match running.as_ref() {
            Some(running) => running.sender.dispatch(vec![batch]),
            None => {
                drop(running);
                Python::attach(|py| {
                    let finished = Finished {
                        batch,
                        outcome: SendOutcome::Closed,
                    };
                    resolve::resolve(py, &self.core, finished);
                });
            }
        }
    }
}

#[pymethods]
impl PyProducerCore {
    /// Start sending over the producer's own HTTP/2 connections: each call bounded by
    /// `timeout` seconds and carrying `metadata`; over TLS when `tls` (trusting
    /// `root_cert`, PEM, or else the system's roots, and expecting `server_name` when
    /// given).
    #[pyo3(signature = (*, timeout, metadata, tls=false, root_cert=None, server_name=None))]
    fn _start(
        &self,
        timeout: f64,
        metadata: Vec<(String, String)>,
        tls: bool,
        root_cert: Option<Vec<u8>>,
        server_name: Option<String>,
    ) -> PyResult<()> {
        let timeout = seconds(timeout, "timeout")?;
        let mut running = lock(&self.running);
        if running.is_some() {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(
                "the producer already sends; stop it first",
            ));
        }
        let tls = tls.then_some(Tls {
            root_cert,
            server_name,
        });
        let channels = ShardChannels::new(timeout, &metadata, tls)
            .map_err(pyo3::exceptions::PyValueError::new_err)?;
        let (outcomes, received) = channel();
        let core = Arc::clone(&self.core);
        let resolver = std::thread::Builder::new()
            .name("rmq-resolve".into())
            .spawn(move || resolve::resolve_all(received, &core))
            .map_err(|error| pyo3::exceptions::PyRuntimeError::new_err(error.to_string()))?;
        let sender = Sender::start(Arc::clone(&self.core), channels, outcomes)
            .map_err(pyo3::exceptions::PyRuntimeError::new_err)?;
        *running = Some(Running {
            sender,
            resolver,
            route_timeout: timeout,
        });
        Ok(())
    }

    /// Stop sending: wait (without the GIL) up to `timeout` seconds for every batch to
    /// end, then fail what is left and close the connections and threads.
    #[pyo3(signature = (timeout=None))]
    fn _stop(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<()> {
        let timeout = timeout
            .map(|timeout| seconds(timeout.max(0.0), "timeout"))
            .transpose()?;
        let running = lock(&self.running).take();
        if let Some(Running {
            sender, resolver, ..
        }) = running
        {
            py.detach(|| {
                sender.stop(timeout);
                // The sender is gone, so its outcomes end; the resolver ends after them.
                let _ = resolver.join();
            });
        }
        Ok(())
    }

    /// How many SendBatches calls the running sender made (0 when stopped).
    #[getter]
    fn _calls_made(&self) -> u64 {
        lock(&self.running)
            .as_ref()
            .map_or(0, |running| running.sender.calls_made())
    }

    /// For the route thread: the topics whose route is wanted, waiting (without the GIL)
    /// until there are some; None once the producer stopped or is closed and idle.
    fn _routes_wanted(&self, py: Python<'_>) -> Option<Vec<String>> {
        loop {
            let wanted = py.detach(|| self.core.wanted_routes(Instant::now() + SIGNAL_CHECK))?;
            if !wanted.is_empty() {
                return Some(wanted);
            }
        }
    }

    /// A topic's route: the endpoint of each queue's shard, by queue id; `fresh` when just
    /// asked of the supervisor (a queue missing from it is missing), not when cached.
    #[pyo3(signature = (topic, endpoints, fresh = true))]
    fn _set_route(&self, topic: &str, endpoints: Vec<String>, fresh: bool) {
        lock(&self.route_failures).remove(topic);
        self.core.set_route(topic, endpoints, fresh);
    }

    /// Looking up `topic`'s route failed with `error`: the sends waiting for it fail with
    /// it, and so do the batches waiting for it, unless `retryable` and their retry time
    /// is not over.
    fn _route_failed(&self, py: Python<'_>, topic: &str, error: Py<PyAny>, retryable: bool) {
        lock(&self.route_failures).insert(topic.to_owned(), error.clone_ref(py));
        self.core.notify();
        for batch in self.core.take_unrouted(topic) {
            let batch = if retryable {
                match self.core.retry_later(batch) {
                    Ok(()) => continue,
                    Err(batch) => batch,
                }
            } else {
                batch
            };
            let outcome = Arc::clone(&batch.outcome);
            outcome.finish(py, Answer::Failed(error.clone_ref(py)));
            self.core.finished(batch);
        }
    }
}
