"""rmq's benchmarks: rmq side by side with peers and the machine's limits (see README.md)."""
