"""The HTTP server: auth, error mapping, limits, transaction sessions, the MCP mount hook, and
process-level durability (SIGTERM drains and closes; SIGKILL loses no acknowledged commit)."""

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time

import httpx
import pytest

import catalog_core as cc
from catalog_core import errors
from mcp_server.http.auth import Tokens, UnsafeBindError, check_bind, is_loopback, load_tokens
from mcp_server.http.server import create_app, serve_in_thread
from tests.helpers import free_port, start_server

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WRITE, READ = "w-secret", "r-secret"


@pytest.fixture
def engine(data_dir):
    c = cc.Catalog.open(data_dir)
    yield c
    c.close()


@pytest.fixture
def server(engine):
    with serve_in_thread(engine, max_request_bytes=4096, txn_timeout_s=30) as handle:
        yield handle


@pytest.fixture
def http(server):
    with httpx.Client(base_url=server.url) as client:
        yield client


@pytest.fixture
def secured(engine):
    tokens = Tokens({WRITE: "write", READ: "read"})
    with serve_in_thread(engine, tokens=tokens) as handle:
        yield handle


def err(resp, status, name):
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert set(body) == {"error", "message", "details"} and body["error"] == name, body
    return body


# ------------------------------------------------------------------ auth
def test_requests_without_a_token_get_401_once_tokens_are_configured(secured):
    with httpx.Client(base_url=secured.url) as h:
        body = err(h.get("/v1/catalog"), 401, "AuthError")
        assert "Bearer" in body["message"]
        # RFC 9728: the challenge names the public protected resource metadata; no error code without a token
        assert h.get("/v1/catalog").headers["www-authenticate"] == (
            f'Bearer resource_metadata="{secured.url}/.well-known/oauth-protected-resource/mcp"')
        wrong = h.get("/v1/catalog", headers={"Authorization": "Bearer wrong"})
        err(wrong, 401, "AuthError")
        assert wrong.headers["www-authenticate"].startswith('Bearer error="invalid_token", error_description="')
        err(h.get("/v1/catalog", headers={"Authorization": f"Basic {WRITE}"}), 401, "AuthError")
        assert h.get("/healthz").json() == {"status": "ok"}  # liveness stays open
        assert "/v1/commit" in h.get("/openapi.json").json()["paths"]
    with pytest.raises(errors.AuthError):
        _ = cc.connect(secured.url).latest_vid
    with pytest.raises(errors.AuthError):
        cc.connect(secured.url, token="nope").get("/")


def test_read_token_reads_but_cannot_write(secured, engine):
    writer = cc.connect(secured.url, token=WRITE)
    with writer.transaction() as t:
        t.add("/c", {"n": 1})
    reader = cc.connect(secured.url, token=READ)
    assert reader.get("/c").value == {"n": 1} and reader.latest_vid == 1
    txn = reader.transaction()
    txn.add("/x", {})
    with pytest.raises(errors.PermissionDeniedError) as info:
        txn.commit()
    assert "'read' token cannot commit" in info.value.message
    txn = reader.transaction()
    assert txn.get("/c").value == {"n": 1}  # a session: reads are fine
    txn.update("/c", {"n": 2})
    with pytest.raises(errors.PermissionDeniedError):
        txn.commit()
    assert len(secured.app.state.sessions) == 0  # the refused session was aborted
    with pytest.raises(errors.PermissionDeniedError):
        reader.snapshot("s1")
    with pytest.raises(errors.PermissionDeniedError):
        reader.clone("/c", "/d")
    with httpx.Client(base_url=secured.url, headers={"Authorization": f"Bearer {READ}"}) as h:
        err(h.post("/v1/commit", json={"ops": [{"kind": "add", "path": "/y", "value": {}}]}), 403,
            "PermissionDeniedError")
    assert engine.latest_vid == 1 and engine.get("/c").value == {"n": 1}


def test_tokens_from_env_and_file(tmp_path):
    f = tmp_path / "tokens"
    f.write_text("# ops team\nfile-w:write\n\n  file-r : read \n")
    tokens = load_tokens(str(f), env={"SEMCAT_TOKENS": "env-w:write, env-r:read"})
    assert len(tokens) == 4
    assert tokens.role_of("Bearer env-r") == "read" and tokens.role_of("Bearer file-w") == "write"
    assert tokens.role_of("bearer file-r") == "read"
    with pytest.raises(errors.AuthError):
        tokens.role_of(None)
    assert not load_tokens(None, env={})
    with pytest.raises(ValueError, match="role 'root' is not one of read, write, admin"):
        load_tokens(None, env={"SEMCAT_TOKENS": "t:root"})
    admin = load_tokens(None, env={"SEMCAT_TOKENS": "t:admin"}).check("Bearer t")  # issue 48: acts as write
    assert admin.role == "write" and admin.admin
    with pytest.raises(ValueError, match="expected '<token>:<role>'"):
        load_tokens(None, env={"SEMCAT_TOKENS": "just-a-token"})
    with pytest.raises(ValueError, match="cannot read tokens file"):
        load_tokens(str(tmp_path / "missing"), env={})


def test_unauthenticated_server_binds_loopback_only():
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.1.2.3")
    check_bind("127.0.0.1", Tokens())
    check_bind("0.0.0.0", Tokens({"t": "read"}))
    with pytest.raises(UnsafeBindError, match="refusing to bind '0.0.0.0' without tokens"):
        check_bind("0.0.0.0", Tokens())


def test_cli_refuses_non_loopback_without_tokens(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "SEMCAT_TOKENS"}
    env["PYTHONPATH"] = ROOT
    proc = subprocess.run([sys.executable, "-m", "mcp_server.cli", "serve", "--data", str(tmp_path / "d"),
                           "--host", "0.0.0.0", "--port", str(free_port())],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "refusing to bind '0.0.0.0' without tokens" in proc.stderr and "SEMCAT_TOKENS" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "d").exists()  # refused before touching the data directory


# ------------------------------------------------------------------ error mapping
@pytest.mark.parametrize("path", ["/v1/commit", "/v1/query", "/v1/transactions"])
def test_malformed_json_is_400(http, path):
    body = err(http.post(path, content=b'{"ops": [', headers={"content-type": "application/json"}),
               400, "InvalidValueError")
    assert "not valid JSON" in body["message"]


@pytest.mark.parametrize("path, payload, field", [
    ("/v1/commit", {"ops": [], "autor": "typo"}, "autor"),
    ("/v1/commit", {"ops": [{"kind": "add", "path": "/x", "value": {}, "lef": True}]}, "lef"),
    ("/v1/query", {"query": "/*", "vid": None, "limit": 5}, "limit"),
    ("/v1/snapshots", {"name": "s", "at": 1}, "at"),
])
def test_unknown_fields_are_400_naming_the_field(http, path, payload, field):
    body = err(http.post(path, json=payload), 400, "InvalidValueError")
    assert field in body["message"] and "xtra" in body["message"]  # "Extra inputs are not permitted"


def test_wrong_types_and_missing_fields_are_400(http):
    err(http.post("/v1/commit", json={"ops": "not a list"}), 400, "InvalidValueError")
    err(http.post("/v1/commit", json={"ops": [{"kind": "rename", "path": "/x"}]}), 400, "InvalidValueError")
    err(http.post("/v1/query", json={}), 400, "InvalidValueError")
    err(http.post("/v1/query", json={"query": "/*", "batch_size": 0}), 400, "InvalidValueError")
    err(http.get("/v1/commits", params={"limit": "many"}), 400, "InvalidValueError")


def test_oversized_requests_are_413(http, engine):
    big = {"ops": [{"kind": "add", "path": "/x", "value": {"blob": "x" * 5000}}]}
    body = err(http.post("/v1/commit", json=big), 413, "InvalidValueError")
    assert "at most 4096" in body["message"]

    def chunks():  # no Content-Length: the streamed size is counted
        for _ in range(10):
            yield b" " * 1000

    err(http.post("/v1/query", content=chunks(), headers={"content-type": "application/json"}),
        413, "InvalidValueError")
    ok = http.post("/v1/commit", json={"ops": [{"kind": "add", "path": "/x", "value": {"blob": "x" * 100}}]})
    assert ok.status_code == 200 and engine.get("/x") is not None


def test_bad_query_is_400_with_position(http):
    body = err(http.post("/v1/query", json={"query": '/[obj_id = "a" and]'}), 400, "QuerySyntaxError")
    assert body["details"]["position"] == 18 and body["details"]["expected"]
    body = err(http.post("/v1/plan_files", json={"table": "a.b.c", "where": "x >"}), 404, "NoSuchTableError")


def test_unknown_routes_and_methods_are_json(http):
    err(http.get("/v1/nope"), 404, "NotFoundError")
    assert http.delete("/v1/commit").json()["error"] == "CatalogError"


def test_rejected_write_set_changes_nothing(http, engine):
    with engine.transaction() as t:
        t.add("/c", {"n": 0})
    ops = [{"kind": "add", "path": "/c/a", "value": {}},
           {"kind": "merge", "path": "/c", "value": {"n": {"op": "+", "val": 1}}},
           {"kind": "add", "path": "/missing/b", "value": {}}]
    body = err(http.post("/v1/commit", json={"ops": ops}), 404, "MissingObjectError")
    assert "parent" in body["message"]
    ops[2] = {"kind": "add", "path": "bad//path", "value": {}}
    body = err(http.post("/v1/commit", json={"ops": ops}), 400, "InvalidPathError")
    assert body["details"]["op_index"] == 2
    ops[2] = {"kind": "update", "path": "/c/x", "value": {}, "leaf": True}
    err(http.post("/v1/commit", json={"ops": ops}), 400, "InvalidValueError")
    assert engine.latest_vid == 1 and engine.get("/c").value == {"n": 0} and engine.get("/c/a") is None


# ------------------------------------------------------------------ transaction sessions
def test_flushed_writes_are_all_or_nothing_and_need_a_write_token(http, engine, secured):
    with engine.transaction() as t:
        t.add("/c", {"n": 0})
    tid = http.post("/v1/transactions", json={}).json()["txn_id"]
    ok = {"kind": "merge", "path": "/c", "value": {"n": {"op": "+", "val": 1}}}
    assert http.post(f"/v1/transactions/{tid}/writes", json={"ops": [ok]}).json() == {"ops": 1}
    bad = [{"kind": "add", "path": "/c/a", "value": {}}, {"kind": "add", "path": "bad//path", "value": {}}]
    body = err(http.post(f"/v1/transactions/{tid}/writes", json={"ops": bad}), 400, "InvalidPathError")
    assert body["details"]["op_index"] == 1
    assert http.post(f"/v1/transactions/{tid}/commit", json={"ops": []}).json() == {"vid": 2}
    assert engine.get("/c").value == {"n": 1} and engine.get("/c/a") is None  # /c/a was dropped with its batch
    reader = cc.connect(secured.url, token=READ)
    txn = reader.transaction()
    txn.update("/c", {"n": 9})
    with pytest.raises(errors.PermissionDeniedError):
        txn.flush()
    assert engine.get("/c").value == {"n": 1}


def test_mgl_locks_flushed_writes_before_the_commit(data_dir):
    with cc.Catalog.open(data_dir, protocol="mgl") as cat:
        with cat.transaction() as t:
            t.add("/c", {"n": 0})
        with serve_in_thread(cat) as handle:
            remote = cc.connect(handle.url)
            holder = remote.transaction()
            holder.update("/c", {"n": 1})
            holder.flush()  # the server session now holds the X lock on /c
            got: list = []
            reader = threading.Thread(target=lambda: got.append(cc.connect(handle.url).transaction().get("/c")))
            reader.start()
            reader.join(0.5)
            assert reader.is_alive() and not got  # blocked behind the flushed write, not after the commit
            holder.commit()
            reader.join(10)
            assert got and got[0].value == {"n": 1}  # strict 2PL: it reads what the holder committed


def test_unknown_and_finished_transaction_ids(http, server):
    err(http.get("/v1/transactions/nope/objects", params={"path": "/"}), 404, "NotFoundError")
    err(http.post("/v1/transactions/nope/commit", json={}), 404, "NotFoundError")
    tid = http.post("/v1/transactions", json={"author": "a"}).json()["txn_id"]
    assert http.get(f"/v1/transactions/{tid}/objects", params={"path": "/"}).json()["object"]["path"] == "/"
    assert http.post(f"/v1/transactions/{tid}/commit", json={"ops": []}).json() == {"vid": 0}
    body = err(http.post(f"/v1/transactions/{tid}/commit", json={}), 410, "TransactionClosedError")
    assert "committed" in body["message"]
    tid = http.post("/v1/transactions", json={}).json()["txn_id"]
    assert http.post(f"/v1/transactions/{tid}/abort").status_code == 200
    err(http.post(f"/v1/transactions/{tid}/query", json={"query": "/*"}), 410, "TransactionClosedError")
    assert len(server.app.state.sessions) == 0


def test_idle_transaction_is_aborted_and_released(engine):
    with serve_in_thread(engine, txn_timeout_s=2.0) as srv:
        cat = cc.connect(srv.url)
        with cat.transaction() as t:
            t.add("/c", {"n": 0})
        busy, idle = cat.transaction(), cat.transaction()
        assert idle.get("/c") is not None and busy.read_vid == 1
        assert len(srv.app.state.sessions) == 2 and engine.engine_info()["active_read_vids"][1] == 2
        deadline = time.monotonic() + 4.0
        while time.monotonic() < deadline:  # keep one session in use, leave the other idle
            busy.get("/c")
            time.sleep(0.1)
        with pytest.raises(errors.TransactionClosedError) as info:
            idle.get("/c")
        assert "idle" in info.value.message
        assert len(srv.app.state.sessions) == 1 and engine.engine_info()["active_read_vids"][1] == 1  # read vid released
        busy.update("/c", {"n": 1})
        assert busy.commit() == 2
        idle.update("/c", {"n": 2})
        with pytest.raises(errors.TransactionClosedError):
            idle.commit()
        assert engine.get("/c").value == {"n": 1} and not engine.engine_info()["active_read_vids"]
        cat.close()


def test_mcp_plugin_hook_mounts_on_the_same_app(engine):
    events = []

    def plugin(app):
        @app.get("/mcp/ping")
        def ping():
            return {"catalog_vid": app.state.catalog.latest_vid}

        @contextlib.asynccontextmanager
        async def lifetime():
            events.append("start")
            yield
            events.append("stop")

        return lifetime()

    with serve_in_thread(engine, plugins=[plugin], tokens=Tokens({WRITE: "write"})) as srv:
        assert events == ["start"]
        assert httpx.get(srv.url + "/mcp/ping").status_code == 401  # the same auth guards /mcp
        resp = httpx.get(srv.url + "/mcp/ping", headers={"Authorization": f"Bearer {WRITE}"})
        assert resp.json() == {"catalog_vid": 0}
    assert events == ["start", "stop"]


def test_create_app_does_not_close_a_borrowed_catalog(engine):
    with serve_in_thread(engine):
        pass
    assert engine.get("/") is not None  # still open: the app did not own it
    app = create_app(engine, owns_catalog=True)
    assert app.state.catalog is engine


# ------------------------------------------------------------------ process-level durability
class Writers:
    """Client threads committing small three-write transactions in a loop; each records the
    commits the server acknowledged."""

    def __init__(self, url, n=4):
        self.acked: list[tuple[int, str]] = []
        self.failures: list[BaseException] = []
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._run, args=(url, w), daemon=True) for w in range(n)]
        for th in self.threads:
            th.start()

    def _run(self, url, w):
        cat = cc.connect(url, timeout=30)
        i = 0
        while not self.stop.is_set():
            i += 1
            name = f"w{w}-{i}"
            try:
                with cat.transaction(author=f"w{w}") as t:
                    t.add(f"/c/{name}", {"obj_type": "namespace", "i": i})
                    t.add(f"/c/{name}/f", {"obj_type": "file", "i": i}, leaf=True)
                    t.merge("/c", {"stats": {"n": {"op": "+", "val": 1}}})
            except cc.CatalogError as exc:  # refused or connection lost: never an ack
                self.failures.append(exc)
                return
            with self.lock:
                self.acked.append((t.vid, name))

    def wait_for(self, n, timeout=60):
        deadline = time.monotonic() + timeout
        while len(self.acked) < n and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(self.acked) >= n, f"only {len(self.acked)} acks: {self.failures[:3]}"

    def join(self):
        self.stop.set()
        for th in self.threads:
            th.join(60)


def check_no_loss_no_partial(cat, acked):
    for vid, name in acked:
        assert cat.get(f"/c/{name}") is not None, f"acknowledged commit {vid} ({name}) lost"
        assert cat.get(f"/c/{name}").vid == vid
    kids = cat.children("/c")
    for o in kids:
        assert cat.get(o.path + "/f") is not None, f"partial commit at {o.path}"
    assert cat.get("/c").value["stats"]["n"] == len(kids)
    assert len(kids) >= len(acked)


def seed(url):
    with cc.connect(url) as cat, cat.transaction() as t:
        t.add("/c", {"obj_type": "catalog", "stats": {"n": 0}})


@pytest.mark.slow  # 72 s at load 12; a real `semcat serve` SIGTERMed under commit load
def test_sigterm_drains_in_flight_commits_and_closes_the_catalog(data_dir, tmp_path):
    log = tmp_path / "server.log"
    proc, url = start_server(data_dir, log)
    try:
        seed(url)
        writers = Writers(url)
        writers.wait_for(100)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        writers.join()
    finally:
        if proc.poll() is None:
            proc.kill()
    text = log.read_text()
    assert "catalog closed at vid" in text and "Traceback" not in text, text[-3000:]
    assert all(isinstance(f, cc.CatalogError) for f in writers.failures)
    cat = cc.Catalog.open(data_dir)  # the lock was released: the catalog was closed
    try:
        check_no_loss_no_partial(cat, writers.acked)
    finally:
        cat.close()


@pytest.mark.slow  # 116 s at load 12; tests/reliability/test_crash_loop.py is its ten-kill version
def test_sigkill_loses_no_acknowledged_commit(data_dir, tmp_path):
    log = tmp_path / "server.log"
    proc, url = start_server(data_dir, log)
    try:
        seed(url)
        writers = Writers(url, n=6)
        writers.wait_for(300)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        writers.join()
    finally:
        if proc.poll() is None:
            proc.kill()
    acked = list(writers.acked)
    proc, url = start_server(data_dir, log)  # restart on the same directory
    try:
        with cc.connect(url) as cat:
            check_no_loss_no_partial(cat, acked)
            assert cat.latest_vid >= max(v for v, _ in acked)
            log_vids = [c.vid for c in cat.commits()]
            assert log_vids == list(range(cat.latest_vid + 1))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
