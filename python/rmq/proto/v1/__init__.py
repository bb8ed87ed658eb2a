"""rmq.v1: messages and services of the broker (generated; do not edit the *_pb2 files)."""
