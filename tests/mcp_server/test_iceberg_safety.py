"""Iceberg REST that engines can trust with their data (issue 46): table locations stay inside the
warehouse (or the operator's storage roots) and never overlap another table or semcat's own
directories; a purge deletes only files the dropped table's history references and no other table
does; property and metadata sizes, request bodies and reused Idempotency-Keys are bounded or
refused with the specification's ErrorModel (4xx, never a 500); the token endpoint takes client
credentials by HTTP Basic and by form. Real pyiceberg against a real uvicorn server on loopback."""

from __future__ import annotations

import datetime as dt
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import requests
from pyiceberg.catalog import load_catalog
from pyiceberg.schema import Schema
from pyiceberg.types import DateType, DoubleType, LongType, NestedField, StringType

import catalog_core as cc
from mcp_server.http.auth import Tokens
from mcp_server.http.server import serve_in_thread

WRITE, READ = "w-token-safety", "r-token-safety"
SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "cat", StringType(), required=False),
                NestedField(3, "d", DateType(), required=False), NestedField(4, "amount", DoubleType(), required=False))


def rows(ids, day=1, cat="a"):
    return pa.table({"id": pa.array(ids, pa.int64()), "cat": pa.array([cat] * len(ids), pa.string()),
                     "d": pa.array([dt.date(2024, 1, day)] * len(ids), pa.date32()),
                     "amount": pa.array([i * 1.5 for i in ids], pa.float64())})


@pytest.fixture
def server(tmp_path):
    engine = cc.Catalog.open(str(tmp_path / "data"))
    srv = serve_in_thread(engine, tokens=Tokens({WRITE: "write", READ: "read"}))
    srv.catalog = engine
    srv.warehouse = os.path.join(engine.data_dir, "warehouse")
    yield srv
    srv.stop()
    engine.close()


def client(srv, token=WRITE):
    return load_catalog(f"semcat-{token}", type="rest", uri=srv.url + "/iceberg", warehouse="acme", token=token)


def raw(srv, method, path, body=None, token=WRITE, **kw):
    return requests.request(method, srv.url + "/iceberg" + path, json=body, timeout=60,
                            headers={"Authorization": f"Bearer {token}", **kw.pop("headers", {})}, **kw)


def error_model(r, status):
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["code"] == status and err["type"] and err["message"]
    return err


def files_under(path):
    return sorted(os.path.join(d, f) for d, _s, fs in os.walk(path) for f in fs)


def scan_ids(table):
    return sorted(table.scan().to_arrow().column("id").to_pylist())


SCHEMA_JSON = json.loads(SCHEMA.model_dump_json(by_alias=True))


# ---------------------------------------------------------------- locations and purges

def test_a_table_at_another_tables_location_is_refused_and_purge_keeps_the_victims_files(server):
    """The data-loss case of issue 46: a write token created a table at the victim's directory and
    dropped it with purgeRequested=true, which deleted the victim's data files for good."""
    ice = client(server)
    ice.create_namespace("core")
    victim = ice.create_table("core.victim", SCHEMA)
    victim.append(rows([1, 2, 3]))
    victim.append(rows([4], day=2))
    loc = ice.load_table("core.victim").metadata.location.removeprefix("file://")
    before = files_under(loc)
    assert len(before) >= 2
    r = raw(server, "POST", "/v1/acme/namespaces/core/tables",
            {"name": "thief", "schema": SCHEMA_JSON, "location": loc})
    if r.status_code == 200:   # the old server: the purge below is what lost the data
        raw(server, "DELETE", "/v1/acme/namespaces/core/tables/thief?purgeRequested=true")
    assert files_under(loc) == before
    assert scan_ids(ice.load_table("core.victim")) == [1, 2, 3, 4]
    err = error_model(r, 400)
    assert err["type"] == "BadRequestException" and "core.victim" in err["message"]


@pytest.mark.parametrize("where", ["inside", "warehouse", "catalog_dir", "metadata", "dotdot", "outside", "relative",
                                   "data_dir", "under_a_file"])
def test_refused_locations(server, tmp_path, where):
    ice = client(server)
    ice.create_namespace("core")
    v = ice.create_table("core.victim", SCHEMA)
    vloc = v.metadata.location.removeprefix("file://")
    wh = server.warehouse
    loc = {"inside": vloc + "/sub", "warehouse": wh, "catalog_dir": os.path.join(wh, "acme"),   # contains the victim
           "metadata": os.path.join(wh, "_iceberg", "x"), "dotdot": os.path.join(wh, "acme", "..", "..", "escape"),
           "outside": str(tmp_path / "elsewhere"), "relative": "acme/core/rel",
           "data_dir": server.catalog.data_dir, "under_a_file": os.path.join(wh, "acme", "afile", "t")}[where]
    os.makedirs(os.path.join(wh, "acme"), exist_ok=True)
    open(os.path.join(wh, "acme", "afile"), "w").close()     # a file where a directory would have to be
    vid = server.catalog.latest_vid
    err = error_model(raw(server, "POST", "/v1/acme/namespaces/core/tables",
                          {"name": "t", "schema": SCHEMA_JSON, "location": loc}), 400)
    assert err["type"] == "BadRequestException"
    assert server.catalog.latest_vid == vid and not ice.table_exists("core.t")
    # the same location through a commit (set-location) is refused too, and nothing is written
    ice.create_table("core.ok", SCHEMA)
    vid = server.catalog.latest_vid
    r = raw(server, "POST", "/v1/acme/namespaces/core/tables/ok",
            {"identifier": {"namespace": ["core"], "name": "ok"}, "requirements": [], "updates": [{"action": "set-location", "location": loc}]})
    error_model(r, 400)
    assert server.catalog.latest_vid == vid


def test_declared_storage_roots_accept_locations_outside_the_warehouse(tmp_path, monkeypatch):
    roots = [tmp_path / "lake-a", tmp_path / "lake-b"]
    monkeypatch.setenv("SEMCAT_ICEBERG_ROOTS", os.pathsep.join(str(r) for r in roots))
    engine = cc.Catalog.open(str(tmp_path / "data"))
    srv = serve_in_thread(engine, tokens=Tokens({WRITE: "write"}))
    try:
        ice = client(srv)
        ice.create_namespace("core")
        t = ice.create_table("core.t", SCHEMA, location=f"file://{roots[1]}/t")
        assert os.path.isdir(roots[1] / "t")            # made, so engines that do not mkdir can write
        t.append(rows([1]))
        assert scan_ids(ice.load_table("core.t")) == [1]
        assert error_model(raw(srv, "POST", "/v1/acme/namespaces/core/tables",
                               {"name": "u", "schema": SCHEMA_JSON, "location": str(roots[0])}), 400)  # a root itself
        err = error_model(raw(srv, "POST", "/v1/acme/namespaces/core/tables",
                              {"name": "u", "schema": SCHEMA_JSON, "location": str(tmp_path / "lake-c" / "u")}), 400)
        assert str(roots[0]) in err["message"]           # the message names where locations may go
    finally:
        srv.stop()
        engine.close()


def test_handed_out_locations_exist(server):
    ice = client(server)
    ice.create_namespace("core")
    t = ice.create_table("core.t", SCHEMA)
    loc = t.metadata.location.removeprefix("file://")
    assert os.path.isdir(os.path.join(loc, "data")) and os.path.isdir(os.path.join(loc, "metadata"))
    # a staged create (the create-table transaction) hands out an existing location too
    r = raw(server, "POST", "/v1/acme/namespaces/core/tables", {"name": "staged", "schema": SCHEMA_JSON,
                                                               "stage-create": True})
    assert r.status_code == 200, r.text
    assert os.path.isdir(r.json()["metadata"]["location"].removeprefix("file://"))


def test_a_default_location_another_table_uses_gets_a_suffix(server):
    ice = client(server)
    ice.create_namespace("core")
    taken = os.path.join(server.warehouse, "acme", "core", "y")
    ice.create_table("core.x", SCHEMA, location=taken)
    y = ice.create_table("core.y", SCHEMA)                      # its default directory is x's
    loc = y.metadata.location.removeprefix("file://")
    assert loc != taken and loc.startswith(taken + "-") and os.path.isdir(loc)
    y.append(rows([1]))
    assert scan_ids(ice.load_table("core.y")) == [1] and scan_ids(ice.load_table("core.x")) == []


def test_register_is_held_to_the_same_rules(server, tmp_path):
    """A table registered from another catalog's metadata keeps its location, so that location must
    obey the rules too: outside the storage roots it is refused, inside the warehouse accepted."""
    from pyiceberg.catalog.sql import SqlCatalog

    ice = client(server)
    ice.create_namespace("core")
    for n, wh in enumerate((tmp_path / "other", tmp_path / "data" / "warehouse" / "other")):
        wh.mkdir(parents=True)
        other = SqlCatalog(f"o{n}", uri=f"sqlite:///{tmp_path}/o{n}.db", warehouse=f"file://{wh}")
        other.create_namespace("db")
        ot = other.create_table("db.src", SCHEMA)
        ot.append(rows([7]))
        r = raw(server, "POST", "/v1/acme/namespaces/core/register",
                {"name": f"reg{n}", "metadata-location": other.load_table("db.src").metadata_location})
        if n == 0:
            assert "outside the storage roots" in error_model(r, 400)["message"]
            assert not ice.table_exists(f"core.reg{n}")
        else:
            assert r.status_code == 200, r.text
            assert scan_ids(ice.load_table(f"core.reg{n}")) == [7]


def test_purge_never_deletes_a_file_another_table_references(server):
    """A table purged with purgeRequested=true loses the files its own history references, and no
    file that another table (now or in its history) references, even inside the purged table's
    directory."""
    ice = client(server)
    ice.create_namespace("core")
    mine = ice.create_table("core.mine", SCHEMA)
    mine.append(rows([1, 2]))
    mloc = mine.metadata.location.removeprefix("file://")
    shared = os.path.join(mloc, "data", "shared.parquet")       # a plain Parquet file (no field ids) in mine's directory
    pq.write_table(rows([7, 8]), shared)
    mine = ice.load_table("core.mine")
    mine.add_files([shared])
    other = ice.create_table("core.other", SCHEMA)
    other.add_files([shared])                                  # the other table references it as well
    other = ice.load_table("core.other")
    assert scan_ids(other) == [7, 8]
    own = [p for p in files_under(mloc) if p.endswith(".parquet") and p != shared]
    assert own
    r = raw(server, "DELETE", "/v1/acme/namespaces/core/tables/mine?purgeRequested=true")
    assert r.status_code == 204, r.text
    assert os.path.exists(shared) and scan_ids(ice.load_table("core.other")) == [7, 8]
    assert not any(os.path.exists(p) for p in own)              # mine's own data files are gone


# ---------------------------------------------------------------- bounds and clean errors

IDENT = {"identifier": {"namespace": ["core"], "name": "t"}}


def _fresh(srv):
    ice = client(srv)
    ice.create_namespace("core")
    ice.create_table("core.t", SCHEMA)
    return ice


def test_a_property_value_over_64_kib_is_refused(server):
    _fresh(server)
    vid = server.catalog.latest_vid
    err = error_model(raw(server, "POST", "/v1/acme/namespaces/core/tables/t", {**IDENT, "requirements": [], "updates": [
        {"action": "set-properties", "updates": {"big": "x" * (64 * 1024 + 1)}}]}), 400)
    assert "64 KiB" in err["message"] and server.catalog.latest_vid == vid
    err = error_model(raw(server, "POST", "/v1/acme/namespaces/core/tables", {
        "name": "u", "schema": SCHEMA_JSON, "properties": {"big": "x" * (64 * 1024 + 1)}}), 400)
    assert "64 KiB" in err["message"] and server.catalog.latest_vid == vid


def test_a_property_name_over_1_kib_is_refused(server):
    _fresh(server)
    err = error_model(raw(server, "POST", "/v1/acme/namespaces/core/tables/t", {**IDENT, "requirements": [], "updates": [
        {"action": "set-properties", "updates": {"k" * 1025: "v"}}]}), 400)
    assert "at most 1024 bytes" in err["message"]


def test_a_tables_metadata_over_1_mib_is_refused(server):
    ice = _fresh(server)
    chunk = {f"p{i}": "x" * 60_000 for i in range(10)}             # 600 KB: accepted
    assert raw(server, "POST", "/v1/acme/namespaces/core/tables/t", {**IDENT, "requirements": [], "updates": [
        {"action": "set-properties", "updates": chunk}]}).status_code == 200
    vid = server.catalog.latest_vid
    more = {f"q{i}": "x" * 60_000 for i in range(10)}              # another 600 KB: the table would pass 1 MiB
    err = error_model(raw(server, "POST", "/v1/acme/namespaces/core/tables/t", {**IDENT, "requirements": [], "updates": [
        {"action": "set-properties", "updates": more}]}), 400)
    assert "1 MiB" in err["message"] and server.catalog.latest_vid == vid
    assert set(ice.load_table("core.t").properties) >= set(chunk) and "q0" not in ice.load_table("core.t").properties


def test_namespace_properties_are_bounded(server):
    _fresh(server)
    err = error_model(raw(server, "POST", "/v1/acme/namespaces", {"namespace": ["big"], "properties": {
        "a": "x" * (64 * 1024 + 1)}}), 400)
    assert "64 KiB" in err["message"]
    for i in range(2):
        r = raw(server, "POST", "/v1/acme/namespaces/core/properties", {"updates": {
            f"n{i}.{j}": "x" * 60_000 for j in range(10)}})
    err = error_model(r, 400)
    assert "1 MiB" in err["message"]


def test_a_request_body_over_the_iceberg_cap_is_413_before_it_is_read(server):
    _fresh(server)
    body = {**IDENT, "requirements": [], "updates": [{"action": "set-properties", "updates": {
        f"p{i}": "x" * 60_000 for i in range(150)}}]}             # 9 MB: under the server's 64 MiB, over /iceberg's 8 MiB
    err = error_model(raw(server, "POST", "/v1/acme/namespaces/core/tables/t", body), 413)
    assert err["type"] == "RequestTooLargeException" and str(8 * 1024 * 1024) in err["message"]


def _snapshot_update(manifest_list, snapshot_id=4242):
    return [{"action": "add-snapshot", "snapshot": {
                "snapshot-id": snapshot_id, "sequence-number": 1, "timestamp-ms": 1_700_000_000_000,
                "manifest-list": manifest_list, "summary": {"operation": "append"}, "schema-id": 0}},
            {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": snapshot_id}]


@pytest.mark.parametrize("where", ["missing", "etc_passwd", "garbage"])
def test_a_snapshot_whose_manifest_list_is_missing_outside_or_unreadable_is_400(server, where):
    """A missing manifest list and /etc/passwd were 500 CommitStateUnknownException, garbage a 400 that did not
    name the manifest list: the client's input, so a 400 naming it, and nothing written."""
    ice = _fresh(server)
    loc = ice.load_table("core.t").metadata.location.removeprefix("file://")
    path = {"missing": os.path.join(loc, "metadata", "snap-nope.avro"), "etc_passwd": "/etc/passwd",
            "garbage": os.path.join(loc, "metadata", "snap-garbage.avro")}[where]
    if where == "garbage":
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(b"not avro at all")
    vid = server.catalog.latest_vid
    err = error_model(raw(server, "POST", "/v1/acme/namespaces/core/tables/t",
                          {**IDENT, "requirements": [], "updates": _snapshot_update(path)}), 400)
    assert err["type"] == "BadRequestException" and "manifest list" in err["message"]
    assert server.catalog.latest_vid == vid and ice.load_table("core.t").current_snapshot() is None


def test_an_idempotency_key_reused_with_another_body_is_422(server):
    ice = _fresh(server)
    key = "017f22e2-79b0-7cc3-98c4-dc0c0c07398f"

    def post(updates):
        return raw(server, "POST", "/v1/acme/namespaces/core/tables/t", {**IDENT, "requirements": [], "updates": updates},
                   headers={"Idempotency-Key": key})

    first = post([{"action": "set-properties", "updates": {"a": "1"}}])
    assert first.status_code == 200, first.text
    assert post([{"action": "set-properties", "updates": {"a": "1"}}]).status_code == 200   # a retry: same body
    vid = server.catalog.latest_vid
    err = error_model(post([{"action": "set-properties", "updates": {"b": "2"}}]), 422)
    assert "already used" in err["message"] and "new key" in err["message"]
    assert server.catalog.latest_vid == vid and "b" not in ice.load_table("core.t").properties


def test_the_identifier_of_a_table_commit_is_optional(server):
    ice = _fresh(server)
    r = raw(server, "POST", "/v1/acme/namespaces/core/tables/t",
            {"requirements": [], "updates": [{"action": "set-properties", "updates": {"a": "1"}}]})
    assert r.status_code == 200, r.text
    assert ice.load_table("core.t").properties["a"] == "1"


# ---------------------------------------------------------------- the token endpoint

def test_client_credentials_by_http_basic_and_by_form(server):
    """client_secret_basic (RFC 6749 2.3.1: a server MUST support it; id and secret form-urlencoded)
    and client_secret_post, each handing back a token that works; never both at once."""
    import base64
    from urllib.parse import quote_plus

    url = server.url + "/iceberg/v1/oauth/tokens"
    grant = {"grant_type": "client_credentials", "scope": "catalog"}

    def basic(cid, secret):
        return "Basic " + base64.b64encode(f"{quote_plus(cid)}:{quote_plus(secret)}".encode()).decode()

    r = requests.post(url, data=grant, headers={"Authorization": basic("duck db:1", WRITE)}, timeout=30)
    assert r.status_code == 200, r.text
    token = r.json()["access_token"]
    assert token == WRITE and r.json()["token_type"] == "bearer"
    ok = requests.get(server.url + "/iceberg/v1/config?warehouse=acme", headers={"Authorization": f"Bearer {token}"},
                      timeout=30)
    assert ok.status_code == 200
    r = requests.post(url, data={**grant, "client_id": "me", "client_secret": READ}, timeout=30)
    assert r.status_code == 200 and r.json()["access_token"] == READ
    r = requests.post(url, data=grant, headers={"Authorization": basic("me", "wrong")}, timeout=30)
    assert r.status_code == 401 and r.json()["error"] == "invalid_client" and r.headers["WWW-Authenticate"].startswith("Basic")
    r = requests.post(url, data={**grant, "client_secret": WRITE}, headers={"Authorization": basic("me", WRITE)}, timeout=30)
    assert r.status_code == 400 and r.json()["error"] == "invalid_request"
    r = requests.post(url, data=grant, headers={"Authorization": "Basic !!!"}, timeout=30)
    assert r.status_code == 401 and "base64" in r.json()["error_description"]
    # pyiceberg (client_secret_post) still works
    ice = load_catalog("cc", type="rest", uri=server.url + "/iceberg", warehouse="acme", credential=f"me:{WRITE}",
                       **{"oauth2-server-uri": url})
    ice.create_namespace("viaform")
    assert ("viaform",) in ice.list_namespaces()


def test_two_creates_racing_for_one_location_get_it_once(tmp_path, monkeypatch):
    """Both creates check the location against the tables of the latest commit; without one lock
    over check and commit, both saw it free (the directory is made between them: widened here)."""
    import threading
    import time

    from catalog_core.errors import CatalogError
    from catalog_core.iceberg.rest import IcebergRest

    cat = cc.Catalog.open(str(tmp_path / "data"))
    try:
        rest = IcebergRest(cat, str(tmp_path / "data" / "warehouse" / "_iceberg"), str(tmp_path / "data" / "warehouse"))
        rest.create_namespace("acme", ["core"], {}, "t")
        slow_make = rest.places.make

        def make(location):
            time.sleep(0.5)
            slow_make(location)

        monkeypatch.setattr(rest.places, "make", make)
        where = str(tmp_path / "data" / "warehouse" / "shared")
        schema = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}
        outcomes: dict[str, object] = {}
        go = threading.Barrier(2)

        def create(name):
            go.wait()
            try:
                rest.create_table("acme", ["core"], {"name": name, "schema": schema, "location": where}, "t")
                outcomes[name] = "ok"
            except CatalogError as exc:
                outcomes[name] = exc

        threads = [threading.Thread(target=create, args=(n,)) for n in ("a", "b")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(v == "ok" for v in outcomes.values()) == [False, True], outcomes
        refused = next(v for v in outcomes.values() if v != "ok")
        assert "location" in str(refused)
    finally:
        cat.close()


def test_a_data_file_outside_the_storage_roots_is_refused(server, tmp_path):
    """A manifest may name any path; semcat records only data files inside the storage roots (it
    reads them for SQL and may delete them on purge): one elsewhere is a 400 and nothing is written."""
    from pyiceberg.exceptions import BadRequestError

    ice = client(server)
    ice.create_namespace("core")
    t = ice.create_table("core.t", SCHEMA)
    t.append(rows([1]))
    outside = tmp_path / "outside"
    outside.mkdir()
    pq.write_table(rows([7]), outside / "x.parquet")
    inside = os.path.join(t.location().removeprefix("file://"), "data", "y.parquet")
    pq.write_table(rows([8]), inside)
    before = server.catalog.latest_vid
    with pytest.raises(BadRequestError, match="not inside a storage root"):
        ice.load_table("core.t").add_files([str(outside / "x.parquet")])
    assert server.catalog.latest_vid == before
    ice.load_table("core.t").add_files([inside])   # inside the table's location: recorded
    assert scan_ids(ice.load_table("core.t")) == [1, 8]


_RACER = """
import os, sys, time
import catalog_core as cc
from catalog_core.errors import CatalogError
from catalog_core.iceberg.rest import IcebergRest
data, where, name, go = sys.argv[1:5]
cat = cc.Catalog.open(data)
try:
    rest = IcebergRest(cat, os.path.join(data, "warehouse", "_iceberg"), os.path.join(data, "warehouse"))
    slow_make = rest.places.make
    def make(location):
        # widens the window between the location check and the commit; b's commit comes after a's
        # and after b has taken in a's commit (so the engine's own cross-process validation, which
        # fails a transaction that read before another process's commit, does not see a conflict)
        time.sleep(1.0 if name == "a" else 2.5)
        slow_make(location)
    rest.places.make = make
    open(go + "." + name, "w").close()
    while not os.path.exists(go):
        time.sleep(0.005)
    schema = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}
    try:
        rest.create_table("acme", ["core"], {"name": name, "schema": schema, "location": where}, "t")
        print("ok")
    except CatalogError as exc:
        print("refused:", exc)
finally:
    cat.close()
"""


def test_two_processes_racing_for_one_location_get_it_once(tmp_path):
    """Two processes on one data directory (two `semcat serve`, or a server and the CLI) each check
    the location against the tables they see; the lock of one process does not order them, so both
    saw the directory free (widened: 1 s and 2.5 s between check and commit). On the old code the
    loser got through (both tables on one directory) or, when the engine's conservative
    cross-process validation caught the interleaving (as it did in the runs here), a "retry the
    transaction" conflict: a 409, which a createTable client reads as "the table already exists".
    Now the check and its commit hold a lock file of the data directory and the check first
    catches up with other processes: the loser is refused because of the location."""
    import subprocess
    import sys
    import time

    data = str(tmp_path / "data")
    cat = cc.Catalog.open(data)
    try:
        from catalog_core.iceberg.rest import IcebergRest

        IcebergRest(cat, os.path.join(data, "warehouse", "_iceberg"), os.path.join(data, "warehouse")
                    ).create_namespace("acme", ["core"], {}, "t")
    finally:
        cat.close()
    where, go = os.path.join(data, "warehouse", "shared"), str(tmp_path / "go")
    procs = [subprocess.Popen([sys.executable, "-c", _RACER, data, where, n, go], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=os.environ.copy()) for n in ("a", "b")]
    try:
        deadline = time.monotonic() + 120
        while not all(os.path.exists(f"{go}.{n}") for n in ("a", "b")):
            assert time.monotonic() < deadline and all(p.poll() is None for p in procs), \
                [p.communicate() for p in procs]
            time.sleep(0.02)
        open(go, "w").close()
        outs = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    results = [o.strip().splitlines()[-1] if o.strip() else f"no output: {e[-2000:]}" for o, e in outs]
    assert sorted(r == "ok" for r in results) == [False, True], results
    assert "location" in next(r for r in results if r != "ok")
