//! The loop of a thread of the binding's own that runs Python for what it receives (the
//! producer's resolver, the transport's completions): attached to Python once for the
//! thread's life, it lets go of the GIL only while it waits. Attaching anew for each
//! wake-up made and freed a Python thread state every time (its frame stack mapped and
//! unmapped, with the page faults and cross-core TLB flushes that cost): once per pull
//! answered and per batch resolved.

use std::sync::mpsc::Receiver;

use pyo3::prelude::*;

/// Hand each value `received` brings to `handle`, with the GIL, until every sender is
/// gone; `handle` may take more from the receiver while it holds the GIL.
pub fn run_attached<T: Send>(
    mut received: Receiver<T>,
    mut handle: impl FnMut(Python<'_>, T, &Receiver<T>),
) {
    Python::attach(|py| loop {
        // The receiver goes along into the wait: it may not be shared between threads.
        let (receiver, next) = py.detach(move || {
            let next = received.recv();
            (received, next)
        });
        received = receiver;
        match next {
            Ok(value) => handle(py, value, &received),
            Err(_) => break,
        }
    });
}
