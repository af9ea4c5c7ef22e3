"""A SparkSession for a laptop or a small VM: quiet, no UI, UTC, few shuffle partitions, and
executors that run this interpreter (so they have pyarrow)."""

from __future__ import annotations

import os
import sys
import tempfile
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["local_session", "QUIET_LOG4J"]

QUIET_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
# Spark prints "Setting default log level" unless the shell's logger has a configured level.
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
"""


def _log4j_file() -> str:
    path = os.path.join(tempfile.gettempdir(), f"semcat-log4j2-quiet-{abs(hash(QUIET_LOG4J)) % 10**8}.properties")
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}"
        with open(tmp, "w") as fh:
            fh.write(QUIET_LOG4J)
        os.replace(tmp, path)  # atomic: concurrent sessions never read a half-written file
    return path


def local_session(app_name: str = "semcat", cores: str | int = "*", driver_memory: str = "2g",
                  shuffle_partitions: int = 4, quick_jvm: bool = True, conf: dict[str, Any] | None = None) -> SparkSession:
    """`SparkSession` on `local[cores]`. Static settings (memory, logging, JVM flags) only apply
    when this call starts the JVM; an already running session is returned as is, with the SQL
    settings set. `quick_jvm` compiles with C1 only: a faster start and first job, right for
    demos, tests and small jobs; pass False for long, heavy jobs. C1 alone reserves 48 MB of code
    cache, which a job of a few hundred Spark statements can fill (`semcat eval build`: "CodeCache is
    full. Compiler has been disabled" after 141 s, the rest of its new code then interpreted), so it
    is reserved at 256 MB (address space; pages are used as code is compiled). And it collects with
    the parallel (throughput) collector: the same build took 10% less JVM CPU than with G1, the
    default (docs/performance.md)."""
    from pyspark.sql import SparkSession

    # Spark warns when the hostname resolves to loopback; local mode needs no other address.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    settings: dict[str, Any] = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.memory": driver_memory,
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{_log4j_file()}"
                                         + (" -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=256m -XX:+UseParallelGC"
                                            if quick_jvm else ""),
        "spark.pyspark.python": sys.executable,
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.sql.session.timeZone": "UTC",
        # INT96 timestamps carry no Parquet statistics; micros do, so the catalog gets min/max.
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        "spark.sql.adaptive.coalescePartitions.enabled": "true",
        # Local files are written without a `.crc` checksum sibling each (the bridge moves only the
        # Parquet files out of its staging directory; Parquet has its own page checksums), and
        # committed with FileOutputCommitter v2 (task output moves straight to the output directory:
        # one rename per file instead of two) and no `_SUCCESS` marker. Together ~10% of the CPU of
        # a many-file job such as `semcat eval build`. v2 leaves partial output when a job fails,
        # which the bridge deletes (it writes into a private staging directory); pass
        # conf={"spark.hadoop.mapreduce.fileoutputcommitter.algorithm.version": "1", ...} for the
        # default behaviour in a session whose plain df.write must be atomic.
        "spark.hadoop.fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem",
        "spark.hadoop.mapreduce.fileoutputcommitter.algorithm.version": "2",
        "spark.hadoop.mapreduce.fileoutputcommitter.marksuccessfuljobs": "false",
    }
    settings.update(conf or {})
    builder = SparkSession.builder.master(f"local[{cores}]").appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    for key in ("spark.sql.shuffle.partitions", "spark.sql.session.timeZone",
                "spark.sql.parquet.outputTimestampType"):
        spark.conf.set(key, settings[key])
    return spark
