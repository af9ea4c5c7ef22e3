"""Issue 35, item 2 (deliver 3): every statement semcat runs is bounded like `run_sql`.

The reproduction: a relationship `condition` such as `dim_customer.is_current AND
len(range(300000000)) > 0`, already in the catalog (written before the write paths validated it),
and a read-only `check_staleness(depth="data")`, which pasted it into SQL on a raw DuckDB
connection of the server (one call ran 182 s and took the server from 138 MB to 14.9 GB). Now
the check runs in a SQL worker within run_sql's limits, and the answer is a finding that says the
check exceeded its limit. Through a real `semcat serve`: the HTTP route and the MCP tool over
streamable HTTP; the server's own peak RSS (VmHWM) stays bounded.

The write paths validate the same text: `relate`, `define_metric`, `verify_query` and a raw
`/v1/commit` of an annotation refuse what the sandbox would refuse (rule named), statements,
subqueries and table functions.

Safety net for a regression: the server runs under an address-space limit (RLIMIT_AS, 3 GiB), so
a check that escapes its worker fails inside the server instead of taking the machine's memory.
"""

from __future__ import annotations

import contextlib
import os
import resource
import subprocess
import sys
import time

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

import catalog_core as cc
import semantic as sm
from catalog_core import lake
from eval.fixtures.lakes import LakeBuilder
from semantic.annotations import new_annotation
from tests.helpers import free_port, stop_process

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FCT, DIM = "acme.core.fct_orders", "acme.core.dim_customer"
BOMBS = {
    # the issue's own: constant arguments (the sandbox's check refuses it before it runs)
    "bomb_const": "dim_customer.is_current AND len(range(300000000)) > 0",
    # the same bomb out of a column: it passes the check and the worker's address-space limit stops it
    "bomb_column": "dim_customer.is_current AND len(range(dim_customer.customer_id * 0 + 300000000)) > 0",
}
SERVER_AS_LIMIT = 3 << 30    # the safety net (see the module docstring)
SERVER_PEAK_MAX = 1 << 30    # what "bounded" means for the server process itself


def _lake(data: str, files: str) -> None:
    cat = cc.Catalog.open(data)
    try:
        lk = LakeBuilder(cat, files, catalog="acme")
        lk.table(DIM, [("customer_id", "bigint"), ("is_current", "boolean")], at=0,
                 rows={"customer_id": [1, 2, 3, 3], "is_current": [True, True, False, True]})
        lk.table(FCT, [("order_id", "bigint"), ("customer_id", "bigint")], at=0,
                 rows={"order_id": [10, 11, 12], "customer_id": [1, 2, 3]})
        sm.relate(cat, FCT, DIM, on=[("customer_id", "customer_id")], cardinality="many_to_one", canonical=True,
                  condition="dim_customer.is_current", name="customer", author="alice")
        # the bombs, as an older release let them in (relate now refuses the first: test below)
        vid = cat.latest_vid
        with cat.transaction(author="old-release", message="bombs") as txn:
            for name, cond in BOMBS.items():
                value = {"to": DIM, "on": [["customer_id", "customer_id"]], "cardinality": "many_to_one",
                         "canonical": False, "condition": cond}
                ann = new_annotation(cat, FCT, "relationship", f"relationship.{name}", value, columns=["customer_id"],
                                     author="mallory", source="human", vid=vid)
                txn.update(lake.semantic_path(FCT, ann.key), ann.stored())
    finally:
        cat.close()


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (SERVER_AS_LIMIT, resource.getrlimit(resource.RLIMIT_AS)[1]))


@contextlib.contextmanager
def _serve(data: str, log: str):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "SEMCAT_TOKENS"}
    env["PYTHONPATH"] = ROOT
    env["MALLOC_ARENA_MAX"] = "2"  # (address space: glibc's per-thread arenas)
    with open(log, "ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "mcp_server.cli", "serve", "--data", data, "--port", str(port)],
                                cwd=ROOT, env=env, stdout=out, stderr=out, preexec_fn=_limited)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, open(log).read()[-3000:]
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                    break
            assert time.monotonic() < deadline, "semcat serve did not start: " + open(log).read()[-3000:]
            time.sleep(0.1)
        yield proc, url
    finally:
        stop_process(proc)


def _peak_rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def _check(findings: list[dict]) -> None:
    by = {f["annotation"]: f for f in findings}
    for name in BOMBS:
        f = by.get(f"relationship.{name}")
        assert f is not None, (name, findings)
        assert f["reason"] == "check_limit_exceeded", f
        assert "limit" in f["message"] and "relationship." + name in f["message"], f
    # the sound relationship was checked as before: its cardinality holds on the current rows
    assert not any(f["annotation"] == "relationship.customer" for f in findings), findings


def test_condition_bomb_is_bounded_over_http_and_mcp(tmp_path):
    data = str(tmp_path / "data")
    _lake(data, str(tmp_path / "files"))
    log = str(tmp_path / "serve.log")
    with _serve(data, log) as (proc, url):
        base = _peak_rss(proc.pid)
        t0 = time.monotonic()
        r = httpx.get(url + "/v1/semantic/staleness", params={"table": FCT, "depth": "data"}, timeout=300)
        http_s = time.monotonic() - t0
        assert r.status_code == 200, r.text
        _check(r.json()["findings"])
        for f in r.json()["findings"]:
            print(f"\n[bounded] {f['annotation']}: {f['message'][:240]}")

        async def mcp_call():
            client = Client(streamable_http_client(url + "/mcp", http_client=httpx2.AsyncClient(timeout=300)))
            async with client as c:
                # another snapshot than the HTTP call's (`now` moved): the findings are computed again
                return await c.call_tool("check_staleness", {"table": FCT, "depth": "data"})

        t0 = time.monotonic()
        res = anyio.run(mcp_call)
        mcp_s = time.monotonic() - t0
        assert not res.is_error, res.content[0].text
        _check(res.structured_content["findings"])
        assert "check_limit_exceeded" in res.content[0].text
        peak = _peak_rss(proc.pid)
        print(f"\n[bounded] server VmHWM {base >> 20} MiB at start, {peak >> 20} MiB after; "
              f"http {http_s:.1f} s, mcp {mcp_s:.1f} s")
        assert peak < SERVER_PEAK_MAX, f"the server's peak RSS grew to {peak >> 20} MiB"
        assert proc.poll() is None


# ------------------------------------------------------------------ the write paths validate the same text
@pytest.fixture
def small(data_dir, tmp_path):
    cat = cc.Catalog.open(data_dir)
    lk = LakeBuilder(cat, tmp_path / "files", catalog="acme")
    lk.table(DIM, [("customer_id", "bigint"), ("is_current", "boolean")], at=0,
             rows={"customer_id": [1, 2], "is_current": [True, True]})
    lk.table(FCT, [("order_id", "bigint"), ("customer_id", "bigint"), ("amount", "double")], at=0,
             rows={"order_id": [10, 11], "customer_id": [1, 2], "amount": [1.0, 2.0]})
    yield cat
    cat.close()


BAD_CONDITIONS = [
    ("dim_customer.is_current AND len(range(300000000)) > 0", "memory_limit"),
    ("is_current AND length(repeat('a', 2000000000)) > 0", "memory_limit"),
    ("is_current AND getenv('HOME') IS NOT NULL", "scalar_function"),
    ("is_current AND current_setting('allowed_paths') IS NOT NULL", "introspection"),
    ("customer_id IN (SELECT 1)", "SUBQUERY"),
    ("is_current; DROP TABLE x", "statements"),
    ("customer_id IN (SELECT * FROM read_csv('/etc/passwd'))", "SUBQUERY"),
]


@pytest.mark.parametrize("cond, why", BAD_CONDITIONS)
def test_relate_refuses_what_the_sandbox_would(small, cond, why):
    before = small.latest_vid
    with pytest.raises(cc.CatalogError) as e:
        sm.relate(small, FCT, DIM, on=[("customer_id", "customer_id")], condition=cond, author="alice")
    assert why in e.value.message, e.value.message
    assert small.latest_vid == before


@pytest.mark.parametrize("expr, why", [("sum(amount) + len(range(300000000))", "memory_limit"),
                                       ("sum(amount) FILTER (WHERE getenv('x') = '')", "scalar_function"),
                                       ("(SELECT sum(amount) FROM acme.core.fct_orders)", "SUBQUERY")])
def test_define_metric_refuses_what_the_sandbox_would(small, expr, why):
    with pytest.raises(cc.CatalogError) as e:
        sm.define_metric(small, FCT, "m", expression=expr, author="alice")
    assert why in e.value.message, e.value.message
    with pytest.raises(cc.CatalogError) as e:
        sm.define_metric(small, FCT, "m2", expression="sum(amount)", filter=expr.replace("sum(amount)", "amount > 0"),
                         author="alice")


def test_a_sound_condition_and_metric_still_write(small):
    sm.relate(small, FCT, DIM, on=[("customer_id", "customer_id")], condition="dim_customer.is_current",
              author="alice")
    sm.define_metric(small, FCT, "revenue", expression="sum(amount)", filter="amount > 0", author="alice")
    assert {m.name for m in sm.metrics(small, FCT)} == {"revenue"}


def test_raw_commit_of_a_bomb_is_refused(small, tmp_path):
    """`/v1/commit` of semantic keys goes through the same validation (the HTTP layer calls
    `semantic.guard` for every op under `_semantic`)."""
    from mcp_server.http.server import serve_in_thread

    value = {"to": DIM, "on": [["customer_id", "customer_id"]], "cardinality": "many_to_one", "canonical": False,
             "condition": BOMBS["bomb_const"]}
    ann = new_annotation(small, FCT, "relationship", "relationship.bomb", value, columns=["customer_id"],
                         author="mallory", source="human")
    body = {"author": "mallory", "ops": [
        {"kind": "update", "path": lake.semantic_path(FCT), "value": {"obj_type": "semantic"}},
        {"kind": "update", "path": lake.semantic_path(FCT, ann.key), "value": ann.stored()}]}
    with serve_in_thread(small) as h:
        before = small.latest_vid
        r = httpx.post(h.url + "/v1/commit", json=body, timeout=60)
        assert r.status_code == 400, r.text
        assert "memory_limit" in r.json()["message"] and "relationship.bomb" in r.json()["message"], r.text
        assert small.latest_vid == before
        # a sound one goes through
        value["condition"] = "dim_customer.is_current"
        body["ops"][1]["value"] = new_annotation(small, FCT, "relationship", "relationship.ok", value,
                                                 columns=["customer_id"], author="alice").stored()
        body["ops"][1]["path"] = lake.semantic_path(FCT, "relationship.ok")
        r = httpx.post(h.url + "/v1/commit", json=body, timeout=60)
        assert r.status_code == 200, r.text


def test_review_edit_and_accept_validates_the_edited_value(small):
    """A review decision writes through the same rules, and its own data checks are bounded like
    `run_sql`: an edited condition the sandbox refuses is not written, and one that passes the
    sandbox's check but goes past the SQL worker's memory limit is refused with `limit` (before,
    the validation ran it on a DuckDB connection of this process: minutes and gigabytes, then the
    edit was written)."""
    from semantic import review

    sm.relate(small, FCT, DIM, on=[("customer_id", "customer_id")], condition="dim_customer.is_current",
              author="agent:x", source="agent", confidence=0.5)
    item = next(i for i in review.review_items(small).items if i.annotation == "relationship.dim_customer")
    before = small.latest_vid
    for bomb, why in (("bomb_const", "memory_limit"), ("bomb_column", "memory limit")):
        with pytest.raises(review.ReviewRefusedError) as e:
            review.edit_and_accept(small, item, "alice", {**item.proposed, "condition": BOMBS[bomb]})
        assert e.value.details["why"] == "limit" and why in e.value.message, e.value.message
        assert small.latest_vid == before
    review.edit_and_accept(small, item, "alice", {**item.proposed, "condition": "dim_customer.is_current"})
    rel = {a.key: a for a in sm.read_annotations(small, FCT)}["relationship.dim_customer"]
    assert rel.provenance.source == "human" and rel.value["condition"] == "dim_customer.is_current"
