package rmq.spark;

import org.apache.spark.sql.connector.read.InputPartition;

/** One partition of a micro-batch from a broker: queue ranges read one after the other,
 * and the name of each one's shard directory ({@code shard-N}, the {@code shard} column). */
record BrokerPart(QueueRange[] ranges, String[] shards) implements InputPartition {}
