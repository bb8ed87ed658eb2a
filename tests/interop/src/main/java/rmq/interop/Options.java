package rmq.interop;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** Command-line arguments: positional values, `--name value` options and bare `--flag`s. */
final class Options {
    private final List<String> positional = new ArrayList<>();
    private final Map<String, String> values = new HashMap<>();
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
                positional.add(arg);
                continue;
            }
            String name = arg.substring(2);
            if (flagNames.contains(name)) {
                flags.add(name);
            } else if (valueNames.contains(name)) {
                if (i + 1 >= args.length) {
                    throw new UsageException("option " + arg + " needs a value");
                }
                values.put(name, args[++i]);
            } else {
                throw new UsageException("unknown option " + arg);
            }
        }
    }

    String positional(int index, String what) {
        if (index >= positional.size()) {
            throw new UsageException("missing " + what);
        }
        return positional.get(index);
    }

    boolean flag(String name) {
        return flags.contains(name);
    }

    String value(String name, String fallback) {
        return values.getOrDefault(name, fallback);
    }

    /** An integer option, or null when it was not given. */
    Integer intValue(String name) {
        String text = values.get(name);
        if (text == null) {
            return null;
        }
        try {
            return Integer.valueOf(text);
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
