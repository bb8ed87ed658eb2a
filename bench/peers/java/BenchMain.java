/**
 * The entry point every bench tool shares: a failure prints its stack trace and exits with
 * status 2, which the Python harness reports as the peer's error.
 */
final class BenchMain {
    private BenchMain() {
    }

    interface Tool {
        void run(String[] args) throws Exception;
    }

    static void run(String[] args, Tool tool) {
        try {
            tool.run(args);
        } catch (Throwable t) {
            t.printStackTrace();
            System.exit(2);
        }
    }
}
