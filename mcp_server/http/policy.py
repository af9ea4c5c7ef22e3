"""What each route of `semcat serve` needs, and the server's caps (issue 35 item 2).

Every route declares the role it needs, so the `Guard` (mcp_server.http.asgi) checks it before any
byte of the body is read, and a route without a declaration fails tests/security/test_roles_and_caps.py:

    @r.post("/clone", ...)
    @requires("write")                       # "open" (no token), "read" or "write"
    def clone(body: CloneBody, request: Request) -> Response: ...

    declare(route_or_endpoint, "read", auth="cookie", body="form", max_bytes=SMALL_BODY)

A policy also says how the route authenticates (`bearer`: the Authorization header; `cookie`: the
/ui session cookie), what body it takes (`json`, `form` or `none`: inferred from the route's body
model when not given) and its body limit (`None`: the server's --max-request-mb for JSON bodies,
`SMALL_BODY` otherwise), and which methods answer with a long-lived stream (capped and idle-limited).

`Limits` are the caps per principal (bearer token) and in total: open requests, transaction
sessions, clones, event streams; a refusal is a 429 `TooManyRequestsError` (or
`TooManyTransactionsError`) with `Retry-After`. Invariant: a principal's count never exceeds its cap
and the sum never exceeds the total; every acquire is paired with exactly one release.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from typing import Any, TypeVar

from catalog_core.errors import CatalogError

__all__ = ["Policy", "requires", "declare", "policy_of", "iter_routes", "SMALL_BODY", "MCP_BODY", "ROLES", "Limits", "Cap",
           "TooManyRequestsError", "ANONYMOUS", "parse_limit"]

SMALL_BODY = 64 * 1024  # /ui forms, /healthz, routes without a JSON body
MCP_BODY = 4 * 1024 * 1024  # the MCP SDK's own message limit (MAXIMUM_MESSAGE_SIZE)
ROLES = ("open", "read", "write")
ANONYMOUS = "anonymous"  # the principal of every request when auth is off (loopback only)
ATTR = "semcat_policy"

F = TypeVar("F")


@dataclass(frozen=True)
class Policy:
    """What a route needs; see the module docstring."""

    role: str
    auth: str = "bearer"
    body: str | None = None
    max_bytes: int | None = None
    stream_methods: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}, got {self.role!r}")
        if self.auth not in ("bearer", "cookie"):
            raise ValueError(f"auth must be 'bearer' or 'cookie', got {self.auth!r}")
        if self.body not in (None, "json", "form", "none"):
            raise ValueError(f"body must be 'json', 'form' or 'none', got {self.body!r}")

    def limit(self, server_max: int) -> int:
        """The body limit in bytes: the declared one (for JSON never above the server's, which an
        operator lowers with --max-request-mb), else the server's for JSON, else SMALL_BODY."""
        if self.max_bytes is not None:
            return min(self.max_bytes, server_max) if self.body == "json" else self.max_bytes
        return server_max if self.body == "json" else SMALL_BODY


def requires(role: str, **kw: Any) -> Callable[[F], F]:
    """Decorator for an endpoint function: the role (and optionally auth, body, max_bytes,
    stream_methods) its route needs. Put it under the router's decorator."""
    policy = Policy(role, **kw)

    def mark(fn: F) -> F:
        setattr(fn, ATTR, policy)
        return fn
    return mark


def declare(target: Any, role: str, **kw: Any) -> Any:
    """Declare the policy of a route, a Mount or an ASGI endpoint object; returns `target`."""
    setattr(target, ATTR, Policy(role, **kw))
    return target


def iter_routes(routes: Any) -> Iterator[Any]:
    """Every route of an app (or a list of routes) with its full path, `methods`, `path_regex`
    and `endpoint`: FastAPI >= 0.165 keeps an included router as one lazy entry of `app.routes`,
    which `fastapi.routing.iter_route_contexts` expands."""
    routes = getattr(getattr(routes, "router", None), "routes", routes)
    try:
        from fastapi.routing import iter_route_contexts
    except ImportError:  # an older FastAPI: included routes are plain entries
        yield from routes
        return
    yield from iter_route_contexts(routes)


def policy_of(route: Any) -> Policy | None:
    """The declared policy of a route (on the route, its endpoint or its app), the body kind
    filled in from the route's body model; None when the route declares none."""
    policy = getattr(getattr(route, "route", None), ATTR, None) if type(route).__name__ == "RouteContext" else None
    policy = policy or getattr(route, ATTR, None)
    for attr in ("endpoint", "app"):
        if policy is None:
            policy = getattr(getattr(route, attr, None), ATTR, None)
    if not isinstance(policy, Policy):
        return None
    if policy.body is None:
        policy = replace(policy, body="json" if getattr(route, "body_field", None) is not None else "none")
    return policy


# ------------------------------------------------------------------ caps
class TooManyRequestsError(CatalogError):
    """A cap of this server is reached (per token or in total); retry after `retry_after_s`."""

    http_status = 429


@dataclass(frozen=True)
class Limits:
    """Caps as (per principal, total). Defaults fit a shared server; `semcat serve --limit`."""

    requests: tuple[int, int] = (128, 1024)
    sessions: tuple[int, int] = (1000, 10_000)
    clones: tuple[int, int] = (4, 16)
    streams: tuple[int, int] = (8, 256)
    # bytes of request bodies held in memory while their requests run (issue 48): one token's
    # large bodies cannot take the server's memory (a per-token cap below the largest body a
    # route takes is raised to it, so that every body can be sent one at a time)
    body_bytes: tuple[int, int] = (128 * 1024 * 1024, 1024 * 1024 * 1024)
    stream_idle_s: float = 60.0

    @classmethod
    def of(cls, value: Limits | Mapping[str, Any] | None) -> Limits:
        if value is None:
            return cls()
        if isinstance(value, Limits):
            return value
        names = {f.name for f in fields(cls)}
        unknown = set(value) - names
        if unknown:
            raise ValueError(f"unknown limit(s) {sorted(unknown)}; known: {sorted(names)}")
        given: dict[str, Any] = {k: (tuple(v) if isinstance(v, (list, tuple)) else v) for k, v in value.items()}
        out = cls(**given)
        for f in fields(cls):
            v = getattr(out, f.name)
            if isinstance(v, tuple) and not (len(v) == 2 and all(isinstance(x, int) and x >= 1 for x in v)
                                             and v[0] <= v[1]):
                raise ValueError(f"limit {f.name} must be (per token, total) with 1 <= per token <= total, got {v}")
        if not out.stream_idle_s > 0:
            raise ValueError(f"stream_idle_s must be > 0, got {out.stream_idle_s}")
        return out


def parse_limit(text: str) -> tuple[str, Any]:
    """`NAME=PER_TOKEN/TOTAL` (e.g. `sessions=100/10000`) or `stream_idle_s=SECONDS`, as given to
    `semcat serve --limit`."""
    name, sep, value = text.partition("=")
    name = name.strip().replace("-", "_")
    if not sep:
        raise ValueError(f"--limit {text!r}: expected NAME=PER_TOKEN/TOTAL, e.g. sessions=100/10000")
    if name == "stream_idle_s":
        return name, float(value)
    per, slash, total = value.partition("/")
    if not slash or not per.strip().isascii() or not per.strip().isdigit() or not total.strip().isascii() \
            or not total.strip().isdigit():
        raise ValueError(f"--limit {text!r}: expected NAME=PER_TOKEN/TOTAL with integers, e.g. {name}=100/10000")
    return name, (int(per), int(total))


class Cap:
    """Counts what each principal holds (and the total) against two caps; thread-safe (the
    event loop and worker threads both use it). `acquire` raises `error` with a message naming
    `what` and the cap reached, and details `limit`, `scope` (token | server), `retry_after_s`."""

    def __init__(self, what: str, per_principal: int, total: int, retry_after_s: float, hint: str,
                 error: type[CatalogError] = TooManyRequestsError) -> None:
        self.what, self.per, self.total, self.retry_after_s, self.hint = what, per_principal, total, retry_after_s, hint
        self.error = error
        self._lock = threading.Lock()
        self._held: dict[str, int] = {}
        self._sum = 0

    def acquire(self, key: str, n: int = 1) -> None:
        """Take `n` units for `key` (1: one request, stream...; a byte count for `body_bytes`)."""
        with self._lock:
            mine = self._held.get(key, 0)
            if mine + n > self.per:
                raise self._refuse(self._holds("this token", mine, n), self.per, "token")
            if self._sum + n > self.total:
                raise self._refuse(self._holds("the server", self._sum, n), self.total, "server")
            self._held[key] = mine + n
            self._sum += n

    def _holds(self, who: str, held: int, n: int) -> str:
        if n == 1:
            return f"{who} holds {held} {self.what}, its limit"
        return f"{who} holds {held} {self.what} and this request needs {n} more, over its limit"

    def release(self, key: str, n: int = 1) -> None:
        with self._lock:
            mine = self._held.get(key, 0)
            n = min(n, mine)
            if n <= 0:
                return
            if mine == n:
                del self._held[key]
            else:
                self._held[key] = mine - n
            self._sum -= n

    @contextmanager
    def hold(self, key: str) -> Iterator[None]:
        self.acquire(key)
        try:
            yield
        finally:
            self.release(key)

    def count(self, key: str | None = None) -> int:
        with self._lock:
            return self._sum if key is None else self._held.get(key, 0)

    def _refuse(self, what: str, limit: int, scope: str) -> CatalogError:
        retry = max(1, round(self.retry_after_s))
        return self.error(f"too many {self.what}: {what}; {self.hint} (retry after {retry} s)",
                          limit=limit, scope=scope, retry_after_s=retry)
