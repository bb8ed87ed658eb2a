package rmq.v2client;

import rmq.cli.Options;

/**
 * One command of the tool (produce, simple-consume, push-consume, redeliver): its parsed
 * options and the clients built from them. Main picks the command by name.
 */
abstract class Command {
    protected final Clients clients;
    protected final Options options;

    Command(Clients clients, Options options) {
        this.clients = clients;
        this.options = options;
    }

    /** Runs the command, printing its JSON lines to {@code out}; the exit status. */
    abstract int run(Json out) throws Exception;
}
