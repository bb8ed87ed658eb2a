"""The tests' Spark: a small local session (two cores, two shuffle partitions, no UI, UTC)
with rmq's data source registered, for one test module at a time."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import pytest
import rmq.spark
from pyspark.sql import SparkSession

# pyspark, pyarrow and a JDK are test requirements (scripts/test-all installs the first
# two; Java 17 is a prerequisite of the README): missing, the Spark tests fail, never skip.
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.fail("Spark needs Java 17 (java on PATH or JAVA_HOME)", pytrace=False)
# The sessions carry the JVM reader, as a user's does once it is built: format("rmq") is
# then the JVM provider, which hands streams, writes and tier reads to the Python source.
if not rmq.spark.jvm_jars():
    pytest.fail(
        "the JVM reader is not built: run scripts/build-spark-jvm (scripts/test-all does)",
        pytrace=False,
    )


@contextmanager
def local_spark(app: str, executor_env: Mapping[str, str] | None = None) -> Iterator[SparkSession]:
    """A ``local[2]`` session named ``app``, stopped on exit. ``executor_env``: variables
    handed to the Python workers explicitly (they take their environment from the JVM,
    which an earlier module's session may have started before the test set them)."""
    builder = (
        SparkSession.builder.master("local[2]")
        .appName(app)
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.host", "127.0.0.1")
        # Only the first session of a test run starts the JVM, and only then do these
        # reach the driver's classpath: every session names them alike.
        .config("spark.jars", ",".join(rmq.spark.jvm_jars()))
    )
    for name, value in (executor_env or {}).items():
        builder = builder.config(f"spark.executorEnv.{name}", value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    rmq.spark.register(session)
    try:
        yield session
    finally:
        session.stop()
