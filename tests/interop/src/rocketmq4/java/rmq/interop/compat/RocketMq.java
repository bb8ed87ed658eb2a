package rmq.interop.compat;

import java.io.IOException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.protocol.body.TopicConfigSerializeWrapper;
import org.apache.rocketmq.remoting.protocol.RemotingSerializable;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.MessageExtBrokerInner;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.stats.BrokerStatsManager;

/**
 * The calls whose signatures differ between RocketMQ lines, for 4.9.x.
 * The 5.x twin lives in src/rocketmq5 with exactly the same public methods.
 */
public final class RocketMq {
    private RocketMq() {
    }

    /** 4.9 has no topic table in the store: topics only matter to the broker. */
    public static DefaultMessageStore newStore(MessageStoreConfig config, Map<String, TopicConfig> topics)
        throws IOException {
        BrokerConfig brokerConfig = new BrokerConfig();
        // The stats manager is never started: the store only records counters in it.
        BrokerStatsManager stats = new BrokerStatsManager(brokerConfig.getBrokerClusterName(), false);
        return new DefaultMessageStore(config, stats, null, brokerConfig);
    }

    /** A broker-side message: in 4.9 the class lives in the store package. */
    public static MessageExt newInnerMessage() {
        return new MessageExtBrokerInner();
    }

    /**
     * Finishes what the broker's send processor does before storing (the encoded
     * property string and the tags hash), then appends the message.
     */
    public static PutMessageResult put(DefaultMessageStore store, MessageExt message) {
        MessageExtBrokerInner inner = (MessageExtBrokerInner) message;
        inner.setPropertiesString(MessageDecoder.messageProperties2String(inner.getProperties()));
        inner.setTagsCode(MessageExtBrokerInner.tagsString2tagsCode(inner.getTags()));
        return store.putMessage(inner);
    }

    public static long maxOffsetInQueue(DefaultMessageStore store, String topic, int queueId) {
        return store.getMaxOffsetInQueue(topic, queueId);
    }

    /** config/topics.json exactly as the broker's TopicConfigManager serializes it. */
    public static String topicsJson(Map<String, TopicConfig> topics) {
        TopicConfigSerializeWrapper wrapper = new TopicConfigSerializeWrapper();
        wrapper.setTopicConfigTable(new ConcurrentHashMap<>(topics));
        return wrapper.toJson(true);
    }

    public static Map<String, TopicConfig> parseTopicsJson(String json) {
        TopicConfigSerializeWrapper wrapper = RemotingSerializable.fromJson(json, TopicConfigSerializeWrapper.class);
        return wrapper == null || wrapper.getTopicConfigTable() == null ? Map.of() : wrapper.getTopicConfigTable();
    }
}
