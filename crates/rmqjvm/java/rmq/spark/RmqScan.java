package rmq.spark;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/** A read of the {@code rmq} table. As a batch: store files, one partition per segment (or
 * segment part) of the selected shards, read in columns; the options are checked here,
 * when the batch is planned (a stream takes other options). As a stream: from a broker
 * ({@code endpoint}), the JVM stream (BrokerStream); from store files ({@code path}), the
 * Python source's. */
final class RmqScan implements Scan {
  private final StructType schema;
  private final RmqScanBuilder builder;
  private final PythonDelegate python;

  RmqScan(StructType schema, RmqScanBuilder builder, PythonDelegate python) {
    this.schema = schema;
    this.builder = builder;
    this.python = python;
  }

  @Override
  public StructType readSchema() {
    return schema;
  }

  @Override
  public String description() {
    return "rmq (native decoder)";
  }

  @Override
  public Batch toBatch() {
    return new SegmentBatch(schema, builder.options(), builder.selection());
  }

  @Override
  public MicroBatchStream toMicroBatchStream(String checkpointLocation) {
    if (StreamOptions.fromBroker(builder.given())) {
      return new BrokerStream(schema, StreamOptions.parse(builder.given()));
    }
    return python.scanBuilder(builder.given()).build().toMicroBatchStream(checkpointLocation);
  }

  /** The batch read itself. */
  private record SegmentBatch(StructType schema, ReadOptions options, Selection selection)
      implements Batch {
  @Override
  public InputPartition[] planInputPartitions() {
    if (selection.isEmpty()) {
      return new InputPartition[0];
    }
    List<StoreLayout.Shard> shards = new ArrayList<>();
    for (StoreLayout.Shard shard : StoreLayout.findShards(options.path)) {
      if (selection.selectsShard(shard.name())) {
        shards.add(shard);
      }
    }
    return StoreLayout.planParts(shards, options.splitSize).toArray(new InputPartition[0]);
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return new Factory(schema, options, selection);
  }
  }

  /** Sent to the executors: what each reader needs. */
  private record Factory(StructType schema, ReadOptions options, Selection selection)
      implements PartitionReaderFactory {
    @Override
    public boolean supportColumnarReads(InputPartition partition) {
      return true;
    }

    @Override
    public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
      return new SegmentReader((SegmentPart) partition, schema, options, selection);
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
      throw new UnsupportedOperationException("the rmq reader reads columns");
    }
  }
}
