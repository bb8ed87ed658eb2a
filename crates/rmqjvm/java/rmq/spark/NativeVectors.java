package rmq.spark;

import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/** Spark column vectors read in place from the native decoder's buffers (Arrow layouts, see
 * crates/rmqcore/src/segment_decoder/columns.rs): no copy and no call into native code per
 * value. A vector is valid while its batch is (until the reader's next {@code next()}). */
final class NativeVectors {
  private NativeVectors() {}

  /** What every vector here shares: the accessors a type does not have throw. */
  abstract static class Base extends ColumnVector {
    Base(DataType type) {
      super(type);
    }

    @Override
    public void close() {}

    @Override
    public boolean hasNull() {
      return false;
    }

    @Override
    public int numNulls() {
      return 0;
    }

    @Override
    public boolean isNullAt(int row) {
      return false;
    }

    private UnsupportedOperationException wrongType() {
      return new UnsupportedOperationException(dataType().simpleString() + " column");
    }

    @Override
    public boolean getBoolean(int row) {
      throw wrongType();
    }

    @Override
    public byte getByte(int row) {
      throw wrongType();
    }

    @Override
    public short getShort(int row) {
      throw wrongType();
    }

    @Override
    public int getInt(int row) {
      throw wrongType();
    }

    @Override
    public long getLong(int row) {
      throw wrongType();
    }

    @Override
    public float getFloat(int row) {
      throw wrongType();
    }

    @Override
    public double getDouble(int row) {
      throw wrongType();
    }

    @Override
    public ColumnarArray getArray(int row) {
      throw wrongType();
    }

    @Override
    public ColumnarMap getMap(int row) {
      throw wrongType();
    }

    @Override
    public Decimal getDecimal(int row, int precision, int scale) {
      throw wrongType();
    }

    @Override
    public UTF8String getUTF8String(int row) {
      throw wrongType();
    }

    @Override
    public byte[] getBinary(int row) {
      throw wrongType();
    }

    @Override
    public ColumnVector getChild(int ordinal) {
      throw wrongType();
    }
  }

  static boolean bit(long bitmap, int index) {
    return (Platform.getByte(null, bitmap + (index >> 3)) & (1 << (index & 7))) != 0;
  }

  static final class Ints extends Base {
    private final long values;

    Ints(long values) {
      super(DataTypes.IntegerType);
      this.values = values;
    }

    @Override
    public int getInt(int row) {
      return Platform.getInt(null, values + 4L * row);
    }
  }

  static final class Longs extends Base {
    private final long values;

    Longs(long values) {
      super(DataTypes.LongType);
      this.values = values;
    }

    @Override
    public long getLong(int row) {
      return Platform.getLong(null, values + 8L * row);
    }
  }

  /** Milliseconds in the buffer, microseconds for Spark. */
  static final class Timestamps extends Base {
    private final long millis;

    Timestamps(long millis) {
      super(DataTypes.TimestampType);
      this.millis = millis;
    }

    @Override
    public long getLong(int row) {
      return Platform.getLong(null, millis + 8L * row) * 1000L;
    }
  }

  /** Text or bytes: i32 offsets and data. Null where {@code validity} (a bitmap address,
   * or 0 for none) has the row's bit unset. */
  static final class Variable extends Base {
    private final long offsets;
    private final long data;
    private final long validity;

    Variable(DataType type, long offsets, long data, long validity) {
      super(type);
      this.offsets = offsets;
      this.data = data;
      this.validity = validity;
    }

    private int start(int row) {
      return Platform.getInt(null, offsets + 4L * row);
    }

    private int length(int row) {
      return Platform.getInt(null, offsets + 4L * row + 4) - start(row);
    }

    @Override
    public boolean hasNull() {
      return validity != 0;
    }

    @Override
    public boolean isNullAt(int row) {
      return validity != 0 && !bit(validity, row);
    }

    @Override
    public UTF8String getUTF8String(int row) {
      if (isNullAt(row)) {
        return null;
      }
      return UTF8String.fromAddress(null, data + start(row), length(row));
    }

    @Override
    public byte[] getBinary(int row) {
      byte[] bytes = new byte[length(row)];
      Platform.copyMemory(null, data + start(row), bytes, Platform.BYTE_ARRAY_OFFSET, bytes.length);
      return bytes;
    }
  }

  /** The same text on every row (the shard name). */
  static final class Constant extends Base {
    private final UTF8String value;

    Constant(String value) {
      super(DataTypes.StringType);
      this.value = UTF8String.fromString(value);
    }

    @Override
    public UTF8String getUTF8String(int row) {
      return value;
    }
  }

  /** {@code body_crc_ok}: null where no CRC was checked. */
  static final class CrcOk extends Base {
    private final long ok;
    private final long checked;

    CrcOk(long ok, long checked) {
      super(DataTypes.BooleanType);
      this.ok = ok;
      this.checked = checked;
    }

    @Override
    public boolean hasNull() {
      return true;
    }

    @Override
    public boolean isNullAt(int row) {
      return !bit(checked, row);
    }

    @Override
    public boolean getBoolean(int row) {
      return bit(ok, row);
    }
  }

  /** {@code keys}: i32 offsets into a text child. */
  static final class TextList extends Base {
    private final long offsets;
    private final Variable values;

    TextList(DataType type, long offsets, Variable values) {
      super(type);
      this.offsets = offsets;
      this.values = values;
    }

    @Override
    public ColumnarArray getArray(int row) {
      int start = Platform.getInt(null, offsets + 4L * row);
      int end = Platform.getInt(null, offsets + 4L * row + 4);
      return new ColumnarArray(values, start, end - start);
    }
  }

  /** {@code properties}: i32 offsets into name and value children. */
  static final class TextMap extends Base {
    private final long offsets;
    private final Variable names;
    private final Variable values;

    TextMap(DataType type, long offsets, Variable names, Variable values) {
      super(type);
      this.offsets = offsets;
      this.names = names;
      this.values = values;
    }

    @Override
    public ColumnarMap getMap(int row) {
      int start = Platform.getInt(null, offsets + 4L * row);
      int end = Platform.getInt(null, offsets + 4L * row + 4);
      return new ColumnarMap(names, values, start, end - start);
    }
  }
}
