//! What the per-queue traffic counters (`consume_queue/traffic.rs`) cost next to the calls
//! that bump them: a `put_batch` of one 100-byte message, one of 32, and a pull of 32,
//! each against the counter bump it makes (a put: two plain adds under the write lock; a
//! pull: two relaxed atomic adds).
//!
//! Wall clock:   cargo run --release -p rmqcore --example traffic_counter_cost
//! Instructions: valgrind --tool=callgrind --collect-atstart=no \
//!                 --toggle-collect='*measure_*' target/release/examples/traffic_counter_cost 20000
//!               then callgrind_annotate --inclusive=yes on its output: each `measure_*`
//!               function's instructions over its count of calls (printed); the
//!               instructions count the same on a busy machine as on an idle one.
//! The figures are per call; the ratio is the share of a call's time the bump takes.

use std::hint::black_box;
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use rmqcore::consume_queue::QueueTraffic;
use rmqcore::{MessageDraft, PullQuery, Store, StoreOptions};

const TOPIC: &str = "cost";

#[inline(never)]
fn measure_put_1(store: &Store, drafts: &[MessageDraft<'_>], calls: usize) {
    for _ in 0..calls {
        black_box(store.put_batch(TOPIC, 0, &drafts[..1]).unwrap());
    }
}

#[inline(never)]
fn measure_put_32(store: &Store, drafts: &[MessageDraft<'_>], calls: usize) {
    for _ in 0..calls {
        black_box(store.put_batch(TOPIC, 1, drafts).unwrap());
    }
}

#[inline(never)]
fn measure_pull_32(store: &Store, calls: usize) {
    let end = store.max_offset(TOPIC, 1).unwrap();
    let mut offset = 0;
    for _ in 0..calls {
        let pulled = store
            .pull_each(PullQuery::new(TOPIC, 1, offset, 32), |view| {
                black_box(view.body.len());
            })
            .unwrap();
        offset = if pulled.next_offset >= end {
            0
        } else {
            pulled.next_offset
        };
    }
}

#[inline(never)]
fn measure_bump_in(traffic: &QueueTraffic, writer: &MutexGuard<'_, ()>, calls: usize) {
    for _ in 0..calls {
        black_box(traffic).stored(writer, black_box(1), black_box(100));
    }
}

#[inline(never)]
fn measure_bump_out(traffic: &QueueTraffic, calls: usize) {
    for _ in 0..calls {
        black_box(traffic).read(black_box(32), black_box(3200));
    }
}

#[inline(never)]
fn warm_up(store: &Store, drafts: &[MessageDraft<'_>], calls: usize) {
    for _ in 0..calls {
        store.put_batch(TOPIC, 0, &drafts[..1]).unwrap();
        store.put_batch(TOPIC, 1, drafts).unwrap();
    }
}

/// Nanoseconds per call of `run`: the fastest of five runs of `calls / 5`, since a busy
/// machine only ever adds time.
fn per_call(calls: usize, mut run: impl FnMut(usize)) -> f64 {
    let each = (calls / 5).max(1);
    (0..5)
        .map(|_| {
            let began = Instant::now();
            run(each);
            began.elapsed().as_nanos() as f64 / each as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let calls: usize = std::env::args()
        .nth(1)
        .map_or(200_000, |n| n.parse().expect("a number of calls"));
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
    let body = [b'x'; 100];
    let drafts: Vec<MessageDraft<'_>> = (0..32)
        .map(|_| MessageDraft {
            body: &body,
            ..MessageDraft::default()
        })
        .collect();
    // Segments mapped, queues created, the pulls' pages in memory; not in `measure_*`,
    // so that callgrind's counts of those are the measured calls alone.
    warm_up(&store, &drafts, calls / 10 + 1);

    let traffic = QueueTraffic::default();
    let put_1 = per_call(calls, |n| measure_put_1(&store, &drafts, n));
    let put_32 = per_call(calls / 8, |n| measure_put_32(&store, &drafts, n));
    let pull_32 = per_call(calls / 8, |n| measure_pull_32(&store, n));
    let write_lock = Mutex::new(());
    let writer = write_lock.lock().unwrap();
    let bump_in = per_call(calls * 50, |n| measure_bump_in(&traffic, &writer, n));
    let bump_out = per_call(calls * 50, |n| measure_bump_out(&traffic, n));
    println!(
        "calls: put_1 {calls}, put_32 and pull_32 {}, bumps {} each",
        calls / 8,
        calls * 50
    );
    for (what, call, bump) in [
        ("put_batch of 1 x 100 B", put_1, bump_in),
        ("put_batch of 32 x 100 B", put_32, bump_in),
        ("pull of 32 x 100 B", pull_32, bump_out),
    ] {
        println!(
            "{what:<24} {call:>9.0} ns/call   counter bump {bump:>5.1} ns   share {:.2} %",
            bump / call * 100.0
        );
    }
    store.close().unwrap();
}
