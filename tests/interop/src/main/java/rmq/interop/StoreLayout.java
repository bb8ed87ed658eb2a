package rmq.interop;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.stream.Stream;
import org.apache.rocketmq.store.config.FlushDiskType;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import rmq.interop.compat.RocketMq;
import rmq.cli.Options;

/**
 * The file sizes and the consume-queue form a store was written with. RocketMQ's files
 * do not record the sizes, so a reader must be configured with the writer's values: dump
 * infers them from the files when they are not given on the command line, and tells the
 * form from the files of consumequeue/.
 */
final class StoreLayout {
    /** Consume-queue entries are 20 bytes. */
    static final int CQ_ENTRY_SIZE = 20;
    /** Index files: 40-byte header, 4 bytes per slot, 20 bytes per entry. */
    static final int INDEX_HEADER_SIZE = 40;
    static final int INDEX_SLOT_SIZE = 4;
    static final int INDEX_ENTRY_SIZE = 20;

    /** Small by default so that every kind of file rolls with a few dozen messages. */
    static final int DEFAULT_COMMITLOG_SEGMENT_SIZE = 64 * 1024;
    static final int DEFAULT_CQ_ENTRIES_PER_FILE = 16;
    static final int DEFAULT_INDEX_SLOTS = 32;
    static final int DEFAULT_INDEX_ENTRIES = 128;

    final int commitlogSegmentSize;
    final int cqEntriesPerFile;
    final int indexSlots;
    final int indexEntries;
    /** File consume queues, or (RocketMQ 5) the RocksDB consume queue. */
    final ConsumeQueueForm form;

    StoreLayout(int commitlogSegmentSize, int cqEntriesPerFile, int indexSlots, int indexEntries,
        ConsumeQueueForm form) {
        this.commitlogSegmentSize = commitlogSegmentSize;
        this.cqEntriesPerFile = cqEntriesPerFile;
        this.indexSlots = indexSlots;
        this.indexEntries = indexEntries;
        this.form = form;
        if (form == ConsumeQueueForm.ROCKSDB && !RocketMq.HAS_ROCKSDB_CONSUME_QUEUE) {
            throw new Options.UsageException("RocketMQ " + RocketMq.version()
                + " has no RocksDB consume queue (--store-type rocksdb needs RocketMQ 5)");
        }
    }

    /** The sizes and form given as options, each falling back to the harness default. */
    static StoreLayout fromOptions(Options options) {
        String form = options.value("store-type", null);
        return new StoreLayout(
            orDefault(options.intValue("commitlog-segment-size"), DEFAULT_COMMITLOG_SEGMENT_SIZE),
            orDefault(options.intValue("cq-entries-per-file"), DEFAULT_CQ_ENTRIES_PER_FILE),
            orDefault(options.intValue("index-slots"), DEFAULT_INDEX_SLOTS),
            orDefault(options.intValue("index-entries"), DEFAULT_INDEX_ENTRIES),
            form == null ? ConsumeQueueForm.FILE : ConsumeQueueForm.parse(form));
    }

    /**
     * The sizes given as options; a size not given is read from the store's files, and
     * only when there is no such file does the harness default apply. The form is the
     * {@code store-type} option, or else the one the files of consumequeue/ show.
     */
    static StoreLayout inferred(Options options, Path root) throws IOException {
        String formOption = options.value("store-type", null);
        ConsumeQueueForm form = formOption == null ? ConsumeQueueForm.detect(root) : ConsumeQueueForm.parse(formOption);
        Integer segment = options.intValue("commitlog-segment-size");
        if (segment == null) {
            segment = firstFileSize(root.resolve("commitlog")).map(Math::toIntExact).orElse(null);
        }
        Integer cqEntries = options.intValue("cq-entries-per-file");
        if (cqEntries == null && form == ConsumeQueueForm.FILE) {
            cqEntries = firstFileSize(root.resolve("consumequeue"))
                .map(size -> Math.toIntExact(size / CQ_ENTRY_SIZE)).orElse(null);
        }
        Integer slots = options.intValue("index-slots");
        Integer entries = options.intValue("index-entries");
        if (slots == null && entries == null) {
            Optional<Long> indexSize = firstFileSize(root.resolve("index"));
            if (indexSize.isPresent()) {
                // RocketMQ's defaults keep four entries per slot; assume the same ratio.
                long body = indexSize.get() - INDEX_HEADER_SIZE;
                long perSlot = INDEX_SLOT_SIZE + 4L * INDEX_ENTRY_SIZE;
                if (body <= 0 || body % perSlot != 0) {
                    throw new IOException("index file size " + indexSize.get()
                        + " is not 40 + 84 x slots: pass --index-slots and --index-entries");
                }
                slots = Math.toIntExact(body / perSlot);
                entries = 4 * slots;
            }
        }
        return new StoreLayout(
            orDefault(segment, DEFAULT_COMMITLOG_SEGMENT_SIZE),
            orDefault(cqEntries, DEFAULT_CQ_ENTRIES_PER_FILE),
            orDefault(slots, DEFAULT_INDEX_SLOTS),
            orDefault(entries, DEFAULT_INDEX_ENTRIES),
            form);
    }

    /**
     * A store configuration for this layout rooted at {@code root}. The RocksDB form is
     * RocketMQ's {@code storeType=defaultRocksDB}, with the rest of RocketMQ's defaults for
     * it (LZ4 compression, ZSTD at the bottom level).
     */
    MessageStoreConfig toConfig(Path root) {
        MessageStoreConfig config = new MessageStoreConfig();
        config.setStorePathRootDir(root.toString());
        config.setStorePathCommitLog(root.resolve("commitlog").toString());
        config.setMappedFileSizeCommitLog(commitlogSegmentSize);
        config.setMappedFileSizeConsumeQueue(cqEntriesPerFile * CQ_ENTRY_SIZE);
        config.setMaxHashSlotNum(indexSlots);
        config.setMaxIndexNum(indexEntries);
        RocketMq.setStoreType(config, form.storeType);
        // Every put is on disk when it returns, so a halted writer leaves whole records.
        config.setFlushDiskType(FlushDiskType.SYNC_FLUSH);
        // The harness must never delete a file because the test machine's disk is busy
        // or because the fixture's files look old.
        config.setDiskMaxUsedSpaceRatio(95);
        config.setCleanFileForciblyEnable(false);
        config.setFileReservedTime(100 * 365 * 24);
        // Port 0: the HA listener binds an ephemeral port, so harness runs never collide.
        config.setHaListenPort(0);
        return config;
    }

    /** Size of a segment file under {@code dir} (any depth): all of one kind have the same size. */
    private static Optional<Long> firstFileSize(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return Optional.empty();
        }
        try (Stream<Path> files = Files.walk(dir)) {
            Optional<Path> first = files.filter(Files::isRegularFile)
                .filter(p -> p.getFileName().toString().chars().allMatch(Character::isDigit))
                .findFirst();
            if (first.isEmpty()) {
                return Optional.empty();
            }
            return Optional.of(Files.size(first.get()));
        }
    }

    private static int orDefault(Integer value, int fallback) {
        return value == null ? fallback : value;
    }

    @Override
    public String toString() {
        return "commitlog segment " + commitlogSegmentSize + " B, " + cqEntriesPerFile
            + " CQ entries per file, index " + indexSlots + " slots / " + indexEntries + " entries, "
            + form.optionName + " consume queue";
    }
}
