package rmqbench;

import java.time.Duration;
import java.util.Random;
import org.apache.rocketmq.client.apis.ClientConfiguration;

/** What the load programs share: the client's configuration, the body and the keys (the JSON line: BenchResult). */
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
}
