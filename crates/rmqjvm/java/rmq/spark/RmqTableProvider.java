package rmq.spark;

import java.util.Map;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** {@code format("rmq")} when this jar is on Spark's classpath (found through
 * META-INF/services): see RmqTable for what it serves itself and what it hands to the
 * Python source. */
public final class RmqTableProvider implements TableProvider, DataSourceRegister {
  @Override
  public String shortName() {
    return "rmq";
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    return RmqSchema.SCHEMA;
  }

  /** A user's {@code .schema()} (a projection for reads, the rows' schema for writes). */
  @Override
  public boolean supportsExternalMetadata() {
    return true;
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    return new RmqTable(schema, properties);
  }
}
