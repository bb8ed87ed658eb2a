package rmq.spark;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.SupportsPushDownFilters;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** Takes the columns the query needs (so that a count decodes no body, no properties, no
 * message id) and the filters the decoder can apply, then builds the scan. */
final class RmqScanBuilder
    implements SupportsPushDownRequiredColumns, SupportsPushDownFilters {
  private final CaseInsensitiveStringMap given;
  private final PythonDelegate python;
  private StructType schema;
  private ReadOptions options;
  private Selection selection;
  private Filter[] pushed = new Filter[0];

  RmqScanBuilder(StructType schema, CaseInsensitiveStringMap given, PythonDelegate python) {
    // The table's whole schema (a user's .schema()), before Spark prunes it to the query's.
    RmqSchema.checkProjection(schema);
    this.schema = schema;
    this.given = given;
    this.python = python;
  }

  /** The options as Spark gave them (a stream hands them on to the Python source). */
  CaseInsensitiveStringMap given() {
    return given;
  }

  /** The batch read's options, checked on first use (only a batch read uses them). */
  ReadOptions options() {
    if (options == null) {
      options = ReadOptions.parse(given);
    }
    return options;
  }

  /** The rows to read: the options' selection narrowed by the pushed filters. */
  Selection selection() {
    return selection != null ? selection : options().selection;
  }

  @Override
  public void pruneColumns(StructType required) {
    schema = required;
  }

  @Override
  public Filter[] pushFilters(Filter[] filters) {
    if (!options().filterPushdown) {
      return filters;
    }
    selection = selection();
    List<Filter> remaining = new ArrayList<>();
    List<Filter> taken = new ArrayList<>();
    for (Filter filter : filters) {
      Selection narrowed = FilterPushdown.push(selection, filter);
      if (narrowed == null) {
        remaining.add(filter);
      } else {
        selection = narrowed;
        taken.add(filter);
      }
    }
    pushed = taken.toArray(new Filter[0]);
    return remaining.toArray(new Filter[0]);
  }

  @Override
  public Filter[] pushedFilters() {
    return pushed;
  }

  @Override
  public Scan build() {
    return new RmqScan(schema, this, python);
  }
}
