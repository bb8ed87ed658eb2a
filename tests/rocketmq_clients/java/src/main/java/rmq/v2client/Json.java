package rmq.v2client;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.TreeMap;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.java.message.MessageViewImpl;
import org.apache.rocketmq.client.java.route.MessageQueueImpl;

/**
 * The output: one JSON object per line on the real stdout. Safe to call from the
 * client's consumption threads.
 */
final class Json {
    private static final Gson GSON = new GsonBuilder().serializeNulls().disableHtmlEscaping().create();

    private final PrintStream out;

    Json(PrintStream out) {
        this.out = out;
    }

    synchronized void print(JsonObject line) {
        out.println(GSON.toJson(line));
        out.flush();
    }

    /** A received message, every field the client exposes. */
    static JsonObject message(MessageView view) {
        JsonObject json = new JsonObject();
        json.addProperty("message_id", view.getMessageId().toString());
        json.addProperty("topic", view.getTopic());
        byte[] body = bytes(view.getBody());
        String text = utf8(body);
        if (text != null) {
            json.addProperty("body", text);
        } else {
            json.addProperty("body_b64", Base64.getEncoder().encodeToString(body));
        }
        json.addProperty("body_size", body.length);
        json.addProperty("tag", view.getTag().orElse(null));
        JsonArray keys = new JsonArray();
        view.getKeys().forEach(keys::add);
        json.add("keys", keys);
        JsonObject properties = new JsonObject();
        new TreeMap<>(view.getProperties()).forEach(properties::addProperty);
        json.add("properties", properties);
        json.addProperty("message_group", view.getMessageGroup().orElse(null));
        json.addProperty("delivery_timestamp", view.getDeliveryTimestamp().orElse(null));
        json.addProperty("delivery_attempt", view.getDeliveryAttempt());
        json.addProperty("born_host", view.getBornHost());
        json.addProperty("born_timestamp", view.getBornTimestamp());
        // Not in the API, only in the client's implementation: the message's queue offset,
        // and the queue the client received from (the broker and queue id of its request,
        // which need not be the message's own queue: the client keeps no other).
        if (view instanceof MessageViewImpl impl) {
            json.addProperty("offset", impl.getOffset());
            queue(json, impl.getMessageQueue(), "receive_queue_id");
        }
        return json;
    }

    /** The broker name and queue id of a queue the client addressed, when it has one. */
    static void queue(JsonObject json, MessageQueueImpl queue, String idName) {
        json.addProperty("broker", queue == null ? null : queue.getBroker().getName());
        json.addProperty(idName, queue == null ? null : queue.getQueueId());
    }

    /** A failure: the exception and its causes, innermost last. */
    static JsonObject error(Throwable error) {
        JsonObject json = new JsonObject();
        json.addProperty("error", error.getClass().getName());
        json.addProperty("message", String.valueOf(error.getMessage()));
        JsonArray causes = new JsonArray();
        for (Throwable cause = error.getCause(); cause != null && cause != error; cause = cause.getCause()) {
            causes.add(cause.getClass().getName() + ": " + cause.getMessage());
            if (cause.getCause() == cause) {
                break;
            }
        }
        json.add("causes", causes);
        return json;
    }

    private static byte[] bytes(ByteBuffer buffer) {
        ByteBuffer copy = buffer.duplicate();
        byte[] bytes = new byte[copy.remaining()];
        copy.get(bytes);
        return bytes;
    }

    /** The body as text when it is valid UTF-8, else null. */
    private static String utf8(byte[] body) {
        try {
            return StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT)
                .decode(ByteBuffer.wrap(body))
                .toString();
        } catch (CharacterCodingException e) {
            return null;
        }
    }
}
