"""What the supervisor and a shard process agree on, outside gRPC."""

# A shard process prints this and its bound port on stdout once it serves.
READY_PREFIX = "RMQ-SHARD-READY"
# Before that, it prints this and the loopback port of its own metrics (rmq.cluster.metrics).
METRICS_PREFIX = "RMQ-SHARD-METRICS"
# A shard process that cannot open its stores prints this and why on stdout, then exits.
FAILED_PREFIX = "RMQ-SHARD-FAILED"
# The token reaches shard processes through the environment, never the command line.
TOKEN_ENVIRONMENT = "RMQ_TOKEN"
# A shard process exits with this code when it cannot listen on its port.
EXIT_CANNOT_LISTEN = 4
