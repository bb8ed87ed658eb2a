//! Sending a producer's batches with no Python between one batch of a queue and the next.
//!
//! A batch leaves as one SendBatches call over `native_channel.rs` connections, carrying
//! every batch given with it (all for one shard). When the answer comes, on the sender's
//! own thread: each stored batch frees its queue, and the batches now ready for those
//! queues leave at once, in one call to the same shard. Only then are the answered
//! batches handed to the resolver thread, which takes the GIL to resolve their futures
//! (running the application's callbacks) or, for a refused batch or a failed call, to
//! give the batch back to the Python producer (`_native_refused`), which retries or
//! fails it as it does for grpcio.
//!
//! Callbacks of a queue run in the order of its batches: a queue has one batch in flight,
//! and its answer is queued for the resolver before the next batch is sent.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;
use tokio::runtime::{Handle, Runtime};

use crate::native_channel::{CallError, ShardChannels};
use crate::producer_core::{Batch, Core, PyOutgoingBatch};
use crate::send_batches::{encode_parts, parse_answers, BatchAnswer};
use crate::send_future::Answer;

const SEND_BATCHES: &str = "/rmq.v1.Shard/SendBatches";
/// `grpc.StatusCode` numbers used for failures found on this side.
const UNKNOWN: i32 = 2;
const CANCELLED: i32 = 1;
/// How long stopping waits for cancelled calls to be dropped.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(200);

/// An answered batch on its way to the resolver thread.
enum Resolution {
    /// Stored: the batch and its encoded `SendResponse`.
    Stored(Batch, Bytes),
    /// Refused by the shard, or its call failed: the status code and message.
    Refused(Batch, i32, String),
}

struct Shared {
    core: Arc<Core>,
    channels: ShardChannels,
    handle: Handle,
    resolutions: Sender<Resolution>,
    /// Calls in flight, so that stopping can wait for them.
    calls: Mutex<usize>,
    calls_ended: Condvar,
}

/// The runtime, connections and resolver thread of one producer.
pub struct NativeSender {
    shared: Arc<Shared>,
    runtime: Runtime,
}

impl NativeSender {
    /// Start the sender's thread and the resolver thread; `producer` is the Python
    /// producer, which gets back the batches that were not stored.
    pub fn start(
        core: Arc<Core>,
        producer: Py<PyAny>,
        timeout: Duration,
        metadata: &[(String, String)],
    ) -> Result<Self, String> {
        let channels = ShardChannels::new(timeout, metadata)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("rmq-send")
            .enable_all()
            .build()
            .map_err(|error| format!("cannot start the producer's sender: {error}"))?;
        let (resolutions, receiver) = channel();
        let resolver_core = Arc::clone(&core);
        std::thread::Builder::new()
            .name("rmq-resolve".into())
            .spawn(move || resolve_all(&receiver, &resolver_core, producer))
            .map_err(|error| format!("cannot start the producer's resolver: {error}"))?;
        let shared = Arc::new(Shared {
            core,
            channels,
            handle: runtime.handle().clone(),
            resolutions,
            calls: Mutex::new(0),
            calls_ended: Condvar::new(),
        });
        Ok(NativeSender { shared, runtime })
    }

    /// Send `batches` (all for the shard at `endpoint`) in one call.
    pub fn send(&self, endpoint: String, batches: Vec<Batch>) {
        start_call(&self.shared, endpoint, batches);
    }

    /// Wait up to `timeout` (None: for ever) for the calls in flight to end, then stop;
    /// batches of calls still in flight fail as cancelled.
    pub fn stop(self, timeout: Option<Duration>) {
        let deadline = timeout.map(|timeout| Instant::now() + timeout);
        let mut calls = lock(&self.shared.calls);
        while *calls > 0 {
            let wait = match deadline {
                Some(deadline) => match deadline.checked_duration_since(Instant::now()) {
                    Some(left) => left,
                    None => break,
                },
                None => Duration::from_secs(1),
            };
            calls = self
                .shared
                .calls_ended
                .wait_timeout(calls, wait)
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
        }
        drop(calls);
        // Dropping the tasks of calls still in flight fails their batches (`InFlight`);
        // the resolver thread ends once the last of them is resolved.
        self.runtime.shutdown_timeout(SHUTDOWN_GRACE);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The batches of one call; dropped before the answer came (the sender stopped), they
/// go to the resolver as cancelled.
struct InFlight {
    shared: Arc<Shared>,
    endpoint: String,
    batches: Vec<Batch>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        for batch in self.batches.drain(..) {
            let message = "the producer closed before the broker answered".to_owned();
            let _ = self
                .shared
                .resolutions
                .send(Resolution::Refused(batch, CANCELLED, message));
        }
        let mut calls = lock(&self.shared.calls);
        *calls -= 1;
        self.shared.calls_ended.notify_all();
    }
}

fn start_call(shared: &Arc<Shared>, endpoint: String, batches: Vec<Batch>) {
    let body = Bytes::from(encode_parts(batches.iter().map(|batch| {
        (
            batch.topic.as_str(),
            batch.queue_id,
            batch.messages.as_slice(),
        )
    })));
    *lock(&shared.calls) += 1;
    let mut call = InFlight {
        shared: Arc::clone(shared),
        endpoint,
        batches,
    };
    shared.handle.spawn(async move {
        let answer = call
            .shared
            .channels
            .unary(&call.endpoint, SEND_BATCHES, body)
            .await;
        let batches = std::mem::take(&mut call.batches);
        answered(&call.shared, &call.endpoint, batches, answer);
    });
}

/// Free the queues of the stored batches and send their next batches, then queue every
/// answered batch for the resolver.
fn answered(
    shared: &Arc<Shared>,
    endpoint: &str,
    batches: Vec<Batch>,
    answer: Result<Bytes, CallError>,
) {
    let mut resolutions = Vec::with_capacity(batches.len());
    let mut following = Vec::new();
    match answer {
        Ok(raw) => match parse_answers(&raw) {
            Some(answers) if answers.len() == batches.len() => {
                for (mut batch, answer) in batches.into_iter().zip(answers) {
                    match answer {
                        BatchAnswer::Stored(range) => {
                            batch.released = true;
                            following.extend(shared.core.release(&batch.key(), true));
                            resolutions.push(Resolution::Stored(batch, raw.slice(range)));
                        }
                        BatchAnswer::Refused(code, message) => {
                            resolutions.push(Resolution::Refused(batch, code, message));
                        }
                    }
                }
            }
            _ => {
                let message = "the broker's SendBatches answer is malformed or has a wrong count";
                for batch in batches {
                    resolutions.push(Resolution::Refused(batch, UNKNOWN, message.to_owned()));
                }
            }
        },
        Err(error) => {
            for batch in batches {
                resolutions.push(Resolution::Refused(
                    batch,
                    error.code,
                    error.message.clone(),
                ));
            }
        }
    }
    // Queued before the next batches leave, so a queue's callbacks keep their order.
    for resolution in resolutions {
        let _ = shared.resolutions.send(resolution);
    }
    if !following.is_empty() {
        let now = Instant::now();
        for batch in &mut following {
            batch.first_sent.get_or_insert(now);
        }
        start_call(shared, endpoint.to_owned(), following);
    }
}

/// The resolver thread: takes the GIL once for every answer waiting.
fn resolve_all(receiver: &Receiver<Resolution>, core: &Core, producer: Py<PyAny>) {
    while let Ok(first) = receiver.recv() {
        Python::attach(|py| {
            let mut next = Some(first);
            while let Some(resolution) = next {
                resolve(py, core, &producer, resolution);
                next = receiver.try_recv().ok();
            }
        });
    }
    Python::attach(|_py| drop(producer));
}

static SEND_RESPONSE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static BROKER_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();

fn resolve(py: Python<'_>, core: &Core, producer: &Py<PyAny>, resolution: Resolution) {
    match resolution {
        Resolution::Stored(batch, response) => {
            let answer = match stored_response(py, &response, batch.count) {
                Ok(answer) => answer,
                Err(error) => Answer::Failed(error.into_value(py).into_any()),
            };
            core.finish(py, batch, answer);
        }
        Resolution::Refused(batch, code, message) => {
            let handed = Py::new(py, PyOutgoingBatch::new(batch)).and_then(|batch| {
                producer.call_method1(py, "_native_refused", (batch, code, message))
            });
            if let Err(error) = handed {
                error.write_unraisable(py, Some(producer.bind(py)));
            }
        }
    }
}

/// The `rmq.v1.SendResponse` of a stored batch, checked to answer each of its `count`
/// messages.
fn stored_response(py: Python<'_>, response: &[u8], count: usize) -> PyResult<Answer> {
    let class = SEND_RESPONSE.import(py, "rmq.proto.v1.broker_pb2", "SendResponse")?;
    let decoded = class.call_method1("FromString", (pyo3::types::PyBytes::new(py, response),))?;
    if decoded.getattr("msg_ids")?.len()? != count {
        let error = BROKER_ERROR.import(py, "rmq.client.errors", "BrokerError")?;
        return Err(PyErr::from_value(
            error.call1(("the broker answered a batch with a wrong count",))?,
        ));
    }
    Ok(Answer::Stored(decoded.unbind()))
}
