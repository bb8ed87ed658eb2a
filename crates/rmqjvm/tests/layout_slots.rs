//! The `long[]` that describes a batch to Java: its addresses point at the decoded columns,
//! and the slot numbers Java reads (java/rmq/spark/BatchLayout.java) are the ones written.

use rmqcore::segment_decoder::{BatchOptions, SegmentDecoder};
use rmqcore::{MessageDraft, Store, StoreOptions};
use rmqjvm::layout::{self, FIRST_BUFFER, NEXT_POSITION, ROWS, SLOTS};

/// Each Java constant and the buffer it must name, as `describe` orders them.
const JAVA_SLOTS: [(&str, usize); 19] = [
    ("TOPIC", 0),
    ("QUEUE_ID", 2),
    ("QUEUE_OFFSET", 3),
    ("COMMITLOG_OFFSET", 4),
    ("MSG_ID", 5),
    ("TAGS", 7),
    ("KEYS", 10),
    ("PROPERTIES", 13),
    ("BODY", 18),
    ("BODY_SIZE", 20),
    ("BORN_TIMESTAMP", 21),
    ("STORE_TIMESTAMP", 22),
    ("BORN_HOST", 23),
    ("STORE_HOST", 25),
    ("SYS_FLAG", 27),
    ("FLAG", 28),
    ("RECONSUME_TIMES", 29),
    ("CRC_OK", 30),
    ("CRC_CHECKED", 31),
];

#[test]
fn java_reads_the_slots_rust_writes() {
    let java = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("java/rmq/spark/BatchLayout.java"),
    )
    .unwrap();
    let constant = |name: &str| -> usize {
        let line = java
            .lines()
            .find(|line| line.contains(&format!("static final int {name} = ")))
            .unwrap_or_else(|| panic!("BatchLayout.java has no {name}"));
        let value = line.split('=').nth(1).unwrap();
        value.split(';').next().unwrap().trim().parse().unwrap()
    };
    for (name, buffer) in JAVA_SLOTS {
        assert_eq!(constant(name), FIRST_BUFFER + buffer, "{name}");
    }
    assert_eq!(constant("ROWS"), ROWS);
    assert_eq!(constant("NEXT_POSITION"), NEXT_POSITION);
    assert!(java.contains(&format!("static final int SLOTS = {FIRST_BUFFER} + 32;")));
    assert_eq!(SLOTS, FIRST_BUFFER + 32);
}

#[test]
fn the_addresses_point_at_the_decoded_columns() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
    for i in 0..20i32 {
        let body = vec![b'x'; i as usize * 7];
        let draft = MessageDraft {
            body: &body,
            ..Default::default()
        };
        store.put("orders", i % 3, &draft).unwrap();
    }
    store.flush().unwrap();
    let segment = dir.path().join("commitlog").join(format!("{:020}", 0));
    let decoder = SegmentDecoder::open(&segment).unwrap();
    let batch = decoder.decode_batch(0, decoder.size(), &BatchOptions::default());
    let slots = layout::describe(&batch);
    assert_eq!(slots[ROWS], 20);
    assert_eq!(slots[NEXT_POSITION] as usize, batch.next_position);
    let at = |buffer: usize| slots[FIRST_BUFFER + buffer] as usize;
    for row in 0..20 {
        // SAFETY: the addresses are those of the batch's live vectors, read in bounds.
        let (queue_id, body_end) = unsafe {
            (
                *(at(2) as *const i32).add(row),
                *(at(18) as *const i32).add(row + 1),
            )
        };
        assert_eq!(queue_id, batch.columns.queue_id[row]);
        assert_eq!(body_end, batch.columns.body.offsets[row + 1]);
    }
    assert_eq!(at(19), batch.columns.body.data.as_ptr() as usize);
}
