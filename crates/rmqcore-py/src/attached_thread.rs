//! The loop of a thread of the binding's own that runs Python for what it receives (the
//! producer's resolver, the transport's completions): attached to Python once for the
//! thread's life, it lets go of the GIL only while it waits. Attaching anew for each
//! wake-up made and freed a Python thread state every time (its frame stack mapped and
//! unmapped, with the page faults and cross-core TLB flushes that cost): once per pull
//! answered and per batch resolved. A thread whose values mostly need no Python (the
//! resolver: a stored batch nobody added a callback to) takes the GIL only for those
//! that do (`run_attached_sparingly`).

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

/// As `run_attached`, for a thread whose values mostly need no Python: `without_gil`
/// sees each value first, without the GIL, and hands back those that need Python; those
/// take the GIL once per run of values waiting, and what `with_gil` makes of each goes to
/// `after` once the GIL is let go. Once a value of a run was handed back, the rest of the
/// run goes the same way, so that values are dealt with in the order they came.
pub fn run_attached_sparingly<T: Send, R: Send>(
    mut received: Receiver<T>,
    mut without_gil: impl FnMut(T) -> Option<T> + Send,
    mut with_gil: impl FnMut(Python<'_>, T) -> R,
    mut after: impl FnMut(R) + Send,
) {
    Python::attach(|py| {
        let mut left: Vec<R> = Vec::new();
        loop {
            // Moved in as `&mut`: a receiver may not be shared between threads.
            let (receiver, to_finish, finish, first_look) =
                (&mut received, &mut left, &mut after, &mut without_gil);
            let (run, open) = py.detach(move || {
                to_finish.drain(..).for_each(&mut *finish);
                let mut run = Vec::new();
                let mut open = true;
                while run.is_empty() {
                    let Ok(first) = receiver.recv() else {
                        open = false;
                        break;
                    };
                    let mut next = Some(first);
                    while let Some(value) = next {
                        if run.is_empty() {
                            run.extend(first_look(value));
                        } else {
                            run.push(value);
                        }
                        next = receiver.try_recv().ok();
                    }
                }
                (run, open)
            });
            left.extend(run.into_iter().map(|value| with_gil(py, value)));
            if !open {
                py.detach(|| left.drain(..).for_each(&mut after));
                break;
            }
        }
    });
}
