package rmq.spark;

import java.util.Map;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** The Python source ({@code rmq.spark.register} registers it as {@value #NAME} when this
 * jar is loaded, since Spark refuses a Python source named like a JVM one), for what the
 * JVM reader does not do: streams over store files, writes, and batch reads of a tier's
 * bucket. Made when
 * first needed, so a batch read of store files starts no Python worker on the driver. */
final class PythonDelegate {
  /** The name the Python source is registered under (python/rmq/spark/__init__.py). */
  static final String NAME = "rmq_python";

  private final StructType schema;
  private final Map<String, String> properties;
  private Table table;

  PythonDelegate(StructType schema, Map<String, String> properties) {
    this.schema = schema;
    this.properties = properties;
  }

  private Table table() {
    if (table == null) {
      PythonDataSourceV2 provider = new PythonDataSourceV2();
      provider.setShortName(NAME);
      table = provider.getTable(schema, new Transform[0], properties);
    }
    return table;
  }

  ScanBuilder scanBuilder(CaseInsensitiveStringMap options) {
    return ((SupportsRead) table()).newScanBuilder(options);
  }

  WriteBuilder writeBuilder(LogicalWriteInfo info) {
    return ((SupportsWrite) table()).newWriteBuilder(info);
  }
}
