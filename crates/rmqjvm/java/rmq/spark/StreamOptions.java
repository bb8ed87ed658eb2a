package rmq.spark;

import static rmq.spark.ReadOptions.invalid;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/** The options of a stream from a broker ({@code readStream.format("rmq")} with
 * {@code endpoint}), checked when the query starts: the same names, meanings and messages
 * as the Python source's (python/rmq/spark/stream_options.py). */
final class StreamOptions implements Serializable {
  private static final long serialVersionUID = 1L;

  /** In a per-queue startingOffsets JSON, as in Kafka's: the queue's first offset ... */
  static final long EARLIEST = -2;
  /** ... and the offset the next message will get. */
  static final long LATEST = -1;

  static final List<String> KNOWN =
      List.of(
          "endpoint", "path", "topic", "startingoffsets", "startingtimestamp",
          "maxoffsetspertrigger", "minpartitions", "failondataloss", "tags", "keys", "token",
          "batch_rows", "minrowsperpartition", "prefetchbatches");

  final String endpoint;
  final String topic;
  /** "earliest" or "latest", or null when {@link #startingQueues} or a timestamp says. */
  final String starting;
  final TreeMap<Integer, Long> startingQueues;
  final Long startingTimestamp;
  final Long maxOffsetsPerTrigger;
  final int minPartitions;
  final boolean failOnDataLoss;
  final String[] tags;
  final String[] keys;
  final String token;
  final int batchRows;
  final long minRowsPerPartition;
  /** Batches a partition's reader pulls ahead of Spark on a thread (0: none). */
  final int prefetchBatches;

  private StreamOptions(Map<String, String> lowered) {
    endpoint = lowered.getOrDefault("endpoint", "").strip();
    topic = lowered.getOrDefault("topic", "").strip();
    if (topic.isEmpty() || topic.contains(",")) {
      throw invalid("topic", "option topic must name the one topic to read");
    }
    if (lowered.containsKey("startingoffsets") && lowered.containsKey("startingtimestamp")) {
      throw invalid("startingTimestamp", "give startingOffsets or startingTimestamp, not both");
    }
    String timestamp = lowered.get("startingtimestamp");
    startingTimestamp = timestamp == null ? null : ReadOptions.timeMillis("startingTimestamp", timestamp);
    String given = lowered.getOrDefault("startingoffsets", "earliest");
    String word = given.strip().toLowerCase(Locale.ROOT);
    if (word.equals("earliest") || word.equals("latest")) {
      starting = word;
      startingQueues = null;
    } else {
      starting = null;
      startingQueues = queueOffsets(given, topic);
    }
    String limit = lowered.get("maxoffsetspertrigger");
    maxOffsetsPerTrigger = limit == null ? null : ReadOptions.integer("maxOffsetsPerTrigger", limit, 1);
    minPartitions = (int) ReadOptions.integer("minPartitions", lowered.getOrDefault("minpartitions", "1"), 1);
    failOnDataLoss = ReadOptions.bool("failOnDataLoss", lowered.getOrDefault("failondataloss", "true"));
    tags = words(lowered.getOrDefault("tags", ""));
    keys = words(lowered.getOrDefault("keys", ""));
    String secret = lowered.get("token");
    token = secret == null || secret.isEmpty() ? null : secret;
    batchRows = (int) ReadOptions.integer("batch_rows", lowered.getOrDefault("batch_rows", "8192"), 1);
    minRowsPerPartition =
        ReadOptions.integer("minRowsPerPartition", lowered.getOrDefault("minrowsperpartition", "10000"), 1);
    prefetchBatches = (int) ReadOptions.integer("prefetchBatches", lowered.getOrDefault("prefetchbatches", "4"), 0);
  }

  /** Whether a stream with these options is the JVM stream's: one from a broker. */
  static boolean fromBroker(Map<String, String> options) {
    Map<String, String> lowered = lowered(options);
    return !lowered.getOrDefault("endpoint", "").isBlank() && lowered.getOrDefault("path", "").isBlank();
  }

  static StreamOptions parse(Map<String, String> options) {
    Map<String, String> lowered = lowered(options);
    TreeSet<String> unknown = new TreeSet<>(lowered.keySet());
    unknown.removeAll(KNOWN);
    if (!unknown.isEmpty()) {
      throw invalid(
          unknown.first(),
          "unknown streaming option(s) " + String.join(", ", unknown) + "; known: " + String.join(", ", KNOWN));
    }
    return new StreamOptions(lowered);
  }

  private static Map<String, String> lowered(Map<String, String> options) {
    Map<String, String> lowered = new TreeMap<>();
    options.forEach((name, value) -> lowered.put(name.toLowerCase(Locale.ROOT), value));
    return lowered;
  }

  private static String[] words(String text) {
    LinkedHashSet<String> words = new LinkedHashSet<>();
    for (String word : text.split(",")) {
      if (!word.strip().isEmpty()) {
        words.add(word.strip());
      }
    }
    return words.toArray(new String[0]);
  }

  private static String quoted(String text) {
    return "'" + text + "'";
  }

  /** Kafka's JSON form, {@code {"topic": {"0": 23, "1": -2}}}. */
  private static TreeMap<Integer, Long> queueOffsets(String text, String topic) {
    JsonNode document;
    try {
      document = new ObjectMapper().readTree(text);
    } catch (com.fasterxml.jackson.core.JsonProcessingException notJson) {
      throw invalid(
          "startingOffsets",
          "option startingOffsets is neither earliest, latest nor JSON (" + notJson.getOriginalMessage()
              + "): " + quoted(text) + "; per queue it reads {\"" + topic
              + "\": {\"0\": 42, \"1\": -2}} (-2 earliest, -1 latest)");
    }
    List<String> names = new ArrayList<>();
    if (document != null && document.isObject()) {
      document.fieldNames().forEachRemaining(names::add);
    }
    if (document == null || !document.isObject() || !names.equals(List.of(topic))) {
      throw invalid(
          "startingOffsets",
          "option startingOffsets must be a JSON object with the one key " + quoted(topic)
              + " (the topic read), not " + quoted(text));
    }
    JsonNode queues = document.get(topic);
    if (!queues.isObject() || queues.isEmpty()) {
      throw invalid(
          "startingOffsets",
          "option startingOffsets: " + quoted(topic) + " must map queue ids to offsets, e.g. {\"0\": 42}");
    }
    TreeMap<Integer, Long> offsets = new TreeMap<>();
    for (Map.Entry<String, JsonNode> entry : queues.properties()) {
      String queue = entry.getKey();
      JsonNode offset = entry.getValue();
      if (!queue.matches("[0-9]+") || !offset.isIntegralNumber()) {
        throw invalid(
            "startingOffsets",
            "option startingOffsets: queue " + quoted(queue) + " -> " + offset + " is not a queue id "
                + "and an integer offset");
      }
      if (offset.asLong() < EARLIEST) {
        throw invalid(
            "startingOffsets",
            "option startingOffsets: offset " + offset.asLong() + " of queue " + queue + " is below -2");
      }
      offsets.put(Integer.parseInt(queue), offset.asLong());
    }
    return offsets;
  }
}
