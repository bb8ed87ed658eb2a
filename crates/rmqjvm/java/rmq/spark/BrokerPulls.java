package rmq.spark;

import static rmq.spark.BatchLayout.*;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The pulls that read one {@link BrokerPart}, in order: per range, pulls of up to
 * batch_rows messages (the native side joins the broker's pulls into one batch). Data
 * lost to retention between planning and reading is decided here, as in
 * python/rmq/spark/queue_read.py: fail with a message that says how many and what to do
 * (failOnDataLoss=true), or log it and go on from the queue's first offset. */
final class BrokerPulls {
  private static final Logger LOG = LoggerFactory.getLogger("rmq.spark");

  /** A pulled batch of {@code slots[ROWS]} rows (> 0), to be freed with
   * {@code NativeBroker.freeBatch}, and the shard its queue lives in. */
  record Pulled(long batch, long[] slots, String shard) {
    void free() {
      NativeBroker.freeBatch(batch);
    }
  }

  private final BrokerPart part;
  private final StreamOptions options;
  private final long connection;
  private int range;
  private long offset;

  BrokerPulls(BrokerPart part, StreamOptions options) {
    this.part = part;
    this.options = options;
    this.connection = NativeBroker.connection(options.endpoint, options.token, BrokerQueues.RETRY_MILLIS);
    this.offset = part.ranges().length == 0 ? 0 : part.ranges()[0].start();
  }

  /** The next batch with rows, or null when the part is read. */
  Pulled next() {
    while (range < part.ranges().length) {
      QueueRange read = part.ranges()[range];
      if (offset >= read.end()) {
        range += 1;
        if (range < part.ranges().length) {
          offset = part.ranges()[range].start();
        }
        continue;
      }
      long[] slots = new long[SLOTS];
      long batch;
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
        NativeBroker.freeBatch(batch);
        throw new RmqException(
            "queue " + read.queueId() + " of topic '" + options.topic + "' gave nothing at offset "
                + offset + ", below the end " + read.end() + " planned for this batch");
      }
      offset = next;
      if (slots[ROWS] > 0) {
        return new Pulled(batch, slots, part.shards()[range]);
      }
      NativeBroker.freeBatch(batch);
    }
    return null;
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
}
