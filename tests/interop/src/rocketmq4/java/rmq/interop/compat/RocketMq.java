package rmq.interop.compat;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.protocol.body.TopicConfigSerializeWrapper;
import org.apache.rocketmq.remoting.protocol.RemotingSerializable;
import org.apache.rocketmq.store.ConsumeQueue;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.MessageExtBrokerInner;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.SelectMappedBufferResult;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.stats.BrokerStatsManager;
import rmq.interop.QueueEntry;
import rmq.interop.SstFile;

/**
 * The calls whose signatures differ between RocketMQ lines, for 4.9.x.
 * The 5.x twin lives in src/rocketmq5 with exactly the same public methods.
 */
public final class RocketMq {
    /** 4.9 has file consume queues only. */
    public static final boolean HAS_ROCKSDB_CONSUME_QUEUE = false;

    private RocketMq() {
    }

    public static String version() {
        return MQVersion.getVersionDesc(MQVersion.CURRENT_VERSION);
    }

    /** 4.9 has no storeType: only the file form ("default") exists. */
    public static void setStoreType(MessageStoreConfig config, String storeType) {
        if (!"default".equals(storeType)) {
            throw new IllegalArgumentException("RocketMQ 4.9 has no storeType " + storeType);
        }
    }

    /** 4.9 has no topic table in the store: topics only matter to the broker. */
    public static DefaultMessageStore newStore(MessageStoreConfig config, Map<String, TopicConfig> topics)
        throws IOException {
        BrokerConfig brokerConfig = new BrokerConfig();
        // The stats manager is never started: the store only records counters in it.
        BrokerStatsManager stats = new BrokerStatsManager(brokerConfig.getBrokerClusterName(), false);
        return new DefaultMessageStore(config, stats, null, brokerConfig);
    }

    /** 4.9 keeps its ConsumeQueue files in the store itself. */
    public static String consumeQueueStoreName(DefaultMessageStore store) {
        return ConsumeQueue.class.getSimpleName();
    }

    /** 4.9 writes consume-queue entries in the dispatching thread. */
    public static boolean consumeQueuesBehind(DefaultMessageStore store, long dispatchedEnd) {
        return false;
    }

    /** 4.9 has no RocksDB consume queue. */
    public static void compactConsumeQueues(DefaultMessageStore store) {
        throw new IllegalStateException("RocketMQ 4.9 has no RocksDB consume queue to compact");
    }

    /** 4.9 has no RocksDB library. */
    public static List<SstFile> sstFiles(Path dbPath) {
        return List.of();
    }

    /** 4.9 has no RocksDB offset table. */
    public static SortedMap<String, SortedSet<Integer>> rocksDbQueues(DefaultMessageStore store) {
        return new TreeMap<>();
    }

    /**
     * The entries at queue offsets [from, to): the queue's 20-byte units, the store time
     * read from the commit log. A null element is an offset RocketMQ found no entry at.
     */
    public static List<QueueEntry> entries(DefaultMessageStore store, String topic, int queueId, long from, long to) {
        ConsumeQueue queue = store.getConsumeQueue(topic, queueId);
        List<QueueEntry> entries = new ArrayList<>();
        for (long offset = from; offset < to; offset++) {
            SelectMappedBufferResult unit = queue == null ? null : queue.getIndexBuffer(offset);
            if (unit == null) {
                entries.add(null);
                continue;
            }
            try {
                ByteBuffer buffer = unit.getByteBuffer();
                if (buffer.remaining() < ConsumeQueue.CQ_STORE_UNIT_SIZE) {
                    entries.add(null);
                    continue;
                }
                long position = buffer.getLong();
                int size = buffer.getInt();
                long tagsCode = buffer.getLong();
                long storeTime = store.getCommitLog().pickupStoreTimestamp(position, size);
                entries.add(new QueueEntry(offset, position, size, tagsCode, storeTime));
            } finally {
                unit.release();
            }
        }
        return entries;
    }

    /** A broker-side message: in 4.9 the class lives in the store package. */
    public static MessageExt newInnerMessage() {
        return new MessageExtBrokerInner();
    }

    /**
     * Finishes what the broker's send processor does before storing (the encoded
     * property string and the tags hash), then appends the message.
     */
    public static PutMessageResult put(DefaultMessageStore store, MessageExt message) {
        MessageExtBrokerInner inner = (MessageExtBrokerInner) message;
        inner.setPropertiesString(MessageDecoder.messageProperties2String(inner.getProperties()));
        inner.setTagsCode(MessageExtBrokerInner.tagsString2tagsCode(inner.getTags()));
        return store.putMessage(inner);
    }

    public static long maxOffsetInQueue(DefaultMessageStore store, String topic, int queueId) {
        return store.getMaxOffsetInQueue(topic, queueId);
    }

    /** config/topics.json exactly as the broker's TopicConfigManager serializes it. */
    public static String topicsJson(Map<String, TopicConfig> topics) {
        TopicConfigSerializeWrapper wrapper = new TopicConfigSerializeWrapper();
        wrapper.setTopicConfigTable(new ConcurrentHashMap<>(topics));
        return wrapper.toJson(true);
    }

    public static Map<String, TopicConfig> parseTopicsJson(String json) {
        TopicConfigSerializeWrapper wrapper = RemotingSerializable.fromJson(json, TopicConfigSerializeWrapper.class);
        return wrapper == null || wrapper.getTopicConfigTable() == null ? Map.of() : wrapper.getTopicConfigTable();
    }
}
