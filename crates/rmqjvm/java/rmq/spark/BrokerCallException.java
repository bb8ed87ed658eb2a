package rmq.spark;

/** A call to a broker failed: its gRPC status code (as {@code grpc.StatusCode} numbers it)
 * and message ("what: why", as the Python client words it). Thrown by NativeBroker. */
public class BrokerCallException extends RuntimeException {
  static final int NOT_FOUND = 5;
  static final int OUT_OF_RANGE = 11;
  static final int UNAVAILABLE = 14;

  private final int code;

  public BrokerCallException(String message, int code) {
    super(message);
    this.code = code;
  }

  int code() {
    return code;
  }
}
