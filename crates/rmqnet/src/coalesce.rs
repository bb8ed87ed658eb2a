//! Answer coalescing on one connection: while other requests of the connection are still
//! being answered, a finished answer is held back briefly and written together with
//! theirs, in one write. A client that keeps many sends in flight (the RocketMQ 5 Java
//! client keeps 128) then reads a burst of answers per wake-up instead of one answer per
//! wake-up and system call; that per-answer cost on the client was most of its CPU per send.
//! The rules: an answer is written at once when nothing else of the connection is in flight
//! (a client sending one request at a time never waits), a held answer waits at most
//! `HOLD` (or until `MOST_HELD_BYTES` are held), and bytes leave in the order they were
//! written (HTTP/2 frames are never reordered). Only answers are held: requests are
//! stored before their answer exists, so nothing is acknowledged before it is stored.
//! (The same idea as Netty's flush consolidation, keyed on answers in flight.)

use std::future::Future;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// The longest an answer is held for others. The runtime's timer fires on whole
/// milliseconds, so a hold that runs out ends within about 1.5 ms; most holds end earlier,
/// when the last answer in flight is written.
pub const HOLD: Duration = Duration::from_micros(500);
/// Held bytes beyond which the held answers are written at once (and a larger write is
/// not copied into the hold at all).
const MOST_HELD_BYTES: usize = 64 << 10;

/// The requests of one connection whose answers are being prepared.
#[derive(Default)]
pub struct InFlight {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    count: usize,
    /// The connection's writer, holding answers until the count falls to zero.
    writer: Option<Waker>,
}

/// One request being answered; dropped when its answer is handed to the connection
/// (or the request is abandoned).
pub struct Answering(Arc<InFlight>);

impl InFlight {
    pub fn begin(self: &Arc<Self>) -> Answering {
        self.lock().count += 1;
        Answering(Arc::clone(self))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn any(&self) -> bool {
        self.lock().count > 0
    }

    /// Whether requests are in flight; if so `waker` is woken when the last one ends.
    fn wake_when_none(&self, waker: &Waker) -> bool {
        let mut state = self.lock();
        if state.count == 0 {
            return false;
        }
        if !state.writer.as_ref().is_some_and(|w| w.will_wake(waker)) {
            state.writer = Some(waker.clone());
        }
        true
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        let writer = {
            let mut state = self.0.lock();
            state.count -= 1;
            if state.count == 0 {
                state.writer.take()
            } else {
                None
            }
        };
        if let Some(writer) = writer {
            writer.wake();
        }
    }
}

/// A connection's transport that holds answers while others are in flight.
pub struct Coalescing<IO> {
    inner: IO,
    in_flight: Arc<InFlight>,
    hold: Duration,
    held: Vec<u8>,
    /// How much of `held` is already written.
    written: usize,
    /// When the held bytes must go, armed by the first of them.
    deadline: Pin<Box<Sleep>>,
}

impl<IO: AsyncWrite + Unpin> Coalescing<IO> {
    pub fn new(inner: IO, in_flight: Arc<InFlight>, hold: Duration) -> Self {
        Coalescing {
            inner,
            in_flight,
            hold,
            held: Vec::new(),
            written: 0,
            deadline: Box::pin(tokio::time::sleep(Duration::ZERO)),
        }
    }

    /// Write out every held byte, in order.
    fn poll_write_held(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.written < self.held.len() {
            let n = std::task::ready!(
                Pin::new(&mut self.inner).poll_write(cx, &self.held[self.written..])
            )?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.written += n;
        }
        self.held.clear();
        self.written = 0;
        Poll::Ready(Ok(()))
    }

    fn write(&mut self, cx: &mut Context<'_>, bufs: &[IoSlice<'_>]) -> Poll<io::Result<usize>> {
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        if self.held.is_empty() {
            if total >= MOST_HELD_BYTES || !self.in_flight.any() {
                return Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
            }
            let deadline = Instant::now() + self.hold;
            self.deadline.as_mut().reset(deadline);
        } else if self.held.len() + total > MOST_HELD_BYTES {
            std::task::ready!(self.poll_write_held(cx))?;
            return Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        }
        for buf in bufs {
            self.held.extend_from_slice(buf);
        }
        Poll::Ready(Ok(total))
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Coalescing<IO> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().write(cx, &[IoSlice::new(buf)])
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().write(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    /// Held answers stay held while others are in flight and the hold lasts: the flush
    /// reports done, and the writer is woken when the last request in flight ends or the
    /// hold runs out, when its next flush writes them.
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.held.is_empty() {
            let holding = this.held.len() < MOST_HELD_BYTES
                && this.in_flight.wake_when_none(cx.waker())
                && this.deadline.as_mut().poll(cx).is_pending();
            if holding {
                return Poll::Ready(Ok(()));
            }
            std::task::ready!(this.poll_write_held(cx))?;
        }
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        std::task::ready!(this.poll_write_held(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Coalescing<IO> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

#[cfg(test)]
#[path = "coalesce_tests.rs"]
mod tests;
