package rmq.interop;

import com.google.gson.Gson;
import com.google.gson.JsonObject;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageExtBatch;
import org.apache.rocketmq.store.AppendMessageResult;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.PutMessageResult;
import rmq.interop.compat.RocketMq;

/**
 * The write command: appends messages to a store directory through RocketMQ's
 * DefaultMessageStore (RocksDBMessageStore for the RocksDB consume queue), as a broker
 * would, and writes config/topics.json the way the broker does (the store library itself
 * never writes it).
 *
 * With {@code abort}, the process halts without shutting the store down once every
 * message is dispatched: the directory is then what a copy taken from a running broker
 * looks like (abort file and lock present, checkpoint possibly stale).
 */
final class StoreWriter {
    /** Queues per topic in topics.json when the messages use fewer: a broker's usual minimum. */
    private static final int MIN_QUEUES_PER_TOPIC = 4;

    private final Path root;
    private final StoreLayout layout;
    private final PrintStream out;
    private final Gson gson = new Gson();

    StoreWriter(Path root, StoreLayout layout, PrintStream out) {
        this.root = root;
        this.layout = layout;
        this.out = out;
    }

    /**
     * @param compactAfter with the RocksDB form, the number of input lines after which
     *     RocketMQ's consume-queue compaction runs (null: never), so that the store holds
     *     both a ZSTD bottommost table file and an LZ4 level-0 one
     */
    void write(Path messagesFile, boolean abort, Integer compactAfter) throws Exception {
        List<MessageSpec> specs = readSpecs(messagesFile);
        Map<String, TopicConfig> topics = topicsOf(specs);
        Files.createDirectories(root);
        writeTopicsJson(topics);

        DefaultMessageStore store = RocketMq.newStore(layout.toConfig(root), topics);
        Dispatch dispatch = Dispatch.watch(store);
        if (!store.load()) {
            throw new IllegalStateException("RocketMQ could not load the store at " + root);
        }
        store.start();
        int written = 0;
        for (MessageSpec spec : specs) {
            PutMessageResult result = spec.isBatch() ? store.putMessages(toBatch(spec))
                : RocketMq.put(store, toMessage(spec));
            report(spec, result);
            if (compactAfter != null && ++written == compactAfter) {
                dispatch.awaitCaughtUp();
                RocketMq.compactConsumeQueues(store);
            }
        }
        dispatch.awaitCaughtUp();
        out.flush();
        if (abort) {
            // No shutdown hook, no flush of the checkpoint: like kill -9 on a running broker.
            Runtime.getRuntime().halt(0);
        }
        store.shutdown();
        if (Files.exists(root.resolve("abort"))) {
            throw new IllegalStateException("RocketMQ did not remove the abort file at clean shutdown");
        }
    }

    private List<MessageSpec> readSpecs(Path messagesFile) throws IOException {
        List<MessageSpec> specs = new ArrayList<>();
        for (String line : Files.readAllLines(messagesFile, StandardCharsets.UTF_8)) {
            if (!line.isBlank()) {
                specs.add(gson.fromJson(line, MessageSpec.class));
            }
        }
        return specs;
    }

    private static Map<String, TopicConfig> topicsOf(List<MessageSpec> specs) {
        Map<String, Integer> queues = new TreeMap<>();
        for (MessageSpec spec : specs) {
            queues.merge(spec.topic, Math.max(spec.queueId + 1, MIN_QUEUES_PER_TOPIC), Math::max);
        }
        Map<String, TopicConfig> topics = new TreeMap<>();
        queues.forEach((topic, count) -> topics.put(topic, new TopicConfig(topic, count, count, 6)));
        return topics;
    }

    private void writeTopicsJson(Map<String, TopicConfig> topics) throws IOException {
        Path config = Files.createDirectories(root.resolve("config"));
        Files.writeString(config.resolve("topics.json"), RocketMq.topicsJson(topics), StandardCharsets.UTF_8);
    }

    private static MessageExt toMessage(MessageSpec spec) {
        MessageExt message = RocketMq.newInnerMessage();
        message.setTopic(spec.topic);
        message.setQueueId(spec.queueId);
        message.setBody(spec.bodyBytes());
        message.setFlag(spec.flag);
        MessageAccessor.setProperties(message, spec.allProperties());
        message.setBornTimestamp(spec.bornTimestampOrNow());
        message.setBornHost(HostAddress.parse(spec.bornHostOrDefault()));
        message.setStoreHost(HostAddress.parse(spec.storeHostOrDefault()));
        // The store adds the IPv6 bits itself from the host addresses.
        message.setSysFlag(spec.sysFlag);
        message.setReconsumeTimes(spec.reconsumeTimes);
        message.setPreparedTransactionOffset(spec.preparedTransactionOffset);
        return message;
    }

    /** One MessageExtBatch, built like the broker builds it from a client's batch send. */
    private static MessageExtBatch toBatch(MessageSpec spec) {
        List<Message> members = new ArrayList<>();
        for (MessageSpec member : spec.batch) {
            Message message = new Message(spec.topic, member.bodyBytes());
            message.setFlag(member.flag);
            MessageAccessor.setProperties(message, member.allProperties());
            members.add(message);
        }
        MessageExtBatch batch = new MessageExtBatch();
        batch.setTopic(spec.topic);
        batch.setQueueId(spec.queueId);
        batch.setBody(MessageDecoder.encodeMessages(members));
        if (spec.properties != null) {
            // Batch-level properties: RocketMQ appends them to every member's own.
            MessageAccessor.setProperties(batch, spec.properties);
        }
        batch.setBornTimestamp(spec.bornTimestampOrNow());
        batch.setBornHost(HostAddress.parse(spec.bornHostOrDefault()));
        batch.setStoreHost(HostAddress.parse(spec.storeHostOrDefault()));
        batch.setSysFlag(spec.sysFlag);
        batch.setReconsumeTimes(spec.reconsumeTimes);
        return batch;
    }

    /** One line per put on stdout: where RocketMQ stored it. */
    private void report(MessageSpec spec, PutMessageResult result) {
        if (result == null || !result.isOk()) {
            throw new IllegalStateException("RocketMQ refused a message of topic " + spec.topic + ": "
                + (result == null ? "no result" : result.getPutMessageStatus()));
        }
        AppendMessageResult append = result.getAppendMessageResult();
        JsonObject line = new JsonObject();
        line.addProperty("kind", "put");
        line.addProperty("topic", spec.topic);
        line.addProperty("queueId", spec.queueId);
        line.addProperty("msgId", append.getMsgId());
        line.addProperty("commitLogOffset", append.getWroteOffset());
        line.addProperty("queueOffset", append.getLogicsOffset());
        line.addProperty("messages", append.getMsgNum());
        out.println(gson.toJson(line));
    }
}
