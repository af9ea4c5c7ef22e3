"""schemathesis (the `schemathesis run` command, all its phases) against the `/openapi.json` of a
live server on 127.0.0.1 with every check, once as a write token and once as a read token: no
5xx, every status code, content type and header documented, bodies matching their schemas,
invalid requests rejected, a 405 with `Allow` for undocumented methods, auth not ignored.

`positive_data_acceptance` gets the API's semantic refusals as expected statuses: a request can
match the schema and still be refused with a documented 4xx (a path query that does not parse, a
path with an empty segment, a snapshot name that looks like a vid, a precondition that fails)."""

import os
import re
import subprocess
import sys

import pytest

import catalog_core as cc
from mcp_server.http.auth import Tokens
from mcp_server.http.server import serve_in_thread

pytestmark = pytest.mark.slow

WRITE, READ = "st-write", "st-read"
MAX_EXAMPLES = 5

CONFIG = """
[checks]
positive_data_acceptance.expected-statuses = ["2xx", "400", "401", "403", "404", "409", "410", "412", "429"]
"""


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    cat = cc.Catalog.open(str(tmp_path_factory.mktemp("st") / "data"))
    with cat.transaction() as t:
        t.add("/wh", {"obj_type": "catalog"})
        t.add("/wh/sales", {"obj_type": "namespace"})
        t.add("/wh/sales/orders", {"obj_type": "table", "partition_by": []})
        t.add("/wh/sales/orders/f1", {"obj_type": "file", "rows": 3}, leaf=True)
    with serve_in_thread(cat, tokens=Tokens({WRITE: "write", READ: "read"})) as handle:
        yield handle
    cat.close()


def schemathesis_run(url: str, token: str, tmp_path) -> subprocess.CompletedProcess:
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG)
    cmd = [sys.executable, "-m", "schemathesis.cli", "--config-file", str(config), "run", url + "/openapi.json",
           "--checks", "all", "--max-examples", str(MAX_EXAMPLES), "--seed", "17", "--generation-deterministic",
           "--header", f"Authorization: Bearer {token}", "--report-dir", str(tmp_path / "report")]
    env = {**os.environ, "NO_COLOR": "1", "SCHEMATHESIS_TELEMETRY": "false"}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)


def summary(out: str) -> str:
    return out[out.rfind("SUMMARY") - 40:] if "SUMMARY" in out else out[-4000:]


@pytest.mark.parametrize("token", [WRITE, READ])
def test_schemathesis_finds_nothing(live, token, tmp_path):
    proc = schemathesis_run(live.url, token, tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-12000:]
    tested = re.search(r"Tested: (\d+)", out)
    assert tested and int(tested.group(1)) >= 21, summary(out)  # every operation of /v1 and /healthz
    print(summary(out))
