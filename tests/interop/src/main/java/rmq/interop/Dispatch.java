package rmq.interop;

import org.apache.rocketmq.store.DefaultMessageStore;

/** Waits for RocketMQ's reput thread to copy every commit-log record into CQs and index. */
final class Dispatch {
    private static final long TIMEOUT_MILLIS = 60_000;

    private Dispatch() {
    }

    static void awaitCaughtUp(DefaultMessageStore store) throws InterruptedException {
        long deadline = System.currentTimeMillis() + TIMEOUT_MILLIS;
        while (store.dispatchBehindBytes() > 0) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("RocketMQ's dispatch is still "
                    + store.dispatchBehindBytes() + " bytes behind after " + TIMEOUT_MILLIS + " ms");
            }
            Thread.sleep(10);
        }
    }
}
