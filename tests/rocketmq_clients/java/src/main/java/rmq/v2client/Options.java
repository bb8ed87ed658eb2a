package rmq.v2client;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Command-line arguments after the command name: {@code --name value} options (a name
 * may repeat, e.g. {@code --property a=1 --property b=2}) and bare {@code --flag}s.
 */
final class Options {
    private final Map<String, List<String>> values = new HashMap<>();
    private final Set<String> flags = new HashSet<>();

    /**
     * @param args the arguments after the command name
     * @param flagNames options that take no value
     * @param valueNames options that take one value; anything else is rejected
     */
    Options(String[] args, Set<String> flagNames, Set<String> valueNames) {
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            if (!arg.startsWith("--")) {
                throw new UsageException("unexpected argument " + arg);
            }
            String name = arg.substring(2);
            if (flagNames.contains(name)) {
                flags.add(name);
            } else if (valueNames.contains(name)) {
                if (i + 1 >= args.length) {
                    throw new UsageException("option " + arg + " needs a value");
                }
                values.computeIfAbsent(name, k -> new ArrayList<>()).add(args[++i]);
            } else {
                throw new UsageException("unknown option " + arg);
            }
        }
    }

    boolean flag(String name) {
        return flags.contains(name);
    }

    /** The last value given for {@code name}, or {@code fallback}. */
    String value(String name, String fallback) {
        List<String> given = values.get(name);
        return given == null ? fallback : given.get(given.size() - 1);
    }

    /** A value that must be given. */
    String required(String name) {
        String value = value(name, null);
        if (value == null) {
            throw new UsageException("missing --" + name);
        }
        return value;
    }

    /** Every value given for {@code name}, in order. */
    List<String> all(String name) {
        return values.getOrDefault(name, List.of());
    }

    int intValue(String name, int fallback) {
        String text = value(name, null);
        if (text == null) {
            return fallback;
        }
        try {
            return Integer.parseInt(text);
        } catch (NumberFormatException e) {
            throw new UsageException("option --" + name + " needs an integer, got " + text);
        }
    }

    /** Bad command line: Main prints the message and the usage text. */
    static final class UsageException extends RuntimeException {
        UsageException(String message) {
            super(message);
        }
    }
}
