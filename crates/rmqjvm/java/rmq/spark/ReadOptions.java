package rmq.spark;

import java.io.Serializable;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeParseException;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/** A batch read's options, checked as the Python source checks them
 * (python/rmq/spark/options.py), with the same messages. The tier options never reach
 * here: a read with {@code tier_url} goes to the Python source (see RmqTable). */
final class ReadOptions implements Serializable {
  private static final Set<String> KNOWN =
      new TreeSet<>(
          Arrays.asList(
              "path", "topics", "store_time_start", "store_time_end", "verify_crc", "on_corrupt",
              "split_size", "batch_rows", "filter_pushdown", "tier_url", "tier_endpoint",
              "tier_region"));

  final String path;
  final Selection selection;
  final boolean verifyCrc;
  /** "fail" or "stop". */
  final String onCorrupt;
  final long splitSize;
  final int batchRows;
  final boolean filterPushdown;

  private ReadOptions(Map<String, String> lowered) {
    TreeSet<String> unknown = new TreeSet<>(lowered.keySet());
    unknown.removeAll(KNOWN);
    if (!unknown.isEmpty()) {
      throw invalid(
          unknown.first(),
          "unknown option(s) " + String.join(", ", unknown) + "; known: " + String.join(", ", KNOWN));
    }
    String given = lowered.getOrDefault("path", "");
    if (given.isEmpty()) {
      throw invalid("path", "no path: use spark.read.format(\"rmq\").load(path), or "
          + ".option(\"tier_url\", \"s3://bucket/prefix\") for a tiered store's bucket");
    }
    path = given;
    // A read with tier_url goes to the Python source: here these two are always alone.
    for (String tierOption : new String[] {"tier_endpoint", "tier_region"}) {
      if (!lowered.getOrDefault(tierOption, "").isBlank()) {
        throw invalid(tierOption, "option " + tierOption + " only applies with tier_url");
      }
    }
    Selection chosen = new Selection();
    if (lowered.containsKey("topics")) {
      Set<String> topics = new HashSet<>();
      for (String topic : lowered.get("topics").split(",")) {
        if (!topic.strip().isEmpty()) {
          topics.add(topic.strip());
        }
      }
      if (!topics.isEmpty()) {
        chosen = chosen.withTopics(topics);
      }
    }
    String start = lowered.get("store_time_start");
    String end = lowered.get("store_time_end");
    selection =
        chosen.withStoreTime(
            start == null ? null : timeMillis("store_time_start", start),
            end == null ? null : timeMillis("store_time_end", end) - 1);
    onCorrupt = lowered.getOrDefault("on_corrupt", "fail").strip().toLowerCase(Locale.ROOT);
    if (!onCorrupt.equals("fail") && !onCorrupt.equals("stop")) {
      throw invalid("on_corrupt", "option on_corrupt='" + onCorrupt + "' is not one of fail, stop");
    }
    verifyCrc = bool("verify_crc", lowered.getOrDefault("verify_crc", "true"));
    splitSize = integer("split_size", lowered.getOrDefault("split_size", "0"), 0);
    batchRows = (int) Math.min(Integer.MAX_VALUE, integer("batch_rows", lowered.getOrDefault("batch_rows", "8192"), 1));
    filterPushdown = bool("filter_pushdown", lowered.getOrDefault("filter_pushdown", "true"));
  }

  /** Options as Spark passes them (names in any case). */
  static ReadOptions parse(Map<String, String> options) {
    Map<String, String> lowered = new java.util.HashMap<>();
    options.forEach((name, value) -> lowered.put(name.toLowerCase(Locale.ROOT), value));
    return new ReadOptions(lowered);
  }

  static IllegalArgumentException invalid(String argument, String reason) {
    return new IllegalArgumentException("invalid " + argument + ": " + reason);
  }

  static boolean bool(String name, String text) {
    String value = text.strip().toLowerCase(Locale.ROOT);
    switch (value) {
      case "true", "1", "yes":
        return true;
      case "false", "0", "no":
        return false;
      default:
        throw invalid(name, "option " + name + "='" + text + "' is not true or false");
    }
  }

  static long integer(String name, String text, long minimum) {
    long value;
    try {
      value = Long.parseLong(text.strip());
    } catch (NumberFormatException notNumber) {
      throw invalid(name, "option " + name + "='" + text + "' is not an integer");
    }
    if (value < minimum) {
      throw invalid(name, "option " + name + "=" + value + " is below " + minimum);
    }
    return value;
  }

  /** Milliseconds since the epoch, or an ISO 8601 date/time (UTC unless it says). */
  static long timeMillis(String name, String text) {
    String value = text.strip();
    if (value.matches("-?[0-9]+")) {
      return Long.parseLong(value);
    }
    try {
      return OffsetDateTime.parse(value).toInstant().toEpochMilli();
    } catch (DateTimeParseException notOffset) {
      // Try the forms without an offset.
    }
    try {
      return LocalDateTime.parse(value.replace(' ', 'T')).toInstant(ZoneOffset.UTC).toEpochMilli();
    } catch (DateTimeParseException notLocal) {
      // Try a date alone.
    }
    try {
      return LocalDate.parse(value).atStartOfDay().toInstant(ZoneOffset.UTC).toEpochMilli();
    } catch (DateTimeParseException notDate) {
      throw invalid(name, "option " + name + "='" + text + "' is neither epoch milliseconds nor an ISO 8601 time");
    }
  }
}
