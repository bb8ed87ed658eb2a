package rmq.spark;

import static rmq.spark.BatchLayout.*;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/** Reads one {@link BrokerPart} as column batches, read in place by the same vectors as
 * the segment reader's. With {@code prefetchBatches} > 0 (4 by default, as in the Python
 * source) a thread pulls up to that many batches ahead of Spark, so the round trips of
 * the next pulls overlap Spark's work on the last batch; 0 pulls in line. */
final class BrokerReader implements PartitionReader<ColumnarBatch> {
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

  /** What the read-ahead thread hands over: a batch, the end (both null), or a failure. */
  private record Ahead(BrokerPulls.Pulled pulled, RuntimeException failure) {}

  private final StructType schema;
  private final BrokerPulls pulls;
  private final BlockingQueue<Ahead> ahead;
  private final Thread reader;
  private boolean ended;
  private BrokerPulls.Pulled held;
  private ColumnarBatch current;

  BrokerReader(BrokerPart part, StructType schema, StreamOptions options) {
    this.schema = schema;
    this.pulls = new BrokerPulls(part, options);
    if (options.prefetchBatches > 0) {
      ahead = new ArrayBlockingQueue<>(options.prefetchBatches);
      reader = new Thread(this::readAhead, "rmq-pull-ahead");
      reader.setDaemon(true);
      reader.start();
    } else {
      ahead = null;
      reader = null;
    }
  }

  private void readAhead() {
    try {
      BrokerPulls.Pulled pulled;
      do {
        pulled = pulls.next();
        try {
          ahead.put(new Ahead(pulled, null));
        } catch (InterruptedException closed) {
          if (pulled != null) {
            pulled.free();
          }
          return;
        }
      } while (pulled != null);
    } catch (RuntimeException failed) {
      try {
        ahead.put(new Ahead(null, failed));
      } catch (InterruptedException closed) {
        // The reader is closing: nobody is left to tell.
      }
    }
  }

  private BrokerPulls.Pulled take() {
    if (ahead == null) {
      return pulls.next();
    }
    Ahead next;
    try {
      next = ahead.take();
    } catch (InterruptedException interrupted) {
      Thread.currentThread().interrupt();
      throw new RmqException("interrupted while waiting for the broker's messages");
    }
    if (next.failure() != null) {
      throw next.failure();
    }
    return next.pulled();
  }

  @Override
  public boolean next() {
    release();
    if (ended) {
      return false;
    }
    held = take();
    if (held == null) {
      ended = true;
      return false;
    }
    current = RmqSchema.columnar(schema, held.slots(), held.shard(), (int) held.slots()[ROWS]);
    return true;
  }

  @Override
  public ColumnarBatch get() {
    return current;
  }

  private void release() {
    current = null;
    if (held != null) {
      held.free();
      held = null;
    }
  }

  @Override
  public void close() {
    release();
    if (reader != null) {
      reader.interrupt();
      try {
        reader.join();
      } catch (InterruptedException interrupted) {
        Thread.currentThread().interrupt();
      }
      for (Ahead left : ahead) {
        if (left.pulled() != null) {
          left.pulled().free();
        }
      }
      ahead.clear();
    }
  }
}
