"""Issue 35 item 1: same-origin by construction, in both modes (tokens on and off). A foreign
`Host` (DNS rebinding) is 421 and a foreign `Origin` (a web page on another site, or on another
port of this host) is 403 on every route, the ones added later included (the check is the
middleware's, not each route's); a JSON endpoint refuses any other content type with 415, so a
"simple" cross-origin POST (`text/plain`, no preflight) is never parsed. Non-browser clients, which
send no Origin, keep working."""

from __future__ import annotations

import httpx
import pytest

import catalog_core as cc
from tests.security.conftest import READ, TABLE, WRITE, auth, start


@pytest.fixture
def mode(shared) -> str:
    return str(shared[0])


@pytest.fixture
def engine(shared) -> cc.Catalog:
    return shared[1]


@pytest.fixture
def server(shared):
    return shared[2]


@pytest.fixture
def before(engine):
    return engine.latest_vid, engine.get(TABLE).value

EVIL_COMMIT = ('{"author":"csrf","ops":[{"kind":"update","path":"/acme/core/dim_store",'
               '"value":{"obj_type":"table","pwned":true}}]}')
INIT = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}

# (method, path, content type, body): one per kind of route (/v1/nope does not exist): the middleware
# answers them like the others (/iceberg/... in the Iceberg specification's ErrorModel)
ROUTES = [
    ("GET", "/v1/catalog", None, None),
    ("POST", "/v1/commit", "application/json", EVIL_COMMIT),
    ("POST", "/v1/transactions", "application/json", '{"author":"x"}'),
    ("GET", "/ui", None, None),
    ("GET", "/ui/inbox", None, None),
    ("POST", "/ui/review/x/dismiss", "application/x-www-form-urlencoded", "reason=pwned"),
    ("POST", "/ui/login", "application/x-www-form-urlencoded", "token=x"),
    ("POST", "/mcp", "application/json", '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'),
    ("GET", "/mcp", None, None),
    ("GET", "/healthz", None, None),
    ("GET", "/openapi.json", None, None),
    ("GET", "/iceberg/v1/config", None, None),
    ("POST", "/v1/nope", "application/json", "{}"),
]


def send(server, method, path, ctype, body, mode, **headers):
    h = {**auth(mode), "Accept": "application/json, text/event-stream", **headers}
    if ctype:
        h["Content-Type"] = ctype
    with httpx.Client(base_url=server.url, timeout=30) as c:
        return c.request(method, path, content=body, headers=h)


def refused(resp: httpx.Response, status: int, word: str) -> None:
    assert resp.status_code == status, (resp.status_code, resp.text[:300])
    body = resp.json()
    if resp.request.url.path.startswith("/iceberg/"):  # the Iceberg REST catalog: the specification's ErrorModel
        assert set(body) == {"error"} and body["error"]["code"] == status and word in body["error"]["message"], body
        return
    assert set(body) == {"error", "message", "details"} and word in body["message"], body


def unchanged(engine: cc.Catalog, before) -> None:
    assert "pwned" not in engine.get(TABLE).value and (engine.latest_vid, engine.get(TABLE).value) == before


@pytest.mark.parametrize("method, path, ctype, body", ROUTES)
def test_a_foreign_host_is_421_on_every_route(server, engine, mode, before, method, path, ctype, body):
    port = server.url.rsplit(":", 1)[1]
    for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.nip.io:" + port, "127.0.0.2:" + port):
        refused(send(server, method, path, ctype, body, mode, Host=host), 421, "Host")
    unchanged(engine, before)


@pytest.mark.parametrize("method, path, ctype, body", ROUTES)
def test_a_foreign_origin_is_403_on_every_route(server, engine, mode, before, method, path, ctype, body):
    port = int(server.url.rsplit(":", 1)[1])
    for origin in ("http://evil.example", f"http://127.0.0.1:{port + 1}", f"http://localhost:{port + 1}",
                   f"https://127.0.0.1:{port}", f"http://localhost:{port}", "null"):  # Host is 127.0.0.1:port
        refused(send(server, method, path, ctype, body, mode, Origin=origin), 403, "Origin")
    unchanged(engine, before)


def test_the_issue_reproduction_cross_origin_text_plain_commit(server, engine, mode, before):
    resp = send(server, "POST", "/v1/commit", "text/plain", EVIL_COMMIT, mode, Origin="http://evil.example")
    refused(resp, 403, "Origin")
    unchanged(engine, before)


@pytest.mark.parametrize("ctype", ["text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
                                   "multipart/form-data; boundary=x", None])
@pytest.mark.parametrize("path", ["/v1/commit", "/v1/transactions", "/v1/semantic/annotate", "/v1/snapshots", "/mcp"])
def test_a_json_endpoint_refuses_other_content_types_with_415(server, engine, mode, before, ctype, path):
    body = EVIL_COMMIT if path == "/v1/commit" else '{"name":"s1","author":"x"}'
    refused(send(server, "POST", path, ctype, body, mode), 415, "Content-Type")
    unchanged(engine, before)
    assert not any(s.name == "s1" for s in engine.snapshots())


def test_same_origin_and_non_browser_clients_are_served(server, engine, mode):
    origin = server.url
    port = origin.rsplit(":", 1)[1]
    for headers in ({}, {"Origin": origin}, {"Host": "localhost:" + port, "Origin": "http://localhost:" + port},
                    {"Host": "127.0.0.1:9999", "Origin": "http://127.0.0.1:9999"}):  # a port forward
        resp = send(server, "GET", "/v1/catalog", None, None, mode, **headers)
        assert resp.status_code == 200, resp.text
        resp = send(server, "POST", "/mcp", "application/json", '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
                    mode, **headers)
        assert resp.status_code == 200 and "describe_table" in resp.text, resp.text[:300]
    with cc.connect(server.url, token=WRITE if mode == "tokens" else None) as cat:  # the remote client
        with cat.transaction(author="ok") as t:
            t.update(TABLE, {**engine.get(TABLE).value, "fine": True})
    assert engine.get(TABLE).value["fine"] is True


def test_configured_names_and_origins(data_dir):
    from tests.security.conftest import make_engine

    engine = make_engine(data_dir)
    with start(engine, True, allowed_hosts=["catalog.internal", "lake.example:8443"],
               allowed_origins=["https://app.example"]) as server:
        port = server.url.rsplit(":", 1)[1]
        ok = [{"Host": "catalog.internal"}, {"Host": f"catalog.internal:{port}"}, {"Host": "lake.example:8443"},
              {"Origin": "https://app.example"}, {"Origin": "https://catalog.internal"},
              {"Host": "catalog.internal", "Origin": f"http://catalog.internal:{port}"}]
        for headers in ok:
            resp = send(server, "GET", "/v1/catalog", None, None, "tokens", **{"Authorization": f"Bearer {READ}",
                                                                                 **headers})
            assert resp.status_code == 200, (headers, resp.text)
        for headers in ({"Host": "lake.example"}, {"Host": "lake.example:443"}, {"Origin": "https://app.example:444"},
                        {"Origin": "https://evil.app.example"}):
            resp = send(server, "GET", "/v1/catalog", None, None, "tokens", **headers)
            assert resp.status_code in (403, 421), (headers, resp.status_code, resp.text)
    engine.close()
