"""The HTTP client of `semcat serve`: `cc.connect(url, token)` has the embedded Catalog's
interface and raises the same exception classes (rebuilt from the server's JSON errors).

A remote transaction keeps its writes in a private client-side write set (as in the paper) and
sends it with the commit; its reads go to a server-side session so they are recorded for MVOCC
validation. The session is begun lazily, at the first read (or `read_vid`): a transaction that
only writes commits in a single request. Its snapshot is then taken at that first read rather
than at `transaction()`, which is equally serializable.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any

import httpx

from catalog_core._gcpause import gc_paused
from catalog_core.errors import (
    AuthError,
    CatalogError,
    InvalidValueError,
    PermissionDeniedError,
    TransactionClosedError,
    error_from_dict,
)
from catalog_core.frozen import freeze
from catalog_core.model import Branch, Change, Commit, Obj, QueryStats, Snapshot, Version, parse_time
from catalog_core.paths import split
from catalog_core.writeset import WriteMethods, WriteOp, commit_fields, own_writes

if TYPE_CHECKING:
    from catalog_core.query.ast import Query

__all__ = ["RemoteCatalog", "RemoteTransaction", "QueryStream", "ChangeStream"]

_Ref = int | str | None

try:  # optional speed-up for large results; the stdlib parser is the fallback
    import orjson
except ImportError:  # pragma: no cover - depends on the environment
    orjson = None  # type: ignore[assignment]


def _loads(data: bytes) -> Any:
    if orjson is not None:
        try:
            return orjson.loads(data)
        except ValueError:
            pass  # e.g. NaN from a server using the stdlib encoder
    return json.loads(data)


def _loads_big(data: bytes) -> Any:
    """Parse a large answer (e.g. thousands of file leaves) with the cyclic GC paused."""
    if len(data) < 256 * 1024:
        return _loads(data)
    with gc_paused():
        return _loads(data)


def _dumps(data: Any) -> bytes:
    if orjson is not None:
        try:
            return orjson.dumps(data)
        except TypeError:
            pass
    return json.dumps(data, separators=(",", ":")).encode()


def _ref_param(ref: _Ref) -> str | None:
    if isinstance(ref, bool):
        raise InvalidValueError(f"snapshot ref {ref!r} is not a vid, snapshot name or ISO time")
    if ref is None:
        return None
    if not isinstance(ref, (int, str)):
        raise InvalidValueError(f"snapshot ref {ref!r} must be a vid, a snapshot name or an ISO-8601 time")
    return str(ref)


def _params(**kw: Any) -> dict[str, Any]:
    return {k: v for k, v in kw.items() if v is not None}


def _raise_for(resp: httpx.Response, where: str) -> None:
    try:
        body = _loads(resp.content)
    except ValueError:
        body = None
    if isinstance(body, dict) and "error" in body:
        raise error_from_dict(body)
    raise CatalogError(f"HTTP {resp.status_code} from {where}: {resp.content[:200]!r}", status=resp.status_code)


def _obj(d: dict[str, Any] | None) -> Obj | None:
    return None if d is None else Obj.from_dict(d)


def _byte_lines(resp: httpx.Response) -> Iterator[bytes]:
    """NDJSON lines as bytes, without decoding the body to text first."""
    rest = b""
    for chunk in resp.iter_bytes():
        parts = (rest + chunk).split(b"\n")
        rest = parts.pop()
        yield from parts
    if rest:
        yield rest


class QueryStream:
    """Objects of a query as they arrive: NDJSON batches are parsed one line at a time, so a
    large result is never held whole. `close()` (or exhausting it) releases the connection."""

    def __init__(self, resp: httpx.Response, stats: QueryStats | None) -> None:
        self._resp = resp
        self._stats = stats
        self._lines = _byte_lines(resp)
        self._batch: list[dict[str, Any]] = []
        self._pos = 0
        self._done = False
        self.count = 0

    @property
    def bytes_received(self) -> int:
        """Response bytes read off the socket so far (shows the stream is consumed lazily)."""
        return self._resp.num_bytes_downloaded

    def __iter__(self) -> "QueryStream":
        return self

    def __next__(self) -> Obj:
        while self._pos >= len(self._batch):
            if self._done:
                raise StopIteration
            self._read_line()
        d = self._batch[self._pos]
        self._pos += 1
        self.count += 1
        return Obj(d["path"], d["value"], d["vid"], d.get("leaf", False))

    def _read_line(self) -> None:
        try:
            line = next(self._lines)
        except StopIteration:
            self.close()
            raise CatalogError("the server ended the query stream early (connection lost or server "
                               "stopped); rerun the query") from None
        except httpx.HTTPError as exc:
            self.close()
            raise CatalogError(f"query stream broken: {exc}; rerun the query") from None
        if not line:
            return
        msg = _loads(line)
        if "objects" in msg:
            self._batch, self._pos = msg["objects"], 0
            return
        self.close()
        if "error" in msg:
            raise error_from_dict(msg["error"])
        if self._stats is not None:
            st = msg["end"]["stats"]
            self._stats.scanned, self._stats.seeks = st["scanned"], st["seeks"]
            self._stats.matched, self._stats.per_step = st["matched"], st["per_step"]

    def close(self) -> None:
        if not self._done:
            self._done = True
            self._batch, self._pos = [], 0
            self._resp.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


class ChangeStream(QueryStream):
    """The changes of a diff as they arrive (the same NDJSON batches as a query)."""

    def __next__(self) -> Change:  # type: ignore[override]
        while self._pos >= len(self._batch):
            if self._done:
                raise StopIteration
            self._read_line()
        d = self._batch[self._pos]
        self._pos += 1
        self.count += 1
        return Change.from_dict(d)

    def __iter__(self) -> "ChangeStream":
        return self


class RemoteCatalog:
    """`cc.connect(url, token=None)`: the engine API of a `semcat serve` catalog.

    Requests go straight to an httpx `HTTPTransport` (a keep-alive connection pool, safe to
    share between threads): the `httpx.Client` layer on top (auth flows, cookies, redirects,
    proxies from the environment) costs more CPU per request than a small commit does."""

    def __init__(self, url: str, token: str | None = None, timeout: float = 60.0,
                 batch_size: int = 1000, max_connections: int = 32) -> None:
        if not url.startswith(("http://", "https://")):
            raise InvalidValueError(f"catalog URL {url!r} must start with http:// or https://")
        self.url = url.rstrip("/")
        self.batch_size = batch_size
        self._headers = {"content-type": "application/json"}
        if token:
            self._headers["authorization"] = f"Bearer {token}"
        self._timeout = {"timeout": httpx.Timeout(timeout).as_dict()}
        limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
        # Small requests: send each segment at once instead of waiting for the previous ACK.
        nodelay = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
        self._transport = httpx.HTTPTransport(limits=limits, socket_options=nodelay)
        self._closed = False

    def __repr__(self) -> str:
        return f"RemoteCatalog({self.url!r})"

    # ---------------------------------------------------------------- transport
    def _send(self, method: str, path: str, params: dict[str, Any] | None, body: Any, retry: bool = False) -> httpx.Response:
        """Send one request. A read (`retry`: GETs and the POSTs that only read) whose connection
        broke is sent once more on a fresh one: a kept-alive connection the server has just closed
        must not fail an unrelated call. Writes are never resent (they may have been applied)."""
        if self._closed:
            raise CatalogError("this catalog client is closed; connect again")
        try:
            url = httpx.URL(self.url + "/v1" + path, params=params) if params else httpx.URL(self.url + "/v1" + path)
        except UnicodeEncodeError:  # a lone surrogate in a path or ref
            raise InvalidValueError(f"request parameters {params!r} are not valid Unicode text (a lone "
                                    "surrogate); nothing was sent") from None
        content = None if body is None else _dumps(body)
        request = httpx.Request(method, url, headers=self._headers, content=content, extensions=self._timeout)
        try:
            return self._transport.handle_request(request)
        except httpx.TransportError as exc:
            if retry:
                return self._send(method, path, params, body, retry=False)
            raise CatalogError(f"cannot reach the catalog server at {self.url}: {exc!r}") from None

    def _call(self, method: str, path: str, params: dict[str, Any] | None = None, body: Any = None,
              retry: bool | None = None) -> Any:
        """One request and its JSON answer. `retry` defaults to True for GET (see `_send`)."""
        again = method == "GET" if retry is None else retry
        resp = self._send(method, path, params, body, again)
        try:
            resp.read()
        except httpx.TransportError as exc:
            resp.close()
            if again:
                return self._call(method, path, params, body, retry=False)
            raise CatalogError(f"connection to {self.url} broke while reading the answer: {exc!r}") from None
        finally:
            resp.close()
        if resp.status_code >= 400:
            _raise_for(resp, self.url + path)
        return _loads_big(resp.content)

    def _stream(self, path: str, body: dict[str, Any], stats: QueryStats | None) -> "QueryStream":
        resp = self._send("POST", path, None, body, retry=True)  # queries only read
        if resp.status_code >= 400:
            try:
                resp.read()
            finally:
                resp.close()
            _raise_for(resp, self.url + path)
        return QueryStream(resp, stats)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._transport.close()

    def __enter__(self) -> "RemoteCatalog":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---------------------------------------------------------------- reads
    @property
    def latest_vid(self) -> int:
        vid: int = self._call("GET", "/catalog")["latest_vid"]
        return vid

    @property
    def protocol(self) -> str:
        protocol: str = self._call("GET", "/catalog")["protocol"]
        return protocol

    def resolve(self, ref: _Ref) -> int:
        vid: int = self._call("GET", "/resolve", _params(ref=_ref_param(ref)))["vid"]
        return vid

    def get(self, path: str, vid: _Ref = None) -> Obj | None:
        """As the embedded `Catalog.get`: its value is read-only (a FrozenDict; `copy.deepcopy` it to
        change it), so code written against one backend behaves the same against the other."""
        split(path)
        d = self._call("GET", "/objects", _params(path=path, vid=_ref_param(vid)))["object"]
        return None if d is None else Obj(d["path"], freeze(d["value"]), d["vid"], d.get("leaf", False))

    def iter_query(self, expr: str | Query, vid: _Ref = None, stats: QueryStats | None = None) -> QueryStream:
        _ref_param(vid)
        body = {"query": _query_text(expr), "vid": vid, "batch_size": self.batch_size}
        return self._stream("/query", body, stats)

    def query(self, expr: str | Query, vid: _Ref = None, stats: QueryStats | None = None) -> list[Obj]:
        return list(self.iter_query(expr, vid, stats))

    def explain(self, expr: str | Query, vid: _Ref = None) -> QueryStats:
        _ref_param(vid)
        st = self._call("POST", "/explain", body={"query": _query_text(expr), "vid": vid}, retry=True)["stats"]
        return QueryStats(st["scanned"], st["seeks"], st["matched"], st["per_step"])

    def children(self, path: str, vid: _Ref = None) -> list[Obj]:
        found = self._call("GET", "/children", _params(path=path, vid=_ref_param(vid)))["objects"]
        return [Obj.from_dict(d) for d in found]

    def history(self, path: str) -> list[Version]:
        return [Version.from_dict(d) for d in self._call("GET", "/history", {"path": path})["versions"]]

    def commits(self, since: _Ref = None, until: _Ref = None, prefix: str | None = None,
                limit: int | None = None) -> list[Commit]:
        params = _params(since=_ref_param(since), until=_ref_param(until), prefix=prefix, limit=limit)
        return [Commit.from_dict(d) for d in self._call("GET", "/commits", params)["commits"]]

    def plan_files(self, table: str, where: str | None = None, vid: _Ref = None,
                   stats: QueryStats | None = None) -> list[Obj]:
        _ref_param(vid)
        out = self._call("POST", "/plan_files", body={"table": table, "where": where, "vid": vid}, retry=True)
        if stats is not None:
            st = out["stats"]
            stats.scanned, stats.seeks, stats.matched = st["scanned"], st["seeks"], st["matched"]
        return [Obj(d["path"], d["value"], d["vid"], d.get("leaf", False)) for d in out["files"]]

    # ---------------------------------------------------------------- snapshots, clone
    def snapshot(self, name: str, vid: _Ref = None) -> Snapshot:
        _ref_param(vid)
        return Snapshot.from_dict(self._call("POST", "/snapshots", body={"name": name, "vid": vid}))

    def snapshots(self) -> list[Snapshot]:
        return [Snapshot.from_dict(d) for d in self._call("GET", "/snapshots")["snapshots"]]

    def clone(self, src: str, dst: str, vid: _Ref = None, author: str = "", message: str = "") -> int:
        _ref_param(vid)
        body = {"src": src, "dst": dst, "vid": vid, "author": author, "message": message}
        cloned: int = self._call("POST", "/clone", body=body)["vid"]
        return cloned

    # ---------------------------------------------------------------- diff, branches
    def diff(self, from_ref: _Ref, to_ref: _Ref = None, prefix: str | None = None) -> "ChangeStream":
        _ref_param(from_ref)
        _ref_param(to_ref)
        if prefix is not None:
            split(prefix)
        body = {"from_ref": from_ref, "to_ref": to_ref, "prefix": prefix, "batch_size": self.batch_size}
        resp = self._send("POST", "/diff", None, body, retry=True)  # a diff only reads
        if resp.status_code >= 400:
            try:
                resp.read()
            finally:
                resp.close()
            _raise_for(resp, self.url + "/diff")
        return ChangeStream(resp, None)

    def branches(self, prefix: str | None = None, vid: _Ref = None) -> list[Branch]:
        found = self._call("GET", "/branches", _params(prefix=prefix, vid=_ref_param(vid)))["branches"]
        return [Branch.from_dict(d) for d in found]

    def publish(self, branch: str, onto: str, author: str = "", message: str = "", keep: bool = True) -> int:
        body = {"branch": branch, "onto": onto, "author": author, "message": message, "keep": keep}
        vid: int = self._call("POST", "/publish", body=body)["vid"]
        return vid

    def drop_branch(self, branch: str, author: str = "", message: str = "") -> int:
        body = {"branch": branch, "author": author, "message": message}
        vid: int = self._call("POST", "/branches/drop", body=body)["vid"]
        return vid

    # ---------------------------------------------------------------- writes
    def transaction(self, author: str = "", message: str = "", meta: dict[str, Any] | None = None,
                    time: float | str | datetime | None = None) -> "RemoteTransaction":
        """See `Catalog.transaction`; `time` is checked by the server when the session begins
        (or with the one-request commit) and again at commit."""
        if self._closed:
            raise CatalogError("the catalog client is closed; connect again to start a transaction")
        ts = None
        if time is not None:
            ts = parse_time(time)
            if ts is None:
                raise InvalidValueError(f"time={time!r} is not a commit time; give seconds since the epoch, a "
                                        "datetime or ISO-8601 text such as '2025-03-01T02:00:00Z'")
        return RemoteTransaction(self, author, message, meta, ts)


def _query_text(expr: Any) -> str:
    if isinstance(expr, str):
        from catalog_core.query.parser import check_text  # refused here as the embedded parser refuses it

        check_text(expr)
        return expr
    from catalog_core.query import to_text  # a parsed Query travels as its text

    return to_text(expr)


class RemoteTransaction(WriteMethods):
    """Same use as `Transaction`: `with cat.transaction() as txn:` commits on exit, aborts on
    an exception; or `txn.commit()` / `txn.abort()`."""

    def __init__(self, cat: RemoteCatalog, author: str, message: str, meta: dict[str, Any] | None,
                 time: float | None = None) -> None:
        self._cat = cat
        self.author, self.message, self.meta = author, message, dict(meta or {})
        commit_fields(author, message, self.meta)  # refused here: JSON would carry NaN as null
        self.time = time
        self.id: str | None = None  # the server session, once begun
        self._read_vid: int | None = None
        self.vid: int | None = None
        self.ops: list[WriteOp] = []
        self._sent = 0  # ops[:_sent] are already in the server session (sent with a clone)
        self.state = "active"

    def _check_active(self) -> None:
        if self.state != "active":
            name = f"transaction {self.id}" if self.id else "this transaction"
            raise TransactionClosedError(f"{name} is {self.state}; start a new one")

    def _session(self) -> str:
        if self.id is None:
            out = self._cat._call("POST", "/transactions",
                                  body={"author": self.author, "message": self.message, "meta": self.meta,
                                        "time": self.time})
            self.id, self._read_vid = out["txn_id"], out["read_vid"]
        return self.id

    @property
    def read_vid(self) -> int:
        """The snapshot this transaction reads (begins the server session if needed)."""
        if self._read_vid is None:
            self._check_active()
            self._session()
        return self._read_vid  # type: ignore[return-value]

    # ---------------------------------------------------------------- reads
    def iter_query(self, expr: str | Query, stats: QueryStats | None = None) -> QueryStream:
        self._check_active()
        sid = self._session()
        body = {"query": _query_text(expr), "batch_size": self._cat.batch_size}
        return self._cat._stream(f"/transactions/{sid}/query", body, stats)

    def query(self, expr: str | Query, stats: QueryStats | None = None) -> list[Obj]:
        return list(self.iter_query(expr, stats))

    def get(self, path: str) -> Obj | None:
        """The object at `read_vid`, with this transaction's own buffered writes applied."""
        self._check_active()
        split(path)
        sid = self._session()
        obj = _obj(self._cat._call("GET", f"/transactions/{sid}/objects", {"path": path})["object"])
        # earlier ops were sent with a clone and are applied by the server session
        return own_writes(self.ops[self._sent:], path, obj)

    # ---------------------------------------------------------------- writes (buffered)
    def _record(self, op: WriteOp) -> None:
        self._check_active()
        self.ops.append(op)

    def clone(self, src: str, dst: str, vid: int | None = None) -> None:
        """Copy the subtree of `src` to `dst` (expanded by the server session, in write order)."""
        self._check_active()
        sid = self._session()
        body = {"src": src, "dst": dst, "vid": vid, "ops": self._unsent()}
        self._cat._call("POST", f"/transactions/{sid}/clone", body=body)
        self._sent = len(self.ops)

    def flush(self) -> None:
        """Send the buffered writes to the server session now, in one request. Under mgl the server
        locks them at once, as it locks an embedded transaction's writes; commit sends the rest."""
        self._check_active()
        if len(self.ops) > self._sent:
            sid = self._session()
            self._cat._call("POST", f"/transactions/{sid}/writes", body={"ops": self._unsent()})
            self._sent = len(self.ops)

    def _unsent(self) -> list[dict[str, Any]]:
        return [op.to_dict() for op in self.ops[self._sent:]]

    # ---------------------------------------------------------------- end
    def commit(self) -> int:
        """Validate and commit; returns the committed vid (read_vid if nothing was written).
        Raises ConflictError or a PreconditionError, and then nothing was written."""
        self._check_active()
        try:
            if self.id is not None:
                out = self._cat._call("POST", f"/transactions/{self.id}/commit", body={"ops": self._unsent()})
                self.vid = out["vid"]
            elif self.ops:
                body = {"author": self.author, "message": self.message, "meta": self.meta, "time": self.time,
                        "ops": self._unsent()}
                self.vid = self._cat._call("POST", "/commit", body=body)["vid"]
            else:
                self.vid = self._cat.latest_vid
            self.state = "committed"
            return self.vid
        except BaseException as exc:
            self.state = "aborted"
            if self.id is not None and isinstance(exc, (AuthError, PermissionDeniedError)):
                self._abort_session()  # refused before the server touched the session
            raise

    def _abort_session(self) -> None:
        try:
            self._cat._call("POST", f"/transactions/{self.id}/abort")
        except CatalogError:
            pass  # already expired or the server is gone: the session is released either way

    def abort(self) -> None:
        if self.state != "active":
            return
        self.state = "aborted"
        if self.id is not None:
            self._abort_session()
