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


# ------------------------------------------------------------------ no import cycles between files
CYCLE_PACKAGES = (*RANK, "bench")


def _module_files() -> dict[str, str]:
    out = {}
    for pkg in CYCLE_PACKAGES:
        for dirpath, _dirs, files in os.walk(os.path.join(ROOT, pkg)):
            for f in files:
                if f.endswith(".py"):
                    rel = os.path.relpath(os.path.join(dirpath, f), ROOT)[:-3].replace(os.sep, ".")
                    out[rel[:-len(".__init__")] if rel.endswith(".__init__") else rel] = os.path.join(dirpath, f)
    return out


def _imported(tree: ast.AST, pkg: str, known: set[str]) -> set[str]:
    """Module names a file imports (resolved against `known`), TYPE_CHECKING blocks left out."""
    found: set[str] = set()
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        for ch in ast.iter_child_nodes(node):
            if isinstance(ch, ast.If) and "TYPE_CHECKING" in ast.unparse(ch.test):
                todo.extend(ch.orelse)
                continue
            if isinstance(ch, ast.Import):
                found.update(a.name for a in ch.names)
            elif isinstance(ch, ast.ImportFrom):
                base = ch.module or ""
                if ch.level:
                    parts = pkg.split(".")
                    base = ".".join(parts[:len(parts) - ch.level + 1] + ([base] if base else []))
                found.update(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in ch.names)
            todo.append(ch)
    return found


def import_graph(sources: dict[str, str], known: set[str]) -> dict[str, set[str]]:
    """module -> the modules among `known` it imports, at any depth (inside functions too: a lazy
    import is still a dependency); imports under `if TYPE_CHECKING:` are left out (never run).
    `sources` maps a module name to its source text (a package's text starts with '#pkg')."""
    graph: dict[str, set[str]] = {}
    for name, text in sources.items():
        pkg = name if text.startswith("#pkg\n") else name.rsplit(".", 1)[0]
        deps = set()
        for m in _imported(ast.parse(text), pkg, known):
            while m and m not in known:
                m = m.rsplit(".", 1)[0] if "." in m else ""
            if m and m != name:
                deps.add(m)
        graph[name] = deps
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_no_import_cycles_between_files():
    files = _module_files()
    sources = {}
    for name, path in files.items():
        with open(path, encoding="utf-8") as f:
            sources[name] = ("#pkg\n" if path.endswith("__init__.py") else "") + f.read()
    found = cycles(import_graph(sources, set(files)))
    assert found == [], f"import cycles (move what both need into a module both import): {found}"


def test_the_cycle_check_catches_a_lazy_cycle_and_ignores_type_checking():
    sources = {"p": "#pkg\n", "p.a": "from p import b\n",
               "p.b": "def f():\n    from p.a import x\n",
               "p.c": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from p.a import y\n",
               "p.d": "from . import c\n"}
    graph = import_graph(sources, set(sources))
    assert graph["p.d"] == {"p.c"} and graph["p.c"] == set()
    assert cycles(graph) == [["p.a", "p.b"]]


# ------------------------------------------------------------------ no cycles between sub-packages
# A file-level graph without cycles can still tie two sub-packages together (eval.lake's build lazily
# imported eval.harness.translate while eval.harness imports eval.lake): neither can then be read, tested
# or moved without the other. The CLI (mcp_server/cli) may import any layer lazily, so its edges are left out.
def _unit(module: str, packages: set[str]) -> str:
    """The sub-package a module belongs to (`eval.lake` for `eval.lake.build`), or the module itself
    when it sits directly in a top-level package (`catalog_core.errors`)."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 and ".".join(parts[:2]) in packages else module


def package_graph(sources: dict[str, str], known: set[str], skip: tuple[str, ...] = ()) -> dict[str, set[str]]:
    """`import_graph` collapsed to sub-packages (see `_unit`), without the edges of modules inside `skip`."""
    packages = {m for m, text in sources.items() if text.startswith("#pkg\n")}
    out: dict[str, set[str]] = {}
    for m, deps in import_graph(sources, known).items():
        a = _unit(m, packages)
        out.setdefault(a, set())
        if any(_inside(m, s) for s in skip):
            continue
        out[a].update(b for b in (_unit(d, packages) for d in deps) if b != a)
    return out


def test_no_import_cycles_between_sub_packages():
    src = _sources()
    found = cycles(package_graph(src, set(src), skip=("mcp_server.cli",)))
    assert found == [], f"sub-packages that import each other (move the shared part down into one): {found}"


def test_the_package_check_catches_a_cycle_through_two_files():
    sources = {"e": "#pkg\n", "e.lake": "#pkg\n", "e.lake.build": "def f():\n    from e.harness.tr import t\n",
               "e.lake.names": "", "e.harness": "#pkg\n", "e.harness.tr": "from e.lake.names import N\n",
               "e.cli": "#pkg\n", "e.cli.main": "def g():\n    from e.harness import tr\n",
               "e.harness.run": "from e.cli import main\n"}
    assert cycles(import_graph(sources, set(sources))) == []  # no cycle between files
    assert cycles(package_graph(sources, set(sources))) == [["e.cli", "e.harness", "e.lake"]]
    assert cycles(package_graph(sources, set(sources), skip=("e.cli",))) == [["e.harness", "e.lake"]]


# ------------------------------------------------------------------ the remote client runs without the engine
def engine_paths(sources: dict[str, str], known: set[str], client: str, engine: str) -> list[str]:
    """The import chains (`a <- b <- ...`) by which a module inside `client` reaches a module inside
    `engine`, through imports at any depth. Only the imports a file writes are followed: the implicit
    import of a parent package (`catalog_core.errors` runs catalog_core/__init__.py) is not an edge."""
    graph = import_graph(sources, known)
    parent: dict[str, str] = {}
    todo = sorted(m for m in graph if _inside(m, client))
    seen = set(todo)
    while todo:
        m = todo.pop()
        for d in sorted(graph[m]):
            if d not in seen:
                seen.add(d)
                parent[d] = m
                todo.append(d)
    out = []
    for m in sorted(seen):
        if _inside(m, engine):
            chain = [m]
            while chain[-1] in parent:
                chain.append(parent[chain[-1]])
            out.append(" <- ".join(chain))
    return out


def test_the_remote_client_does_not_import_the_engine():
    """catalog_core.remote is the client of `semcat serve`: what it needs of the engine's types lives in
    public modules (catalog_core.model, catalog_core.frozen, ...), never in catalog_core._engine."""
    src = _sources()
    found = engine_paths(src, set(src), "catalog_core.remote", "catalog_core._engine")
    assert found == [], "catalog_core.remote reaches the private engine:\n" + "\n".join(found)


def test_the_engine_check_follows_a_chain():
    sources = {"c": "#pkg\nfrom c._engine import core\n", "c._engine": "#pkg\n", "c._engine.core": "",
               "c.model": "x = 1\n", "c.util": "def f():\n    from c._engine.core import K\n",
               "c.remote": "#pkg\n", "c.remote.client": "from c.model import x\nfrom c.util import f\n"}
    assert engine_paths(sources, set(sources), "c.remote", "c._engine") == [
        "c._engine.core <- c.util <- c.remote.client"]
    sources["c.util"] = ""
    assert engine_paths(sources, set(sources), "c.remote", "c._engine") == []


# ------------------------------------------------------------------ no private names across modules
def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _private_package(module: str) -> str | None:
    """The package a private module belongs to: 'catalog_core' for 'catalog_core._engine.txn' (the
    part before the first private component), None for a module with no private component."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        if _is_private(part):
            return ".".join(parts[:i])
    return None


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _defined(tree: ast.AST) -> set[str]:
    """Private names a file defines: functions, classes, assigned names and `self._x` attributes."""
    out: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.add(n.id)
        elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store):
            out.add(n.attr)
        elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Attribute):
            out.add(n.target.attr)
    return {x for x in out if _is_private(x)}


def private_uses(sources: dict[str, str], known: set[str]) -> list[str]:
    """Every use of another module's private name among `sources` (module name -> text, a package's
    text starting with '#pkg'), one line each:

    - importing a private module (a dotted path with a `_x` part) from outside the package that
      holds it (`catalog_core._engine` only from inside catalog_core);
    - `from m import _y` where `_y` is a function, class or variable of file `m` (not a submodule);
    - `x._y` where `_y` is defined in another of the files and not in this one (`H._log` on an
      object of another module's class). A private package is part of its parent's implementation:
      `catalog_core._engine`'s modules may use the private names of any catalog_core module;
    - importing `tests` (the test suite is not a library: shared lakes live in eval.fixtures)."""
    trees = {name: ast.parse(text) for name, text in sources.items()}
    defs = {name: _defined(tree) for name, tree in trees.items()}
    owners: dict[str, set[str]] = {}
    for name, names in defs.items():
        for x in names:
            owners.setdefault(x, set()).add(name)
    tops = {k.split(".")[0] for k in known}
    out: list[str] = []
    for name, tree in sorted(trees.items()):
        pkg = name if sources[name].startswith("#pkg\n") else name.rsplit(".", 1)[0]
        home = _private_package(name)
        for n in ast.walk(tree):
            if isinstance(n, (ast.Import, ast.ImportFrom)):
                out.extend(_import_problems(n, name, pkg, known, tops))
            elif (isinstance(n, ast.Attribute) and _is_private(n.attr) and isinstance(n.value, ast.Name)
                  and n.value.id not in ("self", "cls") and n.attr not in defs[name]):
                others = owners.get(n.attr, set())
                if others and not any(home is not None and _inside(o, home) for o in others):
                    out.append(f"{name}:{n.lineno} uses {n.value.id}.{n.attr}, private to {', '.join(sorted(others))}")
    return sorted(set(out))


def _import_problems(n: ast.Import | ast.ImportFrom, name: str, pkg: str, known: set[str], tops: set[str]) -> list[str]:
    """The private-name problems of one import statement in module `name` (package `pkg`)."""
    out: list[str] = []
    if isinstance(n, ast.Import):
        mods = [a.name for a in n.names]
    else:
        base = n.module or ""
        if n.level:
            parts = pkg.split(".")
            base = ".".join(parts[:len(parts) - n.level + 1] + ([base] if base else []))
        mods = [base]
        for a in n.names:
            if not _is_private(a.name):
                continue
            if f"{base}.{a.name}" in known:
                mods.append(f"{base}.{a.name}")
            elif base.split(".")[0] in tops:
                out.append(f"{name}:{n.lineno} imports {a.name} from {base} (a private name of another "
                           "file: make it public or move it)")
    for m in mods:
        if m.split(".")[0] == "tests" and not _inside(name, "tests"):
            out.append(f"{name}:{n.lineno} imports {m} (the test suite is not a library)")
        owner = _private_package(m)
        if owner is not None and m.split(".")[0] in tops and not _inside(name, owner):
            out.append(f"{name}:{n.lineno} imports {m}, private to {owner or 'its package'}")
    return out


def _sources() -> dict[str, str]:
    sources = {}
    for name, path in _module_files().items():
        with open(path, encoding="utf-8") as f:
            sources[name] = ("#pkg\n" if path.endswith("__init__.py") else "") + f.read()
    return sources


def test_no_private_names_across_modules():
    sources = _sources()
    found = private_uses(sources, set(sources))
    assert found == [], "private names used across modules:\n" + "\n".join(found)


def test_the_private_check_catches_each_kind():
    sources = {"p": "#pkg\n", "p._eng": "#pkg\n", "p._eng.core": "def _f(): pass\nclass K:\n    def _m(self): pass\n",
               "p._eng.other": "from p._eng.core import K\ndef g(k: K): k._m()\n",
               "p.a": "def _helper(): pass\n",
               "p.b": "from p.a import _helper\nfrom p import _eng\n",
               "p.c": "from p._eng.core import K\ndef g(k):\n    return k._m()\n",
               "q": "#pkg\n", "q.d": "import p._eng.core\nimport tests.x\n"}
    found = private_uses(sources, set(sources))
    assert [f.split(" ")[0] for f in found] == ["p.b:1", "p.c:3", "q.d:1", "q.d:2"], found


if __name__ == "__main__":  # python -m tests.test_layers: the cycles and private uses, one per line
    import sys

    src = _sources()
    problems = [" <-> ".join(c) for c in cycles(import_graph(src, set(src)))] + private_uses(src, set(src))
    print("\n".join(problems) or "no import cycles, no private names across modules")
    sys.exit(1 if problems else 0)


# ------------------------------------------------------------------ the eval's commands register from the eval
def test_the_cli_reaches_the_eval_package_only_through_eval_cli():
    """mcp_server/cli imports one module of `eval`: eval.cli, whose click group `semcat` adds lazily (issue 49:
    the eval commands register from the eval package, not module by module in mcp_server.cli)."""
    found = set()
    for dirpath, _dirs, files in os.walk(os.path.join(ROOT, "mcp_server", "cli")):
        for f in files:
            if f.endswith(".py"):
                with open(os.path.join(dirpath, f), encoding="utf-8") as fh:
                    tree = ast.parse(fh.read())
                found |= {name for name, _nested in _imports(tree) if name.split(".")[0] == "eval"}
    assert {n for n in found if not n.startswith("eval.cli")} == set(), found
    from click.testing import CliRunner

    from mcp_server.cli import main

    out = CliRunner().invoke(main, ["eval", "--help"])
    assert out.exit_code == 0 and {"build", "run", "serve", "score"} <= set(out.output.split())
