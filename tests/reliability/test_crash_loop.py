"""The crash loop of bench/crash_loop.py with a small budget: 10 SIGKILLs of a real `semcat serve`
under concurrent commits, each followed by a restart on the same directory and a check that no
acknowledged commit was lost, nothing is partial and the counter did not drift."""

import pytest

from bench.crash_loop import CrashLoop

pytestmark = pytest.mark.slow


def test_ten_sigkills_under_commit_load_lose_nothing(tmp_path):
    loop = CrashLoop(str(tmp_path / "data"), writers=4, seed=17, log_path=str(tmp_path / "server.log"))
    counts = loop.run(kills=10)
    assert counts.violations == [], counts.violations
    assert counts.kills == 10 and counts.restarts == 10 and counts.checks == 11
    assert counts.acked >= 10 * 5  # the writers made progress between every two kills
    assert counts.final_pairs >= counts.acked  # acknowledged pairs, plus in-doubt ones that landed
    assert counts.final_pairs <= counts.acked + counts.in_doubt
    assert counts.final_pairs == counts.acked + counts.in_doubt_landed


def test_replicas_keep_serving_while_the_writer_is_killed(tmp_path):
    """Issue 47, item 2: two reading `semcat serve` replicas on the directory, never killed, are read all along
    while the writer is SIGKILLed 3 times and restarted; no read of them fails, and after each restart both,
    caught up, show every acknowledged commit. (slow: ~60 s quiet, three servers and four writers)"""
    loop = CrashLoop(str(tmp_path / "data"), writers=4, seed=23, log_path=str(tmp_path / "server.log"), replicas=2)
    counts = loop.run(kills=3)
    assert counts.violations == [], counts.violations
    assert counts.kills == 3 and counts.checks == 4 and counts.replica_checks == 2 * 4
    assert counts.replica_reads_writer_down > 0  # the replicas answered while the writer was down
    assert counts.final_pairs == counts.acked + counts.in_doubt_landed
