package rmq.spark;

import java.util.concurrent.atomic.AtomicLong;

/** What the readers in this JVM decoded, for checks that need no clock: a read that needs
 * no body (a count, a projection without {@code body}) must add no body bytes. */
public final class ReadCounters {
  private static final AtomicLong BODY_BYTES = new AtomicLong();

  /** Body bytes decoded and handed to Spark since this JVM started. */
  public static long bodyBytes() {
    return BODY_BYTES.get();
  }

  static void addBodyBytes(long bytes) {
    BODY_BYTES.addAndGet(bytes);
  }

  private ReadCounters() {}
}
