//! The hold's rules over a real loopback TCP connection: a lone answer leaves at once,
//! held answers leave together when the last request in flight ends, or when the hold
//! runs out, always in the order written.

use std::future::poll_fn;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::{Coalescing, InFlight};

/// Long enough that an answer held by mistake fails the test rather than slowing it.
const FOREVER: Duration = Duration::from_secs(600);

async fn connection(hold: Duration) -> (Coalescing<TcpStream>, Arc<InFlight>, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    let (server, _) = listener.accept().await.unwrap();
    server.set_nodelay(true).unwrap();
    let in_flight = Arc::new(InFlight::default());
    let writer = Coalescing::new(server, Arc::clone(&in_flight), hold);
    (writer, in_flight, client)
}

/// Whatever arrives within `wait`, in one read.
async fn arrived(client: &mut TcpStream, wait: Duration) -> Vec<u8> {
    let mut buf = vec![0; 256 << 10];
    match tokio::time::timeout(wait, client.read(&mut buf)).await {
        Ok(read) => buf.truncate(read.unwrap()),
        Err(_) => buf.clear(),
    }
    buf
}

/// Flush as the connection's task does: again each time it is woken, until nothing is held.
async fn flush_until_written(writer: &mut Coalescing<TcpStream>) {
    poll_fn(|cx| {
        let flushed = Pin::new(&mut *writer).poll_flush(cx);
        if flushed.is_ready() && writer.held.is_empty() {
            return flushed;
        }
        std::task::Poll::Pending
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn sequential_requests_are_answered_without_the_hold() {
    let (mut writer, in_flight, mut client) = connection(FOREVER).await;
    let started = Instant::now();
    for round in 0..200u32 {
        let answering = in_flight.begin();
        drop(answering);
        writer.write_all(&round.to_be_bytes()).await.unwrap();
        writer.flush().await.unwrap();
        let answer = arrived(&mut client, Duration::from_secs(10)).await;
        assert_eq!(answer, round.to_be_bytes(), "round {round}");
    }
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn held_answers_leave_together_when_the_last_in_flight_ends() {
    let (mut writer, in_flight, mut client) = connection(FOREVER).await;
    let first = in_flight.begin();
    let second = in_flight.begin();
    drop(first);
    writer.write_all(b"first;").await.unwrap();
    writer.flush().await.unwrap();
    assert!(arrived(&mut client, Duration::from_millis(200))
        .await
        .is_empty());
    drop(second);
    writer.write_all(b"second;").await.unwrap();
    writer.flush().await.unwrap();
    let both = arrived(&mut client, Duration::from_secs(10)).await;
    assert_eq!(both, b"first;second;");
}

#[tokio::test]
async fn an_abandoned_request_wakes_the_writer_of_held_answers() {
    let (mut writer, in_flight, mut client) = connection(FOREVER).await;
    let abandoned = in_flight.begin();
    writer.write_all(b"answer").await.unwrap();
    let dropper = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        drop(abandoned);
    });
    tokio::time::timeout(Duration::from_secs(10), flush_until_written(&mut writer))
        .await
        .expect("the end of the last request in flight wakes the writer");
    dropper.await.unwrap();
    assert_eq!(
        arrived(&mut client, Duration::from_secs(10)).await,
        b"answer"
    );
}

#[tokio::test]
async fn a_held_answer_leaves_when_the_hold_runs_out() {
    let hold = Duration::from_millis(50);
    let (mut writer, in_flight, mut client) = connection(hold).await;
    let _still_in_flight = in_flight.begin();
    let started = Instant::now();
    writer.write_all(b"answer").await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), flush_until_written(&mut writer))
        .await
        .expect("the hold runs out");
    assert!(started.elapsed() >= hold);
    assert_eq!(
        arrived(&mut client, Duration::from_secs(10)).await,
        b"answer"
    );
}

#[tokio::test]
async fn a_large_write_goes_out_behind_what_was_held() {
    let (mut writer, in_flight, mut client) = connection(FOREVER).await;
    let in_flight = in_flight.begin();
    writer.write_all(b"small").await.unwrap();
    let large = vec![7u8; 100 << 10];
    writer.write_all(&large).await.unwrap();
    drop(in_flight);
    writer.flush().await.unwrap();
    let mut expected = b"small".to_vec();
    expected.extend_from_slice(&large);
    let mut got = Vec::new();
    while got.len() < expected.len() {
        let more = arrived(&mut client, Duration::from_secs(10)).await;
        assert!(!more.is_empty(), "only {} bytes arrived", got.len());
        got.extend_from_slice(&more);
    }
    assert!(got == expected, "the bytes arrived out of order");
    assert!(writer.held.is_empty());
}
