package rmqbench;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * Runs load commands, one per line of stdin (or one from the arguments), in one JVM, so
 * that the client's JIT-compiled code stays warm from a warm-up to the measured runs:
 *
 * <pre>
 * produce ENDPOINT TOPIC COUNT BODY_SIZE IN_FLIGHT
 * consume ENDPOINT TOPIC COUNT BODY_SIZE GROUP THREADS BATCH IN_FLIGHT
 * </pre>
 *
 * <p>Each answers with one line, {@code BENCH_RESULT {...}} or {@code BENCH_ERROR why}.
 */
public final class V2Load {
    private V2Load() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0) {
            System.exit(execute(args) ? 0 : 2);
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (!line.isBlank()) {
                execute(line.trim().split("\\s+"));
            }
        }
        System.exit(0);
    }

    static boolean execute(String[] a) {
        try {
            Map<String, Object> out;
            switch (a[0]) {
                case "produce" -> out = V2Produce.run(a[1], a[2], Long.parseLong(a[3]),
                    Integer.parseInt(a[4]), Integer.parseInt(a[5]));
                case "consume" -> out = V2Consume.run(a[1], a[2], Long.parseLong(a[3]),
                    Integer.parseInt(a[4]), a[5], Integer.parseInt(a[6]), Integer.parseInt(a[7]),
                    Integer.parseInt(a[8]));
                default -> throw new IllegalArgumentException("unknown command " + a[0]);
            }
            BenchResult.print(out);
            return true;
        } catch (Throwable t) {
            t.printStackTrace();
            System.out.println("BENCH_ERROR " + String.valueOf(t).replace('\n', ' '));
            System.out.flush();
            return false;
        }
    }
}
