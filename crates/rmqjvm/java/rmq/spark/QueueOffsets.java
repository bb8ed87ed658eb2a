package rmq.spark;

import static rmq.spark.ReadOptions.invalid;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.sql.connector.read.streaming.Offset;

/** A stream's position: per queue of the topic, the next queue offset to read. Spark keeps
 * it in the checkpoint as Kafka's JSON, {@code {"orders": {"0": 1200, "1": 1187}}}: the
 * same document the Python source writes (python/rmq/spark/offsets.py), so a checkpoint
 * of either stream resumes on the other. */
final class QueueOffsets extends Offset {
  private static final ObjectMapper JSON = new ObjectMapper();

  final String topic;
  /** Queue id to offset, in queue order. */
  final TreeMap<Integer, Long> offsets;

  QueueOffsets(String topic, Map<Integer, Long> offsets) {
    this.topic = topic;
    this.offsets = new TreeMap<>(offsets);
  }

  @Override
  public String json() {
    ObjectNode queues = JSON.createObjectNode();
    offsets.forEach((queue, offset) -> queues.put(Integer.toString(queue), offset));
    ObjectNode document = JSON.createObjectNode();
    document.set(topic, queues);
    return document.toString();
  }

  /** The offsets Spark hands back (from {@link #json}, through the checkpoint). */
  static QueueOffsets parse(String topic, String json) {
    JsonNode document;
    try {
      document = JSON.readTree(json);
    } catch (java.io.IOException notJson) {
      document = null;
    }
    JsonNode queues = document == null ? null : document.get(topic);
    if (queues == null || !queues.isObject()) {
      throw invalid(
          "topic",
          "the checkpoint's offsets " + json + " are not for topic '" + topic + "': a checkpoint "
              + "belongs to one query; give this one its own checkpointLocation");
    }
    TreeMap<Integer, Long> offsets = new TreeMap<>();
    for (Map.Entry<String, JsonNode> entry : queues.properties()) {
      offsets.put(Integer.parseInt(entry.getKey()), entry.getValue().asLong());
    }
    return new QueueOffsets(topic, offsets);
  }
}
