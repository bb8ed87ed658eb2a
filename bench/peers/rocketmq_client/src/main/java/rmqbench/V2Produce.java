package rmqbench;

import java.util.Map;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.producer.Producer;

/**
 * Sends COUNT messages (a tag and one key each) with {@code Producer.sendAsync}, at most
 * IN_FLIGHT unacknowledged at a time; prints msgs/s and the p50/p99 of each send's time
 * from the call to its receipt. The producer's start (routes, settings) is not timed.
 */
final class V2Produce {
    private V2Produce() {
    }

    static Map<String, Object> run(String endpoint, String topic, long count, int size,
        int inFlight) throws Exception {
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        byte[] body = V2Common.body(size);
        long[] lat = new long[(int) count];
        AtomicLong failed = new AtomicLong();
        AtomicReference<Throwable> firstError = new AtomicReference<>();
        Semaphore window = new Semaphore(inFlight);
        try (Producer producer = provider.newProducerBuilder()
            .setClientConfiguration(V2Common.configuration(endpoint))
            .setTopics(topic)
            .build()) {
            long inCall = 0;
            long waiting = 0;
            long t0 = System.nanoTime();
            for (long i = 0; i < count; i++) {
                Message message = provider.newMessageBuilder()
                    .setTopic(topic)
                    .setTag(V2Common.TAGS[(int) (i & 3)])
                    .setKeys(V2Common.key(i))
                    .setBody(body)
                    .build();
                long w = System.nanoTime();
                window.acquire();
                final int slot = (int) i;
                final long sent = System.nanoTime();
                waiting += sent - w;
                producer.sendAsync(message).whenComplete((receipt, error) -> {
                    lat[slot] = System.nanoTime() - sent;
                    if (error != null) {
                        failed.incrementAndGet();
                        firstError.compareAndSet(null, error);
                    }
                    window.release();
                });
                inCall += System.nanoTime() - sent;
            }
            if (!window.tryAcquire(inFlight, 10, TimeUnit.MINUTES)) {
                throw new IllegalStateException("sends still unanswered after 10 minutes");
            }
            long nanos = System.nanoTime() - t0;
            Map<String, Object> out = BenchResult.figures(count, count * size, nanos, lat, lat.length);
            out.put("failed", failed.get());
            // Where the sending thread's time went: in sendAsync itself, or waiting for
            // the window (the broker's answers); the rest is building messages.
            out.put("in_send_call_s", inCall / 1e9);
            out.put("waiting_for_window_s", waiting / 1e9);
            if (firstError.get() != null) {
                out.put("first_error", firstError.get().toString());
            }
            return out;
        }
    }
}
