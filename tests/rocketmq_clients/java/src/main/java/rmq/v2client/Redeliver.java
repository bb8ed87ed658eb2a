package rmq.v2client;

import com.google.gson.JsonObject;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;
import rmq.cli.Options;

/**
 * {@code redeliver}: a SimpleConsumer receives one message and does not ack it, then
 * receives until the same message comes back after its invisible duration, and acks it.
 * Prints both deliveries ({@code "delivery": 1} and {@code 2}); messages other than the
 * first that arrive meanwhile are printed with {@code "delivery": "other"} and left unacked.
 */
final class Redeliver extends Command {
    static final Set<String> FLAGS = Set.of();
    static final Set<String> VALUES = Set.of(
        "group", "invisible-seconds", "max-seconds", "tag-filter", "await-seconds");

    Redeliver(Clients clients, Options options) {
        super(clients, options);
    }

    @Override
    int run(Json out) throws Exception {
        int invisibleSeconds = options.intValue("invisible-seconds", 5);
        Duration invisible = Duration.ofSeconds(invisibleSeconds);
        long started = System.nanoTime();
        long deadline = started + options.intValue("max-seconds", 3 * invisibleSeconds + 20) * 1_000_000_000L;
        JsonObject done = new JsonObject();
        done.addProperty("done", true);
        try (SimpleConsumer consumer = clients.simpleConsumer(options)) {
            MessageView first = null;
            while (first == null && System.nanoTime() < deadline) {
                List<MessageView> views = consumer.receive(1, invisible);
                if (!views.isEmpty()) {
                    first = views.get(0);
                    out.print(delivery(first, 1, started));
                }
            }
            MessageView again = null;
            while (first != null && again == null && System.nanoTime() < deadline) {
                for (MessageView view : consumer.receive(1, invisible)) {
                    if (view.getMessageId().toString().equals(first.getMessageId().toString())) {
                        again = view;
                        out.print(delivery(again, 2, started));
                        consumer.ack(again);
                    } else {
                        JsonObject other = Json.message(view);
                        other.addProperty("delivery", "other");
                        out.print(other);
                    }
                }
            }
            done.addProperty("received", first != null);
            done.addProperty("redelivered", again != null);
        }
        out.print(done);
        return 0;
    }

    private static JsonObject delivery(MessageView view, int delivery, long started) {
        JsonObject json = Json.message(view);
        json.addProperty("delivery", delivery);
        json.addProperty("seconds", (System.nanoTime() - started) / 1e9);
        return json;
    }
}
