"""The README's "Engine in five minutes" block runs verbatim on a fresh directory (issue 23: its
last block crashed). Run as a script in a subprocess, from a new empty working directory."""

from __future__ import annotations

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def readme_python_blocks() -> list[str]:
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        return re.findall(r"```python\n(.*?)```", f.read(), re.S)


def test_the_engine_in_five_minutes_block_runs_verbatim(tmp_path):
    [block] = [b for b in readme_python_blocks() if b.startswith("import catalog_core as cc\n\ncat = cc.Catalog.open(")]
    script = tmp_path / "engine.py"
    script.write_text(block, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=ROOT)
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "added /wh/sales_branch" not in run.stdout  # the diff is of /wh/sales only
    assert "earlier than the latest commit's time" in run.stdout  # the backdated commit's refusal, printed
    assert os.path.isdir(tmp_path / "data" / "catalog")
