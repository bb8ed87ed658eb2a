package rmq.v2client;

import com.google.gson.JsonObject;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;
import rmq.cli.Options;

/**
 * {@code simple-consume}: a SimpleConsumer receives (up to 16 at a time) until it has
 * {@code --count} messages or {@code --max-seconds} have passed, printing and acking each
 * (unless {@code --no-ack}).
 */
final class SimpleConsume extends Command {
    static final Set<String> FLAGS = Set.of("no-ack");
    static final Set<String> VALUES = Set.of(
        "group", "count", "invisible-seconds", "max-seconds", "tag-filter", "await-seconds");

    private static final int BATCH = 16;

    SimpleConsume(Clients clients, Options options) {
        super(clients, options);
    }

    @Override
    int run(Json out) throws Exception {
        int count = options.intValue("count", 1);
        Duration invisible = Duration.ofSeconds(options.intValue("invisible-seconds", 30));
        long deadline = System.nanoTime() + options.intValue("max-seconds", 30) * 1_000_000_000L;
        boolean ack = !options.flag("no-ack");
        int received = 0;
        try (SimpleConsumer consumer = clients.simpleConsumer(options)) {
            while (received < count && System.nanoTime() < deadline) {
                List<MessageView> views = consumer.receive(Math.min(BATCH, count - received), invisible);
                for (MessageView view : views) {
                    out.print(Json.message(view));
                    if (ack) {
                        consumer.ack(view);
                    }
                    received++;
                }
            }
        }
        JsonObject done = new JsonObject();
        done.addProperty("done", true);
        done.addProperty("received", received);
        out.print(done);
        return 0;
    }
}
