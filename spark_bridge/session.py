"""A SparkSession for a laptop or a small VM: quiet, no UI, UTC, few shuffle partitions, and
executors that run this interpreter (so they have pyarrow)."""

from __future__ import annotations

import os
import sys
import tempfile
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["local_session", "QUIET_LOG4J", "NOFORK_FS", "nofork_classes"]

# Hadoop's local file system, less a `chmod` process per file and directory (spark_bridge/java/)
NOFORK_FS = "semcat.spark.NoForkLocalFileSystem"
_NOFORK_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "java", "NoForkLocalFileSystem.java")

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


def _spark_jars() -> str | None:
    try:
        from pyspark.find_spark_home import _find_spark_home

        jars = os.path.join(_find_spark_home(), "jars")
    except Exception:  # noqa: BLE001 - no Spark home: the stock file system
        return None
    return jars if os.path.isdir(jars) else None


def nofork_classes() -> str | None:
    """A class directory holding `NOFORK_FS` (spark_bridge/java/NoForkLocalFileSystem.java), compiled
    once per source and Hadoop version with `javac` and kept under the temp directory; None when it
    cannot be had (no javac, no Hadoop jar, a failed compile): the session then keeps Hadoop's own
    RawLocalFileSystem.

    Why: pip's pyspark has no Hadoop native library, so RawLocalFileSystem.setPermission runs `chmod`
    in a new process, and Spark's Parquet writer sets permissions three times per file it writes (its
    partition directory, the file, the directory the task commits it to): `semcat eval build --scale
    enterprise` started ~7,000 chmod processes. A partitioned write of 900 files took 17.0 s of JVM CPU
    plus 17.2 s in the processes it started, and 8.9 s plus none with this class (docs/performance.md)."""
    import glob
    import hashlib
    import shutil
    import subprocess

    jars = _spark_jars()
    api = sorted(glob.glob(os.path.join(jars, "hadoop-client-api-*.jar"))) if jars else []
    javac = shutil.which("javac") or (os.path.join(os.environ["JAVA_HOME"], "bin", "javac")
                                      if os.environ.get("JAVA_HOME") else None)
    if not api or not os.path.exists(_NOFORK_SRC):
        return None
    with open(_NOFORK_SRC, "rb") as fh:
        key = hashlib.sha256(fh.read() + os.path.basename(api[-1]).encode()).hexdigest()[:16]
    out = os.path.join(tempfile.gettempdir(), f"semcat-nofork-{key}")
    if os.path.exists(os.path.join(out, *NOFORK_FS.split(".")) + ".class"):
        return out
    if not javac or not os.path.exists(javac):
        return None
    tmp = tempfile.mkdtemp(prefix=f"semcat-nofork-{key}-", dir=tempfile.gettempdir())
    try:
        done = subprocess.run([javac, "--release", "17", "-nowarn", "-cp", api[-1], "-d", tmp, _NOFORK_SRC],
                              capture_output=True, timeout=300)
        if done.returncode != 0:
            return None
        try:
            os.replace(tmp, out)  # atomic: a concurrent session compiled it too, or this one lands
        except OSError:
            pass
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out if os.path.isdir(out) else None


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
    default (docs/performance.md). Local files are written through `NOFORK_FS` when it can be
    compiled (`nofork_classes`): Hadoop's local file system without a `chmod` process per file."""
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
    nofork = nofork_classes()
    if nofork is not None:  # the same files and modes, without a process per file (nofork_classes)
        settings["spark.hadoop.fs.file.impl"] = NOFORK_FS
        settings["spark.driver.extraClassPath"] = nofork
    settings.update(conf or {})
    theirs = (conf or {}).get("spark.driver.extraClassPath")
    if nofork is not None and theirs:  # their class path, and the class
        settings["spark.driver.extraClassPath"] = os.pathsep.join([str(theirs), nofork])
    builder = SparkSession.builder.master(f"local[{cores}]").appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    for key in ("spark.sql.shuffle.partitions", "spark.sql.session.timeZone",
                "spark.sql.parquet.outputTimestampType"):
        spark.conf.set(key, settings[key])
    return spark
