"""The README and the docs pages it links work verbatim (issue 23, item 4; issue 36): every Python and
shell code block of README.md and of the pages in DOCS runs, in order (the README first, then the pages
as listed: a later page's block may use what an earlier one made), in a temporary directory, with
`semcat` resolved to the venv's (this tree on PYTHONPATH), or is marked with why it cannot run in a test.
The README stays a newcomer's page (at most 300 lines), and every relative link of the README and of
docs/ resolves to a file of this repository (nothing points outside it).

A block's marker is an HTML comment on the line right before its fence (a reader of the rendered
README does not see it):

    <!-- readme-test: skip (reason) -->        not run; the reason is required (a long build, a
                                               server on a fixed port, a synopsis with placeholders)
    <!-- readme-test: demo-lake -->            run in a directory holding `demo-data`, a copy of the
                                               demo lake (SEMCAT_EVAL_LAKE); a Python block gets
                                               `cat` (the stale catalog) and `v` (its latest vid)

Unmarked blocks run on a fresh directory: Python blocks in one interpreter, in order (a later block
uses what an earlier one made), shell blocks with bash -e. A block that is neither runnable nor
marked with a reason fails the test."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CODE = ("python", "sh", "bash")
_MARK = re.compile(r"<!--\s*readme-test:\s*(skip|demo-lake)\s*(?:\((.*?)\))?\s*-->")


@dataclass
class Block:
    line: int | str    # 1-based line of the opening fence (README.md), or "page:line"
    lang: str
    text: str
    mark: str | None   # skip | demo-lake | None
    reason: str | None


# The pages whose blocks run, in the order they run (the README's sections before issue 36 split them out).
DOCS = ("README.md", "docs/engine.md", "docs/sql.md", "docs/spark.md", "docs/iceberg.md", "docs/branches.md",
        "docs/semantic.md", "docs/agents.md", "docs/evaluation.md", "docs/command-line.md", "docs/performance.md")
README_MAX_LINES = 300


def readme_blocks() -> list[Block]:
    """Every fenced block of the README and the DOCS pages, in order, with its language and marker."""
    return [b for page in DOCS for b in page_blocks(page)]


def page_blocks(page: str) -> list[Block]:
    """Every fenced block of one page; `line` is "page:line" for pages other than the README."""
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        lines = f.read().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"^```(\w*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        start = i
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        prev = lines[start - 1] if start > 0 else ""
        mk = _MARK.search(prev)
        where: int | str = start + 1 if page == "README.md" else f"{page}:{start + 1}"
        out.append(Block(where, m.group(1), "\n".join(lines[start + 1:j]) + "\n",
                         mk.group(1) if mk else None, (mk.group(2) or "").strip() if mk else None))
        i = j + 1
    return out


def test_every_code_block_is_runnable_or_says_why_not():
    blocks = [b for b in readme_blocks() if b.lang in CODE]
    assert len(blocks) >= 10
    unmarked_reasons = [b.line for b in blocks if b.mark == "skip" and not b.reason]
    assert not unmarked_reasons, f"README blocks at lines {unmarked_reasons}: a skip needs a (reason)"
    bare = [b.line for b in readme_blocks() if b.lang == "" and b.mark is None and _looks_like_code(b.text)]
    assert not bare, f"README blocks at lines {bare} look like code: give them a language (python, sh) or a marker"


def _looks_like_code(text: str) -> bool:
    first = text.lstrip().split("\n", 1)[0]
    return first.startswith(("semcat ", "import ", "from ", "$ "))


def _env(tmp: str) -> dict[str, str]:
    venv_bin = os.path.dirname(sys.executable)
    return dict(os.environ, PYTHONPATH=ROOT, PATH=venv_bin + os.pathsep + os.environ.get("PATH", ""), HOME=tmp)


def _run_python(blocks: list[Block], cwd: str, prelude: str = "") -> None:
    """All `blocks` in one interpreter, in order; a failure names the block's README line."""
    parts = [prelude]
    for b in blocks:
        where = b.line if isinstance(b.line, str) else f"README.md:{b.line}"
        parts.append(f"print('== block at {where}', flush=True)\n"
                     f"exec(compile({b.text!r}, {where!r}, 'exec'))\n")
    script = os.path.join(cwd, "readme_blocks.py")
    with open(script, "w", encoding="utf-8") as f:
        f.write("\n".join(parts))
    run = subprocess.run([sys.executable, script], cwd=cwd, env=_env(cwd), capture_output=True, text=True,
                         timeout=900)
    assert run.returncode == 0, (run.stdout[-1500:], run.stderr[-3000:])


def _run_shell(b: Block, cwd: str) -> None:
    run = subprocess.run(["bash", "-e", "-c", b.text], cwd=cwd, env=_env(cwd), capture_output=True, text=True,
                         timeout=900)
    assert run.returncode == 0, f"README shell block at line {b.line} failed:\n{run.stdout[-1500:]}\n{run.stderr[-3000:]}"
    assert shutil.which("semcat", path=_env(cwd)["PATH"]) is not None


def test_every_runnable_block_runs_on_a_fresh_directory(tmp_path):
    blocks = [b for b in readme_blocks() if b.lang in CODE and b.mark is None]
    assert [b for b in blocks if b.lang == "python"], "no runnable Python block"
    for b in blocks:
        if b.lang != "python":
            _run_shell(b, str(tmp_path))
    _run_python([b for b in blocks if b.lang == "python"], str(tmp_path))
    assert os.path.isdir(tmp_path / "data" / "catalog")


def test_demo_lake_blocks_run_on_a_copy_of_the_demo_lake(lake_dir, tmp_path):
    blocks = [b for b in readme_blocks() if b.lang in CODE and b.mark == "demo-lake"]
    assert blocks, "no README block runs on the demo lake"
    shutil.copytree(lake_dir, tmp_path / "demo-data", symlinks=True)
    for b in blocks:
        if b.lang != "python":
            _run_shell(b, str(tmp_path))
    prelude = ("import catalog_core as cc\ncat = cc.Catalog.open('demo-data/stale')\nv = cat.latest_vid\n")
    py = [b for b in blocks if b.lang == "python"]
    if py:
        _run_python(py, str(tmp_path), prelude)


def test_the_engine_in_five_minutes_block_runs_verbatim(tmp_path):
    [block] = [b.text for b in page_blocks("docs/engine.md")
               if b.lang == "python" and b.text.startswith("import catalog_core as cc\n\ncat = cc.Catalog.open(")]
    script = tmp_path / "engine.py"
    script.write_text(block, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=ROOT)
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "added /wh/sales_branch" not in run.stdout  # the diff is of /wh/sales only
    assert "earlier than the latest commit's time" in run.stdout  # the backdated commit's refusal, printed
    assert os.path.isdir(tmp_path / "data" / "catalog")


@pytest.mark.parametrize("mark", ["skip"])
def test_markers_are_read(mark):
    assert _MARK.search(f"<!-- readme-test: {mark} (a long build) -->").group(2) == "a long build"


def test_the_readme_is_a_newcomers_page():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        n = len(f.read().splitlines())
    assert n <= README_MAX_LINES, f"README.md has {n} lines; keep it under {README_MAX_LINES}, the rest in docs/"


_LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_every_relative_link_resolves_inside_the_repository():
    pages = ["README.md"] + sorted(os.path.join("docs", p) for p in os.listdir(os.path.join(ROOT, "docs"))
                                   if p.endswith(".md"))
    broken = []
    for page in pages:
        with open(os.path.join(ROOT, page), encoding="utf-8") as f:
            text = f.read()
        assert "../shared" not in text, f"{page} points at ../shared, which a clone does not have"
        for target in _LINK.findall(text):
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue  # a URL or an anchor on the same page
            path = os.path.normpath(os.path.join(ROOT, os.path.dirname(page), target.split("#", 1)[0]))
            if not path.startswith(ROOT + os.sep) or not os.path.exists(path):
                broken.append(f"{page}: {target}")
    assert not broken, "links that do not resolve in a clone: " + ", ".join(broken)
    assert len(pages) >= 10  # the README and its docs pages were read
