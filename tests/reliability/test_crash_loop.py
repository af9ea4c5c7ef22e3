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
