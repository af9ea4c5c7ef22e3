"""local_session's file system: Hadoop's local one without a `chmod` process per file and directory
(spark_bridge/java/NoForkLocalFileSystem.java), writing the same files with the same modes."""

from __future__ import annotations

import os
import stat

import pytest


def _local_fs(spark):
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    return jvm, jvm.org.apache.hadoop.fs.FileSystem.get(jvm.java.net.URI("file:///"), conf)


def test_local_files_are_written_through_the_file_system_that_forks_no_chmod(spark, tmp_path):
    from spark_bridge.session import NOFORK_FS, nofork_classes

    if nofork_classes() is None:
        pytest.skip("no javac here: the session keeps Hadoop's RawLocalFileSystem")
    jvm, fs = _local_fs(spark)
    assert fs.getClass().getName() == NOFORK_FS
    out = str(tmp_path / "t")
    spark.range(0, 30).selectExpr("id", "cast(id % 3 as int) as p").write.partitionBy("p").parquet(out)
    umask = os.umask(0)
    os.umask(umask)
    parts = sorted(d for d in os.listdir(out) if d.startswith("p="))
    assert parts == ["p=0", "p=1", "p=2"]
    for d in parts:  # the modes Hadoop's chmod gave them: 0777 and 0666 less the umask
        assert stat.S_IMODE(os.stat(os.path.join(out, d)).st_mode) == 0o777 & ~umask
        for f in os.listdir(os.path.join(out, d)):
            assert stat.S_IMODE(os.stat(os.path.join(out, d, f)).st_mode) == 0o666 & ~umask
    assert spark.read.parquet(out).count() == 30


def test_set_permission_sets_the_bits_and_leaves_sticky_modes_to_hadoop(spark, tmp_path):
    from spark_bridge.session import nofork_classes

    if nofork_classes() is None:
        pytest.skip("no javac here: the session keeps Hadoop's RawLocalFileSystem")
    jvm, fs = _local_fs(spark)
    f = tmp_path / "f"
    f.write_text("x")
    for mode in (0o640, 0o755, 0o600, 0o444, 0o0):
        fs.setPermission(jvm.org.apache.hadoop.fs.Path(str(f)), jvm.org.apache.hadoop.fs.permission.FsPermission(mode))
        assert stat.S_IMODE(os.stat(f).st_mode) == mode
    d = tmp_path / "d"
    d.mkdir()
    fs.setPermission(jvm.org.apache.hadoop.fs.Path(str(d)), jvm.org.apache.hadoop.fs.permission.FsPermission(0o1777))
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o1777  # through Hadoop's chmod: java.nio has no sticky bit
