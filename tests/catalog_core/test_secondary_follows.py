"""A reading process keeps following the catalog when other processes take the writer's turn one after
another (issue 47): a RocksDB secondary does not follow its primary into a new MANIFEST, and every
process that opens the primary afresh starts one. Before the fix the reader below stopped at the first
writer's commits (latest_vid 1 of 3) for good, so `semcat grant --data` beside a server went unseen."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import catalog_core as cc

HOLD = textwrap.dedent("""
    import sys, time, catalog_core as cc
    c = cc.open(sys.argv[1], create=True)
    print("open", flush=True)
    sys.stdin.readline()
    c.close()
""")
WRITE = textwrap.dedent("""
    import sys, catalog_core as cc
    c = cc.open(sys.argv[1])
    with c.transaction(author="w", message="w") as t:
        t.add("/n" + sys.argv[2], {"obj_type": "namespace"})
    c.close()
""")


def _env() -> dict[str, str]:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}


def _wait_vid(cat, want: int, deadline_s: float = 20.0) -> int:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end and cat.latest_vid < want:
        time.sleep(0.05)
    return cat.latest_vid


def test_a_reader_follows_writers_that_each_open_and_close(tmp_path):
    d = str(tmp_path / "cat")
    env = _env()
    holder = subprocess.Popen([sys.executable, "-c", HOLD, d], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              env=env, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        reader = cc.open(d)  # the holder is the writer: this process reads through a secondary
        try:
            assert reader.latest_vid == 0
            holder.communicate("\n", timeout=60)
            for i in (1, 2, 3):
                subprocess.run([sys.executable, "-c", WRITE, d, str(i)], env=env, check=True, timeout=120)
                assert _wait_vid(reader, i) == i
                assert reader.get(f"/n{i}") is not None
        finally:
            reader.close()
    finally:
        if holder.poll() is None:
            holder.kill()
