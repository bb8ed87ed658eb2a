"""Generated gRPC code of rmq's API (``proto/rmq/v1``); regenerate with ``scripts/gen-proto``."""
