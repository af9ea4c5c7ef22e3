"""`semcat branch create | list | diff | publish | drop` against a real data directory."""

from click.testing import CliRunner

import catalog_core as cc
from mcp_server.cli import main
from tests.helpers import lake


def run(*args):
    return CliRunner().invoke(main, list(args))


def test_branch_commands(data_dir):
    with cc.Catalog.open(data_dir) as cat:
        lake(cat)
    out = run("branch", "create", "/wh/sales", "/wh/wap", "--data", data_dir, "-m", "wap")
    assert out.exit_code == 0 and "branch /wh/wap of /wh/sales" in out.output
    out = run("branch", "list", "--data", data_dir)
    assert out.exit_code == 0 and out.output.startswith("/wh/wap\tsource /wh/sales")
    with cc.Catalog.open(data_dir) as cat:
        with cat.transaction() as t:
            t.merge("/wh/wap/orders", {"stats": {"row_count": {"op": "+", "val": 4}}})
            t.update("/wh/wap/notes", {"obj_type": "note"})
    out = run("branch", "diff", "/wh/wap", "--values", "--data", data_dir)
    assert out.exit_code == 0, out.output
    assert "updated  /wh/wap/orders" in out.output and "added    /wh/wap/notes" in out.output
    assert '+ {"obj_type": "note"}' in out.output and "2 change(s)" in out.output
    # a conflict: the same property set differently on main
    with cc.Catalog.open(data_dir) as cat:
        with cat.transaction() as t:
            t.update("/wh/sales/notes", {"obj_type": "note", "by": "main"})
    out = run("branch", "publish", "/wh/wap", "--data", data_dir)
    assert out.exit_code == 1 and "conflict: /wh/sales/notes" in out.output  # a failure (docs/cli.md)
    with cc.Catalog.open(data_dir) as cat:
        with cat.transaction() as t:
            t.remove("/wh/sales/notes")
        latest = cat.latest_vid
    out = run("branch", "publish", "/wh/wap", "--drop", "--data", data_dir)
    assert out.exit_code == 0 and f"at vid {latest + 1}; /wh/wap dropped" in out.output
    with cc.Catalog.open(data_dir) as cat:
        assert cat.get("/wh/sales/orders").value["stats"]["row_count"] == 4 and cat.branches() == []
    out = run("branch", "drop", "/wh/wap", "--data", data_dir)
    assert out.exit_code == 2 and "no branch 'wh.wap'" in out.output  # a name that names nothing: usage
    out = run("branch", "list", "--data", data_dir)
    assert out.output.strip() == "no branches"


def _semcat(*args, cwd=None):
    """The real `semcat` entry point of this venv, with this tree first on the path."""
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    exe = os.path.join(os.path.dirname(sys.executable), "semcat")
    env = dict(os.environ, PYTHONPATH=root)
    return subprocess.run([exe, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


def _acme(data_dir):
    with cc.Catalog.open(data_dir) as cat:
        with cat.transaction() as t:
            t.add("/acme", {"obj_type": "catalog", "properties": {}})
            t.add("/acme/core", {"obj_type": "namespace", "properties": {}})
            t.add("/acme/core/orders", {"obj_type": "table", "schema": {"schema_id": 0, "columns": [
                {"id": 1, "name": "order_id", "type": "bigint"}]}, "partition_by": [], "stats": {}})


def test_branch_takes_dotted_names_and_suggests_close_ones(data_dir):
    """`semcat branch` takes dotted names like every other command; an unknown branch or source
    gets did-you-mean (issue 23, item 5), through a real `semcat` process."""
    _acme(data_dir)
    out = _semcat("branch", "create", "acme.core", "acme.core__restate", "--data", data_dir)
    assert out.returncode == 0, out.stderr
    assert "branch /acme/core__restate of /acme/core" in out.stdout
    out = _semcat("branch", "diff", "acme.core__restat", "--data", data_dir)
    assert out.returncode == 2 and "no branch 'acme.core__restat'; did you mean 'acme.core__restate'?" in out.stderr
    out = _semcat("branch", "create", "acme.cor", "acme.x", "--data", data_dir)
    assert out.returncode == 2 and "did you mean 'acme.core'?" in out.stderr
    out = _semcat("branch", "list", "--prefix", "acme", "--data", data_dir)
    assert out.returncode == 0 and out.stdout.startswith("/acme/core__restate\tsource /acme/core")
    out = _semcat("branch", "drop", "acme.core__restate", "--data", data_dir)
    assert out.returncode == 0 and "dropped /acme/core__restate" in out.stdout


def test_unknown_catalog_gets_did_you_mean(data_dir, tmp_path):
    _acme(data_dir)
    out = _semcat("export", "osi", str(tmp_path / "m.yaml"), "--catalog", "acm", "--data", data_dir)
    assert out.returncode == 2 and "no catalog 'acm'; did you mean 'acme'?" in out.stderr
    out = _semcat("export", "osi", str(tmp_path / "m.yaml"), "--catalog", "zzzzzz", "--data", data_dir)
    assert out.returncode == 2 and "the catalog names are acme" in out.stderr


def test_progress_is_one_plain_line_per_step_when_piped(data_dir, tmp_path):
    """Piped stderr (not a terminal) gets plain progress lines, no carriage returns or cursor codes."""
    _acme(data_dir)
    import semantic as sm

    with cc.Catalog.open(data_dir) as cat:
        sm.annotate(cat, "acme.core.orders", {"description": "One row per order"}, author="alice")
    model = tmp_path / "m.yaml"
    out = _semcat("export", "osi", str(model), "--catalog", "acme", "--data", data_dir)
    assert out.returncode == 0, out.stderr
    text = model.read_text().replace("One row per order", "One row per order, placed or not")
    model.write_text(text)
    out = _semcat("import", "osi", str(model), "--data", data_dir, "--catalog", "acme")
    assert out.returncode == 0, out.stderr
    assert "\r" not in out.stderr and "\x1b[" not in out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert lines and all(": " in ln and "/" in ln for ln in lines), out.stderr


def test_plain_progress_prints_a_line_per_tenth_and_on_change():
    import io

    from mcp_server.cli.progress import PlainProgress, progress_bar

    buf = io.StringIO()
    assert isinstance(progress_bar(stream=buf), PlainProgress)  # a StringIO is not a terminal
    with PlainProgress(buf) as bar:
        t = bar.add_task("eval", total=100)
        for i in range(100):
            bar.advance(t)
            if i == 49:
                bar.update(t, description="stale @ lake")
    lines = buf.getvalue().splitlines()
    assert lines[0] == "eval: 0/100" and lines[-1] == "stale @ lake: 100/100"
    assert len(lines) == 12  # the start, ten tenths, the description change


def test_unknown_condition_gets_did_you_mean(data_dir, tmp_path):
    _acme(data_dir)
    out = _semcat("eval", "serve", "--data", data_dir, "--condition", "enrichd", "--out", str(tmp_path / "run"))
    assert out.returncode == 2 and "no condition 'enrichd'; did you mean 'enriched'?" in out.stderr
    out = _semcat("eval", "run", "--data", data_dir, "--conditions", "bare,stale+detekt", "--agent", "offline",
                  "--out", str(tmp_path / "out"))
    assert out.returncode == 2 and "did you mean 'stale+detect'?" in out.stderr
