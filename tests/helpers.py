"""Helpers that test modules share (fixtures live in the conftest.py files): a small lake
written through any catalog, and oracles that check a table's stats against its Parquet files."""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import math
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from catalog_core.api import CatalogAPI

__all__ = ["free_port", "start_server", "lake", "Lake", "build_lake", "schema_columns", "ORDERS", "SCHEMA", "data_truth", "parquet_files", "expected_stats", "assert_stats_consistent"]


def lake(cat: CatalogAPI, files_per_part: int = 2) -> int:
    """A small lake: /wh/sales/orders partitioned by d, with file leaves."""
    with cat.transaction(author="test", message="lake") as t:
        t.add("/wh", {"obj_type": "catalog", "properties": {}})
        t.add("/wh/sales", {"obj_type": "namespace", "properties": {}})
        t.add("/wh/sales/orders", {"obj_type": "table", "partition_by": ["d"], "stats": {"row_count": 0}})
        for day in ("2001-06-01", "2001-06-02", "2001-06-03"):
            t.add(f"/wh/sales/orders/d={day}", {"obj_type": "partition", "d": day, "stats": {"row_count": 0}})
            for i in range(files_per_part):
                t.add(f"/wh/sales/orders/d={day}/f{i}", {"obj_type": "file", "path": f"{day}/f{i}.parquet",
                                                          "row_count": 10 * (i + 1),
                                                          "columns": {"price": {"min": i, "max": i + 5}}},
                      leaf=True)
    return t.vid


def _json(v):
    if isinstance(v, decimal.Decimal):
        return float(v)
    if isinstance(v, dt.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(dt.timezone.utc)
        return v.isoformat(timespec="microseconds")
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def data_truth(path: str) -> dict:
    """Row count, size and per-column min/max/null_count computed from the file's rows."""
    table = pq.read_table(path)
    cols = {}
    for name in table.column_names:
        col = table.column(name)
        mm = pc.min_max(col)
        cols[name] = {"min": _json(mm["min"].as_py()), "max": _json(mm["max"].as_py()),
                      "null_count": col.null_count}
    return {"row_count": table.num_rows, "size_bytes": os.path.getsize(path), "columns": cols}


def parquet_files(root: str) -> set[str]:
    return {os.path.join(r, f) for r, _d, fs in os.walk(root) for f in fs if f.endswith(".parquet")}


def expected_stats(files: list, partition_of) -> dict:
    """Sum over file leaves (partition columns as constants), computed independently of the bridge."""
    out = {"row_count": 0, "file_count": 0, "size_bytes": 0, "columns": {}}
    for f in files:
        v = f.value
        out["row_count"] += v["row_count"]
        out["file_count"] += 1
        out["size_bytes"] += v["size_bytes"]
        cols = dict(v["columns"])
        for col, val in partition_of(f).items():
            cols[col] = {"min": val, "max": val, "null_count": v["row_count"] if val is None else 0}
        for name, s in cols.items():
            cur = out["columns"].setdefault(name, {"min": None, "max": None, "null_count": 0})
            if s["min"] is not None and (cur["min"] is None or s["min"] < cur["min"]):
                cur["min"] = s["min"]
            if s["max"] is not None and (cur["max"] is None or s["max"] > cur["max"]):
                cur["max"] = s["max"]
            cur["null_count"] += s["null_count"]
    return out


def _stats_view(stats: dict) -> dict:
    return {"row_count": stats.get("row_count", 0), "file_count": stats.get("file_count", 0),
            "size_bytes": stats.get("size_bytes", 0),
            "columns": {c: {"min": s.get("min"), "max": s.get("max"), "null_count": s.get("null_count", 0)}
                        for c, s in (stats.get("columns") or {}).items()}}


def assert_stats_consistent(cat: CatalogAPI, name: str, vid=None) -> dict:
    """Table and every partition's stats equal the sum over the files below them."""
    tpath = "/" + name.replace(".", "/")
    table = cat.get(tpath, vid=vid).value
    files = cat.plan_files(name, vid=vid)
    pcols = table.get("partition_by") or []

    def partition_of(f):
        vals, path = {}, f.path.rsplit("/", 1)[0]
        while path != tpath:
            obj = cat.get(path, vid=vid).value
            col = pcols[path.count("/") - tpath.count("/") - 1]
            vals[col] = obj[col]
            path = path.rsplit("/", 1)[0]
        return vals

    assert _stats_view(table["stats"]) == expected_stats(files, partition_of)
    parts = set()
    for f in files:
        p = f.path.rsplit("/", 1)[0]
        while p != tpath:
            parts.add(p)
            p = p.rsplit("/", 1)[0]
    for p in parts:
        below = [f for f in files if f.path.startswith(p + "/")]
        assert _stats_view(cat.get(p, vid=vid).value["stats"]) == expected_stats(below, partition_of), p
    return table


# ------------------------------------------------------------------ a DuckDB test lake (real Parquet files)
ORDERS = "wh.sales.orders"
SCHEMA = [("id", "long"), ("price", "double"), ("d", "date"), ("note", "string")]


def schema_columns(schema):
    return [{"id": i + 1, "name": n, "type": t, "nullable": True} for i, (n, t) in enumerate(schema)]


class Lake:
    """wh.sales.orders partitioned by d (Hive-style files without d), wh.sales.empty (no files),
    wh.crm.customers (unpartitioned)."""

    def __init__(self, cat):
        self.cat = cat
        self.loc = os.path.join(cat.warehouse, "wh", "sales", "orders")
        self.paths = {}
        with cat.transaction(author="test", message="tables") as t:
            t.add("/wh", {"obj_type": "catalog", "properties": {}})
            for ns in ("sales", "crm"):
                t.add(f"/wh/{ns}", {"obj_type": "namespace", "properties": {}})
            t.add("/wh/sales/orders", self._table(self.loc, SCHEMA, ["d"]))
            t.add("/wh/sales/empty", self._table(os.path.join(cat.warehouse, "wh", "sales", "empty"),
                                                 [("k", "int"), ("amount", "decimal(12,2)"), ("ts", "timestamp")], []))
            t.add("/wh/crm/customers", self._table(os.path.join(cat.warehouse, "wh", "crm", "customers"),
                                                   [("cid", "long"), ("name", "string")], []))
        self.v0 = t.vid

    @staticmethod
    def _table(loc, schema, parts):
        return {"obj_type": "table", "location": loc, "format": "parquet",
                "schema": {"schema_id": 0, "columns": schema_columns(schema)}, "partition_by": parts,
                "stats": {"row_count": 0}, "properties": {}}

    def write(self, day, fid, ids, notes=None, keep_d=False, rel=None):
        """Write one Parquet file (without `d` unless keep_d) and commit it as a leaf under d=day."""
        data = {"id": pa.array(ids, pa.int64()), "price": [i * 1.5 for i in ids],
                "note": notes if notes is not None else [f"n{i}" for i in ids]}
        if keep_d:
            data["d"] = [day] * len(ids)
        path = os.path.join(self.loc, rel or f"d={day}/{fid}.parquet")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        pq.write_table(pa.table(data), path)
        part = f"/wh/sales/orders/d={day}"
        with self.cat.transaction(author="test", message=f"load {fid}") as t:
            if t.get(part) is None:
                t.add(part, {"obj_type": "partition", "d": day, "stats": {"row_count": 0}})
            t.add(f"{part}/{fid}", {"obj_type": "file", "path": path, "format": "parquet", "row_count": len(ids),
                                    "size_bytes": os.path.getsize(path),
                                    "columns": {"id": {"min": min(ids), "max": max(ids), "null_count": 0}}},
                  leaf=True)
            t.merge(part, {"stats": {"row_count": {"op": "+", "val": len(ids)}}})
        self.paths[fid] = path
        return t.vid

    def remove(self, day, fid):
        with self.cat.transaction(author="test", message=f"drop {fid}") as t:
            t.remove(f"/wh/sales/orders/d={day}/{fid}")
        return t.vid

    def add_customers(self, rows):
        path = os.path.join(self.cat.warehouse, "wh", "crm", "customers", "c0.parquet")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        table = pa.table({"cid": pa.array([r[0] for r in rows], pa.int64()), "name": [r[1] for r in rows]})
        pq.write_table(table, path)
        with self.cat.transaction(author="test", message="customers") as t:
            t.add("/wh/crm/customers/c0", {"obj_type": "file", "path": path, "format": "parquet",
                                           "row_count": len(rows), "size_bytes": os.path.getsize(path),
                                           "columns": {}}, leaf=True)
        return t.vid


def build_lake(cat):
    lake = Lake(cat)
    lake.v1 = lake.write("2001-06-01", "a", [1, 2, 3])
    lake.v2 = lake.write("2001-06-02", "b", [4, 5])
    lake.v3 = lake.write("2001-06-03", "c", [6, 7, 8, 9])
    lake.v4 = lake.add_customers([(1, "ann"), (2, "bob")])
    return lake


# ------------------------------------------------------------------ a real `semcat serve` subprocess
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kill_in_commit(tmp_path: pathlib.Path, source: str) -> tuple[str, list[int]]:
    """Run `source` as a script and SIGKILL it 0.2 s after it prints "committing" (inside the
    commit: materializing, encoding or writing the batch). Returns its output and the vids it
    acknowledged (its "ack VID" lines)."""
    script = tmp_path / "loader.py"
    script.write_text(source)
    out_path = tmp_path / "out.txt"
    with open(out_path, "w") as out:
        proc = subprocess.Popen([sys.executable, str(script)], stdout=out, stderr=subprocess.STDOUT)
        while "committing" not in out_path.read_text() and proc.poll() is None:
            time.sleep(0.02)
        time.sleep(0.2)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    text = out_path.read_text()
    return text, [int(line.split()[1]) for line in text.splitlines() if line.startswith("ack")]


def wait_listening(proc: subprocess.Popen, port: int, what: str, timeout_s: float = 120) -> None:
    """Return once something accepts connections on loopback `port`; fail with the process's
    stderr if `proc` exits first, or with `what` if nothing listens within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            err = proc.stderr.read().decode()[-2000:] if proc.stderr else ""
            raise AssertionError(f"{what} exited with {proc.returncode}: {err}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} did not listen on port {port} within {timeout_s:.0f} s") from None
            time.sleep(0.05)  # a poll, not a wait: the loop returns as soon as the port accepts


def wait_healthy(proc: subprocess.Popen, url: str, what: str = "semcat serve", timeout_s: float = 120) -> None:
    """Return once `url`/healthz answers 200; fail with the process's stderr if `proc` exits first,
    or with `what` if it is not healthy within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            err = proc.stderr.read().decode()[-3000:] if proc.stderr else ""
            raise AssertionError(f"{what} exited with {proc.returncode}: {err}")
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} was not healthy at {url} within {timeout_s:.0f} s")
        time.sleep(0.05)  # a poll: the loop returns as soon as the server answers


def start_server(data_dir: str, log_path: str, *args: str) -> tuple[subprocess.Popen, str]:
    """`semcat serve` on a free loopback port, this tree first on its path; (process, url) once healthy.
    `--create`: `data_dir` may be a new directory."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "SEMCAT_TOKENS"}
    env["PYTHONPATH"] = ROOT
    log = open(log_path, "ab")
    proc = subprocess.Popen([sys.executable, "-m", "mcp_server.cli", "serve", "--data", data_dir,
                             "--create", "--port", str(port), *args], cwd=ROOT, env=env, stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(open(log_path).read())
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return proc, url
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("server did not start: " + open(log_path).read())


def stop_process(proc: subprocess.Popen, grace_s: float = 20) -> None:
    """SIGTERM, then SIGKILL if it has not exited within `grace_s`; always reaped."""
    proc.terminate()
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def count_calls(fn, target):
    """(fn(), how many times `target` (a Python function) was called during it), counted by a real
    profiler (cProfile): for tests that bound the work a call does without timing it."""
    import cProfile
    import pstats

    pr = cProfile.Profile()
    pr.enable()
    try:
        out = fn()
    finally:
        pr.disable()
    code = target.__code__
    n = sum(v[1] for k, v in pstats.Stats(pr).stats.items()  # type: ignore[attr-defined]
            if k[0] == code.co_filename and k[1] == code.co_firstlineno)
    return out, n


# ------------------------------------------------------------------ npm packages the tests drive
NPM_CACHE = os.environ.get("SEMCAT_NPM_CACHE", os.path.expanduser("~/.cache/semcat-npm"))
NODE_PACKAGES = os.path.join(ROOT, "tests", "mcp_server", "node")  # package.json: the pinned Node clients


CONFORMANCE_SUITE, CONFORMANCE_VERSION = "@modelcontextprotocol/conformance", "0.1.16"
OIDC_PROVIDER = "oidc-provider@9.13.3"  # runs on the system Node 20 (it prints a warning asking for Node 22)


@contextlib.contextmanager
def _npm_lock(where: str) -> Iterator[None]:
    """An exclusive file lock beside the npm prefix `where`: concurrent test workers (and the
    prefetch, tests/npm_prefetch.py) install into it once, never at the same time (which leaves a
    broken node_modules)."""
    import fcntl

    os.makedirs(where, exist_ok=True)
    with open(where + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        yield


def _npm_install(where: str, packages: list[str], timeout: float = 900) -> None:
    import shutil

    npm = shutil.which("npm")
    assert npm is not None
    p = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--prefix", where, *packages],
                       capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, f"npm install {' '.join(packages)} in {where} failed: {p.stderr[-2000:]}"


def node_major(node: str) -> int:
    """The major version of the Node binary `node` (0 when it does not run)."""
    import re

    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=60).stdout
    except OSError:
        return 0
    m = re.match(r"v(\d+)\.", out.strip())
    return int(m.group(1)) if m else 0


def conformance_suite() -> list[str]:
    """[node 22+, the CLI script of the MCP conformance suite], installed into
    NPM_CACHE/conformance when missing or of another version (with the npm package `node@22` when
    the system's Node is older); skips the test when npm is missing."""
    import json
    import shutil

    import pytest

    if shutil.which("npm") is None:
        pytest.skip("npm is not installed, so the MCP conformance suite cannot be installed")
    prefix = os.path.join(NPM_CACHE, "conformance")
    package = os.path.join(prefix, "node_modules", *CONFORMANCE_SUITE.split("/"))
    system = shutil.which("node")
    node = system if system and node_major(system) >= 22 else os.path.join(prefix, "node_modules", ".bin", "node")
    with _npm_lock(prefix):
        manifest = os.path.join(package, "package.json")
        installed = os.path.exists(manifest) and json.loads(pathlib.Path(manifest).read_text())["version"] == \
            CONFORMANCE_VERSION
        if not installed or node_major(node) < 22:
            _npm_install(prefix, [f"{CONFORMANCE_SUITE}@{CONFORMANCE_VERSION}"] + ([] if node == system else ["node@22"]))
    assert node_major(node) >= 22, f"{node} is not Node 22 or newer"
    return [node, os.path.join(package, "dist", "index.js")]


def oidc_provider() -> str:
    """NPM_CACHE/oidc holding OIDC_PROVIDER (installed when missing or of another version); skips
    the test when node or npm is missing."""
    import json
    import shutil

    import pytest

    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("node and npm are needed to run the oidc-provider authorization server")
    where = os.path.join(NPM_CACHE, "oidc")
    marker = os.path.join(where, "node_modules", "oidc-provider", "package.json")
    with _npm_lock(where):
        if not (os.path.exists(marker) and json.loads(pathlib.Path(marker).read_text())["version"] ==
                OIDC_PROVIDER.split("@")[1]):
            _npm_install(where, [OIDC_PROVIDER], timeout=600)
    return where


def pinned_node_packages(prefix: str = "mcpclient") -> str:
    """NPM_CACHE/<prefix> holding exactly the packages of tests/mcp_server/node/package.json (the
    TypeScript SDK, the MCP Inspector CLI and node@22), installed when any is missing or of another
    version. An exclusive file lock makes concurrent test workers install once, never into the same
    folder at the same time (which leaves a broken node_modules). Returns the folder; skips the test
    when npm is missing."""
    import json
    import shutil

    import pytest

    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed, so the pinned Node clients cannot be installed")
    where = os.path.join(NPM_CACHE, prefix)
    with open(os.path.join(NODE_PACKAGES, "package.json")) as f:
        wanted = json.load(f)["dependencies"]

    def installed(package: str) -> str | None:
        try:
            with open(os.path.join(where, "node_modules", *package.split("/"), "package.json")) as f:
                return str(json.load(f)["version"])
        except (OSError, ValueError, KeyError):
            return None

    with _npm_lock(where):
        if any(installed(p) != v for p, v in wanted.items()):
            shutil.copy(os.path.join(NODE_PACKAGES, "package.json"), where)
            _npm_install(where, [])  # what its package.json lists
        for name in os.listdir(NODE_PACKAGES):  # scripts sit beside node_modules, where ESM resolves them
            if name.endswith((".mjs", ".js")):
                shutil.copy(os.path.join(NODE_PACKAGES, name), where)
    return where


def inspector_command(where: str) -> list[str]:
    """[node 22, the MCP Inspector CLI script] of a `pinned_node_packages` folder."""
    import json

    node = os.path.join(where, "node_modules", "node", "bin", "node")
    pkg = os.path.join(where, "node_modules", "@modelcontextprotocol", "inspector")
    with open(os.path.join(pkg, "package.json")) as f:
        return [node, os.path.join(pkg, json.load(f)["bin"]["mcp-inspector"])]
