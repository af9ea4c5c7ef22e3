"""`semcat serve`'s /iceberg against the Apache Iceberg REST catalog specification's own OpenAPI
document, over a real uvicorn on 127.0.0.1. The document is not in the repository (it is Apache
Iceberg's file, and CI has no network but the package registries): put the apache/iceberg tag
apache-iceberg-1.11.0's `open-api/rest-catalog-open-api.yaml` (the version pyiceberg 0.12 speaks)
at the path `SEMCAT_ICEBERG_OPENAPI` names; without it the module is skipped and says so.

- every operation of the specification is either served (and listed in GET /v1/config's
  `endpoints`) or listed as not applicable with a reason (tests/data/iceberg/not_applicable.yaml),
  and a not-applicable one answers 404 / 405 in the specification's ErrorModel;
- schemathesis (the `schemathesis run` command, all its phases and checks), once with a write
  token and once with a read token, on every served operation: no 5xx, every status code,
  content type and header documented, bodies matching the specification's schemas (ErrorModel
  included, for the server's own refusals too), schema-violating requests rejected, 405 with an
  exact `Allow` for undocumented methods, auth not ignored. Path parameters name a real warehouse,
  namespace and table (a table with data), so loads and commits reach semcat's logic.

`positive_data_acceptance` gets semcat's semantic refusals as expected statuses: a request can
match the schema and still be refused with a documented status (a multi-level namespace: 400,
semcat namespaces are one level; an empty name: 400; a table that does not exist: 404; a failed
commit requirement: 409; a read token writing: 403)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pyarrow as pa
import pytest
import requests
import yaml
from pyiceberg.catalog import load_catalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

import catalog_core as cc
from mcp_server.http.auth import Tokens
from mcp_server.http.server import serve_in_thread

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(os.path.dirname(HERE), "data", "iceberg")
SPEC = os.environ.get("SEMCAT_ICEBERG_OPENAPI", "")
if not os.path.isfile(SPEC):
    pytest.skip("the Iceberg REST OpenAPI document is not here: set SEMCAT_ICEBERG_OPENAPI to a copy of "
                "apache/iceberg's open-api/rest-catalog-open-api.yaml (tag apache-iceberg-1.11.0)",
                allow_module_level=True)
WRITE, READ = "ice-st-write", "ice-st-read"
MAX_EXAMPLES = 5
METHODS = ("get", "put", "post", "delete", "head", "patch")


def spec_operations() -> dict[str, tuple[str, str]]:
    """operationId -> (METHOD, path template) of every operation of the specification."""
    with open(SPEC, encoding="utf-8") as f:
        spec = yaml.safe_load(f)
    return {op["operationId"]: (method.upper(), path)
            for path, item in spec["paths"].items() for method, op in item.items() if method in METHODS}


def not_applicable() -> dict[str, str]:
    with open(os.path.join(DATA, "not_applicable.yaml"), encoding="utf-8") as f:
        return yaml.safe_load(f)


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    cat = cc.Catalog.open(str(tmp_path_factory.mktemp("ice-st") / "data"))
    with serve_in_thread(cat, tokens=Tokens({WRITE: "write", READ: "read"})) as handle:
        ice = load_catalog("st", type="rest", uri=handle.url + "/iceberg", warehouse="acme", token=WRITE)
        ice.create_namespace("core")
        ice.create_namespace("empty")            # what dropNamespace drops
        schema = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "name", StringType(), required=False))
        orders = ice.create_table("core.orders", schema)
        orders.append(pa.table({"id": pa.array([1, 2], pa.int64()), "name": pa.array(["a", "b"])}))
        ice.create_table("core.scratch", schema)  # what dropTable drops
        yield handle
    cat.close()


def test_every_operation_is_served_or_not_applicable_with_a_reason(live):
    ops = spec_operations()
    na = not_applicable()
    assert set(na) <= set(ops), f"listed but not in the specification: {sorted(set(na) - set(ops))}"
    assert all(isinstance(r, str) and len(r) > 20 for r in na.values())
    cfg = requests.get(live.url + "/iceberg/v1/config?warehouse=acme", timeout=30,
                       headers={"Authorization": f"Bearer {WRITE}"}).json()
    advertised = set(cfg["endpoints"])
    served = {f"{m} {p}" for op, (m, p) in ops.items() if op not in na and op not in ("getConfig", "getToken")}
    assert advertised == served, (sorted(advertised - served), sorted(served - advertised))
    for op in na:
        method, path = ops[op]
        url = live.url + "/iceberg" + path.format(**{"prefix": "acme", "namespace": "core", "table": "orders",
                                                     "view": "v", "plan-id": "p"})
        r = requests.request(method, url, json={} if method in ("POST", "PUT") else None, timeout=30,
                             headers={"Authorization": f"Bearer {WRITE}"})
        assert r.status_code in (404, 405), (op, r.status_code, r.text)
        if method != "HEAD":
            err = r.json()["error"]
            assert err["code"] == r.status_code and err["type"] and "GET /iceberg/v1/config" in err["message"], op


def config_toml(na: dict[str, str]) -> str:
    out = ['[checks]',
           'positive_data_acceptance.expected-statuses = ["2xx", "400", "401", "403", "404", "409"]',
           '[parameters]', '"path.prefix" = "acme"', '"path.namespace" = "core"', '"path.table" = "orders"',
           '[[operations]]', 'include-operation-id = "dropTable"', 'parameters = { "path.table" = "scratch" }',
           '[[operations]]', 'include-operation-id = "dropNamespace"', 'parameters = { "path.namespace" = "empty" }']
    for op in sorted(na):
        out += ['[[operations]]', f'include-operation-id = "{op}"', 'enabled = false']
    return "\n".join(out) + "\n"


def schemathesis_run(url: str, token: str, tmp_path) -> subprocess.CompletedProcess:
    config = tmp_path / "schemathesis.toml"
    config.write_text(config_toml(not_applicable()))
    cmd = [sys.executable, "-m", "schemathesis.cli", "--config-file", str(config), "run", SPEC, "--url", url + "/iceberg",
           "--checks", "all", "--max-examples", str(MAX_EXAMPLES), "--seed", "17", "--generation-deterministic",
           "--workers", "1", "--header", f"Authorization: Bearer {token}", "--report-dir", str(tmp_path / "report")]
    env = {**os.environ, "NO_COLOR": "1", "SCHEMATHESIS_TELEMETRY": "false"}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env, cwd=tmp_path)


def summary(out: str) -> str:
    return out[out.rfind("SUMMARY") - 40:] if "SUMMARY" in out else out[-4000:]


@pytest.mark.slow
@pytest.mark.parametrize("token", [WRITE, READ])
def test_schemathesis_finds_nothing(live, token, tmp_path):
    proc = schemathesis_run(live.url, token, tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-15000:]
    served = len(spec_operations()) - len(not_applicable())
    tested = re.search(r"Tested: (\d+)", out)
    assert tested and int(tested.group(1)) == served, summary(out)
    print(summary(out))
