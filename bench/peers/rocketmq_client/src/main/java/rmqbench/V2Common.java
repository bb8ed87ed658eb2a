package rmqbench;

import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;
import org.apache.rocketmq.client.apis.ClientConfiguration;

/** What the load programs share: the client's configuration, the body, the JSON line. */
final class V2Common {
    static final String[] TAGS = {"TagA", "TagB", "TagC", "TagD"};

    private V2Common() {
    }

    /** Plain-text gRPC (no TLS) to the access point; generous timeouts under load. */
    static ClientConfiguration configuration(String endpoint) {
        return ClientConfiguration.newBuilder()
            .setEndpoints(endpoint)
            .enableSsl(false)
            .setRequestTimeout(Duration.ofSeconds(30))
            .build();
    }

    static byte[] body(int size) {
        byte[] body = new byte[size];
        new Random(8).nextBytes(body);
        return body;
    }

    static String key(long i) {
        return String.format("order-%09d", i);
    }

    /** Nearest-rank percentile in microseconds of sorted nanosecond latencies. */
    static double percentileMicros(long[] sorted, int n, double q) {
        if (n == 0) {
            return Double.NaN;
        }
        int rank = (int) Math.round(q / 100.0 * n) - 1;
        return sorted[Math.max(0, Math.min(n - 1, rank))] / 1000.0;
    }

    /** Messages/s, MB/s and p50/p99 of the first n latencies (sorted here). */
    static Map<String, Object> figures(long messages, long bytes, long nanos, long[] lat, int n) {
        Map<String, Object> out = new LinkedHashMap<>();
        double seconds = nanos / 1e9;
        out.put("messages", messages);
        out.put("seconds", seconds);
        out.put("msgs_per_s", messages / seconds);
        out.put("mb_per_s", bytes / seconds / 1e6);
        Arrays.sort(lat, 0, n);
        out.put("p50_us", percentileMicros(lat, n, 50));
        out.put("p99_us", percentileMicros(lat, n, 99));
        return out;
    }

    /** One line, {@code BENCH_RESULT {...}}, that bench/peers/common.py parses. */
    static void print(Map<String, Object> fields) {
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
