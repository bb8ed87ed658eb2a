//! The engine's error for a failed request to the bucket: the server's reason in a few
//! words, and whether the server could not be reached at all.

use crate::error::Error;

/// The engine's error for a failed request, marked unreachable when the server could not
/// be reached or did not answer in time (told by the HTTP client's own error kinds, not
/// by the message's words).
pub(super) fn tier_error(object: String, error: &object_store::Error) -> Error {
    if could_not_reach(error) {
        Error::tier_unreachable(object, explain(error))
    } else {
        Error::tier(object, explain(error))
    }
}

pub(super) fn could_not_reach(error: &object_store::Error) -> bool {
    let mut link: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = link {
        if let Some(http) = current.downcast_ref::<reqwest::Error>() {
            if http.is_connect() || http.is_timeout() {
                return true;
            }
        }
        if let Some(io) = current.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::{
                ConnectionAborted, ConnectionRefused, ConnectionReset, NotConnected, TimedOut,
            };
            if matches!(
                io.kind(),
                ConnectionRefused | ConnectionReset | ConnectionAborted | NotConnected | TimedOut
            ) {
                return true;
            }
        }
        link = current.source();
    }
    false
}

/// The server's reason, without the crate's nesting of wrappers or the XML body.
fn explain(error: &object_store::Error) -> String {
    let full = error.to_string();
    let mut text = full.clone();
    if let Some(at) = text.find("<?xml") {
        text.truncate(at);
    }
    if text.len() > 400 {
        let mut cut = 400;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("...");
    }
    let text = text.trim_end_matches([' ', ':', ',']).to_string();
    for (needle, meaning) in [
        ("NoSuchBucket", "the bucket does not exist"),
        (
            "InvalidAccessKeyId",
            "the access key is not known to the server (AWS_ACCESS_KEY_ID)",
        ),
        (
            "SignatureDoesNotMatch",
            "the secret key is wrong (AWS_SECRET_ACCESS_KEY)",
        ),
        ("AccessDenied", "access denied"),
        (
            "Connection refused",
            "the server refused the connection (is it running?)",
        ),
        ("error sending request", "the server could not be reached"),
    ] {
        if full.contains(needle) {
            return format!("{meaning}: {text}");
        }
    }
    text
}
