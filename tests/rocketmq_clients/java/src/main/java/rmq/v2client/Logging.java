package rmq.v2client;

/**
 * The client's own logging: a shaded logback it configures from system properties when
 * it first logs. Defaults here (each can be overridden with -D): warnings and errors on
 * the console, which Main has pointed at stderr, and a log file under
 * {@code rocketmq.log.root} instead of the home directory.
 */
final class Logging {
    private static final String SHADED_SLF4J = "org.apache.rocketmq.shaded.org.slf4j.LoggerFactory";

    private Logging() {
    }

    /** Before the client loads. */
    static void configure() {
        setDefault("rocketmq.log.level", "warn");
        setDefault("mq.consoleAppender.enabled", "true");
        setDefault("rocketmq.log.root", System.getProperty("java.io.tmpdir"));
    }

    /**
     * Before exiting: stop the logger context so the file appender (asynchronous) writes
     * out what it holds. Found by name: only some client releases shade logback there.
     */
    static void flush() {
        try {
            Object context = Class.forName(SHADED_SLF4J).getMethod("getILoggerFactory").invoke(null);
            context.getClass().getMethod("stop").invoke(context);
        } catch (ReflectiveOperationException | LinkageError e) {
            // No such logging in this client release: nothing to flush.
        }
    }

    private static void setDefault(String name, String value) {
        if (System.getProperty(name) == null) {
            System.setProperty(name, value);
        }
    }
}
