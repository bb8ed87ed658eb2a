package rmq.spark;

/** An engine error other than a corrupt record (I/O, a missing file ...), thrown by the
 * native decoder with the engine's message. */
public class RmqException extends RuntimeException {
  public RmqException(String message) {
    super(message);
  }
}
