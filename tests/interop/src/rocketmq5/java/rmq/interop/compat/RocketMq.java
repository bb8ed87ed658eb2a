package rmq.interop.compat;

import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.Pair;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.config.AbstractRocksDBStorage;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageExtBrokerInner;
import org.apache.rocketmq.remoting.protocol.RemotingSerializable;
import org.apache.rocketmq.remoting.protocol.body.TopicConfigSerializeWrapper;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.RocksDBMessageStore;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.exception.ConsumeQueueException;
import org.apache.rocketmq.store.queue.ConsumeQueueInterface;
import org.apache.rocketmq.store.queue.CqUnit;
import org.apache.rocketmq.store.queue.RocksDBConsumeQueueOffsetTable;
import org.apache.rocketmq.store.queue.RocksDBConsumeQueueStore;
import org.apache.rocketmq.store.rocksdb.ConsumeQueueRocksDBStorage;
import org.apache.rocketmq.store.stats.BrokerStatsManager;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.CompactRangeOptions;
import org.rocksdb.DBOptions;
import org.rocksdb.LiveFileMetaData;
import org.rocksdb.MutableColumnFamilyOptions;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.TableProperties;
import rmq.interop.QueueEntry;
import rmq.interop.SstFile;

/**
 * The calls whose signatures differ between RocketMQ lines, for 5.x.
 * The 4.9 twin lives in src/rocketmq4 with exactly the same public methods.
 */
public final class RocketMq {
    /** 5.x has RocketMQ's RocksDB consume queue (storeType=defaultRocksDB). */
    public static final boolean HAS_ROCKSDB_CONSUME_QUEUE = true;

    private RocketMq() {
    }

    public static String version() {
        return MQVersion.getVersionDesc(MQVersion.CURRENT_VERSION);
    }

    /** {@code default} or {@code defaultRocksDB} (RocketMQ's StoreType). */
    public static void setStoreType(MessageStoreConfig config, String storeType) {
        config.setStoreType(storeType);
    }

    /**
     * 5.x hands the broker's topic table to the store (it picks the queue type from it).
     * The store class is chosen as BrokerController.initializeMessageStore chooses it:
     * storeType=defaultRocksDB makes a RocksDBMessageStore, whose consume-queue store is
     * the RocksDBConsumeQueueStore; otherwise a DefaultMessageStore with file queues.
     */
    public static DefaultMessageStore newStore(MessageStoreConfig config, Map<String, TopicConfig> topics)
        throws IOException {
        BrokerConfig brokerConfig = new BrokerConfig();
        // The stats manager is never started: the store only records counters in it.
        BrokerStatsManager stats = new BrokerStatsManager(brokerConfig.getBrokerClusterName(), false);
        ConcurrentMap<String, TopicConfig> table = new ConcurrentHashMap<>(topics);
        if (config.isEnableRocksDBStore()) {
            return new RocksDBMessageStore(config, stats, null, brokerConfig, table);
        }
        return new DefaultMessageStore(config, stats, null, brokerConfig, table);
    }

    /**
     * Whether the consume queues lag behind the dispatched records ending at
     * {@code dispatchedEnd}: the RocksDB form writes entries from its group-commit thread
     * and records the end of the last one under CHECKPOINT_TOPIC; the file form writes
     * them in the dispatching thread.
     */
    public static boolean consumeQueuesBehind(DefaultMessageStore store, long dispatchedEnd) {
        if (!(store.getQueueStore() instanceof RocksDBConsumeQueueStore)) {
            return false;
        }
        try {
            return store.getQueueStore().getMaxPhyOffsetInConsumeQueue() < dispatchedEnd;
        } catch (RocksDBException e) {
            throw new IllegalStateException("cannot read RocketMQ's CHECKPOINT_TOPIC offset", e);
        }
    }

    /** The class that holds the consume queues (RocksDBConsumeQueueStore or ConsumeQueueStore). */
    public static String consumeQueueStoreName(DefaultMessageStore store) {
        return store.getQueueStore().getClass().getSimpleName();
    }

    /**
     * The queues RocketMQ's RocksDB offset table holds (its min and max keys), parsed by
     * RocketMQ's own RocksDBConsumeQueueOffsetTable.forEach, which skips the 8-byte
     * CHECKPOINT_TOPIC value. The store keeps the table private; nothing else lists it.
     * Empty for the file form.
     */
    public static SortedMap<String, SortedSet<Integer>> rocksDbQueues(DefaultMessageStore store) throws Exception {
        SortedMap<String, SortedSet<Integer>> queues = new TreeMap<>();
        if (!(store.getQueueStore() instanceof RocksDBConsumeQueueStore)) {
            return queues;
        }
        RocksDBConsumeQueueOffsetTable table = (RocksDBConsumeQueueOffsetTable) privateField(
            RocksDBConsumeQueueStore.class, "rocksDBConsumeQueueOffsetTable", store.getQueueStore());
        table.forEach(entry -> true,
            entry -> queues.computeIfAbsent(entry.topic, t -> new TreeSet<>()).add(entry.queueId));
        return queues;
    }

    /**
     * Compacts the RocksDB consume queue's entries as RocketMQ does when retention deletes
     * commit-log segments (CleanConsumeQueueService, then RocksDBConsumeQueueStore.cleanExpired
     * and the storage's manual compaction, bottommost level forced), but here in the calling
     * thread so that it is over when this returns: the entries flushed so far end in the
     * bottommost level, whose blocks RocketMQ compresses with ZSTD. Then automatic compaction
     * of that column family is turned off, so that what is written next stays in a level-0
     * file, whose blocks RocketMQ compresses with LZ4.
     */
    public static void compactConsumeQueues(DefaultMessageStore store) throws Exception {
        if (!(store.getQueueStore() instanceof RocksDBConsumeQueueStore)) {
            throw new IllegalStateException("the store has no RocksDB consume queue to compact");
        }
        RocksDBConsumeQueueStore queues = (RocksDBConsumeQueueStore) store.getQueueStore();
        queues.flush();
        ConsumeQueueRocksDBStorage storage = (ConsumeQueueRocksDBStorage) privateField(
            RocksDBConsumeQueueStore.class, "rocksDBStorage", queues);
        CompactRangeOptions options = (CompactRangeOptions) privateField(
            AbstractRocksDBStorage.class, "compactRangeOptions", storage);
        Method compact = AbstractRocksDBStorage.class.getDeclaredMethod(
            "manualCompactionDefaultCfRange", CompactRangeOptions.class);
        compact.setAccessible(true);
        compact.invoke(storage, options);
        RocksDB db = (RocksDB) privateField(AbstractRocksDBStorage.class, "db", storage);
        db.setOptions(storage.getDefaultCFHandle(),
            MutableColumnFamilyOptions.builder().setDisableAutoCompactions(true).build());
    }

    /**
     * The table files of the RocksDB database at {@code dbPath}, read with RocketMQ's RocksDB
     * library through a read-only open (which writes nothing and compacts nothing).
     */
    public static List<SstFile> sstFiles(Path dbPath) throws RocksDBException {
        RocksDB.loadLibrary();
        List<SstFile> files = new ArrayList<>();
        List<byte[]> families;
        try (Options options = new Options()) {
            families = RocksDB.listColumnFamilies(options, dbPath.toString());
        }
        List<ColumnFamilyDescriptor> descriptors = new ArrayList<>();
        families.forEach(name -> descriptors.add(new ColumnFamilyDescriptor(name)));
        List<ColumnFamilyHandle> handles = new ArrayList<>();
        try (DBOptions options = new DBOptions();
             RocksDB db = RocksDB.openReadOnly(options, dbPath.toString(), descriptors, handles)) {
            Map<String, Integer> levels = new HashMap<>();
            for (LiveFileMetaData file : db.getLiveFilesMetaData()) {
                levels.put(Path.of(file.fileName()).getFileName().toString(), file.level());
            }
            for (ColumnFamilyHandle handle : handles) {
                String family = new String(handle.getName(), StandardCharsets.UTF_8);
                for (Map.Entry<String, TableProperties> table : new TreeMap<>(db.getPropertiesOfAllTables(handle)).entrySet()) {
                    String name = Path.of(table.getKey()).getFileName().toString();
                    TableProperties properties = table.getValue();
                    files.add(new SstFile(family, name, levels.getOrDefault(name, -1),
                        properties.getCompressionName(), properties.getNumEntries(),
                        properties.getRawKeySize() + properties.getRawValueSize(), properties.getDataSize()));
                }
            }
            handles.forEach(ColumnFamilyHandle::close);
        }
        return files;
    }

    private static Object privateField(Class<?> owner, String name, Object instance) throws ReflectiveOperationException {
        Field field = owner.getDeclaredField(name);
        field.setAccessible(true);
        return field.get(instance);
    }

    /**
     * The entries at queue offsets [from, to) through the queue's own reader: the RocksDB
     * form decodes its 28-byte values (store time included), the file form its 20-byte
     * units (store time read from the commit log). A null element is an offset RocketMQ
     * found no entry at.
     */
    public static List<QueueEntry> entries(DefaultMessageStore store, String topic, int queueId, long from, long to) {
        ConsumeQueueInterface queue = store.getConsumeQueue(topic, queueId);
        List<QueueEntry> entries = new ArrayList<>();
        for (long offset = from; offset < to; offset++) {
            CqUnit unit = queue == null ? null : queue.get(offset);
            if (unit == null) {
                entries.add(null);
                continue;
            }
            Pair<CqUnit, Long> withTime = queue.getCqUnitAndStoreTime(offset);
            long storeTime = withTime == null || withTime.getObject2() == null ? -1 : withTime.getObject2();
            entries.add(new QueueEntry(unit.getQueueOffset(), unit.getPos(), unit.getSize(), unit.getTagsCode(), storeTime));
        }
        return entries;
    }

    /** A broker-side message: in 5.x the class moved to the common module. */
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
        try {
            return store.getMaxOffsetInQueue(topic, queueId);
        } catch (ConsumeQueueException e) {
            throw new IllegalStateException("cannot read the max offset of " + topic + "/" + queueId, e);
        }
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
