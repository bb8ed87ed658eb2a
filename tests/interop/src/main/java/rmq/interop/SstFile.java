package rmq.interop;

/**
 * One table file of a RocksDB consume queue, as RocksDB's own table properties describe
 * it: its column family and level, the compression its blocks were written with, and
 * its entries with their size before ({@code rawBytes}: keys and values) and after
 * ({@code dataBytes}: the data blocks on disk) compression.
 */
public record SstFile(String columnFamily, String file, int level, String compression, long entries,
    long rawBytes, long dataBytes) {
}
