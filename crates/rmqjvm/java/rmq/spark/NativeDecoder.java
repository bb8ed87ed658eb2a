package rmq.spark;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/** The native methods of crates/rmqjvm: the engine's segment decoder, called once per batch.
 *
 * <p>The library is the {@code librmqjvm.so} packed in this jar (extracted once per JVM to
 * a temporary file), so that shipping the jar to executors ships the decoder too; the
 * system property {@code rmq.native.library} names another file instead. */
final class NativeDecoder {
  /** Bits of {@code decode}'s columns argument (crates/rmqjvm/src/lib.rs). */
  static final int MSG_ID = 1;
  static final int PROPERTIES = 2;
  static final int BODY = 4;
  static final int HOSTS = 8;

  private static boolean loaded;

  static {
    load();
  }

  /** Load the native library once per JVM (NativeBroker's methods are in it too). */
  static synchronized void load() {
    if (loaded) {
      return;
    }
    loaded = true;
    String given = System.getProperty("rmq.native.library");
    if (given != null) {
      System.load(given);
      return;
    }
    try (InputStream packed = NativeDecoder.class.getResourceAsStream("librmqjvm.so")) {
      if (packed == null) {
        throw new UnsatisfiedLinkError("librmqjvm.so is not in the rmq jar: rebuild it with scripts/build-spark-jvm");
      }
      Path file = Files.createTempFile("librmqjvm", ".so");
      file.toFile().deleteOnExit();
      Files.copy(packed, file, StandardCopyOption.REPLACE_EXISTING);
      System.load(file.toString());
    } catch (IOException failed) {
      throw new UncheckedIOException("cannot extract librmqjvm.so", failed);
    }
  }

  static native long open(String path, long startOffset);

  static native void close(long decoder);

  static native long size(long decoder);

  static native long[] splitPoints(long decoder, long partSize);

  static native long decode(
      long decoder,
      long from,
      long limit,
      int maxRows,
      int columns,
      boolean verifyCrc,
      String[] topics,
      long storeTimeMin,
      long storeTimeMax,
      long[] out);

  static native String invalidRecord(long decoder, long batch);

  static native void freeBatch(long batch);

  private NativeDecoder() {}
}
