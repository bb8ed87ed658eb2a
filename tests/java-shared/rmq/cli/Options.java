package rmq.cli;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Command-line arguments after a command name, for the test harness's Java programs
 * (added to each Maven project as a source root): positional values, {@code --name value}
 * options (a name may repeat, e.g. {@code --property a=1 --property b=2}) and bare
 * {@code --flag}s. Anything not named is a usage error, never ignored.
 */
public final class Options {
    private final List<String> positional = new ArrayList<>();
    private final Map<String, List<String>> values = new HashMap<>();
    private final Set<String> flags = new HashSet<>();

    /**
     * @param args the arguments after the command name
     * @param flagNames options that take no value
     * @param valueNames options that take a value; any other option is rejected
     */
    public Options(String[] args, Set<String> flagNames, Set<String> valueNames) {
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
                values.computeIfAbsent(name, k -> new ArrayList<>()).add(args[++i]);
            } else {
                throw new UsageException("unknown option " + arg);
            }
        }
    }

    /** The positional value at {@code index}; {@code what} names it in the error. */
    public String positional(int index, String what) {
        if (index >= positional.size()) {
            throw new UsageException("missing " + what);
        }
        return positional.get(index);
    }

    /** Fails for a command that takes options only. */
    public void noPositional() {
        if (!positional.isEmpty()) {
            throw new UsageException("unexpected argument " + positional.get(0));
        }
    }

    public boolean flag(String name) {
        return flags.contains(name);
    }

    /** The last value given for {@code name}, or {@code fallback}. */
    public String value(String name, String fallback) {
        List<String> given = values.get(name);
        return given == null ? fallback : given.get(given.size() - 1);
    }

    /** A value that must be given. */
    public String required(String name) {
        String value = value(name, null);
        if (value == null) {
            throw new UsageException("missing --" + name);
        }
        return value;
    }

    /** Every value given for {@code name}, in order. */
    public List<String> all(String name) {
        return values.getOrDefault(name, List.of());
    }

    /** An integer option, or null when it was not given. */
    public Integer intValue(String name) {
        String text = value(name, null);
        if (text == null) {
            return null;
        }
        try {
            return Integer.valueOf(text);
        } catch (NumberFormatException e) {
            throw new UsageException("option --" + name + " needs an integer, got " + text);
        }
    }

    public int intValue(String name, int fallback) {
        Integer given = intValue(name);
        return given == null ? fallback : given;
    }

    /** A bad command line: the program prints the message and its usage text. */
    public static final class UsageException extends RuntimeException {
        public UsageException(String message) {
            super(message);
        }
    }
}
