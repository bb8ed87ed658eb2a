"""Where the JVM reader of ``spark.read.format("rmq")`` is, and whether a session has it.

The JVM reader (``crates/rmqjvm``: a DataSource V2 provider over the engine's segment
decoder, through JNI) reads store files in columns with no Python worker, and only the
columns a query needs. It is one jar with the native library inside, built by
``scripts/build-spark-jvm``; a session gets it with::

    SparkSession.builder.config("spark.jars", ",".join(rmq.spark.jvm_jars()))
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

__all__ = ["JVM_JAR", "JVM_PROVIDER", "jvm_jars", "jvm_reader_loaded"]

#: Where ``scripts/build-spark-jvm`` puts the jar.
JVM_JAR = Path(__file__).parent / "jvm" / "rmq-spark.jar"

#: The JVM provider's class (``format("rmq")`` finds it by its short name).
JVM_PROVIDER = "rmq.spark.RmqTableProvider"


def jvm_jars() -> list[str]:
    """The jars to put in ``spark.jars`` for the JVM reader: empty when it is not built
    (``format("rmq")`` then reads through the Python source)."""
    return [str(JVM_JAR)] if JVM_JAR.is_file() else []


def jvm_reader_loaded(spark: SparkSession) -> bool:
    """Whether ``spark``'s JVM can load the JVM reader (a Spark Connect session, which has
    no JVM here, cannot)."""
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        return False
    try:
        loader = jvm.org.apache.spark.util.Utils.getContextOrSparkClassLoader()
        jvm.java.lang.Class.forName(JVM_PROVIDER, False, loader)
    except Exception:  # py4j raises Py4JJavaError (ClassNotFoundException) and others
        return False
    return True
