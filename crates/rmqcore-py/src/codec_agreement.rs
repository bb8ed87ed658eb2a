//! The hand-written encoders and parsers of the hot path agree with the types prost
//! generates from `proto/` (`rmqproto::v1`): what one writes, the other reads back the
//! same, so neither can drift from the `.proto` file.

use std::collections::HashMap;
use std::net::SocketAddr;

use proptest::prelude::*;
use prost::Message as _;
use rmqcore::PutResult;
use rmqproto::v1;

use rmqnet::client::encode::{put_message, request_head};
use rmqnet::client::outcome::answers;
use rmqnet::client::SendOutcome;
use rmqnet::codec::send::{decode_request, encode_send_response};

#[derive(Debug, Clone)]
struct Draft {
    body: Vec<u8>,
    tags: Option<String>,
    keys: Vec<String>,
    properties: Vec<(String, String)>,
}

fn drafts() -> impl Strategy<Value = Vec<Draft>> {
    // What the broker accepts (the parser leaves anything else to the checked path).
    let text = "[a-zA-Z0-9_.-]{1,12}";
    let draft = (
        proptest::collection::vec(any::<u8>(), 0..64),
        proptest::option::of(text),
        proptest::collection::vec("[a-z0-9]{1,8}", 0..3),
        proptest::collection::btree_map("[A-Za-z_]{1,8}", "[a-z0-9]{1,8}", 0..3),
    )
        .prop_map(|(body, tags, keys, properties)| Draft {
            body,
            tags,
            keys,
            properties: properties.into_iter().collect(),
        });
    proptest::collection::vec(draft, 1..5)
}

fn hand_encoded(topic: &str, queue_id: i32, drafts: &[Draft]) -> Vec<u8> {
    let mut out = request_head(topic, queue_id);
    for draft in drafts {
        let keys: Vec<&str> = draft.keys.iter().map(String::as_str).collect();
        put_message(
            &mut out,
            &draft.body,
            draft.tags.as_deref(),
            &keys,
            &draft.properties,
        );
    }
    out
}

fn generated(topic: &str, queue_id: i32, drafts: &[Draft]) -> v1::SendRequest {
    v1::SendRequest {
        topic: topic.to_owned(),
        queue_id,
        messages: drafts
            .iter()
            .map(|d| v1::Message {
                body: d.body.clone().into(),
                tags: d.tags.clone(),
                keys: d.keys.clone(),
                properties: d.properties.iter().cloned().collect::<HashMap<_, _>>(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

proptest! {
    #[test]
    fn the_producers_encoding_decodes_as_the_generated_send_request(
        drafts in drafts(), queue_id in 0i32..1024
    ) {
        let bytes = hand_encoded("orders", queue_id, &drafts);
        let decoded = v1::SendRequest::decode(bytes.as_slice()).unwrap();
        prop_assert_eq!(decoded, generated("orders", queue_id, &drafts));
    }

    #[test]
    fn the_shards_parser_reads_what_the_generated_types_encode(
        drafts in drafts(), queue_id in 0i32..1024, sequence in any::<u64>()
    ) {
        let mut request = generated("orders", queue_id, &drafts);
        request.sequence = sequence;
        let bytes = request.encode_to_vec();
        let (topic, queue, seq, messages) = decode_request(&bytes).unwrap();
        prop_assert_eq!((topic, queue, seq), ("orders", queue_id, sequence));
        prop_assert_eq!(messages.len(), drafts.len());
        for (decoded, draft) in messages.iter().zip(&drafts) {
            prop_assert_eq!(decoded.body, draft.body.as_slice());
            prop_assert_eq!(decoded.tags.as_deref(), draft.tags.as_deref());
            prop_assert_eq!(decoded.keys.iter().map(AsRef::as_ref).collect::<Vec<&str>>(), draft.keys.iter().map(String::as_str).collect::<Vec<_>>());
            let mut properties = decoded.properties.clone();
            properties.sort();
            prop_assert_eq!(&properties, &draft.properties);
            prop_assert_eq!((decoded.flag, decoded.born_timestamp, decoded.born_host), (0, None, None));
        }
    }
}

#[test]
fn the_shards_send_response_decodes_as_the_generated_type() {
    let host: SocketAddr = "127.0.0.1:10911".parse().unwrap();
    let results: Vec<PutResult> = (0..3)
        .map(|i| PutResult {
            store_host: host,
            commitlog_offset: 1000 * i,
            queue_offset: i,
            store_timestamp: 1_700_000_000_000 + i,
            store_size: 120 + i as i32,
        })
        .collect();
    let decoded = v1::SendResponse::decode(encode_send_response(&results, 42).as_slice()).unwrap();
    assert_eq!(decoded.sequence, 42);
    assert_eq!(decoded.queue_offsets, vec![0, 1, 2]);
    assert_eq!(decoded.commitlog_offsets, vec![0, 1000, 2000]);
    assert_eq!(decoded.store_sizes, vec![120, 121, 122]);
    // One batch's messages share the shard's store host: the answer names it once and
    // the client derives each msgId from it, the ids the engine gives.
    assert!(decoded.msg_ids.is_empty());
    assert_eq!(decoded.store_host, "127.0.0.1:10911");
    let raw = v1::SendBatchesResponse {
        answers: vec![v1::SendStreamResponse {
            sequence: 42,
            outcome: Some(v1::send_stream_response::Outcome::Result(decoded)),
        }],
    }
    .encode_to_vec();
    let [SendOutcome::Stored(batch)] = &answers(&raw, &[3])[..] else {
        panic!("the batch is stored");
    };
    let derived: Vec<String> = (0..3).filter_map(|i| batch.msg_id(i)).collect();
    assert_eq!(
        derived,
        results.iter().map(PutResult::msg_id).collect::<Vec<_>>()
    );
}

#[test]
fn results_under_different_store_hosts_keep_their_own_msg_ids() {
    let results: Vec<PutResult> = ["127.0.0.1:10911", "[::1]:10911"]
        .iter()
        .map(|host| PutResult {
            store_host: host.parse().unwrap(),
            commitlog_offset: 64,
            queue_offset: 0,
            store_timestamp: 1_700_000_000_000,
            store_size: 120,
        })
        .collect();
    let decoded = v1::SendResponse::decode(encode_send_response(&results, 0).as_slice()).unwrap();
    assert_eq!(decoded.store_host, "");
    assert_eq!(
        decoded.msg_ids,
        results.iter().map(PutResult::msg_id).collect::<Vec<_>>()
    );
}

fn send_response() -> impl Strategy<Value = v1::SendResponse> {
    (
        proptest::collection::vec("[0-9A-F]{32}", 0..4),
        proptest::collection::vec(any::<i64>(), 0..4),
        proptest::collection::vec(any::<i64>(), 0..4),
        proptest::collection::vec(any::<i64>(), 0..4),
        proptest::collection::vec(any::<i32>(), 0..4),
        any::<u64>(),
        "[0-9.:]{0,21}",
    )
        .prop_map(
            |(msg_ids, commitlog, queue, timestamps, sizes, sequence, store_host)| {
                v1::SendResponse {
                    msg_ids,
                    commitlog_offsets: commitlog,
                    queue_offsets: queue,
                    store_timestamps: timestamps,
                    store_sizes: sizes,
                    sequence,
                    store_host,
                }
            },
        )
}

fn stream_answer() -> impl Strategy<Value = v1::SendStreamResponse> {
    use v1::send_stream_response::Outcome;
    let outcome = prop_oneof![
        Just(None),
        send_response().prop_map(|result| Some(Outcome::Result(result))),
        (any::<i32>(), ".{0,12}")
            .prop_map(|(code, message)| Some(Outcome::Error(v1::Error { code, message }))),
    ];
    (any::<u64>(), outcome)
        .prop_map(|(sequence, outcome)| v1::SendStreamResponse { sequence, outcome })
}

proptest! {
    #[test]
    fn the_producers_answer_reader_reads_what_the_generated_type_writes(
        answers in proptest::collection::vec(stream_answer(), 0..4)
    ) {
        use rmqnet::client::answer_wire::{read_answers, ReadAnswer, StoredColumns};
        use v1::send_stream_response::Outcome;
        let raw = v1::SendBatchesResponse { answers: answers.clone() }.encode_to_vec();
        let expected: Vec<ReadAnswer> = answers
            .into_iter()
            .map(|answer| match answer.outcome {
                None => ReadAnswer::Stored(StoredColumns::default()),
                Some(Outcome::Result(result)) => ReadAnswer::Stored(StoredColumns {
                    msg_ids: result.msg_ids,
                    commitlog_offsets: result.commitlog_offsets,
                    queue_offsets: result.queue_offsets,
                    store_timestamps: result.store_timestamps,
                    store_host: result.store_host,
                }),
                Some(Outcome::Error(error)) => ReadAnswer::Refused {
                    code: error.code,
                    message: error.message,
                },
            })
            .collect();
        prop_assert_eq!(read_answers(&raw), Some(expected));
        // Cut anywhere inside, the bytes are refused as prost refuses them.
        for end in 0..raw.len() {
            let cut = &raw[..end];
            prop_assert_eq!(
                read_answers(cut).is_some(),
                v1::SendBatchesResponse::decode(cut).is_ok(),
                "cut at {}", end
            );
        }
    }
}
