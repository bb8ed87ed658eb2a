package rmq.v2client;

import java.time.Duration;
import java.util.Map;
import java.util.Set;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientException;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import rmq.cli.Options;

/** What every command shares: the access point, the topic and the client's settings. */
final class Clients {
    /** Options every command takes. */
    static final Set<String> COMMON_OPTIONS = Set.of("endpoint", "topic", "request-timeout-seconds");
    /**
     * Flags every command takes: {@code --tls} connects over TLS. The client trusts any
     * server certificate (it builds its TLS context with an insecure trust manager), so
     * this proves the traffic is TLS, not which certificate the broker showed.
     */
    static final Set<String> COMMON_FLAGS = Set.of("tls");

    final ClientServiceProvider provider = ClientServiceProvider.loadService();
    final ClientConfiguration configuration;
    final String topic;
    final Duration requestTimeout;

    Clients(Options options) {
        this.topic = options.required("topic");
        this.requestTimeout = Duration.ofSeconds(options.intValue("request-timeout-seconds", 5));
        this.configuration = ClientConfiguration.newBuilder()
            .setEndpoints(options.required("endpoint"))
            .enableSsl(options.flag("tls"))
            .setRequestTimeout(requestTimeout)
            .build();
    }

    /** A tag filter: {@code *} (everything) unless {@code --tag-filter} says otherwise. */
    static FilterExpression filter(Options options) {
        return new FilterExpression(options.value("tag-filter", "*"), FilterExpressionType.TAG);
    }

    SimpleConsumer simpleConsumer(Options options) throws ClientException {
        return provider.newSimpleConsumerBuilder()
            .setClientConfiguration(configuration)
            .setConsumerGroup(options.required("group"))
            .setSubscriptionExpressions(Map.of(topic, filter(options)))
            .setAwaitDuration(Duration.ofSeconds(options.intValue("await-seconds", 2)))
            .build();
    }
}
