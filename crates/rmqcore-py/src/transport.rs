//! `rmq._rmqcore.Transport` and `PendingCall`: the Python face of
//! `rmqnet::client::UnaryCalls`, the client's unary calls (routes, admin, lookups,
//! offsets, pulls) over its own HTTP/2 connections. Argument conversion only: a failed
//! call becomes the exception of the one client table (`errors::broker_error`).
//!
//! A started call's completion function runs on a thread of the transport's own
//! (`rmq-call-done`), not on the connections' runtime: taking the GIL there would stall
//! every connection while Python runs.

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rmqnet::client::{CallError, CallHandle, Tls, UnaryCalls};

use crate::attached_thread::run_attached;
use crate::errors::broker_error;

/// How long a blocking call sleeps before it checks for Ctrl-C.
const SIGNAL_CHECK: Duration = Duration::from_millis(100);
/// gRPC's CANCELLED, for a call cancelled before its answer.
const CANCELLED: i32 = 1;

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn seconds(value: Option<f64>) -> PyResult<Option<Duration>> {
    value
        .map(|value| {
            Duration::try_from_secs_f64(value.max(0.0))
                .map_err(|_| PyTypeError::new_err("timeout must be a number of seconds"))
        })
        .transpose()
}

fn failure(py: Python<'_>, error: &CallError, what: &str) -> PyErr {
    let message = if what.is_empty() {
        error.message.clone()
    } else {
        format!("{what}: {}", error.message)
    };
    broker_error(py, error.code, message, error.resume_offset)
}

/// A completed call and the function to hand it to.
type Completion = (Py<PyPendingCall>, Py<PyAny>);

/// A client's connections; see the module comment. Thread-safe.
#[pyclass(frozen, module = "rmq._rmqcore", name = "Transport")]
pub struct PyTransport {
    calls: Mutex<Option<UnaryCalls>>,
    completions: Mutex<Option<Sender<Completion>>>,
}

/// A call started by `Transport.start`.
#[pyclass(frozen, module = "rmq._rmqcore", name = "PendingCall")]
pub struct PyPendingCall {
    outcome: Mutex<Option<Result<Bytes, CallError>>>,
    handle: Mutex<Option<CallHandle>>,
}

/// The completion thread's loop (attached to Python for its life, `attached_thread.rs`).
fn run_completions(received: Receiver<Completion>) {
    run_attached(received, |py, (pending, callback), _| {
        if let Err(error) = callback.call1(py, (pending,)) {
            error.write_unraisable(py, Some(callback.bind(py)));
        }
    });
}

impl PyTransport {
    fn with_calls<T>(
        &self,
        py: Python<'_>,
        use_calls: impl FnOnce(&UnaryCalls) -> T,
    ) -> PyResult<T> {
        match lock(&self.calls).as_ref() {
            Some(calls) => Ok(use_calls(calls)),
            None => Err(crate::errors::rmq_error(
                py,
                "StoreClosedError",
                "the client is closed",
            )),
        }
    }
}

#[pymethods]
impl PyTransport {
    /// Calls bounded by `timeout` seconds unless they name their own, carrying
    /// `metadata`; over TLS when `tls` (trusting `root_cert`, PEM, or else the system's
    /// roots, and expecting `server_name` when given).
    #[new]
    #[pyo3(signature = (*, timeout, metadata, tls=false, root_cert=None, server_name=None))]
    fn new(
        timeout: f64,
        metadata: Vec<(String, String)>,
        tls: bool,
        root_cert: Option<Vec<u8>>,
        server_name: Option<String>,
    ) -> PyResult<Self> {
        let timeout = seconds(Some(timeout))?.unwrap_or_default();
        let tls = tls.then_some(Tls {
            root_cert,
            server_name,
        });
        let calls = UnaryCalls::new(timeout, &metadata, tls).map_err(PyValueError::new_err)?;
        let (completions, received) = mpsc::channel();
        std::thread::Builder::new()
            .name("rmq-call-done".into())
            .spawn(move || run_completions(received))
            .map_err(|error| PyRuntimeError::new_err(error.to_string()))?;
        Ok(PyTransport {
            calls: Mutex::new(Some(calls)),
            completions: Mutex::new(Some(completions)),
        })
    }

    /// Call `method` (such as "/rmq.v1.Route/GetRoute") on `endpoint` with the request's
    /// bytes and return the answer's; a failure raises the client's exception for its
    /// status, its message prefixed by `what`.
    #[pyo3(signature = (endpoint, method, request, *, timeout=None, what=""))]
    fn call<'py>(
        &self,
        py: Python<'py>,
        endpoint: &str,
        method: &str,
        request: &[u8],
        timeout: Option<f64>,
        what: &str,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let timeout = seconds(timeout)?;
        let (answer, received) = mpsc::sync_channel(1);
        let body = Bytes::copy_from_slice(request);
        let started = self.with_calls(py, |calls| {
            calls.start(endpoint, method, body, timeout, move |result| {
                let _ = answer.send(result);
            })
        })?;
        let handle = started.map_err(|error| failure(py, &error, what))?;
        // In a mutex only to be shared with the GIL-less wait (a receiver is not Sync).
        let received = Mutex::new(received);
        loop {
            match py.detach(|| lock(&received).recv_timeout(SIGNAL_CHECK)) {
                Ok(Ok(body)) => return Ok(PyBytes::new(py, &body)),
                Ok(Err(error)) => return Err(failure(py, &error, what)),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if let Err(interrupted) = py.check_signals() {
                        handle.cancel();
                        return Err(interrupted);
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let error = CallError {
                        code: CANCELLED,
                        message: "the client was closed during the call".into(),
                        resume_offset: None,
                    };
                    return Err(failure(py, &error, what));
                }
            }
        }
    }

    /// Start calling `method` on `endpoint`; once it ends (and unless it is cancelled
    /// first), `callback(pending_call)` runs on the transport's completion thread.
    #[pyo3(signature = (endpoint, method, request, callback, *, timeout=None))]
    fn start(
        &self,
        py: Python<'_>,
        endpoint: &str,
        method: &str,
        request: &[u8],
        callback: Py<PyAny>,
        timeout: Option<f64>,
    ) -> PyResult<Py<PyPendingCall>> {
        let timeout = seconds(timeout)?;
        let pending = Py::new(
            py,
            PyPendingCall {
                outcome: Mutex::new(None),
                handle: Mutex::new(None),
            },
        )?;
        let Some(completions) = lock(&self.completions).clone() else {
            return Err(crate::errors::rmq_error(
                py,
                "StoreClosedError",
                "the client is closed",
            ));
        };
        let finished = pending.clone_ref(py);
        let body = Bytes::copy_from_slice(request);
        let started = self.with_calls(py, |calls| {
            calls.start(endpoint, method, body, timeout, move |result| {
                *lock(&finished.get().outcome) = Some(result);
                let _ = completions.send((finished, callback));
            })
        })?;
        match started {
            Ok(handle) => *lock(&pending.get().handle) = Some(handle),
            Err(error) => return Err(failure(py, &error, "")),
        }
        Ok(pending)
    }

    /// Close the connections; calls in flight are dropped, later ones fail as closed.
    fn close(&self, py: Python<'_>) {
        let calls = lock(&self.calls).take();
        lock(&self.completions).take();
        py.detach(move || drop(calls));
    }
}

impl PyPendingCall {
    /// The answer's bytes, shared rather than copied; a failure raises as `result()`.
    pub fn answer(&self, py: Python<'_>) -> PyResult<Bytes> {
        match lock(&self.outcome).as_ref() {
            Some(Ok(body)) => Ok(body.clone()),
            Some(Err(error)) => Err(failure(py, error, "")),
            None => Err(PyRuntimeError::new_err("the call has not ended")),
        }
    }
}

#[pymethods]
impl PyPendingCall {
    /// Whether the call ended (answered, failed or cancelled).
    fn done(&self) -> bool {
        lock(&self.outcome).is_some()
    }

    /// The answer's bytes; a failure raises the client's exception for its status.
    fn result<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        match lock(&self.outcome).as_ref() {
            Some(Ok(body)) => Ok(PyBytes::new(py, body)),
            Some(Err(error)) => Err(failure(py, error, "")),
            None => Err(PyRuntimeError::new_err("the call has not ended")),
        }
    }

    /// (status code, message) of a failed call, as `grpc.StatusCode` numbers it; None
    /// when it was answered or has not ended.
    #[getter]
    fn error(&self) -> Option<(i32, String)> {
        match lock(&self.outcome).as_ref() {
            Some(Err(error)) => Some((error.code, error.message.clone())),
            _ => None,
        }
    }

    /// For a failed pull that met a lost tier segment: the queue offset past it, as the
    /// shard sent it beside the status; None otherwise.
    #[getter]
    fn resume_offset(&self) -> Option<i64> {
        match lock(&self.outcome).as_ref() {
            Some(Err(error)) => error.resume_offset,
            _ => None,
        }
    }

    /// Drop the call: its callback will not run.
    fn cancel(&self) {
        if let Some(handle) = lock(&self.handle).take() {
            handle.cancel();
        }
        let mut outcome = lock(&self.outcome);
        if outcome.is_none() {
            *outcome = Some(Err(CallError {
                code: CANCELLED,
                message: "cancelled".into(),
                resume_offset: None,
            }));
        }
    }
}
