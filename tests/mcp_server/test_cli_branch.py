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
    assert out.exit_code == 2 and "conflict: /wh/sales/notes" in out.output
    with cc.Catalog.open(data_dir) as cat:
        with cat.transaction() as t:
            t.remove("/wh/sales/notes")
        latest = cat.latest_vid
    out = run("branch", "publish", "/wh/wap", "--drop", "--data", data_dir)
    assert out.exit_code == 0 and f"at vid {latest + 1}; /wh/wap dropped" in out.output
    with cc.Catalog.open(data_dir) as cat:
        assert cat.get("/wh/sales/orders").value["stats"]["row_count"] == 4 and cat.branches() == []
    out = run("branch", "drop", "/wh/wap", "--data", data_dir)
    assert out.exit_code == 2 and "not a branch" in out.output
    out = run("branch", "list", "--data", data_dir)
    assert out.output.strip() == "no branches"
