package rmq.interop;

import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.common.sysflag.MessageSysFlag;
import org.apache.rocketmq.store.CommitLogDispatcher;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.DispatchRequest;
import rmq.interop.compat.RocketMq;

/**
 * Watches RocketMQ's dispatch of commit-log records into consume queues and index: one
 * more dispatcher at the end of the store's list, so it sees every record the store
 * dispatches, during recovery (records past what the consume queues already held) and
 * from its reput thread (new puts).
 *
 * <p>It counts them, which tells whether RocketMQ read a store's consume queues as they
 * were or rebuilt them from the commit log, and it waits until they are all in the
 * consume queues: the RocksDB form writes them from a group-commit thread, after the
 * reput thread has moved on.
 */
final class Dispatch implements CommitLogDispatcher {
    private static final long TIMEOUT_MILLIS = 60_000;

    private final DefaultMessageStore store;
    private final AtomicLong records = new AtomicLong();
    /** End of the last record dispatched that a consume queue holds (not a prepared half). */
    private final AtomicLong queuedEnd = new AtomicLong();

    private Dispatch(DefaultMessageStore store) {
        this.store = store;
    }

    /** Starts watching; call before {@code load()}, which recovers and dispatches. */
    static Dispatch watch(DefaultMessageStore store) {
        Dispatch dispatch = new Dispatch(store);
        store.getDispatcherList().addLast(dispatch);
        return dispatch;
    }

    @Override
    public void dispatch(DispatchRequest request) {
        records.incrementAndGet();
        int transaction = MessageSysFlag.getTransactionValue(request.getSysFlag());
        if (transaction == MessageSysFlag.TRANSACTION_NOT_TYPE
            || transaction == MessageSysFlag.TRANSACTION_COMMIT_TYPE) {
            queuedEnd.accumulateAndGet(request.getCommitLogOffset() + request.getMsgSize(), Math::max);
        }
    }

    /** Records RocketMQ dispatched since {@link #watch}. */
    long records() {
        return records.get();
    }

    /**
     * Waits until the reput thread has dispatched the whole commit log and the consume
     * queues hold everything dispatched.
     */
    void awaitCaughtUp() throws InterruptedException {
        long deadline = System.currentTimeMillis() + TIMEOUT_MILLIS;
        while (store.dispatchBehindBytes() > 0 || RocketMq.consumeQueuesBehind(store, queuedEnd.get())) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("RocketMQ's dispatch is still "
                    + store.dispatchBehindBytes() + " bytes behind after " + TIMEOUT_MILLIS + " ms");
            }
            Thread.sleep(10);
        }
    }
}
