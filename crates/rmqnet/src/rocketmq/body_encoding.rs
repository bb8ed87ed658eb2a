//! A sent message's body as it is stored: a gzip body (`Encoding::GZIP`) inflated within
//! the broker's body limit (`inflate.rs`).

use bytes::Bytes;
use rmqproto::rocketmq_v2::{Code, Encoding, Status};

use super::status::refused;
use crate::inflate::{gunzip, Inflate};

/// The body to store, or the refusal: a gzip body that does not inflate
/// (`MESSAGE_CORRUPTED`), or one that inflates past `max_body_bytes`
/// (`MESSAGE_BODY_TOO_LARGE`). Any other encoding is stored as sent.
pub fn decoded_body(body: Bytes, encoding: i32, max_body_bytes: usize) -> Result<Bytes, Status> {
    if encoding != Encoding::Gzip as i32 || body.is_empty() {
        return Ok(body);
    }
    match gunzip(&body, max_body_bytes) {
        Ok(inflated) => Ok(Bytes::from(inflated)),
        Err(Inflate::Corrupt(error)) => Err(refused(
            Code::MessageCorrupted,
            format!("the gzip body does not decode: {error}"),
        )),
        Err(Inflate::TooLarge) => Err(refused(
            Code::MessageBodyTooLarge,
            format!(
                "the body inflates to more than {max_body_bytes} bytes; this broker takes at \
                 most {max_body_bytes}"
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::{write::GzEncoder, Compression};
    use std::io::Write;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    fn code(result: Result<Bytes, Status>) -> i32 {
        result.expect_err("refused").code
    }

    #[test]
    fn gzip_inflates_within_the_bound_and_other_encodings_pass() {
        let gz = Encoding::Gzip as i32;
        let plain = Bytes::from_static(b"\x1f\x8b not really");
        assert_eq!(
            decoded_body(plain.clone(), Encoding::Identity as i32, 4),
            Ok(plain)
        );
        assert_eq!(decoded_body(Bytes::new(), gz, 4), Ok(Bytes::new()));
        let two_members = [gzip(b"ab"), gzip(b"cd")].concat();
        assert_eq!(
            decoded_body(two_members.into(), gz, 4).unwrap(),
            Bytes::from_static(b"abcd")
        );
        let over = gzip(&[0; 5]);
        assert_eq!(
            code(decoded_body(over.into(), gz, 4)),
            Code::MessageBodyTooLarge as i32
        );
        let mut truncated = gzip(b"hello");
        truncated.truncate(truncated.len() - 3);
        assert_eq!(
            code(decoded_body(truncated.into(), gz, 99)),
            Code::MessageCorrupted as i32
        );
        let garbage = Bytes::from_static(b"not gzip");
        assert_eq!(
            code(decoded_body(garbage, gz, 99)),
            Code::MessageCorrupted as i32
        );
    }
}
