package rmq.spark;

import static rmq.spark.BatchLayout.*;

import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/** The rows of {@code spark.read.format("rmq")}: the same columns, types and nullability as
 * the Python source's {@code rmq.spark.SCHEMA}; and how each column is read from a decoded
 * batch. */
final class RmqSchema {
  static final ArrayType KEYS_TYPE = DataTypes.createArrayType(DataTypes.StringType, false);
  static final MapType PROPERTIES_TYPE =
      DataTypes.createMapType(DataTypes.StringType, DataTypes.StringType, false);

  static final StructType SCHEMA =
      new StructType(
          new StructField[] {
            field("shard", DataTypes.StringType, false),
            field("topic", DataTypes.StringType, false),
            field("queue_id", DataTypes.IntegerType, false),
            field("queue_offset", DataTypes.LongType, false),
            field("commitlog_offset", DataTypes.LongType, false),
            field("msg_id", DataTypes.StringType, false),
            field("tags", DataTypes.StringType, true),
            field("keys", KEYS_TYPE, false),
            field("properties", PROPERTIES_TYPE, false),
            field("body", DataTypes.BinaryType, false),
            field("body_size", DataTypes.IntegerType, false),
            field("born_timestamp", DataTypes.TimestampType, false),
            field("store_timestamp", DataTypes.TimestampType, false),
            field("born_host", DataTypes.StringType, false),
            field("store_host", DataTypes.StringType, false),
            field("sys_flag", DataTypes.IntegerType, false),
            field("flag", DataTypes.IntegerType, false),
            field("reconsume_times", DataTypes.IntegerType, false),
            field("body_crc_ok", DataTypes.BooleanType, true),
          });

  private static StructField field(String name, DataType type, boolean nullable) {
    return DataTypes.createStructField(name, type, nullable);
  }

  /** Check a user-given {@code .schema()}: some of SCHEMA's columns, by name, with the same
   * types (nested nullability aside), as the Python source requires. */
  static void checkProjection(StructType schema) {
    for (StructField given : schema.fields()) {
      if (!java.util.Arrays.asList(SCHEMA.fieldNames()).contains(given.name())) {
        throw new IllegalArgumentException(
            "invalid schema: column '" + given.name() + "' is not one of the rmq source's: "
                + String.join(", ", SCHEMA.fieldNames()));
      }
      StructField ours = SCHEMA.apply(given.name());
      if (!loosely(given.dataType()).equals(loosely(ours.dataType()))
          || (ours.nullable() && !given.nullable())) {
        throw new IllegalArgumentException(
            "invalid schema: column '" + given.name() + "' is " + ours.dataType().simpleString()
                + (ours.nullable() ? "" : " not null") + " in the rmq source, not "
                + given.dataType().simpleString());
      }
    }
  }

  private static DataType loosely(DataType type) {
    if (type instanceof ArrayType array) {
      return DataTypes.createArrayType(loosely(array.elementType()), true);
    }
    if (type instanceof MapType map) {
      return DataTypes.createMapType(loosely(map.keyType()), loosely(map.valueType()), true);
    }
    return type;
  }

  /** The decoder's column bits that {@code schema} needs filled. */
  static int nativeColumns(StructType schema) {
    int bits = 0;
    for (String name : schema.fieldNames()) {
      switch (name) {
        case "msg_id" -> bits |= NativeDecoder.MSG_ID;
        case "tags", "keys", "properties" -> bits |= NativeDecoder.PROPERTIES;
        case "body" -> bits |= NativeDecoder.BODY;
        case "born_host", "store_host" -> bits |= NativeDecoder.HOSTS;
        default -> {}
      }
    }
    return bits;
  }

  /** The {@code rows} rows of the batch that {@code slots} describes, in the columns of
   * {@code schema} (read in place: the batch must outlive the result). */
  static ColumnarBatch columnar(StructType schema, long[] slots, String shard, int rows) {
    StructField[] fields = schema.fields();
    ColumnVector[] vectors = new ColumnVector[fields.length];
    for (int index = 0; index < fields.length; index++) {
      vectors[index] = vector(fields[index], slots, shard);
    }
    return new ColumnarBatch(vectors, rows);
  }

  /** The vector of column {@code field} over the batch that {@code slots} describes. */
  static ColumnVector vector(StructField field, long[] slots, String shard) {
    DataType type = field.dataType();
    return switch (field.name()) {
      case "shard" -> new NativeVectors.Constant(shard);
      case "topic" -> text(slots, TOPIC, 0);
      case "queue_id" -> new NativeVectors.Ints(slots[QUEUE_ID]);
      case "queue_offset" -> new NativeVectors.Longs(slots[QUEUE_OFFSET]);
      case "commitlog_offset" -> new NativeVectors.Longs(slots[COMMITLOG_OFFSET]);
      case "msg_id" -> text(slots, MSG_ID, 0);
      case "tags" -> text(slots, TAGS, slots[TAGS + 2]);
      case "keys" -> new NativeVectors.TextList(type, slots[KEYS], text(slots, KEYS + 1, 0));
      case "properties" ->
          new NativeVectors.TextMap(
              type, slots[PROPERTIES], text(slots, PROPERTIES + 1, 0), text(slots, PROPERTIES + 3, 0));
      case "body" ->
          new NativeVectors.Variable(DataTypes.BinaryType, slots[BODY], slots[BODY + 1], 0);
      case "body_size" -> new NativeVectors.Ints(slots[BODY_SIZE]);
      case "born_timestamp" -> new NativeVectors.Timestamps(slots[BORN_TIMESTAMP]);
      case "store_timestamp" -> new NativeVectors.Timestamps(slots[STORE_TIMESTAMP]);
      case "born_host" -> text(slots, BORN_HOST, 0);
      case "store_host" -> text(slots, STORE_HOST, 0);
      case "sys_flag" -> new NativeVectors.Ints(slots[SYS_FLAG]);
      case "flag" -> new NativeVectors.Ints(slots[FLAG]);
      case "reconsume_times" -> new NativeVectors.Ints(slots[RECONSUME_TIMES]);
      case "body_crc_ok" -> new NativeVectors.CrcOk(slots[CRC_OK], slots[CRC_CHECKED]);
      default -> throw new IllegalArgumentException("no rmq column " + field.name());
    };
  }

  private static NativeVectors.Variable text(long[] slots, int first, long validity) {
    return new NativeVectors.Variable(DataTypes.StringType, slots[first], slots[first + 1], validity);
  }

  private RmqSchema() {}
}
