package rmq.v2client;

import com.google.gson.JsonObject;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageBuilder;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;
import org.apache.rocketmq.client.java.impl.producer.SendReceiptImpl;
import rmq.cli.Options;

/**
 * {@code produce}: sends {@code --count} messages with bodies {@code PREFIX-i}, one at a
 * time or all at once with {@code --async}, and prints each receipt in send order.
 */
final class Produce extends Command {
    static final Set<String> FLAGS = Set.of("async");
    static final Set<String> VALUES = Set.of(
        "count", "tag", "keys", "message-group", "property", "body-prefix", "size");

    Produce(Clients clients, Options options) {
        super(clients, options);
    }

    @Override
    int run(Json out) throws Exception {
        int count = options.intValue("count", 1);
        boolean async = options.flag("async");
        try (Producer producer = clients.provider.newProducerBuilder()
                .setClientConfiguration(clients.configuration)
                .setTopics(clients.topic)
                .build()) {
            long started = System.nanoTime();
            if (async) {
                List<CompletableFuture<SendReceipt>> pending = new ArrayList<>();
                for (int i = 0; i < count; i++) {
                    pending.add(producer.sendAsync(message(i)));
                }
                long timeout = clients.requestTimeout.toMillis() * 3;
                for (int i = 0; i < count; i++) {
                    out.print(receipt(i, pending.get(i).get(timeout, TimeUnit.MILLISECONDS)));
                }
            } else {
                for (int i = 0; i < count; i++) {
                    out.print(receipt(i, producer.send(message(i))));
                }
            }
            JsonObject done = new JsonObject();
            done.addProperty("done", true);
            done.addProperty("sent", count);
            done.addProperty("seconds", (System.nanoTime() - started) / 1e9);
            out.print(done);
        }
        return 0;
    }

    private Message message(int i) {
        MessageBuilder builder = clients.provider.newMessageBuilder()
            .setTopic(clients.topic)
            .setBody(body(i));
        String tag = options.value("tag", null);
        if (tag != null) {
            builder.setTag(tag);
        }
        String keys = options.value("keys", null);
        if (keys != null) {
            builder.setKeys(keys.split(","));
        }
        String group = options.value("message-group", null);
        if (group != null) {
            builder.setMessageGroup(group);
        }
        for (String property : options.all("property")) {
            int equals = property.indexOf('=');
            if (equals <= 0) {
                throw new Options.UsageException("--property needs KEY=VALUE, got " + property);
            }
            builder.addProperty(property.substring(0, equals), property.substring(equals + 1));
        }
        return builder.build();
    }

    /** {@code PREFIX-i}, padded with {@code .} to {@code --size} bytes when given. */
    private byte[] body(int i) {
        byte[] head = (options.value("body-prefix", "message") + "-" + i).getBytes(StandardCharsets.UTF_8);
        int size = options.intValue("size", 0);
        if (size <= head.length) {
            return head;
        }
        byte[] body = Arrays.copyOf(head, size);
        Arrays.fill(body, head.length, size, (byte) '.');
        return body;
    }

    private static JsonObject receipt(int i, SendReceipt receipt) {
        JsonObject json = new JsonObject();
        json.addProperty("i", i);
        json.addProperty("message_id", receipt.getMessageId().toString());
        // Not in the API, only in the client's implementation: the queue offset the broker
        // stored the message at, and the broker and queue the client sent it to (the broker
        // may store it in another of its queues: the receipt does not say).
        if (receipt instanceof SendReceiptImpl impl) {
            json.addProperty("offset", impl.getOffset());
            Json.queue(json, impl.getMessageQueue(), "client_queue_id");
        }
        return json;
    }
}
