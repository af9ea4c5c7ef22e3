"""DuckDB 1.4.4 with its iceberg extension against a real `semcat serve` (issue 46): ATTACH with a
bearer token and with client credentials (HTTP Basic, as DuckDB sends them; and a token got by the
form, client_secret_post), list the tables, SELECT compared with semcat's run_sql, CREATE TABLE,
INSERT and time travel. DuckDB and the extension wheels (PyPI duckdb-ext-iceberg, -httpfs, -avro)
run in a venv of their own, built once under a cache directory (the project's venv has another
DuckDB), with `extension_directory` set to the wheels' folder: no download at query time."""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pyarrow as pa
import pytest
import requests
from pyiceberg.catalog import load_catalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import DateType, DoubleType, LongType, NestedField, StringType

from tests.helpers import start_server, stop_process

DUCKDB = "1.4.4"
EXTENSIONS = {"duckdb-ext-iceberg": "1.4.4.20260205", "duckdb-ext-httpfs": "1.4.4.20260205",
              "duckdb-ext-avro": "1.4.4.20260205"}
CACHE = os.environ.get("SEMCAT_DUCKDB_CACHE", os.path.expanduser("~/.cache/semcat-duckdb"))
WRITE, READ = "w-token-duck", "r-token-duck"

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "cat", StringType(), required=False),
                NestedField(3, "d", DateType(), required=False), NestedField(4, "amount", DoubleType(), required=False))
SPEC = PartitionSpec(PartitionField(source_id=3, field_id=1000, transform=IdentityTransform(), name="d"))


def rows(ids, day=1, cat="a"):
    return pa.table({"id": pa.array(ids, pa.int64()), "cat": pa.array([cat] * len(ids), pa.string()),
                     "d": pa.array([dt.date(2024, 1, day)] * len(ids), pa.date32()),
                     "amount": pa.array([i * 1.5 for i in ids], pa.float64())})


@contextlib.contextmanager
def _locked(path: str) -> Iterator[None]:
    """An exclusive file lock beside `path`: concurrent test workers build the venv once."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)   # released when the file closes
        yield


def duckdb_python() -> tuple[str, str]:
    """(python of a venv with duckdb==DUCKDB and the extension wheels, their extension directory),
    built under CACHE when missing (a `ready` file marks a finished install)."""
    where = os.path.join(CACHE, f"venv-{DUCKDB}-" + "-".join(v for v in EXTENSIONS.values())[:40])
    python = os.path.join(where, "bin", "python")
    with _locked(where):
        if not os.path.exists(os.path.join(where, "ready")):
            subprocess.run([sys.executable, "-m", "venv", "--clear", where], check=True, timeout=300)
            pins = [f"duckdb=={DUCKDB}", *(f"{k}=={v}" for k, v in EXTENSIONS.items())]
            env = {**os.environ, "PIP_CONSTRAINT": ""}   # the machine's constraints pin the project's DuckDB
            p = subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", *pins],
                               capture_output=True, text=True, timeout=900, env=env)
            if p.returncode != 0:
                pytest.skip(f"cannot install {' '.join(pins)}: {p.stderr[-800:]}")
            open(os.path.join(where, "ready"), "w").close()
    ext = subprocess.run([python, "-c", "import duckdb_ext, os; print(os.path.join(list(duckdb_ext.__path__)[0], "
                          "'extensions'))"], capture_output=True, text=True, check=True, timeout=120).stdout.strip()
    return python, ext


# The DuckDB side: one script per connection, its statements given as JSON on stdin, the rows of
# each statement (or its error) printed as JSON.
SCRIPT = r"""
import json, sys
import duckdb
job = json.load(sys.stdin)
con = duckdb.connect(config={"extension_directory": job["ext"], "autoinstall_known_extensions": False,
                             "autoload_known_extensions": True})
out = []
for sql in job["setup"] + job["statements"]:
    try:
        res = con.execute(sql)
        rows = res.fetchall() if res.description else []
        out.append({"sql": sql, "rows": [[v if isinstance(v, (int, float, str, bool, type(None))) else str(v) for v in r]
                                          for r in rows]})
    except Exception as exc:
        out.append({"sql": sql, "error": f"{type(exc).__name__}: {exc}"})
        if sql in job["setup"]:
            break
print("RESULT " + json.dumps(out))
"""


def duck(python: str, ext: str, secret: str, url: str, statements: list[str]) -> list[dict]:
    setup = ["LOAD httpfs", "LOAD avro", "LOAD iceberg", secret,
             f"ATTACH 'acme' AS ice (TYPE iceberg, SECRET s, ENDPOINT '{url}/iceberg')"]
    p = subprocess.run([python, "-c", SCRIPT], input=json.dumps({"ext": ext, "setup": setup, "statements": statements}),
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    assert lines, p.stdout[-3000:] + p.stderr[-3000:]
    out = json.loads(lines[-1].removeprefix("RESULT "))
    bad = [r for r in out if "error" in r and r["sql"] in setup]
    assert not bad, bad
    return out[len(setup):]


@pytest.mark.slow   # builds a venv with DuckDB and three extension wheels once (pip ~25 s), runs semcat serve and 4 DuckDB processes: 56 s measured (2 cores, load ~17)
def test_duckdb_attaches_lists_reads_creates_inserts_and_travels(tmp_path):
    import catalog_core as cc

    python, ext = duckdb_python()
    tokens = tmp_path / "tokens"
    tokens.write_text(f"{WRITE}:write\n{READ}:read\n")
    data = str(tmp_path / "data")
    proc, url = start_server(data, str(tmp_path / "serve.log"), "--tokens", str(tokens))
    try:
        ice = load_catalog("seed", type="rest", uri=url + "/iceberg", warehouse="acme", token=WRITE)
        ice.create_namespace("core")
        orders = ice.create_table("core.orders", SCHEMA, partition_spec=SPEC)
        orders.append(rows([1, 2, 3], day=1))
        orders.append(rows([4, 5], day=2, cat="b"))
        first = ice.load_table("core.orders").snapshots()[0].snapshot_id
        ice.create_table("core.plain", SCHEMA).append(rows([10, 11]))

        bearer = f"CREATE SECRET s (TYPE iceberg, TOKEN '{WRITE}')"
        basic = (f"CREATE SECRET s (TYPE iceberg, CLIENT_ID 'duckdb', CLIENT_SECRET '{WRITE}', "
                 f"OAUTH2_SERVER_URI '{url}/iceberg/v1/oauth/tokens')")
        by_form = requests.post(url + "/iceberg/v1/oauth/tokens", timeout=30, data={
            "grant_type": "client_credentials", "client_id": "duckdb", "client_secret": READ}).json()["access_token"]
        form = f"CREATE SECRET s (TYPE iceberg, TOKEN '{by_form}')"
        for secret in (bearer, basic, form):
            shown = duck(python, ext, secret, url, ["SHOW ALL TABLES",
                                                    "SELECT count(*), sum(id), sum(amount) FROM ice.core.orders"])
            assert "error" not in shown[0], shown[0]
            assert {r[2] for r in shown[0]["rows"] if r[0] == "ice"} >= {"orders", "plain"}, shown[0]
            assert shown[1]["rows"] == [[5, 15, 22.5]], shown[1]

        steps = duck(python, ext, bearer, url, [
            "SELECT id, cat, d, amount FROM ice.core.orders ORDER BY id",
            f"SELECT count(*) FROM ice.core.orders AT (VERSION => {first})",
            "CREATE TABLE ice.core.made (id BIGINT, name VARCHAR)",
            "INSERT INTO ice.core.made VALUES (1, 'one'), (2, 'two')",
            "INSERT INTO ice.core.plain SELECT id + 100, cat, d, amount FROM ice.core.plain",
            "SELECT id, name FROM ice.core.made ORDER BY id",
            "SELECT count(*) FROM ice.core.plain",
        ])
        errors = [s for s in steps if "error" in s]
        assert not errors, errors
        got, travel, _c, _i, _i2, made, plain = (s["rows"] for s in steps)
        assert travel == [[3]]
        assert made == [[1, "one"], [2, "two"]] and plain == [[4]]
    finally:
        stop_process(proc)
    # semcat's own SQL over the same catalog reads what DuckDB read and wrote
    engine = cc.open_catalog(data)
    try:
        res = cc.run_sql(engine, "select id, cat, d, amount from acme.core.orders order by id")
        assert [[r[0], r[1], str(r[2]), r[3]] for r in res.rows] == [[r[0], r[1], str(r[2]), r[3]] for r in got]
        assert cc.run_sql(engine, "select id, name from acme.core.made order by id").rows == [[1, "one"], [2, "two"]]
        assert sorted(r[0] for r in cc.run_sql(engine, "select id from acme.core.plain").rows) == [10, 11, 110, 111]
    finally:
        engine.close()
