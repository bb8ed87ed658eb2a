"""Spark's Kafka source (``spark-sql-kafka-0-10``) for ``bench spark``'s streaming cases.

The connector is fetched with Maven (``bench/peers/spark_kafka/pom.xml``) in the version of
the installed pyspark; when Maven cannot resolve that version (a pyspark newer than what
the Maven repository holds), the version pinned in the pom is used and the results say so.
Only the jars pyspark does not ship go to ``spark.jars`` (the connector, its token
provider, ``kafka-clients``, ``commons-pool2``): Spark's own stay first on the classpath.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from bench.basics import NotMeasurable
from bench.peers.common import PEERS_DIR, fetch_jars

NAME = "spark_kafka"
ARTIFACT = "org.apache.spark:spark-sql-kafka-0-10_2.13"
_PINNED = re.compile(r"<spark\.version>([^<]+)</spark\.version>")
_VERSIONED = re.compile(r"^(?P<artifact>.+?)-\d[\w.]*(?:-[\w.]+)?\.jar$")


@dataclass(frozen=True)
class Connector:
    """The jars to give ``spark.jars`` and the connector's version."""

    jars: tuple[Path, ...]
    version: str
    spark_version: str

    @property
    def note(self) -> str:
        text = f"{ARTIFACT}:{self.version}"
        if self.version != self.spark_version:
            text += f" on Spark {self.spark_version} (Maven has no {self.spark_version} build)"
        return text


def pinned_version() -> str:
    found = _PINNED.search((PEERS_DIR / NAME / "pom.xml").read_text())
    assert found is not None, "spark_kafka/pom.xml names no spark.version"
    return found.group(1)


def _artifact(jar: Path) -> str:
    matched = _VERSIONED.match(jar.name)
    return matched.group("artifact") if matched else jar.stem


def _shipped() -> set[str]:
    """The artifacts pyspark's own jars directory holds."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    return {_artifact(jar) for jar in jars.glob("*.jar")}


def connector() -> Connector:
    """Fetch (once) and return the Kafka source's jars for the installed pyspark."""
    import pyspark

    spark_version = pyspark.__version__
    pinned = pinned_version()
    problems = []
    for version in dict.fromkeys([spark_version, pinned]):
        try:
            lib = fetch_jars(NAME, properties={"spark.version": version}, cache=f"{NAME}-{version}")
        except NotMeasurable as exc:
            problems.append(str(exc))
            continue
        shipped = _shipped()
        jars = tuple(sorted(j for j in lib.glob("*.jar") if _artifact(j) not in shipped))
        if not any(_artifact(j).startswith("spark-sql-kafka") for j in jars):
            problems.append(f"no spark-sql-kafka jar among {lib}")
            continue
        return Connector(jars, version, spark_version)
    raise NotMeasurable("Spark's Kafka source could not be fetched: " + "; ".join(problems))
