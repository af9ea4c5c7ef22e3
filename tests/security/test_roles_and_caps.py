"""Issue 35 item 2: every route declares the role it needs (a read token may open read
transactions, never clone or commit); sessions, clones, SSE streams and open requests are capped
per token as well as in total, with a JSON 429 and Retry-After, so one token cannot starve
another; authentication and the route's own body limit come before any body is read."""

from __future__ import annotations

import socket
import threading
import time

import httpx
import pytest
from starlette.routing import Mount

import catalog_core as cc
from mcp_server.http.auth import Tokens
from mcp_server.http.server import create_app, default_plugins
from tests.security.conftest import READ, TABLE, WRITE, WRITE2, start

H_READ = {"Authorization": f"Bearer {READ}"}
H_WRITE = {"Authorization": f"Bearer {WRITE}"}
SSE = {"Accept": "text/event-stream"}


# ------------------------------------------------------------------ every route declares its role
EXPECTED = {  # the routes whose role the issue names; every other route must declare one too
    ("POST", "/v1/transactions"): "read",
    ("POST", "/v1/transactions/{txn_id}/clone"): "write",
    ("POST", "/v1/transactions/{txn_id}/writes"): "write",
    ("POST", "/v1/transactions/{txn_id}/commit"): "write",
    ("POST", "/v1/commit"): "write",
    ("POST", "/v1/clone"): "write",
    ("POST", "/v1/publish"): "write",
    ("POST", "/v1/snapshots"): "write",
    ("POST", "/v1/semantic/annotate"): "write",
    ("GET", "/v1/objects"): "read",
    ("POST", "/v1/query"): "read",
    ("GET", "/healthz"): "open",
    ("POST", "/ui/review/{item_id}/{action}"): "write",
    ("GET", "/ui/inbox"): "read",
    ("POST", "/ui/login"): "open",
    ("POST", "/mcp"): "read",
}


def test_every_route_of_the_app_declares_its_role(engine):
    from mcp_server.http.policy import iter_routes, policy_of

    app = create_app(engine, tokens=Tokens({WRITE: "write"}), plugins=default_plugins())
    seen = {}
    routes = list(iter_routes(app))
    assert len(routes) >= 40
    for route in routes:
        assert not isinstance(route, Mount) or policy_of(route) is not None, f"mount {route.path} declares no role"
        policy = policy_of(route)
        assert policy is not None, f"route {route.path} ({getattr(route, 'methods', '')}) declares no role: " \
                                   "decorate it with mcp_server.http.policy.requires(...)"
        assert policy.role in ("open", "read", "write")
        for method in getattr(route, "methods", None) or {"*"}:
            seen[(method, route.path)] = policy.role
    for key, role in EXPECTED.items():
        assert seen.get(key) == role, (key, seen.get(key), role)


def test_a_read_token_opens_read_transactions_but_never_clones_or_commits(engine):
    with start(engine, True) as server, httpx.Client(base_url=server.url, timeout=30) as c:
        begin = c.post("/v1/transactions", json={"author": "reader"}, headers=H_READ)
        assert begin.status_code == 201, begin.text
        txn = begin.json()["txn_id"]
        got = c.get(f"/v1/transactions/{txn}/objects", params={"path": TABLE}, headers=H_READ)
        assert got.status_code == 200 and got.json()["object"]["path"] == TABLE
        clone = c.post(f"/v1/transactions/{txn}/clone", json={"src": "/acme", "dst": "/copy"}, headers=H_READ)
        assert clone.status_code == 403 and clone.json()["error"] == "PermissionDeniedError", clone.text
        commit = c.post(f"/v1/transactions/{txn}/commit", json={}, headers=H_READ)
        assert commit.status_code == 403
        assert c.post(f"/v1/transactions/{txn}/abort", headers=H_READ).status_code == 200
        for path, body in (("/v1/commit", {"ops": []}), ("/v1/clone", {"src": "/acme", "dst": "/c2"})):
            assert c.post(path, json=body, headers=H_READ).status_code == 403
    assert engine.get("/copy") is None and engine.get("/c2") is None and engine.latest_vid == 1


def too_many(resp: httpx.Response, what: str) -> None:
    assert resp.status_code == 429, (resp.status_code, resp.text[:300])
    assert int(resp.headers["Retry-After"]) >= 1
    body = resp.json()
    assert set(body) == {"error", "message", "details"} and what in body["message"], body


# ------------------------------------------------------------------ caps per token and in total
def test_sessions_are_capped_per_token_so_another_token_still_commits(engine):
    with start(engine, True, limits={"sessions": (5, 8)}) as server, httpx.Client(base_url=server.url) as c:
        for _ in range(5):
            assert c.post("/v1/transactions", json={"author": "flood"}, headers=H_READ).status_code == 201
        too_many(c.post("/v1/transactions", json={"author": "flood"}, headers=H_READ), "transactions")
        # the write token is still served: a session, its writes, its commit
        with cc.connect(server.url, token=WRITE) as cat, cat.transaction(author="w") as t:
            t.update(TABLE, {**t.get(TABLE).value, "ok": True})
        assert engine.get(TABLE).value["ok"] is True
        # the total: WRITE and WRITE2 together may hold only 8 - 5 = 3 more
        for _ in range(3):
            assert c.post("/v1/transactions", json={"author": "w"}, headers=H_WRITE).status_code == 201
        too_many(c.post("/v1/transactions", json={"author": "w2"}, headers={"Authorization": f"Bearer {WRITE2}"}),
                 "transactions")


def test_clones_are_capped_per_token(engine):
    with start(engine, True, limits={"clones": (2, 4)}) as server, httpx.Client(base_url=server.url) as c:
        txns = [c.post("/v1/transactions", json={"author": "w"}, headers=H_WRITE).json()["txn_id"] for _ in range(3)]
        for i, txn in enumerate(txns[:2]):
            r = c.post(f"/v1/transactions/{txn}/clone", json={"src": "/acme", "dst": f"/copy{i}"}, headers=H_WRITE)
            assert r.status_code == 200, r.text
        too_many(c.post(f"/v1/transactions/{txns[2]}/clone", json={"src": "/acme", "dst": "/copy9"},
                        headers=H_WRITE), "clone")
        # ending a session with a clone frees its slot
        assert c.post(f"/v1/transactions/{txns[0]}/abort", headers=H_WRITE).status_code == 200
        r = c.post(f"/v1/transactions/{txns[2]}/clone", json={"src": "/acme", "dst": "/copy9"}, headers=H_WRITE)
        assert r.status_code == 200, r.text


def hold_stream(url: str, headers: dict[str, str]) -> socket.socket:
    """Open GET /mcp as an SSE stream and return the socket once the response head arrived."""
    host, port = url.removeprefix("http://").split(":")
    s = socket.create_connection((host, int(port)), timeout=30)
    head = f"GET /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: text/event-stream\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    s.sendall(head.encode())
    got = b""
    while b"\r\n\r\n" not in got:
        chunk = s.recv(4096)
        assert chunk, got
        got += chunk
    assert got.startswith(b"HTTP/1.1 200"), got[:300]
    return s


def test_sse_streams_are_capped_per_token_and_end_when_idle(engine):
    with start(engine, True, limits={"streams": (2, 10), "stream_idle_s": 2}) as server:
        held = [hold_stream(server.url, H_READ) for _ in range(2)]
        try:
            too_many(httpx.get(server.url + "/mcp", headers={**H_READ, **SSE}, timeout=30), "stream")
            other = hold_stream(server.url, H_WRITE)  # another token still gets one
            other.close()
            # an idle stream ends by itself (bounded wait: the idle limit is 2 s)
            held[0].settimeout(60)
            rest = b""
            while chunk := held[0].recv(4096):
                rest += chunk
            assert rest.endswith(b"0\r\n\r\n") or rest == b"", rest[-200:]  # the chunked body ended
        finally:
            for s in held:
                s.close()


def test_open_requests_are_capped_per_token(engine):
    with start(engine, True, limits={"requests": (3, 50), "streams": (10, 10)}) as server:
        held = [hold_stream(server.url, H_READ) for _ in range(3)]  # streams are open requests too
        try:
            too_many(httpx.get(server.url + "/v1/catalog", headers=H_READ, timeout=30), "requests")
            assert httpx.get(server.url + "/v1/catalog", headers=H_WRITE, timeout=30).status_code == 200
        finally:
            for s in held:
                s.close()
        deadline = time.monotonic() + 30  # the server notices the closed streams
        while httpx.get(server.url + "/v1/catalog", headers=H_READ, timeout=30).status_code == 429:
            assert time.monotonic() < deadline
            time.sleep(0.1)


# ------------------------------------------------------------------ nothing read before auth and limits
def answer_before_body(url: str, head: str) -> bytes:
    """Send only a request head that announces a large body; return what the server answers
    without waiting for that body (a server that reads it first would wait until the timeout)."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=20) as s:
        s.sendall(head.replace("HOST", f"{host}:{port}").encode())
        got = b""
        try:
            while b"\r\n\r\n" not in got:
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
        except TimeoutError:
            pytest.fail(f"the server waited for the body instead of answering: {head.splitlines()[0]}")
        return got


@pytest.mark.parametrize("path, ctype, status", [
    ("/ui/review/x/accept", "application/x-www-form-urlencoded", b"401"),
    ("/ui/login", "application/x-www-form-urlencoded", b"413"),
    ("/healthz", "application/json", b"413"),
    ("/mcp", "application/json", b"401"),
    ("/v1/commit", "application/json", b"401"),
])
def test_no_body_is_read_before_auth_or_past_the_route_limit(engine, path, ctype, status):
    with start(engine, True) as server:
        head = (f"POST {path} HTTP/1.1\r\nHost: HOST\r\nContent-Type: {ctype}\r\n"
                f"Content-Length: {60 * 1024 * 1024}\r\n\r\n")
        got = answer_before_body(server.url, head)
        assert got.startswith(b"HTTP/1.1 " + status), got[:300]
        assert b"application/json" in got.split(b"\r\n\r\n")[0].lower()


def test_a_read_token_is_refused_a_write_route_before_its_body_is_read(engine):
    with start(engine, True) as server:
        head = (f"POST /v1/commit HTTP/1.1\r\nHost: HOST\r\nAuthorization: Bearer {READ}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {10 * 1024 * 1024}\r\n\r\n")
        assert answer_before_body(server.url, head).startswith(b"HTTP/1.1 403")


def test_mcp_answers_a_too_large_body_with_json_413(engine):
    with start(engine, True) as server:
        body = b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"' + b"x" * (5 * 1024 * 1024) + b'"}}'
        for chunked in (False, True):
            content = iter([body[i:i + 65536] for i in range(0, len(body), 65536)]) if chunked else body
            resp = httpx.post(server.url + "/mcp", content=content, timeout=60,
                              headers={**H_READ, "Content-Type": "application/json",
                                       "Accept": "application/json, text/event-stream"})
            assert resp.status_code == 413, resp.text[:300]
            assert resp.json()["error"] == "InvalidValueError" and "bytes" in resp.json()["message"]


def test_concurrent_floods_leave_the_write_token_served(engine):
    """A bounded flood: 200 session requests from the read token in 8 threads against caps of
    20 per token; the write token's commits all succeed meanwhile."""
    with start(engine, True, limits={"sessions": (20, 1000)}) as server:
        statuses: list[int] = []

        def flood() -> None:
            with httpx.Client(base_url=server.url, headers=H_READ, timeout=30) as c:
                for _ in range(25):
                    statuses.append(c.post("/v1/transactions", json={"author": "flood"}).status_code)

        threads = [threading.Thread(target=flood) for _ in range(8)]
        for t in threads:
            t.start()
        with cc.connect(server.url, token=WRITE) as cat:
            for i in range(10):
                with cat.transaction(author="w") as t:
                    t.update(TABLE, {**t.get(TABLE).value, "n": i})
        for t in threads:
            t.join(60)
        assert statuses.count(201) == 20 and statuses.count(429) == 180, sorted(set(statuses))
        assert engine.get(TABLE).value["n"] == 9
