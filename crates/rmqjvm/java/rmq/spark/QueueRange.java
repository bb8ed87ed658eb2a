package rmq.spark;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** Offsets {@code [start, end)} of one queue, and how a micro-batch is cut into them: the
 * Python source's planning (python/rmq/spark/offsets.py), so that both streams read a
 * batch alike. {@code newQueue}: the queue appeared after the batch before (the topic
 * grew), so it is read from its first message whatever that is, which is no data loss. */
record QueueRange(int queueId, long start, long end, boolean newQueue) implements Serializable {
  long size() {
    return end - start;
  }

  /** End offsets at most {@code limit} messages past {@code start} in all, shared among
   * the queues in proportion to what each has waiting, so no queue falls behind the
   * others; the rounding left over goes to the largest remainders. */
  static TreeMap<Integer, Long> cap(Map<Integer, Long> start, Map<Integer, Long> latest, long limit) {
    TreeMap<Integer, Long> waiting = new TreeMap<>();
    long total = 0;
    for (Map.Entry<Integer, Long> entry : latest.entrySet()) {
      long count = Math.max(entry.getValue() - start.getOrDefault(entry.getKey(), 0L), 0);
      waiting.put(entry.getKey(), count);
      total += count;
    }
    if (total <= limit) {
      return new TreeMap<>(latest);
    }
    TreeMap<Integer, Double> shares = new TreeMap<>();
    TreeMap<Integer, Long> taken = new TreeMap<>();
    long left = limit;
    for (Map.Entry<Integer, Long> entry : waiting.entrySet()) {
      double share = (double) limit * entry.getValue() / total;
      shares.put(entry.getKey(), share);
      taken.put(entry.getKey(), (long) share);
      left -= (long) share;
    }
    List<Integer> byRemainder = new ArrayList<>(waiting.keySet());
    // Stable, as Python's sort: equal remainders keep queue order.
    byRemainder.sort(Comparator.comparingDouble((Integer q) -> shares.get(q) - taken.get(q)).reversed());
    for (int index = 0; index < left && index < byRemainder.size(); index++) {
      taken.merge(byRemainder.get(index), 1L, Long::sum);
    }
    TreeMap<Integer, Long> end = new TreeMap<>();
    for (Integer queue : latest.keySet()) {
      end.put(queue, waiting.get(queue) > 0 ? start.getOrDefault(queue, 0L) + taken.get(queue) : latest.get(queue));
    }
    return end;
  }

  /** One range per queue with messages between the two, cut (the largest first, in
   * halves) until there are {@code minPartitions}. */
  static List<QueueRange> plan(Map<Integer, Long> start, Map<Integer, Long> end, int minPartitions) {
    List<QueueRange> ranges = new ArrayList<>();
    for (Map.Entry<Integer, Long> entry : new TreeMap<>(end).entrySet()) {
      int queue = entry.getKey();
      long from = start.getOrDefault(queue, 0L);
      if (entry.getValue() > from) {
        ranges.add(new QueueRange(queue, from, entry.getValue(), !start.containsKey(queue)));
      }
    }
    while (!ranges.isEmpty() && ranges.size() < minPartitions) {
      QueueRange largest = ranges.get(0);
      for (QueueRange range : ranges) {
        if (range.size() > largest.size()) {
          largest = range;
        }
      }
      if (largest.size() < 2) {
        break;
      }
      long middle = Math.floorDiv(largest.start + largest.end, 2);
      int index = ranges.indexOf(largest);
      ranges.set(index, new QueueRange(largest.queueId, largest.start, middle, largest.newQueue));
      ranges.add(index + 1, new QueueRange(largest.queueId, middle, largest.end, largest.newQueue));
    }
    return ranges;
  }

  /** The ranges in partitions: as many as hold {@code minRows} messages or more each (at
   * least {@code minPartitions}, at most one per range), balanced by messages, each in
   * queue order. */
  static List<List<QueueRange>> group(List<QueueRange> ranges, long minRows, int minPartitions) {
    long total = 0;
    for (QueueRange range : ranges) {
      total += range.size();
    }
    int count = (int) Math.min(ranges.size(), Math.max(Math.max(minPartitions, total / Math.max(1, minRows)), 1));
    List<List<QueueRange>> groups = new ArrayList<>();
    long[] loads = new long[count];
    for (int index = 0; index < count; index++) {
      groups.add(new ArrayList<>());
    }
    List<QueueRange> bySize = new ArrayList<>(ranges);
    bySize.sort(Comparator.comparingLong(QueueRange::size).reversed());
    for (QueueRange range : bySize) {
      int lightest = 0;
      for (int index = 1; index < count; index++) {
        if (loads[index] < loads[lightest]) {
          lightest = index;
        }
      }
      groups.get(lightest).add(range);
      loads[lightest] += range.size();
    }
    List<List<QueueRange>> sorted = new ArrayList<>();
    for (List<QueueRange> group : groups) {
      if (!group.isEmpty()) {
        group.sort(Comparator.comparingInt(QueueRange::queueId).thenComparingLong(QueueRange::start));
        sorted.add(group);
      }
    }
    return sorted;
  }
}
