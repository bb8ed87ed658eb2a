package rmq.spark;

import java.io.Serializable;
import java.util.HashSet;
import java.util.Set;

/** Which rows to read: every given constraint holds (null: no constraint). Store times are
 * inclusive bounds in milliseconds. The Python source's {@code Selection}. */
final class Selection implements Serializable {
  final Set<String> topics;
  final Set<String> shards;
  final Long storeTimeMin;
  final Long storeTimeMax;

  Selection() {
    this(null, null, null, null);
  }

  private Selection(Set<String> topics, Set<String> shards, Long min, Long max) {
    this.topics = topics;
    this.shards = shards;
    this.storeTimeMin = min;
    this.storeTimeMax = max;
  }

  private static Set<String> both(Set<String> had, Set<String> more) {
    if (had == null) {
      return new HashSet<>(more);
    }
    Set<String> kept = new HashSet<>(had);
    kept.retainAll(more);
    return kept;
  }

  Selection withTopics(Set<String> more) {
    return new Selection(both(topics, more), shards, storeTimeMin, storeTimeMax);
  }

  Selection withShards(Set<String> more) {
    return new Selection(topics, both(shards, more), storeTimeMin, storeTimeMax);
  }

  Selection withStoreTime(Long min, Long max) {
    // No conditional expressions: mixing Long and long in one unboxes a null.
    Long low = storeTimeMin;
    if (min != null) {
      low = low == null ? min : Long.valueOf(Math.max(min, low));
    }
    Long high = storeTimeMax;
    if (max != null) {
      high = high == null ? max : Long.valueOf(Math.min(max, high));
    }
    return new Selection(topics, shards, low, high);
  }

  boolean isEmpty() {
    boolean emptyRange = storeTimeMin != null && storeTimeMax != null && storeTimeMin > storeTimeMax;
    return emptyRange
        || (topics != null && topics.isEmpty())
        || (shards != null && shards.isEmpty());
  }

  boolean selectsShard(String shard) {
    return shards == null || shards.contains(shard);
  }
}
