import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/** Prints one line of JSON with a run's figures; the Python harness parses it. */
final class BenchJson {
    private BenchJson() {
    }

    static double percentile(long[] sortedNanos, double q) {
        if (sortedNanos.length == 0) {
            return Double.NaN;
        }
        int rank = (int) Math.round(q / 100.0 * sortedNanos.length) - 1;
        rank = Math.max(0, Math.min(sortedNanos.length - 1, rank));
        return sortedNanos[rank] / 1000.0;
    }

    static Map<String, Object> throughput(long count, long bytes, long nanos, long[] latNanos) {
        Map<String, Object> out = new LinkedHashMap<>();
        double seconds = nanos / 1e9;
        out.put("messages", count);
        out.put("seconds", seconds);
        out.put("msgs_per_s", count / seconds);
        out.put("mb_per_s", bytes / seconds / 1e6);
        if (latNanos != null && latNanos.length > 0) {
            long[] sorted = latNanos.clone();
            Arrays.sort(sorted);
            out.put("p50_us", percentile(sorted, 50));
            out.put("p99_us", percentile(sorted, 99));
        }
        return out;
    }

    static void print(Map<String, Object> fields) {
        StringBuilder sb = new StringBuilder("BENCH_RESULT {");
        boolean first = true;
        for (Map.Entry<String, Object> e : fields.entrySet()) {
            if (!first) {
                sb.append(", ");
            }
            first = false;
            sb.append('"').append(e.getKey()).append("\": ");
            Object v = e.getValue();
            if (v instanceof Number) {
                double d = ((Number) v).doubleValue();
                sb.append(Double.isNaN(d) || Double.isInfinite(d) ? "null" : v.toString());
            } else {
                sb.append('"').append(String.valueOf(v).replace("\"", "'")).append('"');
            }
        }
        System.out.println(sb.append('}'));
        System.out.flush();
    }
}
