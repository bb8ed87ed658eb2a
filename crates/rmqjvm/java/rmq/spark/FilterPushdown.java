package rmq.spark;

import java.time.Instant;
import java.util.HashSet;
import java.util.Set;
import org.apache.spark.sql.sources.EqualTo;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.sources.GreaterThan;
import org.apache.spark.sql.sources.GreaterThanOrEqual;
import org.apache.spark.sql.sources.In;
import org.apache.spark.sql.sources.LessThan;
import org.apache.spark.sql.sources.LessThanOrEqual;

/** The filters the JVM reader takes over, the same as the Python source's
 * (python/rmq/spark/filters.py): {@code topic} and {@code shard} with {@code =} or
 * {@code IN}, {@code store_timestamp} with {@code = < <= > >=}. Topic and time go to the
 * native decoder, shard to planning; Spark does not evaluate them again. */
final class FilterPushdown {
  private FilterPushdown() {}

  /** {@code selection} narrowed by {@code filter}, or null if the reader cannot take it. */
  static Selection push(Selection selection, Filter filter) {
    String column = attribute(filter);
    if (column == null) {
      return null;
    }
    if (column.equals("topic") || column.equals("shard")) {
      Set<String> values = strings(filter);
      if (values == null) {
        return null;
      }
      return column.equals("topic") ? selection.withTopics(values) : selection.withShards(values);
    }
    if (column.equals("store_timestamp")) {
      return timeBounds(selection, filter);
    }
    return null;
  }

  private static String attribute(Filter filter) {
    if (filter instanceof EqualTo f) return f.attribute();
    if (filter instanceof In f) return f.attribute();
    if (filter instanceof GreaterThan f) return f.attribute();
    if (filter instanceof GreaterThanOrEqual f) return f.attribute();
    if (filter instanceof LessThan f) return f.attribute();
    if (filter instanceof LessThanOrEqual f) return f.attribute();
    return null;
  }

  private static Set<String> strings(Filter filter) {
    Object[] values;
    if (filter instanceof EqualTo f) {
      values = new Object[] {f.value()};
    } else if (filter instanceof In f) {
      values = f.values();
    } else {
      return null;
    }
    Set<String> texts = new HashSet<>();
    for (Object value : values) {
      if (!(value instanceof String text)) {
        return null;
      }
      texts.add(text);
    }
    return texts;
  }

  /** Microseconds since the epoch of a timestamp literal, as Spark passes one. */
  private static Long micros(Object value) {
    Instant instant;
    if (value instanceof java.sql.Timestamp timestamp) {
      instant = timestamp.toInstant();
    } else if (value instanceof Instant given) {
      instant = given;
    } else {
      return null;
    }
    return Math.addExact(Math.multiplyExact(instant.getEpochSecond(), 1_000_000L), instant.getNano() / 1000);
  }

  private static Selection timeBounds(Selection selection, Filter filter) {
    Object value;
    if (filter instanceof EqualTo f) value = f.value();
    else if (filter instanceof GreaterThan f) value = f.value();
    else if (filter instanceof GreaterThanOrEqual f) value = f.value();
    else if (filter instanceof LessThan f) value = f.value();
    else if (filter instanceof LessThanOrEqual f) value = f.value();
    else return null;
    Long micros = micros(value);
    if (micros == null) {
      return null;
    }
    long floor = Math.floorDiv(micros, 1000L);
    long ceiling = -Math.floorDiv(-micros, 1000L);
    if (filter instanceof EqualTo) {
      return micros % 1000 == 0 ? selection.withStoreTime(floor, floor) : selection.withStoreTime(1L, 0L);
    }
    if (filter instanceof GreaterThan) return selection.withStoreTime(floor + 1, null);
    if (filter instanceof GreaterThanOrEqual) return selection.withStoreTime(ceiling, null);
    if (filter instanceof LessThan) return selection.withStoreTime(null, ceiling - 1);
    return selection.withStoreTime(null, floor);
  }
}
