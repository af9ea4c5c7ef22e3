"""Layers import downward only (DESIGN.md, Layers): eval > spark_bridge > mcp_server > semantic >
catalog_core. Nothing outside catalog_core imports its private engine (`catalog_core._engine`).
The `semcat` CLI (mcp_server/cli) may import any layer lazily, inside its subcommands."""

import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RANK = {"catalog_core": 0, "semantic": 1, "mcp_server": 2, "spark_bridge": 3, "eval": 4}


def _modules():
    for pkg in RANK:
        for dirpath, _dirs, files in os.walk(os.path.join(ROOT, pkg)):
            for f in files:
                if f.endswith(".py"):
                    yield pkg, os.path.relpath(os.path.join(dirpath, f), ROOT)


def _imports(tree):
    """(module name, inside a function?) for every import in the file."""
    out = []

    def visit(node, nested):
        for child in ast.iter_child_nodes(node):
            inner = nested or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.Import):
                out.extend((a.name, inner) for a in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                out.append((child.module, inner))
                out.extend((f"{child.module}.{a.name}", inner) for a in child.names)
            visit(child, inner)

    visit(tree, False)
    return out


MODULES = sorted(_modules())


def test_the_walk_sees_every_layer():
    assert {pkg for pkg, _ in MODULES} >= {"catalog_core", "mcp_server", "spark_bridge"}


@pytest.mark.parametrize("pkg, rel", MODULES, ids=[m[1] for m in MODULES])
def test_imports_point_down(pkg, rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        tree = ast.parse(f.read(), rel)
    cli = rel.startswith(os.path.join("mcp_server", "cli"))
    for name, nested in _imports(tree):
        top = name.split(".")[0]
        if pkg != "catalog_core":
            assert not name.startswith("catalog_core._engine"), f"{rel} imports {name}: use catalog_core's public names"
        if top in RANK and RANK[top] > RANK[pkg]:
            assert cli and nested, f"{rel} imports {name}, a higher layer ({top} is above {pkg})"


def test_the_checker_catches_a_bad_import():
    tree = ast.parse("import os\ndef f():\n    from catalog_core._engine.storage import Store\n")
    assert ("catalog_core._engine.storage", True) in _imports(tree)
