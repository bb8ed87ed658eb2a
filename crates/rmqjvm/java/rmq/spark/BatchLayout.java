package rmq.spark;

/** Slots of the {@code long[]} that {@link NativeDecoder#decode} fills: numbers about the
 * batch, then the address of each column buffer. Mirrors crates/rmqjvm/src/layout.rs;
 * change both. */
final class BatchLayout {
  static final int ROWS = 0;
  static final int NEXT_POSITION = 1;
  static final int END = 2;
  static final int NOTHING_AFTER = 3;
  static final int RECORDS_SCANNED = 4;
  static final int SLOTS = 8 + 32;

  /** END values. */
  static final int MORE = 0;
  static final int INVALID = 5;

  // Buffer slots, in layout.rs's order.
  static final int TOPIC = 8; // offsets, data
  static final int QUEUE_ID = 10;
  static final int QUEUE_OFFSET = 11;
  static final int COMMITLOG_OFFSET = 12;
  static final int MSG_ID = 13; // offsets, data
  static final int TAGS = 15; // offsets, data, validity
  static final int KEYS = 18; // list offsets, value offsets, value data
  static final int PROPERTIES = 21; // map offsets, name offsets, name data, value offsets, value data
  static final int BODY = 26; // offsets, data
  static final int BODY_SIZE = 28;
  static final int BORN_TIMESTAMP = 29;
  static final int STORE_TIMESTAMP = 30;
  static final int BORN_HOST = 31; // offsets, data
  static final int STORE_HOST = 33; // offsets, data
  static final int SYS_FLAG = 35;
  static final int FLAG = 36;
  static final int RECONSUME_TIMES = 37;
  static final int CRC_OK = 38;
  static final int CRC_CHECKED = 39;

  private BatchLayout() {}
}
