//! A shard's `SendBatchesResponse` read straight from its bytes, into the columns a
//! producer keeps of each stored batch.
//!
//! The answer is read on the runtime's thread before the queues it frees can send their
//! next batches, so its cost is on every round trip's path. prost's generic decoding of
//! the packed columns cost about 470 instructions per 100 B message (callgrind, batches of
//! 128); this reads the same bytes with the wire reader the shard uses for requests.
//! `rmqcore-py`'s codec agreement tests check it against the prost types.

use rmqproto::fields::{
    error, send_batches_response as batches, send_response as response,
    send_stream_response as answer,
};
use rmqproto::wire::{WireReader, WireValue};

/// Where a stored batch's messages are, one column per field, in request order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoredColumns {
    pub msg_ids: Vec<String>,
    pub commitlog_offsets: Vec<i64>,
    pub queue_offsets: Vec<i64>,
    pub store_timestamps: Vec<i64>,
    pub store_host: String,
}

/// One batch's answer as read.
#[derive(Debug, Clone, PartialEq)]
pub enum ReadAnswer {
    /// A result, or an answer with neither result nor error (a result of defaults).
    Stored(StoredColumns),
    Refused {
        code: i32,
        message: String,
    },
}

/// Each answer of a `SendBatchesResponse`, in order; None when the bytes are not one.
pub fn read_answers(raw: &[u8]) -> Option<Vec<ReadAnswer>> {
    let mut answers = Vec::new();
    let mut reader = WireReader::new(raw);
    while let Some((field, value)) = reader.next_field()? {
        match (field, value) {
            (batches::ANSWERS, WireValue::Bytes(bytes)) => answers.push(read_answer(bytes)?),
            (batches::ANSWERS, _) => return None,
            _ => {}
        }
    }
    Some(answers)
}

fn read_answer(raw: &[u8]) -> Option<ReadAnswer> {
    // Of the oneof's two fields, the last one given is the answer.
    let mut outcome = ReadAnswer::Stored(StoredColumns::default());
    let mut reader = WireReader::new(raw);
    while let Some((field, value)) = reader.next_field()? {
        match (field, value) {
            (answer::RESULT, WireValue::Bytes(bytes)) => {
                outcome = ReadAnswer::Stored(read_columns(bytes)?);
            }
            (answer::ERROR, WireValue::Bytes(bytes)) => outcome = read_error(bytes)?,
            (answer::SEQUENCE, WireValue::Varint(_)) => {}
            (answer::RESULT | answer::ERROR | answer::SEQUENCE, _) => return None,
            _ => {}
        }
    }
    Some(outcome)
}

fn read_columns(raw: &[u8]) -> Option<StoredColumns> {
    let mut columns = StoredColumns::default();
    let mut ignored = Vec::new();
    let mut reader = WireReader::new(raw);
    while let Some((field, value)) = reader.next_field()? {
        let column = match field {
            response::COMMITLOG_OFFSETS => &mut columns.commitlog_offsets,
            response::QUEUE_OFFSETS => &mut columns.queue_offsets,
            response::STORE_TIMESTAMPS => &mut columns.store_timestamps,
            response::MSG_IDS | response::STORE_HOST => {
                let WireValue::Bytes(bytes) = value else {
                    return None;
                };
                let text = std::str::from_utf8(bytes).ok()?.to_owned();
                if field == response::MSG_IDS {
                    columns.msg_ids.push(text);
                } else {
                    columns.store_host = text;
                }
                continue;
            }
            // Not kept by a producer; still checked as protobuf would read them.
            response::STORE_SIZES => &mut ignored,
            response::SEQUENCE => match value {
                WireValue::Varint(_) => continue,
                _ => return None,
            },
            _ => continue,
        };
        // A repeated integer arrives packed, or (as protobuf also allows) one by one.
        match value {
            WireValue::Bytes(bytes) => WireReader::packed_varints(bytes, column)?,
            WireValue::Varint(number) => column.push(number as i64),
            WireValue::Fixed => return None,
        }
    }
    Some(columns)
}

fn read_error(raw: &[u8]) -> Option<ReadAnswer> {
    let (mut code, mut message) = (0, String::new());
    let mut reader = WireReader::new(raw);
    while let Some((field, value)) = reader.next_field()? {
        match (field, value) {
            // An int32 is read from the low 32 bits of its varint, as protobuf reads it.
            (error::CODE, WireValue::Varint(number)) => code = number as i32,
            (error::MESSAGE, WireValue::Bytes(bytes)) => {
                message = std::str::from_utf8(bytes).ok()?.to_owned();
            }
            (error::CODE | error::MESSAGE, _) => return None,
            _ => {}
        }
    }
    Some(ReadAnswer::Refused { code, message })
}
