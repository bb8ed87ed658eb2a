package rmq.interop;

/**
 * One consume-queue entry as RocketMQ's consume-queue store returns it: the commit-log
 * offset, size and tags code of the record at one queue offset, and its store time (kept
 * in the entry by the RocksDB form; the file form reads it from the commit log).
 */
public record QueueEntry(long queueOffset, long commitLogOffset, int size, long tagsCode, long storeTime) {
}
