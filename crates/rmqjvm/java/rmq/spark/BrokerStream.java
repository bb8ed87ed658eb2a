package rmq.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.connector.read.streaming.Offset;
import org.apache.spark.sql.connector.read.streaming.ReadAllAvailable;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.apache.spark.sql.connector.read.streaming.ReadMaxRows;
import org.apache.spark.sql.connector.read.streaming.SupportsAdmissionControl;
import org.apache.spark.sql.connector.read.streaming.SupportsTriggerAvailableNow;
import org.apache.spark.sql.types.StructType;

/** {@code readStream.format("rmq")} from a running broker ({@code endpoint}), in the JVM:
 * the Python source's stream (python/rmq/spark/stream.py) without a Python interpreter on
 * the driver or the executors. A micro-batch is, per queue, the offsets {@code [start,
 * end)} between two {@link QueueOffsets}, which Spark writes to the checkpoint before it
 * reads the batch: a restarted query re-reads an unfinished batch to the same rows. */
final class BrokerStream
    implements MicroBatchStream, SupportsAdmissionControl, SupportsTriggerAvailableNow {
  private final StructType schema;
  private final StreamOptions options;
  private final BrokerQueues queues;
  /** Where Trigger.AvailableNow stops (the latest offsets when it was asked). */
  private TreeMap<Integer, Long> target;
  /** What the queues held when latestOffset last asked: Spark asks reportLatestOffset
   * right after it, in the same micro-batch, so the answer is reused once. */
  private QueueOffsets seenLatest;
  /** The queues as last described (their shards name the partitions' shard column). */
  private TreeMap<Integer, BrokerQueues.Queue> described;

  BrokerStream(StructType schema, StreamOptions options) {
    this.schema = schema;
    this.options = options;
    // An unreachable broker or an unknown topic fails the query now.
    this.queues = new BrokerQueues(options.endpoint, options.topic, options.token);
  }

  /** The topic's queues now (one DescribeTopic), kept for planning. */
  private TreeMap<Integer, BrokerQueues.Queue> bounds() {
    described = queues.bounds();
    return described;
  }

  private QueueOffsets offsets(Map<Integer, Long> offsets) {
    return new QueueOffsets(options.topic, offsets);
  }

  private static TreeMap<Integer, Long> highs(Map<Integer, BrokerQueues.Queue> bounds) {
    TreeMap<Integer, Long> highs = new TreeMap<>();
    bounds.forEach((queue, info) -> highs.put(queue, info.high()));
    return highs;
  }

  @Override
  public Offset initialOffset() {
    TreeMap<Integer, BrokerQueues.Queue> bounds = bounds();
    if (options.startingTimestamp != null) {
      return offsets(queues.offsetsForTime(options.startingTimestamp, bounds.keySet()));
    }
    if ("earliest".equals(options.starting)) {
      return offsets(queues.firstOffsets(bounds));
    }
    if ("latest".equals(options.starting)) {
      return offsets(highs(bounds));
    }
    return offsets(givenOffsets(options.startingQueues, bounds));
  }

  private TreeMap<Integer, Long> givenOffsets(
      Map<Integer, Long> given, Map<Integer, BrokerQueues.Queue> bounds) {
    String topic = options.topic;
    List<Integer> unknown = new ArrayList<>(given.keySet());
    unknown.removeAll(bounds.keySet());
    List<Integer> missing = new ArrayList<>(bounds.keySet());
    missing.removeAll(given.keySet());
    if (!unknown.isEmpty() || !missing.isEmpty()) {
      List<String> parts = new ArrayList<>();
      if (!unknown.isEmpty()) {
        parts.add("no queue " + unknown);
      }
      if (!missing.isEmpty()) {
        parts.add("missing " + missing);
      }
      throw ReadOptions.invalid(
          "startingOffsets",
          "option startingOffsets must give every queue of '" + topic + "' (ids 0 to "
              + (bounds.size() - 1) + "): " + String.join("; ", parts));
    }
    TreeMap<Integer, Long> offsets = new TreeMap<>();
    for (Map.Entry<Integer, Long> entry : given.entrySet()) {
      int queue = entry.getKey();
      long offset = entry.getValue();
      BrokerQueues.Queue info = bounds.get(queue);
      if (offset == StreamOptions.EARLIEST) {
        offset = info.low();
      } else if (offset == StreamOptions.LATEST) {
        offset = info.high();
      } else if (offset > info.high()) {
        throw ReadOptions.invalid(
            "startingOffsets",
            "option startingOffsets: offset " + offset + " of queue " + queue + " of '" + topic
                + "' is past its end (" + info.high() + ")");
      } else if (offset < info.low()) {
        if (options.failOnDataLoss) {
          throw BrokerQueues.dataLoss(topic, queue, offset, info.low());
        }
        offset = info.low();
      }
      offsets.put(queue, offset);
    }
    return offsets;
  }

  @Override
  public Offset latestOffset() {
    throw new UnsupportedOperationException("the rmq stream takes a read limit: latestOffset(start, limit)");
  }

  @Override
  public Offset latestOffset(Offset start, ReadLimit limit) {
    String topic = options.topic;
    TreeMap<Integer, BrokerQueues.Queue> bounds = bounds();
    TreeMap<Integer, Long> begin =
        start == null ? new TreeMap<>() : QueueOffsets.parse(topic, start.json()).offsets;
    for (Map.Entry<Integer, Long> entry : begin.entrySet()) {
      BrokerQueues.Queue info = bounds.get(entry.getKey());
      long low = info == null ? entry.getValue() : info.low();
      if (entry.getValue() < low && options.failOnDataLoss) {
        throw BrokerQueues.dataLoss(topic, entry.getKey(), entry.getValue(), low);
      }
    }
    TreeMap<Integer, Long> latest = highs(bounds);
    seenLatest = offsets(latest);
    if (target != null) {
      TreeMap<Integer, Long> capped = new TreeMap<>();
      latest.forEach((queue, high) -> capped.put(queue, Math.min(high, target.getOrDefault(queue, 0L))));
      latest = capped;
    }
    if (limit == null && options.maxOffsetsPerTrigger != null) {
      limit = ReadLimit.maxRows(options.maxOffsetsPerTrigger);
    }
    if (limit instanceof ReadMaxRows rows) {
      latest = QueueRange.cap(begin, latest, rows.maxRows());
    } else if (limit != null && !(limit instanceof ReadAllAvailable)) {
      throw new IllegalArgumentException("the rmq source cannot apply the read limit " + limit);
    }
    // Never behind the start: a queue that went away keeps its offset.
    TreeMap<Integer, Long> end = new TreeMap<>(begin);
    latest.forEach((queue, offset) -> end.put(queue, Math.max(offset, begin.getOrDefault(queue, offset))));
    return offsets(end);
  }

  @Override
  public ReadLimit getDefaultReadLimit() {
    return options.maxOffsetsPerTrigger == null
        ? ReadLimit.allAvailable()
        : ReadLimit.maxRows(options.maxOffsetsPerTrigger);
  }

  @Override
  public Offset reportLatestOffset() {
    QueueOffsets seen = seenLatest;
    seenLatest = null;
    return seen != null ? seen : offsets(highs(queues.bounds()));
  }

  @Override
  public void prepareForTriggerAvailableNow() {
    target = highs(queues.bounds());
  }

  @Override
  public InputPartition[] planInputPartitions(Offset start, Offset end) {
    String topic = options.topic;
    List<QueueRange> ranges =
        QueueRange.plan(
            QueueOffsets.parse(topic, start.json()).offsets,
            QueueOffsets.parse(topic, end.json()).offsets,
            options.minPartitions);
    if (ranges.isEmpty()) {
      return new InputPartition[0];
    }
    // latestOffset described the queues just before, in this micro-batch: their shards
    // are known unless the topic grew since (or the query restarted on a planned batch).
    Map<Integer, BrokerQueues.Queue> bounds = described;
    if (bounds == null || !bounds.keySet().containsAll(QueueOffsets.parse(topic, end.json()).offsets.keySet())) {
      bounds = bounds();
    }
    List<InputPartition> parts = new ArrayList<>();
    for (List<QueueRange> group : QueueRange.group(ranges, options.minRowsPerPartition, options.minPartitions)) {
      String[] shards = new String[group.size()];
      for (int index = 0; index < shards.length; index++) {
        BrokerQueues.Queue info = bounds.get(group.get(index).queueId());
        shards[index] = info == null ? "" : "shard-" + info.shard();
      }
      parts.add(new BrokerPart(group.toArray(new QueueRange[0]), shards));
    }
    return parts.toArray(new InputPartition[0]);
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return new BrokerReader.Factory(schema, options);
  }

  @Override
  public Offset deserializeOffset(String json) {
    return QueueOffsets.parse(options.topic, json);
  }

  @Override
  public void commit(Offset end) {
    // Nothing to do: the query's position lives in Spark's checkpoint, not in rmq.
  }

  /** What the query's progress names the source (its "description"). */
  @Override
  public String toString() {
    return "rmq JVM stream of topic " + options.topic + " at " + options.endpoint;
  }

  @Override
  public void stop() {
    // The connection is shared for the JVM's life (NativeBroker).
  }
}
