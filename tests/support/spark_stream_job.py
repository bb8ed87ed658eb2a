"""A streaming query from an rmq topic into Parquet, in its own process: the tests kill it
(SIGKILL, as a crashed driver) or run it against a Spark standalone cluster.

    python -m tests.support.spark_stream_job --master local[1] --endpoint HOST:PORT \
        --topic T --out DIR --checkpoint DIR [--available-now] [--max-offsets N]

Prints ``started`` once the query runs. With ``--available-now`` it exits when the query
has read everything there was when it started; otherwise it runs until killed.
"""

from __future__ import annotations

import argparse
import os
import sys

import rmq.spark
from pyspark.sql import SparkSession


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--master", required=True)
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--available-now", action="store_true")
    parser.add_argument("--max-offsets", type=int, default=0)
    parser.add_argument("--trigger-ms", type=int, default=300)
    args = parser.parse_args()

    builder = (
        SparkSession.builder.master(args.master)
        .appName("rmq-stream-job")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        # The JVM stream's jar, shipped to the executors too (a standalone worker has it
        # from here, not from its own classpath).
        .config("spark.jars", ",".join(rmq.spark.jvm_jars()))
    )
    if args.master.startswith("spark://"):
        # The executors' Python workers must import rmq from the same place as this one.
        builder = builder.config("spark.executorEnv.PYTHONPATH", os.pathsep.join(sys.path))
        builder = builder.config("spark.executor.memory", "512m")
        builder = builder.config("spark.cores.max", "1")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    rmq.spark.register(spark)
    reader = spark.readStream.format("rmq").option("endpoint", args.endpoint)
    reader = reader.option("topic", args.topic)
    if args.max_offsets:
        reader = reader.option("maxOffsetsPerTrigger", str(args.max_offsets))
    writer = (
        reader.load()
        .writeStream.format("parquet")
        .option("path", args.out)
        .option("checkpointLocation", args.checkpoint)
    )
    if args.available_now:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{args.trigger_ms} milliseconds")
    query = writer.start()
    print("started", flush=True)
    query.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main()
