"""Broker peers from their released jars: fetch with Maven, configure, start, stop.

``python -m bench.peers fetch|start|stop|status rocketmq|kafka`` does it by hand; the
benchmarks use :func:`bench.peers.rocketmq.RocketMQ` and :func:`bench.peers.kafka.Kafka`.
Jars land in ``bench/peers/.cache/`` (not committed); stores and logs in a temporary
directory that ``stop`` removes.
"""
