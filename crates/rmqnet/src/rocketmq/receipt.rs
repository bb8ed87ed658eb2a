//! Receipt handles: what a consumer gets with each received message and gives back to
//! ack it or change how long it stays invisible.
//!
//! A handle names the message (topic, queue, offset) and the delivery it came from (the
//! attempt number), so that an ack of an earlier delivery of a message that has since
//! been delivered again is refused instead of acking the newer one. It is opaque to
//! clients: `<queue>/<offset>/<attempt>/<deadline ms>/<topic>` (topic names cannot hold
//! `/`). Both v2 paths read and write it here (the Python one through the binding).

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    pub topic: String,
    pub queue_id: i32,
    pub offset: i64,
    pub attempt: i32,
    pub deadline_ms: i64,
}

impl Receipt {
    pub fn encode(&self) -> String {
        format!(
            "{}/{}/{}/{}/{}",
            self.queue_id, self.offset, self.attempt, self.deadline_ms, self.topic
        )
    }

    /// `None` for text that is not a handle of this broker.
    pub fn decode(text: &str) -> Option<Receipt> {
        let mut parts = text.splitn(5, '/');
        let queue_id: i32 = parts.next()?.parse().ok()?;
        let offset: i64 = parts.next()?.parse().ok()?;
        let attempt: i32 = parts.next()?.parse().ok()?;
        let deadline_ms: i64 = parts.next()?.parse().ok()?;
        let topic = parts.next()?;
        let negative = queue_id < 0 || offset < 0 || attempt < 0 || deadline_ms < 0;
        (!negative && !topic.is_empty()).then(|| Receipt {
            topic: topic.to_owned(),
            queue_id,
            offset,
            attempt,
            deadline_ms,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handle_reads_back_and_nonsense_does_not() {
        let receipt = Receipt {
            topic: "t".into(),
            queue_id: 3,
            offset: 17,
            attempt: 2,
            deadline_ms: 1_700_000_000_000,
        };
        assert_eq!(receipt.encode(), "3/17/2/1700000000000/t");
        assert_eq!(Receipt::decode(&receipt.encode()), Some(receipt));
        for bad in [
            "",
            "1/2/3/4",
            "1/2/3/4/",
            "-1/2/3/4/t",
            "x/2/3/4/t",
            "1/2/+/4/t",
        ] {
            assert_eq!(Receipt::decode(bad), None, "{bad:?}");
        }
    }
}
