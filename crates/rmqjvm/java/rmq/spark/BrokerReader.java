package rmq.spark;

import static rmq.spark.BatchLayout.*;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Reads one {@link BrokerPart} as column batches: per range, pulls of up to batch_rows
 * messages (the native side joins the broker's pulls into one batch), read in place by the
 * same vectors as the segment reader's. Data lost to retention between planning and
 * reading is decided here, as in python/rmq/spark/queue_read.py: fail with a message that
 * says how many and what to do (failOnDataLoss=true), or log it and go on from the queue's
 * first offset. */
final class BrokerReader implements PartitionReader<ColumnarBatch> {
  private static final Logger LOG = LoggerFactory.getLogger("rmq.spark");

  /** Sent to the executors: what each reader needs. */
  record Factory(StructType schema, StreamOptions options) implements PartitionReaderFactory {
    @Override
    public boolean supportColumnarReads(InputPartition partition) {
      return true;
    }

    @Override
    public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
      return new BrokerReader((BrokerPart) partition, schema, options);
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
      throw new UnsupportedOperationException("the rmq reader reads columns");
    }
  }

  private final BrokerPart part;
  private final StructType schema;
  private final StreamOptions options;
  private final long connection;
  private final long[] slots = new long[SLOTS];
  private int range;
  private long offset;
  private long batch;
  private ColumnarBatch current;

  BrokerReader(BrokerPart part, StructType schema, StreamOptions options) {
    this.part = part;
    this.schema = schema;
    this.options = options;
    this.connection = NativeBroker.connection(options.endpoint, options.token, BrokerQueues.RETRY_MILLIS);
    this.offset = part.ranges().length == 0 ? 0 : part.ranges()[0].start();
  }

  @Override
  public boolean next() {
    freeBatch();
    while (range < part.ranges().length) {
      QueueRange read = part.ranges()[range];
      if (offset >= read.end()) {
        range += 1;
        if (range < part.ranges().length) {
          offset = part.ranges()[range].start();
        }
        continue;
      }
      try {
        batch =
            NativeBroker.pull(
                connection,
                options.topic,
                read.queueId(),
                offset,
                read.end(),
                (int) Math.min(options.batchRows, read.end() - offset),
                options.tags,
                options.keys,
                slots);
      } catch (BrokerCallException failed) {
        if (failed.code() != BrokerCallException.OUT_OF_RANGE) {
          throw failed;
        }
        offset = afterLoss(read, failed);
        continue;
      }
      long next = slots[NEXT_POSITION];
      if (next <= offset) {
        throw new RmqException(
            "queue " + read.queueId() + " of topic '" + options.topic + "' gave nothing at offset "
                + offset + ", below the end " + read.end() + " planned for this batch");
      }
      offset = next;
      int rows = (int) slots[ROWS];
      if (rows > 0) {
        current = RmqSchema.columnar(schema, slots, part.shards()[range], rows);
        return true;
      }
      freeBatch();
    }
    return false;
  }

  /** Where to go on after a pull below the queue's first offset, or the error to fail. */
  private long afterLoss(QueueRange read, BrokerCallException failed) {
    long[] bounds = NativeBroker.queueOffsets(connection, options.topic, read.queueId());
    long first = BrokerQueues.firstReadable(connection, options.topic, read.queueId(), bounds[0], bounds[1]);
    if (offset >= first) {
      throw failed;
    }
    RmqException loss = BrokerQueues.dataLoss(options.topic, read.queueId(), offset, first);
    if (!read.newQueue()) {
      if (options.failOnDataLoss) {
        throw loss;
      }
      LOG.warn("{}", loss.getMessage());
    }
    return first;
  }

  @Override
  public ColumnarBatch get() {
    return current;
  }

  private void freeBatch() {
    current = null;
    if (batch != 0) {
      NativeBroker.freeBatch(batch);
      batch = 0;
    }
  }

  @Override
  public void close() {
    freeBatch();
  }
}
