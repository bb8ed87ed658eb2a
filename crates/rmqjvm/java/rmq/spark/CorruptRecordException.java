package rmq.spark;

/** Bytes that are not a valid record, where the reader needed one: the JVM reader's form of
 * the Python source's {@code CorruptRecordError}, with the same message (file, offset,
 * reason). */
public class CorruptRecordException extends RmqException {
  public CorruptRecordException(String message) {
    super(message);
  }
}
