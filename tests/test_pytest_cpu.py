"""bench.pytest_cpu charges each test the CPU of pytest's process and of the children it waited for, and
sums it per file (docs/testing.md)."""

from __future__ import annotations

import os
import subprocess
import sys

from bench.pytest_cpu import summary

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SPIN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}: pass\n"


def test_a_child_s_cpu_lands_on_the_test_that_waited_for_it_and_files_are_summed(tmp_path):
    tests = tmp_path / "t"
    tests.mkdir()
    (tests / "test_kid.py").write_text(
        "import subprocess, sys\n"
        f"def test_kid():\n    subprocess.run([sys.executable, '-c', {SPIN.format(s=1.0)!r}], check=True)\n"
        "def test_idle():\n    pass\n")
    (tests / "test_self.py").write_text("def test_self():\n" + "".join(f"    {line}\n" for line in SPIN.format(s=0.6).splitlines()))
    out = str(tmp_path / "cpu")
    env = {**os.environ, "PYTEST_CPU_OUT": out, "PYTHONPATH": ROOT}
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "bench.pytest_cpu",
                        str(tests)], cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    rows = {os.path.basename(r["file"]): r for r in summary(out)}
    assert set(rows) == {"test_kid.py", "test_self.py"}
    kid, me = rows["test_kid.py"], rows["test_self.py"]
    assert kid["tests"] == 2 and me["tests"] == 1
    assert kid["kids"] >= 0.9 and kid["self"] < 0.9           # the child's second, not pytest's
    assert me["self"] >= 0.55 and me["kids"] < 0.3            # pytest's own
    assert list(rows) == ["test_kid.py", "test_self.py"]       # most CPU first
    p = subprocess.run([sys.executable, "-m", "bench.pytest_cpu", str(tmp_path / "nothing")], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and "PYTEST_CPU_OUT=" in p.stderr
