"""Issue 48 items 1-2: grants in the catalog (versioned, inherited), enforced on the MCP tools,
resources, completions and SQL of a real `semcat serve` app on loopback; an ungranted table is
refused byte for byte like a missing one.

Catalog A holds acme.core.dim_store, acme.hr.salaries and acme.hr.bonus; catalog B the same
without acme.hr.salaries (same vids). Grants in both: select on acme.core to group:fin, describe
on acme.hr.bonus to user:bob. Tokens: bob (group fin, read), eve (no grant), an admin token."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

import catalog_core as cc
from mcp_server.http.auth import Principal, Tokens
from mcp_server.http.server import default_plugins, serve_in_thread
from semantic import grants as G

BOB, EVE, ADMIN, WRITER = "bob-token", "eve-token", "admin-token", "writer-token"
H = {"Accept": "application/json, text/event-stream"}


def _table(col: str) -> dict[str, Any]:
    return {"obj_type": "table", "schema": {"schema_id": 0, "columns": [
        {"id": 1, "name": col, "type": "int", "nullable": False}]}, "partition_by": []}


def make(data_dir: str, with_salaries: bool) -> cc.Catalog:
    cat = cc.Catalog.open(data_dir)
    with cat.transaction(author="setup") as t:
        t.add("/acme", {"obj_type": "catalog"})
        t.add("/acme/core", {"obj_type": "namespace"})
        t.add("/acme/hr", {"obj_type": "namespace"})
        t.add("/acme/core/dim_store", _table("store_id"))
        t.add("/acme/hr/bonus", _table("amount"))
        if with_salaries:
            t.add("/acme/hr/salaries", _table("salary"))
        else:  # the same vids in both catalogs: an object nobody reads in its place
            t.add("/acme/hr/_staging", {"obj_type": "semantic"})
    G.grant(cat, "select", "acme.core", "group:fin", author="admin")
    G.grant(cat, "describe", "acme.hr.bonus", "user:bob", author="admin")
    return cat


TOKENS = Tokens({BOB: Principal("bob", "read", "agent", ("fin",)), EVE: Principal("eve", "read", "agent"),
                 ADMIN: Principal("ops", "write", "human", admin=True),
                 WRITER: Principal("wr", "write", "agent", ("fin",))})


@pytest.fixture(scope="module")
def servers(tmp_path_factory) -> Iterator[tuple[Any, Any, cc.Catalog]]:
    a = make(str(tmp_path_factory.mktemp("a") / "data"), True)
    b = make(str(tmp_path_factory.mktemp("b") / "data"), False)
    assert a.latest_vid == b.latest_vid
    with serve_in_thread(a, tokens=TOKENS, plugins=default_plugins()) as sa, \
            serve_in_thread(b, tokens=TOKENS, plugins=default_plugins()) as sb:
        yield sa, sb, a
    a.close()
    b.close()


def rpc(url: str, token: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    resp = httpx.post(url + "/mcp", headers={**H, "Authorization": f"Bearer {token}"}, timeout=60,
                      json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    assert resp.status_code == 200, resp.text[:300]
    return resp.json()


def tool(url: str, token: str, name: str, **args: Any) -> dict[str, Any]:
    out = rpc(url, token, "tools/call", {"name": name, "arguments": args})
    assert "result" in out, out
    return out["result"]


def _text(result: dict[str, Any]) -> str:
    return json.dumps(result, sort_keys=True)


def test_search_and_query_catalog_show_only_granted_tables(servers):
    sa, _sb, _a = servers
    names = [t["name"] for t in tool(sa.url, BOB, "search_tables")["structuredContent"]["tables"]]
    assert names == ["acme.core.dim_store", "acme.hr.bonus"], names
    assert tool(sa.url, EVE, "search_tables")["structuredContent"]["tables"] == []
    admin = [t["name"] for t in tool(sa.url, ADMIN, "search_tables")["structuredContent"]["tables"]]
    assert "acme.hr.salaries" in admin
    objs = tool(sa.url, BOB, "query_catalog", query='/[obj_id = "acme"]/*/*', limit=50)["structuredContent"]
    paths = [o["path"] for o in objs["objects"]]
    assert "/acme/hr/salaries" not in paths and "/acme/core/dim_store" in paths, paths
    assert not any("_grants" in p for p in paths), paths
    assert "salaries" not in _text(tool(sa.url, BOB, "search_tables", query="salary"))


@pytest.mark.parametrize("call", [
    ("describe_table", {"table": "acme.hr.salaries"}),
    ("get_column_values", {"table": "acme.hr.salaries", "column": "salary"}),
    ("run_sql", {"sql": "SELECT salary FROM acme.hr.salaries"}),
    ("get_lineage", {"table": "acme.hr.salaries"}),
    ("check_staleness", {"table": "acme.hr.salaries"}),
    ("find_join_path", {"from_table": "acme.core.dim_store", "to_table": "acme.hr.salaries"}),
    ("list_metrics", {"table": "acme.hr.salaries"}),
])
def test_an_ungranted_table_is_refused_byte_for_byte_like_a_missing_one(servers, call):
    sa, sb, _a = servers
    name, args = call
    ungranted = tool(sa.url, BOB, name, **args)
    missing = tool(sb.url, BOB, name, **args)
    assert ungranted.get("isError") is True, ungranted
    assert _text(ungranted) == _text(missing)
    # and an admin token reads it
    if name in ("describe_table", "run_sql"):
        assert not tool(sa.url, ADMIN, name, **args).get("isError")


def test_select_needs_select_describe_is_not_enough(servers):
    sa, _sb, _a = servers
    assert not tool(sa.url, BOB, "describe_table", table="acme.hr.bonus").get("isError")
    sql = tool(sa.url, BOB, "run_sql", sql="SELECT amount FROM acme.hr.bonus")
    assert sql.get("isError") is True and "does not exist" in _text(sql)
    ok = tool(sa.url, BOB, "run_sql", sql="SELECT count(*) FROM acme.core.dim_store")
    assert not ok.get("isError"), ok
    short = tool(sa.url, BOB, "run_sql", sql="SELECT count(*) FROM salaries")
    assert short.get("isError") is True and "does not exist" in _text(short)


def test_resources_and_completions_list_only_granted_tables(servers):
    sa, _sb, _a = servers
    res = rpc(sa.url, BOB, "resources/list", {})["result"]["resources"]
    assert not any("salaries" in r["uri"] for r in res) and any("dim_store" in r["uri"] for r in res)
    card = rpc(sa.url, BOB, "resources/read", {"uri": "semcat://table/acme.hr.salaries"})
    assert "error" in card or card["result"].get("isError") or "does not exist" in json.dumps(card), card
    done = rpc(sa.url, BOB, "completion/complete", {"ref": {"type": "ref/resource", "uri": "semcat://table/{name}"},
                                                    "argument": {"name": "name", "value": "acme.hr"}})
    assert done["result"]["completion"]["values"] == ["acme.hr.bonus"], done


def test_grants_are_versioned_and_a_revoke_holds_for_old_snapshots(tmp_path):
    cat = make(str(tmp_path / "data"), True)
    try:
        before = cat.latest_vid
        G.grant(cat, "select", "acme.hr", "user:bob", author="admin")
        granted = cat.latest_vid
        G.revoke(cat, "select", "acme.hr", "user:bob", author="admin")
        # who could read acme.hr.salaries at each vid
        def readers(vid: int) -> list[str]:
            gs = G.GrantSet.at(cat, vid)
            return [p for p in ("user:bob", "group:fin") if gs.allows((p,), "select", "/acme/hr/salaries")]
        assert readers(before) == [] and readers(granted) == ["user:bob"] and readers(cat.latest_vid) == []
        assert [r.principal for r in G.list_grants(cat, vid=granted) if r.securable == "acme.hr"] == ["user:bob"]
        with serve_in_thread(cat, tokens=TOKENS, plugins=default_plugins()) as srv:
            old = tool(srv.url, BOB, "run_sql", sql="SELECT * FROM acme.hr.salaries", snapshot=granted)
            assert old.get("isError") is True and "does not exist" in _text(old)
    finally:
        cat.close()


def test_a_catalog_without_grants_is_open_as_before(tmp_path):
    cat = cc.Catalog.open(str(tmp_path / "data"))
    with cat.transaction(author="setup") as t:
        t.add("/acme", {"obj_type": "catalog"})
        t.add("/acme/hr", {"obj_type": "namespace"})
        t.add("/acme/hr/salaries", _table("salary"))
    try:
        with serve_in_thread(cat, tokens=TOKENS, plugins=default_plugins()) as srv:
            names = [t["name"] for t in tool(srv.url, EVE, "search_tables")["structuredContent"]["tables"]]
            assert names == ["acme.hr.salaries"]
    finally:
        cat.close()


@pytest.mark.parametrize("bad, match", [
    (("sudo", "acme", "user:bob"), "privilege 'sudo'"),
    (("select", "acme", "bob"), "user:NAME or group:NAME"),
    (("select", "acme.nope", "user:bob"), "not a catalog, namespace or table"),
    (("select", "acme._grants", "user:bob"), "reserved"),
])
def test_bad_grants_are_refused_with_what_to_do(tmp_path, bad, match):
    cat = make(str(tmp_path / "data"), True)
    try:
        vid = cat.latest_vid
        with pytest.raises(cc.errors.CatalogError, match=match):
            priv, securable, principal = bad
            G.grant(cat, priv, securable, principal, author="admin")
        assert cat.latest_vid == vid
    finally:
        cat.close()


# ------------------------------------------------------------------ /v1
def v1(url: str, token: str, method: str, path: str, **kw: Any) -> httpx.Response:
    return httpx.request(method, url + path, headers={"Authorization": f"Bearer {token}"}, timeout=60, **kw)


def _ndjson(resp: httpx.Response) -> list[str]:
    assert resp.status_code == 200, resp.text[:300]
    return [o["path"] for line in resp.text.splitlines() if line for o in json.loads(line).get("objects", [])]


def test_v1_reads_show_only_granted_objects(servers):
    sa, sb, _a = servers
    q = {"query": '/[obj_id = "acme"]/*/*'}
    bob = _ndjson(v1(sa.url, BOB, "POST", "/v1/query", json=q))
    assert "/acme/core/dim_store" in bob and "/acme/hr/salaries" not in bob, bob
    assert not any("_grants" in p for p in bob), bob
    assert "/acme/hr/salaries" in _ndjson(v1(sa.url, ADMIN, "POST", "/v1/query", json=q))
    got = v1(sa.url, BOB, "GET", "/v1/objects", params={"path": "/acme/hr/salaries"})
    assert got.status_code == 200 and got.json() == {"object": None}, got.text
    kids = v1(sa.url, BOB, "GET", "/v1/children", params={"path": "/acme/hr"}).json()["objects"]
    assert [o["path"] for o in kids] == ["/acme/hr/bonus"], kids
    plan_a = v1(sa.url, BOB, "POST", "/v1/plan_files", json={"table": "acme.hr.salaries"})
    plan_b = v1(sb.url, BOB, "POST", "/v1/plan_files", json={"table": "acme.hr.salaries"})
    assert plan_a.status_code == plan_b.status_code == 404
    assert plan_a.content == plan_b.content, (plan_a.text, plan_b.text)
    assert v1(sa.url, BOB, "POST", "/v1/plan_files", json={"table": "acme.core.dim_store"}).status_code == 200


def test_v1_writes_need_grants_and_grant_objects_an_admin(servers):
    sa, _sb, a = servers
    forged = {"ops": [{"kind": "update", "path": "/acme/hr/_grants/user:wr",
                       "value": {"obj_type": "grant", "principal": "user:wr", "privileges": ["admin"]}}]}
    resp = v1(sa.url, WRITER, "POST", "/v1/commit", json=forged)
    assert resp.status_code == 403 and "only an admin token changes grants" in resp.text, resp.text
    write = {"ops": [{"kind": "merge", "path": "/acme/core/dim_store", "value": {"properties": {"x": "1"}}}]}
    resp = v1(sa.url, WRITER, "POST", "/v1/commit", json=write)
    assert resp.status_code == 403 and "holds no commit grant" in resp.text, resp.text
    hidden = {"ops": [{"kind": "merge", "path": "/acme/hr/salaries", "value": {"properties": {"x": "1"}}}]}
    resp = v1(sa.url, WRITER, "POST", "/v1/commit", json=hidden)
    assert resp.status_code == 404, resp.text
    before = a.latest_vid
    assert v1(sa.url, ADMIN, "POST", "/v1/commit", json=write).status_code == 200
    assert a.latest_vid == before + 1
    assert v1(_sb.url, ADMIN, "POST", "/v1/commit", json=write).status_code == 200  # the catalogs keep equal vids


# ------------------------------------------------------------------ the CLI
def semcat(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcp_server.cli", *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "SEMCAT_AUTHOR": "tester"})


def test_cli_grant_revoke_grants_on_a_directory_and_a_server(tmp_path):
    data = str(tmp_path / "data")
    make(data, True).close()
    out = semcat("grant", "select", "on", "acme.hr", "to", "user:carol", "--data", data)
    assert out.returncode == 0 and "granted select on acme.hr to user:carol" in out.stdout, out.stderr
    listed = json.loads(semcat("grants", "--principal", "user:carol", "--json", "--data", data).stdout)
    assert [(g["securable"], g["privileges"], g["by"]) for g in listed["grants"]] == [("acme.hr", ["select"], "tester")]
    granted = listed["vid"]
    out = semcat("revoke", "select", "on", "acme.hr", "from", "user:carol", "--data", data)
    assert out.returncode == 0, out.stderr
    assert json.loads(semcat("grants", "--principal", "user:carol", "--json", "--data", data).stdout)["grants"] == []
    old = json.loads(semcat("grants", "--principal", "user:carol", "--vid", str(granted), "--json", "--data", data).stdout)
    assert [g["securable"] for g in old["grants"]] == ["acme.hr"]  # who could read acme.hr at that vid
    bad = semcat("grant", "select", "in", "acme.hr", "to", "user:carol", "--data", data)
    assert bad.returncode != 0 and "expected 'on'" in bad.stderr and "Traceback" not in bad.stderr
    cat = cc.Catalog.open(data)
    try:
        with serve_in_thread(cat, tokens=TOKENS, plugins=default_plugins()) as srv:
            no = semcat("grant", "select", "on", "acme.core", "to", "user:wr", "--url", srv.url, "--token", WRITER)
            assert no.returncode != 0 and "only an admin token changes grants" in no.stderr, no.stderr
            # a securable it may not see is, to it, one that does not exist (transaction reads are filtered too)
            hidden = semcat("grant", "select", "on", "acme.hr", "to", "user:wr", "--url", srv.url, "--token", WRITER)
            assert hidden.returncode != 0 and "is not a catalog, namespace or table" in hidden.stderr, hidden.stderr
            ok = semcat("grant", "select", "on", "acme.hr", "to", "user:wr", "--url", srv.url, "--token", ADMIN)
            assert ok.returncode == 0, ok.stderr
            text = semcat("grants", "--url", srv.url, "--token", ADMIN).stdout
            assert "acme.hr" in text and "user:wr" in text
    finally:
        cat.close()


# ------------------------------------------------------------------ audit (item 3)
def test_every_data_read_and_write_is_audited_and_the_log_holds_no_secret(tmp_path):
    data = str(tmp_path / "data")
    cat = make(data, True)
    try:
        with serve_in_thread(cat, tokens=TOKENS, plugins=default_plugins()) as srv:
            assert not tool(srv.url, BOB, "run_sql", sql="SELECT count(*) AS n FROM acme.core.dim_store").get("isError")
            assert tool(srv.url, BOB, "run_sql", sql="SELECT * FROM acme.hr.salaries").get("isError")
            assert v1(srv.url, ADMIN, "POST", "/v1/plan_files", json={"table": "acme.hr.salaries"}).status_code == 200
            write = {"ops": [{"kind": "merge", "path": "/acme/core/dim_store", "value": {"properties": {"y": "2"}}}]}
            assert v1(srv.url, ADMIN, "POST", "/v1/commit", json=write).status_code == 200
            # over HTTP: admin only
            refused = semcat("audit", "--url", srv.url, "--token", BOB)
            assert refused.returncode != 0 and "only an admin token reads the audit log" in refused.stderr
            remote = json.loads(semcat("audit", "--json", "--principal", "bob", "--url", srv.url, "--token", ADMIN).stdout)
        entries = remote["entries"]
        assert [(e["action"], e["ok"]) for e in entries] == [("run_sql", True), ("run_sql", False)], entries
        ok, bad = entries
        assert ok["tables"] == ["acme.core.dim_store"] and ok["rows"] == 1 and ok["vid"] == cat.latest_vid - 1
        assert ok["statement"].startswith("SELECT count(*)") and ok["surface"] == "mcp" and ok["time"] > 0
        assert bad["tables"] == ["acme.hr.salaries"] and bad["error"] == "NoSuchTableError"
        local = json.loads(semcat("audit", "--json", "--table", "acme.hr.salaries", "--data", data).stdout)["entries"]
        assert [(e["principal"], e["action"]) for e in local] == [("bob", "run_sql"), ("ops", "plan_files")]
        commits = json.loads(semcat("audit", "--json", "--principal", "ops", "--data", data).stdout)["entries"]
        assert [e["action"] for e in commits] == ["plan_files", "commit"] and commits[1]["tables"] == ["acme.core.dim_store"]
        text = semcat("audit", "--since", "2000-01-01T00:00:00Z", "--data", data).stdout
        assert "bob  mcp:run_sql" in text and "REFUSED NoSuchTableError" in text
        assert json.loads(semcat("audit", "--json", "--since", "2999-01-01T00:00:00Z", "--data", data).stdout)[
            "entries"] == []
        raw = open(os.path.join(data, "audit", "audit.jsonl"), encoding="utf-8").read()
        for secret in (BOB, EVE, ADMIN, WRITER, "Bearer"):
            assert secret not in raw
    finally:
        cat.close()


def test_the_audit_log_is_bounded(tmp_path):
    from mcp_server.audit import AuditLog

    log = AuditLog(str(tmp_path / "audit"), max_bytes=2_000, keep=2)
    for i in range(200):
        log.record(principal="bob", surface="mcp", action="run_sql", statement=f"SELECT {i}", tables=["a.b.c"])
    files = sorted(os.listdir(tmp_path / "audit"))
    assert files == ["audit.1.jsonl", "audit.2.jsonl", "audit.jsonl"], files
    assert sum(os.path.getsize(tmp_path / "audit" / f) for f in files) <= 3 * 2_000
    entries, more = log.read(limit=10)
    assert [e["statement"] for e in entries] == [f"SELECT {i}" for i in range(190, 200)] and more


# ------------------------------------------------------------------ Iceberg REST
def test_iceberg_lists_only_granted_tables_and_an_ungranted_load_is_the_missing_tables_404(servers):
    sa, sb, _a = servers
    listed = v1(sa.url, BOB, "GET", "/iceberg/v1/acme/namespaces/hr/tables").json()
    assert [i["name"] for i in listed["identifiers"]] == ["bonus"], listed
    admin = v1(sa.url, ADMIN, "GET", "/iceberg/v1/acme/namespaces/hr/tables").json()
    assert "salaries" in [i["name"] for i in admin["identifiers"]]
    load_a = v1(sa.url, BOB, "GET", "/iceberg/v1/acme/namespaces/hr/tables/salaries")
    load_b = v1(sb.url, BOB, "GET", "/iceberg/v1/acme/namespaces/hr/tables/salaries")
    assert load_a.status_code == load_b.status_code == 404, (load_a.text, load_b.text)
    assert load_a.content == load_b.content
    assert v1(sa.url, BOB, "HEAD", "/iceberg/v1/acme/namespaces/hr/tables/salaries").status_code == 404
    assert v1(sa.url, ADMIN, "HEAD", "/iceberg/v1/acme/namespaces/hr/tables/salaries").status_code == 204


# ------------------------------------------------------------------ /ui
def test_ui_shows_only_granted_tables_and_refuses_others_like_missing_ones(servers):
    sa, sb, _a = servers
    with httpx.Client(base_url=sa.url, cookies={"semcat_token": BOB}, timeout=60) as c:
        index = c.get("/ui")
        assert index.status_code == 200 and "acme.core.dim_store" in index.text and "salaries" not in index.text
        found = c.get("/ui/search", params={"q": "salary"})
        assert found.status_code == 200 and "salaries" not in found.text
        pages_a = [c.get(f"/ui/table/acme.hr.salaries{sub}") for sub in ("", "/history", "/lineage")]
    with httpx.Client(base_url=sb.url, cookies={"semcat_token": BOB}, timeout=60) as c:
        pages_b = [c.get(f"/ui/table/acme.hr.salaries{sub}") for sub in ("", "/history", "/lineage")]
    for pa, pb in zip(pages_a, pages_b):
        assert pa.status_code == 404 and pa.status_code == pb.status_code, (pa.status_code, pb.status_code)
        strip = lambda t: t.replace(sa.url, "").replace(sb.url, "")  # noqa: E731
        assert strip(pa.text) == strip(pb.text)
    with httpx.Client(base_url=sa.url, cookies={"semcat_token": ADMIN}, timeout=60) as c:
        assert c.get("/ui/table/acme.hr.salaries").status_code == 200
