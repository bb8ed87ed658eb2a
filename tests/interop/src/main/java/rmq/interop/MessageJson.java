package rmq.interop;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;

/** A message as RocketMQ decoded it, as one JSON object with every stored field. */
final class MessageJson {
    private MessageJson() {
    }

    static JsonObject of(MessageExt message) {
        JsonObject json = new JsonObject();
        json.addProperty("kind", "message");
        json.addProperty("topic", message.getTopic());
        json.addProperty("queueId", message.getQueueId());
        json.addProperty("queueOffset", message.getQueueOffset());
        json.addProperty("commitLogOffset", message.getCommitLogOffset());
        json.addProperty("storeSize", message.getStoreSize());
        json.addProperty("bodyCRC", message.getBodyCRC());
        json.addProperty("sysFlag", message.getSysFlag());
        json.addProperty("flag", message.getFlag());
        json.addProperty("bornTimestamp", message.getBornTimestamp());
        json.addProperty("storeTimestamp", message.getStoreTimestamp());
        json.addProperty("bornHost", HostAddress.format((InetSocketAddress) message.getBornHost()));
        json.addProperty("storeHost", HostAddress.format((InetSocketAddress) message.getStoreHost()));
        json.addProperty("msgId", message.getMsgId());
        json.addProperty("reconsumeTimes", message.getReconsumeTimes());
        json.addProperty("preparedTransactionOffset", message.getPreparedTransactionOffset());
        json.addProperty("tags", message.getTags());
        JsonArray keys = new JsonArray();
        keysOf(message).forEach(keys::add);
        json.add("keys", keys);
        // Every property RocketMQ parsed, TAGS and KEYS included; sorted for stable output.
        JsonObject properties = new JsonObject();
        Map<String, String> sorted = new TreeMap<>(message.getProperties());
        sorted.forEach(properties::addProperty);
        json.add("properties", properties);
        byte[] body = message.getBody() == null ? new byte[0] : message.getBody();
        json.addProperty("body", Base64.getEncoder().encodeToString(body));
        return json;
    }

    /** The KEYS property split on single spaces, as the index builder splits it. */
    static List<String> keysOf(MessageExt message) {
        List<String> keys = new ArrayList<>();
        String joined = message.getProperty(MessageConst.PROPERTY_KEYS);
        if (joined != null) {
            for (String key : joined.split(MessageConst.KEY_SEPARATOR)) {
                if (!key.isEmpty()) {
                    keys.add(key);
                }
            }
        }
        return keys;
    }

    /** Every key the index holds for this message: its KEYS and its UNIQ_KEY. */
    static List<String> indexedKeysOf(MessageExt message) {
        List<String> keys = new ArrayList<>(keysOf(message));
        String uniqueKey = message.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX);
        if (uniqueKey != null && !uniqueKey.isEmpty()) {
            keys.add(uniqueKey);
        }
        return keys;
    }
}
