package rmq.v2client;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.function.BiFunction;
import rmq.cli.Options;

/**
 * Entry point. JSON lines go to the real stdout; System.out is pointed at stderr before
 * the client loads, so its console log (and anything else printed) stays out of them.
 */
public final class Main {
    private static final String USAGE = String.join("\n",
        "usage: COMMAND --endpoint HOST:PORT --topic TOPIC [--request-timeout-seconds S] ...",
        "  produce --count N [--async] [--tag T] [--keys K1,K2] [--message-group G]",
        "          [--property K=V ...] [--body-prefix P] [--size BYTES]",
        "      send N messages with bodies P-<i> (padded with '.' to BYTES); one line per",
        "      receipt {i, message_id, offset, broker, client_queue_id}, then {done, sent, seconds}",
        "  simple-consume --group G --count N [--invisible-seconds S] [--max-seconds T]",
        "          [--no-ack] [--tag-filter EXPR] [--await-seconds A]",
        "      receive until N messages or T seconds; one line per message, then",
        "      {done, received}",
        "  push-consume --group G --count N [--max-seconds T] [--fail-first K]",
        "          [--tag-filter EXPR] [--close-seconds C]",
        "      a push consumer; one line per delivery with its result, FAILURE for the first",
        "      K deliveries of each message; stops after N successes or T seconds, a second",
        "      for the acks and at most C for closing; then",
        "      {done, consumed, deliveries, complete, closed}",
        "  redeliver --group G --invisible-seconds S [--max-seconds T] [--await-seconds A]",
        "      receive one message without acking it, receive until it comes back, ack it;",
        "      lines with delivery 1 and 2, then {done, received, redelivered}",
        "Failures print {error, message, causes} and exit 1.",
        "The client's logging (system properties): rocketmq.log.level (default warn),",
        "  mq.consoleAppender.enabled (default true: to stderr), rocketmq.log.root (the",
        "  directory of its rocketmq-client.log, default java.io.tmpdir)");

    /** A command's options (flags, and those taking a value) and how to make it. */
    private record Spec(Set<String> flags, Set<String> values, BiFunction<Clients, Options, Command> command) {
    }

    private static final Map<String, Spec> COMMANDS = Map.of(
        "produce", new Spec(Produce.FLAGS, Produce.VALUES, Produce::new),
        "simple-consume", new Spec(SimpleConsume.FLAGS, SimpleConsume.VALUES, SimpleConsume::new),
        "push-consume", new Spec(PushConsume.FLAGS, PushConsume.VALUES, PushConsume::new),
        "redeliver", new Spec(Redeliver.FLAGS, Redeliver.VALUES, Redeliver::new));

    private Main() {
    }

    public static void main(String[] args) {
        Json out = new Json(new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8));
        System.setOut(System.err);
        Logging.configure();
        int status;
        try {
            status = run(args, out);
        } catch (Options.UsageException e) {
            System.err.println("rmq-v2client: " + e.getMessage());
            System.err.println(USAGE);
            status = 64;
        } catch (Exception e) {
            Throwable cause = e instanceof java.util.concurrent.ExecutionException && e.getCause() != null ? e.getCause() : e;
            out.print(Json.error(cause));
            System.err.println("rmq-v2client: " + cause);
            cause.printStackTrace(System.err);
            status = 1;
        }
        Logging.flush();
        // The client leaves non-daemon threads behind: exit explicitly.
        System.exit(status);
    }

    private static int run(String[] args, Json out) throws Exception {
        if (args.length == 0) {
            throw new Options.UsageException("missing command");
        }
        Spec spec = COMMANDS.get(args[0]);
        if (spec == null) {
            throw new Options.UsageException("unknown command " + args[0]);
        }
        Options options = options(Arrays.copyOfRange(args, 1, args.length), spec.flags(), spec.values());
        return spec.command().apply(new Clients(options), options).run(out);
    }

    private static Options options(String[] args, Set<String> flags, Set<String> values) {
        Set<String> names = new HashSet<>(values);
        names.addAll(Clients.COMMON_OPTIONS);
        Set<String> flagNames = new HashSet<>(flags);
        flagNames.addAll(Clients.COMMON_FLAGS);
        Options options = new Options(args, flagNames, names);
        options.noPositional();
        return options;
    }
}
