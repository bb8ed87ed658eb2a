import java.util.Collection;
import java.util.List;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import rmqbench.BenchResult;

/**
 * Reads COUNT messages of a topic from offset 0 of every queue with the lite pull consumer
 * and prints throughput.
 *
 * <p>Usage: RocketConsume NAMESRV TOPIC COUNT
 */
public final class RocketConsume {
    private RocketConsume() {
    }

    public static void main(String[] args) {
        BenchMain.run(args, RocketConsume::run);
    }

    static void run(String[] args) throws Exception {
        String namesrv = args[0];
        String topic = args[1];
        long count = Long.parseLong(args[2]);
        DefaultLitePullConsumer consumer = new DefaultLitePullConsumer("bench_consumer_" + System.nanoTime());
        consumer.setNamesrvAddr(namesrv);
        consumer.setAutoCommit(false);
        consumer.setPullBatchSize(256);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.start();
        Collection<MessageQueue> queues = consumer.fetchMessageQueues(topic);
        consumer.assign(queues);
        long seen = 0;
        long bytes = 0;
        long t0 = System.nanoTime();
        long idleSince = System.nanoTime();
        while (seen < count) {
            List<MessageExt> msgs = consumer.poll(1000);
            if (msgs.isEmpty()) {
                if (System.nanoTime() - idleSince > 30_000_000_000L) {
                    break;
                }
                continue;
            }
            idleSince = System.nanoTime();
            for (MessageExt m : msgs) {
                bytes += m.getBody().length;
            }
            seen += msgs.size();
        }
        long nanos = System.nanoTime() - t0;
        consumer.shutdown();
        var out = BenchResult.figures(seen, bytes, nanos, null, 0);
        out.put("expected", count);
        BenchResult.print(out);
        System.exit(seen >= count ? 0 : 1);
    }
}
