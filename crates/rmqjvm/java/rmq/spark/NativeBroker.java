package rmq.spark;

import java.util.HashMap;
import java.util.Map;

/** The native methods of crates/rmqjvm/src/broker.rs: a running broker's supervisor and
 * shards, called by the JVM stream (one call per pulled batch, never per row).
 *
 * <p>Connections are kept per (endpoint, token, retry time) for the JVM's life, as the
 * Python source keeps one client per broker per worker: Spark runs many tasks on one
 * executor, and a connection is worth keeping. */
final class NativeBroker {
  static {
    NativeDecoder.load();
  }

  private static final Map<String, Long> OPEN = new HashMap<>();

  /** The shared connection to {@code endpoint}. */
  static synchronized long connection(String endpoint, String token, long retryMillis) {
    String key = endpoint + '\n' + token + '\n' + retryMillis;
    Long handle = OPEN.get(key);
    if (handle == null) {
      handle = open(endpoint, token, retryMillis);
      OPEN.put(key, handle);
    }
    return handle;
  }

  static native long open(String endpoint, String token, long retryMillis);

  static native void close(long handle);

  /** Five numbers per queue (id, shard, first offset, next offset, endpoint index). */
  static native long[] describe(long handle, String topic, String[] endpoints);

  static native long[] queueOffsets(long handle, String topic, int queueId);

  static native long offsetForTime(long handle, String topic, int queueId, long timestampMs);

  static native long pull(
      long handle,
      String topic,
      int queueId,
      long offset,
      long end,
      int maxRows,
      String[] tags,
      String[] keys,
      long[] out);

  static native void freeBatch(long batch);

  private NativeBroker() {}
}
