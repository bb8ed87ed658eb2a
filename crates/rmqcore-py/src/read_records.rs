//! The records of one read from a queue, copied out of the log into one buffer that the
//! messages made from them share: a read of 32 messages allocates once, not 32 times, and
//! each message knows where its body is without decoding its record again.

use std::ops::Range;
use std::sync::{Arc, OnceLock};

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rmqcore::record::message::MessageProperties;
use rmqcore::record::{decode_record, Decoded, RecordView};

/// The most a read reserves for its records up front.
const MAX_RESERVED: usize = 1 << 20;

/// Collects records as the store hands them out (without the GIL).
#[derive(Default)]
pub struct ReadRecords {
    bytes: Vec<u8>,
    spans: Vec<Span>,
    /// How many records the read may return (0: unknown).
    expected: usize,
}

#[derive(Clone)]
struct Span {
    record: Range<usize>,
    body: Range<usize>,
}

impl ReadRecords {
    /// For a read of at most `records` records.
    pub fn expecting(records: usize) -> Self {
        ReadRecords {
            expected: records,
            ..ReadRecords::default()
        }
    }

    pub fn push(&mut self, view: &RecordView<'_>) {
        if self.spans.is_empty() {
            // Room for as many records as large as the first (within a bound): grown by
            // doubling, the buffer of a 32-record read was copied five times over, a
            // copy of every byte read (callgrind: 12 % of a tiered pull's instructions,
            // where the tier's cached blocks leave the heap no room to grow in place).
            let wanted = view.raw.len().saturating_mul(self.expected);
            self.bytes.reserve(wanted.min(MAX_RESERVED));
        }
        let start = self.bytes.len();
        // The body is a slice of the record: its place in the copy follows from its place
        // in the original.
        let body_at = view.body.as_ptr() as usize - view.raw.as_ptr() as usize;
        self.bytes.extend_from_slice(view.raw);
        self.spans.push(Span {
            record: start..start + view.raw.len(),
            body: start + body_at..start + body_at + view.body.len(),
        });
    }

    pub fn into_records(self) -> impl Iterator<Item = Record> {
        let shared = Arc::new(self.bytes);
        self.spans.into_iter().map(move |span| Record {
            shared: Arc::clone(&shared),
            span,
            body: OnceLock::new(),
        })
    }
}

/// One message's record, inside the buffer of the read that returned it.
pub struct Record {
    shared: Arc<Vec<u8>>,
    span: Span,
    body: OnceLock<Py<PyBytes>>,
}

impl Record {
    pub fn view(&self) -> RecordView<'_> {
        match decode_record(&self.shared[self.span.record.clone()], false) {
            Ok(Decoded::Record(view)) => view,
            // The bytes are a record the store read and decoded a moment ago.
            _ => unreachable!("a record copied from the log decodes again"),
        }
    }

    /// The body as one `bytes` object, made the first time it is asked for.
    pub fn body(&self, py: Python<'_>) -> Py<PyBytes> {
        self.body
            .get_or_init(|| PyBytes::new(py, &self.shared[self.span.body.clone()]).unbind())
            .clone_ref(py)
    }

    pub fn properties(&self) -> MessageProperties {
        MessageProperties::decode(self.view().properties)
    }
}
