package rmq.interop;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;
import rmq.cli.Options;

/**
 * Entry point: {@code write} and {@code dump}. JSON lines go to the real stdout (or
 * {@code --out FILE}); System.out is pointed at stderr first so nothing RocketMQ prints
 * can end up in the JSON.
 */
public final class Main {
    private static final Set<String> VALUE_OPTIONS =
        Set.of("commitlog-segment-size", "cq-entries-per-file", "index-slots", "index-entries", "store-type", "out");

    private static final String USAGE = String.join("\n",
        "usage:",
        "  write STORE_DIR MESSAGES.jsonl [--abort] [--store-type FORM] [--compact-after N]",
        "        [sizes] [--out FILE]",
        "      append the messages, then shut down cleanly, or with --abort halt once",
        "      everything is dispatched (abort file left, like a copy of a running broker);",
        "      --compact-after N (rocksdb): after N input lines, run RocketMQ's compaction of",
        "      the consume queue (bottommost level: ZSTD), the rest stays in level 0 (LZ4)",
        "  dump STORE_DIR [--keys-from MESSAGES.jsonl] [--store-type FORM] [sizes] [--out FILE]",
        "      recover the store in place and print every message by queue and by key",
        "--store-type: the consume-queue form, file (RocketMQ's storeType default) or",
        "  rocksdb (defaultRocksDB, RocketMQ 5 only); write: file unless given, dump: the",
        "  form the files of consumequeue/ show unless given",
        "sizes (write defaults; dump reads them from the files when not given):",
        "  --commitlog-segment-size BYTES (65536)  --cq-entries-per-file N (16)",
        "  --index-slots N (32)  --index-entries N (128)");

    private Main() {
    }

    public static void main(String[] args) {
        PrintStream json = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        int status;
        try {
            status = run(args, json);
        } catch (Options.UsageException e) {
            System.err.println("rmq-interop: " + e.getMessage());
            System.err.println(USAGE);
            status = 64;
        } catch (Exception e) {
            System.err.println("rmq-interop: " + e);
            e.printStackTrace(System.err);
            status = 1;
        }
        json.flush();
        // RocketMQ leaves non-daemon service threads behind: exit explicitly.
        System.exit(status);
    }

    private static int run(String[] args, PrintStream stdout) throws Exception {
        if (args.length == 0) {
            throw new Options.UsageException("missing command");
        }
        String command = args[0];
        String[] rest = Arrays.copyOfRange(args, 1, args.length);
        switch (command) {
            case "write": {
                Set<String> names = new HashSet<>(VALUE_OPTIONS);
                names.add("compact-after");
                Options options = new Options(rest, Set.of("abort"), names);
                Path root = Path.of(options.positional(0, "STORE_DIR"));
                Path messages = Path.of(options.positional(1, "MESSAGES.jsonl"));
                StoreLayout layout = StoreLayout.fromOptions(options);
                Integer compactAfter = options.intValue("compact-after");
                if (compactAfter != null && layout.form != ConsumeQueueForm.ROCKSDB) {
                    throw new Options.UsageException("--compact-after needs --store-type rocksdb");
                }
                try (PrintStream out = output(options, stdout)) {
                    new StoreWriter(root, layout, out).write(messages, options.flag("abort"), compactAfter);
                }
                return 0;
            }
            case "dump": {
                Set<String> names = new HashSet<>(VALUE_OPTIONS);
                names.add("keys-from");
                Options options = new Options(rest, Set.of(), names);
                Path root = Path.of(options.positional(0, "STORE_DIR"));
                try (PrintStream out = output(options, stdout)) {
                    new StoreDumper(root, out).dump(options);
                }
                return 0;
            }
            case "help":
            case "--help":
                System.err.println(USAGE);
                return 0;
            default:
                throw new Options.UsageException("unknown command " + command);
        }
    }

    /** The JSON destination; closing it never closes the real stdout. */
    private static PrintStream output(Options options, PrintStream stdout) throws Exception {
        String file = options.value("out", null);
        if (file == null) {
            return new PrintStream(stdout, false, StandardCharsets.UTF_8) {
                @Override
                public void close() {
                    flush();
                }
            };
        }
        return new PrintStream(new FileOutputStream(file), false, StandardCharsets.UTF_8);
    }
}
