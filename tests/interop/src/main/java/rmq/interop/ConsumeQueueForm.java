package rmq.interop;

import java.nio.file.Files;
import java.nio.file.Path;
import rmq.cli.Options;

/**
 * The two forms of RocketMQ's consume queues, named as rmq names them
 * ({@code consume_queue_type}) and as RocketMQ's {@code MessageStoreConfig.storeType}
 * names them. The RocksDB form exists from RocketMQ 5 on.
 */
enum ConsumeQueueForm {
    /** A directory per topic and queue, files of 20-byte entries. */
    FILE("file", "default"),
    /** RocketMQ 5's RocksDBConsumeQueueStore: one RocksDB database at consumequeue/. */
    ROCKSDB("rocksdb", "defaultRocksDB");

    /** The option value, as rmq's consume_queue_type spells it. */
    final String optionName;
    /** RocketMQ's StoreType value for MessageStoreConfig.setStoreType. */
    final String storeType;

    ConsumeQueueForm(String optionName, String storeType) {
        this.optionName = optionName;
        this.storeType = storeType;
    }

    /** The {@code --store-type} value: rmq's name or RocketMQ's storeType. */
    static ConsumeQueueForm parse(String text) {
        for (ConsumeQueueForm form : values()) {
            if (form.optionName.equalsIgnoreCase(text) || form.storeType.equalsIgnoreCase(text)) {
                return form;
            }
        }
        throw new Options.UsageException("--store-type takes file or rocksdb, got " + text);
    }

    /**
     * The form of an existing store: RocksDB keeps a CURRENT file in every database
     * directory, the file form has a directory per topic.
     */
    static ConsumeQueueForm detect(Path root) {
        return Files.isRegularFile(root.resolve("consumequeue").resolve("CURRENT")) ? ROCKSDB : FILE;
    }
}
