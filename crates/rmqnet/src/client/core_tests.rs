//! The books' rules with no network: when a batch leaves, where it goes, when it waits
//! for a route, when a refusal is retried or given back.

use std::time::Duration;

use super::books::{Core, Limits};
use super::outcome::SendOutcome;

fn core(batch_max_messages: usize) -> Core<u32> {
    let core = Core::default();
    core.lock().limits = Limits {
        batch_max_messages,
        linger: Duration::from_secs(3600),
        ..Limits::default()
    };
    core
}

fn key(queue_id: i32) -> (String, i32) {
    ("t".to_owned(), queue_id)
}

#[test]
fn a_full_batch_leaves_at_once_and_the_next_waits_for_its_queue() {
    let core = core(2);
    let first = core.push(&key(0), b"a", 10, || 1);
    assert!(first.ready.is_none() && first.index == 0);
    let second = core.push(&key(0), b"b", 10, || 2);
    let sent = second.ready.expect("the batch is full");
    assert_eq!(
        (sent.count, sent.encoded(), sent.outcome),
        (2, &b"ab"[..], 1)
    );
    // The queue has a batch in flight: the next full batch is not taken.
    core.push(&key(0), b"c", 10, || 3);
    assert!(core.push(&key(0), b"d", 10, || 3).ready.is_none());
    assert_eq!(core.lock().pending, 4);
    let next = core
        .release(&key(0), true)
        .expect("the next batch is ready");
    assert_eq!(next.encoded(), b"cd");
    core.finished(sent);
    assert_eq!(core.lock().pending, 2);
}

#[test]
fn batches_wait_for_a_route_then_go_to_its_endpoints() {
    let core = core(1);
    let zero = core.push(&key(0), b"a", 1, || 0).ready.expect("full");
    let one = core.push(&key(1), b"b", 1, || 1).ready.expect("full");
    let (groups, failed) = core.route(vec![zero, one]);
    assert!(groups.is_empty() && failed.is_empty());
    let wanted = core.wanted_routes(std::time::Instant::now());
    assert_eq!(wanted, Some(vec!["t".to_owned()]));
    core.set_route("t", vec!["a:1".into(), "b:2".into()], true);
    let due = core.due().expect("the batches are due again");
    let (groups, failed) = core.route(due);
    assert!(failed.is_empty());
    let mut endpoints: Vec<_> = groups.iter().map(|(e, b)| (e.as_str(), b.len())).collect();
    endpoints.sort();
    assert_eq!(endpoints, [("a:1", 1), ("b:2", 1)]);
}

#[test]
fn a_queue_missing_from_a_fresh_route_fails() {
    let core = core(1);
    let batch = core.push(&key(5), b"a", 1, || 0).ready.expect("full");
    assert!(core.route(vec![batch]).0.is_empty());
    core.set_route("t", vec!["a:1".into()], true);
    let (groups, failed) = core.route(core.due().expect("due"));
    assert!(groups.is_empty());
    let outcome = &failed[0].outcome;
    assert_eq!(
        *outcome,
        SendOutcome::NoSuchQueue {
            queue_id: 5,
            queues: 1
        }
    );
}

#[test]
fn a_queue_missing_from_a_cached_route_waits_for_a_fresh_one() {
    let core = core(1);
    let batch = core.push(&key(5), b"a", 1, || 0).ready.expect("full");
    assert!(core.route(vec![batch]).0.is_empty());
    assert!(core.wanted_routes(std::time::Instant::now()).is_some());
    core.set_route("t", vec!["a:1".into()], false);
    let (groups, failed) = core.route(core.due().expect("due"));
    assert!(groups.is_empty() && failed.is_empty(), "parked again");
    assert_eq!(
        core.wanted_routes(std::time::Instant::now()),
        Some(vec!["t".into()])
    );
    core.set_route("t", vec!["a:1".into()], true);
    let (_, failed) = core.route(core.due().expect("due"));
    assert_eq!(failed.len(), 1, "missing from the fresh route: it fails");
}

#[test]
fn a_refused_batch_is_retried_with_a_fresh_route_until_closing() {
    let core = core(1);
    core.set_route("t", vec!["a:1".into()], true);
    let batch = core.push(&key(0), b"a", 1, || 0).ready.expect("full");
    let (mut groups, _) = core.route(vec![batch]);
    let batch = groups.remove(0).1.remove(0);
    assert!(core.retry_later(batch).is_ok());
    core.lock().closed = true; // a retry is due at once while closing
    let (groups, _) = core.route(core.due().expect("due"));
    assert!(
        groups.is_empty(),
        "a retried batch looks its route up again"
    );
    core.set_route("t", vec!["a:1".into()], true);
    let (mut groups, _) = core.route(core.due().expect("due"));
    let batch = groups.remove(0).1.remove(0);
    assert!(
        core.retry_later(batch).is_err(),
        "closing: given back, not retried"
    );
}

#[test]
fn a_batch_refused_after_a_fresh_route_waits_for_another() {
    // The TLS test found this: a batch that learnt its route, then was refused again,
    // must look the route up again rather than fail as a missing queue.
    let core = core(1);
    let batch = core.push(&key(0), b"a", 1, || 0).ready.expect("full");
    assert!(core.route(vec![batch]).0.is_empty());
    core.set_route("t", vec!["a:1".into()], true);
    let (mut groups, _) = core.route(core.due().expect("due"));
    let batch = groups.remove(0).1.remove(0);
    assert!(core.retry_later(batch).is_ok());
    core.lock().closed = true; // the retry is due at once
    let (groups, failed) = core.route(core.due().expect("due"));
    assert!(
        groups.is_empty() && failed.is_empty(),
        "parked for a fresh route"
    );
    assert_eq!(
        core.wanted_routes(std::time::Instant::now()),
        Some(vec!["t".into()])
    );
}

#[test]
fn a_whole_batch_leaves_at_once_alone_and_no_message_joins_it() {
    let core = core(100);
    // Alone on an idle queue: taken by the caller at once, in spite of the linger.
    let sent = core
        .push_whole(&key(0), b"xyz".to_vec(), 0, 3, 30, 1)
        .expect("an idle queue's whole batch leaves at once");
    assert_eq!((sent.count, sent.encoded()), (3, &b"xyz"[..]));
    // Behind the batch in flight: a lingering send, then another whole batch, then a
    // send that must open a batch of its own rather than join the whole one.
    core.push(&key(0), b"a", 10, || 2);
    assert!(core
        .push_whole(&key(0), b"uv".to_vec(), 0, 2, 20, 3)
        .is_none());
    core.push(&key(0), b"b", 10, || 4);
    assert_eq!(core.lock().pending, 7);
    let mut order = Vec::new();
    let mut next = core.release(&key(0), true);
    while let Some(batch) = next {
        order.push((batch.outcome, batch.encoded().to_vec()));
        next = core.release(&key(0), true);
    }
    // The lingering send leaves (a batch waits behind it), then the whole batch; the last
    // send lingers on.
    assert_eq!(order, vec![(2, b"a".to_vec()), (3, b"uv".to_vec())]);
}

#[test]
fn a_batch_waits_for_room_counting_all_its_messages() {
    let core = core(100);
    core.lock().limits.max_buffered_messages = 10;
    core.push(&key(0), b"a", 10, || 1);
    let state = core.lock();
    assert!(!state.must_wait(10, 9) && state.must_wait(10, 10));
    drop(state);
    let idle = Core::<u32>::default();
    // With nothing pending, even a batch larger than the limits goes.
    assert!(!idle.lock().must_wait(usize::MAX / 2, 1_000_000));
}

#[test]
fn a_flush_wakes_the_sender_for_a_lingering_batch() {
    let core = std::sync::Arc::new(core(10));
    assert!(core.push(&key(0), b"a", 1, || 0).ready.is_none());
    let (due_tx, due_rx) = std::sync::mpsc::channel();
    let sender = std::sync::Arc::clone(&core);
    // The batch lingers for an hour: the sender sleeps until then unless woken.
    let thread = std::thread::spawn(move || due_tx.send(sender.due()).unwrap());
    std::thread::sleep(Duration::from_millis(50));
    assert!(
        due_rx.try_recv().is_err(),
        "the batch left before the flush"
    );
    core.begin_flush();
    let due = due_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the flush woke the sender")
        .expect("a batch is due");
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].encoded(), b"a");
    core.end_flush();
    assert_eq!(core.lock().flushing, 0);
    thread.join().unwrap();
}

#[test]
fn a_send_that_waited_goes_on_once_the_buffer_is_down_to_half() {
    let core = core(1);
    core.lock().limits.max_buffered_messages = 8;
    let batches: Vec<_> = (0..8)
        .map(|queue| core.push(&key(queue), b"m", 1, || 0).ready.expect("full"))
        .collect();
    assert!(core.lock().must_wait(1, 1));
    let mut batches = batches.into_iter();
    for pending in (4..8).rev() {
        core.finished(batches.next().expect("a batch"));
        let state = core.lock();
        assert_eq!(state.pending, pending);
        // Room for the message from 7 pending down, but a send that waited goes on at 4.
        assert!(!state.must_wait(1, 1));
        assert_eq!(
            state.room_after_wait(1, 1),
            pending <= 4,
            "{pending} pending"
        );
    }
    // A batch larger than half the buffer goes once it fits (here: nothing pending).
    assert!(!core.lock().room_after_wait(1, 5));
    batches.for_each(|batch| core.finished(batch));
    assert!(core.lock().room_after_wait(1, 5));
}
