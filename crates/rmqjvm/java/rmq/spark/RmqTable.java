package rmq.spark;

import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** The {@code rmq} table: batch reads of store files and streams from a broker
 * ({@code endpoint}) here, in the JVM; streams over store files ({@code path}), writes and
 * reads of a tier's bucket ({@code tier_url}) through the Python source, with the same
 * capabilities it declares. */
final class RmqTable implements SupportsRead, SupportsWrite {
  private final StructType schema;
  private final PythonDelegate python;

  RmqTable(StructType schema, Map<String, String> properties) {
    this.schema = schema;
    this.python = new PythonDelegate(schema, properties);
  }

  @Override
  public String name() {
    return "rmq";
  }

  @Override
  @SuppressWarnings("deprecation") // Spark 4 still reads a table's schema() by default.
  public StructType schema() {
    return schema;
  }

  @Override
  public Set<TableCapability> capabilities() {
    return EnumSet.of(
        TableCapability.BATCH_READ,
        TableCapability.BATCH_WRITE,
        TableCapability.MICRO_BATCH_READ,
        TableCapability.STREAMING_WRITE,
        TableCapability.TRUNCATE);
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    if (options.containsKey("tier_url")) {
      return python.scanBuilder(options);
    }
    return new RmqScanBuilder(schema, options, python);
  }

  @Override
  public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    return python.writeBuilder(info);
  }
}
