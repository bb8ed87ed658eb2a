//! The thread that resolves the futures of the batches the sender finished: attached to
//! Python for its life (`attached_thread.rs`). A stored batch that no callback waits for
//! is resolved without the GIL; the others take it once per run of outcomes waiting: each
//! `SendOutcome` becomes the batch's result or exception (the exception through the
//! binding's one error table) and the callbacks run. Only then, with the GIL let go, is
//! the batch taken off the books, so that a flush that returns has every callback run
//! and the sending thread, woken by it, does not wait for the GIL.

use std::sync::mpsc::Receiver;
use std::sync::Arc;

use pyo3::prelude::*;
use rmqnet::client::{Batch, Finished, SendOutcome};

use crate::attached_thread::run_attached_sparingly;
use crate::errors::{broker_error, invalid, rmq_error};
use crate::send_future::{Answer, BatchOutcome};

use super::Core;

pub(super) fn resolve_all(received: Receiver<Finished<Arc<BatchOutcome>>>, core: &Core) {
    run_attached_sparingly(
        received,
        |finished| resolve_without_python(core, finished),
        resolve_with_python,
        |batch| core.finished(batch),
    );
}

/// Resolve a stored batch that no callback waits for, and take it off the books; hand
/// back every other outcome.
fn resolve_without_python(
    core: &Core,
    finished: Finished<Arc<BatchOutcome>>,
) -> Option<Finished<Arc<BatchOutcome>>> {
    let Finished { batch, outcome } = finished;
    let outcome = match outcome {
        SendOutcome::Stored(stored) => match batch.outcome.finish_stored(stored) {
            None => {
                core.finished(batch);
                return None;
            }
            Some(stored) => SendOutcome::Stored(stored),
        },
        outcome => outcome,
    };
    Some(Finished { batch, outcome })
}

pub(super) fn resolve(py: Python<'_>, core: &Core, finished: Finished<Arc<BatchOutcome>>) {
    core.finished(resolve_with_python(py, finished));
}

/// Give the batch's futures their result or exception and run their callbacks; the
/// batch is handed back to be taken off the books.
fn resolve_with_python(
    py: Python<'_>,
    finished: Finished<Arc<BatchOutcome>>,
) -> Batch<Arc<BatchOutcome>> {
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
    batch
}
