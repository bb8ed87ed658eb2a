package rmqbench;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;

/**
 * Produces COUNT messages (not timed, as V2Produce does), then reads them all with one
 * {@code SimpleConsumer} of a new group from THREADS threads: each receives up to BATCH
 * messages at a time (30 s invisible) and acks every one with {@code ackAsync}. The clock
 * runs from the first receive to the last ack's answer; prints msgs/s and the p50/p99 of
 * the receive calls that returned messages. The consumer's start is not timed.
 */
final class V2Consume {
    private static final Duration INVISIBLE = Duration.ofSeconds(30);
    private static final long STALL_NANOS = TimeUnit.SECONDS.toNanos(30);

    private V2Consume() {
    }

    /** Produce the backlog (not timed), then consume it (timed). */
    static Map<String, Object> run(String endpoint, String topic, long count, int size,
        String group, int threads, int batch, int inFlight) throws Exception {
        Map<String, Object> produced = V2Produce.run(endpoint, topic, count, size, inFlight);
        if (((Number) produced.get("failed")).longValue() > 0) {
            throw new IllegalStateException("producing the backlog failed: " + produced);
        }
        return consume(endpoint, topic, count, size, group, threads, batch);
    }

    static Map<String, Object> consume(String endpoint, String topic, long count, int size,
        String group, int threads, int batch) throws Exception {
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        SimpleConsumer consumer = provider.newSimpleConsumerBuilder()
            .setClientConfiguration(V2Common.configuration(endpoint))
            .setConsumerGroup(group)
            .setSubscriptionExpressions(Map.of(topic, FilterExpression.SUB_ALL))
            .setAwaitDuration(Duration.ofSeconds(5))
            .build();
        try {
            return receiveAll(consumer, count, size, threads, batch);
        } finally {
            consumer.close();
        }
    }

    private static Map<String, Object> receiveAll(SimpleConsumer consumer, long count, int size,
        int threads, int batch) throws InterruptedException {
        Set<String> seen = ConcurrentHashMap.newKeySet();
        AtomicLong answered = new AtomicLong();
        AtomicLong ackFailed = new AtomicLong();
        AtomicLong receiveFailed = new AtomicLong();
        AtomicLong end = new AtomicLong();
        CountDownLatch done = new CountDownLatch(1);
        long[] lat = new long[(int) count + 1];
        AtomicInteger receives = new AtomicInteger();
        long t0 = System.nanoTime();
        Thread[] workers = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            workers[t] = new Thread(() -> {
                long lastSeen = System.nanoTime();
                while (seen.size() < count && done.getCount() > 0) {
                    long s = System.nanoTime();
                    List<MessageView> got;
                    try {
                        got = consumer.receive(batch, INVISIBLE);
                    } catch (Exception e) {
                        receiveFailed.incrementAndGet();
                        got = List.of();
                    }
                    long e = System.nanoTime();
                    if (got.isEmpty()) {
                        if (e - lastSeen > STALL_NANOS) {
                            return;
                        }
                        continue;
                    }
                    lastSeen = e;
                    int slot = receives.getAndIncrement();
                    if (slot < lat.length) {
                        lat[slot] = e - s;
                    }
                    for (MessageView message : got) {
                        boolean fresh = seen.add(message.getMessageId().toString());
                        consumer.ackAsync(message).whenComplete((ok, error) -> {
                            if (error != null) {
                                ackFailed.incrementAndGet();
                            }
                            if (fresh && answered.incrementAndGet() == count) {
                                end.set(System.nanoTime());
                                done.countDown();
                            }
                        });
                    }
                }
            }, "receiver-" + t);
            workers[t].start();
        }
        for (Thread worker : workers) {
            worker.join();
        }
        boolean complete = done.await(60, TimeUnit.SECONDS);
        long nanos = (complete ? end.get() : System.nanoTime()) - t0;
        long got = complete ? count : answered.get();
        int n = Math.min(receives.get(), lat.length);
        Map<String, Object> out = BenchResult.figures(got, got * size, nanos, lat, n);
        out.put("receives", n);
        out.put("ack_failed", ackFailed.get());
        out.put("receive_failed", receiveFailed.get());
        out.put("distinct", seen.size());
        return out;
    }
}
