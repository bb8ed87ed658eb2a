//! What a pull of one queue asks for (`PullQuery`) and what it answers: the messages
//! copied out (`PullResult`) or, when each record was handed to a visitor as it was read,
//! how many there were and where the queue stands (`Pulled`).

use crate::record::message::StoredMessage;
use crate::tag_filter::TagFilter;

/// One read of a queue from `offset` on. The filter and the byte limit are optional:
/// `PullQuery::new` leaves them out, `with_filter` and `with_max_bytes` add them.
#[derive(Debug, Clone, Copy)]
pub struct PullQuery<'a> {
    pub topic: &'a str,
    pub queue_id: i32,
    pub offset: i64,
    /// At least 1.
    pub max_count: usize,
    /// Entries whose tag does not match are passed over (a bounded number of them), and
    /// the next offset moves past them.
    pub filter: Option<&'a TagFilter>,
    /// The read stops before the bodies would pass this many bytes; the first record is
    /// taken whatever its size, so that a large one cannot stall its queue.
    pub max_bytes: Option<usize>,
}

impl<'a> PullQuery<'a> {
    pub fn new(topic: &'a str, queue_id: i32, offset: i64, max_count: usize) -> Self {
        PullQuery {
            topic,
            queue_id,
            offset,
            max_count,
            filter: None,
            max_bytes: None,
        }
    }

    pub fn with_filter(self, filter: Option<&'a TagFilter>) -> Self {
        PullQuery { filter, ..self }
    }

    pub fn with_max_bytes(self, max_bytes: Option<usize>) -> Self {
        PullQuery { max_bytes, ..self }
    }
}

/// The answer to a pull: the messages and where the next pull should start.
#[derive(Debug, Clone)]
pub struct PullResult {
    pub messages: Vec<StoredMessage>,
    pub next_offset: i64,
    pub min_offset: i64,
    pub max_offset: i64,
}

/// What `pull_each` visited: how many records, and the queue's positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pulled {
    pub count: usize,
    pub next_offset: i64,
    pub min_offset: i64,
    pub max_offset: i64,
}
