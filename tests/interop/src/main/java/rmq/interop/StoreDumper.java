package rmq.interop;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.GetMessageResult;
import org.apache.rocketmq.store.GetMessageStatus;
import org.apache.rocketmq.store.QueryMessageResult;
import rmq.interop.compat.RocketMq;
import rmq.cli.Options;

/**
 * The dump command: opens a store directory with RocketMQ's DefaultMessageStore (a
 * RocksDBMessageStore for the RocksDB consume queue, as the broker chooses it), lets it
 * recover exactly as a starting broker would (load, start, wait for dispatch), and
 * prints, as JSON lines:
 *
 * <ul>
 *   <li>{@code store}: RocketMQ version, store type and classes, how many records RocketMQ
 *       dispatched while opening (0: it used the consume queues as they were), sizes used,
 *       whether the abort file was there, commit-log min and max offsets;</li>
 *   <li>{@code sst}: for the RocksDB form, every table file of consumequeue/ as it was
 *       before RocketMQ opened it (column family, level, compression, entries, bytes before
 *       and after compression), read by RocksDB itself;</li>
 *   <li>{@code queue}: min and max offset of every topic queue;</li>
 *   <li>{@code entry}: every consume-queue entry from the queue's min offset to its max, as
 *       the queue's own reader returns it (commit-log offset, size, tags code, store
 *       time);</li>
 *   <li>{@code message} with {@code via=queue}: every message read through the consume
 *       queues (getMessage from the queue's min offset), in queue order;</li>
 *   <li>{@code problem}: a queue read that did not return FOUND before reaching the max,
 *       or an offset below the max with no entry ({@code NO_ENTRY});</li>
 *   <li>{@code key}: for every key of those messages (KEYS tokens and UNIQ_KEY), the
 *       commit-log offsets queryMessage returned for it, kept only when the record has that
 *       topic and key (the broker leaves hash collisions to the client, so the harness plays
 *       the client);</li>
 *   <li>{@code message} with {@code via=index}: a message found by key that no queue
 *       returned (for example a prepared transaction half).</li>
 * </ul>
 *
 * Recovery rewrites files, so run it on a copy of anything that must stay unchanged.
 */
final class StoreDumper {
    /** queryMessage returns at most this many (maxMsgsNumBatch). */
    private static final int MAX_KEY_HITS = 64;
    private static final int PULL_BATCH = 32;
    private static final String GROUP = "rmq-interop-dump";

    private final Path root;
    private final PrintStream out;
    private final Gson gson = new GsonBuilder().disableHtmlEscaping().serializeNulls().create();

    StoreDumper(Path root, PrintStream out) {
        this.root = root;
        this.out = out;
    }

    /**
     * @param options sizes (inferred from the files when absent) and {@code keys-from}, a
     *     write-command input whose keys are queried too
     */
    void dump(Options options) throws Exception {
        if (!Files.isDirectory(root)) {
            throw new IOException("no store directory at " + root);
        }
        StoreLayout layout = StoreLayout.inferred(options, root);
        boolean abortPresent = Files.exists(root.resolve("abort"));
        StoreTopics topics = StoreTopics.discover(root);
        // The table files as they were handed over, before RocketMQ's open may compact them.
        List<SstFile> tableFiles = layout.form == ConsumeQueueForm.ROCKSDB
            ? RocketMq.sstFiles(root.resolve("consumequeue")) : List.of();

        DefaultMessageStore store = RocketMq.newStore(layout.toConfig(root), topics.configs);
        Dispatch dispatch = Dispatch.watch(store);
        if (!store.load()) {
            throw new IllegalStateException("RocketMQ refused to load the store at " + root);
        }
        store.start();
        dispatch.awaitCaughtUp();
        topics.addQueues(RocketMq.rocksDbQueues(store));

        printStoreLine(store, layout, abortPresent, dispatch.records());
        tableFiles.forEach(this::printTableFile);
        SortedMap<String, SortedSet<String>> keys = new TreeMap<>();
        Set<Long> seenOffsets = new TreeSet<>();
        for (Map.Entry<String, SortedSet<Integer>> topic : topics.queues.entrySet()) {
            for (int queueId : topic.getValue()) {
                dumpQueue(store, topic.getKey(), queueId, keys, seenOffsets);
            }
        }
        String keysFrom = options.value("keys-from", null);
        if (keysFrom != null) {
            addKeysFromInput(Path.of(keysFrom), keys);
        }
        for (Map.Entry<String, SortedSet<String>> topic : keys.entrySet()) {
            for (String key : topic.getValue()) {
                dumpKey(store, topic.getKey(), key, seenOffsets);
            }
        }
        out.flush();
        store.shutdown();
    }

    private void printStoreLine(DefaultMessageStore store, StoreLayout layout, boolean abortPresent,
        long dispatchedOnOpen) {
        JsonObject line = new JsonObject();
        line.addProperty("kind", "store");
        line.addProperty("rocketmqVersion", MQVersion.getVersionDesc(MQVersion.CURRENT_VERSION));
        line.addProperty("storeType", layout.form.storeType);
        line.addProperty("messageStore", store.getClass().getSimpleName());
        line.addProperty("consumeQueueStore", RocketMq.consumeQueueStoreName(store));
        line.addProperty("dispatchedOnOpen", dispatchedOnOpen);
        line.addProperty("abortFilePresent", abortPresent);
        line.addProperty("commitlogSegmentSize", layout.commitlogSegmentSize);
        line.addProperty("cqEntriesPerFile", layout.cqEntriesPerFile);
        line.addProperty("indexSlots", layout.indexSlots);
        line.addProperty("indexEntries", layout.indexEntries);
        line.addProperty("minPhyOffset", store.getMinPhyOffset());
        line.addProperty("maxPhyOffset", store.getMaxPhyOffset());
        out.println(gson.toJson(line));
    }

    private void printTableFile(SstFile file) {
        JsonObject line = new JsonObject();
        line.addProperty("kind", "sst");
        line.addProperty("columnFamily", file.columnFamily());
        line.addProperty("file", file.file());
        line.addProperty("level", file.level());
        line.addProperty("compression", file.compression());
        line.addProperty("entries", file.entries());
        line.addProperty("rawBytes", file.rawBytes());
        line.addProperty("dataBytes", file.dataBytes());
        out.println(gson.toJson(line));
    }

    private void dumpQueue(DefaultMessageStore store, String topic, int queueId,
        SortedMap<String, SortedSet<String>> keys, Set<Long> seenOffsets) {
        long min = store.getMinOffsetInQueue(topic, queueId);
        long max = RocketMq.maxOffsetInQueue(store, topic, queueId);
        JsonObject queueLine = new JsonObject();
        queueLine.addProperty("kind", "queue");
        queueLine.addProperty("topic", topic);
        queueLine.addProperty("queueId", queueId);
        queueLine.addProperty("minOffset", min);
        queueLine.addProperty("maxOffset", max);
        out.println(gson.toJson(queueLine));
        dumpEntries(store, topic, queueId, min, max);

        long offset = min;
        while (offset < max) {
            GetMessageResult result = store.getMessage(GROUP, topic, queueId, offset, PULL_BATCH, null);
            try {
                if (result == null || result.getStatus() != GetMessageStatus.FOUND) {
                    long next = result == null ? offset : result.getNextBeginOffset();
                    printProblem(topic, queueId, offset, result == null ? "NULL_RESULT" : result.getStatus().name(), next);
                    if (next <= offset) {
                        return;
                    }
                    offset = next;
                    continue;
                }
                for (ByteBuffer buffer : result.getMessageBufferList()) {
                    MessageExt message = decode(buffer);
                    JsonObject json = MessageJson.of(message);
                    json.addProperty("via", "queue");
                    out.println(gson.toJson(json));
                    seenOffsets.add(message.getCommitLogOffset());
                    keys.computeIfAbsent(message.getTopic(), t -> new TreeSet<>())
                        .addAll(MessageJson.indexedKeysOf(message));
                }
                offset = result.getNextBeginOffset();
            } finally {
                if (result != null) {
                    result.release();
                }
            }
        }
    }

    private void dumpEntries(DefaultMessageStore store, String topic, int queueId, long min, long max) {
        long offset = min;
        for (QueueEntry entry : RocketMq.entries(store, topic, queueId, min, max)) {
            if (entry == null) {
                printProblem(topic, queueId, offset, "NO_ENTRY", offset + 1);
            } else {
                JsonObject line = new JsonObject();
                line.addProperty("kind", "entry");
                line.addProperty("topic", topic);
                line.addProperty("queueId", queueId);
                line.addProperty("queueOffset", entry.queueOffset());
                line.addProperty("commitLogOffset", entry.commitLogOffset());
                line.addProperty("size", entry.size());
                line.addProperty("tagsCode", entry.tagsCode());
                line.addProperty("storeTime", entry.storeTime());
                out.println(gson.toJson(line));
            }
            offset++;
        }
    }

    private void dumpKey(DefaultMessageStore store, String topic, String key, Set<Long> seenOffsets) {
        QueryMessageResult result = store.queryMessage(topic, key, MAX_KEY_HITS, 0, Long.MAX_VALUE);
        try {
            SortedSet<Long> matching = new TreeSet<>();
            List<ByteBuffer> buffers = result.getMessageBufferList();
            for (ByteBuffer buffer : buffers) {
                MessageExt message = decode(buffer);
                if (!topic.equals(message.getTopic()) || !MessageJson.indexedKeysOf(message).contains(key)) {
                    continue;
                }
                matching.add(message.getCommitLogOffset());
                if (seenOffsets.add(message.getCommitLogOffset())) {
                    JsonObject json = MessageJson.of(message);
                    json.addProperty("via", "index");
                    out.println(gson.toJson(json));
                }
            }
            JsonObject line = new JsonObject();
            line.addProperty("kind", "key");
            line.addProperty("topic", topic);
            line.addProperty("key", key);
            JsonArray offsets = new JsonArray();
            matching.forEach(offsets::add);
            line.add("commitLogOffsets", offsets);
            line.addProperty("indexHits", buffers.size());
            out.println(gson.toJson(line));
        } finally {
            result.release();
        }
    }

    private void printProblem(String topic, int queueId, long offset, String status, long next) {
        JsonObject line = new JsonObject();
        line.addProperty("kind", "problem");
        line.addProperty("topic", topic);
        line.addProperty("queueId", queueId);
        line.addProperty("offset", offset);
        line.addProperty("status", status);
        line.addProperty("nextBeginOffset", next);
        out.println(gson.toJson(line));
    }

    /** Keys of every message in a write-command input, including batch members. */
    private void addKeysFromInput(Path messagesFile, SortedMap<String, SortedSet<String>> keys) throws IOException {
        for (String text : Files.readAllLines(messagesFile, StandardCharsets.UTF_8)) {
            if (text.isBlank()) {
                continue;
            }
            MessageSpec spec = gson.fromJson(text, MessageSpec.class);
            List<MessageSpec> members = spec.isBatch() ? spec.batch : List.of(spec);
            SortedSet<String> topicKeys = keys.computeIfAbsent(spec.topic, t -> new TreeSet<>());
            for (MessageSpec member : members) {
                Map<String, String> properties = member.allProperties();
                if (spec.isBatch() && spec.properties != null) {
                    properties.putAll(spec.properties);
                }
                String joined = properties.get("KEYS");
                if (joined != null) {
                    for (String key : joined.split(" ")) {
                        if (!key.isEmpty()) {
                            topicKeys.add(key);
                        }
                    }
                }
                String unique = properties.get("UNIQ_KEY");
                if (unique != null && !unique.isEmpty()) {
                    topicKeys.add(unique);
                }
            }
        }
    }

    /** RocketMQ's own decoder; the body is kept as stored (not decompressed). */
    private static MessageExt decode(ByteBuffer buffer) {
        MessageExt message = MessageDecoder.decode(buffer.slice(), true, false);
        if (message == null) {
            throw new IllegalStateException("RocketMQ could not decode a record it returned");
        }
        return message;
    }
}
