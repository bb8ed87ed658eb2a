//! What a `SendRequest` must satisfy before the engine stores it, checked in the order the
//! broker has always checked it, with its messages: the batch's size against the broker's
//! limits, then each message's body and fields (the engine's own rules,
//! `rmqcore::record::message_rules`). The engine checks again as it stores; this only
//! names the broker's limits and the message's position for the client.

use rmqcore::record::message_rules::check_message_fields;
use rmqcore::MessageDraft;

use crate::shard_limits::Limits;
use crate::status::Refusal;

pub fn check_batch(messages: &[MessageDraft<'_>], limits: &Limits) -> Result<(), Refusal> {
    let invalid = |text: String| Err(Refusal::InvalidArgument(text));
    let count = messages.len();
    if count == 0 {
        return invalid("the batch has no messages".to_owned());
    }
    if count > limits.max_batch_messages {
        return invalid(format!(
            "the batch has {count} messages, more than the limit of {}",
            limits.max_batch_messages
        ));
    }
    let total: usize = messages.iter().map(|message| message.body.len()).sum();
    if total > limits.max_batch_bytes {
        return invalid(format!(
            "the batch bodies add up to {total} bytes, more than the limit of {}",
            limits.max_batch_bytes
        ));
    }
    for (index, message) in messages.iter().enumerate() {
        let length = message.body.len();
        if length > limits.max_body_bytes {
            return invalid(format!(
                "message {index}: body is {length} bytes, more than the limit of {}",
                limits.max_body_bytes
            ));
        }
        let fields = check_message_fields(
            message.tags.as_deref(),
            message.keys.iter().map(AsRef::as_ref),
            message
                .properties
                .iter()
                .map(|(name, value)| (name.as_str(), value.as_str())),
        );
        if let Err(error) = fields {
            return invalid(format!("message {index}: {error}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            max_body_bytes: 4,
            max_batch_messages: 2,
            max_batch_bytes: 6,
            default_pull_messages: 1,
            max_pull_messages: 1,
            default_pull_bytes: 1,
            max_pull_bytes: 1,
            max_wait_ms: 1,
        }
    }

    const BODIES: [u8; 8] = [0; 8];

    fn message(body: usize, tags: Option<&'static str>) -> MessageDraft<'static> {
        MessageDraft {
            body: &BODIES[..body],
            tags: tags.map(std::borrow::Cow::Borrowed),
            ..MessageDraft::default()
        }
    }

    fn refusal(messages: &[MessageDraft<'_>]) -> String {
        let refused = check_batch(messages, &limits()).expect_err("refused");
        assert_eq!(refused.code(), 3);
        refused.message()
    }

    #[test]
    fn each_limit_names_itself_in_the_brokers_words() {
        assert!(check_batch(&[message(4, Some("t")), message(2, None)], &limits()).is_ok());
        assert_eq!(refusal(&[]), "the batch has no messages");
        let three = [message(1, None), message(1, None), message(1, None)];
        assert!(refusal(&three).contains("3 messages, more than the limit of 2"));
        let heavy = [message(4, None), message(4, None)];
        assert!(refusal(&heavy).contains("add up to 8 bytes, more than the limit of 6"));
        let large = [message(1, None), message(5, None)];
        assert!(refusal(&large).starts_with("message 1: body is 5 bytes"));
        let tagged = [message(1, Some("a\u{1}"))];
        assert!(refusal(&tagged).starts_with("message 0: invalid tags:"));
    }
}
