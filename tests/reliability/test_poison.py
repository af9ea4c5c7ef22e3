"""Poison commits (issue 17, parts 1 and 5): a commit that cannot be stored is refused with a
clear error and hurts nobody else. Under 16 concurrent clients (a real `semcat serve`
subprocess, and an embedded catalog) with poison mixed into good commits: every good commit
lands, nothing hangs, the server stops on SIGTERM, a later read-modify-write of the poisoned
path succeeds, and no vid is missing from the commit log. Plus: merge overflow in groups, NaN /
±Infinity / malformed merge ops refused with their exact messages, integers beyond 64 bits and
lone surrogates refused, and a write set that changes nothing creates no vid."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import threading
import time

import httpx
import pytest

import catalog_core as cc
from catalog_core.errors import ConflictError, InvalidPathError, InvalidValueError
from mcp_server.http.server import serve_in_thread
from tests.helpers import start_server

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLIENTS = 16
ROUNDS = 12  # per client: 2 good commits and 1 poison commit each round
JOIN_S = 120  # a client thread still running after this is hung: the test fails
STOP_S = 30  # SIGTERM must stop the server within this bound
BIG = 2**64 - 1  # the largest integer a value may hold


# ------------------------------------------------------------------ helpers
def run_clients(target, n=CLIENTS):
    """Run `target(client_index)` in n threads; fail (naming them) if any is still running
    after JOIN_S seconds, i.e. a commit hung."""
    errors: list[BaseException] = []

    def wrap(c):
        try:
            target(c)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=wrap, args=(c,), daemon=True, name=f"client-{c}") for c in range(n)]
    for th in threads:
        th.start()
    deadline = time.monotonic() + JOIN_S
    for th in threads:
        th.join(max(0.0, deadline - time.monotonic()))
    hung = [th.name for th in threads if th.is_alive()]
    assert not hung, f"{len(hung)} client thread(s) hung in a commit: {hung}"
    assert not errors, f"client threads failed: {errors[:3]!r}"


def post(client: httpx.Client, path: str, body: dict) -> httpx.Response:
    # json.dumps writes NaN / Infinity tokens and \\udc00 escapes: the bytes an attacker sends.
    return client.post(path, content=json.dumps(body).encode(), headers={"content-type": "application/json"})


def seed(cat) -> None:
    with cat.transaction(author="setup") as t:
        t.add("/counter", {"n": 0})
        t.add("/big", {"n": BIG, "f": 1e308})
        t.add("/g", {"obj_type": "namespace"})
        t.add("/p", {"obj_type": "namespace"})


def check_after(cat, good: list[int], base: int) -> None:
    """Every good commit landed, no poison did, and the commit log has no gap."""
    assert len(set(good)) == len(good)
    assert cat.get("/counter").value["n"] == len(good)
    assert cat.get("/big").value == {"n": BIG, "f": 1e308}
    assert cat.latest_vid == base + len(good)
    log_vids = [c.vid for c in cat.commits()]
    assert log_vids == list(range(cat.latest_vid + 1))
    assert sorted(good) == list(range(base + 1, cat.latest_vid + 1))
    assert cat.children("/p") == []  # no poison commit wrote anything


def read_modify_write(cat, path: str) -> int:
    """A later read-modify-write of a poisoned path must commit (a phantom write-log record
    would make it fail with a ConflictError naming a vid that does not exist)."""
    try:
        with cat.transaction(author="rmw") as t:
            value = t.get(path).value
            t.update(path, {**value, "rmw": value.get("rmw", 0) + 1})
    except ConflictError as exc:
        raise AssertionError(f"read-modify-write of {path} failed: {exc} (latest vid {cat.latest_vid})") from exc
    assert cat.get(path).value["rmw"] == value.get("rmw", 0) + 1
    return t.vid


# ------------------------------------------------------------------ poison over HTTP, 16 clients
def _http_poison(client: httpx.Client, c: int, i: int) -> httpx.Response:
    """One of the poison commits of issue 17, by round."""
    kind = i % 5
    if kind == 0:  # commit record: meta with an int >= 2**64
        return post(client, "/v1/commit", {"meta": {"n": 2**64}, "ops": [
            {"kind": "add", "path": f"/p/m{c}-{i}", "value": {"x": 1}},
            {"kind": "merge", "path": "/counter", "value": {"n": {"op": "+", "val": 1}}}]})
    if kind in (1, 2):  # session author / meta key with a lone surrogate (accepted at begin today)
        body = {"author": "agent\udc00"} if kind == 1 else {"meta": {"k\ud800": 1}}
        r = post(client, "/v1/transactions", body)
        if r.status_code != 201:
            return r
        sid = r.json()["txn_id"]
        return post(client, f"/v1/transactions/{sid}/commit", {"ops": [
            {"kind": "add", "path": f"/p/s{c}-{i}", "value": {"x": 1}},
            {"kind": "merge", "path": "/counter", "value": {"n": {"op": "+", "val": 1}}}]})
    if kind == 3:  # a merge whose sum no longer fits in 64 bits
        return post(client, "/v1/commit", {"ops": [
            {"kind": "merge", "path": "/big", "value": {"n": {"op": "+", "val": 1}}},
            {"kind": "merge", "path": "/counter", "value": {"n": {"op": "+", "val": 1}}}]})
    return post(client, "/v1/commit", {"ops": [  # NaN in a value
        {"kind": "add", "path": f"/p/n{c}-{i}", "value": {"x": float("nan")}}]})


@pytest.mark.slow  # 77 s at load 14; the 16 embedded clients below stay in the default tier
def test_poison_commits_under_16_http_clients(tmp_path):
    data_dir, log_path = str(tmp_path / "data"), tmp_path / "server.log"
    proc, url = start_server(data_dir, log_path)
    good: list[int] = []
    refused: list[tuple[int, dict]] = []
    lock = threading.Lock()
    try:
        remote = cc.connect(url, timeout=30)
        seed(remote)
        base = remote.latest_vid

        def client(c):
            with httpx.Client(base_url=url, timeout=30) as h:
                for i in range(ROUNDS):
                    for j in range(2):
                        r = post(h, "/v1/commit", {"author": f"c{c}", "ops": [
                            {"kind": "add", "path": f"/g/c{c}-{i}-{j}", "value": {"i": i}},
                            {"kind": "merge", "path": "/counter", "value": {"n": {"op": "+", "val": 1}}}]})
                        assert r.status_code == 200, f"good commit refused: {r.status_code} {r.text}"
                        with lock:
                            good.append(r.json()["vid"])
                    r = _http_poison(h, c, i)
                    with lock:
                        refused.append((r.status_code, r.json()))

        run_clients(client)
        assert len(good) == CLIENTS * ROUNDS * 2
        for status, body in refused:
            assert status == 400 and body["error"] in ("InvalidValueError", "InvalidPathError"), (status, body)
        check_after(remote, good, base)
        read_modify_write(remote, "/counter")
        read_modify_write(remote, "/big")
        remote.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=STOP_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise AssertionError(f"the server did not stop within {STOP_S} s of SIGTERM") from None
    assert code == 0, log_path.read_text()[-3000:]
    text = log_path.read_text()
    assert "catalog closed at vid" in text and "Traceback" not in text, text[-3000:]


# ------------------------------------------------------------------ poison embedded, 16 clients
def _embedded_poison(cat, c: int, i: int) -> BaseException | None:
    kind = i % 5
    try:
        if kind == 0:
            t = cat.transaction(meta={"n": 2**64})
        elif kind == 1:
            t = cat.transaction(author="agent\udc00", message="m")
        elif kind == 2:
            t = cat.transaction(message="bad \ud800 message", meta={"ok": [1, {"deep": -(2**63) - 1}]})
        else:
            t = cat.transaction()
        with t:
            t.merge("/counter", {"n": {"op": "+", "val": 1}})
            if kind == 3:
                t.merge("/big", {"n": {"op": "+", "val": 1}})
            elif kind == 4:
                t.merge("/big", {"f": {"op": "+", "val": 1e308}})  # float overflow: inf
            else:
                t.add(f"/p/e{c}-{i}", {"x": 1})
    except (InvalidValueError, InvalidPathError) as exc:
        return exc
    return None


@pytest.mark.parametrize("protocol", ["ospl", "mgl"])
def test_poison_commits_under_16_embedded_clients(data_dir, protocol):
    cat = cc.Catalog.open(data_dir, protocol=protocol)
    try:
        seed(cat)
        base = cat.latest_vid
        good: list[int] = []
        lock = threading.Lock()

        def client(c):
            for i in range(ROUNDS):
                for j in range(2):
                    with cat.transaction(author=f"c{c}") as t:
                        t.add(f"/g/c{c}-{i}-{j}", {"i": i})
                        t.merge("/counter", {"n": {"op": "+", "val": 1}})
                    with lock:
                        good.append(t.vid)
                exc = _embedded_poison(cat, c, i)
                assert exc is not None, f"poison commit {i % 5} was accepted"

        run_clients(client)
        check_after(cat, good, base)
        read_modify_write(cat, "/counter")
        read_modify_write(cat, "/big")
    finally:
        cat.close()


# ------------------------------------------------------------------ a poison commit alone
def test_lone_poison_commit_leaves_no_phantom_write(data_dir):
    """Sent alone, a commit whose record cannot be stored must leave nothing behind: no write-log
    record of a write that never happened (every later read-modify-write of the path would fail
    with a ConflictError naming a vid that does not exist)."""
    cat = cc.Catalog.open(data_dir)
    try:
        seed(cat)
        base = cat.latest_vid
        with pytest.raises(InvalidValueError) as meta_error:
            with cat.transaction(meta={"n": 2**64}) as t:
                t.update("/counter", {"n": 5})
        assert cat.latest_vid == base
        assert read_modify_write(cat, "/counter") == base + 1
        with pytest.raises(InvalidValueError) as author_error:
            with cat.transaction(author="a\udc00") as t:
                t.update("/counter", {"n": 6})
        assert read_modify_write(cat, "/counter") == base + 2
        assert str(meta_error.value).startswith("commit meta holds the integer 18446744073709551616 at 'n'")
        assert str(author_error.value).startswith("commit author holds a string with a lone surrogate")
        assert [c.vid for c in cat.commits()] == list(range(base + 3))
    finally:
        cat.close()


def test_lone_poison_commit_over_http_then_read_modify_write(engine_server):
    cat, url = engine_server
    seed(cat)
    base = cat.latest_vid
    with httpx.Client(base_url=url, timeout=30) as h:
        r = post(h, "/v1/transactions", {"author": "a\udc00"})
        if r.status_code == 201:
            r = post(h, f"/v1/transactions/{r.json()['txn_id']}/commit",
                     {"ops": [{"kind": "update", "path": "/counter", "value": {"n": 7}}]})
        assert r.status_code == 400 and r.json()["error"] == "InvalidValueError", r.text
        author_error = r.json()["message"]
        r = post(h, "/v1/commit", {"meta": {"n": 2**64},
                                   "ops": [{"kind": "update", "path": "/counter", "value": {"n": 7}}]})
        assert r.status_code == 400 and r.json()["error"] == "InvalidValueError", r.text
    remote = cc.connect(url)
    assert read_modify_write(remote, "/counter") == base + 1
    assert cat.get("/counter").value == {"n": 0, "rmw": 1}
    # refused where it entered: by the server's JSON check of the body (or, for a client that sends
    # the surrogate some other way, by the engine's check of the commit author); either says what
    assert "surrogate" in author_error, author_error


@pytest.fixture
def engine_server(data_dir):
    cat = cc.Catalog.open(data_dir)
    with serve_in_thread(cat) as handle:
        yield cat, handle.url
    cat.close()


# ------------------------------------------------------------------ merge overflow in groups
def test_merge_overflow_fails_only_its_own_commit(data_dir):
    """380 bad merges failed 548 good commits: a merge whose result does not fit in 64 bits
    fails its own commit, and the good commits grouped with it land."""
    cat = cc.Catalog.open(data_dir)
    try:
        seed(cat)
        base = cat.latest_vid
        good: list[int] = []
        bad: list[BaseException] = []
        lock = threading.Lock()

        def client(c):
            for i in range(ROUNDS * 2):
                try:
                    with cat.transaction() as t:
                        if (c + i) % 2:
                            t.merge("/big", {"n": {"op": "+", "val": 1}})
                        else:
                            t.add(f"/g/c{c}-{i}", {"i": i})
                        t.merge("/counter", {"n": {"op": "+", "val": 1}})
                    with lock:
                        good.append(t.vid)
                except InvalidValueError as exc:
                    with lock:
                        bad.append(exc)

        run_clients(client)
        assert len(good) == len(bad) == CLIENTS * ROUNDS
        assert {str(e) for e in bad} == {
            "merge op '+' at 'n' gives 18446744073709551616 (18446744073709551615 + 1), which does not fit "
            "in 64 bits (integers run from -2**63 to 2**64-1); nothing was written"}
        check_after(cat, good, base)
    finally:
        cat.close()


@pytest.mark.parametrize("delta, message", [
    ({"n": {"op": "-", "val": 2**63}}, "merge op '-' at 'n' gives -9223372036854775808 (0 - 9223372036854775808)"),
    ({"f": {"op": "+", "val": 1e308}}, "merge op '+' at 'f' gives inf (1e+308 + 1e+308), which cannot be stored"),
    ({"f": {"op": "-", "val": -1e308}}, "merge op '-' at 'f' gives inf (1e+308 - -1e+308), which cannot be stored"),
])
def test_merge_result_out_of_range_is_refused(data_dir, delta, message):
    cat = cc.Catalog.open(data_dir)
    try:
        with cat.transaction() as t:
            t.add("/x", {"n": 0, "f": 1e308})
        vid = cat.latest_vid
        if "-9223372036854775808" in message:  # -2**63 itself fits; one below does not
            with cat.transaction() as t:
                t.merge("/x", delta)
            assert cat.get("/x").value["n"] == -(2**63)
            delta, message = {"n": {"op": "-", "val": 1}}, "merge op '-' at 'n' gives -9223372036854775809"
            vid += 1
        with pytest.raises(InvalidValueError) as info:
            with cat.transaction() as t:
                t.merge("/x", delta)
        assert str(info.value).startswith(message)
        assert cat.latest_vid == vid
    finally:
        cat.close()


# ------------------------------------------------------------------ no silent changes
NAN_MSG = ("value for '/a' holds {tok} at {where}; NaN and ±Infinity cannot be stored (JSON, which clients "
           "read, has no such numbers): store null or a string instead")


@pytest.mark.parametrize("leaf", [False, True])
@pytest.mark.parametrize("num, tok", [(float("nan"), "NaN"), (math.inf, "Infinity"), (-math.inf, "-Infinity")])
def test_nan_and_infinity_values_are_refused(data_dir, leaf, num, tok):
    cat = cc.Catalog.open(data_dir)
    try:
        t = cat.transaction()
        with pytest.raises(InvalidValueError) as info:
            t.add("/a", {"stats": {"cols": [1, {"mean": num}]}}, leaf=leaf)
        assert str(info.value) == NAN_MSG.format(tok=tok, where="'stats.cols[1].mean'")
        with pytest.raises(InvalidValueError) as info:
            t.add("/a", {"x": num}, leaf=leaf)
        assert str(info.value) == NAN_MSG.format(tok=tok, where="'x'")
        t.abort()
        assert cat.latest_vid == 0
    finally:
        cat.close()


MALFORMED = ("merge op at {here!r} is malformed: {node!r}; an op is exactly {{'op': ..., 'val': ...}} with op one "
             "of +, -, min, max, set, commit_vid, commit_time (to set a field named 'op', merge "
             "{{'op': {{'op': 'set', 'val': ...}}}})")


@pytest.mark.parametrize("delta, message", [
    ({"n": {"op": "+"}}, MALFORMED.format(here="n", node={"op": "+"})),
    ({"s": {"n": {"op": "+", "val": 1, "x": 2}}}, MALFORMED.format(here="s.n", node={"op": "+", "val": 1, "x": 2})),
    ({"n": {"op": "frobnicate", "val": 1}},
     "merge op 'frobnicate' at 'n' is unknown; use one of +, -, min, max, set, commit_vid, commit_time"),
    ({"n": {"op": "+", "val": float("nan")}},
     "merge delta for '/a' holds NaN at 'n.val'; NaN and ±Infinity cannot be stored (JSON, which clients read, "
     "has no such numbers): store null or a string instead"),
    ({"n": {"op": "max", "val": -math.inf}},
     "merge delta for '/a' holds -Infinity at 'n.val'; NaN and ±Infinity cannot be stored (JSON, which clients "
     "read, has no such numbers): store null or a string instead"),
    ({"n": {"op": "set", "val": 2**64}},
     "merge delta for '/a' holds the integer 18446744073709551616 at 'n.val', which does not fit in 64 bits "
     "(integers run from -2**63 to 2**64-1): store it as a string"),
])
def test_bad_merge_ops_are_refused(data_dir, delta, message):
    cat = cc.Catalog.open(data_dir)
    try:
        with cat.transaction() as t:
            t.add("/a", {"n": 1, "s": {"n": 1}})
        t = cat.transaction()
        with pytest.raises(InvalidValueError) as info:
            t.merge("/a", delta)
        assert str(info.value) == message
        t.abort()
        assert cat.get("/a").value == {"n": 1, "s": {"n": 1}}
        assert cat.latest_vid == 1
    finally:
        cat.close()


@pytest.mark.parametrize("body, message", [
    ({"ops": [{"kind": "add", "path": "/a", "value": {"x": float("nan")}}]},
     NAN_MSG.format(tok="NaN", where="'x'")),
    ({"ops": [{"kind": "update", "path": "/a", "value": {"x": [float("-inf")]}}]},
     NAN_MSG.format(tok="-Infinity", where="'x[0]'")),
    ({"ops": [{"kind": "merge", "path": "/a", "value": {"n": {"op": "+"}}}]},
     MALFORMED.format(here="n", node={"op": "+"})),
    ({"ops": [{"kind": "merge", "path": "/a", "value": {"n": {"op": "+", "val": 1, "by": "me"}}}]},
     MALFORMED.format(here="n", node={"op": "+", "val": 1, "by": "me"})),
    ({"ops": [{"kind": "add", "path": "/a", "value": {"n": -(2**63) - 1}}]},
     "value for '/a' holds the integer -9223372036854775809 at 'n', which does not fit in 64 bits "
     "(integers run from -2**63 to 2**64-1): store it as a string"),
    ({"meta": {"rows": [1, 2**64]}, "ops": [{"kind": "add", "path": "/b", "value": {}}]},
     "commit meta holds the integer 18446744073709551616 at 'rows[1]', which does not fit in 64 bits "
     "(integers run from -2**63 to 2**64-1): store it as a string"),
    ({"meta": {"x": float("inf")}, "ops": [{"kind": "add", "path": "/b", "value": {}}]},
     "commit meta holds Infinity at 'x'; NaN and ±Infinity cannot be stored (JSON, which clients read, "
     "has no such numbers): store null or a string instead"),
])
def test_bad_values_over_http_are_400_and_change_nothing(engine_server, body, message):
    cat, url = engine_server
    with cat.transaction() as t:
        t.add("/a", {"n": 1})
    with httpx.Client(base_url=url, timeout=30) as h:
        r = post(h, "/v1/commit", body)
        assert r.status_code == 400, r.text
        assert r.json()["error"] == "InvalidValueError"
        assert r.json()["message"] == message.replace("/a", "/a")
    assert cat.latest_vid == 1 and cat.get("/a").value == {"n": 1}


def test_remote_client_refuses_nan_before_sending(engine_server):
    """The remote client's JSON encoder would turn NaN into null: it must refuse it instead."""
    cat, url = engine_server
    remote = cc.connect(url)
    with pytest.raises(InvalidValueError, match="holds NaN at 'x'"):
        with remote.transaction() as t:
            t.add("/a", {"x": float("nan")})
    with pytest.raises(InvalidValueError, match="commit meta holds NaN at 'x'"):
        with remote.transaction(meta={"x": float("nan")}) as t:
            t.add("/a", {"x": 1})
    assert cat.latest_vid == 0


@pytest.mark.parametrize("make", [
    lambda cat: cat.transaction(author="\udc00"),
    lambda cat: cat.transaction(message="x\ud83d"),
    lambda cat: cat.transaction(meta={"\udc00": 1}),
    lambda cat: cat.transaction(meta={"k": ["ok", "\udfff"]}),
])
def test_lone_surrogates_in_the_commit_record_are_refused(data_dir, make):
    cat = cc.Catalog.open(data_dir)
    try:
        with pytest.raises(InvalidValueError, match="lone surrogate"):
            with make(cat) as t:
                t.add("/a", {"x": 1})
        assert cat.latest_vid == 0
    finally:
        cat.close()


def test_lone_surrogates_in_paths_and_values_are_refused(data_dir):
    cat = cc.Catalog.open(data_dir)
    try:
        t = cat.transaction()
        with pytest.raises(InvalidPathError, match="lone surrogate"):
            t.add("/a\udc00", {"x": 1})
        with pytest.raises(InvalidValueError, match="value for '/a' holds a string with a lone surrogate at 'x'"):
            t.add("/a", {"x": "\ud800"})
        with pytest.raises(InvalidValueError, match="lone surrogate"):
            t.add("/a", {"\ud800": 1}, leaf=True)
        t.abort()
        assert cat.latest_vid == 0
    finally:
        cat.close()


# ------------------------------------------------------------------ writes that change nothing
def _no_change_write_sets():
    return {
        "empty merge": lambda t: t.merge("/a", {}),
        "add then remove": lambda t: (t.add("/b", {"x": 1}), t.remove("/b")),
        "leaf add then remove": lambda t: (t.add("/a/l", {"x": 1}, leaf=True), t.remove("/a/l")),
        "same value": lambda t: t.update("/a", {"n": 1}),
        "max below": lambda t: t.merge("/a", {"n": {"op": "max", "val": 0}}),
    }


@pytest.mark.parametrize("name", list(_no_change_write_sets()))
def test_write_set_that_changes_nothing_creates_no_vid(data_dir, name):
    cat = cc.Catalog.open(data_dir)
    try:
        with cat.transaction() as t:
            t.add("/a", {"n": 1})
        with cat.transaction() as t:
            _no_change_write_sets()[name](t)
        assert t.vid == 1 == cat.latest_vid  # the read vid
        assert [c.vid for c in cat.commits()] == [0, 1]
        with cat.transaction() as t:  # and the next real commit takes the next vid
            t.merge("/a", {"n": {"op": "+", "val": 1}})
        assert t.vid == 2
    finally:
        cat.close()


def test_write_set_that_changes_nothing_over_http_creates_no_vid(engine_server):
    cat, url = engine_server
    with cat.transaction() as t:
        t.add("/a", {"n": 1})
    with httpx.Client(base_url=url, timeout=30) as h:
        for body in ({"ops": []}, {"ops": [{"kind": "merge", "path": "/a", "value": {}}]},
                     {"ops": [{"kind": "add", "path": "/b", "value": {}}, {"kind": "remove", "path": "/b"}]}):
            r = post(h, "/v1/commit", body)
            assert r.status_code == 200 and r.json() == {"vid": 1}, (body, r.text)
        sid = post(h, "/v1/transactions", {}).json()["txn_id"]
        r = post(h, f"/v1/transactions/{sid}/commit", {"ops": [{"kind": "merge", "path": "/a", "value": {}}]})
        assert r.json() == {"vid": 1}
    assert cat.latest_vid == 1 and [c.vid for c in cat.commits()] == [0, 1]
