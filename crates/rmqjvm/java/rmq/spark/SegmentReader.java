package rmq.spark;

import static rmq.spark.BatchLayout.*;

import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Reads one part as column batches over the native decoder's buffers, one native call per
 * batch. Ends like the Python source's {@code read_part}: at an invalid record every row
 * before it has been returned, then {@code on_corrupt=fail} throws
 * {@link CorruptRecordException} and {@code stop} logs a warning; a torn last record of the
 * shard's last segment ends the part with a warning. */
final class SegmentReader implements PartitionReader<ColumnarBatch> {
  private static final Logger LOG = LoggerFactory.getLogger("rmq.spark");

  private final SegmentPart part;
  private final StructType schema;
  private final ReadOptions options;
  private final Selection selection;
  private final int columns;
  private final boolean verifyCrc;
  private final String[] topics;
  private final long[] slots = new long[SLOTS];
  private long decoder;
  private long batch;
  private long position;
  private boolean ended;
  private ColumnarBatch current;

  SegmentReader(SegmentPart part, StructType schema, ReadOptions options, Selection selection) {
    this.part = part;
    this.schema = schema;
    this.options = options;
    this.selection = selection;
    this.columns = RmqSchema.nativeColumns(schema);
    // Checking CRCs only fills body_crc_ok (a mismatch is not an error), as in Python.
    this.verifyCrc = options.verifyCrc && java.util.Arrays.asList(schema.fieldNames()).contains("body_crc_ok");
    this.topics = selection.topics == null ? null : selection.topics.toArray(new String[0]);
    this.position = part.begin();
    this.decoder = NativeDecoder.open(part.path(), part.startOffset());
  }

  @Override
  public boolean next() {
    freeBatch();
    while (!ended) {
      batch =
          NativeDecoder.decode(
              decoder,
              position,
              part.end(),
              options.batchRows,
              columns,
              verifyCrc,
              topics,
              selection.storeTimeMin == null ? Long.MIN_VALUE : selection.storeTimeMin,
              selection.storeTimeMax == null ? Long.MAX_VALUE : selection.storeTimeMax,
              slots);
      int rows = (int) slots[ROWS];
      position = slots[NEXT_POSITION];
      if (slots[END] != MORE) {
        ended = true;
        if (slots[END] == INVALID) {
          // The rows before the invalid record go out first; report it when they have.
          String message = NativeDecoder.invalidRecord(decoder, batch);
          if (rows == 0) {
            report(message);
          } else {
            pendingInvalid = message;
          }
        }
      }
      if (rows > 0) {
        current = columnar(rows);
        return true;
      }
      freeBatch();
    }
    if (pendingInvalid != null) {
      String message = pendingInvalid;
      pendingInvalid = null;
      report(message);
    }
    return false;
  }

  private String pendingInvalid;

  private void report(String message) {
    boolean tornTail = part.tail() && slots[NOTHING_AFTER] != 0;
    if (tornTail) {
      LOG.warn("shard {}: the log ends with a torn record: {}", part.shard(), message);
    } else if (options.onCorrupt.equals("stop")) {
      LOG.warn("shard {}: stopped at a corrupt record: {}", part.shard(), message);
    } else {
      throw new CorruptRecordException(message);
    }
  }

  private ColumnarBatch columnar(int rows) {
    if ((columns & NativeDecoder.BODY) != 0) {
      long offsets = slots[BODY];
      ReadCounters.addBodyBytes(org.apache.spark.unsafe.Platform.getInt(null, offsets + 4L * rows));
    }
    return RmqSchema.columnar(schema, slots, part.shard(), rows);
  }

  @Override
  public ColumnarBatch get() {
    return current;
  }

  private void freeBatch() {
    current = null;
    if (batch != 0) {
      NativeDecoder.freeBatch(batch);
      batch = 0;
    }
  }

  @Override
  public void close() {
    freeBatch();
    if (decoder != 0) {
      NativeDecoder.close(decoder);
      decoder = 0;
    }
  }
}
