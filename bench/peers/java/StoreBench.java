import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExtBatch;
import org.apache.rocketmq.common.message.MessageExtBrokerInner;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.GetMessageResult;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.config.FlushDiskType;
import org.apache.rocketmq.store.RocksDBMessageStore;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.stats.BrokerStatsManager;
import rmqbench.BenchResult;

/**
 * Apache RocketMQ's own store engine (DefaultMessageStore from the released rocketmq-store
 * jar), driven in-process, for rmq's benchmarks.
 *
 * <pre>
 * StoreBench append  DIR COUNT BODY_SIZE BATCH [plain]  time putMessage / putMessages
 *                                                   (plain: bodies only, no tag or key)
 * StoreBench recover DIR                            time load + start until queue 0 serves
 * StoreBench fill    DIR QUEUES [STORE_TYPE]        one message into each of QUEUES queues
 * StoreBench open    DIR QUEUES                     start time, then files, maps, RSS
 * </pre>
 */
public final class StoreBench {
    private static final String TOPIC = "BenchTopic";
    private static final String[] TAGS = {"TagA", "TagB", "TagC", "TagD"};
    private static final InetSocketAddress HOST = new InetSocketAddress("127.0.0.1", 10911);

    private StoreBench() {
    }

    static DefaultMessageStore open(String dir) throws Exception {
        return open(dir, "default");
    }

    /**
     * storeType "defaultRocksDB" gives the RocksDB consume queue: the broker then makes a
     * RocksDBMessageStore (BrokerController.initializeMessageStore), so this does too.
     */
    static DefaultMessageStore open(String dir, String storeType) throws Exception {
        MessageStoreConfig config = new MessageStoreConfig();
        config.setStoreType(storeType);
        config.setStorePathRootDir(dir);
        config.setStorePathCommitLog(Paths.get(dir, "commitlog").toString());
        config.setMappedFileSizeCommitLog(1 << 30);
        config.setMappedFileSizeConsumeQueue(300000 * 20);
        config.setFlushDiskType(FlushDiskType.ASYNC_FLUSH);
        config.setDuplicationEnable(false);
        config.setWarmMapedFileEnable(false);
        BrokerConfig brokerConfig = new BrokerConfig();
        BrokerStatsManager stats = new BrokerStatsManager("bench", true);
        ConcurrentHashMap<String, TopicConfig> topics = new ConcurrentHashMap<>();
        DefaultMessageStore store = config.isEnableRocksDBStore()
            ? new RocksDBMessageStore(config, stats, null, brokerConfig, topics)
            : new DefaultMessageStore(config, stats, null, brokerConfig, topics);
        if (!store.load()) {
            throw new IllegalStateException("DefaultMessageStore.load() returned false for " + dir);
        }
        store.start();
        return store;
    }

    static MessageExtBrokerInner inner(int queueId, long i, byte[] body) {
        return inner(queueId, i, body, false);
    }

    static MessageExtBrokerInner inner(int queueId, long i, byte[] body, boolean plain) {
        MessageExtBrokerInner m = new MessageExtBrokerInner();
        m.setTopic(TOPIC);
        m.setQueueId(queueId);
        m.setBody(body);
        if (!plain) {
            String tag = TAGS[(int) (i & 3)];
            m.setTags(tag);
            m.setKeys(String.format("order-%09d", i));
            m.setTagsCode(MessageExtBrokerInner.tagsString2tagsCode(tag));
        }
        m.setPropertiesString(MessageDecoder.messageProperties2String(m.getProperties()));
        m.setBornTimestamp(System.currentTimeMillis());
        m.setBornHost(HOST);
        m.setStoreHost(HOST);
        return m;
    }

    static MessageExtBatch batch(long first, long last, byte[] body, boolean plain) {
        List<Message> msgs = new ArrayList<>();
        for (long i = first; i < last; i++) {
            Message m = plain
                ? new Message(TOPIC, body)
                : new Message(TOPIC, TAGS[(int) (i & 3)], String.format("order-%09d", i), body);
            msgs.add(m);
        }
        MessageExtBatch b = new MessageExtBatch();
        b.setTopic(TOPIC);
        b.setQueueId(0);
        b.setBody(MessageDecoder.encodeMessages(msgs));
        b.setBornTimestamp(System.currentTimeMillis());
        b.setBornHost(HOST);
        b.setStoreHost(HOST);
        b.setPropertiesString(MessageDecoder.messageProperties2String(b.getProperties()));
        return b;
    }

    static void waitDispatched(DefaultMessageStore store) throws InterruptedException {
        long deadline = System.currentTimeMillis() + 120_000;
        while (store.dispatchBehindBytes() > 0 && System.currentTimeMillis() < deadline) {
            Thread.sleep(1);
        }
    }

    static long count(String path, String prefix) throws IOException {
        if (prefix == null) {
            try (Stream<Path> s = Files.list(Paths.get(path))) {
                return s.count();
            }
        }
        try (Stream<String> s = Files.lines(Paths.get(path))) {
            return s.filter(l -> l.startsWith(prefix)).count();
        }
    }

    static double rssMb() throws IOException {
        return statusMb("VmRSS:");
    }

    static double statusMb(String field) throws IOException {
        for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
            if (line.startsWith(field)) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) / 1024.0;
            }
        }
        return Double.NaN;
    }

    public static void main(String[] args) {
        BenchMain.run(args, StoreBench::run);
    }

    static void run(String[] args) throws Exception {
        String mode = args[0];
        String dir = args[1];
        Map<String, Object> out = new HashMap<>();
        if (mode.equals("append")) {
            long count = Long.parseLong(args[2]);
            int size = Integer.parseInt(args[3]);
            int batchSize = Integer.parseInt(args[4]);
            boolean plain = args.length > 5 && args[5].equals("plain");
            byte[] body = new byte[size];
            new Random(8).nextBytes(body);
            DefaultMessageStore store = open(dir);
            long t0 = System.nanoTime();
            if (batchSize <= 1) {
                for (long i = 0; i < count; i++) {
                    PutMessageResult r = store.putMessage(inner(0, i, body, plain));
                    if (!r.isOk()) {
                        throw new IllegalStateException("putMessage: " + r.getPutMessageStatus());
                    }
                }
            } else {
                for (long first = 0; first < count; first += batchSize) {
                    PutMessageResult r = store.putMessages(batch(first, Math.min(count, first + batchSize), body, plain));
                    if (!r.isOk()) {
                        throw new IllegalStateException("putMessages: " + r.getPutMessageStatus());
                    }
                }
            }
            long nanos = System.nanoTime() - t0;
            out = BenchResult.figures(count, count * (long) size, nanos, null, 0);
            out.put("commitlog_bytes", store.getMaxPhyOffset());
            out.put("peak_rss_mb", statusMb("VmHWM:"));
            store.shutdown();
        } else if (mode.equals("recover")) {
            long t0 = System.nanoTime();
            DefaultMessageStore store = open(dir);
            GetMessageResult r = store.getMessage("bench", TOPIC, 0, 0, 1, null);
            long nanos = System.nanoTime() - t0;
            out.put("seconds", nanos / 1e9);
            out.put("first_message_found", r != null && r.getMessageCount() > 0 ? 1 : 0);
            out.put("max_phy_offset", store.getMaxPhyOffset());
            if (r != null) {
                r.release();
            }
            store.shutdown();
        } else if (mode.equals("fill")) {
            int queues = Integer.parseInt(args[2]);
            byte[] body = new byte[100];
            DefaultMessageStore store = open(dir, args.length > 3 ? args[3] : "default");
            for (int q = 0; q < queues; q++) {
                PutMessageResult r = store.putMessage(inner(q, q, body));
                if (!r.isOk()) {
                    throw new IllegalStateException("putMessage: " + r.getPutMessageStatus());
                }
            }
            waitDispatched(store);
            store.shutdown();
            out.put("queues", queues);
        } else if (mode.equals("open")) {
            int queues = Integer.parseInt(args[2]);
            long t0 = System.nanoTime();
            DefaultMessageStore store = open(dir, args.length > 3 ? args[3] : "default");
            long started = System.nanoTime() - t0;
            long served = 0;
            for (int q = 0; q < queues; q++) {
                GetMessageResult r = store.getMessage("bench", TOPIC, q, 0, 1, null);
                if (r != null && r.getMessageCount() > 0) {
                    served++;
                }
                if (r != null) {
                    r.release();
                }
            }
            long all = System.nanoTime() - t0;
            out.put("start_s", started / 1e9);
            out.put("seconds", all / 1e9);
            out.put("queues_served", served);
            out.put("open_files", count("/proc/self/fd", null));
            out.put("mappings", count("/proc/self/maps", ""));
            out.put("rss_mb", rssMb());
            store.shutdown();
        } else {
            throw new IllegalArgumentException("unknown mode " + mode);
        }
        BenchResult.print(out);
        System.exit(0);
    }
}
