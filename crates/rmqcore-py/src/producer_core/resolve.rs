//! The thread that resolves the futures of the batches the sender finished: attached to
//! Python for its life (`attached_thread.rs`), it holds the GIL for every run of outcomes
//! waiting, turns each `SendOutcome` into the batch's result or exception (the exception
//! through the binding's one error table), runs the callbacks, and only then takes the
//! batch off the books, so that a flush that returns has every callback run.

use std::sync::mpsc::Receiver;
use std::sync::Arc;

use pyo3::prelude::*;
use rmqnet::client::{Finished, SendOutcome};

use crate::attached_thread::run_attached;
use crate::errors::{broker_error, invalid, rmq_error};
use crate::send_future::{Answer, BatchOutcome};

use super::Core;

pub(super) fn resolve_all(received: Receiver<Finished<Arc<BatchOutcome>>>, core: &Core) {
    run_attached(received, |py, first, received| {
        let mut next = Some(first);
        while let Some(finished) = next {
            resolve(py, core, finished);
            next = received.try_recv().ok();
        }
    });
}

pub(super) fn resolve(py: Python<'_>, core: &Core, finished: Finished<Arc<BatchOutcome>>) {
    let Finished { batch, outcome } = finished;
    let topic = &batch.topic;
    let queue_id = batch.queue_id;
    let error = |error: PyErr| Answer::Failed(error.into_value(py).into_any());
    let answer = match outcome {
        SendOutcome::Stored(response) => Answer::Stored(response),
        SendOutcome::Refused { code, message } => error(broker_error(
            py,
            code,
            format!("send to {topic}/{queue_id}: {message}"),
            None,
        )),
        SendOutcome::NoSuchQueue { queue_id, queues } => error(invalid(
            py,
            "queue_id",
            format!("queue {queue_id} does not exist; topic '{topic}' has {queues} queues"),
        )),
        SendOutcome::Closed => error(rmq_error(
            py,
            "StoreClosedError",
            "the producer closed before the batch was sent",
        )),
    };
    let outcome = Arc::clone(&batch.outcome);
    outcome.finish(py, answer);
    core.finished(batch);
}
