package rmq.v2client;

import com.google.gson.JsonObject;
import java.io.IOException;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;
import rmq.cli.Options;

/**
 * {@code push-consume}: a PushConsumer whose listener prints every delivery (with its
 * {@code "result"}) and returns SUCCESS, or FAILURE for the first {@code --fail-first K}
 * deliveries of each message so the broker redelivers it. Stops after {@code --count}
 * successful consumptions or {@code --max-seconds}, then allows a second for the acks and
 * up to {@code --close-seconds} (default 3) for closing the consumer.
 */
final class PushConsume extends Command {
    static final Set<String> FLAGS = Set.of();
    static final Set<String> VALUES = Set.of(
        "group", "count", "max-seconds", "fail-first", "tag-filter", "close-seconds");

    private static final long ACK_GRACE_MS = 1000;

    PushConsume(Clients clients, Options options) {
        super(clients, options);
    }

    @Override
    int run(Json out) throws Exception {
        int count = options.intValue("count", 1);
        int failFirst = options.intValue("fail-first", 0);
        CountDownLatch consumed = new CountDownLatch(count);
        Map<String, AtomicInteger> deliveries = new ConcurrentHashMap<>();
        AtomicInteger total = new AtomicInteger();
        long started = System.nanoTime();
        PushConsumer consumer = clients.provider.newPushConsumerBuilder()
            .setClientConfiguration(clients.configuration)
            .setConsumerGroup(options.required("group"))
            .setSubscriptionExpressions(Map.of(clients.topic, Clients.filter(options)))
            .setMessageListener((MessageView view) -> {
                String id = view.getMessageId().toString();
                int seen = deliveries.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet();
                total.incrementAndGet();
                ConsumeResult result = seen <= failFirst ? ConsumeResult.FAILURE : ConsumeResult.SUCCESS;
                JsonObject json = Json.message(view);
                json.addProperty("result", result.name());
                json.addProperty("seconds", (System.nanoTime() - started) / 1e9);
                out.print(json);
                if (result == ConsumeResult.SUCCESS) {
                    consumed.countDown();
                }
                return result;
            })
            .build();
        boolean all = consumed.await(options.intValue("max-seconds", 30), TimeUnit.SECONDS);
        // The client acks after the listener returns, asynchronously: give that a moment.
        Thread.sleep(ACK_GRACE_MS);
        boolean closed = close(consumer, options.intValue("close-seconds", 3));
        JsonObject done = new JsonObject();
        done.addProperty("done", true);
        done.addProperty("consumed", count - consumed.getCount());
        done.addProperty("deliveries", total.get());
        done.addProperty("complete", all);
        done.addProperty("closed", closed);
        out.print(done);
        return 0;
    }

    /**
     * Closing waits for the receives in flight, which the broker may hold for its whole
     * long-polling time; wait at most {@code seconds} (Main exits the process anyway).
     */
    private static boolean close(PushConsumer consumer, int seconds) throws InterruptedException {
        Thread closer = new Thread(() -> {
            try {
                consumer.close();
            } catch (IOException e) {
                System.err.println("rmq-v2client: closing the push consumer: " + e);
            }
        }, "push-consumer-close");
        closer.setDaemon(true);
        closer.start();
        closer.join(seconds * 1000L);
        return !closer.isAlive();
    }
}
