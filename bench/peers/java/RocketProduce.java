import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;
import rmqbench.BenchResult;

/**
 * Sends N messages (tag + one key each) to a RocketMQ 5 broker in batches per queue, from T
 * threads, and prints throughput and per-batch latency.
 *
 * <p>Usage: RocketProduce NAMESRV TOPIC COUNT BODY_SIZE BATCH THREADS
 */
public final class RocketProduce {
    private RocketProduce() {
    }

    public static void main(String[] args) {
        BenchMain.run(args, RocketProduce::run);
    }

    static void run(String[] args) throws Exception {
        String namesrv = args[0];
        String topic = args[1];
        final long count = Long.parseLong(args[2]);
        final int size = Integer.parseInt(args[3]);
        final int batch = Integer.parseInt(args[4]);
        int threads = Integer.parseInt(args[5]);

        DefaultMQProducer producer = new DefaultMQProducer("bench_producer");
        producer.setNamesrvAddr(namesrv);
        producer.setSendMsgTimeout(30000);
        producer.setCompressMsgBodyOverHowmuch(Integer.MAX_VALUE);
        producer.setMaxMessageSize(16 * 1024 * 1024);
        producer.start();
        final List<MessageQueue> queues = producer.fetchPublishMessageQueues(topic);
        final byte[] body = new byte[size];
        new Random(8).nextBytes(body);
        final String[] tags = {"TagA", "TagB", "TagC", "TagD"};

        final long batches = (count + batch - 1) / batch;
        final AtomicLong nextBatch = new AtomicLong();
        final long[] lat = new long[(int) batches];
        final AtomicLong failed = new AtomicLong();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        long t0 = System.nanoTime();
        for (int t = 0; t < threads; t++) {
            pool.execute(() -> {
                long b;
                while ((b = nextBatch.getAndIncrement()) < batches) {
                    long first = b * batch;
                    long last = Math.min(count, first + batch);
                    Collection<Message> msgs = new ArrayList<>((int) (last - first));
                    for (long i = first; i < last; i++) {
                        Message m = new Message(topic, tags[(int) (i & 3)], String.format("order-%09d", i), body);
                        msgs.add(m);
                    }
                    MessageQueue mq = queues.get((int) (b % queues.size()));
                    long s = System.nanoTime();
                    boolean ok = false;
                    for (int attempt = 0; attempt < 3 && !ok; attempt++) {
                        try {
                            SendResult r = batch == 1
                                ? producer.send(msgs.iterator().next(), mq)
                                : producer.send(msgs, mq);
                            ok = r.getSendStatus() == SendStatus.SEND_OK;
                        } catch (Exception e) {
                            System.err.println("send failed (attempt " + (attempt + 1) + "): " + e);
                            try {
                                Thread.sleep(200);
                            } catch (InterruptedException ie) {
                                Thread.currentThread().interrupt();
                            }
                        }
                    }
                    if (!ok) {
                        failed.incrementAndGet();
                    }
                    lat[(int) b] = System.nanoTime() - s;
                }
            });
        }
        pool.shutdown();
        pool.awaitTermination(1, TimeUnit.HOURS);
        long nanos = System.nanoTime() - t0;
        producer.shutdown();
        var out = BenchResult.figures(count, count * (long) size, nanos, lat, lat.length);
        out.put("failed_batches", failed.get());
        out.put("queues", queues.size());
        BenchResult.print(out);
        System.exit(failed.get() == 0 ? 0 : 1);
    }
}
