"""Spark analytics over rmq (and RocketMQ) store files.

``register(spark)`` makes ``spark.read.format("rmq").load(path)`` available: the commit-log
segments under ``path`` are decoded by the native engine into Arrow record batches, one
partition per segment. Schema, options, filter pushdown and error behaviour are described
in ``docs/spark.md``; streaming reads in ``docs/spark-streaming.md``, writes in
``docs/spark-writing.md``.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from rmq.spark.source import SCHEMA, RmqDataSource

__all__ = ["FILTER_PUSHDOWN_CONF", "SCHEMA", "RmqDataSource", "register"]

#: The Spark setting that lets Python data sources take over filters (pyspark 4.1+).
FILTER_PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(spark: SparkSession) -> None:
    """Register the ``rmq`` data source with ``spark``.

    Also sets ``FILTER_PUSHDOWN_CONF`` to true for the session: the reader takes topic,
    shard and store-time filters over, and pyspark refuses to run a reader that can take
    filters while the setting is off. Where it must stay off, read with
    ``.option("filter_pushdown", "false")``.
    """
    spark.conf.set(FILTER_PUSHDOWN_CONF, "true")
    spark.dataSource.register(RmqDataSource)
