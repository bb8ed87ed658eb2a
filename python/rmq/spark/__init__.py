"""Spark analytics over rmq (and RocketMQ) store files.

``register(spark)`` makes ``spark.read.format("rmq").load(path)`` available: the commit-log
segments under ``path`` are decoded by the native engine, one partition per segment.
Two readers serve that name: the JVM reader (``rmq-spark.jar``, built by
``scripts/build-spark-jvm``, put on Spark's classpath with ``jvm_jars()``) when the session
has it, the Python data source otherwise. The jar also streams from a broker
(``readStream`` with ``endpoint``) in the JVM; streams over store files and writes are
always the Python source's. Schema, options, filter pushdown and error behaviour are described in
``docs/spark.md``; streaming reads in ``docs/spark-streaming.md``, writes in
``docs/spark-writing.md``.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from rmq.spark.jvm import JVM_PROVIDER, jvm_jars, jvm_reader_loaded
from rmq.spark.source import SCHEMA, RmqDataSource

__all__ = [
    "FILTER_PUSHDOWN_CONF",
    "JVM_PROVIDER",
    "SCHEMA",
    "RmqDataSource",
    "jvm_jars",
    "jvm_reader_loaded",
    "register",
]

#: The Spark setting that lets Python data sources take over filters (pyspark 4.1+).
FILTER_PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


class _BehindJvmReader(RmqDataSource):
    """The Python source under the name the JVM reader hands streams and writes to: Spark
    refuses a Python source named like a JVM one on the classpath."""

    @classmethod
    def name(cls) -> str:
        return "rmq_python"


def register(spark: SparkSession) -> None:
    """Register the ``rmq`` data source with ``spark``.

    With the JVM reader on the session's classpath (``jvm_jars()`` in ``spark.jars``),
    ``format("rmq")`` is the JVM provider: it reads store files and streams from a broker
    itself and hands streams over store files, writes and ``tier_url`` reads to this
    Python source, registered as ``rmq_python``.
    Without it, the Python source is ``rmq`` and serves everything.

    Also sets ``FILTER_PUSHDOWN_CONF`` to true for the session: the reader takes topic,
    shard and store-time filters over, and pyspark refuses to run a reader that can take
    filters while the setting is off. Where it must stay off, read with
    ``.option("filter_pushdown", "false")``.
    """
    spark.conf.set(FILTER_PUSHDOWN_CONF, "true")
    spark.dataSource.register(_BehindJvmReader if jvm_reader_loaded(spark) else RmqDataSource)
