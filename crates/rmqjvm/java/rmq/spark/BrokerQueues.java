package rmq.spark;

import java.util.Map;
import java.util.TreeMap;

/** A topic's queues on a running broker, as the JVM stream's driver sees them: their
 * offsets and shards. Making one checks that the broker answers and has the topic, with
 * the Python source's messages (python/rmq/spark/broker_queues.py). */
final class BrokerQueues {
  /** How long the driver tries to reach the broker when the query starts: an unreachable
   * endpoint should fail the query quickly, not after the usual 30 s of retries. */
  static final long CONNECT_RETRY_MILLIS = 5_000;
  static final long RETRY_MILLIS = 30_000;

  /** A queue: shard index, first offset, next offset to be written. */
  record Queue(int shard, long low, long high) {}

  final String endpoint;
  final String topic;
  private final long connection;

  BrokerQueues(String endpoint, String topic, String token) {
    this.endpoint = endpoint;
    this.topic = topic;
    try {
      describe(NativeBroker.connection(endpoint, token, CONNECT_RETRY_MILLIS));
    } catch (BrokerCallException failed) {
      if (failed.code() == BrokerCallException.UNAVAILABLE || failed.code() == 4) {
        throw new RmqException(
            "cannot reach the rmq broker at " + endpoint + " (option endpoint): " + failed.getMessage());
      }
      throw failed;
    }
    this.connection = NativeBroker.connection(endpoint, token, RETRY_MILLIS);
  }

  private TreeMap<Integer, Queue> describe(long handle) {
    String[] endpoints = new String[1024];
    long[] numbers;
    try {
      numbers = NativeBroker.describe(handle, topic, endpoints);
    } catch (BrokerCallException failed) {
      if (failed.code() == BrokerCallException.NOT_FOUND) {
        throw new RmqException(
            "topic '" + topic + "' does not exist on the rmq broker at " + endpoint + " ("
                + failed.getMessage() + ")");
      }
      throw failed;
    }
    TreeMap<Integer, Queue> queues = new TreeMap<>();
    for (int at = 0; at + 4 < numbers.length; at += 5) {
      queues.put((int) numbers[at], new Queue((int) numbers[at + 1], numbers[at + 2], numbers[at + 3]));
    }
    return queues;
  }

  /** Per queue id, its shard and (first offset, next offset to be written). */
  TreeMap<Integer, Queue> bounds() {
    return describe(connection);
  }

  /** Per queue, its first readable offset (see {@link #firstReadable}). */
  TreeMap<Integer, Long> firstOffsets(Map<Integer, Queue> bounds) {
    TreeMap<Integer, Long> first = new TreeMap<>();
    bounds.forEach((queue, info) -> first.put(queue, firstReadable(connection, topic, queue, info.low, info.high)));
    return first;
  }

  TreeMap<Integer, Long> offsetsForTime(long timestampMs, Iterable<Integer> queues) {
    TreeMap<Integer, Long> offsets = new TreeMap<>();
    for (int queue : queues) {
      offsets.put(queue, NativeBroker.offsetForTime(connection, topic, queue, timestampMs));
    }
    return offsets;
  }

  /** The first offset in {@code [low, high)} whose message can be read ({@code high} if
   * none). A queue's reported first offset can lag behind retention, so it is checked,
   * and the deleted prefix found by bisection: what retention deletes is a prefix. */
  static long firstReadable(long connection, String topic, int queue, long low, long high) {
    if (low >= high || readable(connection, topic, queue, low)) {
      return low;
    }
    low += 1;
    while (low < high) {
      long middle = Math.floorDiv(low + high, 2);
      if (readable(connection, topic, queue, middle)) {
        high = middle;
      } else {
        low = middle + 1;
      }
    }
    return high;
  }

  private static boolean readable(long connection, String topic, int queue, long offset) {
    long[] slots = new long[BatchLayout.SLOTS];
    try {
      NativeBroker.freeBatch(
          NativeBroker.pull(connection, topic, queue, offset, Long.MAX_VALUE, 1, null, null, slots));
      return true;
    } catch (BrokerCallException failed) {
      if (failed.code() == BrokerCallException.OUT_OF_RANGE) {
        return false;
      }
      throw failed;
    }
  }

  /** The error for messages deleted before the query read them. */
  static RmqException dataLoss(String topic, int queue, long wanted, long first) {
    return new RmqException(
        "data loss: the query is at offset " + wanted + " of queue " + queue + " of topic '" + topic
            + "', but the queue now starts at " + first + ": " + (first - wanted) + " message(s) were "
            + "deleted by retention before the query read them. Set the option failOnDataLoss=false "
            + "to skip what is gone and go on");
  }
}
