package rmq.interop;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.apache.rocketmq.common.TopicConfig;
import rmq.interop.compat.RocketMq;

/**
 * Which topics and queues a store holds. RocketMQ's store does not read topics.json
 * (the broker does), so the dump takes the union of the queues declared in
 * config/topics.json, the consume-queue directories (file form) and, once RocketMQ has
 * opened a RocksDB consume queue, the queues of its offset table ({@link #addQueues}).
 */
final class StoreTopics {
    /** Topic configs from config/topics.json, parsed by RocketMQ's own serializer. */
    final Map<String, TopicConfig> configs;
    /** Topic -> queue ids, sorted. */
    final SortedMap<String, SortedSet<Integer>> queues = new TreeMap<>();

    private StoreTopics(Map<String, TopicConfig> configs) {
        this.configs = configs;
    }

    static StoreTopics discover(Path root) throws IOException {
        Path topicsJson = root.resolve("config").resolve("topics.json");
        Map<String, TopicConfig> configs = Files.exists(topicsJson)
            ? RocketMq.parseTopicsJson(Files.readString(topicsJson, StandardCharsets.UTF_8))
            : Map.of();
        StoreTopics topics = new StoreTopics(configs);
        configs.forEach((name, config) -> {
            int count = Math.max(config.getReadQueueNums(), config.getWriteQueueNums());
            for (int queueId = 0; queueId < count; queueId++) {
                topics.add(name, queueId);
            }
        });
        topics.addConsumeQueueDirectories(root.resolve("consumequeue"));
        return topics;
    }

    private void addConsumeQueueDirectories(Path consumeQueueRoot) throws IOException {
        if (!Files.isDirectory(consumeQueueRoot)) {
            return;
        }
        try (Stream<Path> topicDirs = Files.list(consumeQueueRoot)) {
            for (Path topicDir : (Iterable<Path>) topicDirs::iterator) {
                if (!Files.isDirectory(topicDir)) {
                    continue;
                }
                try (Stream<Path> queueDirs = Files.list(topicDir)) {
                    for (Path queueDir : (Iterable<Path>) queueDirs::iterator) {
                        // RocketMQ skips queue directories whose names are not integers.
                        String name = queueDir.getFileName().toString();
                        if (Files.isDirectory(queueDir) && name.matches("-?\\d+")) {
                            add(topicDir.getFileName().toString(), Integer.parseInt(name));
                        }
                    }
                }
            }
        }
    }

    /** Queues found elsewhere (the RocksDB offset table). */
    void addQueues(Map<String, ? extends Set<Integer>> found) {
        found.forEach((topic, queueIds) -> queueIds.forEach(queueId -> add(topic, queueId)));
    }

    private void add(String topic, int queueId) {
        queues.computeIfAbsent(topic, t -> new TreeSet<>()).add(queueId);
    }
}
