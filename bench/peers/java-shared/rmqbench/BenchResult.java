package rmqbench;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The figures of one run and the JSON line that carries them to the Python harness
 * (bench/peers/common.py parses it). Shared by the in-process programs under
 * bench/peers/java and the RocketMQ 5 client load under bench/peers/rocketmq_client.
 */
public final class BenchResult {
    private BenchResult() {
    }

    /** Nearest-rank percentile, in microseconds, of the first n sorted nanosecond latencies. */
    public static double percentileMicros(long[] sorted, int n, double q) {
        if (n == 0) {
            return Double.NaN;
        }
        int rank = (int) Math.round(q / 100.0 * n) - 1;
        return sorted[Math.max(0, Math.min(n - 1, rank))] / 1000.0;
    }

    /**
     * Messages/s and MB/s; with latencies, p50 and p99 of the first n of them (sorted here,
     * in place). {@code lat} null: a run that timed no single message.
     */
    public static Map<String, Object> figures(long messages, long bytes, long nanos, long[] lat, int n) {
        Map<String, Object> out = new LinkedHashMap<>();
        double seconds = nanos / 1e9;
        out.put("messages", messages);
        out.put("seconds", seconds);
        out.put("msgs_per_s", messages / seconds);
        out.put("mb_per_s", bytes / seconds / 1e6);
        if (lat != null) {
            Arrays.sort(lat, 0, n);
            out.put("p50_us", percentileMicros(lat, n, 50));
            out.put("p99_us", percentileMicros(lat, n, 99));
        }
        return out;
    }

    /** One line, {@code BENCH_RESULT {...}}: numbers as they are (NaN and infinities null), the rest as strings. */
    public static void print(Map<String, Object> fields) {
        StringBuilder line = new StringBuilder("BENCH_RESULT {");
        String sep = "";
        for (Map.Entry<String, Object> e : fields.entrySet()) {
            line.append(sep).append('"').append(e.getKey()).append("\": ");
            sep = ", ";
            Object v = e.getValue();
            if (v instanceof Number number) {
                double d = number.doubleValue();
                line.append(Double.isNaN(d) || Double.isInfinite(d) ? "null" : v.toString());
            } else {
                line.append('"').append(String.valueOf(v).replace("\"", "'")).append('"');
            }
        }
        System.out.println(line.append('}'));
        System.out.flush();
    }
}
