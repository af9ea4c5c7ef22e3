"""Issue 17, parts 4 and 6: no input gets a 5xx, a server error never breaks the client's next
call, and the smaller holes (bools as vids, undocumented status codes, 405 without Allow,
unbounded request heads, malformed token specs, sessions usable by another token)."""

import contextlib
import http.client
import os
import socket
import struct
import subprocess
import sys
import threading
import urllib.parse

import httpx
import pytest

import catalog_core as cc
from catalog_core import errors
from mcp_server.http.auth import Tokens, load_tokens
from mcp_server.http.server import serve_in_thread

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WRITE, READ, WRITE2 = "w-secret", "r-secret", "w2-secret"
JSON = {"content-type": "application/json"}


@pytest.fixture
def engine(data_dir):
    c = cc.Catalog.open(data_dir)
    for i in range(4):  # vids 1..4
        with c.transaction() as t:
            t.add(f"/a{i}", {"n": i})
    yield c
    c.close()


@pytest.fixture
def server(engine):
    with serve_in_thread(engine) as handle:
        yield handle


@pytest.fixture
def secured(engine):
    with serve_in_thread(engine, tokens=Tokens({WRITE: "write", READ: "read", WRITE2: "write"})) as handle:
        yield handle


def is_client_error(resp: httpx.Response) -> dict:
    assert 400 <= resp.status_code < 500, (resp.status_code, resp.text[:500])
    body = resp.json()
    assert set(body) == {"error", "message", "details"}, body
    return body


# ------------------------------------------------------------------ non-ASCII digits
NON_ASCII_DIGITS = ["³", "٣", "３", "-٣"]  # superscript, Arabic-Indic, fullwidth


@pytest.mark.parametrize("digits", NON_ASCII_DIGITS)
def test_refs_with_non_ascii_digits_are_4xx_everywhere_and_never_read_as_a_vid(server, engine, digits):
    q = urllib.parse.quote(digits)
    with httpx.Client(base_url=server.url, headers=JSON) as h:
        for url in (f"/v1/objects?path=/a0&vid={q}", f"/v1/children?path=/&vid={q}", f"/v1/resolve?ref={q}",
                    f"/v1/commits?since={q}", f"/v1/commits?until={q}"):
            is_client_error(h.get(url))
        for url, body in (("/v1/query", {"query": "/*", "vid": digits}), ("/v1/explain", {"query": "/*", "vid": digits}),
                          ("/v1/plan_files", {"table": "a.b.c", "vid": digits}),
                          ("/v1/snapshots", {"name": "s1", "vid": digits}),
                          ("/v1/clone", {"src": "/a0", "dst": "/copy", "vid": digits})):
            is_client_error(h.post(url, json=body))
    assert engine.latest_vid == 4 and engine.snapshots() == [] and engine.get("/copy") is None
    with pytest.raises(errors.CatalogError, match="non-ASCII digits|neither a snapshot"):
        engine.resolve(digits)  # '٣' was read as vid 3; '³' raised ValueError


def test_ascii_vids_still_work(server):
    with cc.connect(server.url) as cat:
        assert cat.get("/a1", 2).value == {"n": 1} and cat.get("/a1", "2").value == {"n": 1}
        assert cat.resolve("3") == 3


# ------------------------------------------------------------------ lone surrogates
@pytest.mark.parametrize("url, raw", [
    ("/v1/snapshots", b'{"name": "snap\\ud800"}'),
    ("/v1/plan_files", b'{"table": "wh.sales.\\udc00"}'),
    ("/v1/clone", b'{"src": "/a0", "dst": "/\\ud800"}'),
    ("/v1/query", b'{"query": "/*", "vid": "\\ud800"}'),
    ("/v1/transactions", b'{"author": "\\ud800"}'),
    ("/v1/snapshots", b'{"name": "\xed\xa0\x80"}'),  # a surrogate as (invalid) UTF-8 bytes
])
def test_lone_surrogates_are_400_and_change_nothing(server, engine, url, raw):
    with httpx.Client(base_url=server.url, headers=JSON) as h:
        body = is_client_error(h.post(url, content=raw))
        assert "JSON" in body["message"] or "surrogate" in body["message"]
    assert engine.latest_vid == 4 and engine.snapshots() == []


def test_embedded_catalog_refuses_lone_surrogates_clearly(engine):
    with pytest.raises(errors.InvalidValueError, match="surrogate"):
        engine.snapshot("snap\ud800")
    with pytest.raises(errors.InvalidPathError, match="surrogate"):
        engine.clone("/a0", "/\ud800")
    with pytest.raises(errors.InvalidPathError, match="surrogate"):
        engine.plan_files("wh.sales.\udc00")
    with pytest.raises(errors.InvalidPathError, match="surrogate"):
        engine.get("/\ud800")
    with pytest.raises(errors.InvalidValueError, match="surrogate"):
        engine.resolve("\ud800")
    assert engine.latest_vid == 4 and engine.snapshots() == []


def test_remote_client_refuses_lone_surrogates_before_sending(server):
    with cc.connect(server.url) as cat:
        with pytest.raises(errors.CatalogError, match="surrogate"):
            cat.get("/a0", "\ud800")
        with pytest.raises(errors.CatalogError, match="surrogate"):
            cat.children("/\ud800")
        with pytest.raises(errors.CatalogError):
            cat.snapshot("x\ud800")
        assert cat.latest_vid == 4  # the client still works


# ------------------------------------------------------------------ deep clone
def test_clone_of_a_1500_level_subtree(engine, server):
    depth = 1500
    path = "/deep"
    with engine.transaction() as t:
        t.add(path, {"level": 0})
        for i in range(1, depth):
            path += "/d"
            t.add(path, {"level": i})
        t.add(path + "/f", {"obj_type": "file"}, leaf=True)
    with cc.connect(server.url) as cat:
        vid = cat.clone("/deep", "/copy")  # was RecursionError -> 500
        leaf = "/copy" + "/d" * (depth - 1) + "/f"
        assert cat.get(leaf, vid).value == {"obj_type": "file"}
        assert cat.get("/copy" + "/d" * 700, vid).value == {"level": 700}
    with engine.transaction() as t:  # inside a transaction as well
        t.clone("/deep", "/copy2")
    assert engine.get("/copy2" + "/d" * (depth - 1) + "/f").value == {"obj_type": "file"}


# ------------------------------------------------------------------ a 500 keeps the connection
def _boom_plugin(app):
    def boom() -> None:
        raise RuntimeError("a bug in a route")

    app.add_api_route("/v1/test-boom", boom, methods=["GET"])


def test_an_unexpected_error_is_a_json_500_on_a_connection_that_stays_open(engine):
    with serve_in_thread(engine, plugins=[_boom_plugin]) as srv:
        host, port = urllib.parse.urlsplit(srv.url).netloc.split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        try:
            conn.request("GET", "/v1/test-boom")
            resp = conn.getresponse()
            body = resp.read()
            assert resp.status == 500 and b'"error":"CatalogError"' in body and b"RuntimeError" in body
            assert resp.getheader("content-type") == "application/json"
            sock = conn.sock
            conn.request("GET", "/v1/catalog")  # the same keep-alive connection
            resp = conn.getresponse()
            assert resp.status == 200 and b'"latest_vid":4' in resp.read()
            assert conn.sock is sock, "the server closed the connection after the 500"
        finally:
            conn.close()
        with cc.connect(srv.url) as cat:
            for _ in range(5):  # the client's next, unrelated calls all work
                with pytest.raises(errors.CatalogError, match="internal server error"):
                    cat._call("GET", "/test-boom")
                assert cat.latest_vid == 4


def test_a_1000_step_query_is_4xx_and_the_client_survives(server):
    expr = "/*" * 1000
    with cc.connect(server.url) as cat:
        with httpx.Client(base_url=server.url) as h:
            resp = h.post("/v1/query", json={"query": expr})
        if resp.status_code == 500 and "RecursionError" in resp.text:
            pytest.xfail("the parser's step limit (issue 17 part 3) is not merged yet; the 500 was JSON")
        is_client_error(resp)
        with pytest.raises(errors.CatalogError):
            cat.query(expr)
        assert cat.latest_vid == 4


class ResetProxy:
    """A TCP relay in front of a real server that plays a server closing a kept-alive connection
    just as the client reuses it: the first request of each client connection is relayed; when
    the client sends again on that connection, the relay resets it (RST) without forwarding."""

    def __init__(self, upstream: str) -> None:
        host, port = urllib.parse.urlsplit(upstream).netloc.split(":")
        self.upstream = (host, int(port))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.resets = 0
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            up = socket.create_connection(self.upstream)
            answered = threading.Event()
            threading.Thread(target=self._to_server, args=(client, up, answered), daemon=True).start()
            threading.Thread(target=self._to_client, args=(up, client, answered), daemon=True).start()

    def _to_server(self, client: socket.socket, up: socket.socket, answered: threading.Event) -> None:
        with contextlib.suppress(OSError):
            while data := client.recv(65536):
                if answered.is_set():  # a second request on this connection: reset it
                    self.resets += 1
                    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    break
                up.sendall(data)
        client.close()
        up.close()

    def _to_client(self, up: socket.socket, client: socket.socket, answered: threading.Event) -> None:
        with contextlib.suppress(OSError):
            while data := up.recv(65536):
                answered.set()  # before relaying: the client may send its next request as soon as it reads
                client.sendall(data)

    def close(self) -> None:
        self.closed = True
        self.listener.close()


def test_client_retries_a_reset_read_once_but_never_resends_a_commit(server, engine):
    proxy = ResetProxy(server.url)
    try:
        with cc.connect(proxy.url, max_connections=1) as cat:
            assert cat.latest_vid == 4  # a new connection
            assert cat.latest_vid == 4  # reused -> reset -> read again on a new connection
            assert cat.get("/a1").value == {"n": 1}
            assert [o.path for o in cat.query("/*")] == ["/a0", "/a1", "/a2", "/a3"]
            assert cat.explain("/*").matched == 4
            assert [c.vid for c in cat.commits(limit=2)] == [4, 3]
            assert proxy.resets >= 3  # most calls above met a reset connection and read again
            before = proxy.resets
            with pytest.raises(errors.CatalogError, match="cannot reach|broke"):
                with cat.transaction() as t:  # a write is never resent: it may have been applied
                    t.add("/new", {"n": 9})
            assert proxy.resets == before + 1
            assert engine.get("/new") is None and engine.latest_vid == 4
            assert cat.latest_vid == 4
    finally:
        proxy.close()


# ------------------------------------------------------------------ strict types
@pytest.mark.parametrize("url, body", [
    ("/v1/query", {"query": "/*", "vid": True}),
    ("/v1/explain", {"query": "/*", "vid": False}),
    ("/v1/snapshots", {"name": "s", "vid": True}),
    ("/v1/query", {"query": "/*", "batch_size": True}),
    ("/v1/query", {"query": "/*", "batch_size": 2.0}),
    ("/v1/commit", {"ops": [{"kind": "add", "path": "/x", "value": {}, "leaf": 1}]}),
    ("/v1/commit", {"ops": [{"kind": "add", "path": 5, "value": {}}]}),
    ("/v1/clone", {"src": "/a0", "dst": "/c", "vid": True}),
])
def test_bools_and_other_wrong_types_are_400(server, engine, url, body):
    with httpx.Client(base_url=server.url) as h:
        resp = h.post(url, json=body)
    assert is_client_error(resp)["error"] == "InvalidValueError"
    assert engine.latest_vid == 4 and engine.snapshots() == [] and engine.get("/x") is None


def test_txn_clone_vid_must_be_an_int(server, engine):
    with httpx.Client(base_url=server.url) as h:
        sid = h.post("/v1/transactions", json={}).json()["txn_id"]
        is_client_error(h.post(f"/v1/transactions/{sid}/clone", json={"src": "/a0", "dst": "/c", "vid": True}))


# ------------------------------------------------------------------ OpenAPI, 405
def test_openapi_documents_the_error_codes_each_route_returns(server):
    spec = httpx.get(server.url + "/openapi.json").json()
    assert "ErrorBody" in spec["components"]["schemas"]
    assert "HTTPValidationError" not in spec["components"]["schemas"]
    for path, item in spec["paths"].items():
        if not path.startswith("/v1/"):
            continue
        for method, op in item.items():
            codes = set(op["responses"])
            assert "422" not in codes, (method, path)  # malformed requests are 400
            assert {"400", "401", "413", "503"} <= codes, (method, path, codes)
            for code in codes - {"200", "201"}:
                content = op["responses"][code]["content"]
                assert content == {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
    assert {"403", "404", "409", "412"} <= set(spec["paths"]["/v1/commit"]["post"]["responses"])
    assert {"404", "410"} <= set(spec["paths"]["/v1/transactions/{txn_id}/abort"]["post"]["responses"])
    assert "404" in spec["paths"]["/v1/resolve"]["get"]["responses"]
    assert "application/x-ndjson" in spec["paths"]["/v1/query"]["post"]["responses"]["200"]["content"]


def test_secured_openapi_declares_bearer_auth(secured):
    spec = httpx.get(secured.url + "/openapi.json").json()
    assert spec["components"]["securitySchemes"] == {"bearer": {"type": "http", "scheme": "bearer"}}
    assert spec["paths"]["/v1/catalog"]["get"]["security"] == [{"bearer": []}]


@pytest.mark.parametrize("method, url, allow", [
    ("TRACE", "/v1/catalog", "GET"),
    ("DELETE", "/v1/snapshots", "GET, POST"),
    ("PUT", "/v1/transactions/abc/commit", "POST"),
    ("GET", "/v1/commit", "POST"),
])
def test_every_405_says_which_methods_are_allowed(server, method, url, allow):
    resp = httpx.request(method, server.url + url)
    assert resp.status_code == 405 and resp.headers.get("allow") == allow, (resp.headers, resp.text)
    assert resp.json()["error"] == "CatalogError"


# ------------------------------------------------------------------ request head cap
def _raw(url: str, head: bytes) -> bytes:
    host, port = urllib.parse.urlsplit(url).netloc.split(":")
    with socket.create_connection((host, int(port)), timeout=20) as s:
        try:
            s.sendall(head)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server stopped reading: what the cap is for
        out = b""
        try:
            while chunk := s.recv(65536):
                out += chunk
        except ConnectionResetError:
            pass
        return out


def test_oversized_request_headers_are_refused_before_auth(secured):
    big = b"x" * (2 * 1024 * 1024)
    answer = _raw(secured.url, b"GET /v1/catalog HTTP/1.1\r\nHost: x\r\nX-Pad: " + big + b"\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 431"), answer[:200]
    assert b"headers exceed" in answer
    many = b"".join(b"X-H%d: %s\r\n" % (i, b"y" * 1000) for i in range(200))
    answer = _raw(secured.url, b"GET /v1/catalog HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n")
    assert answer.startswith(b"HTTP/1.1 431"), answer[:200]
    # ordinary requests are unaffected
    ok = httpx.get(secured.url + "/v1/catalog", headers={"Authorization": f"Bearer {READ}", "X-Pad": "z" * 4000})
    assert ok.status_code == 200


# ------------------------------------------------------------------ token specs
@pytest.mark.parametrize("spec, match", [
    ("#x:write", "starts with '#'"),
    ("ok:write,#x:read", "starts with '#'"),
    (" , ,", "configures no token"),
    ("to ken:write", "visible ASCII"),
    ("tök:write", "visible ASCII"),
])
def test_malformed_token_specs_are_refused(spec, match):
    with pytest.raises(ValueError, match=match):
        load_tokens(None, env={"SEMCAT_TOKENS": spec})


def test_tokens_file_of_only_comments_is_refused_but_comments_are_allowed(tmp_path):
    f = tmp_path / "tokens"
    f.write_text("# nothing here\n#x:write\n")
    with pytest.raises(ValueError, match="configures no token"):
        load_tokens(str(f), env={})
    f.write_text("# ops\nabc:write\n")
    assert len(load_tokens(str(f), env={})) == 1


def test_semcat_serve_refuses_a_malformed_token_spec_at_startup(data_dir):
    env = {**os.environ, "PYTHONPATH": ROOT, "SEMCAT_TOKENS": "#x:write"}
    proc = subprocess.run([sys.executable, "-m", "mcp_server.cli", "serve", "--data", data_dir, "--port", "0"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "SEMCAT_TOKENS" in proc.stderr and "starts with '#'" in proc.stderr, proc.stderr[-2000:]


# ------------------------------------------------------------------ sessions and principals
def test_a_session_belongs_to_the_token_that_began_it(secured, engine):
    owner = cc.connect(secured.url, token=WRITE)
    txn = owner.transaction()
    assert txn.get("/a0").value == {"n": 0}  # begins the server session
    txn.add("/mine", {"n": 1})
    sid = txn.id
    for token in (READ, WRITE2):
        with httpx.Client(base_url=secured.url, headers={"Authorization": f"Bearer {token}"}) as other:
            body = is_client_error(other.post(f"/v1/transactions/{sid}/abort"))
            assert body["error"] == "NotFoundError"  # indistinguishable from an unknown id
            is_client_error(other.get(f"/v1/transactions/{sid}/objects", params={"path": "/a0"}))
            is_client_error(other.post(f"/v1/transactions/{sid}/query", json={"query": "/*"}))
            is_client_error(other.post(f"/v1/transactions/{sid}/writes",
                                       json={"ops": [{"kind": "add", "path": "/evil", "value": {}}]}))
            is_client_error(other.post(f"/v1/transactions/{sid}/clone", json={"src": "/a0", "dst": "/evil"}))
            is_client_error(other.post(f"/v1/transactions/{sid}/commit", json={}))
    assert txn.commit() >= 5  # the owner's session was untouched
    assert engine.get("/mine").value == {"n": 1} and engine.get("/evil") is None
    with httpx.Client(base_url=secured.url, headers={"Authorization": f"Bearer {READ}"}) as other:
        # after the end, only the owner learns how the session ended
        assert other.post(f"/v1/transactions/{sid}/abort").json()["error"] == "NotFoundError"
    with httpx.Client(base_url=secured.url, headers={"Authorization": f"Bearer {WRITE}"}) as same:
        assert same.post(f"/v1/transactions/{sid}/abort").json()["error"] == "TransactionClosedError"
