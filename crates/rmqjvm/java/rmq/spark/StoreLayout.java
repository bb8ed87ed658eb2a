package rmq.spark;

import java.io.File;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Finding the commit-log segments under a path and cutting them into parts, as
 * python/rmq/spark/layout.py does (the same path forms, shard names and parts). */
final class StoreLayout {
  private static final Pattern SEGMENT_NAME = Pattern.compile("[0-9]{20}");

  /** A store: its name and commit-log directory, or only some of its files. */
  record Shard(String name, File commitlog, List<String> only) {}

  private StoreLayout() {}

  static List<Shard> findShards(String path) {
    File root;
    try {
      root = new File(path).getCanonicalFile();
    } catch (IOException failed) {
      throw new UncheckedIOException(failed);
    }
    if (!root.exists()) {
      throw new UncheckedIOException(
          new java.io.FileNotFoundException("no such file or directory: " + root));
    }
    if (root.isFile()) {
      if (!SEGMENT_NAME.matcher(root.getName()).matches()) {
        throw ReadOptions.invalid(
            "path", root + " is not a commit-log segment (named by a 20-digit offset)");
      }
      File commitlog = root.getParentFile();
      return List.of(new Shard(commitlog.getParentFile().getName(), commitlog, List.of(root.getName())));
    }
    if (new File(root, "commitlog").isDirectory()) {
      return List.of(new Shard(root.getName(), new File(root, "commitlog"), null));
    }
    List<Shard> shards = new ArrayList<>();
    File[] children = root.listFiles();
    for (File child : children == null ? new File[0] : children) {
      if (new File(child, "commitlog").isDirectory()) {
        shards.add(new Shard(child.getName(), new File(child, "commitlog"), null));
      }
    }
    if (!shards.isEmpty()) {
      shards.sort(Comparator.comparing(shard -> naturalKey(shard.name())));
      return shards;
    }
    for (File child : children == null ? new File[0] : children) {
      if (SEGMENT_NAME.matcher(child.getName()).matches()) {
        return List.of(new Shard(root.getParentFile().getName(), root, null));
      }
    }
    throw ReadOptions.invalid(
        "path",
        "no commit log under " + root + ": expected a store directory (with commitlog/), "
            + "a directory of store directories, a commitlog directory or a segment file");
  }

  /** Digit runs compare as numbers (shard-2 before shard-10), as the Python source sorts. */
  private static String naturalKey(String name) {
    Matcher digits = Pattern.compile("\\d+").matcher(name);
    StringBuilder key = new StringBuilder();
    int last = 0;
    while (digits.find()) {
      key.append(name, last, digits.start());
      String run = digits.group().replaceFirst("^0+(?=.)", "");
      key.append(String.format("%020d", run.length())).append(run);
      last = digits.end();
    }
    return key.append(name.substring(last)).toString();
  }

  /** One part per segment that holds data, or several when {@code splitSize} is positive
   * and the segment is larger (cut on record boundaries by the native decoder). */
  static List<SegmentPart> planParts(List<Shard> shards, long splitSize) {
    List<SegmentPart> parts = new ArrayList<>();
    for (Shard shard : shards) {
      List<File> segments = new ArrayList<>();
      List<String> names = shard.only() != null ? shard.only() : listNames(shard.commitlog());
      for (String name : names) {
        File file = new File(shard.commitlog(), name);
        if (SEGMENT_NAME.matcher(name).matches() && file.isFile() && file.length() > 0 && hasData(file)) {
          segments.add(file);
        }
      }
      segments.sort(Comparator.comparing(File::getName));
      for (int index = 0; index < segments.size(); index++) {
        File segment = segments.get(index);
        boolean tail = index == segments.size() - 1;
        long start = Long.parseLong(segment.getName());
        long size = segment.length();
        long[] points = {0};
        if (splitSize > 0 && splitSize < size) {
          long decoder = NativeDecoder.open(segment.getPath(), start);
          try {
            points = NativeDecoder.splitPoints(decoder, splitSize);
          } finally {
            NativeDecoder.close(decoder);
          }
        }
        for (int cut = 0; cut < points.length; cut++) {
          long end = cut + 1 < points.length ? points[cut + 1] : size;
          parts.add(new SegmentPart(shard.name(), segment.getPath(), start, points[cut], end, tail));
        }
      }
    }
    return parts;
  }

  private static List<String> listNames(File directory) {
    String[] names = directory.list();
    return names == null ? List.of() : List.of(names);
  }

  /** The first 8 bytes are not all zero: a record or a blank starts the file. */
  private static boolean hasData(File file) {
    try (FileInputStream in = new FileInputStream(file)) {
      byte[] head = in.readNBytes(8);
      for (byte b : head) {
        if (b != 0) {
          return true;
        }
      }
      return false;
    } catch (IOException failed) {
      throw new UncheckedIOException(failed);
    }
  }
}
