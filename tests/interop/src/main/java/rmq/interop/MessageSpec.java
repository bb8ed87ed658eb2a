package rmq.interop;

import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One line of the write command's input (JSON lines), filled in by Gson.
 *
 * <pre>
 * {"topic": "T", "queueId": 0, "tags": "TagA", "keys": ["k1", "k2"],
 *  "properties": {"UNIQ_KEY": "...", "color": "red"}, "body": "&lt;base64&gt;",
 *  "bornHost": "10.0.0.1:5000", "storeHost": "[fd00::10]:10911",
 *  "bornTimestamp": 1700000000000, "flag": 0, "sysFlag": 0, "reconsumeTimes": 0,
 *  "preparedTransactionOffset": 0}
 * </pre>
 *
 * A line with {@code "batch": [...]} is one MessageExtBatch: the line gives the topic,
 * queue, hosts, born time and batch-level properties; each member gives its own tags,
 * keys, properties, body and flag.
 */
final class MessageSpec {
    String topic;
    int queueId;
    String tags;
    List<String> keys;
    Map<String, String> properties;
    String body;
    String bornHost;
    String storeHost;
    Long bornTimestamp;
    int flag;
    int sysFlag;
    int reconsumeTimes;
    long preparedTransactionOffset;
    List<MessageSpec> batch;

    static final String DEFAULT_BORN_HOST = "127.0.0.1:50000";
    static final String DEFAULT_STORE_HOST = "127.0.0.1:10911";

    boolean isBatch() {
        return batch != null;
    }

    byte[] bodyBytes() {
        return body == null ? new byte[0] : Base64.getDecoder().decode(body);
    }

    String bornHostOrDefault() {
        return bornHost == null ? DEFAULT_BORN_HOST : bornHost;
    }

    String storeHostOrDefault() {
        return storeHost == null ? DEFAULT_STORE_HOST : storeHost;
    }

    long bornTimestampOrNow() {
        return bornTimestamp == null ? System.currentTimeMillis() : bornTimestamp;
    }

    /** User properties plus TAGS and KEYS, as a producer would send them. */
    Map<String, String> allProperties() {
        Map<String, String> all = new LinkedHashMap<>();
        if (properties != null) {
            all.putAll(properties);
        }
        if (tags != null) {
            all.put("TAGS", tags);
        }
        if (keys != null && !keys.isEmpty()) {
            all.put("KEYS", String.join(" ", keys));
        }
        return all;
    }
}
