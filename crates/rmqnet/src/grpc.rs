//! gRPC over HTTP/2 at the level the data plane needs it: one length-prefixed message per
//! unary request and response (several for a server-streaming answer, sent at once), the
//! status in trailers, `grpc-timeout` read as a deadline.
//! A request message a client compressed (`grpc-encoding: gzip` or `deflate`, as grpcio
//! and the official clients may send) is inflated within the request limit.
//! (Protocol: the gRPC HTTP/2 specification's framing and its compression section.)

use std::time::Duration;

use bytes::{Buf, Bytes};

use crate::inflate::{gunzip, unzlib, Inflate};
use http::{HeaderMap, HeaderValue, Response};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};

/// The body of every response the data plane gives.
pub type Body = UnsyncBoxBody<Bytes, hyper::Error>;

pub const OK: i32 = 0;
pub const INVALID_ARGUMENT: i32 = 3;
pub const RESOURCE_EXHAUSTED: i32 = 8;
pub const INTERNAL: i32 = 13;
pub const UNAVAILABLE: i32 = 14;

pub const UNIMPLEMENTED: i32 = 12;

/// Why a unary request body is not one message the data plane can read.
#[derive(Debug, PartialEq, Eq)]
pub enum FrameProblem {
    /// Not exactly one length-prefixed message: cut short, followed by more, or a
    /// compressed flag without a `grpc-encoding`.
    NotOneMessage,
    /// Compressed with an encoding the data plane does not read (UNIMPLEMENTED, as the
    /// gRPC specification asks).
    Unsupported(String),
    /// A compressed message that does not inflate (INTERNAL, as the specification asks).
    Corrupt(String),
    /// A compressed message that inflates past the request limit (RESOURCE_EXHAUSTED, as
    /// an uncompressed one that large is).
    TooLarge(usize),
}

impl FrameProblem {
    /// The answer to a request whose body has this problem (`NotOneMessage` aside, which
    /// each path words itself).
    pub fn status(&self) -> Response<Body> {
        match self {
            FrameProblem::NotOneMessage => status(INVALID_ARGUMENT, "the request is not one gRPC message"),
            FrameProblem::Unsupported(encoding) => status(
                UNIMPLEMENTED,
                &format!("grpc-encoding {encoding:?} is not supported; this server reads gzip and deflate"),
            ),
            FrameProblem::Corrupt(why) => status(INTERNAL, &format!("the compressed message does not inflate: {why}")),
            FrameProblem::TooLarge(limit) => status(
                RESOURCE_EXHAUSTED,
                &format!("received message larger than max (more than {limit} bytes once inflated)"),
            ),
        }
    }
}

/// The one message of a unary request body (`raw`, framed), inflated when its frame is
/// compressed with the encoding `headers` name; at most `limit` bytes once inflated.
pub fn request_message(
    raw: &Bytes,
    headers: &HeaderMap,
    limit: usize,
) -> Result<Bytes, FrameProblem> {
    if raw.len() < 5 {
        return Err(FrameProblem::NotOneMessage);
    }
    let length = (&raw[1..5]).get_u32() as usize;
    if raw.len() != 5 + length {
        return Err(FrameProblem::NotOneMessage);
    }
    let message = &raw[5..];
    match raw[0] {
        0 => Ok(raw.slice(5..)),
        1 => {
            let encoding = headers
                .get("grpc-encoding")
                .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned());
            let inflated = match encoding.as_deref() {
                None | Some("identity") => return Err(FrameProblem::NotOneMessage),
                Some("gzip") => gunzip(message, limit),
                Some("deflate") => unzlib(message, limit),
                Some(other) => return Err(FrameProblem::Unsupported(other.to_owned())),
            };
            match inflated {
                Ok(bytes) => Ok(Bytes::from(bytes)),
                Err(Inflate::TooLarge) => Err(FrameProblem::TooLarge(limit)),
                Err(Inflate::Corrupt(error)) => Err(FrameProblem::Corrupt(error.to_string())),
            }
        }
        _ => Err(FrameProblem::NotOneMessage),
    }
}

/// The one message of an uncompressed body (tests read answers with it); None when it is
/// compressed, cut short, or followed by more.
#[cfg(test)]
pub fn unframe(body: &[u8]) -> Option<&[u8]> {
    if body.len() < 5 || body[0] != 0 {
        return None;
    }
    let length = (&body[1..5]).get_u32() as usize;
    (body.len() == 5 + length).then(|| &body[5..])
}

/// Bytes of a message's gRPC frame prefix: a compression flag and a 4-byte length.
pub const FRAME_PREFIX: usize = 5;

/// A successful unary answer whose message was encoded after `FRAME_PREFIX` bytes left
/// free at the start of `out`: the prefix is written there and nothing is copied. A
/// pull's answer is a few MiB; copying it behind a prefix cost a fresh buffer each time,
/// its pages faulted in.
pub fn ok_in_place(out: Vec<u8>) -> Response<Body> {
    ok_framed(frame_in_place(out))
}

/// `out`, a message encoded after `FRAME_PREFIX` bytes left free at its start, with its
/// frame prefix written there: the framed message without a copy.
pub fn frame_in_place(mut out: Vec<u8>) -> Bytes {
    put_frame_prefix(&mut out).expect("a message is under 4 GiB");
    Bytes::from(out)
}

/// Write the frame prefix into the first `FRAME_PREFIX` bytes of `frame`, for the message
/// after them; None when the message is 4 GiB or more.
pub fn put_frame_prefix(frame: &mut [u8]) -> Option<()> {
    let length = u32::try_from(frame.len().checked_sub(FRAME_PREFIX)?).ok()?;
    frame[0] = 0;
    frame[1..FRAME_PREFIX].copy_from_slice(&length.to_be_bytes());
    Some(())
}

fn framed(message: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(message.len() + 5);
    out.push(0);
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    Bytes::from(out)
}

/// A 200 response with gRPC's content type: built from static parts, as every answer
/// starts this way (no header text parsed per request).
fn grpc_response(body: Body) -> Response<Body> {
    let mut response = Response::new(body);
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    response
}

/// A successful unary answer carrying `message`.
pub fn ok(message: &[u8]) -> Response<Body> {
    ok_framed(framed(message))
}

/// A successful unary answer carrying `message`, encoded straight behind its frame
/// prefix: one buffer, where `ok(&message.encode_to_vec())` would fill two and copy.
pub fn ok_message(message: &impl prost::Message) -> Response<Body> {
    let length = message.encoded_len();
    let mut out = Vec::with_capacity(5 + length);
    out.push(0);
    out.extend_from_slice(&(length as u32).to_be_bytes());
    message
        .encode(&mut out)
        .expect("a Vec grows to whatever the message needs");
    ok_framed(Bytes::from(out))
}

fn ok_framed(framed: Bytes) -> Response<Body> {
    let mut trailers = HeaderMap::with_capacity(1);
    trailers.insert("grpc-status", HeaderValue::from_static("0"));
    grpc_response(Answer::new(framed, trailers).boxed_unsync())
}

/// A successful server-streaming answer carrying `messages` in order.
pub fn ok_stream(messages: impl IntoIterator<Item = Bytes>) -> Response<Body> {
    let mut out = Vec::new();
    for message in messages {
        out.push(0);
        out.extend_from_slice(&(message.len() as u32).to_be_bytes());
        out.extend_from_slice(&message);
    }
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static("0"));
    grpc_response(Answer::new(Bytes::from(out), trailers).boxed_unsync())
}

/// A successful answer's body: its framed messages, then the trailers. It does not tell
/// its exact size, so that hyper writes no `content-length`: gRPC servers send none (the
/// frames carry the lengths), and a client that gets one parses and checks it on every
/// answer (grpc-java's Netty transport does, on the thread that reads all of a
/// connection's answers).
struct Answer {
    data: Option<Bytes>,
    trailers: Option<HeaderMap>,
}

impl Answer {
    fn new(data: Bytes, trailers: HeaderMap) -> Answer {
        Answer {
            data: Some(data),
            trailers: Some(trailers),
        }
    }
}

impl http_body::Body for Answer {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, hyper::Error>>> {
        let frame = match self.data.take() {
            Some(data) => Some(http_body::Frame::data(data)),
            None => self.trailers.take().map(http_body::Frame::trailers),
        };
        std::task::Poll::Ready(frame.map(Ok))
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_none() && self.trailers.is_none()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        let mut hint = http_body::SizeHint::new();
        hint.set_lower(self.data.as_ref().map_or(0, |data| data.len() as u64));
        hint
    }
}

/// A failed call: a trailers-only response with the status `code` and `message`.
pub fn status(code: i32, message: &str) -> Response<Body> {
    let body = Full::new(Bytes::new())
        .map_err(|never| match never {})
        .boxed_unsync();
    let mut response = grpc_response(body);
    let fields = response.headers_mut();
    fields.insert("grpc-status", HeaderValue::from(code));
    if let Ok(text) = HeaderValue::from_str(&percent_encoded(message)) {
        fields.insert("grpc-message", text);
    }
    response
}

/// `grpc-message` is percent-encoded: everything outside printable ASCII, and `%`.
fn percent_encoded(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    for byte in message.bytes() {
        if (0x20..0x7f).contains(&byte) && byte != b'%' {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The client's deadline from `grpc-timeout` (`<digits><unit>`).
pub fn timeout(headers: &HeaderMap) -> Option<Duration> {
    let text = headers.get("grpc-timeout")?.to_str().ok()?;
    let (digits, unit) = text.split_at(text.len().checked_sub(1)?);
    let value: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(value * 3600),
        "M" => Duration::from_secs(value * 60),
        "S" => Duration::from_secs(value),
        "m" => Duration::from_millis(value),
        "u" => Duration::from_micros(value),
        "n" => Duration::from_nanos(value),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_framed_and_unframed() {
        let framed = framed(b"hello");
        assert_eq!(&framed[..5], &[0, 0, 0, 0, 5]);
        assert_eq!(unframe(&framed), Some(&b"hello"[..]));
        assert_eq!(unframe(&framed[..7]), None);
        let mut compressed = framed.to_vec();
        compressed[0] = 1;
        assert_eq!(unframe(&compressed), None);
    }

    fn compressed_frame(compressed: &[u8]) -> Bytes {
        let mut out = vec![1];
        out.extend_from_slice(&(compressed.len() as u32).to_be_bytes());
        out.extend_from_slice(compressed);
        Bytes::from(out)
    }

    fn encoding(name: &'static str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert("grpc-encoding", HeaderValue::from_static(name));
        headers
    }

    #[test]
    fn compressed_messages_are_inflated_within_the_limit() {
        use flate2::write::{GzEncoder, ZlibEncoder};
        use flate2::Compression;
        use std::io::Write;

        let mut gz = GzEncoder::new(Vec::new(), Compression::default());
        gz.write_all(&[7; 100]).unwrap();
        let gz = compressed_frame(&gz.finish().unwrap());
        let mut zlib = ZlibEncoder::new(Vec::new(), Compression::default());
        zlib.write_all(&[7; 100]).unwrap();
        let zlib = compressed_frame(&zlib.finish().unwrap());

        let plain = framed(&[7; 100]);
        assert_eq!(
            request_message(&plain, &HeaderMap::new(), 10).unwrap(),
            plain.slice(5..)
        );
        assert_eq!(
            request_message(&gz, &encoding("gzip"), 100).unwrap(),
            &[7; 100][..]
        );
        assert_eq!(
            request_message(&zlib, &encoding("deflate"), 100).unwrap(),
            &[7; 100][..]
        );
        assert_eq!(
            request_message(&gz, &encoding("gzip"), 99),
            Err(FrameProblem::TooLarge(99))
        );
        assert_eq!(
            request_message(&gz, &HeaderMap::new(), 100),
            Err(FrameProblem::NotOneMessage)
        );
        assert_eq!(
            request_message(&gz, &encoding("snappy"), 100),
            Err(FrameProblem::Unsupported("snappy".to_owned()))
        );
        assert!(matches!(
            request_message(&zlib, &encoding("gzip"), 100),
            Err(FrameProblem::Corrupt(_))
        ));
        assert_eq!(
            request_message(&gz.slice(..9), &encoding("gzip"), 100),
            Err(FrameProblem::NotOneMessage)
        );
    }

    #[tokio::test]
    async fn an_encoded_message_is_framed_as_its_bytes_would_be() {
        let message = prost_types::Duration {
            seconds: 300,
            nanos: 7,
        };
        let body = ok_message(&message)
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes();
        assert_eq!(body, framed(&prost::Message::encode_to_vec(&message)));
    }

    #[tokio::test]
    async fn a_message_encoded_after_the_prefix_is_framed_as_its_bytes_would_be() {
        let mut out = vec![0xff; FRAME_PREFIX];
        out.extend_from_slice(b"pulled messages");
        let body = ok_in_place(out)
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes();
        assert_eq!(body, framed(b"pulled messages"));
    }

    #[test]
    fn answers_do_not_tell_their_exact_size() {
        // hyper writes a content-length for a body of exact size; gRPC answers carry none.
        use http_body::Body as _;
        assert_eq!(ok(b"hello").body().size_hint().exact(), None);
        assert_eq!(
            ok_stream([Bytes::from_static(b"a")])
                .body()
                .size_hint()
                .exact(),
            None
        );
    }

    #[test]
    fn timeouts_are_read_in_every_unit() {
        let mut headers = HeaderMap::new();
        for (text, expected) in [
            ("100m", Duration::from_millis(100)),
            ("5S", Duration::from_secs(5)),
            ("2M", Duration::from_secs(120)),
            ("7u", Duration::from_micros(7)),
        ] {
            headers.insert("grpc-timeout", HeaderValue::from_static(text));
            assert_eq!(timeout(&headers), Some(expected));
        }
        headers.insert("grpc-timeout", HeaderValue::from_static("5x"));
        assert_eq!(timeout(&headers), None);
    }

    #[test]
    fn status_messages_are_percent_encoded() {
        assert_eq!(percent_encoded("50% off\nnow"), "50%25 off%0Anow");
    }
}
