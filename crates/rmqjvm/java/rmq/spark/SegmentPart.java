package rmq.spark;

import org.apache.spark.sql.connector.read.InputPartition;

/** Records starting in {@code [begin, end)} of one segment file of one shard: one Spark
 * partition. {@code tail}: no later segment of the shard holds data, so a torn record at the
 * very end is the end of the log, not damage (as in python/rmq/spark/arrow.py). */
record SegmentPart(String shard, String path, long startOffset, long begin, long end, boolean tail)
    implements InputPartition {}
