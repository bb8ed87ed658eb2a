//! An encoded `rmq.v1.PullResponse` straight into the engine's column buffers
//! (`rmqcore::segment_decoder::ColumnBatch`, Arrow's layouts), with no object per message:
//! what both Spark stream readers of a broker take, the Python binding
//! (`rmq._rmqcore.decode_pull_columns`) and the JVM one (crates/rmqjvm's `broker`).

use std::collections::HashSet;

use rmqcore::segment_decoder::ColumnBatch;
use rmqproto::fields::pull_response as response;
use rmqproto::stored_view::{put_property, Repeated, StoredView};
use rmqproto::wire::{WireReader, WireValue};

/// The bytes were not an `rmq.v1.PullResponse`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

impl std::fmt::Display for Malformed {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("malformed rmq.v1.PullResponse")
    }
}

impl std::error::Error for Malformed {}

/// Which rows of a response to keep: those below `end_offset` and, when `keys` is not
/// empty, those that carry one of them.
pub struct RowFilter<'a> {
    pub end_offset: i64,
    pub keys: HashSet<&'a [u8]>,
}

/// Read one `StoredMessage`; `keys` and `properties` are cleared and refilled, so that
/// their allocations serve every message of a response.
fn parse_stored<'a>(
    bytes: &'a [u8],
    keys: &mut Vec<&'a [u8]>,
    properties: &mut Vec<(&'a [u8], &'a [u8])>,
) -> Result<StoredView<'a>, Malformed> {
    keys.clear();
    properties.clear();
    StoredView::parse(bytes, |field| match field {
        Repeated::Key(key) => {
            keys.push(key);
            Ok(())
        }
        Repeated::Property(entry) => put_property(properties, entry),
    })
    .map_err(|_| Malformed)
}

fn push_row(
    batch: &mut ColumnBatch,
    message: &StoredView<'_>,
    keys: &[&[u8]],
    properties: &[(&[u8], &[u8])],
) {
    batch.topic.push_text(message.topic);
    batch.queue_id.push(message.queue_id);
    batch.queue_offset.push(message.queue_offset);
    batch.commitlog_offset.push(message.commitlog_offset);
    batch.msg_id.push_text(message.msg_id);
    match message.tags {
        Some(tags) => batch.tags.push_text(tags),
        None => batch.tags.push_bytes(b""),
    }
    batch.tags_valid.push(message.tags.is_some());
    for key in keys {
        batch.keys.values.push_text(key);
    }
    batch.keys.close_row();
    for (name, value) in properties {
        batch.properties.names.push_text(name);
        batch.properties.values.push_text(value);
    }
    batch.properties.close_row();
    batch.body.push_bytes(message.body);
    batch
        .body_size
        .push(i32::try_from(message.body.len()).expect("a message body is under 2 GiB"));
    batch.born_timestamp.push(message.born_timestamp);
    batch.store_timestamp.push(message.store_timestamp);
    batch.born_host.push_text(message.born_host);
    batch.store_host.push_text(message.store_host);
    batch.sys_flag.push(message.sys_flag);
    batch.flag.push(message.flag);
    batch.reconsume_times.push(message.reconsume_times);
    // A pull does not report whether the body's CRC was checked: body_crc_ok is null.
    batch.crc_ok.push(false);
    batch.crc_checked.push(false);
}

/// Append the rows of the encoded response `raw` that `filter` keeps to `batch`, and
/// return the response's `next_offset` (where the next pull starts, filters aside).
/// Text that is not UTF-8 becomes U+FFFD, as in the segment decoder.
pub fn append_pull_columns(
    raw: &[u8],
    filter: &RowFilter<'_>,
    batch: &mut ColumnBatch,
) -> Result<i64, Malformed> {
    let mut next_offset = 0;
    let (mut message_keys, mut properties) = (Vec::new(), Vec::new());
    let mut reader = WireReader::new(raw);
    while let Some((field, value)) = reader.next_field().ok_or(Malformed)? {
        match (field, value) {
            (response::MESSAGES, WireValue::Bytes(bytes)) => {
                let message = parse_stored(bytes, &mut message_keys, &mut properties)?;
                let in_range = message.queue_offset < filter.end_offset;
                let has_key = filter.keys.is_empty()
                    || message_keys.iter().any(|key| filter.keys.contains(key));
                if in_range && has_key {
                    push_row(batch, &message, &message_keys, &properties);
                }
            }
            (response::NEXT_OFFSET, WireValue::Varint(value)) => next_offset = value as i64,
            _ => {}
        }
    }
    Ok(next_offset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message as _;
    use rmqproto::v1::{PullResponse, StoredMessage};

    fn response(offsets: std::ops::Range<i64>, next_offset: i64) -> Vec<u8> {
        PullResponse {
            messages: offsets
                .map(|offset| StoredMessage {
                    topic: "t".into(),
                    queue_offset: offset,
                    body: format!("b{offset}").into_bytes().into(),
                    keys: if offset % 2 == 0 {
                        vec!["even".into()]
                    } else {
                        vec![]
                    },
                    tags: (offset % 3 == 0).then(|| "three".into()),
                    ..Default::default()
                })
                .collect(),
            next_offset,
            ..Default::default()
        }
        .encode_to_vec()
    }

    #[test]
    fn responses_append_to_one_batch_within_the_end_and_keys() {
        let mut batch = ColumnBatch::default();
        let everything = RowFilter {
            end_offset: 7,
            keys: HashSet::new(),
        };
        assert_eq!(
            append_pull_columns(&response(0..4, 4), &everything, &mut batch),
            Ok(4)
        );
        assert_eq!(
            append_pull_columns(&response(4..10, 10), &everything, &mut batch),
            Ok(10)
        );
        let offsets: Vec<i64> = batch.queue_offset.clone();
        assert_eq!(offsets, (0..7).collect::<Vec<_>>());
        assert_eq!(batch.body.value(6), b"b6");
        assert_eq!(batch.tags_valid.len, 7);
        assert!(batch.tags_valid.get(3) && !batch.tags_valid.get(4));

        let mut keyed = ColumnBatch::default();
        let even = RowFilter {
            end_offset: i64::MAX,
            keys: [b"even".as_slice()].into_iter().collect(),
        };
        append_pull_columns(&response(0..5, 5), &even, &mut keyed).unwrap();
        assert_eq!(keyed.queue_offset, vec![0, 2, 4]);
        assert_eq!(keyed.rows(), 3);
        assert_eq!(
            append_pull_columns(b"\xff\xff", &even, &mut keyed),
            Err(Malformed)
        );
    }
}
